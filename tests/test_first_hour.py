"""A first hour without surprises (issue 25): a warning past the model's context, sweeps that mark that region,
byte axes labelled where IEC names them exactly, tables that fit the terminal, and the small things a user trips
on (GPU aliases, 4k for token counts, case-insensitive names, CSV, per-column overrides, list filters)."""

from __future__ import annotations

import json
import math

import pytest

from tfcost.readers.presets import load_model

WARNING = "passes the model's context of"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["estimate", "gpt2-small", "--seq", "8192"], "T = 8,192 tokens passes the model's context of 1,024"),
        (["train", "gpt2-small", "--seq", "4096"], "T = 4,096 tokens passes the model's context of 1,024"),
        (["serve", "gpt2-small", "-P", "1000", "-G", "100"], "P + G = 1,100 tokens passes the model's context"),
        (["compare", "gpt2-small", "llama-3-8b", "--seq", "2048"], "gpt2-small: T = 2,048 tokens passes"),
    ],
)
def test_past_the_context_is_a_warning_never_a_refusal(tfcost, args, said):
    run = tfcost(*args, "--format", "json")
    assert run.code == 0, run.stderr
    json.loads(run.stdout)  # the answer is still there, priced at the length asked
    warnings = [line for line in run.stderr.splitlines() if line.startswith("tfcost: warning:")]
    assert len(warnings) == 1 and said in warnings[0], run.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["estimate", "gpt2-small", "--seq", "1024"],  # exactly the context: no warning
        ["train", "gpt2-small"],  # the default T is the model's context when shorter than 4,096
        ["serve", "gpt2-small", "-P", "512", "-G", "512"],
        ["compare", "llama-3-8b", "mistral-7b", "--seq", "8192"],
    ],
)
def test_within_the_context_no_warning(tfcost, args):
    run = tfcost(*args, "--format", "json")
    assert run.code == 0 and WARNING not in run.stderr, run.stderr


def test_sweep_marks_the_values_past_each_models_context(tfcost):
    run = tfcost("sweep", "gpt2-small", "llama-3-8b", "-T", "512..16384", "-m", "kv_cache", "-f", "markdown")
    assert run.code == 0, run.stderr
    rows = [line.split("|")[1:-1] for line in run.stdout.splitlines() if line.startswith("| ") and line[2:3].isdigit()]
    rows = [[cell.strip() for cell in row] for row in rows]
    by_t = {int(row[0].replace(",", "")): row[1:] for row in rows}
    assert set(by_t) == {512, 1024, 2048, 4096, 8192, 16384}
    for t, (gpt2, llama) in by_t.items():
        assert gpt2.endswith("\\*") == (t > 1024) and llama.endswith("\\*") == (t > 8192), (t, gpt2, llama)
    assert "past the model's own context: gpt2-small (1,024), llama-3-8b (8,192)" in run.stdout
    # JSON carries each model's context, in the models' order.
    document = json.loads(tfcost("sweep", "gpt2-small", "llama-3-8b", "-T", "512,1024", "-f", "json").stdout)
    assert document["contexts"] == [1024, 8192] == [load_model(m).max_seq_len for m in ("gpt2-small", "llama-3-8b")]


def test_sweep_chart_draws_the_context_line(tfcost):
    pytest.importorskip("plotext", reason="charts need tfcost[plot]")
    run = tfcost("sweep", "gpt2-small", "-T", "512..16384", "-m", "kv_cache")
    assert run.code == 0, run.stderr
    assert "| gpt2-small: context 1,024 (vertical line; past it to the right)" in run.stdout


def test_byte_ticks_are_round_in_iec_units():
    """10^7 bytes is 9.54 MiB: byte axes tick at powers of two (log) or multiples of one (linear), so every label
    is a whole IEC number, as the axis title says ('bytes, IEC')."""
    plot = pytest.importorskip("tfcost.render.plot")
    positions, labels = plot.ticks([18_874_368.0, 4_831_838_208.0], log=True, unit="bytes")
    assert all(p == 2 ** round(p).bit_length() / 2 for p in positions)  # powers of two
    assert labels[0] == "32.00 MiB" and labels[-1] == "2.00 GiB" and len(labels) <= 5
    positions, labels = plot.ticks([0.0, 300 * 2**20], log=False, unit="bytes")
    assert positions[1] - positions[0] == 2**27 and labels == ["0 B", "128.00 MiB", "256.00 MiB"]


