"""Mamba (Gu and Dao 2023, "Mamba: Linear-Time Sequence Modeling with Selective State Spaces", arXiv:2312.00752
§3 and Algorithm 2), as transformers 5.24 builds it (MambaMixer; Jamba's mixer adds RMSNorms on dt, B and C).

Symbols: d d_model, D d_inner, N d_state, R dt_rank, K conv kernel. One layer:
    in_proj   d -> 2D (x and the gate z)
    conv      depthwise, kernel K, over D channels (with bias)
    x_proj    D -> R + 2N (the time step's low-rank input, B and C), no bias
    dt_proj   R -> D, with bias
    A_log     D x N;  D (skip)  D
    out_proj  D -> d
The selective scan's only matmul is the readout state.C, 2*D*N FLOPs per token (the discretization and the
state update are elementwise and FlopCounterMode counts none of them), the same in the chunkless recurrent
step. State per sequence, as transformers' cache holds it: the conv input of the last K positions, D x K at the
model's dtype, and the SSM state D x N in fp32.
Saved for the backward pass, as mamba_ssm's fused MambaInnerFn keeps them (checkpoint_lvl 1: the conv output and
the time steps are recomputed): the in-projection's input (d), its output x and z (2D), x_proj's output (R + 2N),
contiguous copies of B and C (2N) and the scan output (D), and the scan's intermediates (`scan_intermediates`, the
running state at the end of each chunk the kernel cuts the sequence into: D x 2N fp32 per chunk of 2,048 positions).
"""

from __future__ import annotations

from tfcost.core.blocks import Block
from tfcost.core.layers.short_conv import conv_rows
from tfcost.core.ops import Op, Saved
from tfcost.schema import ModelShape

# Positions per chunk of mamba_ssm's selective_scan kernel (kChunkSize in selective_scan_fwd_kernel.cuh): its forward
# returns the running state at each chunk's end, n_chunks x D x 2N in fp32, which MambaInnerFn saves.
SCAN_CHUNK = 2048


def mamba_ops(shape: ModelShape, block: Block, prefix: str = "mamba") -> list[Op]:
    """One Mamba (selective scan) mixer's rows."""
    s, d = shape.ssm, shape.d_model
    assert s is not None and s.dt_rank is not None  # the schema and the reader write both for a 'mamba' layer
    inner, state, rank = s.d_inner, s.d_state, s.dt_rank
    ops = [
        Op(
            f"{prefix}/in_proj",
            "linear",
            d,
            2 * inner,
            "token",
            s.proj_bias,
            flops_part=f"{prefix}/in_proj",
            saves=(Saved("input", d, split=False), Saved("output: x and the gate z", 2 * inner)),
        ),
        *conv_rows(prefix, inner, s.conv_kernel, s.conv_bias),
        Op(
            f"{prefix}/x_proj",
            "linear",
            inner,
            rank + 2 * state,
            "token",
            flops_part=f"{prefix}/x_proj",
            saves=(Saved("output: time-step input, B and C, and copies of B and C", rank + 4 * state),),
        ),
        Op(f"{prefix}/dt_proj", "linear", rank, inner, "token", True, flops_part=f"{prefix}/dt_proj"),
        Op(f"{prefix}/A_log_D", "table", inner, state + 1, "weights"),
        Op(
            f"{prefix}/scan_readout",
            "linear",
            state,
            inner,
            "token",
            copies=0,
            flops_part=f"{prefix}/scan",
            saves=(
                Saved("scan output", inner),
                Saved("scan's chunk states", inner * 2 * state, per="chunk", store="fp32", chunk=SCAN_CHUNK),
            ),
        ),
        Op(f"{prefix}/out_proj", "linear", inner, d, "token", s.proj_bias, flops_part=f"{prefix}/out_proj"),
        Op(f"state/{prefix}_conv", "state", inner * s.conv_kernel, 1, "sequence"),
        Op(f"state/{prefix}_ssm", "state", inner * state, 1, "sequence", dtype="fp32"),
    ]
    if s.dt_norms:  # Jamba: RMSNorm weights over dt (R), B (N) and C (N)
        ops.append(Op(f"{prefix}/dt_b_c_norms", "norm", rank + 2 * state, 1, "weights"))
    return ops
