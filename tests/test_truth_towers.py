"""Multimodal towers against transformers 5.24's own build: the whole *ForConditionalGeneration model on the meta
device has exactly tfcost's total, and its vision tower and projector exactly tfcost's towers (the whole model
less the language model's causal LM). Real releases (tests/data/hf_configs, sources in SOURCES.md), every
wrapper's default config in both forms transformers writes, and shrunk releases; one image's tower FLOPs against
FlopCounterMode over transformers' image-feature path.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

WHY = "the truth tests need torch and transformers: pip install -e '.[test]'"
torch = pytest.importorskip("torch", reason=WHY)
pytest.importorskip("transformers", reason=WHY)

from truth_harness import FlopCounterMode, build, config_from_dict, parameter_count, saved_forms  # noqa: E402

from tfcost.core.layers.towers import (  # noqa: E402
    audio_input,
    audio_tokens,
    image_input,
    patches,
    tower_flops_per_audio,
    tower_flops_per_image,
    tower_params,
)
from tfcost.core.params import language_model_params, total_params, towers_params  # noqa: E402
from tfcost.readers.families.towers import TOWER_READERS  # noqa: E402
from tfcost.readers.hf_config import read_config  # noqa: E402
from tfcost.readers.presets import model_from_mapping  # noqa: E402
from tfcost.schema import ModelShape, Tower  # noqa: E402

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
# Release: (whole model as transformers builds it, its vision tower and projector). The whole counts are the
# published ones (SOURCES.md); the tower is the whole less the language model's causal LM.
RELEASES = {
    "gemma-3-4b": (4_300_079_472, 419_816_304),
    "gemma-3-12b": (12_187_325_040, 421_290_864),
    "gemma-3-27b": (27_432_406_640, 423_060_336),
    "gemma-4-26b-a4b": (25_805_933_872, 572_792_112),
    "llama-4-scout": (108_641_793_536, 871_932_416),
    "llama-4-maverick": (401_583_781_376, 871_932_416),
    "mistral-small-3.1-24b": (24_011_361_280, 438_958_080),
    "qwen3.5-35b-a3b": (35_107_181_936, 446_571_248),
}
# The smallest, by default; the rest in the thorough profile.
QUICK = ("gemma-3-4b",)


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONFIGS / f"{name}.json").read_text())
    return data


def shape_of(data: dict[str, Any]) -> ModelShape:
    reading = read_config(data)
    assert reading.not_priced == []
    return model_from_mapping(reading.mapping, "test", "test")


def whole_and_towers(data: dict[str, Any]) -> tuple[int, int]:
    """transformers' whole model built on the meta device, and the parameters outside its language model and
    output head: the towers and projectors."""
    model = build(config_from_dict(data), whole=True)
    towers = sum(p.numel() for name, p in model.named_parameters() if not name.startswith(LANGUAGE_MODEL))
    return parameter_count(model), towers


LANGUAGE_MODEL = ("model.language_model.", "language_model.", "lm_head.")


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=() if n in QUICK else pytest.mark.thorough) for n in sorted(RELEASES)]
)
def test_a_release_prices_as_transformers_builds_it_whole(name):
    whole, tower = RELEASES[name]
    shape = shape_of(fixture(name))
    assert whole_and_towers(fixture(name)) == (whole, tower)
    assert (total_params(shape), towers_params(shape)) == (whole, tower)
    assert language_model_params(shape) == parameter_count(build(config_from_dict(fixture(name))))


def shrunk(data: dict[str, Any]) -> dict[str, Any]:
    """A release with 2 language-model layers and 2 tower layers: every row kind, built in a second."""
    text = dict(data["text_config"])
    text["num_hidden_layers"] = 2
    for key in ("layer_types", "moe_layers", "no_rope_layers", "mlp_only_layers"):
        text.pop(key, None)
    vision = dict(data.get("vision_config") or {})
    vision["depth" if "qwen" in data["model_type"] else "num_hidden_layers"] = 2
    return {**data, "text_config": text, "vision_config": vision}


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_a_shrunk_release_prices_as_transformers_builds_it(name):
    data = shrunk(fixture(name))
    shape = shape_of(data)
    assert (total_params(shape), towers_params(shape)) == whole_and_towers(data)


# The wrappers whose language model tfcost reads (qwen3_vl's text models have no reader yet, and PaliGemma's Gemma
# attends bidirectionally over its prefix, which the gemma reader refuses: their towers are checked alone, below).
WHOLE = ("gemma3", "llama4", "mistral3", "qwen3_5", "qwen3_5_moe")


@pytest.mark.parametrize(
    ("wrapper", "form"),
    [(w, f) for w in WHOLE for f in ("saved", "full")]
    + [pytest.param("kimi_k25", f, marks=pytest.mark.thorough) for f in ("saved", "full")],  # a 671 B build
)
def test_a_wrappers_default_config_prices_as_transformers_builds_it(wrapper, form):
    """The config classes' defaults (qwen3_vl: three deepstack mergers), as save_pretrained and to_dict write
    them."""
    data = saved_forms(wrapper)[form]
    data["model_type"] = wrapper
    shape = shape_of(data)
    assert (total_params(shape), towers_params(shape)) == whole_and_towers(data)


@pytest.mark.parametrize("wrapper", ["qwen3_vl", "qwen3_vl_moe"])
def test_qwen3_vl_vision_tower_with_its_deepstack_mergers_prices_as_transformers_builds_it(wrapper):
    data = saved_forms(wrapper)["full"]
    data["model_type"] = wrapper
    tower = Tower(**TOWER_READERS[wrapper](data, data["text_config"], data["text_config"]["hidden_size"])[0])
    visual = build(config_from_dict(data), whole=True).model.visual
    assert len(visual.deepstack_merger_list) == 3
    assert tower_params(tower) == parameter_count(visual)


# Gemma 4's vision_config as transformers' defaults give it, and with the sizes a public Gemma 4 conversion script
# writes for the larger models (hidden 1152, 16 heads of 72, standardize, no clipped linears; the code index, not a
# Hub file: docs/towers.md).
GEMMA4_VISION = [
    {"model_type": "gemma4_vision"},
    {"model_type": "gemma4_vision", "hidden_size": 1152, "head_dim": 72, "num_attention_heads": 16,
     "num_key_value_heads": 16, "standardize": True, "use_clipped_linears": False},
]  # fmt: skip


@pytest.mark.parametrize("vision", GEMMA4_VISION)
@pytest.mark.parametrize("form", ["saved", "full"])
def test_gemma4s_vision_tower_prices_as_transformers_builds_it(vision, form):
    """transformers' default Gemma4Config has no tower; with a vision_config the whole model has one."""
    data = {**saved_forms("gemma4")[form], "model_type": "gemma4", "vision_config": vision}
    shape = shape_of(data)
    assert (total_params(shape), towers_params(shape)) == whole_and_towers(data)
    assert (image_input(shape.towers[0]).patches, shape.towers[0].tokens_per_image) == (280 * 9, 280)