def test_lengths_take_binary_k_and_m():
    from tfcost.units import parse_length

    assert [parse_length(text) for text in ("4096", "4_096", "4,096", "4k", "32K", "128k", "1M", "1.5k")] == [
        4096, 4096, 4096, 4096, 32768, 131072, 1048576, 1536,
    ]  # fmt: skip
    for bad in ("0", "-4k", "1.1", "4kk", "k", "", "4,09", "²", "1e999999", "4G"):
        with pytest.raises(ValueError):
            parse_length(bad)


@pytest.mark.parametrize(
    ("args", "key", "value"),
    [
        (["estimate", "llama-3-8b", "--seq", "8k"], ("workload", "seq_len"), 8192),
        (["train", "llama-3-8b", "-T", "2k"], ("setup", "seq_len"), 2048),
        (["serve", "llama-3-8b", "-P", "4k"], ("setup", "prompt"), 4096),
        (["serve", "llama-3-8b", "-G", "1k"], ("setup", "generate"), 1024),
    ],
)
def test_length_options_take_4k(tfcost, args, key, value):
    run = tfcost(*args, "--format", "json")
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)[key[0]][key[1]] == value


def test_sweep_and_measure_take_4k(tfcost):
    run = tfcost("sweep", "gpt2-small", "-T", "512..2k", "-f", "csv")
    assert [line.split(",")[2] for line in run.stdout.splitlines()[1:]] == ["512", "1024", "2048"]
    pytest.importorskip("torch", reason="measure needs torch")
    args = ("--heads", "2", "--head-dim", "8", "--repeats", "1", "--device", "cpu", "--backend", "math", "-f", "json")
    measured = json.loads(tfcost("measure", "--seq", "1k,2K", *args).stdout)["measurements"]
    assert [row["seq"] for row in measured] == [1024, 2048]


def test_the_readme_installs_the_cpu_wheel_and_says_where_it_timed_the_tests():
    """The README's CPU-only lines (PyTorch's "Start Locally" page, Pip, CPU: `--index-url
    https://download.pytorch.org/whl/cpu`), the test pin the same as pyproject's `test` extra, and the test counts
    and times naming the machine they were measured on."""
    import re
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu\n" in readme
    assert readme.index("whl/cpu") < readme.index("pip install '.[hf,measure]'")
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (pin,) = [spec for spec in project["optional-dependencies"]["test"] if spec.startswith("torch")]
    assert f"pip install '{pin}' --index-url https://download.pytorch.org/whl/cpu" in readme
    counted = re.search(r"([\d,]+) tests, (\d+) min on a\s+(\d+)-core, CPU-only machine", readme)
    assert counted is not None, "the README's test counts and times name no machine"


@pytest.mark.parametrize(
    ("given", "row", "noted"),
    [("h100", "h100-sxm", True), ("H100", "h100-sxm", True), ("a100", "a100-80gb", True), ("4090", "rtx-4090", True),
     ("H100 SXM", "h100-sxm", False), ("H100-SXM", "h100-sxm", False), ("h200", "h200", False)],
)  # fmt: skip
def test_gpu_aliases_are_said_in_a_note(tfcost, given, row, noted):
    run = tfcost("serve", "llama-3-8b", "--gpu", given, "--format", "json")
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)["gpu"] == row
    note = f"tfcost: note: --gpu {given} is taken as {row} (`tfcost gpus` lists the others)\n"
    assert (run.stderr == note) if noted else (run.stderr == ""), run.stderr


def test_preset_names_are_case_insensitive(tfcost):
    upper = tfcost("estimate", "Llama-3-8B", "--format", "json")
    assert upper.code == 0, upper.stderr
    assert json.loads(upper.stdout) == json.loads(tfcost("estimate", "llama-3-8b", "--format", "json").stdout)
    wrong = tfcost("estimate", "LLama-3-8bb")
    assert wrong.code == 1 and "did you mean llama-3-8b" in wrong.stderr


def read_csv(text: str) -> list[dict[str, str]]:
    import csv
    import io

    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize("command", ["estimate", "train", "serve"])
