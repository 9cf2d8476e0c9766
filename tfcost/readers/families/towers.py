"""The vision towers of multimodal wrappers, read from `vision_config` as transformers 5.24 builds them.

Each reader takes the wrapper's config (the `*ForConditionalGeneration` one) and the language model's width and
returns the `towers` entries of the preset mapping (tfcost.schema.Tower): the encoder's sizes and the rows around
it, with the defaults of transformers' own config classes (models/<name>/configuration_<name>.py) for what a
config leaves out, and the shapes of its modeling_<name>.py. A wrapper with no reader here keeps its towers
named as not priced (tfcost.readers.hf_config.towers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tfcost.errors import TfcostError
from tfcost.readers.families.base import Fields

Row = dict[str, Any]
TowerReader = Callable[[dict[str, Any], dict[str, Any], int], list[dict[str, Any]]]


def row(name: str, kind: str, fan_in: int, fan_out: int, bias: bool = False, over: str = "weights") -> Row:
    return {"name": name, "kind": kind, "fan_in": fan_in, "fan_out": fan_out, "bias": bias, "over": over}


def sub_config(config: dict[str, Any], wrapper: str, defaults: dict[str, Any]) -> Fields:
    """The wrapper's vision_config, or transformers' default one (`defaults`: what the wrapper's
    sub_configs_defaults gives when the key is absent) when the config has none."""
    vision = config.get("vision_config")
    if vision is None:
        vision = defaults
    if not isinstance(vision, dict):
        raise TfcostError(f"{wrapper} config: field 'vision_config' should be a mapping, not {vision!r}")
    return Fields(vision, f"{wrapper} vision_config")


def side(fields: Fields, key: str, default: int) -> int:
    """image_size and patch_size may be an int or a [height, width] pair (square in every release read here)."""
    value = fields.raw(key, default)
    if isinstance(value, list | tuple) and len(value) == 2 and value[0] == value[1]:
        value = value[0]
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise fields.wrong(key, "a positive integer (or a square [h, w] pair)", value)
    return value


def vit_mapping(
    name: str, model_type: str, v: Fields, d: int, layers: int, heads: int, d_ff: int, image: int, patch: int,
    tokens: int, rows: list[Row], **extra: Any,
) -> dict[str, Any]:  # fmt: skip
    if image < patch:
        raise TfcostError(f"{v.model_type}: image_size {image} is smaller than patch_size {patch}")
    mapping = {"name": name, "model_type": model_type, "d_model": d, "n_layers": layers, "n_heads": heads}
    return mapping | {"d_ff": d_ff, "image_size": image, "patch_size": patch, "tokens_per_image": tokens,
                      "rows": rows} | extra  # fmt: skip


# The vision_config PaliGemmaConfig builds when a config has none (models/paligemma/configuration_paligemma.py).
PALIGEMMA_VISION = {"intermediate_size": 4096, "hidden_size": 1152, "patch_size": 14, "image_size": 224,
                    "num_hidden_layers": 27, "num_attention_heads": 16, "vision_use_head": False}  # fmt: skip


# transformers' SiglipVisionConfig defaults (models/siglip/configuration_siglip.py).
SIGLIP: dict[str, Any] = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "num_channels": 3,
    "image_size": 224,
    "patch_size": 16,
    "vision_use_head": True,
}


def siglip_rows(v: Fields) -> tuple[list[Row], dict[str, Any]]:
    """SiglipVisionTransformer (models/siglip/modeling_siglip.py): a C p^2 -> d patch convolution with bias, a
    (S/p)^2 x d position table, the encoder, a post LayerNorm, and where vision_use_head, the attention-pooling
    head (a probe, nn.MultiheadAttention's 3d x d in-projection and d x d out-projection with biases, a LayerNorm
    and an MLP), which runs once per image on its one probe query."""
    d, d_ff = v.int("hidden_size", SIGLIP["hidden_size"]), v.int("intermediate_size", SIGLIP["intermediate_size"])
    image, patch = side(v, "image_size", SIGLIP["image_size"]), side(v, "patch_size", SIGLIP["patch_size"])
    channels = v.int("num_channels", SIGLIP["num_channels"])
    rows = [
        row("patch_embedding", "linear", channels * patch * patch, d, True, "patches"),
        row("positions", "table", (image // patch) ** 2, d),
        row("post_layernorm", "norm", d, 2),
    ]
    if v.bool("vision_use_head", SIGLIP["vision_use_head"]):
        rows += [
            row("head/probe", "table", 1, d),
            row("head/attention/in", "linear", d, 3 * d, True),
            row("head/attention/out", "linear", d, d, True),
            row("head/layernorm", "norm", d, 2),
            row("head/mlp/fc1", "linear", d, d_ff, True),
            row("head/mlp/fc2", "linear", d_ff, d, True),
        ]
    sizes = {
        "d": d, "d_ff": d_ff, "image": image, "patch": patch,
        "layers": v.int("num_hidden_layers", SIGLIP["num_hidden_layers"]),
        "heads": v.int("num_attention_heads", SIGLIP["num_attention_heads"]),
    }  # fmt: skip
    return rows, sizes


def gemma3_towers(config: dict[str, Any], text: dict[str, Any], text_d: int) -> list[dict[str, Any]]:
    """Gemma 3 (models/gemma3): SigLIP without its head (vision_use_head false in every release), and
    Gemma3MultiModalProjector: average-pooled to mm_tokens_per_image tokens, a Gemma RMSNorm (one vector) and a
    d_v x d bias-free projection over those tokens."""
    wrapper = Fields(config, "gemma3")
    v = sub_config(config, "gemma3", {})
    rows, s = siglip_rows(v)
    tokens = wrapper.int("mm_tokens_per_image", 256)
    rows += [
        row("projector/norm", "norm", s["d"], 1),
        row("projector/linear", "linear", s["d"], text_d, False, "tokens"),
    ]
    return [vit_mapping("vision", "siglip_vision_model", v, s["d"], s["layers"], s["heads"], s["d_ff"], s["image"],
                        s["patch"], tokens, rows)]  # fmt: skip


def paligemma_towers(config: dict[str, Any], text: dict[str, Any], text_d: int) -> list[dict[str, Any]]:
    """PaliGemma (models/paligemma/modeling_paligemma.py): SigLIP, and PaliGemmaMultiModalProjector's one linear
    with bias, d_v -> projection_dim, over every patch: the language model reads (S/p)^2 tokens an image."""
    wrapper = Fields(config, "paligemma")
    v = sub_config(config, "paligemma", PALIGEMMA_VISION)
    rows, s = siglip_rows(v)
    rows.append(row("projector/linear", "linear", s["d"], wrapper.int("projection_dim", 2048), True, "tokens"))
    tokens = (s["image"] // s["patch"]) ** 2
    return [vit_mapping("vision", "siglip_vision_model", v, s["d"], s["layers"], s["heads"], s["d_ff"], s["image"],
                        s["patch"], tokens, rows)]  # fmt: skip


# Gemma4VisionConfig's defaults (models/gemma4/configuration_gemma4.py), and Gemma4ImageProcessor's budget
# (image_processing_gemma4.py: max_soft_tokens 280, every image padded to max_patches = 280 x pooling_kernel_size^2).
GEMMA4_VISION: dict[str, Any] = {
    "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 16, "num_attention_heads": 12,
    "num_key_value_heads": 12, "head_dim": 64, "pooling_kernel_size": 3, "patch_size": 16,
    "position_embedding_size": 10 * 1024,
}  # fmt: skip
GEMMA4_SOFT_TOKENS = 280


def gemma4_towers(config: dict[str, Any], text: dict[str, Any], text_d: int) -> list[dict[str, Any]]:
    """Gemma 4's vision tower (models/gemma4/modeling_gemma4.py, Gemma4VisionModel) where the config has one
    (transformers' default Gemma4Config has none): a bias-free 3 p^2 -> d patch projection and a 2 x
    position_embedding_size x d table (x and y), encoder layers with four RMSNorms, bias-free q, k, v, o
    (num_key_value_heads), head-wide q and k norms (v's has no scale) and a gated MLP; then a k x k average pool
    and Gemma4MultimodalEmbedder: a scale-less RMSNorm and a bias-free d_v -> d_text projection. Clipped linears
    and the standardization hold buffers, not parameters. An image is padded to 280 k^2 patches (the processor's
    budget) and becomes at most 280 tokens."""
    audio = gemma4_audio_tower(config, text_d) if config.get("audio_config") is not None else []
    if config.get("vision_config") is None:
        return audio
    v = sub_config(config, "gemma4", {})
    d, d_ff = v.int("hidden_size", GEMMA4_VISION["hidden_size"]), v.int("intermediate_size", 3072)
    heads = v.int("num_attention_heads", GEMMA4_VISION["num_attention_heads"])
    patch, pool = side(v, "patch_size", GEMMA4_VISION["patch_size"]), v.int("pooling_kernel_size", 3)
    table = v.int("position_embedding_size", GEMMA4_VISION["position_embedding_size"])
    patches = GEMMA4_SOFT_TOKENS * pool * pool
    rows = [
        row("patch_embedding", "linear", 3 * patch * patch, d, False, "patches"),
        row("positions", "table", 2 * table, d),
        # Gemma4VisionPooler averages by positions with a one-hot tokens x patches matrix: a matmul over all patches.
        row("pool", "pool", d, patches, False, "tokens"),
        row("projector/linear", "linear", d, text_d, False, "tokens"),
    ]
    layers = v.int("num_hidden_layers", GEMMA4_VISION["num_hidden_layers"])
    image = round(patches**0.5) * patch  # recorded only: the budget, not the side, sets the patches
    vision = vit_mapping("vision", "gemma4_vision", v, d, layers, heads, d_ff, image, patch, GEMMA4_SOFT_TOKENS,
                         rows, n_kv_heads=v.int("num_key_value_heads", heads), head_dim=v.int("head_dim", 64),
                         qk_norm=True, block_norms=4, mlp="gated", norm="rmsnorm", bias=False,
                         patches_per_image=patches)  # fmt: skip
    return [vision, *audio]


# Gemma4AudioConfig's defaults (models/gemma4/configuration_gemma4.py), and Gemma4AudioFeatureExtractor's 128 mel
# bins (feature_extraction_gemma4.py: feature_size 128, 16 kHz, 20 ms frames, 10 ms hop).
GEMMA4_AUDIO: dict[str, Any] = {
    "hidden_size": 1024, "num_hidden_layers": 12, "num_attention_heads": 8, "subsampling_conv_channels": [128, 32],
    "conv_kernel_size": 5, "attention_chunk_size": 12, "attention_context_left": 13, "attention_context_right": 0,
    "output_proj_dims": 1536,
}  # fmt: skip
MEL = 128


def gemma4_audio_tower(config: dict[str, Any], text_d: int) -> list[dict[str, Any]]:
    """Gemma 4's audio tower (modeling_gemma4.py, Gemma4AudioModel, a conformer after the Universal Speech Model)
    where the config has an audio_config: Gemma4AudioSubSampleConvProjection (two bias-free 3 x 3 stride-2
    convolutions over time x mel bins, 1 -> c0 -> c1 channels, each with a bias-free LayerNorm, then a bias-free
    (c0 / 4) c1 -> d linear), encoder layers of a macaron conformer (feed_forward1, chunked local attention,
    the light convolution, feed_forward2: bias-free clipped linears whose clip bounds are buffers, nine RMSNorms,
    a per_dim_scale of head_dim and a relative_k_proj run once a layer over context / 2 + 1 relative positions),
    output_proj d -> output_proj_dims with bias, and Gemma4MultimodalEmbedder's scale-less RMSNorm and bias-free
    output_proj_dims -> d_text projection. 25 tokens a second of 16 kHz audio, at most 750 (processing_gemma4.py)."""
    a = Fields(config["audio_config"], "gemma4 audio_config")
    d = a.int("hidden_size", GEMMA4_AUDIO["hidden_size"])
    heads = a.int("num_attention_heads", GEMMA4_AUDIO["num_attention_heads"])
    channels = a.raw("subsampling_conv_channels", GEMMA4_AUDIO["subsampling_conv_channels"])
    if not (isinstance(channels, list) and len(channels) == 2 and all(isinstance(c, int) and c > 0 for c in channels)):
        raise a.wrong("subsampling_conv_channels", "two positive channel counts", channels)
    kernel = a.int("conv_kernel_size", GEMMA4_AUDIO["conv_kernel_size"])
    chunk = a.int("attention_chunk_size", GEMMA4_AUDIO["attention_chunk_size"])
    left = a.int("attention_context_left", GEMMA4_AUDIO["attention_context_left"])
    right = a.int("attention_context_right", GEMMA4_AUDIO["attention_context_right"])
    out = a.int("output_proj_dims", GEMMA4_AUDIO["output_proj_dims"])
    context = chunk + left - 1 + right  # Gemma4AudioAttention.context_size
    relative = context // 2 + 1  # Gemma4AudioRelPositionalEncoding: positions context/2 .. 0
    c0, c1 = channels
    rows = [
        row("subsample/conv0", "linear", 9, c0, False, "frames") | {"stride": 2, "times": -(-MEL // 2)},
        row("subsample/norm0", "norm", c0, 1),
        row("subsample/conv1", "linear", 9 * c0, c1, False, "frames") | {"stride": 4, "times": -(-MEL // 4)},
        row("subsample/norm1", "norm", c1, 1),
        row("subsample/input_proj", "linear", c0 // 4 * c1, d, False, "positions"),
        row("output_proj", "linear", d, out, True, "positions"),
        row("projector/linear", "linear", out, text_d, False, "tokens"),
    ]  # fmt: skip
    head_dim = d // heads
    layer_rows = [
        row("feed_forward2/fc1", "linear", d, 4 * d, False, "positions"),
        row("feed_forward2/fc2", "linear", 4 * d, d, False, "positions"),
        # feed_forward2's two, norm_pre_attn, norm_post_attn, norm_out and the light convolution's two.
        row("norms", "norm", d, 7),
        row("attention/per_dim_scale", "norm", head_dim, 1),
        row("attention/relative_k", "linear", d, heads * head_dim, False, "relative"),
        row("lconv/linear_start", "linear", d, 2 * d, False, "positions"),
        row("lconv/depthwise", "linear", kernel, d, False, "positions"),  # a causal depthwise conv: k weights a channel
        row("lconv/linear_end", "linear", d, d, False, "positions"),
    ]
    feed = {"window": 321, "hop": 160, "pad": 160, "reduction": 4, "max_tokens": 750, "chunk": chunk,
            "context": context, "relative": relative}  # fmt: skip
    return [{"name": "audio", "model_type": "gemma4_audio", "d_model": d, "n_heads": heads, "d_ff": 4 * d,
             "n_layers": a.int("num_hidden_layers", GEMMA4_AUDIO["num_hidden_layers"]), "norm": "rmsnorm",
             "bias": False, "rows": rows, "layer_rows": layer_rows, "audio": feed}]  # fmt: skip


# Llama4VisionConfig's defaults (models/llama4/configuration_llama4.py).
LLAMA4: dict[str, Any] = {
    "hidden_size": 768,
    "num_hidden_layers": 34,
    "num_attention_heads": 16,
    "num_channels": 3,
    "intermediate_size": 5632,
    "vision_output_dim": 7680,
    "image_size": 448,
    "patch_size": 14,
    "pixel_shuffle_ratio": 0.5,
    "projector_input_dim": 4096,
    "projector_output_dim": 4096,
}


def llama4_towers(config: dict[str, Any], text: dict[str, Any], text_d: int) -> list[dict[str, Any]]:
    """Llama 4 (models/llama4/modeling_llama4.py, Llama4VisionModel): a bias-free C p^2 -> d unfold-convolution,
    a class token and a (P + 1) x d position table, LayerNorms before and after the encoder (biases on every
    encoder matmul), then Llama4VisionPixelShuffleMLP: the P patches (class token dropped) pixel-shuffled to
    P r^2 tokens, a bias-free fc1 of intermediate_size -> projector_input_dim and fc2 of projector_output_dim
    square, and Llama4MultiModalProjector's bias-free vision_output_dim -> d linear. One image is one tile of
    image_size (transformers' processor tiles larger images)."""
    v = sub_config(config, "llama4", {})
    d, d_ff = v.int("hidden_size", LLAMA4["hidden_size"]), v.int("intermediate_size", LLAMA4["intermediate_size"])
    image, patch = side(v, "image_size", LLAMA4["image_size"]), side(v, "patch_size", LLAMA4["patch_size"])
    ratio = v.number("pixel_shuffle_ratio", LLAMA4["pixel_shuffle_ratio"])
    patches = (image // patch) ** 2
    tokens = round(patches * ratio * ratio)
    if not 0 < ratio <= 1 or tokens * ratio**-2 != patches:
        raise v.wrong("pixel_shuffle_ratio", f"a fraction 1/n that divides the {patches} patches", ratio)
    project_in = v.int("projector_input_dim", LLAMA4["projector_input_dim"])
    project_out = v.int("projector_output_dim", LLAMA4["projector_output_dim"])
    rows = [
        row("patch_embedding", "linear", v.int("num_channels", LLAMA4["num_channels"]) * patch * patch, d, False,
            "patches"),
        row("class_embedding", "table", 1, d),
        row("positions", "table", patches + 1, d),
        row("layernorm_pre", "norm", d, 2),
        row("layernorm_post", "norm", d, 2),
        row("adapter/fc1", "linear", d_ff, project_in, False, "tokens"),
        row("adapter/fc2", "linear", project_out, project_out, False, "tokens"),
        row("projector/linear_1", "linear", v.int("vision_output_dim", LLAMA4["vision_output_dim"]), text_d, False,
            "tokens"),
    ]  # fmt: skip
    layers, heads = v.int("num_hidden_layers", LLAMA4["num_hidden_layers"]), v.int("num_attention_heads", 16)
    return [vit_mapping("vision", "llama4_vision_model", v, d, layers, heads, d_ff, image, patch, tokens, rows,
                        class_token=True, sizing="tiles", max_tiles=LLAMA4_MAX_TILES)]  # fmt: skip


# Llama4ImageProcessor's max_patches (models/llama4/image_processing_llama4.py): at most 16 tiles an image.
LLAMA4_MAX_TILES = 16


# PixtralVisionConfig's defaults, and the vision_config Mistral3Config builds when a config has none
# (models/pixtral/configuration_pixtral.py, models/mistral3/configuration_mistral3.py sub_configs_defaults).
PIXTRAL: dict[str, Any] = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_channels": 3,
    "image_size": 1024,
    "patch_size": 16,
}
MISTRAL3_VISION = PIXTRAL | {"patch_size": 14, "image_size": 1540, "head_dim": 64}


def mistral3_towers(config: dict[str, Any], text: dict[str, Any], text_d: int) -> list[dict[str, Any]]:
    """Mistral Small 3.1 (models/mistral3, models/pixtral): a bias-free C p^2 -> d patch convolution, an RMSNorm
    before the encoder (RMSNorms, gated bias-free MLPs, bias-free attention with 2D rotary positions: no table),
    then Mistral3MultiModalProjector: an RMSNorm over the patches, the patch merger's d s^2 -> d bias-free linear
    over the (P / s^2) merged tokens, and linear_1 (d x vision feature layers -> d_text) and linear_2 (d_text
    square), with biases when multimodal_projector_bias."""
    wrapper = Fields(config, "mistral3")
    v = sub_config(config, "mistral3", MISTRAL3_VISION)
    d, d_ff = v.int("hidden_size", PIXTRAL["hidden_size"]), v.int("intermediate_size", PIXTRAL["intermediate_size"])
    image, patch = side(v, "image_size", PIXTRAL["image_size"]), side(v, "patch_size", PIXTRAL["patch_size"])
    heads = v.int("num_attention_heads", PIXTRAL["num_attention_heads"])
    v.int("head_dim", d // heads)  # Pixtral's attention takes hidden_size / heads whatever head_dim says
    merge = wrapper.int("spatial_merge_size", 2)
    bias = wrapper.bool("multimodal_projector_bias", False)
    feature_layer = wrapper.raw("vision_feature_layer", -1)
    feature_layers = len(feature_layer) if isinstance(feature_layer, list) else 1
    side_patches = image // patch
    if side_patches % merge:
        raise TfcostError(f"mistral3 config: spatial_merge_size {merge} does not divide the {side_patches} patches")
    tokens = (side_patches // merge) ** 2
    rows = [
        row("patch_embedding", "linear", v.int("num_channels", PIXTRAL["num_channels"]) * patch * patch, d, False,
            "patches"),
        row("ln_pre", "norm", d, 1),
        row("projector/norm", "norm", d, 1),
        row("projector/patch_merger", "linear", d * merge * merge, d, False, "tokens"),
        row("projector/linear_1", "linear", d * feature_layers, text_d, bias, "tokens"),
        row("projector/linear_2", "linear", text_d, text_d, bias, "tokens"),
    ]  # fmt: skip
    layers = v.int("num_hidden_layers", PIXTRAL["num_hidden_layers"])
    return [vit_mapping("vision", "pixtral", v, d, layers, heads, d_ff, image, patch, tokens, rows, mlp="gated",
                        norm="rmsnorm", bias=False, sizing="native", merge=merge, max_image_size=image)]  # fmt: skip


# Qwen3VLVisionConfig's and Qwen3_5(Moe)VisionConfig's defaults (models/qwen3_vl, models/qwen3_5(_moe)).
QWEN_VISION: dict[str, Any] = {
    "depth": 27,
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "num_heads": 16,
    "in_channels": 3,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": 3584,
    "num_position_embeddings": 2304,
}


def qwen_vision_towers(deepstack: bool) -> TowerReader:
    def read(config: dict[str, Any], text: dict[str, Any], text_d: int) -> list[dict[str, Any]]:
        """Qwen3-VL and Qwen3.5 (models/qwen3_vl/modeling_qwen3_vl.py, Qwen3VLVisionModel): a C t p^2 -> d patch
        convolution with bias (Conv3d over t frames: an image is its frame repeated t times, one temporal
        patch), a num_position_embeddings x d table (interpolated to the grid), LayerNorm encoder layers with
        a fused qkv and biases everywhere, and the patch merger: a LayerNorm over each patch, then d s^2 -> d s^2
        and d s^2 -> out_hidden_size linears with biases over the P / s^2 merged tokens. Qwen3-VL adds one
        merger per deepstack_visual_indexes entry, each normed after the shuffle (d s^2 wide); Qwen3.5 has none.
        Qwen takes any image size: tfcost's image is the table's native grid, sqrt(num_position_embeddings)
        patches on a side (48 x 16 = 768 pixels)."""
        wrapper = str(config.get("model_type"))
        v = sub_config(config, wrapper, {})
        d, d_ff = v.int("hidden_size", QWEN_VISION["hidden_size"]), v.int("intermediate_size", 4304)
        patch, merge = side(v, "patch_size", 16), v.int("spatial_merge_size", 2)
        frames = side(v, "temporal_patch_size", 2)
        table = v.int("num_position_embeddings", QWEN_VISION["num_position_embeddings"])
        grid = round(table**0.5)
        if grid * grid != table or grid % merge:
            raise v.wrong("num_position_embeddings", f"a square grid whose side {merge} divides", table)
        merged, out = d * merge * merge, v.int("out_hidden_size", QWEN_VISION["out_hidden_size"])
        channels = v.int("in_channels", QWEN_VISION["in_channels"])
        rows = [
            row("patch_embedding", "linear", channels * frames * patch * patch, d, True, "patches"),
            row("positions", "table", table, d),
            row("merger/norm", "norm", d, 2),
            row("merger/linear_fc1", "linear", merged, merged, True, "tokens"),
            row("merger/linear_fc2", "linear", merged, out, True, "tokens"),
        ]
        if deepstack:
            indexes = v.raw("deepstack_visual_indexes", [8, 16, 24])
            if not isinstance(indexes, list):
                raise v.wrong("deepstack_visual_indexes", "a list of layer indices", indexes)
            for _ in indexes:
                rows += [row("deepstack_merger/norm", "norm", merged, 2),
                         row("deepstack_merger/linear_fc1", "linear", merged, merged, True, "tokens"),
                         row("deepstack_merger/linear_fc2", "linear", merged, out, True, "tokens")]  # fmt: skip
        model_type = str(v.config.get("model_type", f"{wrapper}_vision"))
        layers, heads = v.int("depth", QWEN_VISION["depth"]), v.int("num_heads", QWEN_VISION["num_heads"])
        return [vit_mapping("vision", model_type, v, d, layers, heads, d_ff, grid * patch, patch,
                            (grid // merge) ** 2, rows, sizing="native", merge=merge)]  # fmt: skip

    return read


# Phi4MultimodalVisionConfig's and Phi4MultimodalAudioConfig's defaults (models/phi4_multimodal/
# configuration_phi4_multimodal.py); Phi4MultimodalImageProcessor's dynamic_hd (at most 36 crops an image).
PHI4_VISION: dict[str, Any] = SIGLIP | {
    "hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27, "num_attention_heads": 16,
    "image_size": 448, "patch_size": 14,
}  # fmt: skip
PHI4_AUDIO: dict[str, Any] = {
    "hidden_size": 1024, "intermediate_size": 1536, "num_blocks": 24, "num_attention_heads": 16,
    "ext_pw_out_channel": 1024, "depthwise_separable_out_channel": 1024, "depthwise_multiplier": 1, "kernel_size": 3,
    "input_size": 80, "time_reduction": 8, "bias_max_distance": 1000, "bias_symmetric": False,
    "nemo_conv_channels": 1024, "downsample_rate": 1,
}  # fmt: skip
PHI4_CROPS = 36


def phi4_vision_tower(config: dict[str, Any], text_d: int) -> dict[str, Any]:
    """Phi-4-multimodal's image embedding (modeling_phi4_multimodal.py, Phi4MultimodalImageEmbedding): a SigLIP
    (Phi4MultimodalVisionModel: a C p^2 -> d patch convolution with bias, a (S/p)^2 x d table, LayerNorm encoder
    layers with biases, a post LayerNorm and the attention-pooling head, built whether or not it runs), two
    d_v-wide separator vectors (global_img_feature_extensor, sub_img_feature_extensor) and img_projection_up
    (d_v -> d_text) and img_projection_down (d_text square), with biases. An image is cut into n x n crops of
    image_size, n = ceil(S / image_size) (at most 36 crops), each pooled 2 x 2 (m = (S/p) / 2 tokens a side),
    plus one global crop: m^2 + 1 + (n m)^2 + n m + m tokens (Phi4MultimodalImageProcessor: 545 for one crop)."""
    v = sub_config(config, "phi4_multimodal", {})
    defaults = PHI4_VISION
    d, d_ff = v.int("hidden_size", defaults["hidden_size"]), v.int("intermediate_size", defaults["intermediate_size"])
    image, patch = side(v, "image_size", defaults["image_size"]), side(v, "patch_size", defaults["patch_size"])
    channels = v.int("num_channels", 3)
    side_patches = image // patch
    if side_patches % 2:
        raise TfcostError(f"phi4_multimodal vision_config: {side_patches} patches a side do not pool 2 x 2")
    rows = [
        row("patch_embedding", "linear", channels * patch * patch, d, True, "patches"),
        row("positions", "table", side_patches**2, d),
        row("post_layernorm", "norm", d, 2),
        # The pooling head runs on every crop, its output unused (nn.MultiheadAttention: the probe's q, the
        # patches' k and v, one query's scores and values over them, out_proj, a LayerNorm and the MLP).
        row("head/probe", "table", 1, d),
        row("head/attention/q", "linear", d, d, True, "passes"),
        row("head/attention/kv", "linear", d, 2 * d, True, "patches"),
        row("head/attention/scores", "pool", d, side_patches**2, False, "passes"),
        row("head/attention/values", "pool", d, side_patches**2, False, "passes"),
        row("head/attention/out", "linear", d, d, True, "passes"),
        row("head/layernorm", "norm", d, 2),
        row("head/mlp/fc1", "linear", d, d_ff, True, "passes"),
        row("head/mlp/fc2", "linear", d_ff, d, True, "passes"),
        row("separators", "table", 2, d),
        row("projector/up", "linear", d, text_d, True, "tokens"),
        row("projector/down", "linear", text_d, text_d, True, "tokens"),
    ]
    tokens = (side_patches // 2) ** 2
    layers = v.int("num_hidden_layers", defaults["num_hidden_layers"])
    heads = v.int("num_attention_heads", defaults["num_attention_heads"])
    # tokens_per_image: one crop's pooled tokens (m^2); tfcost.core.layers.towers.image_input adds the rest.
    return vit_mapping("vision", "phi4_multimodal_vision", v, d, layers, heads, d_ff, image, patch, tokens, rows,
                       sizing="crops", max_tiles=PHI4_CROPS)  # fmt: skip


def phi4_audio_tower(config: dict[str, Any], text_d: int) -> dict[str, Any]:
    """Phi-4-multimodal's audio embedding (Phi4MultimodalAudioEmbedding): Phi4MultimodalAudioNemoConvSubsampling
    (a 3 x 3 stride-2 convolution 1 -> C, then log2(time_reduction) - 1 pairs of a depthwise 3 x 3 stride-2 and a
    pointwise C x C convolution, all with biases, and a C f -> d linear, f the mel bins halved each time), a
    relative-attention bias table (2 bias_max_distance x heads), num_blocks conformer layers (feed_forward_in and
    feed_forward_out: LayerNorm, a gated d -> 2F and F -> d with biases; attention q, k, v, o with biases; the
    convolution module: LayerNorm, a GLU pointwise d -> 2 ext with two ext-wide biases, a depthwise k conv and a
    pointwise conv padded by k - 1, and ext_pw_conv_1d; two LayerNorms), and two projector pairs with biases,
    speech and vision-speech (both held; a prompt uses one: the speech pair is priced as run). 12.5 tokens a
    second (feature_extraction_phi4_multimodal.py: 10 ms frames of 400 samples, compressed 8 x)."""
    audio = config.get("audio_config") or {}
    if not isinstance(audio, dict):
        raise TfcostError(f"phi4_multimodal config: field 'audio_config' should be a mapping, not {audio!r}")
    a = Fields(audio, "phi4_multimodal audio_config")
    get = {key: a.int(key, value) for key, value in PHI4_AUDIO.items() if key != "bias_symmetric"}
    symmetric = a.bool("bias_symmetric", PHI4_AUDIO["bias_symmetric"])
    d, channels, heads = get["hidden_size"], get["nemo_conv_channels"], get["num_attention_heads"]
    reduction = get["time_reduction"]
    steps = reduction.bit_length() - 1
    if reduction < 2 or 1 << steps != reduction:
        raise a.wrong("time_reduction", "a power of two", reduction)
    rows: list[Row] = []
    bins = get["input_size"]
    for step in range(steps):
        bins = -(-bins // 2)  # Phi4MultimodalAudioConfig.nemo_final_size: floor((f - 1) / 2 + 1)
        first = step == 0
        conv = row(f"subsample/conv{step}" if first else f"subsample/depthwise{step}", "linear", 9, channels, True,
                   "frames") | {"stride": 2 ** (step + 1), "times": bins}  # fmt: skip
        rows.append(conv)
        if not first:
            rows.append(row(f"subsample/pointwise{step}", "linear", channels, channels, True, "frames")
                        | {"stride": 2 ** (step + 1), "times": bins})  # fmt: skip
    downsample = get["downsample_rate"]
    rows += [
        row("subsample/out", "linear", channels * bins, d, True, "tokens"),
        row("relative_attention_bias", "table", get["bias_max_distance"] * (1 if symmetric else 2), heads),
        row("projector/speech_up", "linear", d * downsample, text_d, True, "tokens"),
        row("projector/speech_down", "linear", text_d, text_d, True, "tokens"),
        row("projector/vision_speech_up", "linear", d * downsample, text_d, True),
        row("projector/vision_speech_down", "linear", text_d, text_d, True),
    ]
    f, ext, kernel = get["intermediate_size"], get["ext_pw_out_channel"], get["kernel_size"]
    wide = d * get["depthwise_multiplier"]
    layer_rows = [
        row("feed_forward_in/layernorm", "norm", d, 2),
        row("feed_forward_out/layernorm", "norm", d, 2),
        row("feed_forward_out/gate_up", "linear", d, 2 * f, True, "positions"),
        row("feed_forward_out/down", "linear", f, d, True, "positions"),
        row("conv/layernorm", "norm", d, 2),
        row("conv/glu", "linear", d, 2 * ext, True, "positions"),
        row("conv/glu_biases", "norm", ext, 2),
        # Padded by k - 1 on both sides, the depthwise and pointwise convs output P + k - 1 positions (cut after).
        row("conv/depthwise", "linear", kernel, wide, True, "positions") | {"extra": kernel - 1},
        row("conv/pointwise", "linear", wide, get["depthwise_separable_out_channel"], True, "positions")
        | {"extra": kernel - 1},
        row("conv/ext_pw", "linear", d, ext, True, "positions"),
    ]
    feed = {"window": 400, "hop": 160, "reduction": reduction * downsample, "block": 500}
    return {"name": "audio", "model_type": "phi4_multimodal_audio", "d_model": d, "n_heads": heads, "d_ff": f,
            "n_layers": get["num_blocks"], "mlp": "gated", "rows": rows, "layer_rows": layer_rows,
            "audio": feed}  # fmt: skip


def phi4_multimodal_towers(config: dict[str, Any], text: dict[str, Any], text_d: int) -> list[dict[str, Any]]:
    """Phi-4-multimodal (a flat config: the language model's keys beside vision_config and audio_config, both
    built with their defaults when absent)."""
    return [phi4_vision_tower(config, text_d), phi4_audio_tower(config, text_d)]


# Kimi_K25VisionConfig's defaults (models/kimi_k25/configuration_kimi_k25.py).
KIMI_K25_VISION: dict[str, Any] = {
    "hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27, "num_attention_heads": 16,
    "patch_size": 14, "pos_emb_height": 64, "pos_emb_width": 64, "merge_kernel_size": [2, 2],
}  # fmt: skip


def kimi_k25_towers(config: dict[str, Any], text: dict[str, Any], text_d: int) -> list[dict[str, Any]]:
    """Kimi K2.5 (models/kimi_k25/modeling_kimi_k25.py): Kimi_K25VisionModel, a 3 p^2 -> d patch convolution with
    bias, a pos_emb_height x pos_emb_width x d position grid (resampled to each image's grid), LayerNorm encoder
    layers with biased q, k, v, proj and fc1/fc2 (2D rotary: no table), a final LayerNorm, then
    Kimi_K25MultimodalProjection: a LayerNorm of projection_hidden_size over the patches, in_proj d m^2 square and
    out_proj d m^2 -> d_text, with biases, over the merged tokens (m x m patches each). Native resolution; tfcost's
    image is the position grid's, pos_emb_height patches a side."""
    wrapper = Fields(config, "kimi_k25")
    v = sub_config(config, "kimi_k25", {})
    d = v.int("hidden_size", KIMI_K25_VISION["hidden_size"])
    d_ff = v.int("intermediate_size", KIMI_K25_VISION["intermediate_size"])
    patch = side(v, "patch_size", KIMI_K25_VISION["patch_size"])
    height, width = v.int("pos_emb_height", 64), v.int("pos_emb_width", 64)
    kernel = v.raw("merge_kernel_size", KIMI_K25_VISION["merge_kernel_size"])
    if not (isinstance(kernel, list | tuple) and len(kernel) == 2 and kernel[0] == kernel[1] and kernel[0] > 0):
        raise v.wrong("merge_kernel_size", "a square [m, m] kernel", kernel)
    merge = kernel[0]
    merged = d * merge * merge
    rows = [
        row("patch_embedding", "linear", 3 * patch * patch, d, True, "patches"),
        row("positions", "table", height * width, d),
        row("final_layernorm", "norm", d, 2),
        row("projector/pre_norm", "norm", wrapper.int("projection_hidden_size", 1152), 2),
        row("projector/in_proj", "linear", merged, merged, True, "tokens"),
        row("projector/out_proj", "linear", merged, text_d, True, "tokens"),
    ]
    layers = v.int("num_hidden_layers", KIMI_K25_VISION["num_hidden_layers"])
    heads = v.int("num_attention_heads", KIMI_K25_VISION["num_attention_heads"])
    return [vit_mapping("vision", "kimi_k25_vision", v, d, layers, heads, d_ff, height * patch, patch,
                        (height // merge) ** 2, rows, sizing="native", merge=merge)]  # fmt: skip


# The whole model ties its output head to the token embedding as the wrapper's own top-level tie_word_embeddings
# says (PreTrainedModel reads self.config, the wrapper's), not its text_config's: each wrapper class's default.
WRAPPER_TIE = {
    "gemma3": True, "gemma4": True, "paligemma": True, "llama4": False, "mistral3": True,
    "qwen3_vl": False, "qwen3_vl_moe": False, "qwen3_5": False, "qwen3_5_moe": False, "kimi_k25": True,
}  # fmt: skip


def whole_model_tie(config: dict[str, Any]) -> bool:
    """Whether the whole model's output head is tied to its token embedding."""
    wrapper = str(config.get("model_type"))
    tie: bool = Fields(config, wrapper).bool("tie_word_embeddings", WRAPPER_TIE[wrapper])
    return tie


# Wrapper model_type -> the reader of its towers.
TOWER_READERS: dict[str, TowerReader] = {
    "gemma3": gemma3_towers,
    "gemma4": gemma4_towers,
    "paligemma": paligemma_towers,
    "llama4": llama4_towers,
    "mistral3": mistral3_towers,
    "qwen3_vl": qwen_vision_towers(deepstack=True),
    "qwen3_vl_moe": qwen_vision_towers(deepstack=True),
    "qwen3_5": qwen_vision_towers(deepstack=False),
    "qwen3_5_moe": qwen_vision_towers(deepstack=False),
    "phi4_multimodal": phi4_multimodal_towers,
    "kimi_k25": kimi_k25_towers,
}