# Whole models transformers 5.24 builds from the default configs (AutoConfig.for_model) with their towers: Gemma 4
# with a default audio_config (and vision_config), and Phi-4-multimodal (Phi4MultimodalForCausalLM: the language
# model with its image and audio embeddings inside).
AUDIO_WHOLE = {
    "gemma4-audio": ({"model_type": "gemma4", "audio_config": {"model_type": "gemma4_audio"}}, 5_385_541_408),
    "gemma4-vision-audio": (
        {"model_type": "gemma4", "vision_config": GEMMA4_VISION[0], "audio_config": {"model_type": "gemma4_audio"}},
        5_554_675_488,
    ),
    "phi4_multimodal": ({"model_type": "phi4_multimodal"}, 5_308_268_992),
}


@pytest.mark.parametrize("form", ["saved", "full"])
@pytest.mark.parametrize("name", sorted(AUDIO_WHOLE))
def test_an_audio_towers_whole_model_prices_as_transformers_builds_it(name, form):
    """Gemma 4's conformer (Gemma4AudioModel and its embedder) and Phi-4-multimodal's SigLIP crops and conformer:
    the whole model's parameters, and the towers' (everything outside the language model's own modules)."""
    extra, whole = AUDIO_WHOLE[name]
    data = {**saved_forms(extra["model_type"])[form], **extra}
    shape = shape_of(data)
    if name == "phi4_multimodal":  # a flat config: the causal LM is the whole model
        model = build(config_from_dict(data))
        outside = ("model.embed_tokens_extend.",)
        towers = sum(p.numel() for n, p in model.named_parameters() if n.startswith(outside))
        built = parameter_count(model)
    else:
        built, towers = whole_and_towers(data)
    assert (total_params(shape), towers_params(shape)) == (built, towers)
    assert total_params(shape) == whole


