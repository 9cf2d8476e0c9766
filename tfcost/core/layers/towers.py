"""Vision and audio towers of multimodal models: a bidirectional encoder priced by the same op tables as the
language model's layers, and the rows around it (patch embedding, positions, class token, norms, projector).

A ViT (Dosovitskiy et al. 2021, §3.1) cuts an image of S x S pixels into P = (S/p)^2 patches of p x p pixels,
embeds each (a p x p x C convolution with stride p: one C p^2 -> d matmul per patch), adds positions and runs L
encoder layers over the P positions (plus a class token, where it has one) with full, unmasked attention: each
layer's q, k, v, o and MLP matmuls once per position and QK^T, AV over all P^2 score entries. The projector
maps the encoder's output into the language model's width, over the patches or over the tokens left after a
pooling or patch merge (Gemma 3: 4,096 patches pooled to 256 tokens).
"""

from __future__ import annotations

from functools import lru_cache
from math import isqrt
from typing import NamedTuple

from tfcost.core.blocks import Block
from tfcost.core.layers.attention import attention_ops
from tfcost.core.layers.mlp import mlp_ops
from tfcost.core.layers.norms import block_norm_names, norm_op
from tfcost.core.ops import Op, Rate, op_flops, op_flops_per_unit, op_params
from tfcost.schema import Biases, ModelShape, Tower, TowerRow

# The encoder layer: full attention over every position of the image, and its dense MLP.
ENCODER_LAYER = Block("encoder", causal=False, cross_attention=False, moe=False, window=None)


class TowerOp(NamedTuple):
    """One row of a tower's operation table, done `count` times (the encoder's layers) over `over` per image (or
    audio clip): over ceil(frames / stride) time steps for a strided convolution over feature frames, over `extra`
    more positions for a padded one."""

    times: int
    op: Op
    over: str  # positions | patches | tokens | weights | relative | frames
    stride: int = 1
    extra: int = 0


@lru_cache(maxsize=256)
def encoder_shape(tower: Tower) -> ModelShape:
    """The tower's encoder as a model shape, so that its layers are the core's own attention and MLP rows."""
    return ModelShape(
        name=f"{tower.name} tower",
        vocab_size=1,
        d_model=tower.d_model,
        n_layers=tower.n_layers,
        n_heads=tower.n_heads,
        n_kv_heads=tower.n_kv_heads or tower.n_heads,
        qk_norm=tower.qk_norm,
        block_norms=tower.block_norms,
        head_dim=tower.head_dim or tower.d_model // tower.n_heads,
        d_ff=tower.d_ff,
        mlp=tower.mlp,
        norm=tower.norm,
        bias=Biases(qkv=tower.bias, attn_out=tower.bias, mlp=tower.bias),
        tied_embeddings=False,
        position="none",
        max_seq_len=positions(tower),
        architecture="encoder",
        head="none",
    )


def encoder_layer_ops(tower: Tower) -> list[Op]:
    """One encoder layer: attention (q, k, v, scores, values, o), the MLP and the two norms before them."""
    shape = encoder_shape(tower)
    ops = attention_ops(shape, ENCODER_LAYER) + mlp_ops(shape, ENCODER_LAYER)
    return ops + [norm_op(shape, name) for name in block_norm_names(shape.block_norms)]


