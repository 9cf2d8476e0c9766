"""DeepSeek-V4 (tfcost/readers/families/deepseek_v4.py) against transformers 5.24 on the meta device.

The default config (`AutoConfig.for_model("deepseek_v4")`, DeepSeek-V4-Flash's sizes) in both forms transformers
writes (save_pretrained's and the full to_dict() dump): parameters exactly, FlopCounterMode's forward FLOPs at
T = 100 exactly (full T x T raw scores and T x floor(T/m) compressed ones, as transformers computes them before
masking), and the cache it returns at T = 60, 100, 128 and 300: its bytes step with T (compressed entries every m
positions, the tail of an unclosed window, a fixed overlap state partly in fp32), so each T is checked whole, not
as a per-token figure. A small config with all three layer kinds is checked the same way at T below, at and past
its windows; on CPU, the causal entries are those the masks transformers builds leave open.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

WHY = "the truth tests need torch and transformers: pip install -e '.[test]'"
torch = pytest.importorskip("torch", reason=WHY)
pytest.importorskip("transformers", reason=WHY)

import truth_harness as th  # noqa: E402

from tfcost.core.flops import forward_flops, forward_flops_breakdown, score_entries  # noqa: E402
from tfcost.core.memory import attention_count, kv_cache_bytes, state_bytes  # noqa: E402
from tfcost.core.ops import compressed_pairs  # noqa: E402
from tfcost.core.params import active_params, mtp_params, parameter_breakdown, total_params  # noqa: E402
from tfcost.readers.hf_config import read_config  # noqa: E402
from tfcost.readers.presets import model_from_mapping  # noqa: E402
from tfcost.schema import ModelShape  # noqa: E402


def shape_of(data: dict[str, Any]) -> ModelShape:
    reading = read_config(json.loads(json.dumps(data)))  # as a config.json holds it
    assert reading.ignored == []  # every key these files carry is known
    return model_from_mapping(reading.mapping, "test", "x")


@cache
def default_model() -> Any:
    return th.build(th.default_config("deepseek_v4"))


@cache
def default_flops() -> int:
    return th.forward_flops(default_model(), th.T_LONG)[0]


def held_bytes(model: Any, tokens: int) -> tuple[int, int]:
    """Every tensor of the cache transformers returns after T tokens, and of them the fixed overlap state."""
    tensors = th.cache_bytes(model, tokens)
    held = sum(size for name, size in tensors.items() if th.held(name))
    return held, sum(size for name, size in tensors.items() if name.startswith("overlap_"))


def priced_bytes(shape: ModelShape, tokens: int) -> tuple[int, int]:
    state = state_bytes(shape, 1, "bf16")
    return kv_cache_bytes(shape, tokens, 1, "bf16") + state, state


@pytest.mark.parametrize("form", ["saved", "full"])
def test_default_config_prices_exactly(form):
    shape = shape_of(th.saved_forms("deepseek_v4")[form])
    assert total_params(shape) == th.parameter_count(default_model()) == 284_325_869_015
    assert forward_flops(shape, th.T_LONG) == default_flops() == 2_717_194_649_600


# Each T is one forward pass of the 284B model on the meta device (3-5 s): CI's thorough run takes all four.
@pytest.mark.parametrize("tokens", [pytest.param(60, marks=pytest.mark.thorough), 100, 128,
                                    pytest.param(300, marks=pytest.mark.thorough)])  # fmt: skip
def test_default_cache_at_t_is_what_transformers_holds(tokens):
    # T = 128 closes the first heavily-compressed window (its 127 buffered positions become one entry), so the
    # cache at 128 is smaller than at 100; 300 is past the 128-position sliding window (127 raw keys kept).
    shape = shape_of(th.saved_forms("deepseek_v4")["saved"])
    assert priced_bytes(shape, tokens) == held_bytes(default_model(), tokens)


def test_the_default_is_deepseek_v4_flash_with_its_published_counts():
    # DeepSeek-V4-Flash (deepseek-ai/DeepSeek-V4-Flash, April 2026): "284B total, 13B activated". tfcost's active
    # count holds the 0.53B embedding table (a lookup) too: less it, 13.26B.
    shape = shape_of(th.saved_forms("deepseek_v4")["saved"])
    assert round(total_params(shape) / 1e9) == 284
    lookup = shape.vocab_size * shape.d_model
    assert 13e9 <= active_params(shape) - lookup < 14e9
    # Two hyper-connections a layer (4 streams: a [24, 16384] projection, 24 biases, 3 scales) and the head's.
    parts = parameter_breakdown(shape)
    assert parts["layers/hyper_connections"] == 43 * 2 * (24 * 4 * 4096 + 24 + 3)
    assert parts["hyper_connections/head"] == 4 * 4 * 4096 + 4 + 1
    # The MTP module transformers does not build (num_nextn_predict_layers 1) is counted apart, not in the total.
    assert shape.mtp_layers == 1 and mtp_params(shape) > 0
    # One attention a layer: the compressed entries are more columns of the same softmax, not another attention.
    assert attention_count(shape) == 43


SMALL = {
    "model_type": "deepseek_v4", "vocab_size": 256, "hidden_size": 64, "moe_intermediate_size": 32,
    "num_hidden_layers": 4, "num_attention_heads": 4, "head_dim": 32, "q_lora_rank": 16, "o_groups": 2,
    "o_lora_rank": 16, "n_routed_experts": 4, "num_experts_per_tok": 2, "index_n_heads": 2, "index_head_dim": 16,
    "index_topk": 3, "sliding_window": 6, "hc_mult": 2, "max_position_embeddings": 512,
    "compress_rates": {"compressed_sparse_attention": 4, "heavily_compressed_attention": 8},
    "layer_types": [
        "heavily_compressed_attention", "compressed_sparse_attention", "sliding_attention",
        "compressed_sparse_attention",
    ],
    "mlp_layer_types": ["hash_moe", "moe", "moe", "moe"],
}  # fmt: skip


@cache
def small_model(device: str = "meta") -> Any:
    torch.manual_seed(0)
    return th.build(th.config_from_dict(SMALL), device=device)


@pytest.mark.parametrize("tokens", [3, 8, 13, 30])
def test_small_model_with_every_layer_kind_prices_exactly(tokens):
    shape = shape_of(SMALL)
    assert total_params(shape) == th.parameter_count(small_model())
    assert forward_flops(shape, tokens) == th.forward_flops(small_model(), tokens)[0]
    if tokens >= 4:  # the overlap state exists once a compressed-sparse window has closed
        assert priced_bytes(shape, tokens) == held_bytes(small_model(), tokens)


def test_causal_entries_are_those_the_masks_leave_open():
    """Counted causally, query t reads min(t + 1, W) raw keys and min(floor((t + 1)/m), k) compressed entries
    (all closed ones under heavily compressed attention): what the sliding-window mask and the compressors' block
    bias leave open, on a CPU copy with real scores (the indexer's top-k)."""
    from transformers.models.deepseek_v4 import modeling_deepseek_v4 as module

    tokens, window, topk = 30, SMALL["sliding_window"], SMALL["index_topk"]
    opened: list[tuple[int, int]] = []
    eager = module.eager_attention_forward

    def counting(attn, query, key, value, attention_mask, *args, **kwargs):
        open_entries = attention_mask > torch.finfo(attention_mask.dtype).min
        opened.append((int(open_entries[..., :tokens].sum()), int(open_entries[..., tokens:].sum())))
        return eager(attn, query, key, value, attention_mask, *args, **kwargs)

    module.eager_attention_forward = counting
    try:
        th.run(small_model("cpu"), tokens, use_cache=False, device="cpu")
    finally:
        module.eager_attention_forward = eager
    raw = score_entries(tokens, True, window=window)
    assert raw == sum(min(t + 1, window) for t in range(tokens))
    hca, csa = compressed_pairs(tokens, 8, None), compressed_pairs(tokens, 4, topk)
    assert csa == sum(min((t + 1) // 4, topk) for t in range(tokens))
    assert opened == [(raw, hca), (raw, csa), (raw, 0), (raw, csa)]
    # The causal scores FLOPs are those entries, H heads of D: 2 H D x entries.
    shape = shape_of(SMALL)
    heads, width = shape.n_heads, shape.head_dim
    causal = forward_flops_breakdown(shape, tokens, causal=True)
    assert causal["attention/scores"] == 2 * heads * width * (4 * raw + hca + 2 * csa)


@pytest.mark.parametrize("tokens", [1, 7, 8, 9, 31, 32, 33, 1000])
def test_compressed_pairs_closed_form(tokens):
    for rate in (1, 4, 8):
        for topk in (None, 1, 3):
            expected = sum(min((t + 1) // rate, topk or tokens) for t in range(tokens))
            assert compressed_pairs(tokens, rate, topk) == expected


def test_legacy_keys_read_as_deepseek_v4_config_folds_them():
    # compress_ratios (per layer 0/4/128) and compress_rate_csa / _hca, as older V4 files ship them.
    legacy = {key: value for key, value in SMALL.items() if key not in ("layer_types", "compress_rates")}
    legacy.update({"compress_ratios": [128, 4, 0, 4], "compress_rate_csa": 4, "compress_rate_hca": 8})
    assert shape_of(legacy) == shape_of(SMALL)
    config = th.config_from_dict(legacy)
    assert config.layer_types == SMALL["layer_types"]
    assert config.compress_rates == SMALL["compress_rates"]


# estimate, serve and check: a stepped cache has no bytes per token, so each shows the cache at its own T -----------


def write_config(tmp_path: Any, data: dict[str, Any]) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**data, "architectures": ["DeepseekV4ForCausalLM"]}))
    return str(path)


def test_estimate_shows_the_cache_held_at_t_and_says_why_there_is_no_per_token_figure(tmp_path):
    from conftest import run_in_process

    path = write_config(tmp_path, th.saved_forms("deepseek_v4")["saved"])
    run = run_in_process("estimate", path, "--seq", "128", "--format", "json")
    assert run.code == 0, run.stderr
    kv = json.loads(run.stdout)["kv_cache"]
    assert kv["bytes_per_token"] is None and "steps every 4 and 128 positions" in kv["note"]
    assert (kv["bytes"] + kv["state_bytes"], kv["state_bytes"]) == held_bytes(default_model(), 128)
    table = run_in_process("estimate", path, "--seq", "128", env={"COLUMNS": "200"})
    assert "KV cache per token" not in table.stdout and "held after 128 tokens" in table.stdout


def test_serve_prices_the_cache_at_p_plus_g_and_finds_the_longest_context_by_its_bound(tmp_path):
    from conftest import run_in_process

    from tfcost.core.memory import kv_cache_ceiling_bytes
    from tfcost.costs import serving

    path = write_config(tmp_path, th.saved_forms("deepseek_v4")["saved"])
    run = run_in_process("serve", path, "--gpu", "h100-sxm", "--gpus", "8", "--prompt", "100", "--generate", "28",
                         "--format", "json")  # fmt: skip
    assert run.code == 0, run.stderr
    served = json.loads(run.stdout)
    memory = served["memory"]
    assert memory["kv_cache_bytes_per_token"] is None and "held after 128 tokens" in memory["kv_cache_note"]
    # The shared key-value head and its compressors are replicated on every GPU: cache and state whole on each.
    assert (memory["kv_cache_bytes_per_gpu"] + memory["state_bytes_per_gpu"], memory["state_bytes_per_gpu"]) == (
        held_bytes(default_model(), 128)
    )
    # The longest context: its bound fits what the weights and state leave, one token more does not.
    shape = shape_of(th.saved_forms("deepseek_v4")["saved"])
    budget = serving.kv_budget_bytes_per_gpu(served["inputs"]["usable_bytes_per_gpu"], memory["weights_bytes_per_gpu"])
    left = budget - memory["state_bytes_per_gpu"]
    longest = served["max_context"]
    assert (
        kv_cache_ceiling_bytes(shape, longest, 1, "bf16")
        <= left
        < kv_cache_ceiling_bytes(shape, longest + 1, 1, "bf16")
    )


def test_the_cache_bound_is_above_the_cache_at_every_shorter_length():
    from tfcost.core.memory import kv_cache_ceiling_bytes

    shape = shape_of(SMALL)
    highest = 0
    for tokens in range(1, 300):
        highest = max(highest, kv_cache_bytes(shape, tokens, 1, "bf16"))
        bound = kv_cache_ceiling_bytes(shape, tokens, 1, "bf16")
        assert highest <= bound <= kv_cache_ceiling_bytes(shape, tokens + 1, 1, "bf16")


def test_check_agrees_with_the_transformers_engine_on_the_cache_held(tmp_path):
    from tfcost.engines import dispatch as engines
    from tfcost.schema import Workload

    report = engines.check(None, write_config(tmp_path, SMALL), Workload(seq_len=30))
    assert [row.quantity for row in report.rows] == [
        "params.total", "flops.forward_per_sequence", "kv_cache.held_bytes",
    ]  # fmt: skip
    assert report.agree
    held = next(row for row in report.rows if row.quantity == "kv_cache.held_bytes")
    assert held.analytic == held_bytes(small_model(), 30)[0]


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ({"o_groups": 3}, "o_groups .* must divide"),
        ({"hc_mult": 0}, "hc_mult"),
        ({"n_shared_experts": 2}, "one shared expert"),
        ({"layer_types": ["full_attention"] * 4}, "full_attention"),
        ({"compress_rates": {"compressed_sparse_attention": 0}}, "positive integer"),
        ({"mlp_layer_types": ["moe"] * 3}, "3 entries for 4 layers"),
    ],
)
def test_a_config_transformers_would_not_build_as_priced_is_refused(edit, says):
    from tfcost.errors import TfcostError

    with pytest.raises(TfcostError, match=says):
        shape_of({**SMALL, **edit})


def test_compare_says_why_the_per_token_cell_is_empty(tmp_path):
    from conftest import run_in_process

    path = write_config(tmp_path, SMALL)
    run = run_in_process("compare", path, "llama-3-8b", "--seq", "30", env={"COLUMNS": "300"})
    assert run.code == 0, run.stderr
    assert ": The KV cache steps every 4 and 8 positions" in run.stdout and "held after 30 tokens" in run.stdout