def gemma4_tiny(audio: dict[str, Any]) -> dict[str, Any]:
    data = {**saved_forms("gemma4")["full"], "model_type": "gemma4", "audio_config": audio}
    text = {key: value for key, value in data["text_config"].items() if key not in ("layer_types", "per_layer_config")}
    text.update(num_hidden_layers=2, hidden_size=64, intermediate_size=64, vocab_size=256, num_attention_heads=2,
                vocab_size_per_layer_input=256, hidden_size_per_layer_input=16, num_key_value_heads=1, head_dim=32,
                global_head_dim=32)  # fmt: skip
    return {**data, "text_config": text}


@pytest.mark.parametrize("seconds", [1, 2.5, 7])
def test_gemma4s_audio_tower_flops_equal_flop_counter_mode(seconds):
    """S seconds as Gemma4Processor frames them (25 tokens a second) through a 1-layer conformer on the CPU: the
    two subsampling convolutions over time x 128 mel bins, the chunked local attention (12 queries over 24 keys,
    and 13 relative positions), the light convolution, both feed-forwards and the embedder."""
    audio = {"model_type": "gemma4_audio", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 1,
             "output_proj_dims": 48}  # fmt: skip
    data = gemma4_tiny(audio)
    tower = next(tower for tower in shape_of(data).towers if tower.name == "audio")
    frames, _, tokens = audio_input(tower, seconds)
    model = build(config_from_dict(data), device="cpu", whole=True)
    features = torch.zeros(1, frames, 128, dtype=torch.bfloat16)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = model.model.get_audio_features(features, torch.ones(1, frames, dtype=torch.bool))
    assert out.pooler_output.shape[1] == tokens == math.ceil(25 * seconds)
    assert tower_flops_per_audio(tower, seconds) == int(counter.get_total_flops())


@pytest.mark.parametrize("seconds", [1, 7, 45])
def test_phi4_multimodals_audio_tower_flops_equal_flop_counter_mode(seconds):
    """S seconds through a 1-layer Phi-4-multimodal conformer on the CPU, and the speech projector pair: past 500
    positions (40 s) the encoder runs in padded blocks of 500."""
    data = phi4_tiny()
    tower = next(tower for tower in shape_of(data).towers if tower.name == "audio")
    frames, _, tokens = audio_input(tower, seconds)
    embed = build(config_from_dict(data), device="cpu").model.embed_tokens_extend.audio_embed
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        hidden = embed.encoder(torch.zeros(1, frames, 80, dtype=torch.bfloat16), None)
        embed.down_proj_for_speech(embed.up_proj_for_speech(hidden))
    assert hidden.shape[1] == tokens
    assert tower_flops_per_audio(tower, seconds) == int(counter.get_total_flops())


