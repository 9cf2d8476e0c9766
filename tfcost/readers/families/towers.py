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
    if config.get("vision_config") is None:
        return []
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
    return [vit_mapping("vision", "gemma4_vision", v, d, layers, heads, d_ff, image, patch, GEMMA4_SOFT_TOKENS,
                        rows, n_kv_heads=v.int("num_key_value_heads", heads), head_dim=v.int("head_dim", 64),
                        qk_norm=True, block_norms=4, mlp="gated", norm="rmsnorm", bias=False,
                        patches_per_image=patches)]  # fmt: skip


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


# The whole model ties its output head to the token embedding as the wrapper's own top-level tie_word_embeddings
# says (PreTrainedModel reads self.config, the wrapper's), not its text_config's: each wrapper class's default.
WRAPPER_TIE = {
    "gemma3": True, "gemma4": True, "paligemma": True, "llama4": False, "mistral3": True,
    "qwen3_vl": False, "qwen3_vl_moe": False, "qwen3_5": False, "qwen3_5_moe": False,
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
}
