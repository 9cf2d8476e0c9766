"""The transformers engine (`--engine`, `tfcost check`): models priced by transformers' own implementation.

The fast tests cross-check the engine against tfcost's analytic core on the reference configs both read (two
independent implementations that must agree to the digit), a Mamba state against its shapes, and the CLI's
choices and errors. The thorough test enumerates every causal-LM model_type of transformers and prices each from
its default config; the ones transformers itself cannot build or run on the meta device are listed with why.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tfcost.errors import TfcostError

WHY = "the transformers engine needs torch and transformers: pip install -e '.[test]'"
pytest.importorskip("torch", reason=WHY)
pytest.importorskip("transformers", reason=WHY)

from conftest import Run, run_in_process  # noqa: E402

from tfcost.engines import hf as engine_hf  # noqa: E402
from tfcost.engines.dispatch import hf_config_for  # noqa: E402
from tfcost.engines.report import check_report  # noqa: E402
from tfcost.readers.presets import config_mapping, load_model, model_from_mapping  # noqa: E402
from tfcost.reports.estimate import estimate  # noqa: E402
from tfcost.schema import Workload  # noqa: E402

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
T = 100  # not a power of two, below every window of the configs used here


def invoke(*args: str) -> Run:
    """main() as the console script runs it: one-line errors, exit codes."""
    return run_in_process(*args)


def cli_json(*args: str) -> dict:
    result = invoke(*args, "--format", "json")
    assert result.code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("name", ["llama-3-8b", "qwen2.5-0.5b", "mistral-7b", "mixtral-8x7b", "gpt2-small"])
def test_engine_equals_the_analytic_core_on_reference_configs(name):
    """A config both engines read: the parameter sum, FlopCounterMode's count and the returned cache equal tfcost's
    formulas, exactly (gpt2-small: a tied head, counted once; mixtral: batched_mm experts)."""
    path = CONFIGS / f"{name}.json"
    shape = model_from_mapping(config_mapping(path), str(path), name)
    totals = engine_hf.measure(json.loads(path.read_text()), T, "bf16")
    analytic = estimate(shape, Workload(seq_len=T))
    assert totals.params_total == analytic.params.total
    assert totals.forward_flops == analytic.flops.forward_per_sequence
    assert totals.kv_bytes_per_token == analytic.kv_cache.bytes_per_token
    assert totals.state_bytes == 0


def test_mamba_state_is_per_sequence_and_matches_its_shapes():
    """Mamba (transformers' default config: 32 layers, d_inner 1536, d_conv 4, d_state 16) keeps per layer a
    convolution window of d_inner x d_conv in the model's dtype and an SSM state of d_inner x d_state, which
    transformers keeps in fp32; nothing grows with T."""
    short, long = (engine_hf.measure({"model_type": "mamba"}, tokens, "bf16") for tokens in (17, 40))
    assert short.kv_bytes_per_token == long.kv_bytes_per_token == 0
    assert short.state_bytes == long.state_bytes == 32 * (1536 * 4 * 2 + 1536 * 16 * 4)
    assert long.forward_flops > short.forward_flops


def test_an_all_recurrent_default_config_agrees_with_the_analytic_reader(tmp_path):
    """Bamba's default config has Mamba-2 layers only, and transformers' causal mask then asks the cache for an
    attention length it does not have: the engine hands the model its masks already made. Both engines agree on
    transformers' full dump of that config, and the state is its shapes': per layer a convolution window over x, B
    and C ((8192 + 2 x 1 group x 256) x 4 taps, bf16) and an SSM state of 128 heads x 64 x 256 in fp32."""
    from transformers import AutoConfig

    path = tmp_path / "config.json"
    path.write_text(json.dumps(AutoConfig.for_model("bamba").to_dict()))  # the full dump
    report = cli_json("check", "--config", str(path), "--seq", "17")
    assert report["agree"] is True, report["rows"]
    rows = {row["quantity"]: row["transformers"] for row in report["rows"]}
    assert rows["kv_cache.bytes_per_token"] == 0
    assert rows["kv_cache.state_bytes"] == 32 * ((8192 + 2 * 256) * 4 * 2 + 128 * 64 * 256 * 4)


def test_a_state_kept_in_the_modules_is_measured():
    """RecurrentGemma returns no cache: its recurrent blocks keep their state as module attributes, and its attention
    cache is internal. The engine hands it a cache and reads the modules: transformers' default config (26 layers,
    recurrent, recurrent, attention, ...) holds per recurrent layer a convolution window of 2560 x 3 in bf16 and an
    RG-LRU state of 2560 in fp32; per token, each attention layer's keys and values (below its 2048 window)."""
    model = engine_hf.build({"model_type": "recurrent_gemma"})
    totals = engine_hf.measure_model(model, "recurrent_gemma", 17, "bf16")
    recurrent, attention = 18, 8
    kv_width = model.model.layers[2].temporal_block.k_proj.out_features
    assert totals.state_bytes == recurrent * (2560 * 3 * 2 + 2560 * 4)
    assert totals.kv_bytes_per_token == attention * 2 * kv_width * 2


