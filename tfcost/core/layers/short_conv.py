"""Depthwise causal convolutions, and LFM2's double-gated short-convolution mixer (Liquid AI, LFM2 technical
report 2025; transformers' Lfm2ShortConv).

A depthwise causal convolution of kernel K over c channels holds K weights (and a bias) per channel. transformers
runs it as F.conv1d with padding K - 1 on both sides and drops the extra outputs, so FlopCounterMode counts 2*K
FLOPs per channel over T + K - 1 outputs: 2*K*c per token plus 2*K*(K - 1)*c once per sequence. Its cache keeps
the last K inputs of each channel (not K - 1), at the model's dtype.

LFM2's mixer, d = d_model:
    in_proj    d -> 3d (B, C, x)
    conv       depthwise over B*x (d channels), kernel L
    out_proj   d -> d  (of C times the conv output)
The gates are elementwise: no matmul FLOPs.
Saved for the backward pass (each op keeps what its backward reads): the in-projection's input (d) and its output
B, C, x (3d, the gates' operands), the convolution's input B*x (d), its output (d, C's other operand) and the
out-projection's input (d).
"""

from __future__ import annotations

from tfcost.core.blocks import Block
from tfcost.core.ops import Op, Saved
from tfcost.schema import ModelShape


def conv_rows(prefix: str, channels: int, kernel: int, bias: bool) -> list[Op]:
    """A depthwise causal convolution (padding K - 1 on both sides, the extra outputs dropped): K weights and a bias
    per channel, 2*K FLOPs per channel and output, over T + K - 1 outputs (the K - 1 padded ones once per
    sequence). Mamba, Mamba-2, Gated DeltaNet and LFM2 all run one."""
    part = f"{prefix}/conv"
    return [
        Op(part, "linear", kernel, channels, "token", bias, flops_part=part),
        Op(f"{part}_edge", "linear", (kernel - 1) * kernel, channels, "sequence", copies=0, flops_part=part),
    ]


def depthwise_conv_ops(prefix: str, channels: int, kernel: int, bias: bool, heads: int = 1) -> list[Op]:
    """The convolution's rows and its state of K positions per channel (split over `heads` under tensor
    parallelism), in the model's dtype."""
    return [
        *conv_rows(prefix, channels, kernel, bias),
        Op(f"state/{prefix}_conv", "state", channels * kernel, heads, "sequence"),
    ]


def short_conv_ops(shape: ModelShape, block: Block) -> list[Op]:
    """One LFM2 short-convolution mixer's rows."""
    assert shape.short_conv is not None  # the schema guarantees it for a 'short_conv' layer
    d, conv = shape.d_model, shape.short_conv
    return [
        Op(
            "short_conv/in_proj",
            "linear",
            d,
            3 * d,
            "token",
            conv.bias,
            flops_part="short_conv/in_proj",
            saves=(Saved("input", d, split=False), Saved("output: B, C and x", 3 * d)),
        ),
        *depthwise_conv_ops("short_conv", d, conv.conv_kernel, conv.bias),
        Op(
            "short_conv/out_proj",
            "linear",
            d,
            d,
            "token",
            conv.bias,
            flops_part="short_conv/out_proj",
            saves=(Saved("convolution input B*x and output", 2 * d), Saved("input", d)),
        ),
    ]
