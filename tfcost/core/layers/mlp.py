"""The dense feed-forward block: up and down (d -> F -> d), plus a gate when gated (GLU variants, Shazeer 2020).
A plain MLP keeps a gate row with no copies, so its breakdown still lists "mlp/gate": 0.

Saved for the backward pass (Korthikanti et al. 2022 §4.1, "MLP"): the first linear's input (2sbh), the
activation's input (GeLU: 8sbh at F = 4h), the second linear's input (8sbh) and the dropout mask after it (sbh):
19sbh. A gated MLP's activation keeps its input (the gate output), the product with the up output keeps that
operand, and the down projection its input: three F-wide tensors where GeLU keeps two.
"""

from __future__ import annotations

from tfcost.core.blocks import Block
from tfcost.core.layers.norms import one_norm_feeds_both
from tfcost.core.ops import Op, Saved
from tfcost.schema import ModelShape


def mlp_rows(
    shape: ModelShape, prefix: str, d_ff: int, copies: int, uses: int, flops_part: str, block_end: bool = True
) -> list[Op]:
    """One MLP of width d_ff held `copies` times, `uses` of them per token (an MoE's experts), as gate, up, down.
    `block_end`: the FFN's input and output are its own (a dense MLP): up keeps the input and down the dropout mask
    after it; an MoE's experts read the input its router keeps."""
    d, bias = shape.d_model, shape.bias.mlp
    gated = shape.mlp == "gated"
    part = prefix if prefix.startswith("moe/") else ""
    hidden = d_ff * uses
    # One norm feeding both the attention and the MLP (Falcon-7B's parallel block): q keeps that input already.
    own_input = block_end and not one_norm_feeds_both(shape)
    activation_input = Saved("activation input (gate output)" if gated else "activation input", hidden)
    gate_saves = (activation_input,) if gated else ()
    up_saves = (Saved("input", d, split=False),) * own_input
    up_saves += (Saved("up output (the product's other operand)", hidden),) if gated else (activation_input,)
    down_saves = (Saved("input", hidden),) + (dropout_mask(d),) * block_end
    held = bool(copies)  # an MoE without shared experts keeps rows with no copies, and nothing for them
    return [
        Op(f"{prefix}/gate", "linear", d, d_ff, "token", bias, copies * gated, uses * gated, part, flops_part,
           saves=gate_saves * held),
        Op(f"{prefix}/up", "linear", d, d_ff, "token", bias, copies, uses, part, flops_part, saves=up_saves * held),
        Op(f"{prefix}/down", "linear", d_ff, d, "token", bias, copies, uses, part, flops_part, saves=down_saves * held),
    ]  # fmt: skip


def dropout_mask(d: int) -> Saved:
    """The dropout after a block's output projection: one byte per element of the d-wide residual stream."""
    return Saved("dropout mask", d, store="mask", split=False, when="dropout")


def mlp_ops(shape: ModelShape, block: Block) -> list[Op]:
    """The dense MLP of width d_ff (the layer's own width, where it has one), and its activation's learned scalars
    (Apertus's xIELU)."""
    rows = mlp_rows(shape, "mlp", block.d_ff or shape.d_ff, 1, 1, "mlp")
    if shape.activation_params:
        rows.append(Op("mlp/activation", "table", shape.activation_params, 1, "weights"))
    return rows