@pytest.mark.parametrize("seconds", [0.5, 1, 3.7, 30, 31])
def test_audio_tokens_are_what_the_processors_count(seconds):
    """Gemma4Processor._compute_audio_num_tokens (at most 750) and Phi4MultimodalFeatureExtractor's
    audio_embed_sizes, on S seconds of 16 kHz samples."""
    from transformers.models.gemma4.feature_extraction_gemma4 import Gemma4AudioFeatureExtractor
    from transformers.models.gemma4.processing_gemma4 import Gemma4Processor
    from transformers.models.phi4_multimodal.feature_extraction_phi4_multimodal import (
        Phi4MultimodalFeatureExtractor,
    )

    samples = np.zeros(round(seconds * 16000), dtype=np.float32)
    stub = type("Processor", (), {"feature_extractor": Gemma4AudioFeatureExtractor(), "audio_seq_length": 750})()
    gemma = Gemma4Processor._compute_audio_num_tokens(stub, samples, 16000)
    phi = int(Phi4MultimodalFeatureExtractor()(samples, sampling_rate=16000)["audio_embed_sizes"][0])
    gemma_shape = shape_of({**saved_forms("gemma4")["saved"], "model_type": "gemma4", **AUDIO_WHOLE["gemma4-audio"][0]})
    phi_shape = shape_of({"model_type": "phi4_multimodal"})
    assert (audio_tokens(gemma_shape, seconds), audio_tokens(phi_shape, seconds)) == (gemma, phi)


@pytest.mark.thorough  # a minute on the CPU
def test_gemma4s_image_tower_flops_equal_flop_counter_mode():
    """One image padded to the 280 x 3^2 = 2,520-patch budget through a 1-layer tower, with its pool done as a
    matmul by a 280 x 2,520 averaging matrix; on the CPU (the pool reads positions), language model and tower tiny."""
    vision = {
        "model_type": "gemma4_vision",
        "num_hidden_layers": 1,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "position_embedding_size": 64,
    }
    data = {**saved_forms("gemma4")["full"], "model_type": "gemma4", "vision_config": vision}
    text = {key: value for key, value in data["text_config"].items() if key not in ("layer_types", "per_layer_config")}
    text.update(num_hidden_layers=2, hidden_size=64, intermediate_size=64, vocab_size=256, num_attention_heads=2,
                vocab_size_per_layer_input=256, hidden_size_per_layer_input=16, num_key_value_heads=1, head_dim=32,
                global_head_dim=32)  # fmt: skip
    data["text_config"] = text
    tower = shape_of(data).towers[0]
    model = build(config_from_dict(data), device="cpu", whole=True)
    pixels = torch.zeros(1, 2520, 3 * 16 * 16, dtype=torch.bfloat16)
    grid = torch.meshgrid(torch.arange(60), torch.arange(42), indexing="ij")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        features = model.model.get_image_features(pixels, torch.stack(grid, -1).reshape(1, 2520, 2))
    assert features.pooler_output[0].shape[0] == tower.tokens_per_image == 280
    assert tower_flops_per_image(tower) == int(counter.get_total_flops())


def test_paligemmas_siglip_and_projector_price_as_transformers_builds_them():
    data = saved_forms("paligemma")["full"]
    data["model_type"] = "paligemma"
    tower = Tower(**TOWER_READERS["paligemma"](data, data["text_config"], data["text_config"]["hidden_size"])[0])
    model = build(config_from_dict(data), whole=True).model
    built = parameter_count(model.vision_tower) + parameter_count(model.multi_modal_projector)
    assert (tower_params(tower), tower.tokens_per_image) == (built, 256)  # (224 / 14)^2 patches, all read


def image_flops(model: Any, shape: ModelShape, wrapper: str) -> int:
    """FlopCounterMode over transformers' image path for one image at the tower's size: get_image_features, and
    Llama 4's projector, which its forward applies after it."""
    side = shape.towers[0].image_size
    pixels = torch.zeros(1, 3, side, side, dtype=torch.bfloat16, device="meta")
    owner = model.model if hasattr(model, "model") else model  # Llama 4 holds its towers itself
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        features = owner.get_image_features(pixels)
        if wrapper == "llama4":
            owner.multi_modal_projector(features if isinstance(features, torch.Tensor) else features[0])
    return int(counter.get_total_flops())


