"""Size gates of the transformers engine, before anything is built or allocated: a config past the build budget
(layers x width) or with no vocabulary is refused in one line; a model that must run on the CPU (its control flow
reads values the meta device lacks) is run there only up to a T whose activations stay small, and the refusal names
the real cause."""

from __future__ import annotations

import json

import pytest
from conftest import run_in_process

pytest.importorskip("transformers", reason="the transformers engine needs tfcost[hf]")

from tfcost.engines import hf as engine_hf

LLAMA = {"model_type": "llama", "vocab_size": 100, "hidden_size": 64, "intermediate_size": 128,
         "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 8192}  # fmt: skip
# XLM reads its sequence lengths' values: the meta device cannot run it, so the engine runs it on the CPU.
XLM = {"model_type": "xlm", "vocab_size": 100, "emb_dim": 32, "n_layers": 2, "n_heads": 2,
       "max_position_embeddings": 8192}  # fmt: skip


def engine(tmp_path, config: dict, *args: str, command: str = "estimate"):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    chosen = () if command == "check" else ("--engine", "transformers")  # check always runs both
    return run_in_process(command, "--config", str(path), *chosen, *args)


def one_line(run) -> str:
    assert run.code == 1 and run.stdout == "" and run.stderr.count("\n") == 1, run.stderr
    assert "internal error" not in run.stderr
    return run.stderr


@pytest.mark.parametrize(("change", "words"), [
    ({"num_hidden_layers": 100_000}, "100,000 layers"),
    ({"num_hidden_layers": 2000, "hidden_size": 64}, "2,000 layers"),
    ({"num_hidden_layers": 1024, "hidden_size": 1 << 17, "num_attention_heads": 4}, "past what the engine builds"),
    ({"hidden_size": 1 << 21, "num_attention_heads": 4}, "width 2,097,152"),
])  # fmt: skip
@pytest.mark.parametrize("command", ["estimate", "train", "check"])
def test_a_config_past_the_build_budget_is_refused_before_building(tmp_path, change, words, command, monkeypatch):
    built = []
    monkeypatch.setattr(engine_hf, "build_from", lambda *args: built.append(args))
    args = ("--tokens", "1e9") if command == "train" else ()
    run = engine(tmp_path, {**LLAMA, **change}, *args, command=command)
    assert words in one_line(run) and built == []


def test_a_config_within_the_budget_builds():
    """The deepest shipped preset (Llama 3.1 405B: 126 layers) at its width, 16,384, is within the budget."""
    config = engine_hf.hf_config({**LLAMA, "num_hidden_layers": 126, "hidden_size": 16384})
    engine_hf.check_buildable(config)  # raises if refused


def test_a_zero_vocabulary_is_refused(tmp_path):
    assert "vocab_size 0" in one_line(engine(tmp_path, {**LLAMA, "vocab_size": 0}))


def test_a_cpu_run_is_made_only_up_to_its_token_cap(tmp_path):
    """At T = 16 XLM runs on the CPU and is priced; at T = 6,000 its activations would grow with T, and the refusal
    says why (the meta device cannot run it, and the CPU run's cap), not the meta device's words alone."""
    small = engine(tmp_path, XLM, "--seq", "16", "-f", "json")
    assert small.code == 0, small.stderr
    assert json.loads(small.stdout)["flops"]["forward_per_sequence"] > 0
    large = one_line(engine(tmp_path, XLM, "--seq", "6000"))
    assert "does not run on the meta device" in large and "up to T = 4,095" in large


def test_a_cpu_run_past_the_memory_is_refused_with_its_cause(monkeypatch):
    monkeypatch.setattr(engine_hf, "host_available_bytes", lambda: 1 << 20)
    reason = engine_hf.cpu_run_refusal(10**9, 16)
    assert reason is not None and "1.9 GiB of bf16 weights" in reason and "0.0 GiB available" in reason
