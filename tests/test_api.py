"""The Python API (tfcost/api.py): each call returns the report its command prints as JSON, and `import tfcost`
loads nothing but the package itself.

`tfcost.plan_train` and `tfcost.plan_serve` are tested with the search they call, in tests/test_plan.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CHILD_LIMIT_S

import tfcost as tfc  # the package (`tfcost` is the CLI fixture's name)
from tfcost.errors import TfcostError, UsageError

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
PHI3 = str(CONFIGS / "hub-files" / "Phi-3-mini-4k-instruct.json")  # a config with a key tfcost ignores
GEMMA3 = str(CONFIGS / "gemma-3-4b.json")  # a multimodal config: its vision tower priced

# (command line, API call): the same question asked both ways.
SAME_QUESTION = [
    ("estimate llama-3-8b -T 8192 -B 4", lambda: tfc.estimate("llama-3-8b", seq=8192, batch=4)),
    (
        "estimate mistral-7b --causal --dtype fp8 --gpu h100-sxm --explain -T 16384",
        lambda: tfc.estimate("mistral-7b", causal=True, dtype="fp8", gpu="h100-sxm", explain=True, seq=16384),
    ),
    (
        "estimate gpt2-small --set n_kv_heads=4 --set tied_embeddings=false",
        lambda: tfc.estimate("gpt2-small", overrides={"n_kv_heads": 4, "tied_embeddings": False}),
    ),
    (f"estimate --config {PHI3} -T 2048", lambda: tfc.estimate(config=PHI3, seq=2048)),
    ("train llama-3-8b --gpus 64 --gpu h100-sxm --zero 1", lambda: tfc.train("llama-3-8b", gpus=64, zero=1)),
    (
        "train qwen2.5-7b --tokens 1.4T --seq 2048 --gpus 32 --tp 4 --pp 2 --zero 3 --sequence-parallel "
        "--recompute selective --optimizer adamw-8bit --framework-set flash=false --price-per-gpu-hour 2.5 --mfu 0.35 "
        "--explain",
        lambda: tfc.train(
            "qwen2.5-7b",
            tokens="1.4T",
            seq=2048,
            gpus=32,
            tp=4,
            pp=2,
            zero=3,
            sequence_parallel=True,
            recompute="selective",
            optimizer="adamw-8bit",
            framework_set={"flash": False},
            price_per_gpu_hour=2.5,
            mfu=0.35,
            explain=True,
        ),
    ),
    (
        "train llama-3-8b --lora 16 --lora-targets q,v,down --qlora --tokens 100M",
        lambda: tfc.train("llama-3-8b", lora_rank=16, lora_targets=["q", "v", "down"], qlora=True, tokens=10**8),
    ),
    (
        "serve llama-3-8b --gpu h100-sxm --batch 32 --prompt 2048 --generate 512",
        lambda: tfc.serve("llama-3-8b", gpu="h100-sxm", batch=32, prompt=2048, generate=512),
    ),
    (
        f"serve {GEMMA3} --gpus 2 --weights-dtype int4 --kv-dtype fp8 --gpu a100-80gb --explain",
        lambda: tfc.serve(GEMMA3, gpus=2, weights_dtype="int4", kv_dtype="fp8", gpu="a100-80gb", explain=True),
    ),
]


@pytest.mark.parametrize(("command", "call"), SAME_QUESTION, ids=[c[:40] for c, _ in SAME_QUESTION])
def test_each_call_returns_the_report_its_command_prints_as_json(command, call, tfcost):
    run = tfcost(*command.split(), "--format", "json")
    assert run.code == 0, run.stderr
    printed = json.loads(run.stdout)
    assert printed.pop("tfcost_version") == tfcost_version()
    report = call()
    assert report.model_dump(mode="json") == printed
    assert type(report).__module__.startswith("tfcost.")  # a typed report, not a dict


def tfcost_version() -> str:
    return tfc.__version__


def test_the_reports_carry_what_the_command_says_on_stderr(tfcost, tmp_path):
    """The notes the CLI writes to stderr are the report's own fields, so a notebook sees them too."""
    assert tfc.estimate(config=PHI3).ignored_fields == ["attention_bias"]
    run = tfcost("estimate", "--config", PHI3)
    assert "note: Phi-3-mini-4k-instruct: ignored config fields" in run.stderr and "attention_bias" in run.stderr
    # Gemma 3's vision tower is priced; an audio tower beside it (no reader for it) is named as not priced.
    config = json.loads(Path(GEMMA3).read_text(encoding="utf-8"))
    with_audio = tmp_path / "config.json"
    with_audio.write_text(json.dumps({**config, "audio_config": {"model_type": "gemma3n_audio"}}), encoding="utf-8")
    assert tfc.serve(GEMMA3).not_priced == []
    assert tfc.serve(str(with_audio)).not_priced == ["audio tower (gemma3n_audio)"]
    assert "audio tower (gemma3n_audio)" in tfcost("serve", str(with_audio)).stderr


