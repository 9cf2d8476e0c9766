"""tfcost against the real Hugging Face implementation, for every supported model_type.

Each reference config.json in tests/data/hf_configs (where each came from: SOURCES.md there) is read by tfcost the
way `--config` reads it, and built by transformers on the meta device (shapes only: no weights, no memory). They
must agree exactly on the parameter count, on FlopCounterMode's count of a forward pass (which counts matmuls over
the full T x T, whatever the mask), and on the bytes of the KV cache the model returns.

MoE layers are built with transformers' `batched_mm` experts, which run each token through its k experts without
data-dependent routing, so they work on the meta device; small copies of the MoE configs also run the eager
experts loop with real routing on CPU tensors. Skipped with the reason when torch or transformers is missing; the
README's test command installs both, so CI runs this module.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

WHY = "the truth tests need torch and transformers: pip install -e '.[test]'"
torch = pytest.importorskip("torch", reason=WHY)
transformers = pytest.importorskip("transformers", reason=WHY)
FlopCounterMode = pytest.importorskip("torch.utils.flop_counter", reason=WHY).FlopCounterMode

# Recurrent models run without a mask (see inputs); transformers then looks at the positions' values for packed
# sequences, which the meta device cannot do: the harness answers "not packed", as ours are 0..T-1.
import truth_harness  # noqa: E402, F401
from transformers import AutoConfig, AutoModelForCausalLM, StaticCache  # noqa: E402

from tfcost.core.flops import forward_flops, score_entries  # noqa: E402
from tfcost.core.memory import kv_cache_bytes, kv_cache_bytes_per_token  # noqa: E402
from tfcost.core.params import active_params, language_model_params, total_params  # noqa: E402
from tfcost.readers.hf_config import shape_mapping  # noqa: E402
from tfcost.readers.presets import config_mapping, model_from_mapping  # noqa: E402
from tfcost.schema import ModelShape  # noqa: E402

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
NAMES = sorted(path.stem for path in CONFIGS.glob("*.json"))
MOE = ["deepseek-v2-lite", "deepseek-v3", "mixtral-8x7b", "qwen1.5-moe-a2.7b"]
SLIDING = ["gemma-2-9b", "mistral-7b", "phi-3-mini"]
# Model types with recurrent or linear-attention layers, whose fixed-size states the cache test leaves out.
RECURRENT = {"qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "lfm2", "lfm2_moe", "minimax", "kimi_linear"}
T = 100  # tokens per sequence: not a power of two, so that a T for T^2 slip cannot hide
# auto_map points at remote code and quantization_config would build fp8 layers; neither changes a count.
NOT_FOR_TRANSFORMERS = ("auto_map", "quantization_config")


def raw_config(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def hf_config(data: dict[str, Any]) -> Any:
    rest = {key: value for key, value in data.items() if key not in (*NOT_FOR_TRANSFORMERS, "model_type")}
    return AutoConfig.for_model(data["model_type"], **rest)


def build(data: dict[str, Any], device: str = "meta") -> Any:
    """The model class named by the config's `architectures`, in bf16, with eager attention (explicit matmuls
    that FlopCounterMode sees) and batched_mm experts (routing without data-dependent control flow)."""
    config = hf_config(data)
    # A multimodal wrapper (gemma3, llama4, mistral3): its language model, which is what tfcost prices.
    config = config.get_text_config(decoder=True) if "text_config" in data else config
    kwargs: dict[str, Any] = {"attn_implementation": "eager", "dtype": torch.bfloat16}
    if shape_mapping(data).get("moe"):
        # On CPU transformers would pick grouped_mm, whose kernel FlopCounterMode does not count: the eager loop
        # over the experts the router picked is the routing-dependent path to check.
        kwargs["experts_implementation"] = "batched_mm" if device == "meta" else "eager"
    architecture = (data.get("architectures") or ["AutoModelForCausalLM"])[0]
    with torch.device(device):
        if data["model_type"] in ("bert", "t5"):
            model = getattr(transformers, architecture)._from_config(config, **kwargs)
        else:
            model = AutoModelForCausalLM.from_config(config, **kwargs)
    return model.eval()


@cache
def meta_model(name: str) -> Any:
    return build(raw_config(name))


@cache
def tfcost_shape(name: str) -> ModelShape:
    path = CONFIGS / f"{name}.json"
    return model_from_mapping(config_mapping(path), str(path), name)


def inputs(data: dict[str, Any], tokens: int, device: str = "meta", use_cache: bool = False) -> dict[str, Any]:
    ids = torch.zeros((1, tokens), dtype=torch.long, device=device)
    if data["model_type"] == "bert":
        return {"input_ids": ids}
    kwargs: dict[str, Any] = {"input_ids": ids, "use_cache": use_cache}
    if data["model_type"] == "t5":
        kwargs["decoder_input_ids"] = ids  # T in, T out: tfcost's convention for encoder-decoder models
    elif data["model_type"] not in RECURRENT and data.get("text_config", {}).get("model_type") not in RECURRENT:
        # An explicit all-ones mask means "no padding" and spares transformers a data-dependent check that the
        # meta device cannot run (recurrent mixers test `torch.all(mask == 1)`, which it cannot answer: no mask).
        kwargs["attention_mask"] = torch.ones((1, tokens), dtype=torch.long, device=device)
    return kwargs


def call(model: Any, kwargs: dict[str, Any]) -> Any:
    """One forward pass. Mamba mixers test `torch.all(mask == 1)`, which the meta device cannot answer: they run
    without the all-ones mask, which means the same."""
    try:
        return model(**kwargs)
    except RuntimeError as error:
        if "meta tensors" not in str(error) or "attention_mask" not in kwargs:
            raise
        return model(**{key: value for key, value in kwargs.items() if key != "attention_mask"})


def counted_flops(model: Any, kwargs: dict[str, Any]) -> int:
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        call(model, kwargs)
    return int(counter.get_total_flops())


def cache_bytes(cache: Any) -> int:
    """Bytes of every key and value tensor a cache holds (an encoder-decoder cache: self and cross), and of the
    index keys of DeepSeek Sparse Attention's indexer; the conv and SSM states of recurrent layers are not keys or
    values (tests/test_truth_ssm.py checks them)."""
    if cache is None:  # a Mamba model's output has no past_key_values
        return 0
    if hasattr(cache, "self_attention_cache"):
        return cache_bytes(cache.self_attention_cache) + cache_bytes(cache.cross_attention_cache)
    return sum(
        tensor.numel() * tensor.element_size()
        for layer in cache.layers
        for tensor in (
            getattr(layer, "keys", None),
            getattr(layer, "values", None),
            getattr(layer, "indexer_keys", None),
        )
        if isinstance(tensor, torch.Tensor)
    )


def test_every_supported_model_type_has_a_reference_config():
    from tfcost.readers.hf_config import FAMILIES

    # kimi_k2 is deepseek_v3 under Moonshot's label, which transformers does not register; LongCat-Flash's forward
    # cannot run on the meta device (nonzero() in its experts loop): both are priced in tests/test_truth_mla.py.
    assert {text_model_type(raw_config(name)) for name in NAMES} == set(FAMILIES) - {"kimi_k2", "longcat_flash"}


def text_model_type(data: dict[str, Any]) -> str:
    """The model_type tfcost reads: a wrapper's text_config's."""
    return data.get("text_config", {}).get("model_type", data["model_type"])


# Phi-4-multimodal's causal LM holds its image and audio embeddings (towers) itself; tests/test_truth_towers.py
# prices them, the whole model included.
TOWERS_INSIDE = ("model.embed_tokens_extend.",)


@pytest.mark.parametrize("name", NAMES)
def test_parameters_match_transformers(name):
    model = meta_model(name)
    built = sum(p.numel() for key, p in model.named_parameters() if not key.startswith(TOWERS_INSIDE))
    assert language_model_params(tfcost_shape(name)) == built


# Llama 4's MoE runs every expert on every token in transformers; tfcost counts the k routed ones. Its FLOPs are
# compared, with that difference written out, in tests/test_truth_attention_variants.py.
ALL_EXPERTS = {"llama4_text"}


@pytest.mark.parametrize("name", [name for name in NAMES if text_model_type(raw_config(name)) not in ALL_EXPERTS])
def test_forward_flops_match_flop_counter(name):
    data = raw_config(name)
    assert forward_flops(tfcost_shape(name), T) == counted_flops(meta_model(name), inputs(data, T))


# DeepSeek-V4's cache steps every few tokens (compressed entries, buffered windows, an overlap state): it is checked
# whole, at several T, in tests/test_truth_deepseek_v4.py.
STEPPED = {"deepseek_v4"}


@pytest.mark.parametrize(
    "name", [name for name in NAMES if name != "bert-base" and text_model_type(raw_config(name)) not in STEPPED]
)
def test_kv_cache_matches_the_cache_transformers_returns(name):
    data = raw_config(name)
    with torch.no_grad():
        out = call(meta_model(name), inputs(data, T, use_cache=True))
    held = cache_bytes(getattr(out, "past_key_values", None))
    shape = tfcost_shape(name)
    assert kv_cache_bytes(shape, T, 1, "bf16") == held
    assert kv_cache_bytes_per_token(shape, "bf16") * T == held  # T is below every window here


def test_bert_keeps_no_cache():
    assert kv_cache_bytes_per_token(tfcost_shape("bert-base"), "bf16") == 0


def test_mla_caches_the_compressed_latent():
    # transformers' DeepSeek caches the kv_lora_rank latent as "keys" and the shared rotary key as "values".
    data = raw_config("deepseek-v3")
    with torch.no_grad():
        out = meta_model("deepseek-v3")(**inputs(data, T, use_cache=True))
    layer = out.past_key_values.layers[0]
    assert (layer.keys.shape[-1], layer.values.shape[-1]) == (512, 64)
    assert kv_cache_bytes_per_token(tfcost_shape("deepseek-v3"), "bf16") == 70_272  # (512 + 64) * 61 layers * 2


@pytest.mark.parametrize("name", SLIDING)
def test_sliding_window_cache_is_capped(name):
    """Past the window, transformers' StaticCache allocates min(T, W) positions for a sliding layer, as tfcost
    counts. Its DynamicCache keeps one fewer between steps (W - 1: the next token brings its own key and value),
    so during a decode step it too holds W."""
    data = raw_config(name)
    shape = tfcost_shape(name)
    assert shape.sliding_window is not None
    tokens = shape.sliding_window + 7
    model = meta_model(name)
    static = StaticCache(config=model.config, max_cache_len=tokens)
    with torch.no_grad():
        model(**inputs(data, tokens, use_cache=True), cache=static)
        dynamic = model(**inputs(data, tokens, use_cache=True)).past_key_values
    assert cache_bytes(static) == kv_cache_bytes(shape, tokens, 1, "bf16")
    sliding_layers = sum(layer.is_sliding for layer in dynamic.layers)
    per_layer_token = kv_cache_bytes_per_token(shape, "bf16") // shape.n_layers
    assert cache_bytes(dynamic) + sliding_layers * per_layer_token == kv_cache_bytes(shape, tokens, 1, "bf16")


@pytest.mark.parametrize(("tokens", "window"), [(10, 4), (4, 10), (17, 17), (33, 8)])
def test_windowed_causal_count_is_the_transformers_mask(tokens, window):
    from transformers.masking_utils import sliding_window_causal_mask_function

    keep = sliding_window_causal_mask_function(window)
    index = [torch.tensor(i) for i in range(tokens)]
    kept = sum(bool(keep(index[0], index[0], q, kv)) for q in index for kv in index)
    assert score_entries(tokens, causal=True, window=window) == kept


def tiny(name: str) -> dict[str, Any]:
    """A small copy of an MoE config: same family and field layout, widths cut down so CPU routing is quick."""
    data = copy.deepcopy(raw_config(name))
    for token in ("bos_token_id", "eos_token_id", "pad_token_id"):  # ids of the real vocabulary
        data.pop(token, None)
    data.update(vocab_size=512, hidden_size=64, num_attention_heads=4, num_key_value_heads=4, intermediate_size=96)
    data.update(num_hidden_layers=3, max_position_embeddings=256)
    if data["model_type"] == "mixtral":
        data.update(num_key_value_heads=2, num_local_experts=4)
    elif data["model_type"] == "qwen2_moe":
        data.update(num_experts=6, moe_intermediate_size=32, shared_expert_intermediate_size=48, mlp_only_layers=[1])
    else:  # DeepSeek: MLA widths, grouped routing, one dense layer first
        data.update(n_routed_experts=16, moe_intermediate_size=32, first_k_dense_replace=1, kv_lora_rank=16)
        data.update(qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16)
        data.update(n_group=4, topk_group=2) if data.get("n_group", 1) > 1 else None
        data["q_lora_rank"] = 24 if data.get("q_lora_rank") else None
    return data


@pytest.mark.parametrize("name", MOE)
def test_moe_flops_with_real_routing(name):
    """The eager experts code loops over the experts the router picked, on real CPU tensors: still k experts'
    worth of MLP per token, as tfcost counts."""
    torch.manual_seed(0)
    data = tiny(name)
    shape = ModelShape.model_validate({"name": name, **shape_mapping(data)})
    model = build(data, device="cpu")
    assert total_params(shape) == sum(p.numel() for p in model.parameters())
    assert active_params(shape) < total_params(shape)
    assert forward_flops(shape, T) == counted_flops(model, inputs(data, T, device="cpu"))
