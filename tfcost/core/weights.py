"""Bytes of the weights as a quantized checkpoint stores them: each format's payload and scales, in one place.

Symbols: n weights of a part, b bits per weight, g weights per scale group. A part the format covers costs
ceil(n * b / 8) bytes of payload plus its scales; every other parameter (embeddings, norms, the router, the output
head, and the parts a config's modules_to_not_convert names) stays at 16 bits. Scales are counted per part as
ceil(n / group): exact when every matrix's sizes are multiples of the group, as in the checkpoints these formats
ship; biases, where a model has them, are counted with their matrix.

- mxfp4: OCP Microscaling Formats (MX) v1.0, §5.1-5.2: 4-bit E2M1 elements, one 8-bit E8M0 scale per 32.
- nvfp4: NVIDIA, "Introducing NVFP4" (2025): 4-bit E2M1 elements, one FP8 E4M3 scale per 16 (the one fp32
  scale per tensor is not counted).
- fp8: one byte per weight (E4M3); with a block (DeepSeek-V3 §3.3.2; transformers' FineGrainedFP8), one fp32
  scale per 128 x 128 block; per-tensor and per-channel scales (compressed-tensors' "channel" strategy: one per
  output row) are not counted.
- awq, gptq: b-bit weights, and per group of g one fp16 scale and one b-bit zero point (AutoAWQ's and
  AutoGPTQ's packed qzeros); GPTQ's per-column g_idx is not counted. A group_size of -1 (per channel) counts no
  scales.
- bitsandbytes: 8-bit (LLM.int8(), Dettmers et al. 2022) one byte per weight, its per-row fp32 scales not
  counted; 4-bit (NF4/FP4, QLoRA, Dettmers et al. 2023 §3) half a byte per weight and one fp32 absmax per 64, or
  with double quantization one 8-bit absmax per 64 and one fp32 constant per 256 of them.
"""

from __future__ import annotations

from tfcost.core import params
from tfcost.schema import ModelShape, Quantization, QuantizedPart, WeightsDtype
from tfcost.units import ceil_div

UNQUANTIZED_BYTES = 2  # what a quantized checkpoint keeps at 16 bits (bf16 or fp16)
FP16_SCALE_BYTES = 2
FP32_SCALE_BYTES = 4
FORMAT_GROUP = {"mxfp4": 32, "nvfp4": 16}  # fixed by each format's specification
BNB_BLOCK = 64  # bitsandbytes' 4-bit blocksize
BNB_NESTED_BLOCK = 256  # double quantization: 8-bit absmax constants grouped by 256, each group with an fp32 scale


# Weights at a dtype asked for (`serve --weights-dtype`), the serving engines' weight-only formats: n x bits / 8,
# and for 4-bit weights (int4, fp4) one fp16 scale per group of g (zero points, where used, are not counted):
# 4.125 bits per weight at GPTQ's and AWQ's default group of 128, 4.5 at gpt-fast's 32.
WEIGHT_BITS: dict[WeightsDtype, int] = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4, "fp4": 4}
INT4_GROUP_SIZE = 128  # GPTQ and AWQ's default group size: one scale per 128 weights (`--group-size`)
GROUP_SCALE_BYTES = FP16_SCALE_BYTES


def dtype_bytes(n: int, dtype: WeightsDtype, group_size: int = INT4_GROUP_SIZE) -> int:
    """n weights at a serving dtype: ceil(n x bits / 8), plus ceil(n / g) fp16 scales for 4-bit weights."""
    scales = ceil_div(n, group_size) * GROUP_SCALE_BYTES if WEIGHT_BITS[dtype] == 4 else 0
    return ceil_div(n * WEIGHT_BITS[dtype], 8) + scales


def scale_bytes(n: int, q: Quantization) -> int:
    """The scales (and zero points) stored beside n quantized weights."""
    if q.method in FORMAT_GROUP:  # one 8-bit scale per group (E8M0 for mxfp4, E4M3 for nvfp4)
        return ceil_div(n, q.group_size or FORMAT_GROUP[q.method])
    if q.method == "fp8":
        return ceil_div(n, q.block[0] * q.block[1]) * FP32_SCALE_BYTES if q.block else 0
    if q.method in ("awq", "gptq"):
        if q.group_size is None:
            return 0
        groups = ceil_div(n, q.group_size)
        return groups * FP16_SCALE_BYTES + ceil_div(groups * q.bits, 8)
    if q.method == "bnb-4bit":
        blocks = ceil_div(n, BNB_BLOCK)
        if q.double_quant:
            return blocks + ceil_div(blocks, BNB_NESTED_BLOCK) * FP32_SCALE_BYTES
        return blocks * FP32_SCALE_BYTES
    return 0  # bnb-8bit: per-row scales not counted


def quantized_bytes(n: int, q: Quantization) -> int:
    """n weights in format q: the payload ceil(n * b / 8) plus the scales."""
    return ceil_div(n * q.bits, 8) + scale_bytes(n, q)


def part_kind(name: str) -> QuantizedPart | None:
    """The kind of a parameter_breakdown part a quantization covers, or None for what stays at 16 bits (embeddings,
    norms, the router and shared-expert gate, the output head)."""
    if "norm" in name or name.startswith("towers/"):  # vision and audio towers: 16 bits (docs/towers.md)
        return None
    if "/attention/" in name or "/cross_attention/" in name:
        return "attention"
    if "/mlp/" in name:
        return "mlp"
    if name.endswith("/moe/experts"):
        return "experts"
    if name.endswith("/moe/shared"):
        return "shared_experts"
    return None


def checkpoint_weight_bytes(shape: ModelShape) -> int:
    """Every parameter as the checkpoint stores it: the parts its quantization covers in that format, the rest at
    16 bits; all at 16 bits without a quantization."""
    q = shape.quantization
    total = 0
    for name, count in params.parameter_breakdown(shape).items():
        kind = part_kind(name)
        if q is not None and kind is not None and kind not in q.not_converted:
            total += quantized_bytes(count, q)
        else:
            total += count * UNQUANTIZED_BYTES
    return total