def test_reports_as_csv_hold_the_json_values(tfcost, command):
    """A row per quantity, keyed as the JSON is; every value exact and equal to the JSON's."""
    rows = read_csv(tfcost(command, "llama-3-8b", "-f", "csv").stdout)
    document = json.loads(tfcost(command, "llama-3-8b", "-f", "json").stdout)
    assert rows and all(row["model"] == "llama-3-8b" for row in rows)
    for row in rows:
        node = document
        for part in row["quantity"].split("."):
            node = node[part] if part in node else node[row["quantity"].split(".", 1)[1].split(".", 1)[-1]]
            if not isinstance(node, dict):
                break
        expected = node
        if isinstance(expected, bool):
            assert row["value"] == json.dumps(expected)
        elif isinstance(expected, int | float):
            assert float(row["value"]) == pytest.approx(expected, rel=1e-12), row
    totals = {row["quantity"]: row["value"] for row in rows}
    if command == "estimate":
        assert totals["params.total"] == "8030261248"


def test_compare_csv_and_a_column_with_its_own_overrides(tfcost):
    rows = read_csv(tfcost("compare", "llama-3-8b", "llama-3-8b:n_kv_heads=32", "-f", "csv").stdout)
    by_key = {row["quantity"]: row for row in rows}
    # 32 KV heads of 128 in 32 layers, K and V, bf16: 4 x the 8-head cache per token.
    assert by_key["kv_cache.bytes_per_token"]["llama-3-8b"] == str(2 * 32 * 8 * 128 * 2)
    assert by_key["kv_cache.bytes_per_token"]["llama-3-8b (n_kv_heads=32)"] == str(2 * 32 * 32 * 128 * 2)
    # The column's own overrides come after the command's --set, for that column only.
    both = json.loads(
        tfcost(
            "compare", "llama-3-8b", "llama-3-8b:n_kv_heads=32,n_layers=16", "--set", "n_layers=8", "-f", "json"
        ).stdout
    )["results"]
    assert [(r["model"], r["kv_cache"]["bytes_per_token"]) for r in both] == [
        ("llama-3-8b (n_layers=8)", 2 * 8 * 8 * 128 * 2),
        ("llama-3-8b (n_layers=8, n_kv_heads=32, n_layers=16)", 2 * 16 * 32 * 128 * 2),
    ]
    bad = tfcost("compare", "llama-3-8b", "llama-3-8b:nope=3")
    assert bad.code == 1 and bad.stderr.count("\n") == 1 and "unknown key 'nope'" in bad.stderr


@pytest.mark.parametrize("args", [["plan", "train", "llama-3-8b", "--gpus", "8"], ["plan", "serve", "llama-3-8b"]])
def test_plan_as_csv_holds_the_json_layouts(tfcost, args):
    """CSV for every table: plan's layouts too, a row per layout with the JSON's keys and exact values."""
    rows = read_csv(tfcost(*args, "--top", "3", "-f", "csv").stdout)
    document = json.loads(tfcost(*args, "--top", "3", "-f", "json").stdout)
    assert len(rows) == len(document["layouts"]) == 3
    for row, layout in zip(rows, document["layouts"], strict=True):
        assert (row.pop("model"), row.pop("gpu"), int(row.pop("gpus"))) == ("llama-3-8b", "h100-sxm", 8)
        assert row.keys() == layout.keys()
        for key, value in layout.items():
            if value is None:
                assert row[key] == "", key
            elif isinstance(value, bool) or isinstance(value, str):
                assert row[key] == (json.dumps(value) if isinstance(value, bool) else value), key
            else:
                assert float(row[key]) == value, key  # exact: the same float's shortest repr