# Mistral 3's patch merger and Qwen's rotary grid read tensor values, which the meta device does not hold.
@pytest.mark.parametrize("name", ["gemma-3-4b", "gemma-3-27b", "llama-4-scout"])
def test_one_images_tower_flops_equal_flop_counter_mode(name):
    """The patch embedding, every encoder layer's matmuls over P positions and P^2 score entries, and the
    projector's matmuls over the patches or merged tokens: what transformers runs for one image."""
    data = shrunk(fixture(name))
    shape = shape_of(data)
    model = build(config_from_dict(data), whole=True)
    assert patches(shape.towers[0]) > 1
    assert tower_flops_per_image(shape.towers[0]) == image_flops(model, shape, data["model_type"])


def tiny_text(data: dict[str, Any]) -> dict[str, Any]:
    """A shrunk release whose language model is a few thousand parameters wide, so that the whole model runs on
    the CPU (Mistral 3's patch merger and Qwen's rotary grid read tensor values, which the meta device lacks)."""
    data = shrunk(data)
    small = {"hidden_size": 64, "intermediate_size": 64, "vocab_size": 256, "num_attention_heads": 2,
             "num_key_value_heads": 1, "head_dim": 32, "moe_intermediate_size": 32,
             "shared_expert_intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2,
             "linear_num_key_heads": 2, "linear_num_value_heads": 2, "linear_key_head_dim": 16,
             "linear_value_head_dim": 16}  # fmt: skip
    text = {key: small.get(key, value) for key, value in data["text_config"].items()}
    text.update({key: small[key] for key in ("hidden_size", "vocab_size")})
    vision = data["vision_config"]
    if "out_hidden_size" in vision:
        vision["out_hidden_size"] = 64
    return {**data, "text_config": text, "vision_config": vision}


@pytest.mark.parametrize(("name", "side"), [("mistral-small-3.1-24b", 224), ("mistral-small-3.1-24b", 200),
                                            ("qwen3.5-35b-a3b", 256)])  # fmt: skip
def test_a_native_resolution_images_tower_flops_equal_flop_counter_mode(name, side):
    """Pixtral and Qwen take an image at its own size: its grid, rounded up to whole merge blocks."""
    data = tiny_text(fixture(name))
    shape = shape_of(data)
    tower = shape.towers[0]
    _, patch_count, tokens = image_input(tower, side)
    grid = round(patch_count**0.5)
    model = build(config_from_dict(data), device="cpu", whole=True)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        if "qwen" in name:
            frames = model.config.vision_config.temporal_patch_size
            flat = torch.zeros(grid * grid, 3 * frames * tower.patch_size**2, dtype=torch.bfloat16)
            features = model.model.get_image_features(flat, torch.tensor([[1, grid, grid]]))
        else:
            pixels = torch.zeros(1, 3, grid * tower.patch_size, grid * tower.patch_size, dtype=torch.bfloat16)
            features = model.model.get_image_features(pixels, image_sizes=torch.tensor([[grid * tower.patch_size] * 2]))
    image = features.pooler_output if hasattr(features, "pooler_output") else features
    assert sum(part.shape[0] for part in image) == tokens
    assert tower_flops_per_image(tower, side) == int(counter.get_total_flops())


GEMMA = str(CONFIGS / "gemma-3-27b.json")


@pytest.fixture(scope="module")
def gemma_image_flops() -> int:
    """One 896 x 896 image through Gemma 3 27B's SigLIP and projector, as FlopCounterMode counts it."""
    data = fixture("gemma-3-27b")
    return image_flops(build(config_from_dict(data), whole=True), shape_of(data), "gemma3")


def test_estimate_with_images_adds_their_tokens_and_tower_flops(tfcost, gemma_image_flops):
    """--images 2 -T 1000: the language model over 1000 + 2 x 256 tokens, plus two images through the tower."""
    with_images = json.loads(tfcost("estimate", "--config", GEMMA, "-T", "1000", "--images", "2", "-f", "json").stdout)
    longer = json.loads(tfcost("estimate", "--config", GEMMA, "-T", "1512", "-f", "json").stdout)
    assert with_images["images"]["tokens"] == 2 * 256  # Gemma3Config.mm_tokens_per_image
    assert with_images["images"]["seq_len"] == 1512
    assert with_images["kv_cache"] == longer["kv_cache"]
    tower = with_images["flops"]["forward_per_sequence"] - longer["flops"]["forward_per_sequence"]
    assert tower == with_images["images"]["tower_forward"] == 2 * gemma_image_flops
    assert with_images["flops"]["forward_breakdown"]["vision_tower"] == tower
    assert with_images["flops"]["training_per_sequence"] == 3 * with_images["flops"]["forward_per_sequence"]
    assert with_images["params"]["towers"] == RELEASES["gemma-3-27b"][1]