def test_a_model_with_fp32_weights_in_bf16_runs_in_fp32():
    """XLNet makes its attention weights with torch.FloatTensor (fp32 on the CPU, whatever was asked): the engine
    runs it in fp32 on the meta device, and counts its memory (`mems`, a hidden state per layer and token) at bf16."""
    totals = engine_hf.measure({"model_type": "xlnet"}, 17, "bf16")
    assert totals.kv_bytes_per_token == 24 * 1024 * 2  # 24 layers of d_model 1024


def test_a_small_model_the_meta_device_cannot_run_is_run_on_the_cpu():
    """XLM checks its sequence lengths' values: run on the CPU with random weights, FlopCounterMode counts its
    matmuls, 2 x T x (4 d^2 attention + 8 d^2 MLP) per layer, the 2 x 2 T^2 d of scores, and the 2 T d V head."""
    config = {"model_type": "xlm", "emb_dim": 64, "n_layers": 2, "n_heads": 4, "vocab_size": 100}
    totals = engine_hf.measure(config, 16, "bf16")
    t, d, layers, vocab = 16, 64, 2, 100
    assert totals.forward_flops == 2 * t * layers * 12 * d * d + layers * 2 * 2 * t * t * d + 2 * t * d * vocab


def test_a_cpu_run_whose_flops_follow_the_routing_is_refused():
    """LongCat-Flash routes tokens to zero-computation experts as well as to real ones: a run with random weights
    routes otherwise than the trained model would, so its count is refused rather than reported."""
    config = {
        "model_type": "longcat_flash", "vocab_size": 100, "hidden_size": 64, "num_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 4, "ffn_hidden_size": 128, "q_lora_rank": 32, "kv_lora_rank": 16,
        "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "head_dim": 8, "v_head_dim": 16, "moe_topk": 2,
        "n_routed_experts": 8, "zero_expert_num": 4, "expert_ffn_hidden_size": 32,
    }  # fmt: skip
    with pytest.raises(TfcostError, match="depend on the values it computes"):
        engine_hf.measure(config, 32, "bf16")


def test_check_llama_3_8b_agrees_on_every_quantity():
    report = cli_json("check", "llama-3-8b")
    assert report["agree"] is True
    rows = {row["quantity"]: row for row in report["rows"]}
    assert rows["params.total"]["transformers"] == 8_030_261_248  # Meta's published count
    assert all(row["difference"] == 0 and row["analytic"] == row["transformers"] for row in rows.values())
    assert set(rows) == {
        "params.total",
        "flops.forward_per_sequence",
        "kv_cache.bytes_per_token",
        "kv_cache.bytes",
        "kv_cache.state_bytes",
    }
    table = invoke("check", "llama-3-8b")
    assert table.code == 0 and "agree on every quantity" in table.stdout