def test_inspect_and_check_as_csv_hold_the_json_values(tfcost, tmp_path):
    """CSV for every table: inspect's rows keyed as its JSON (stored.by_dtype.BF16), check's a row per compared
    quantity with both sides and their difference, every value exact."""
    from tests.test_stored import TINY, tiny_tensors, write_safetensors

    (tmp_path / "config.json").write_text(json.dumps(TINY))
    write_safetensors(tmp_path / "model.safetensors", tiny_tensors())
    rows = read_csv(tfcost("inspect", str(tmp_path), "-f", "csv").stdout)
    document = json.loads(tfcost("inspect", str(tmp_path), "-f", "json").stdout)
    assert len(rows) > 10 and all(row["model"] == document["model"] for row in rows)
    for row in rows:
        node = document
        for part in row["quantity"].split("."):
            node = node[part]
        assert int(row["value"]) == node, row
    assert {row["quantity"]: int(row["value"]) for row in rows}["stored.total_bytes"] == sum(
        2 * n if dtype == "BF16" else 4 * n if dtype == "F32" else n
        for dtype, n in ((dtype, math.prod(shape)) for dtype, shape in tiny_tensors().values())
    )  # bytes by the safetensors dtypes: BF16 2, F32 4, F8_E4M3 and U8 1
    pytest.importorskip("transformers", reason="check needs transformers")
    checked = read_csv(tfcost("check", "gpt2-small", "--seq", "16", "-f", "csv").stdout)
    compared = json.loads(tfcost("check", "gpt2-small", "--seq", "16", "-f", "json").stdout)["rows"]
    assert [row["quantity"] for row in checked] == [row["quantity"] for row in compared]
    for row, expected in zip(checked, compared, strict=True):
        for key in ("analytic", "transformers", "difference"):
            assert (row[key] == "") if expected[key] is None else (float(row[key]) == expected[key]), (key, row)


def test_split_column():
    from tfcost.readers.presets import split_column

    assert split_column("llama-3-8b") == ("llama-3-8b", [])
    assert split_column("llama-3-8b:n_kv_heads=32,bias.qkv=true") == ("llama-3-8b", ["n_kv_heads=32", "bias.qkv=true"])
    assert split_column("m.yaml:sliding_layers=[0, 2],n_layers=4") == (
        "m.yaml",
        ["sliding_layers=[0, 2]", "n_layers=4"],
    )
    assert split_column("weird:name") == ("weird:name", [])


def test_csv_cells_that_a_spreadsheet_would_run_stay_text(tmp_path, tfcost):
    preset = tmp_path / "m.yaml"
    text = (load_model_path("gpt2-small")).read_text().replace("name: gpt2-small", "name: '=HYPERLINK(\"x\")'")
    preset.write_text(text)
    rows = read_csv(tfcost("estimate", str(preset), "-f", "csv").stdout)
    assert rows[0]["model"] == '\'=HYPERLINK("x")'
    compare = tfcost("compare", str(preset), "gpt2-small", "-f", "csv").stdout.splitlines()[0]
    assert "'=HYPERLINK" in compare
    # Numbers stay numbers: a negative difference in check's CSV is not text.
    from tfcost.render.common import csv_cell

    assert csv_cell(-5) == -5 and csv_cell("-5") == "'-5" and csv_cell("@x") == "'@x" and csv_cell("+1") == "'+1"


def load_model_path(name: str):
    from tfcost.readers.presets import model_preset_paths

    return model_preset_paths()[name]


def test_list_filters_by_family_and_size(tfcost):
    rows = read_csv(tfcost("list", "--family", "llama-3", "--min-params", "8B", "-f", "csv").stdout)
    names = [row["name"] for row in rows]
    assert names == ["llama-3-8b", "llama-3.1-405b", "llama-3.1-70b", "llama-3.1-8b"]
    assert all(int(row["parameters"]) >= 8 * 10**9 for row in rows)
    assert tfcost("list", "--family", "nothing-like-it").code == 2


def test_gpus_and_list_as_csv(tfcost):
    gpus = read_csv(tfcost("gpus", "-f", "csv").stdout)
    assert gpus[0]["name"] == "h100-sxm" and float(gpus[0]["peak_bf16_tflops"]) == 989.4
    assert gpus[0]["device_names"] == "H100.*(SXM|HBM3); H100$"


# The N of 6N, from each model's own published figures, not from tfcost: Llama 3 8B's checkpoint holds 8,030,261,248
# parameters, less its untied token table and output head, 2 x 128,256 x 4,096 (config.json: vocab_size, hidden_size);
# GPT-2 small is 12 of the lesson's blocks (qkv 768 x 2,304 + 2,304, proj 768 x 768 + 768, MLP 768 x 3,072 + 3,072
# and 3,072 x 768 + 768, two LayerNorms 4 x 768: 7,087,872 each) and the final LayerNorm's 2 x 768, the lesson's
# "6N = 0.51 GFLOPs"; Mixtral 8x7B is its 12,879,925,248 active parameters (Mistral AI, "Mixtral of experts", 2023:
# "only uses 12.9B parameters per token", test_mixtral_active_n_is_its_cards) less its two 32,000 x 4,096 tables.
SIX_N_MODELS = {
    "llama-3-8b": 6 * (8_030_261_248 - 2 * 128_256 * 4_096),
    "gpt2-small": 6 * (12 * 7_087_872 + 2 * 768),
    "mixtral-8x7b": 6 * (12_879_925_248 - 2 * 32_000 * 4_096),
}


