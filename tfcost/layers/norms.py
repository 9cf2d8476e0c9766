"""Norms: LayerNorm has a scale and a shift per channel (Ba et al. 2016), RMSNorm only a scale (Zhang and
Sennrich 2019)."""

from __future__ import annotations

from tfcost.ops import Op
from tfcost.schema import ModelShape


def norm_vectors(shape: ModelShape) -> int:
    """Parameter vectors of one norm: 2 (LayerNorm), 1 (RMSNorm)."""
    return 2 if shape.norm == "layernorm" else 1


def norm_op(shape: ModelShape, name: str, width: int | None = None, copies: int = 1) -> Op:
    """A norm over `width` channels (default d_model): parameters only, no matmul."""
    return Op(name, "norm", shape.d_model if width is None else width, norm_vectors(shape), "weights", copies=copies)


def block_norm_names(count: int) -> list[str]:
    """Names of a block's d-wide norms: before attention and MLP, then any extra ones (Gemma-2's post-norms)."""
    if count == 1:
        return ["norm/input"]
    return ["norm/attention", "norm/mlp"] + ["norm/extra"] * (count - 2)