def test_check_a_hybrid_preset_agrees_on_every_quantity():
    """nemotron-h-8b, built by transformers from the config.json the preset was read from (shipped beside it): 24
    Mamba-2 layers hold a state, the 4 attention layers alone a per-token cache."""
    report = cli_json("check", "nemotron-h-8b", "--seq", "100")
    assert report["agree"] is True
    rows = {row["quantity"]: row["transformers"] for row in report["rows"]}
    assert all(row["difference"] == 0 for row in report["rows"])
    assert rows["params.total"] == 8_100_852_736
    assert rows["kv_cache.bytes_per_token"] == 4 * 2 * 8 * 128 * 2  # 4 layers, K and V, 8 heads of 128, bf16
    # Per Mamba-2 layer: a convolution window over x, B and C (8192 + 2 x 8 groups x 128) x 4 taps in bf16, and an
    # SSM state of 128 heads x 64 x 128 that transformers keeps in fp32.
    assert rows["kv_cache.state_bytes"] == 24 * ((8192 + 2 * 8 * 128) * 4 * 2 + 128 * 64 * 128 * 4)


def test_shipped_configs_are_the_fixtures_their_presets_were_read_from():
    """presets/hf_configs/NAME.json is what `tfcost check NAME` builds, only for a shipped preset, and the very file
    the tests read the preset's family from: tests/data/hf_configs/NAME.json (sources in its SOURCES.md) is a link
    to it, so there is one copy."""
    from tfcost.readers.presets import model_preset_paths, presets_dir

    shipped = sorted((presets_dir() / "hf_configs").glob("*.json"))
    assert len(shipped) == 54
    for path in shipped:
        assert path.stem in model_preset_paths()
        assert (CONFIGS / path.name).resolve() == path.resolve()


def test_check_exits_1_when_the_engines_differ(monkeypatch):
    from tfcost.engines import dispatch as engines

    real = engines.transformers_estimate

    def one_parameter_more(*args, **kwargs):
        result = real(*args, **kwargs)
        return result.model_copy(update={"params": result.params.model_copy(update={"total": result.params.total + 1})})

    monkeypatch.setattr(engines, "transformers_estimate", one_parameter_more)
    result = invoke("check", "gpt2-small", "--seq", "16")
    assert result.code == 1
    assert "DIFFER" in result.stdout and "+1 " in result.stdout


def test_check_report_difference_is_transformers_minus_tfcost():
    shape = load_model("gpt2-small")
    analytic = estimate(shape, Workload(seq_len=8))
    engine = estimate(shape, Workload(seq_len=8)).model_copy()  # the same numbers: no difference
    assert check_report(analytic, engine).agree  # type: ignore[arg-type]


@pytest.mark.usefixtures("gptj_unread")
def test_presets_map_onto_transformers_configs():
    """The one translation of a preset's shape into a transformers config.json."""
    assert hf_config_for(load_model("llama-3-8b"))["model_type"] == "llama"
    assert hf_config_for(load_model("qwen2.5-7b"))["model_type"] == "qwen2"
    assert hf_config_for(load_model("mistral-7b"))["sliding_window"] == 4096
    assert hf_config_for(load_model("bloom-176b"))["model_type"] == "bloom"
    assert hf_config_for(load_model("gpt3-175b"))["model_type"] == "gpt2"
    with pytest.raises(TfcostError, match="no transformers config"):
        hf_config_for(load_model("t5-small"))


GPTJ = {  # a model_type tfcost has no reader for while the gptj_unread fixture hides GPT-J's (conftest.py)
    "model_type": "gptj", "vocab_size": 1000, "n_embd": 64, "n_layer": 2, "n_head": 4, "rotary_dim": 8,
    "n_positions": 256, "bos_token_id": 0, "eos_token_id": 0,
}  # fmt: skip


