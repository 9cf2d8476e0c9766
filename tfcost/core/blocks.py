"""The layers a model is made of, in order, and what kind each one is.

A model is embeddings, an ordered stack of layers and a head. Each layer has a mixer (attention, MLA; later
recurrent kinds) and an FFN (dense MLP or MoE). Every cost is a sum over layer kinds of (count x the kind's
operation table, tfcost.core.layers), so stacks whose layers differ (dense and MoE FFNs, sliding-window and global
attention, encoder and decoder) need no special cases in the folds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from tfcost.schema import ModelShape


@dataclass(frozen=True)
class Block:
    """One kind of layer, as far as its costs differ from its neighbours' (the "LayerKind" of the core)."""

    stack: str  # "layers" in a one-stack model; "encoder" or "decoder" in an encoder-decoder model
    causal: bool  # its self-attention is masked to earlier positions (decoders)
    cross_attention: bool  # it also attends to the encoder's output (encoder-decoder decoders)
    moe: bool  # routed experts in place of the dense MLP
    window: int | None  # sliding-window width of its self-attention; None: it sees every position
    mixer: str = "attention"  # the mixer kind, a key of tfcost.core.layers.MIXERS
    chunk: int | None = None  # chunked attention: a query sees only its own C-token chunk
    rope: bool = True  # false: a NoPE layer (recorded; rotary embedding has no parameters or matmuls)
    feed_forward: bool = True  # false: a mixer-only layer (Mamba, Nemotron-H's M and * layers)
    # Sizes where the layer differs from the model's (None: the model's), and Gemma 3n/4's shared or value-less keys.
    head_dim: int | None = None
    kv_heads: int | None = None
    d_ff: int | None = None
    kv_shared: bool = False
    values_from_keys: bool = False
    beside_mlp: bool = False  # the routed experts run beside a dense MLP, not in its place (Gemma 4)
    tied: bool = False  # its shared weights are an earlier layer's (Zamba2's shared transformer blocks)

    @property
    def ffn(self) -> str:
        """The FFN kind, a key of tfcost.core.layers.FFNS."""
        if self.moe:
            return "mlp+moe" if self.beside_mlp else "moe"
        return "mlp" if self.feed_forward else "none"

    @property
    def name(self) -> str:
        """A short name for the kind: 'attention+mlp', 'attention(window=4096)+moe', 'encoder:attention+mlp'."""
        span = f"(window={self.window})" if self.window else f"(chunk={self.chunk})" if self.chunk else ""
        mixer = f"{self.mixer}{span}{'' if self.rope else '(nope)'}{'+cross_attention' if self.cross_attention else ''}"
        stack = "" if self.stack == "layers" else f"{self.stack}:"
        sizes = [
            f"{name}={value}" for name, value in (("head_dim", self.head_dim), ("kv_heads", self.kv_heads)) if value
        ]
        sizes += [flag for flag in ("kv_shared", "values_from_keys", "tied") if getattr(self, flag)]
        mixer += f"[{','.join(sizes)}]" if sizes else ""
        ffn = f"{self.ffn}(d_ff={self.d_ff})" if self.d_ff else self.ffn
        return f"{stack}{mixer}+{ffn}"


LayerKind = Block


@lru_cache(maxsize=4096)
def blocks(shape: ModelShape) -> tuple[tuple[Block, int], ...]:
    """The model's layer kinds as (kind, how many of them): each kind once, in the order it first appears (an
    encoder-decoder model's encoder layers first). Every cost is a sum over kinds, so counting them costs the
    same for 2 layers as for 10^15, and for Gemma-2's 42 alternating layers as for two."""
    if shape.architecture == "encoder-decoder":
        assert shape.n_decoder_layers is not None  # the schema guarantees it
        encoder = Block("encoder", causal=False, cross_attention=False, moe=False, window=None)
        decoder = Block("decoder", causal=True, cross_attention=True, moe=False, window=None)
        return ((encoder, shape.n_layers), (decoder, shape.n_decoder_layers))
    causal = shape.architecture == "decoder"
    mixer = "mla" if shape.mla is not None else "attention"
    counts: dict[Block, int] = {}
    if shape.layers is not None:  # written as groups: a pattern and a count
        for group in shape.layers:
            for spec in group.pattern:
                block = Block(
                    "layers", causal, False, spec.ffn in ("moe", "dense+moe"), spec.window, spec.mixer, spec.chunk,
                    spec.rope, spec.ffn != "none", spec.head_dim, spec.kv_heads, spec.d_ff, spec.kv_shared,
                    spec.values_from_keys, spec.ffn == "dense+moe", spec.tied,
                )  # fmt: skip
                counts[block] = counts.get(block, 0) + group.repeat
        return tuple(counts.items())
    dense = set(shape.moe.dense_layers) if shape.moe else set()
    sliding = set(shape.sliding_layers or ())

    def block_at(index: int) -> Block:
        slides = shape.sliding_layers is None or index in sliding
        moe = shape.moe is not None and index not in dense
        return Block("layers", causal, False, moe, shape.sliding_window if slides else None, mixer)

    # Only a listed layer (sliding, dense) or the one after it can differ from the layer before it, so the layers
    # between two such starts are alike.
    listed = dense | sliding
    starts = sorted({0, *listed, *(index + 1 for index in listed)} - {shape.n_layers})
    for start, end in zip(starts, [*starts[1:], shape.n_layers], strict=True):
        block = block_at(start)
        counts[block] = counts.get(block, 0) + end - start
    return tuple(counts.items())


def layer_count(shape: ModelShape) -> int:
    """Every layer of every stack: L, or the encoder's and the decoder's together."""
    return sum(count for _, count in blocks(shape))


@lru_cache(maxsize=1024)  # `tfcost plan serve` asks for every all-reduce and all-to-all of every layout and batch
def moe_layer_count(shape: ModelShape) -> int:
    """Layers whose FFN is a mixture of experts (DeepSeek-V3: 58 of 61)."""
    return sum(count for block, count in blocks(shape) if block.moe)


def representative_block(shape: ModelShape, size: Callable[[Block], int]) -> Block:
    """The block that `per_layer` describes: the most common one, ties going to the larger (by `size`).

    DeepSeek-V3 (3 dense, 58 MoE blocks): an MoE block; T5 (6 encoder, 6 decoder blocks): a decoder block.
    """
    counts = dict(blocks(shape))
    return max(counts, key=lambda block: (counts[block], size(block)))
