"""The MLA families of issue 11 (tfcost/readers/families/mla.py) against transformers 5.24 on the meta device.

For deepseek_v32, glm_moe_dsa and glm4_moe_lite (longcat_flash at the end, deepseek_v3 under Kimi-K2's label): the
default config (`AutoConfig.for_model`) in both forms
transformers writes (save_pretrained's and the full to_dict() dump), and the fixtures (deepseek-v3.2, kimi-k2,
glm-5, glm-4.7-flash; sources in tests/data/hf_configs/SOURCES.md): parameters exactly, FlopCounterMode's forward
FLOPs at T = 100 exactly (full T x T scores, as transformers computes them before masking), and the bytes per token
of every tensor the returned cache holds (latents, rotary keys and DSA's index keys). Each model is built once.

DeepSeek Sparse Attention's causal count (each query attends to the min(i + 1, k) positions its indexer selects)
is checked against the mask transformers itself builds from the indexer's top-k, on a small CPU copy.
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
pytest.importorskip("transformers", reason=WHY)

from truth_harness import (  # noqa: E402
    T_LONG,
    Truth,
    build,
    config_from_dict,
    default_config,
    forward_flops,
    measure,
    run,
    saved_forms,
)

from tfcost.core.flops import forward_flops as tfcost_forward_flops  # noqa: E402
from tfcost.core.flops import forward_flops_breakdown, score_entries  # noqa: E402
from tfcost.core.memory import kv_cache_bytes_per_token, state_bytes  # noqa: E402
from tfcost.core.params import mtp_params, total_params  # noqa: E402
from tfcost.readers.hf_config import read_config  # noqa: E402
from tfcost.readers.presets import load_model, model_from_mapping  # noqa: E402
from tfcost.schema import ModelShape  # noqa: E402

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
TYPES = ["deepseek_v32", "glm_moe_dsa", "glm4_moe_lite"]  # and longcat_flash, below
FIXTURES = ["deepseek-v3.2", "kimi-k2", "glm-5", "glm-4.7-flash"]
# Building a 600B-1T model on the meta device and counting its forward pass takes 5-20 s on a shared CPU; the
# default run keeps the smallest type and fixture (tests/test_truth.py also checks every fixture), CI's thorough
# run all of them.
SLOW = pytest.mark.thorough


def slow_unless(small: bool) -> list[Any]:
    return [] if small else [SLOW]


def shape_of(data: dict[str, Any], name: str = "x") -> ModelShape:
    reading = read_config(json.loads(json.dumps(data)))  # as a config.json holds it
    assert reading.ignored == []  # every key these files carry is known
    return model_from_mapping(reading.mapping, "test", name)


def raw(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / f"{name}.json").read_text())


@cache
def default_truth(model_type: str) -> Truth:
    return measure(default_config(model_type), whole=False)


@cache
def fixture_truth(name: str) -> Truth:
    return measure(config_from_dict(raw(name)), whole=False)


def assert_exact(shape: ModelShape, truth: Truth) -> None:
    assert truth.notes == []
    assert total_params(shape) == truth.params
    assert tfcost_forward_flops(shape, T_LONG) == truth.forward_flops
    assert kv_cache_bytes_per_token(shape, "bf16") == truth.kv_bytes_per_token
    assert state_bytes(shape, 1, "bf16") == truth.state_bytes == 0


@pytest.mark.parametrize("form", ["saved", "full"])
@pytest.mark.parametrize(
    "model_type", [pytest.param(kind, marks=slow_unless(kind == "glm4_moe_lite")) for kind in TYPES]
)
def test_default_config_prices_exactly(model_type, form):
    assert_exact(shape_of(saved_forms(model_type)[form]), default_truth(model_type))


@pytest.mark.parametrize("name", [pytest.param(name, marks=slow_unless(name == "glm-4.7-flash")) for name in FIXTURES])
def test_fixture_prices_exactly(name):
    assert_exact(shape_of(raw(name)), fixture_truth(name))


def test_the_indexer_is_what_deepseek_v32_adds_to_v3():
    # DeepSeek-V3.2 is DeepSeek-V3 plus DSA's indexer (arXiv:2512.02556): per layer wq_b [64*128, 1536],
    # wk [128, 7168], a LayerNorm of 128 with bias, weights_proj [64, 7168]; cached: 128 index-key values.
    v32 = shape_of(raw("deepseek-v3.2"))
    v3_keys = {key: value for key, value in raw("deepseek-v3.2").items() if not key.startswith("index_")}
    v3 = shape_of({**v3_keys, "model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"]})
    per_layer = 64 * 128 * 1536 + 128 * 7168 + 2 * 128 + 64 * 7168
    assert total_params(v32) - total_params(v3) == 61 * per_layer == 851_524_864
    assert kv_cache_bytes_per_token(v32, "bf16") - kv_cache_bytes_per_token(v3, "bf16") == 61 * 128 * 2


def test_kimi_k2_reads_under_its_own_label_as_deepseek_v3():
    # Kimi-K2's Hub config says model_type "kimi_k2" (Moonshot's deployment guide: DeepSeek-V3's architecture, set
    # "deepseek_v3" where a framework lacks the label); transformers registers only deepseek_v3.
    relabelled = {**raw("kimi-k2"), "model_type": "kimi_k2"}
    assert shape_of(relabelled) == shape_of(raw("kimi-k2"))  # which prices as transformers builds it


def test_mtp_layers_are_counted_apart_as_the_hub_checkpoint_holds_them():
    # The Hub's DeepSeek-V3.2 checkpoint is "685B": the 671.9B transformers builds, the MTP layer (one more
    # decoder layer with its indexer, eh_proj and norms), and the MTP's own copies of the embedding and head.
    shape = shape_of(raw("deepseek-v3.2"))
    assert shape.mtp_layers == 1
    checkpoint = total_params(shape) + mtp_params(shape) + 2 * shape.vocab_size * shape.d_model
    assert round(checkpoint / 1e9) == 685


SMALL_DSA = {
    "model_type": "glm_moe_dsa", "vocab_size": 512, "hidden_size": 128, "intermediate_size": 192,
    "moe_intermediate_size": 32, "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 4,
    "q_lora_rank": 48, "kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16,
    "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1,
    "index_n_heads": 4, "index_head_dim": 16, "index_topk": 8, "max_position_embeddings": 256, "n_group": 1,
    "topk_group": 1,
}  # fmt: skip


@pytest.mark.parametrize(
    "extra",
    [
        {"indexer_types": ["full", "shared", "shared", "full", "shared", "full"]},
        {"index_topk_pattern": "FFSFSS"},
        {"index_topk_freq": 2, "index_skip_topk_offset": 1},
    ],
    ids=["indexer_types", "pattern", "freq"],
)
def test_glm_layers_that_reuse_the_previous_top_k_have_no_indexer(extra):
    data = {**SMALL_DSA, **extra}
    config = config_from_dict(data)
    shape = shape_of(data)
    own = config.indexer_types.count("full")
    assert 0 < own < 6  # both kinds of layer are in the stack
    assert_exact(shape, measure(config, whole=False))
    assert shape.mla is not None and shape.mla.indexer is not None


def test_dsa_causal_entries_are_the_top_k_transformers_keeps():
    """Counted causally, each query of the main attention reads min(i + 1, k) positions: the entries that the mask
    transformers builds from the indexer's top-k leaves open (on CPU, real scores); the indexer itself scores
    the whole causal triangle."""
    data = {**SMALL_DSA, "model_type": "deepseek_v32", "num_hidden_layers": 2, "first_k_dense_replace": 2}
    tokens, topk = 20, data["index_topk"]
    from transformers.models.deepseek_v32 import modeling_deepseek_v32 as module

    kept: list[int] = []
    eager = module.eager_attention_forward

    def counting(attn, query, key, value, attention_mask, *args, **kwargs):
        open_entries = attention_mask > torch.finfo(attention_mask.dtype).min
        kept.append(int(open_entries.sum()))  # [batch, 1, query, key]: one head's entries
        return eager(attn, query, key, value, attention_mask, *args, **kwargs)

    module.eager_attention_forward = counting
    try:
        torch.manual_seed(0)
        model = build(config_from_dict(data), device="cpu")
        run(model, tokens, use_cache=False, device="cpu")
    finally:
        module.eager_attention_forward = eager
    assert kept == [score_entries(tokens, True, topk=topk)] * 2 == [sum(min(i + 1, topk) for i in range(tokens))] * 2
    shape = shape_of(data)
    causal = forward_flops_breakdown(shape, tokens, causal=True)
    heads, qk_width = shape.n_heads, shape.head_dim
    assert causal["attention/scores"] == 2 * 2 * heads * qk_width * kept[0]
    indexer = causal["attention/indexer"] - forward_flops_breakdown(shape, 1, causal=True)["attention/indexer"] * tokens
    assert indexer == 2 * 2 * (16 * 4 + 4) * (score_entries(tokens, True) - tokens)


def test_a_dsa_model_counted_in_full_is_what_flop_counter_sees_past_k():
    # Past k, transformers still computes every score and masks (FlopCounterMode: T^2); tfcost's full count agrees.
    data = {**SMALL_DSA, "model_type": "deepseek_v32", "num_hidden_layers": 2}
    model = build(config_from_dict(data))
    assert tfcost_forward_flops(shape_of(data), 40) == forward_flops(model, 40)[0]
    assert tfcost_forward_flops(shape_of(data), 40, causal=True) < forward_flops(model, 40)[0]


@pytest.mark.parametrize("preset", ["deepseek-v3.2", "kimi-k2"])
def test_presets_are_their_configs_with_the_published_count(preset):
    # The fixture prices exactly as transformers builds it (test_fixture_prices_exactly, tests/test_truth.py).
    model = load_model(preset)
    assert total_params(model) == model.published_params
    reading = shape_of(raw(preset))
    assert model.model_copy(update={"name": "x", "source": None, "published_params": None}) == reading


def test_a_config_with_other_layer_kinds_is_refused():
    data = copy.deepcopy(SMALL_DSA)
    data["layer_types"] = ["indexed_attention"] * 5 + ["sliding_attention"]
    with pytest.raises(Exception, match="sliding_attention"):
        shape_of(data)


# LongCat-Flash ---------------------------------------------------------------------------------------------------
# transformers 5.24's LongcatFlashExperts loops over the experts the router picked with nonzero(), which the meta
# device cannot run, and its FLOPs depend on how many of each token's k picks are zero (identity) experts. So: the
# full-size default on the meta device with the routed experts' forward left out (everything else, the cache
# included, does not depend on them), and a small CPU copy whose router is steered to real or to zero experts.


def zero_expert_allocation(shape: ModelShape) -> int:
    """What transformers allocates and the checkpoint lacks: gate_up_proj rows for the Z zero experts in every
    LongCat layer ([E + Z, 2F, d] where down_proj is [E, d, F])."""
    assert shape.moe is not None
    return shape.n_layers // 2 * shape.moe.n_zero_experts * 2 * shape.moe.expert_d_ff * shape.d_model


@cache
def longcat_default_truth() -> Truth:
    from transformers.models.longcat_flash.modeling_longcat_flash import LongcatFlashExperts

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LongcatFlashExperts, "forward", lambda self, hidden, index, weights: torch.zeros_like(hidden))
        return measure(default_config("longcat_flash"), whole=False)


@pytest.mark.parametrize("form", ["saved", "full"])
def test_longcat_default_prices_exactly_but_the_zero_expert_allocation(form):
    shape, truth = shape_of(saved_forms("longcat_flash")[form]), longcat_default_truth()
    assert truth.notes == []
    # 741,053,585,408 built = 560,664,958,976 (published "560B") + 180,388,626,432 never stored
    assert total_params(shape) + zero_expert_allocation(shape) == truth.params == 741_053_585_408
    routed = forward_flops_breakdown(shape, T_LONG)["moe/experts"]
    assert tfcost_forward_flops(shape, T_LONG) - routed == truth.forward_flops
    assert kv_cache_bytes_per_token(shape, "bf16") == truth.kv_bytes_per_token == 56 * (512 + 64) * 2


SMALL_LONGCAT = {
    "model_type": "longcat_flash", "vocab_size": 512, "hidden_size": 64, "num_layers": 2, "num_attention_heads": 4,
    "ffn_hidden_size": 96, "expert_ffn_hidden_size": 32, "n_routed_experts": 8, "zero_expert_num": 4, "moe_topk": 3,
    "q_lora_rank": 48, "kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "head_dim": 8,
    "v_head_dim": 16, "max_position_embeddings": 256, "zero_expert_type": "identity", "mla_scale_q_lora": True,
    "mla_scale_kv_lora": True,
}  # fmt: skip


@pytest.mark.parametrize("steer", ["real", "zero"])
def test_longcat_flops_follow_the_router(steer):
    """Steered to real experts only, FlopCounterMode on the CPU copy counts what tfcost counts (k real experts a
    token, the most); steered to zero experts only, the routed experts' matmuls vanish."""
    shape = shape_of(SMALL_LONGCAT)
    torch.manual_seed(0)
    model = build(config_from_dict(SMALL_LONGCAT), device="cpu")
    assert sum(p.numel() for p in model.parameters()) == total_params(shape) + zero_expert_allocation(shape)
    experts = SMALL_LONGCAT["n_routed_experts"]
    for layer in model.model.layers:
        bias = layer.mlp.router.e_score_correction_bias
        bias[experts:] = -1e4 if steer == "real" else 1e4  # zero experts never / always among the top k
    counted = forward_flops(model, T_LONG, device="cpu")[0]
    routed = forward_flops_breakdown(shape, T_LONG)["moe/experts"]
    assert counted == tfcost_forward_flops(shape, T_LONG) - (0 if steer == "real" else routed)