@pytest.mark.usefixtures("gptj_unread")
def test_auto_answers_an_unread_model_type_with_transformers(tmp_path):
    path = tmp_path / "gptj.json"
    path.write_text(json.dumps(GPTJ))
    result = cli_json("estimate", "--config", str(path), "--seq", "32", "--batch", "3")
    assert result["engine"] == "transformers"
    # GPT-J: a LayerNorm, bias-free q/k/v/o and a 4d plain MLP with biases in each block; an untied head with a
    # bias (Wang & Komatsuzaki 2021, mesh-transformer-jax).
    d, v, layers = 64, 1000, 2
    block = 2 * d + 4 * d * d + 8 * d * d + 5 * d
    assert result["params"]["total"] == v * d + layers * block + 2 * d + d * v + v
    assert result["kv_cache"] == {"bytes_per_token": 2 * layers * d * 2, "state_bytes": 0, "bytes": 3 * 32 * 512}
    table = " ".join(invoke("estimate", "--config", str(path)).stdout.split())
    assert "engine: transformers" in table and "train and serve use these totals" in table
    assert cli_json("estimate", "--config", str(CONFIGS / "llama-3.2-1b.json"))["engine"] == "analytic"
    assert invoke("estimate", "--config", str(path), "--engine", "analytic").code == 1


def test_engine_transformers_on_a_preset_gives_the_analytic_numbers():
    engine = cli_json("estimate", "llama-3.2-1b", "--engine", "transformers", "--seq", "64")
    analytic = cli_json("estimate", "llama-3.2-1b", "--seq", "64")
    assert (engine["engine"], analytic["engine"]) == ("transformers", "analytic")
    for section, key in [("params", "total"), ("flops", "forward_per_sequence"), ("kv_cache", "bytes")]:
        assert engine[section][key] == analytic[section][key]
    compared = cli_json("compare", "llama-3.2-1b", "gpt2-small", "--engine", "transformers", "--seq", "64")
    assert [column["engine"] for column in compared["results"]] == ["transformers", "transformers"]


@pytest.mark.usefixtures("gptj_unread")
def test_without_the_extra_the_error_says_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers now raises ImportError
    path = tmp_path / "gptj.json"
    path.write_text(json.dumps(GPTJ))
    result = invoke("estimate", "--config", str(path))
    assert result.code == 1
    assert "pip install 'tfcost[hf]'" in result.stderr


def gptj_path(tmp_path: Path, **changes: object) -> str:
    path = tmp_path / "gptj.json"
    path.write_text(json.dumps(GPTJ | changes))
    return str(path)


@pytest.mark.parametrize("command", ["train", "serve"])
@pytest.mark.usefixtures("gptj_unread")
def test_train_and_serve_price_a_model_only_transformers_reads(tmp_path, command):
    """A model_type tfcost has no reader for: train and serve run on the engine's totals, and say so."""
    path = gptj_path(tmp_path)
    result = cli_json(command, path, "--seq" if command == "train" else "--prompt", "64")
    assert result["engine"] == "transformers"
    assert result["inputs"]["parameters"] == cli_json("estimate", path)["params"]["total"]
    table = invoke(command, path, "--seq" if command == "train" else "--prompt", "64")
    assert table.code == 0
    assert "engine: transformers" in table.stdout


@pytest.mark.parametrize("name", ["llama-3.2-1b", "qwen2.5-0.5b", "gemma-3-1b"])
def test_serve_by_the_engine_equals_the_analytic_bound(name):
    """The engine's serve (its totals at P and P + 1, FLOPs taken as a*T + b*T^2) against tfcost's own serve of the
    same config: memory, capacity and every number of the roofline bound, to the digit."""
    path = str(CONFIGS / f"{name}.json")
    workload = ("-B", "4", "-P", "300", "-G", "100", "--weights-dtype", "int4")
    engine = cli_json("serve", path, *workload, "--engine", "transformers")
    analytic = cli_json("serve", path, *workload, "--engine", "analytic")
    assert engine["engine"] == "transformers"
    assert engine["latency"] == analytic["latency"]
    for key, value in engine["memory"].items():
        assert value == analytic["memory"][key], key
    assert (engine["max_batch"], engine["max_context"]) == (analytic["max_batch"], analytic["max_context"])


