"""Gated DeltaNet (Yang, Kautz and Hatamizadeh 2024, "Gated Delta Networks", arXiv:2412.06464), as transformers
5.24 builds it for Qwen3-Next and Qwen3.5 (Qwen3NextGatedDeltaNet, Qwen3_5GatedDeltaNet).

Symbols: d d_model, H_k query/key heads of d_k, H_v value heads of d_v (H_v / H_k per query/key head), K conv
kernel, C chunk. One layer:
    in_proj    d -> 2*H_k*d_k + 2*H_v*d_v + 2*H_v   (q, k, v, the output gate z, beta and the decay a; Qwen3.5
               splits it into in_proj_qkv, in_proj_z, in_proj_b, in_proj_a: the same count)
    conv       depthwise, kernel K, no bias, over the 2*H_k*d_k + H_v*d_v channels of q, k, v
    A_log, dt_bias   H_v each
    norm       a gated RMSNorm over d_v, shared by the heads
    out_proj   H_v*d_v -> d
Delta-rule FLOPs follow the chunked algorithm transformers runs (torch_chunk_gated_delta_rule, the reference of
flash-linear-attention's chunk_gated_delta_rule): T is padded to c = ceil(T/C) chunks; per value head and chunk
three C x C products, k_beta.k^T and q.k^T over d_k and the intra-chunk attention times the new values over d_v
(2*(2*d_k + d_v) per position pair, the `chunk_entry` rate), and three products with the d_k x d_v state per
position (k_cumdecay.S, q.S and the update k^T.v_new: 6*d_k*d_v, the `chunk_readout` rate); matmuls only, 2*m*k*n,
as FlopCounterMode counts them (the two unit-triangular solves of the UT transform have no FLOP formula in
torch.utils.flop_counter and are not counted). The causal convention counts the recurrent form a decode step
runs: the same three state products per token, no chunk pairs.
State per sequence, as transformers' cache holds it: the conv input of the last K positions at the model's dtype,
and the H_v x d_k x d_v recurrent state in fp32 (the chunked rule computes in fp32 and keeps its state so).
Saved for the backward pass, as flash-linear-attention's fused kernels keep them: the in-projection's input (d)
and its output (causal_conv1d keeps its input; the gates z, beta and a are read again), the rule's q, k, v (the
convolution's SiLU-ed output) and its per-chunk UT transform A (C values per position and value head,
chunk_gated_delta_rule), the gated norm's input and the out-projection's input (H_v*d_v each), and the norm's
fp32 reciprocal RMS (H_v).
"""

from __future__ import annotations

from tfcost.core.blocks import Block
from tfcost.core.layers.short_conv import depthwise_conv_ops
from tfcost.core.ops import Op, Saved, Span
from tfcost.schema import ModelShape


def delta_rule_rows(
    prefix: str, pair_width: int, key_dim: int, value_dim: int, heads: int, chunk: int, inputs: int
) -> list[Op]:
    """The chunked delta rule's matmuls, as transformers' chunk_gated_delta_rule runs them: `pair_width` FLOP pairs
    per position pair inside a chunk (the C x C products), and three d_k x d_v state products per position. It
    saves its `inputs` elements per position (q, k, v and the gates) and the C-wide UT transform of each head."""
    chunked, rule = Span(chunk=chunk), f"{prefix}/delta_rule"
    saved = (Saved("q, k, v and gates", inputs), Saved("UT transform A", heads * chunk))
    return [
        Op(
            f"{prefix}/chunk_pairs",
            "linear",
            pair_width,
            heads,
            "chunk_entry",
            copies=0,
            flops_part=rule,
            span=chunked,
            saves=saved,
        ),
        Op(
            f"{prefix}/state_products",
            "linear",
            key_dim * value_dim,
            3 * heads,
            "chunk_readout",
            copies=0,
            flops_part=rule,
            span=chunked,
        ),
    ]


def norm_saves(width: int, heads: int) -> tuple[Saved, ...]:
    """The gated RMSNorm over each head's d_v (flash-linear-attention's FusedRMSNormGated) keeps its input and its
    fp32 reciprocal RMS, one per token and head."""
    return (Saved("input", width), Saved("reciprocal RMS per head", heads, store="fp32"))


def recurrent_state(prefix: str, key_dim: int, value_dim: int, heads: int) -> Op:
    """The H x d_k x d_v state the rule carries between chunks and steps, kept in fp32 by transformers."""
    return Op(f"state/{prefix}_recurrent", "state", heads * key_dim * value_dim, heads, "sequence", dtype="fp32")


