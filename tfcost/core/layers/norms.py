"""Norms: LayerNorm has a scale and a shift per channel (Ba et al. 2016), RMSNorm only a scale (Zhang and
Sennrich 2019)."""

from __future__ import annotations

from tfcost.core.ops import Op, Saved
from tfcost.schema import ModelShape


def norm_vectors(shape: ModelShape) -> int:
    """Parameter vectors of one norm: 2 (LayerNorm), 1 (RMSNorm, a LayerNorm without shift), 0 (OLMo's LayerNorm
    without parameters)."""
    return {"layernorm": 2, "layernorm-noparams": 0}.get(shape.norm, 1)


def norm_op(shape: ModelShape, name: str, width: int | None = None, copies: int = 1, saves_input: int = 0) -> Op:
    """A norm over `width` channels (default d_model): parameters only, no matmul. `saves_input`: how many of its
    copies keep their input for the backward pass, a d-wide tensor of the residual stream (Korthikanti et al. 2022
    §4.1: "each layer norm stores its input with size 2sbh")."""
    width = shape.d_model if width is None else width
    saves = (Saved("input", width * saves_input, split=False),) if saves_input else ()
    return Op(name, "norm", width, norm_vectors(shape), "weights", copies=copies, saves=saves)


def one_norm_feeds_both(shape: ModelShape) -> bool:
    """Whether the mixer and the FFN read one normed input (Falcon-7B's parallel block): saved once, by the mixer."""
    return shape.parallel_block and shape.block_norms == 1


def block_norm_names(count: int) -> list[str]:
    """Names of a block's d-wide norms: before attention and MLP, then any extra ones (Gemma-2's post-norms)."""
    if count == 1:
        return ["norm/input"]
    return ["norm/attention", "norm/mlp"] + ["norm/extra"] * (count - 2)