@pytest.mark.parametrize("name", ["nemotron-h-8b", "qwen3-next-80b-a3b", "mamba-130m"])
def test_serve_by_the_engine_holds_state_as_the_analytic_serve_does(name):
    """Hybrid and recurrent configs: the engine's weights, KV cache, state, largest batch and longest context equal
    the analytic serve's. Their FLOPs are near, not on, a*T + b*T^2: transformers' torch path runs Mamba-2's scan in
    chunks and its linear attention in blocks, whose count at P and P + 1 does not split into per-token and
    per-score parts. At P = 300 the engine's prefill is 1.03x (nemotron-h-8b), 1.02x (qwen3-next) and 1.00001x
    (mamba-130m) the analytic count, its decode step 1.011x, 1.001x and 1.00001x: never below it."""
    path = str(CONFIGS / f"{name}.json")
    workload = ("-B", "4", "-P", "300", "-G", "100")
    engine = cli_json("serve", path, *workload, "--engine", "transformers")
    analytic = cli_json("serve", path, *workload, "--engine", "analytic")
    for key, value in engine["memory"].items():
        assert value == analytic["memory"][key], key
    assert (engine["max_batch"], engine["max_context"]) == (analytic["max_batch"], analytic["max_context"])
    for key in ("prefill_flops_per_gpu", "decode_flops_per_gpu"):
        assert 1 <= engine["latency"][key] / analytic["latency"][key] < 1.05, key


@pytest.mark.parametrize("zero", ["2", "3"])
def test_train_by_the_engine_equals_the_analytic_compute_and_states(zero):
    """The engine's train against tfcost's own at the same MFU: FLOPs, time and ZeRO's model states, exactly (at
    ZeRO-3 with the two gathered layers, the engine's largest layer found as its stack's)."""
    path = str(CONFIGS / "llama-3.2-1b.json")
    run = ("--seq", "256", "--tokens", "1000000000", "--gpus", "8", "--zero", zero, "--mfu", "0.4")
    engine = cli_json("train", path, *run, "--engine", "transformers")
    analytic = cli_json("train", path, *run, "--engine", "analytic")
    assert engine["flops"]["total"] == analytic["flops"]["total"]
    assert engine["time"]["days"] == analytic["time"]["days"]
    for key in ("weights_bytes", "gradients_bytes", "optimizer_bytes"):
        assert engine["memory_per_gpu"][key] == analytic["memory_per_gpu"][key]


@pytest.mark.parametrize("command", ["train", "serve"])
@pytest.mark.usefixtures("gptj_unread")
def test_every_working_line_of_the_engine_equals_its_result(tmp_path, command):
    """--explain on the engine's train and serve: each line's working, evaluated, is the number it reports, and the
    lines name the figures the report prints."""
    from test_explain import check

    from tfcost.reports.explain import Line

    args = ("--seq", "96", "--gpus", "4", "--zero", "1") if command == "train" else ("-P", "96", "-B", "3")
    result = cli_json(command, gptj_path(tmp_path), *args, "--explain")
    lines = [Line(**line) for line in result["explain"]]
    check(lines)
    by_quantity = {line.quantity: line.value for line in lines}
    if command == "train":
        assert by_quantity["model FLOPs"] == result["flops"]["total"]
        assert by_quantity["total per GPU"] == result["memory_per_gpu"]["total_bytes"]
    else:
        assert by_quantity["prefill FLOPs"] == result["latency"]["prefill_flops_per_gpu"]
        assert by_quantity["decode step FLOPs"] == result["latency"]["decode_flops_per_gpu"]
    assert "Working (--explain):" in invoke(command, gptj_path(tmp_path), *args, "--explain").stdout