@pytest.mark.parametrize(("model", "six_n"), SIX_N_MODELS.items())
def test_every_command_prints_the_same_six_n(tfcost, model, six_n):
    """One meaning of 6N everywhere (Kaplan et al. 2020, §2.1: N without the vocabulary and position embeddings;
    a token's active parameters for MoE): estimate, compare, train's 6ND per token, both --explain, sweep's six_n
    and the Python API give the same number, and every label says which N."""
    import tfcost as api

    def document(*args: str) -> dict:
        run = tfcost(*args, "-f", "json")
        assert run.code == 0, run.stderr
        return json.loads(run.stdout)

    estimate = document("estimate", model)
    compare = document("compare", model, "gpt2-medium")["results"][0]
    train = document("train", model, "--tokens", "1B")
    explained = {line["quantity"]: line["value"] for line in document("estimate", model, "--explain")["explain"]}
    train_explained = {
        line["quantity"]: line["value"] for line in document("train", model, "--tokens", "1B", "--explain")["explain"]
    }
    sweep = read_csv(tfcost("sweep", model, "-T", "1024,2048", "-m", "six_n", "-f", "csv").stdout)
    printed = {
        "estimate": estimate["flops"]["six_n_per_token"],
        "compare": compare["flops"]["six_n_per_token"],
        "train 6ND / D": train["flops"]["six_nd"] // train["setup"]["tokens"],
        "estimate --explain": explained["training per token"],
        "train --explain 6ND / D": train_explained["6ND"] // 10**9,
        "sweep six_n": {int(row["six_n"]) for row in sweep},
        "tfcost.estimate": api.estimate(model).flops.six_n_per_token,
        "tfcost.train 6ND / D": api.train(model, tokens="1B").flops.six_nd // 10**9,
    }
    assert train["flops"]["six_nd"] == six_n * 10**9 and train_explained["6ND"] == six_n * 10**9
    assert printed == {**dict.fromkeys(printed, six_n), "sweep six_n": {six_n}}, printed
    tables = tfcost("estimate", model).stdout + tfcost("train", model).stdout + tfcost("compare", model).stdout
    labels = [line for line in tables.splitlines() if "6N" in line and "(N:" in line]
    assert len(labels) == 4 and all("6N (N: non-embedding, Kaplan)" in line or "6ND (N: non-embedding, Kaplan)"
                                    in line for line in labels), labels  # fmt: skip


def test_mixtral_active_n_is_its_cards():
    """Mistral AI's announcement ("Mixtral of experts", December 2023): "Mixtral has 46.7B total parameters but only
    uses 12.9B parameters per token". SIX_N_MODELS' Mixtral figure rounds to the card's, both of them."""
    from tfcost.core import params

    mixtral = load_model("mixtral-8x7b")
    active, total = params.active_params(mixtral), params.total_params(mixtral)
    assert active == 12_879_925_248 and (round(active / 1e9, 1), round(total / 1e9, 1)) == (12.9, 46.7)


TABLE_COMMANDS = [
    ["list"],
    ["gpus"],
    ["estimate", "llama-3-8b"],
    ["estimate", "deepseek-v3", "--gpu", "h100"],
    ["compare", "llama-3-8b", "mistral-7b", "gpt2-small", "qwen3-8b", "gemma-3-27b", "deepseek-v3"],
    ["compare", "gpt-oss-120b", "qwen3-235b-a22b", "--breakdown"],
    ["train", "llama-3-8b"],
    ["train", "llama-3.1-70b", "--gpus", "256", "--tp", "8", "--pp", "4"],
    ["serve", "llama-3-8b"],
    ["serve", "mixtral-8x7b", "--gpus", "2", "--weights-dtype", "int4"],
    ["sweep", "llama-3-8b", "gpt2-small", "mistral-7b", "qwen3-8b", "-f", "table", "-m", "kv_cache,attention_flops"],
    ["profiles"],
]


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("args", TABLE_COMMANDS, ids=lambda args: " ".join(args[:2]))
def test_tables_fit_the_terminal(tfcost, args, width):
    """No line longer than the terminal (COLUMNS, as a shell sets it): sources are numbered notes, a narrow
    terminal loses the exact column (said in a note), then the labels wrap, then compare splits its models."""
    run = tfcost(*args, env={"COLUMNS": str(width)})
    assert run.code == 0, run.stderr
    longest = max(run.stdout.splitlines(), key=len)
    assert len(longest) <= width, longest
    if args[0] in ("estimate", "train", "serve", "compare"):
        assert "│" in run.stdout  # a table, not an error or a note alone


