"""Measure transformers' ground truth for model types (default configs) and fixture configs.

    /work/venv/bin/python scripts/family_truth.py --types llama4_text gemma3 --out docs/family-truth.json
    /work/venv/bin/python scripts/family_truth.py --fixtures tests/data/hf_configs/gpt-oss-20b.json

One process; each model is built once on the meta device. Results go to a JSON file (merged with what it
already holds) so that docs/family-truth.md can be regenerated without re-measuring.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from truth_harness import config_from_dict, default_config, measure

# Default configs that transformers 5.24 itself cannot build, and the least change that lets it: each is a
# field the published configs always set. Rows built this way are labelled "patched:<type>".
PATCHES: dict[str, Any] = {
    # head_dim defaults to None and the attention does head_dim ** -0.5
    "ministral": lambda c: {"head_dim": c.hidden_size // c.num_attention_heads},
    "hunyuan_v1_dense": lambda c: {"head_dim": c.hidden_size // c.num_attention_heads},
    "hunyuan_v1_moe": lambda c: {"head_dim": c.hidden_size // c.num_attention_heads},
    # the MoE fields default to None (dots.llm1 publishes 128 experts, top-6, 2 shared, 1 dense layer first)
    "dots1": lambda c: {
        "n_routed_experts": 128,
        "num_experts_per_tok": 6,
        "n_shared_experts": 2,
        "first_k_dense_replace": 1,
    },
    # layer_types defaults to None (LFM2-8B-A1B: attention at 2, 6, 10, 14, 18, 21 of 24)
    "lfm2_moe": lambda c: {
        "layer_types": ["full_attention" if i in (2, 6, 10, 14, 18, 21) else "conv" for i in range(c.num_hidden_layers)]
    },
}


def patched(model_type: str) -> Any:
    config = default_config(model_type)
    for key, value in PATCHES[model_type](config).items():
        setattr(config, key, value)
    return config


class TooSlow(BaseException):  # not an Exception: measure() must not swallow it
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise TooSlow


def run_one(label: str, make_config: Any, limit_s: int) -> dict[str, Any]:
    start = time.perf_counter()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(limit_s)
    try:
        truth = measure(make_config())
        row = {"label": label, "ok": True, **dataclasses.asdict(truth), "seconds": time.perf_counter() - start}
    except TooSlow:
        row = {"label": label, "ok": False, "error": f"over {limit_s} s", "seconds": time.perf_counter() - start}
    except Exception as error:  # noqa: BLE001 - the table reports why a type does not build
        tail = traceback.extract_tb(error.__traceback__)[-1]
        where = f"{Path(tail.filename).name}:{tail.lineno}"
        row = {
            "label": label,
            "ok": False,
            "error": f"{type(error).__name__}: {str(error)[:300]} ({where})",
            "seconds": time.perf_counter() - start,
        }
    finally:
        signal.alarm(0)
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--types", nargs="*", default=[])
    parser.add_argument("--fixtures", nargs="*", default=[])
    parser.add_argument("--out", default="docs/family-truth.json")
    parser.add_argument("--limit-s", type=int, default=240)
    args = parser.parse_args()
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.exists() else {}
    jobs = [(f"default:{t}", lambda t=t: default_config(t)) for t in args.types]
    jobs += [(f"patched:{t}", lambda t=t: patched(t)) for t in args.types if t in PATCHES]
    for path in args.fixtures:
        data = json.loads(Path(path).read_text())
        jobs.append((f"fixture:{Path(path).stem}", lambda data=data: config_from_dict(data)))
    for label, make in jobs:
        row = run_one(label, make, args.limit_s)
        results[label] = row
        brief = {k: row.get(k) for k in ("params", "forward_flops", "kv_bytes_per_token", "state_bytes", "error")}
        print(f"{label}: {brief} {row.get('seconds', 0):.1f}s {row.get('notes', '')}", flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