def test_saved_activations_on_meta_are_what_a_real_forward_saves():
    """The bytes autograd keeps, measured on the meta device, equal those of a real forward on the CPU; the T x T
    part left out under --flash is Llama's eager attention: the fp32 softmax and its bf16 copy, 6 bytes an entry."""
    torch = pytest.importorskip("torch")
    config = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256}  # fmt: skip
    meta = engine_hf.training_activation_bytes(config, 48, 3)
    torch.manual_seed(0)
    cpu = engine_hf.saved_bytes(engine_hf.build_from(engine_hf.hf_config(config), "cpu"), 48, 3, require_meta=False)
    assert meta == cpu
    assert meta.scores == 2 * 3 * 4 * 48 * 48 * (4 + 2)


@pytest.mark.usefixtures("gptj_unread")
def test_engine_train_and_serve_refuse_what_needs_the_reader(tmp_path):
    path = gptj_path(tmp_path)
    tp = invoke("train", path, "--tp", "2", "--gpus", "2")
    assert tp.code == 2
    assert "--tp" in tp.stderr and "own reader" in tp.stderr
    assert "--kv-block" in invoke("serve", path, "--framework-set", "kv_block=32").stderr
    assert invoke("serve", path, "--gpus", "2").code == 2
    quantized = gptj_path(tmp_path, quantization_config={"quant_method": "gptq", "bits": 4})
    assert "--weights-dtype" in invoke("serve", quantized).stderr


def test_a_model_type_nobody_knows_is_one_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "no_such\u001b[31mmodel"}))
    result = invoke("estimate", str(path))
    assert result.code == 1
    assert result.stderr.startswith("tfcost: error: unsupported model_type 'no_such\\x1b[31mmodel': neither tfcost")
    assert "\x1b" not in result.stderr  # the file's escape sequence is shown, not sent to the terminal


@pytest.mark.usefixtures("gptj_unread")
def test_engine_refuses_what_it_cannot_count(tmp_path):
    assert invoke("estimate", "llama-3.2-1b", "--engine", "transformers", "--causal").code == 2
    path = tmp_path / "gptj.json"
    path.write_text(json.dumps(GPTJ))
    assert "edit the config.json" in invoke("estimate", str(path), "--set", "n_layers=1").stderr


def test_set_on_a_preset_reaches_the_transformers_engine():
    """--set changes the preset's shape, which then goes to transformers: both engines see the same model."""
    engine = cli_json("estimate", "llama-3.2-1b", "--engine", "transformers", "--set", "n_layers=2", "--seq", "8")
    analytic = cli_json("estimate", "llama-3.2-1b", "--set", "n_layers=2", "--seq", "8")
    assert engine["params"]["total"] == analytic["params"]["total"] == 384_313_344


# ---------------------------------------------------------------------------------------------------------------
# Every causal-LM model_type of transformers, from its default config.

# What transformers itself cannot do with its default config, on the meta device, and why.
CANNOT = {
    # The default config does not build a model (a field its own code needs is left None, or missing).
    "cohere_compass_text": "'full_attention'",
    "dbrx": "has no attribute 'rope_theta'",
    "dots1": "empty() takes 1 positional argument",  # n_routed_experts defaults to None
    "gemma4_assistant": "Class validation error",
    "hunyuan_v1_dense": "unsupported operand type(s) for ** or pow()",
    "hunyuan_v1_moe": "unsupported operand type(s) for ** or pow()",
    "lfm2_moe": "'NoneType' object is not subscriptable",
    "ministral": "unsupported operand type(s) for ** or pow()",
    "musicgen": "has no attribute 'dropout'",
    "musicgen_melody": "has no attribute 'dropout'",
    "nemotron": "unsupported operand type(s) for //",
    "qwen4_exp": "unsupported operand type(s) for //",
    "qwen4_exp_text": "unsupported operand type(s) for //",
    "reformer": "make sure that `is_decoder=True`",
    # The default config builds, and its forward pass then fails in transformers' own code.
    "blt": "has no attribute 'num_hidden_layers'",  # its cache asks the config for a field it does not have
    "deepseek_v2": "argument 'k' must be int, not NoneType",  # num_experts_per_tok defaults to None
    # A dependency transformers needs for this model, not one of its own.
    "gemma3n": "requires the timm library",
    # Needs inputs besides token ids (the shared KV states of the model it assists).
    "gemma4_unified_assistant": "shared_kv_states cannot be None",
    # Routing on the values of tensors, which the meta device does not have, in a model too large to run on the CPU
    # (engine_hf.cpu_run_fits): LongCat-Flash's 741B, whose zero-computation experts also make its FLOPs depend on
    # the routing itself.
    "longcat_flash": "aten.nonzero",
}


