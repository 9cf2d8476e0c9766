"""The blocks a model is made of, in order, and what each one holds.

The core prices a model one block at a time and sums, so stacks whose blocks differ (dense and MoE MLPs,
sliding-window and global attention, encoder and decoder) need no special cases elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from tfcost.schema import ModelShape


@dataclass(frozen=True)
class Block:
    """One transformer block, as far as its costs differ from its neighbours'."""

    stack: str  # "layers" in a one-stack model; "encoder" or "decoder" in an encoder-decoder model
    causal: bool  # its self-attention is masked to earlier positions (decoders)
    cross_attention: bool  # it also attends to the encoder's output (encoder-decoder decoders)
    moe: bool  # routed experts in place of the dense MLP
    window: int | None  # sliding-window width of its self-attention; None: it sees every position


@lru_cache(maxsize=4096)
def blocks(shape: ModelShape) -> tuple[tuple[Block, int], ...]:
    """The model's blocks as (block, how many of them): each kind of block once, in the order it first appears
    (an encoder-decoder model's encoder blocks first). Every cost is a sum over blocks, so counting them costs the
    same for 2 layers as for 10^15, and for Gemma-2's 42 alternating layers as for two."""
    if shape.architecture == "encoder-decoder":
        assert shape.n_decoder_layers is not None  # the schema guarantees it
        encoder = Block("encoder", causal=False, cross_attention=False, moe=False, window=None)
        decoder = Block("decoder", causal=True, cross_attention=True, moe=False, window=None)
        return ((encoder, shape.n_layers), (decoder, shape.n_decoder_layers))
    dense = set(shape.moe.dense_layers) if shape.moe else set()
    sliding = set(shape.sliding_layers or ())

    def block_at(index: int) -> Block:
        slides = shape.sliding_layers is None or index in sliding
        return Block(
            "layers",
            causal=shape.architecture == "decoder",
            cross_attention=False,
            moe=shape.moe is not None and index not in dense,
            window=shape.sliding_window if slides else None,
        )

    # Only a listed layer (sliding, dense) or the one after it can differ from the layer before it, so the layers
    # between two such starts are alike.
    listed = dense | sliding
    starts = sorted({0, *listed, *(index + 1 for index in listed)} - {shape.n_layers})
    counts: dict[Block, int] = {}
    for start, end in zip(starts, [*starts[1:], shape.n_layers], strict=True):
        block = block_at(start)
        counts[block] = counts.get(block, 0) + end - start
    return tuple(counts.items())


def representative_block(shape: ModelShape, size: Callable[[Block], int]) -> Block:
    """The block that `per_layer` describes: the most common one, ties going to the larger (by `size`).

    DeepSeek-V3 (3 dense, 58 MoE blocks): an MoE block; T5 (6 encoder, 6 decoder blocks): a decoder block.
    """
    counts = dict(blocks(shape))
    return max(counts, key=lambda block: (counts[block], size(block)))
