"""Mixture of experts (Shazeer et al. 2017; Mixtral, Jiang et al. 2024; DeepSeekMoE, Dai et al. 2024): a router
scores every expert, each token runs through k of the E routed experts and through the shared ones (torchtitan's
and Megatron's active-expert count); zero (identity) experts (LongCat-Flash) are scored but hold no weights.
Experts have the model's MLP kind (gated or plain)."""

from __future__ import annotations

from dataclasses import replace

from tfcost.core.blocks import Block
from tfcost.core.layers.mlp import dropout_mask, mlp_ops, mlp_rows
from tfcost.core.layers.norms import norm_op, one_norm_feeds_both
from tfcost.core.ops import ExpertGroup, Op, Saved
from tfcost.schema import ModelShape


def moe_ops(shape: ModelShape, block: Block) -> list[Op]:
    """An MoE block's FFN rows: router, routed experts (E copies, k used), shared experts and their gate."""
    assert shape.moe is not None  # the schema guarantees it for an 'moe' layer
    moe, d = shape.moe, shape.d_model
    shared, gate = moe.n_shared_experts, int(moe.shared_expert_gate)
    router_width = moe.n_experts + moe.n_zero_experts
    # The router keeps the block's input, which every expert reads (gathered per expert inside the GEMM, as
    # ScatterMoE does, Tan et al. 2024: not copied k times), and the dropout mask of the combined output; its
    # sigmoid or softmax keeps its output, the E router probabilities in fp32 (DeepseekV3TopkRouter,
    # MixtralTopKRouter compute them so), and the weighted sum of the k expert outputs keeps both operands of each
    # product: the k routing weights (fp32) and the k expert outputs (d each), on the experts' down row.
    own_input = (Saved("input (read by every expert)", d, split=False),) if not one_norm_feeds_both(shape) else ()
    router_saves = own_input + (dropout_mask(d),) * (not block.beside_mlp)  # beside a dense MLP: its mask
    router_saves += (
        Saved("router probabilities", router_width, store="fp32", split=False),
        Saved("routing weights of the k experts", moe.experts_per_token, store="fp32", split=False),
    )
    routed = mlp_rows(shape, "moe/experts", moe.expert_d_ff, moe.n_experts, moe.experts_per_token, "moe/experts", False)
    outputs = Saved(
        "the k experts' outputs (the routing weights' other operands)", moe.experts_per_token * d, split=False
    )
    routed[-1] = replace(routed[-1], saves=(*routed[-1].saves, outputs))
    group = ExpertGroup(moe.n_experts, moe.experts_per_token, shared, moe.n_zero_experts)
    routed = [replace(op, experts=group) for op in routed]
    rows = [
        Op(
            "moe/router",
            "linear",
            d,
            router_width,
            "token",
            moe.router_bias,
            flops_part="moe/router",
            saves=router_saves,
        ),
        *routed,
        *mlp_rows(shape, "moe/shared", moe.shared_width, shared, shared, "moe/shared", False),
        Op(
            "moe/shared_gate",
            "linear",
            d,
            1,
            "token",
            copies=gate,
            uses=gate,
            flops_part="moe/shared_gate",
            saves=(Saved("shared experts' output and its sigmoid gate", d + 1),) * gate,
        ),
    ]
    if moe.router_scales:
        rows.append(Op("moe/router_scales", "table", d + moe.n_experts, 1, "weights"))
    return rows


def mlp_and_moe_ops(shape: ModelShape, block: Block) -> list[Op]:
    """A dense MLP and an MoE side by side on the same input, their outputs added (Gemma4TextDecoderLayer with
    enable_moe_block): both tables, plus the MoE's own pre-norm and a post-norm on each of the two outputs, each
    keeping its input."""
    return [*mlp_ops(shape, block), *moe_ops(shape, block), norm_op(shape, "norm/mlp_and_moe", copies=3, saves_input=3)]