# Default configs that route on tensor values, so the engine runs them on the CPU (engine_hf.fallback), with their
# parameter counts: JetMoE's 4.3B splits tokens by expert counts, and takes about 35 s on 2 cores.
RUN_ON_CPU = {"jetmoe": 4_293_888_000}


# Caches that grow in steps rather than by a fixed amount per token: the engine's bytes at T are still the cache the
# model returns, but the split into per-token and fixed parts holds only near that T.
STEPPED = {"deepseek_v4": "compresses its keys and values every few tokens"}


# Default configs that price but whose training forward the meta device cannot run: `train` says so in one line.
# JetMoE, XLM and X-MOD read tensor values (their pricing forward runs on the CPU; a training forward there would hold
# every activation for real); XLNet makes fp32 weights on the CPU whatever the device; GIT's loss shifts its labels
# by the image tokens it was not given.
CANNOT_TRAIN = {
    "git": "Expected input batch_size (0)",
    "jetmoe": "aten._local_scalar_dense",
    "xlm": "aten._local_scalar_dense",
    "xlnet": "measured on the meta device",
    "xmod": "aten.nonzero",
}


def causal_lm_types() -> list[str]:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def test_the_enumeration_covers_transformers_5_24():
    import transformers

    if transformers.__version__ != "5.24.0":
        pytest.skip(f"the list of model types and failures is transformers 5.24.0's, not {transformers.__version__}")
    assert len(causal_lm_types()) == 196
    assert set(CANNOT) <= set(causal_lm_types())
    assert len(CANNOT) <= 196 - 177  # 177 price exactly (90.3%); see the failures' reasons above
    assert set(CANNOT_TRAIN) <= set(causal_lm_types()) - set(CANNOT)  # 172 of them train through the engine


@pytest.mark.thorough
@pytest.mark.parametrize("model_type", causal_lm_types())
def test_every_causal_lm_type_prices_from_its_default_config(model_type):
    """Priced at two T: transformers' own parameter count agrees with the engine's sum, FLOPs grow with T, and the
    cache at the second T is exactly the first's per-token part times T plus its state."""
    data = {"model_type": model_type}
    if model_type in RUN_ON_CPU and not engine_hf.cpu_run_fits(RUN_ON_CPU[model_type]):
        pytest.skip(f"{model_type} runs on the CPU, and its {RUN_ON_CPU[model_type]:,} bf16 weights do not fit here")
    if model_type in CANNOT:
        with pytest.raises(TfcostError) as failure:
            engine_hf.measure(data, 17, "bf16")
        assert CANNOT[model_type] in str(failure.value)
        return
    model = engine_hf.build(data)  # once: a default config can be a 100B-parameter model, slow to lay out
    first, second = (engine_hf.measure_model(model, model_type, tokens, "bf16") for tokens in (17, 29))
    assert first.params_total == second.params_total == model.num_parameters()
    assert 0 < first.forward_flops < second.forward_flops
    if model_type not in STEPPED:
        assert first.kv_bytes_per_token >= 0 and first.state_bytes >= 0
        assert second.kv_bytes_per_token * 29 + second.state_bytes == first.kv_bytes_per_token * 29 + first.state_bytes
    if model_type in CANNOT_TRAIN:  # `train` through the engine: what autograd saves in a training forward
        with pytest.raises(TfcostError) as failure:
            engine_hf.training_activation_bytes(data, 17, 1)
        assert CANNOT_TRAIN[model_type] in str(failure.value)
    else:
        saved = engine_hf.training_activation_bytes(data, 17, 1)
        assert 0 <= saved.scores < saved.total