def patches(tower: Tower) -> int:
    """P = (S/p)^2 patches of one image (or tile), or the budget a processor pads every image to (Gemma 4)."""
    return tower.patches_per_image or (tower.image_size // tower.patch_size) ** 2


def positions(tower: Tower) -> int:
    """The encoder's positions for one image: the patches and a class token where the tower has one."""
    return patches(tower) + int(tower.class_token)


def row_op(row: TowerRow, name: str) -> Op:
    """A schema row as an op-table row: `weights` rows (tables, norms) have no per-position work. A pool done as a
    matmul (Gemma 4's Gemma4VisionPooler: a tokens x patches averaging matrix times the patches) is a weighted sum
    without parameters, the kind of attention's AV: 2 x width x patches per token."""
    if row.kind == "pool":
        return Op(f"{name}/{row.name}", "values", row.fan_in, row.fan_out, "token")
    per: Rate = "weights" if row.kind != "linear" else "token"
    # A convolution's outputs along its other axis (frequency) are `times` uses of one weight per time step.
    return Op(f"{name}/{row.name}", row.kind, row.fan_in, row.fan_out, per, row.bias, uses=row.times)


@lru_cache(maxsize=256)
def tower_ops(tower: Tower) -> tuple[TowerOp, ...]:
    """The whole tower: the rows before and after the encoder (in the order the config gives them) and one encoder
    layer's rows, n_layers times, over the encoder's positions."""
    name = tower.name
    ops = [TowerOp(1, row_op(row, name), row.over, row.stride, row.extra) for row in tower.rows]
    layer = [TowerOp(tower.n_layers, Op(f"{name}/encoder/{op.name}", op.kind, op.fan_in, op.fan_out, op.per, op.bias,
                                        op.copies, op.uses, span=op.span), "positions")
             for op in encoder_layer_ops(tower) if op.kind != "cache"]  # fmt: skip
    layer += [TowerOp(tower.n_layers, row_op(row, f"{name}/encoder"), row.over, row.stride, row.extra)
              for row in tower.layer_rows]  # fmt: skip
    return tuple(ops + layer)


def tower_params_by_part(tower: Tower) -> dict[str, int]:
    """Parameters of the tower by part ("vision/encoder/attention/q", "vision/projector/linear_1", ...)."""
    parts: dict[str, int] = {}
    for times, op, *_ in tower_ops(tower):
        if op_params(op):  # rows without weights (QK^T, AV, a plain MLP's gate) are no part of the breakdown
            parts[op.name] = parts.get(op.name, 0) + times * op_params(op)
    return parts


def tower_params(tower: Tower) -> int:
    """Every parameter of the tower."""
    return sum(tower_params_by_part(tower).values())


class ImageInput(NamedTuple):
    """How one image of S x S pixels goes through a tower: `passes` encoder runs (tiles) of `patches` patches
    each, and the `tokens` the language model reads for the whole image."""

    passes: int
    patches: int
    tokens: int


def image_input(tower: Tower, side: int | None = None) -> ImageInput:
    """One image of `side` pixels a side (default: the tower's image_size), as the model's processor feeds it:
    - crops (Phi-4-multimodal, Phi4MultimodalImageProcessor): n x n crops of image_size, n = ceil(S / crop) with
      n^2 at most max_tiles (36), and a global crop, each one encoder run pooled 2 x 2 to m^2 tokens; the
      language model reads m^2 + 1 + (n m)^2 + n m + m (the global crop, a separator, the crops, a newline a row);
    - fixed (Gemma 3's SigLIP): resized to image_size, always (S/p)^2 patches and tokens_per_image tokens;
    - tiles (Llama 4, Llama4ImageProcessor): a square image is cut into n x n tiles of image_size, n = ceil(S /
      tile) with n^2 at most max_tiles (get_best_fit's canvas for a square image), plus one global tile of the
      whole image when n > 1; each tile one encoder run and tokens_per_image tokens;
    - native (Pixtral, Qwen): the image's own grid, resized down to max_image_size where there is one and rounded
      up to whole merge blocks of p m pixels (Mistral 3's processor; Qwen's smart_resize rounds to the nearest,
      the same at multiples of p m): g = ceil(S / (p m)) m patches a side, (g / m)^2 tokens."""
    side = tower.image_size if side is None else side
    if tower.sizing == "crops":  # Phi-4-multimodal: n x n crops and a global one, pooled 2 x 2, with separators
        per_side = min(-(-side // tower.image_size), isqrt(tower.max_tiles))
        m = isqrt(tower.tokens_per_image)  # one crop's tokens a side, (S/p) / 2
        return ImageInput(per_side * per_side + 1, patches(tower), m * m + 1 + (per_side * m) ** 2 + per_side * m + m)
    if tower.sizing == "tiles":
        per_side = min(-(-side // tower.image_size), isqrt(tower.max_tiles))
        tiles = per_side * per_side + int(per_side > 1)
        return ImageInput(tiles, patches(tower), tiles * tower.tokens_per_image)
    if tower.sizing == "native":
        side = min(side, tower.max_image_size or side)
        block = tower.patch_size * tower.merge
        grid = -(-side // block) * tower.merge
        return ImageInput(1, grid * grid, (grid // tower.merge) ** 2)
    return ImageInput(1, patches(tower), tower.tokens_per_image)


def tower_flops_per_image(tower: Tower, side: int | None = None) -> int:
    """Forward matmul FLOPs of one image through the tower: for each encoder run, 2 in out per position or patch
    of each linear row (once for a `passes` row), and QK^T and AV over the P^2 score entries of every head in every
    encoder layer (full, unmasked); then the rows over the tokens the language model reads, the image's."""
    passes, patch_count, tokens = image_input(tower, side)
    units = {"positions": patch_count + int(tower.class_token), "patches": patch_count, "passes": 1}
    per_pass = on_tokens = 0
    for times, op, over, *_ in tower_ops(tower):
        if over == "tokens":
            on_tokens += times * op_flops(op, tokens, tokens, False)
        else:
            n = units.get(over, 0)
            per_pass += times * op_flops(op, n, n, False)
    return passes * per_pass + on_tokens


class AudioInput(NamedTuple):
    """How S seconds of audio go through an audio tower: `frames` feature frames, `positions` encoder positions
    (padded up to whole blocks where the encoder attends in blocks), and the `tokens` the language model reads."""

    frames: int
    positions: int
    tokens: int


def audio_input(tower: Tower, seconds: float) -> AudioInput:
    """S seconds as the model's processor feeds them (tfcost.schema.AudioFeed): N = round(S x rate) samples, frames
    = (N + pad - window) // hop + 1, tokens = ceil(frames / reduction) (at most max_tokens). Gemma 4
    (processing_gemma4.py, _compute_audio_num_tokens: a 321-sample unfold after 160 samples of padding, hop 160,
    two stride-2 convolutions, at most audio_seq_length 750 tokens): 25 tokens a second. Phi-4-multimodal
    (feature_extraction_phi4_multimodal.py: (N - 400) // 160 + 1 frames, _compute_audio_embed_size: ceil(frames /
    8)): 12.5 a second; its encoder unfolds positions past 500 into padded blocks of 500 (Phi4MultimodalAudioModel)."""
    feed = tower.audio
    if feed is None:
        raise ValueError(f"{tower.name} tower takes no audio")
    samples = round(seconds * feed.sample_rate)
    frames = max((samples + feed.pad - feed.window) // feed.hop + 1, 0)
    tokens = -(-frames // feed.reduction)
    if feed.max_tokens is not None:
        tokens = min(tokens, feed.max_tokens)
        frames = min(frames, feed.max_tokens * feed.reduction)
    positions = tokens
    if feed.block is not None and tokens > feed.block:
        positions = -(-tokens // feed.block) * feed.block
    return AudioInput(frames, positions, tokens)


def audio_score_entries(tower: Tower, positions: int) -> tuple[int, int]:
    """Score entries of one head in one encoder layer over P positions: (QK^T's, AV's). Gemma 4's chunked local
    attention (Gemma4AudioAttention) pads P to c = ceil(P / chunk) blocks, each of `chunk` queries over `context`
    keys, and scores each padded query against the `relative` projected positions too (matrix_bd); Phi-4's full
    attention over P (or each block of `block` positions)."""
    feed = tower.audio
    assert feed is not None
    if feed.chunk is not None and feed.context is not None:
        queries = -(-positions // feed.chunk) * feed.chunk
        return queries * (feed.context + feed.relative), queries * feed.context
    block = min(positions, feed.block or positions)
    entries = (positions // block) * block * block if block else 0
    return entries, entries


def tower_flops_per_audio(tower: Tower, seconds: float) -> int:
    """Forward matmul FLOPs of one clip of S seconds through an audio tower: each row over its frames (strided
    convolutions), positions, relative positions or tokens, and QK^T and AV over each layer's score entries."""
    feed = tower.audio
    assert feed is not None
    frames, positions, tokens = audio_input(tower, seconds)
    if not tokens:
        return 0
    scores, values = audio_score_entries(tower, positions)
    blocks = positions // feed.block if feed.block and tokens > feed.block else 1  # a padded conv pads each block
    total = 0
    for times, op, over, stride, extra in tower_ops(tower):
        if op.kind in ("scores", "values"):
            n = scores if op.kind == "scores" else values
        else:
            n = {"positions": positions + extra * blocks, "relative": feed.relative, "tokens": tokens,
                 "frames": -(-frames // stride)}.get(over, 0)  # fmt: skip
        total += times * op_flops_per_unit(op) * n
    return total


def audio_towers(shape: ModelShape) -> tuple[Tower, ...]:
    return tuple(tower for tower in shape.towers if tower.audio is not None)


def audio_tokens(shape: ModelShape, seconds: float) -> int:
    """Prompt tokens S seconds of audio add (the begin and end markers around them left out)."""
    return sum(audio_input(tower, seconds).tokens for tower in audio_towers(shape))


def audio_flops(shape: ModelShape, seconds: float) -> int:
    """Forward FLOPs of S seconds of audio through the audio towers."""
    return sum(tower_flops_per_audio(tower, seconds) for tower in audio_towers(shape))


def vision_towers(shape: ModelShape) -> tuple[Tower, ...]:
    return tuple(tower for tower in shape.towers if tower.name == "vision")


def image_tokens(shape: ModelShape, images: int, side: int | None = None) -> int:
    """Prompt tokens N images add: each image's tokens (the image's soft tokens; the few start, end and row-break
    markers around them are left out)."""
    return images * sum(image_input(tower, side).tokens for tower in vision_towers(shape))


def image_flops(shape: ModelShape, images: int, side: int | None = None) -> int:
    """Forward FLOPs of N images through the vision towers (before the language model reads their tokens)."""
    return images * sum(tower_flops_per_image(tower, side) for tower in vision_towers(shape))