def test_serve_holds_the_towers_and_prefills_the_images(tfcost, gemma_image_flops):
    args = ("serve", "--config", GEMMA, "-G", "64", "-f", "json")
    with_images = json.loads(tfcost(*args, "-P", "1000", "--images", "2").stdout)
    longer = json.loads(tfcost(*args, "-P", "1512").stdout)
    assert with_images["setup"]["prompt"] == 1512
    assert with_images["memory"]["weights_bytes"] == 2 * RELEASES["gemma-3-27b"][0]  # bf16, the towers included
    tower = with_images["latency"]["prefill_flops_per_gpu"] - longer["latency"]["prefill_flops_per_gpu"]
    assert tower == 2 * gemma_image_flops
    assert with_images["latency"]["prefill_ms"] > longer["latency"]["prefill_ms"]


def test_images_on_a_text_only_model_are_one_clear_error(tfcost):
    run = tfcost("estimate", "llama-3-8b", "--images", "1")
    assert run.code != 0
    assert run.stderr.strip().splitlines() == [
        "tfcost: error: --images: llama-3-8b has no vision tower tfcost prices (a text-only model here)"
    ]


def best_fit_tiles(side: int, tile: int = 336, most: int = 16) -> int:
    """Llama4ImageProcessor's canvas for a square image (image_processing_llama4.py: find_supported_resolutions,
    get_best_fit), enumerated: every h x w tiles with h w <= 16; the smallest scale >= 1 (else the largest) of
    min(h, w) tile / side; among the canvases at that scale the smallest area; plus one global tile when the
    canvas has more than one."""
    canvases = [(h, w) for h in range(1, most + 1) for w in range(1, most + 1) if h * w <= most]
    scales = {canvas: min(canvas) * tile / side for canvas in canvases}
    up = [scale for scale in scales.values() if scale >= 1]
    chosen = min(up) if up else max(scales.values())
    h, w = min((canvas for canvas in canvases if scales[canvas] == chosen), key=lambda c: c[0] * c[1])
    return h * w + int(h * w > 1)


@pytest.mark.parametrize("side", [100, 336, 337, 672, 1000, 1344, 1345, 4000])
def test_llama4_tiles_an_image_as_its_processor_does(side):
    tower = shape_of(fixture("llama-4-scout")).towers[0]
    passes, _, tokens = image_input(tower, side)
    assert passes == best_fit_tiles(side)
    assert tokens == passes * 144  # (336 / 14)^2 patches, pixel-shuffled by 0.5 a side


def test_train_with_images_trains_the_tower_on_every_sequence(tfcost, gemma_image_flops):
    """1,000 sequences of 1000 text + 2 x 256 image tokens: the language model's FLOPs at T = 1512, plus forward
    and backward (3x) of two images a sequence through the tower."""
    args = ("train", "--config", GEMMA, "--tokens", "1512000", "--mfu", "0.4", "--zero", "0", "-f", "json")
    with_images = json.loads(tfcost(*args, "--seq", "1000", "--images", "2").stdout)
    longer = json.loads(tfcost(*args, "--seq", "1512").stdout)
    assert with_images["setup"]["seq_len"] == 1512
    assert with_images["flops"]["total"] - longer["flops"]["total"] == 1000 * 3 * 2 * gemma_image_flops
    assert with_images["memory_per_gpu"]["weights_bytes"] == 2 * RELEASES["gemma-3-27b"][0]


PHI4 = {"model_type": "phi4_multimodal"}


