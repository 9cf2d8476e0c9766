"""The model sources on the command line, as a user runs them: --config, a .json MODEL, --set, and import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import NO_TORCH_PROBE, one_line_error

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
MIXTRAL = str(CONFIGS / "mixtral-8x7b.json")


def test_config_option_and_json_argument_agree(tfcost):
    by_option = tfcost("estimate", "--config", MIXTRAL, "--seq", "2048", "-f", "json")
    by_argument = tfcost("estimate", MIXTRAL, "--seq", "2048", "-f", "json")
    assert by_option.code == 0, by_option.stderr
    assert json.loads(by_option.stdout) == json.loads(by_argument.stdout)
    params = json.loads(by_option.stdout)["params"]
    assert (params["total"], params["active"]) == (46_702_792_704, 12_879_925_248)


def test_set_overrides_a_preset(tfcost):
    run = tfcost("estimate", "llama-3-8b", "--set", "n_kv_heads=16", "--set", "head_dim=128", "-f", "json")
    assert run.code == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["model"] == "llama-3-8b (n_kv_heads=16, head_dim=128)"
    assert out["kv_cache"]["bytes_per_token"] == 2 * 32 * 16 * 128 * 2


def test_import_writes_yaml_that_estimate_reads(tfcost, tmp_path):
    run = tfcost("import", str(CONFIGS / "gemma-2-9b.json"))
    assert run.code == 0 and run.stderr == ""
    preset = tmp_path / "my-model.yaml"
    preset.write_text(run.stdout)
    out = json.loads(tfcost("estimate", str(preset), "-f", "json").stdout)
    assert out["params"]["total"] == 9_241_705_984


def test_compare_takes_configs_and_applies_set_to_each(tfcost):
    run = tfcost("compare", "mistral-7b", "--config", MIXTRAL, "--set", "max_seq_len=4096", "-f", "json")
    assert run.code == 0, run.stderr
    results = json.loads(run.stdout)["results"]
    assert [r["model"] for r in results] == ["mistral-7b (max_seq_len=4096)", "mixtral-8x7b (max_seq_len=4096)"]


def test_bad_model_sources_get_one_line_and_the_right_code(tfcost, tmp_path):
    broken = tmp_path / "config.json"
    broken.write_text('{"model_type": "llama",')
    assert "malformed JSON" in one_line_error(tfcost("estimate", "--config", str(broken)), 1)
    broken.write_text('{"model_type": "rwkv"}')  # auto would hand it to transformers (tests/test_engine_hf.py)
    assert "unsupported model_type 'rwkv'" in one_line_error(tfcost("estimate", str(broken), "--engine", "analytic"), 1)
    broken.write_text(json.dumps({**json.loads(Path(MIXTRAL).read_text()), "num_local_experts": "8"}))
    assert "'num_local_experts' should be an integer" in one_line_error(tfcost("import", str(broken)), 1)
    assert "no such file" in one_line_error(tfcost("estimate", "--config", str(tmp_path / "nope.json")), 1)
    assert "not both" in one_line_error(tfcost("estimate", "gpt2-small", "--config", MIXTRAL), 2)
    assert "no model given" in one_line_error(tfcost("estimate"), 2)
    assert "KEY=VALUE" in one_line_error(tfcost("estimate", "gpt2-small", "--set", "n_layers"), 2)
    assert "unknown key 'n_layer'" in one_line_error(tfcost("estimate", "gpt2-small", "--set", "n_layer=2"), 1)


def test_help_shows_the_model_options(tfcost):
    for command in ("estimate", "compare", "import"):
        run = tfcost(command, "--help")
        assert run.code == 0 and "--config" in run.stdout and "--set" in run.stdout


@pytest.mark.parametrize("args", [["estimate", "--config", MIXTRAL], ["import", MIXTRAL]])
def test_config_commands_never_import_torch(args):
    done = subprocess.run([sys.executable, "-c", NO_TORCH_PROBE, *args], capture_output=True, text=True, check=False)
    assert done.stdout.strip().splitlines()[-1] == "TORCH-CLEAN", done.stderr


def test_train_and_serve_take_the_model_options(tfcost):
    run = tfcost("train", "--config", MIXTRAL, "--gpus", "64", "--tp", "8", "-f", "json")
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)["model"] == "mixtral-8x7b"
    run = tfcost("serve", "llama-3-8b", "--set", "n_kv_heads=16", "-f", "json")
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)["model"] == "llama-3-8b (n_kv_heads=16)"