def test_the_chart_fits_the_terminal_too(tfcost):
    pytest.importorskip("plotext", reason="charts need tfcost[plot]")
    for width in (80, 120):
        run = tfcost("sweep", "llama-3-8b", "gpt2-small", env={"COLUMNS": str(width)})
        assert run.code == 0 and max(len(line) for line in run.stdout.splitlines()) <= width


def test_serve_sources_are_numbered_notes(tfcost):
    out = tfcost("serve", "llama-3-8b", env={"COLUMNS": "120"}).stdout
    assert "│   stream" in out and "[1] 0.7 of datasheet bandwidth" in out
    table_lines = [line for line in out.splitlines() if line.startswith("│")]
    assert not any("llm-analysis" in line for line in table_lines)


def test_a_file_or_pipe_gets_the_natural_width(tfcost):
    """Without COLUMNS and without a terminal, a table keeps every column (the exact one too) at its width."""
    run = tfcost("train", "llama-3-8b", env={"COLUMNS": ""})
    assert "exact" in run.stdout and "left out to fit the terminal" not in run.stdout


def test_train_defaults_to_a_layout_people_run(tfcost):
    """Without --global-batch, about 4M tokens a step (Llama 2, Table 1: "a global batch-size of 4M tokens"): 1,024
    sequences of 4,096 on 64 replicas is 16 micro-batches each; without --zero, the lowest stage that fits: Llama-3-8B
    with AdamW needs 16 bytes a parameter, 128 GB at ZeRO-0 on an 80 GB H100, so ZeRO-1. The title says both."""
    run = tfcost("train", "llama-3-8b", "--gpus", "64", "-f", "json")
    out = json.loads(run.stdout)
    assert out["inputs"]["global_batch"] == 1024 == 2**22 // 4096 and out["inputs"]["micro_batches"] == 16
    assert out["setup"]["zero"] == 1 and out["memory_per_gpu"]["fits"] is True
    zero_0 = json.loads(tfcost("train", "llama-3-8b", "--gpus", "64", "--zero", "0", "-f", "json").stdout)
    assert zero_0["memory_per_gpu"]["fits"] is False and zero_0["inputs"]["global_batch"] == 1024
    table = tfcost("train", "llama-3-8b", "--gpus", "64").stdout
    assert "ZeRO-1 (the lowest stage that fits, the default)" in table
    assert "global batch 1,024 sequences (4.19 M tokens a step, the default: about 4M, as Llama 2 trained)" in table
    # Given, they are the user's: no default said.
    given = tfcost("train", "llama-3-8b", "--gpus", "64", "--zero", "2", "--global-batch", "128").stdout
    assert "ZeRO-2;" in given and "global batch 128 sequences\n" in given.replace(" " * 2, "").replace(" \n", "\n")
    # A whole number of micro-batches on every replica, at least one: 48 replicas of 1 x 4,096 tokens.
    odd = json.loads(tfcost("train", "llama-3-8b", "--gpus", "48", "-f", "json").stdout)
    assert odd["inputs"]["global_batch"] == 48 * round(2**22 / (4096 * 48))


# What a command loaded, in a fresh interpreter (this one has loaded everything): the modules, and whether the
# collector paused for the imports is running again.
LOADED_PROBE = """
import gc, io, sys, contextlib
from tfcost.cli.main import main
collecting = gc.isenabled()
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(collecting, " ".join(sorted(name for name in sys.modules if name.startswith("tfcost"))))
"""


