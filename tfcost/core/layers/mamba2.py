"""Mamba-2 (Dao and Gu 2024, "Transformers are SSMs", arXiv:2405.21060 §7 and Listing 1), as transformers 5.24
builds it (Mamba2Mixer, and the same mixer in Bamba, Falcon-H1, GraniteMoeHybrid, Nemotron-H and Zamba2).

Symbols: d d_model, D = d_inner channels in H heads of P = D/H, G groups sharing B and C, N d_state, K conv
kernel, C chunk. One layer:
    in_proj    d -> 2D + 2GN + H   (the gate z, the conv input x, B, C, and one time step per head)
    conv       depthwise, kernel K, over the D + 2GN channels of x, B, C (with bias)
    A_log, D, dt_bias   H each
    norm       a gated RMSNorm over D (where gated_norm)
    out_proj   D -> d
Scan FLOPs follow the chunked SSD algorithm transformers runs (mamba2_chunk_scan): T is padded to c = ceil(T/C)
chunks, then per head and chunk the C x C "scores" C.B over N, their product with x over P, each chunk's state
B.x (P x N per position), the (c+1) x (c+1) passing of chunk states, and the readout C.state (P x N per
position): matmuls only, 2*m*k*n each, as FlopCounterMode counts them. The causal convention counts the
recurrent form instead: one readout bmm of 2*H*P*N per token (selective_state_update). The depthwise
convolution is counted over its T + K - 1 padded outputs (2*K per output channel), as FlopCounterMode does.
State per sequence, as transformers' cache holds it: the conv input of the last K positions, (D + 2GN) x K at
the model's dtype, and the SSM state H x P x N in fp32.
Saved for the backward pass, as mamba_ssm's fused MambaSplitConv1dScanCombinedFn keeps them (the conv output, the
gated norm and the out-projection input recomputed): the in-projection's input (d) and output (2D + 2GN + H), and
the scan output (D), and the gated norm's fp32 reciprocal RMS, one per token and group (G).
"""

from __future__ import annotations

from tfcost.core.blocks import Block
from tfcost.core.layers.short_conv import conv_rows
from tfcost.core.ops import Op, Saved, Span
from tfcost.schema import ModelShape


def mamba2_ops(shape: ModelShape, block: Block, prefix: str = "mamba") -> list[Op]:
    """One Mamba-2 mixer's rows."""
    assert shape.ssm is not None  # the schema guarantees it for a 'mamba2' layer
    s, d = shape.ssm, shape.d_model
    inner, heads, state, groups = s.d_inner, s.n_heads, s.d_state, s.n_groups
    per_head = inner // heads
    conv_channels = inner + 2 * groups * state
    chunked = Span(chunk=s.chunk_size)
    scan = f"{prefix}/scan"
    ops = [
        Op(
            f"{prefix}/in_proj",
            "linear",
            d,
            inner + conv_channels + heads,
            "token",
            s.proj_bias,
            flops_part=f"{prefix}/in_proj",
            saves=(Saved("input", d, split=False), Saved("output: z, x, B, C and dt", inner + conv_channels + heads)),
        ),
        *conv_rows(prefix, conv_channels, s.conv_kernel, s.conv_bias),
        Op(f"{prefix}/A_log_D_dt_bias", "table", heads, 3, "weights"),
        Op(f"{prefix}/scan_scores", "linear", state, heads, "chunk_entry", copies=0, flops_part=scan, span=chunked),
        Op(f"{prefix}/scan_values", "linear", per_head, heads, "chunk_entry", copies=0, flops_part=scan, span=chunked),
        Op(
            f"{prefix}/scan_states",
            "linear",
            per_head * state,
            heads,
            "chunk_token",
            copies=0,
            flops_part=scan,
            span=chunked,
        ),
        Op(
            f"{prefix}/scan_passing",
            "linear",
            per_head * state,
            heads,
            "chunk_pair",
            copies=0,
            flops_part=scan,
            span=chunked,
        ),
        Op(
            f"{prefix}/scan_readout",
            "linear",
            per_head * state,
            heads,
            "chunk_readout",
            copies=0,
            flops_part=scan,
            span=chunked,
            saves=(Saved("scan output", inner),),
        ),
        Op(f"{prefix}/out_proj", "linear", inner, d, "token", s.proj_bias, flops_part=f"{prefix}/out_proj"),
        Op(f"state/{prefix}_conv", "state", conv_channels * s.conv_kernel, heads, "sequence"),
        Op(f"state/{prefix}_ssm", "state", heads * per_head * state, heads, "sequence", dtype="fp32"),
    ]
    if s.gated_norm:
        # The fused kernel recomputes the norm's output but keeps its fp32 reciprocal RMS, one per token and group.
        rstd = Saved("reciprocal RMS per group", groups, store="fp32")
        ops.append(Op(f"{prefix}/norm", "norm", inner, 1, "weights", saves=(rstd,)))
    return ops