# ---------------------------------------------------------------------------------------------------------------
# Every shipped preset against transformers' implementation of the config it was read from.

# Presets transformers runs differently from how the model is served: the difference is asserted, not ignored.
# Llama4TextMoe runs every token through all E experts, scaling the unrouted ones by a router score of 0
# (modeling_llama4.py: "routed_in = hidden_states.repeat(...)"); tfcost counts the top-1 routed expert. The extra
# count is (E - 1) gated expert MLPs (3 matrices of d x F_e = 5120 x 8192) per token, in each MoE layer (the
# published configs: Scout 16 experts in all 48 layers, Maverick 128 experts in every second layer).
KNOWN_DIFFERENCES = {"llama-4-scout": (16, 48), "llama-4-maverick": (128, 24)}  # (experts, MoE layers)
# Presets the engine cannot build: it builds causal LMs (AutoModelForCausalLM) only.
NOT_CHECKED = {"t5-small": "an encoder-decoder"}


def all_presets() -> list[str]:
    from tfcost.readers.presets import model_preset_paths

    return list(model_preset_paths())


@pytest.mark.thorough
@pytest.mark.parametrize("name", all_presets())
def test_every_preset_agrees_with_transformers(name):
    """`tfcost check NAME` on every shipped preset: the same parameters, forward FLOPs, KV cache and state."""
    from tfcost.engines.dispatch import check

    if name in NOT_CHECKED:
        with pytest.raises(TfcostError, match="cannot build"):
            check(name, None, Workload(seq_len=T))
        return
    report = check(name, None, Workload(seq_len=T))
    differences = {row.quantity: row.difference for row in report.rows if row.difference}
    if name not in KNOWN_DIFFERENCES:
        assert report.agree, differences
        return
    experts, moe_layers = KNOWN_DIFFERENCES[name]
    extra = (experts - 1) * 3 * 2 * 5120 * 8192 * T * moe_layers
    assert differences == {"flops.forward_per_sequence": extra}


@pytest.mark.parametrize(("model", "window"), [("mistral-7b", 4096), ("gpt-oss-20b", 128)])
def test_check_agrees_with_its_own_sliding_window_presets_past_the_window(model, window):
    """transformers 5.24 keeps W - 1 keys per sliding layer between steps (cache_utils.DynamicSlidingWindowLayer:
    "Only cache the last `self.sliding_window - 1` tokens"), its mask letting each query see W, itself included
    (masking_utils.sliding_window_overlay). tfcost's cache counts the W a step reads; check compares the bytes held
    between steps from T = W - 1 on, where the engine's growth from T to T + 1 no longer is a per-token figure."""
    from tfcost.core import memory

    shape = load_model(model)
    for seq in (window - 2, window - 1, window, 8192):
        report = cli_json("check", model, "--seq", str(seq))
        rows = {row["quantity"]: row for row in report["rows"]}
        assert report["agree"] is True, (seq, rows)
        if seq < window - 1:
            assert "kv_cache.bytes_per_token" in rows and "kv_cache.held_bytes" not in rows
            continue
        held = rows["kv_cache.held_bytes"]["transformers"]
        assert held == memory.kv_cache_held_between_steps_bytes(shape, seq, 1, "bf16")
        # From T = W on, W - 1 positions in each sliding layer where kv_cache_bytes counts W: one K and V less each.
        sliding = len(shape.sliding_layers) if shape.sliding_layers else shape.n_layers  # mistral: every layer
        per_layer_position = 2 * shape.n_kv_heads * shape.head_dim * 2
        fewer = sliding * per_layer_position if seq >= window else 0
        assert memory.kv_cache_bytes(shape, seq, 1, "bf16") - held == fewer