def gated_deltanet_ops(shape: ModelShape, block: Block) -> list[Op]:
    """One Gated DeltaNet mixer's rows."""
    assert shape.gated_deltanet is not None  # the schema guarantees it for a 'gated_deltanet' layer
    g, d = shape.gated_deltanet, shape.d_model
    key_width, value_width, heads = g.key_heads * g.key_head_dim, g.value_heads * g.value_head_dim, g.value_heads
    projected = 2 * key_width + 2 * value_width + 2 * heads
    return [
        Op(
            "gated_deltanet/in_proj",
            "linear",
            d,
            projected,
            "token",
            flops_part="gated_deltanet/in_proj",
            saves=(Saved("input", d, split=False), Saved("output: q, k, v, z, beta and a", projected)),
        ),
        *depthwise_conv_ops("gated_deltanet", 2 * key_width + value_width, g.conv_kernel, False, heads),
        Op("gated_deltanet/A_log_dt_bias", "table", heads, 2, "weights"),
        *delta_rule_rows(
            "gated_deltanet",
            2 * g.key_head_dim + g.value_head_dim,
            g.key_head_dim,
            g.value_head_dim,
            heads,
            g.chunk_size,
            2 * key_width + value_width + 2 * heads,
        ),
        Op("gated_deltanet/norm", "norm", g.value_head_dim, 1, "weights", saves=norm_saves(value_width, heads)),
        Op(
            "gated_deltanet/out_proj",
            "linear",
            value_width,
            d,
            "token",
            flops_part="gated_deltanet/out_proj",
            saves=(Saved("input", value_width),),
        ),
        recurrent_state("gated_deltanet", g.key_head_dim, g.value_head_dim, heads),
    ]


def kda_ops(shape: ModelShape, block: Block) -> list[Op]:
    """One Kimi Delta Attention mixer's rows (Kimi Team 2025, "Kimi Linear", arXiv:2510.26692; transformers'
    KimiLinearDeltaAttention): Gated DeltaNet with a per-channel forget gate. H heads of width Q (key_heads =
    value_heads, key_head_dim = value_head_dim):
        q, k, v      d -> H*Q each, then a depthwise conv (kernel K, no bias) over the 3*H*Q channels
        forget gate  low rank d -> Q -> H*Q (f_a, f_b), dt_bias H*Q, A_log H
        beta         d -> H (b_proj)
        output gate  low rank d -> Q -> H*Q (g_a, g_b), a gated RMSNorm over Q, o_proj H*Q -> d
    Chunked rule (chunk_kimi_delta_attention, C = 64): the per-channel decays are applied elementwise, so the
    matmuls per head and chunk are the UT-transformed values and decayed keys (C x C over d_v and d_k), the
    intra-chunk attention times the new values (over d_v): 2*(d_k + 2*d_v) per position pair, and the same three
    state products per position as Gated DeltaNet. State: conv of K positions (model dtype), H x Q x Q in fp32."""
    assert shape.gated_deltanet is not None  # the schema guarantees it for a 'kda' layer
    g, d = shape.gated_deltanet, shape.d_model
    heads, q = g.value_heads, g.key_head_dim
    width = heads * q
    return [
        Op(
            "kda/qkv",
            "linear",
            d,
            3 * width,
            "token",
            flops_part="kda/qkv",
            saves=(Saved("input", d, split=False), Saved("output (the convolution's input)", 3 * width)),
        ),
        *depthwise_conv_ops("kda", 3 * width, g.conv_kernel, False, heads),
        Op("kda/gates_down", "linear", d, 2 * q, "token", flops_part="kda/gates"),  # f_a and g_a
        # f_b and g_b, each keeping its input; the output gate's value is read again by the gated norm
        Op(
            "kda/gates_up",
            "linear",
            q,
            width,
            "token",
            copies=2,
            uses=2,
            flops_part="kda/gates",
            saves=(Saved("inputs", 2 * q), Saved("output gate", width)),
        ),
        Op("kda/beta", "linear", d, heads, "token", flops_part="kda/beta"),
        Op("kda/dt_bias_A_log", "table", width + heads, 1, "weights"),
        # q, k, v, the per-channel forget gate and beta
        *delta_rule_rows("kda", q + 2 * g.value_head_dim, q, g.value_head_dim, heads, g.chunk_size, 4 * width + heads),
        Op("kda/norm", "norm", g.value_head_dim, 1, "weights", saves=norm_saves(width, heads)),
        Op("kda/o_proj", "linear", width, d, "token", flops_part="kda/o_proj", saves=(Saved("input", width),)),
        recurrent_state("kda", q, g.value_head_dim, heads),
    ]