def test_estimate_with_audio_adds_its_tokens_and_tower_flops(tfcost, tmp_path):
    """--audio-seconds 10 -T 1000 on Phi-4-multimodal: the language model over 1000 + 125 tokens (12.5 a second),
    plus the audio tower over 10 s."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(PHI4))
    args = ("estimate", "--config", str(config), "-f", "json")
    with_audio = json.loads(tfcost(*args, "-T", "1000", "--audio-seconds", "10").stdout)
    longer = json.loads(tfcost(*args, "-T", "1125").stdout)
    tower = next(tower for tower in shape_of(PHI4).towers if tower.name == "audio")
    assert with_audio["audio"]["tokens"] == 125 == audio_input(tower, 10).tokens
    assert with_audio["audio"]["seq_len"] == 1125
    assert with_audio["kv_cache"] == longer["kv_cache"]
    added = with_audio["flops"]["forward_per_sequence"] - longer["flops"]["forward_per_sequence"]
    assert added == with_audio["audio"]["tower_forward"] == tower_flops_per_audio(tower, 10) > 0
    assert with_audio["flops"]["forward_breakdown"]["audio_tower"] == added


def test_serve_prefills_the_audio(tfcost, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(PHI4))
    args = ("serve", "--config", str(config), "-f", "json")
    with_audio = json.loads(tfcost(*args, "-P", "1000", "--audio-seconds", "10").stdout)
    longer = json.loads(tfcost(*args, "-P", "1125").stdout)
    assert with_audio["setup"]["prompt"] == 1125
    tower = next(tower for tower in shape_of(PHI4).towers if tower.name == "audio")
    added = with_audio["latency"]["prefill_flops_per_gpu"] - longer["latency"]["prefill_flops_per_gpu"]
    assert added == tower_flops_per_audio(tower, 10)


def test_audio_on_a_model_without_an_audio_tower_is_one_clear_error(tfcost):
    run = tfcost("estimate", "llama-3-8b", "--audio-seconds", "3")
    assert run.code != 0
    assert run.stderr.strip().splitlines() == [
        "tfcost: error: --audio-seconds: llama-3-8b has no audio tower tfcost prices"
    ]


def phi4_tiny(audio: bool = True) -> dict[str, Any]:
    """Phi-4-multimodal with a 64-wide language model and 1-layer towers (the real 448-pixel crops of 14-pixel
    patches), small enough for the CPU."""
    data = {**saved_forms("phi4_multimodal")["full"], "model_type": "phi4_multimodal", "hidden_size": 64,
            "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
            "vocab_size": 256, "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0,
            "audio_config": {"hidden_size": 64, "num_attention_heads": 2, "num_blocks": 1, "nemo_conv_channels": 32,
                             "ext_pw_out_channel": 64, "depthwise_separable_out_channel": 64,
                             "intermediate_size": 32},
            "vision_config": {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 1,
                              "num_attention_heads": 2}}  # fmt: skip
    data.pop("rope_parameters", None)
    return data


def phi4_crop_tokens(side: int, crop: int = 448, mask: int = 32, most: int = 36) -> tuple[int, int]:
    """Phi4MultimodalImageProcessor for a square image (image_processing_phi4_multimodal.py: dynamic_preprocess,
    _preprocess), re-derived: n = ceil(S / 448) crops a side while n^2 <= 36 (else the closest ratio, 6 x 6 for a
    square), the crops' patch mask all ones (a square needs no padding), pooled [0::2, 0::2]; tokens = 256 + 1 +
    the pooled mask's sum + its first column's sum + 16. Returns (encoder runs, tokens)."""
    n = -(-side // crop)
    if n * n > most:
        n = 6
    pooled = np.ones((mask * n, mask * n))[0::2, 0::2]
    return n * n + 1, 256 + 1 + int(pooled.sum()) + int(pooled[:, 0].sum()) + 16


@pytest.mark.parametrize("side", [100, 448, 449, 896, 1000, 2688, 4000])
def test_phi4_multimodal_crops_an_image_as_its_processor_does(side):
    tower = next(tower for tower in shape_of({"model_type": "phi4_multimodal"}).towers if tower.name == "vision")
    passes, _, tokens = image_input(tower, side)
    assert (passes, tokens) == phi4_crop_tokens(side)


@pytest.mark.parametrize("side", [448, 896])
def test_phi4_multimodals_image_tower_flops_equal_flop_counter_mode(side):
    """Each crop through SigLIP (its pooling head too: it runs, unused), then img_projection_up and _down over the
    image's tokens, separators included (Phi4MultimodalImageEmbedding.forward)."""
    data = phi4_tiny()
    tower = next(tower for tower in shape_of(data).towers if tower.name == "vision")
    passes, _, tokens = image_input(tower, side)
    embed = build(config_from_dict(data), device="cpu").model.embed_tokens_extend.image_embed
    pixels = torch.zeros(passes, 3, 448, 448, dtype=torch.bfloat16)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        embed.get_img_features(pixels, attention_mask=torch.ones(passes, 32, 32, dtype=torch.bool))
        embed.img_projection_down(embed.img_projection_up(torch.zeros(1, tokens, 32, dtype=torch.bfloat16)))
    assert tower_flops_per_image(tower, side) == int(counter.get_total_flops())


