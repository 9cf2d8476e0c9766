"""Every listing (`list`, `gpus`, `profiles`) in table, JSON, CSV and Markdown, in natural order by family and size,
and token counts whole (issue 38)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tfcost.core.params import active_params, total_params
from tfcost.readers.presets import load_model
from tfcost.render.listing import natural_key

LISTINGS = [("list",), ("gpus",), ("profiles",)]


@pytest.mark.parametrize("args", LISTINGS, ids=lambda args: args[0])
@pytest.mark.parametrize("output", ["table", "json", "csv", "markdown"])
def test_every_listing_takes_every_format(tfcost, tmp_path, args, output):
    run = tfcost(*args, "-f", output, env={"XDG_CONFIG_HOME": str(tmp_path)})  # no saved profiles: an empty list
    assert run.code == 0, run.stderr
    if output == "json":
        assert "results" in json.loads(run.stdout)
    elif output == "csv":
        assert run.stdout.splitlines()[0].startswith("name,")
    elif output == "markdown":
        assert "| name |" in run.stdout


def test_list_as_json_is_the_csv_exact(tfcost):
    """The JSON's rows are the CSV's, as integers: Llama 3 8B holds 8,030,261,248 parameters (its checkpoint's
    safetensors index, test_first_hour's SIX_N_MODELS), 32 layers of width 4,096, 32 query and 8 key-value heads,
    and an 8,192-token context (config.json)."""
    rows = json.loads(tfcost("list", "-f", "json").stdout)["results"]
    table = list(csv.DictReader(io.StringIO(tfcost("list", "-f", "csv").stdout)))
    assert [row["name"] for row in rows] == [row["name"] for row in table]
    assert all(str(value) == table[index][key] for index, row in enumerate(rows) for key, value in row.items())
    llama = next(row for row in rows if row["name"] == "llama-3-8b")
    assert llama == {"name": "llama-3-8b", "parameters": 8_030_261_248, "active": 8_030_261_248, "layers": 32,
                     "d_model": 4096, "heads": 32, "kv_heads": 8, "context": 8192}  # fmt: skip
    mixtral = load_model("mixtral-8x7b")
    found = next(row for row in rows if row["name"] == "mixtral-8x7b")
    assert (found["parameters"], found["active"]) == (total_params(mixtral), active_params(mixtral))


def test_listings_are_in_natural_order(tfcost):
    names = [row["name"] for row in json.loads(tfcost("list", "-f", "json").stdout)["results"]]
    gemma = [name for name in names if name.startswith("gemma-3-")]
    assert gemma == ["gemma-3-1b", "gemma-3-4b", "gemma-3-12b", "gemma-3-27b"]
    gpt2 = [name for name in names if name.startswith("gpt2-")]
    assert gpt2 == ["gpt2-small", "gpt2-medium", "gpt2-large", "gpt2-xl"]
    assert names == sorted(names, key=natural_key)
    table = tfcost("list", "--family", "gemma-3").stdout
    assert table.index("gemma-3-1b ") < table.index("gemma-3-12b")
    gpus = [row["name"] for row in json.loads(tfcost("gpus", "-f", "json").stdout)["results"]]
    assert gpus == sorted(gpus, key=natural_key) and gpus.index("h100-sxm") < gpus.index("h200")


@pytest.mark.parametrize(
    ("names", "ordered"),
    [
        (["llama-3.1-8b", "llama-3-70b", "llama-3-8b", "llama-3.1-405b"],
         ["llama-3-8b", "llama-3-70b", "llama-3.1-8b", "llama-3.1-405b"]),
        (["smollm-1.7b", "smollm-135m", "smollm-360m"], ["smollm-135m", "smollm-360m", "smollm-1.7b"]),
        (["qwen3-30b-a3b", "qwen3-8b", "qwen3-235b-a22b"], ["qwen3-8b", "qwen3-30b-a3b", "qwen3-235b-a22b"]),
    ],
)  # fmt: skip
def test_natural_key_orders_by_family_then_size(names, ordered):
    assert sorted(names, key=natural_key) == ordered


def test_token_counts_are_whole(tfcost):
    """T prints as 4,096 (the default sequence, Llama 2's 4k context), not 4.10 k; serve's context P + G as 2,560."""
    train = tfcost("train", "llama-3-8b", "--gpus", "8").stdout
    assert "│ T, tokens per sequence" in train and " 4,096 │" in train and "4.10 k" not in train
    serve = tfcost("serve", "llama-3-8b").stdout
    line = next(line for line in serve.splitlines() if "context per sequence, P + G" in line)
    assert "2,560 │" in line and "2.56 k" not in serve