def test_the_figures_are_the_models_own():
    """Llama 3 8B's published config (32 layers, 8 KV heads of 128): its KV cache at T = 8,192, B = 4, bf16 is
    2 (K and V) x 32 x 8 x 128 x 8,192 x 4 x 2 bytes, and its parameter count the checkpoint's 8,030,261,248."""
    report = tfc.estimate("llama-3-8b", seq=8192, batch=4)
    assert report.kv_cache.bytes == 2 * 32 * 8 * 128 * 8192 * 4 * 2 == 4_294_967_296
    assert report.params.total == 8_030_261_248
    trained = tfc.train("llama-3-8b", tokens="15T", gpus=64, zero=1)
    # 6ND with Kaplan's N: the checkpoint's count less the token table and head, 2 x 128,256 x 4,096
    six_nd = 6 * (8_030_261_248 - 2 * 128_256 * 4_096) * 15 * 10**12
    assert trained.setup.tokens == 15 * 10**12 and trained.flops.six_nd == six_nd


def test_an_estimate_without_its_crossovers_is_the_same_report_less_that_key():
    """compare's table and CSV print no crossovers, so compare leaves them out (issue 25: a third of pricing a
    preset); the report is otherwise the whole one, and the JSON, which carries them, asks for them."""
    whole = tfc.estimate("deepseek-v3", seq=8192, batch=4, gpu="h100-sxm")
    without = tfc.estimate("deepseek-v3", seq=8192, batch=4, gpu="h100-sxm", crossovers=False)
    assert whole.crossovers and without.crossovers is None
    dumped = whole.model_dump(mode="json")
    assert [c["name"] for c in dumped.pop("crossovers")] == [c.name for c in whole.crossovers]
    assert without.model_dump(mode="json") == dumped  # no "crossovers" key at all, every other field the same


def test_overrides_as_a_mapping_or_as_the_commands_texts_are_the_same():
    as_texts = tfc.estimate("llama-3-8b", overrides=["n_kv_heads=32", "bias.qkv=true"])
    as_mapping = tfc.estimate("llama-3-8b", overrides={"n_kv_heads": 32, "bias": {"qkv": True}})
    nested = tfc.estimate("llama-3-8b", overrides={"n_kv_heads": 32, "bias.qkv": True})
    assert as_mapping.params == nested.params == as_texts.params
    assert as_texts.kv_cache.bytes == 4 * tfc.estimate("llama-3-8b").kv_cache.bytes  # 32 KV heads, not 8


def test_none_is_the_commands_default():
    assert tfc.train("llama-3-8b", micro_batch=None, zero=None, seq=None) == tfc.train("llama-3-8b")
    assert tfc.serve("llama-3-8b", batch=None, weights_dtype=None) == tfc.serve("llama-3-8b")
    assert tfc.estimate("llama-3-8b", seq=None, causal=None) == tfc.estimate("llama-3-8b")
    assert tfc.estimate("llama-3-8b").workload.seq_len == 1024  # Workload's default, as `tfcost estimate` has it


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: tfc.estimate("no-such-model"), TfcostError, "unknown preset 'no-such-model'"),
        (lambda: tfc.estimate("llama-3-8b", seq=0), UsageError, "--seq"),
        (lambda: tfc.train("llama-3-8b", micro_batch=0), UsageError, "--micro-batch"),
        (lambda: tfc.train("llama-3-8b", zero=4), UsageError, "--zero"),
        (lambda: tfc.train("llama-3-8b", tokens="lots"), UsageError, "tokens"),
        (lambda: tfc.train("llama-3-8b", no_such_option=1), UsageError, "unknown key '--no-such-option'"),
        (lambda: tfc.serve("llama-3-8b", gpu="no-such-gpu"), TfcostError, "no-such-gpu"),
        (lambda: tfc.serve("llama-3-8b", reserve=1.0), UsageError, "--reserve"),
        (lambda: tfc.estimate("llama-3-8b", overrides={"n_kv_heads": object()}), UsageError, "overrides"),
    ],
)
def test_bad_input_raises_the_commands_one_line(call, error, message):
    with pytest.raises(error) as raised:
        call()
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_the_package_offers_the_api_and_nothing_unknown():
    assert {"estimate", "train", "serve", "plan_train", "plan_serve"} <= set(dir(tfc))
    assert tfc.estimate is tfc.api.estimate
    with pytest.raises(AttributeError, match="no_such_thing"):
        _ = tfc.no_such_thing


def loaded_after(code: str) -> list[str]:
    """The heavy or CLI modules a fresh interpreter holds after running `code`."""
    probe = (
        f"import sys\n{code}\n"
        "print([m for m in ('rich', 'typer', 'click', 'torch', 'transformers', 'numpy', 'huggingface_hub', "
        "'pydantic', 'yaml', 'tfcost.api', 'tfcost.cli') if m in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=CHILD_LIMIT_S
    )
    return json.loads(done.stdout.replace("'", '"'))


def test_import_tfcost_loads_nothing_else():
    assert loaded_after("import tfcost") == []
    assert loaded_after("import tfcost.api") == ["tfcost.api"]  # its imports are made by the calls


def test_a_call_loads_no_cli_and_no_rendering():
    calls = "tfcost.serve('llama-3-8b'); tfcost.train('llama-3-8b'); tfcost.estimate('gpt2-small')"
    loaded = loaded_after(f"import tfcost\n{calls}")
    assert not {"rich", "typer", "click", "torch", "transformers", "tfcost.cli"} & set(loaded)
    assert "pydantic" in loaded  # the probe sees what the calls load