@pytest.mark.parametrize("side", [224, 200])
def test_kimi_k25s_image_tower_flops_equal_flop_counter_mode(side):
    """Kimi K2.5's MoonViT at its native grid (rounded up to whole 2 x 2 merges) and its projector, through a
    one-layer tower and a tiny DeepSeek-V3 on the CPU (the position grid is resampled by values)."""
    data = {**saved_forms("kimi_k25")["full"], "model_type": "kimi_k25", "projection_hidden_size": 64}
    text = dict(data["text_config"])
    text.update(hidden_size=64, intermediate_size=64, moe_intermediate_size=32, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=2, n_routed_experts=4, num_experts_per_tok=2,
                n_shared_experts=1, first_k_dense_replace=1, q_lora_rank=None, kv_lora_rank=16,
                qk_nope_head_dim=16, qk_rope_head_dim=16, v_head_dim=16, qk_head_dim=32, vocab_size=256, n_group=1,
                topk_group=1)  # fmt: skip
    vision = {**data["vision_config"], "num_hidden_layers": 1, "hidden_size": 64, "intermediate_size": 96,
              "num_attention_heads": 2}  # fmt: skip
    data = {**data, "text_config": text, "vision_config": vision}
    tower = shape_of(data).towers[0]
    _, patch_count, tokens = image_input(tower, side)
    grid = round(patch_count**0.5)
    model = build(config_from_dict(data), device="cpu", whole=True)
    pixels = torch.zeros(grid * grid, 3, tower.patch_size, tower.patch_size, dtype=torch.bfloat16)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        features = model.model.get_image_features(pixels, torch.tensor([[1, grid, grid]]))
    assert sum(part.shape[0] for part in features.pooler_output) == tokens
    assert tower_flops_per_image(tower, side) == int(counter.get_total_flops())


def test_train_with_audio_trains_the_audio_tower_on_every_sequence(tfcost, tmp_path):
    """1,000 sequences of 1000 text + 125 audio tokens (10 s at 12.5 a second): the language model's FLOPs at
    T = 1125, plus forward and backward (3x) of 10 s through Phi-4-multimodal's audio tower."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(PHI4))
    args = ("train", "--config", str(config), "--tokens", "1125000", "--mfu", "0.4", "--zero", "0", "-f", "json")
    with_audio = json.loads(tfcost(*args, "--seq", "1000", "--audio-seconds", "10").stdout)
    longer = json.loads(tfcost(*args, "--seq", "1125").stdout)
    tower = next(tower for tower in shape_of(PHI4).towers if tower.name == "audio")
    assert with_audio["setup"]["seq_len"] == 1125
    assert with_audio["flops"]["total"] - longer["flops"]["total"] == 1000 * 3 * tower_flops_per_audio(tower, 10)