@pytest.mark.parametrize(
    ("args", "searched"),
    [
        (["train", "llama-3-8b", "--gpus", "8"], False),  # fits: no search, no chart module
        (["serve", "llama-3-8b", "--batch", "4"], False),
        (["train", "llama-3-8b", "--gpus", "1", "--zero", "0"], True),  # does not fit: the nearest layout that does
        (["serve", "llama-3.1-70b", "--batch", "4"], True),
    ],
)
def test_start_up_loads_the_search_only_for_a_layout_that_does_not_fit(args, searched):
    """Start-up (benchmarks/run.py): a train or serve run that fits never imports `tfcost plan`'s search, its
    report or the chart module; and the collector, paused while the CLI's modules load, runs again after."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", LOADED_PROBE, *args], capture_output=True, text=True, check=False)
    collecting, loaded = done.stdout.split(" ", 1)
    assert collecting == "True", done.stderr
    modules = set(loaded.split())
    assert f"tfcost.reports.{args[0]}" in modules  # the command ran
    search = {"tfcost.costs.plan", "tfcost.reports.plan"}
    assert (search <= modules) if searched else not (search & modules), sorted(search & modules)
    assert "tfcost.render.plan" not in modules  # plan's tables: the suggestion is worded with the answer
    # Nor what no train or serve run needs (issue 25): the chart module, estimate's report classes, a local model's
    # file readers, --explain's working; `tfcost plan`'s command module where nothing is searched; serve's report
    # in train's search.
    unneeded = {"tfcost.render.plot", "tfcost.costs.sweep", "tfcost.reports.estimate", "tfcost.readers.safetensors"}
    unneeded |= {"tfcost.reports.explain", "tfcost.costs.crossover"}  # --explain's working: not asked for here
    unneeded |= set() if searched else {"tfcost.cli.plan"}
    unneeded |= {"tfcost.reports.serve"} if args[0] == "train" else set()
    assert not (unneeded & modules), sorted(unneeded & modules)


# The commands TABLE_COMMANDS leaves out, each needing something of its own: plan's search, a checkpoint's files
# (inspect), torch (measure), torch and transformers (check). `import` prints a preset's YAML, not a table.
MORE_TABLE_COMMANDS = [
    (["plan", "train", "llama-3-8b", "--gpus", "8"], None),
    (["plan", "serve", "llama-3-8b"], None),
    (["inspect", "FOLDER"], None),
    (["measure", "--heads", "4", "--kv-heads", "2", "--head-dim", "16", "--seq", "32", "--repeats", "2", "--device",
      "cpu", "--backend", "all", "--backward"], "torch"),
    (["check", "gpt2-small", "--seq", "16"], "transformers"),
]  # fmt: skip


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize(("args", "needs"), MORE_TABLE_COMMANDS, ids=lambda value: " ".join(value[:2]) if value else "")
def test_the_other_commands_fit_the_terminal_too(tfcost, tmp_path, args, needs, width):
    if needs:
        pytest.importorskip(needs, reason=f"{args[0]} needs {needs}")
    if "FOLDER" in args:
        from tests.test_stored import TINY, tiny_tensors, write_safetensors

        (tmp_path / "config.json").write_text(json.dumps(TINY))
        write_safetensors(tmp_path / "model.safetensors", tiny_tensors())
        args = [str(tmp_path) if arg == "FOLDER" else arg for arg in args]
    run = tfcost(*args, env={"COLUMNS": str(width)})
    assert run.code == 0, run.stderr
    longest = max(run.stdout.splitlines(), key=len)
    assert len(longest) <= width and "──" in run.stdout, longest  # a table's rule (measure's has no sides)


def test_measure_prints_markdown_like_the_rest(tfcost):
    """measure's attention timings in Markdown hold the rows its CSV holds (the tables in every format)."""
    pytest.importorskip("torch", reason="measure needs torch")
    from tfcost.units import human

    args = ("measure", "--heads", "4", "--kv-heads", "2", "--head-dim", "16", "--seq", "32,64", "--repeats", "2",
            "--device", "cpu", "--backend", "math")  # fmt: skip
    markdown = tfcost(*args, "-f", "markdown")
    assert markdown.code == 0, markdown.stderr
    rows = [line for line in markdown.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    csv_rows = read_csv(tfcost(*args, "-f", "csv").stdout)
    assert len(csv_rows) == 2 and len(rows) == 1 + len(csv_rows)  # a header and one row per length
    for row, measured in zip(rows[1:], csv_rows, strict=True):
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert f"{int(measured['seq']):,}" in cells and human(int(measured["flops"]), "flops") in cells, (row, measured)
