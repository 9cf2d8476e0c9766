"""The GPU check of `tfcost measure`, in one go: run the issue's sweep, time the same calls again with
triton.testing.do_bench, and print one table setting them side by side with FlashAttention's published figures;
then measure the machine (`tfcost measure --roofline`, saved as a profile in a temporary config directory) and time
real model steps (`tfcost measure MODEL --step --profile ...`) beside `serve`'s bound and expected.

Anyone with a CUDA machine runs it the same way: a python with torch (CUDA build), tfcost's dependencies, and, for
--step, transformers; from the repository root, `python3 benchmarks/measure_gpu.py`. Options: --step-models
(default llama-3.2-1b,llama-3-8b), --skip-machine (attention sweep only), --skip-attention (machine only).
Without transformers the --step rows and the profile's step floor are reported as not run.

    python3 benchmarks/measure_gpu.py [--out DIR]          # defaults: the issue's command (llama-3-8b, bf16,
                                                           # causal, T = 1k..16k, every backend, with backward)
    python3 benchmarks/measure_gpu.py --device cpu --seq 128 --model gpt2-small   # plumbing check, no GPU

Run from the repository root, with a python that has torch (and triton for do_bench) and tfcost's dependencies
(typer, rich, pydantic, pyyaml); tfcost itself is imported from the checkout. Writes measure_gpu.json to --out,
or to $OUT when set. Agreement is tfcost's median over do_bench's median, minus one; the aim is within 5%.

To run it on any CUDA machine:
    1. Clone the repository and install tfcost with its measure extra, in a virtual environment:
           python3 -m venv .venv && .venv/bin/pip install -e '.[measure]' triton
       (pick the torch build for your CUDA version first if pip's default does not match: see pytorch.org).
    2. Check that torch sees the GPU:
           .venv/bin/python -c "import torch; print(torch.cuda.get_device_name())"
    3. From the repository root run the sweep (a few minutes on an H100-class GPU):
           .venv/bin/python benchmarks/measure_gpu.py --out results/
Without pip access on the GPU machine, copy wheels of tfcost's dependencies there and install them with
`pip install --no-index`; the script needs torch, triton, typer, rich, pydantic and pyyaml. A GPU missing from
presets/gpus.yaml is timed all the same, without the fractions of its peak.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Published forward-pass throughput, dense fp16/bf16 (formulas-and-specs.md §5.1, §5.2). Not the same shapes as
# here: FA benchmarks use 16k tokens per batch and 16 or 32 heads without GQA.
PUBLISHED = [
    "FlashAttention-2 (Dao 2023, §4.1): up to 230 TFLOP/s on A100 (73% of 312); up to 335 on H100",
    "FlashAttention-3 (Shah et al. 2024): up to 740 TFLOP/s fp16 forward on H100 SXM (75% of 989)",
    "FlashAttention-3 Fig. 5, H100, head dim 128, 16k: ~649 TFLOP/s non-causal, ~616 causal (read off the bars)",
]


def arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="llama-3-8b")
    parser.add_argument("--seq", default="1024,2048,4096,8192,16384")
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    parser.add_argument("--no-causal", action="store_true", help="time full attention instead of causal")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--repeats", type=int, default=None, help="tfcost's repetitions [its default]")
    parser.add_argument("--do-bench-ms", type=int, default=500, help="do_bench's rep budget, ms")
    parser.add_argument("--out", default=os.environ.get("OUT"), help="folder for measure_gpu.json [$OUT]")
    parser.add_argument("--step-models", default="llama-3.2-1b,llama-3-8b", help="models for measure --step")
    parser.add_argument("--skip-machine", action="store_true", help="no --roofline / --step")
    parser.add_argument("--skip-attention", action="store_true", help="no attention sweep")
    return parser.parse_args(argv)


def tfcost_sweep(args: argparse.Namespace) -> dict[str, Any]:
    """The issue's command, as a user runs it; its progress bar and notes go to our stderr."""
    command = [sys.executable, "-m", "tfcost", "measure", args.model, "--seq", args.seq, "--dtype", args.dtype,
               "--no-causal" if args.no_causal else "--causal", "--backend", "all", "--backward",
               "--device", args.device, "--format", "json"]  # fmt: skip
    if args.repeats:
        command += ["--repeats", str(args.repeats)]
    print("+", " ".join(command[1:]), file=sys.stderr)
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(done.stdout)


def do_bench_ms(row: dict[str, Any], budget_ms: int) -> tuple[float | None, str | None]:
    """The same call, timed by triton.testing.do_bench (its own warm-up, L2 flush and CUDA events)."""
    from tfcost.measure import kernels as measure  # imports torch, quietly
    from tfcost.schema import AttentionShape

    torch = measure.torch
    if not torch.cuda.is_available():
        return None, "no CUDA device"
    try:
        from triton.testing import do_bench
    except ImportError:
        return None, "triton is not installed"
    shape = AttentionShape(heads=row["heads"], kv_heads=row["kv_heads"], head_dim=row["head_dim"])
    backward = row["direction"] == "forward+backward"
    q, k, v = measure.make_inputs(shape, row["batch"], row["seq"], row["dtype"], "cuda", backward)
    step = measure.attention_step(q, k, v, row["causal"], backward)
    try:
        with measure.forced_backend(row["backend"]):
            return float(do_bench(step, warmup=25, rep=budget_ms, return_mode="median")), None
    except RuntimeError as error:
        return None, str(error).splitlines()[0]
    finally:
        del q, k, v, step
        torch.cuda.empty_cache()


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def tfcost_json(args: list[str], env: dict[str, str]) -> dict[str, Any] | str:
    """One tfcost command's JSON, or the one line it failed with."""
    print("+", " ".join(args), file=sys.stderr)
    done = subprocess.run([sys.executable, "-m", "tfcost", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=False)  # fmt: skip
    if done.returncode:
        return (done.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(done.stdout)


def machine(args: argparse.Namespace) -> tuple[list[str], dict[str, Any]]:
    """measure --roofline --save-profile, then measure MODEL --step --profile for each model."""
    import tempfile

    lines: list[str] = []
    found: dict[str, Any] = {}
    repeats = ["--repeats", str(args.repeats)] if args.repeats else []
    with tempfile.TemporaryDirectory() as config:
        env = {**os.environ, "XDG_CONFIG_HOME": config}
        roofline = tfcost_json(["measure", "--roofline", "--device", args.device, "--dtype", args.dtype,
                                "--save-profile", "bench-gpu", "--format", "json", *repeats], env)  # fmt: skip
        if isinstance(roofline, str):
            return [f"measure --roofline failed: {roofline}"], found
        profile = found["roofline"] = roofline["roofline"]
        lines.append(f"roofline: {profile['device_name']}, torch {profile['torch_version']}")
        lines.append(f"  copy bandwidth {profile['copy_bytes_per_s'] / 1e12:.3f} TB/s (read + write)")
        for run in profile["matmuls"]:
            lines.append(
                f"  matmul {run['dtype']:5} {run['kind']:8} {run['m']}x{run['k']}x{run['n']}: "
                f"{run['flops_per_s'] / 1e12:.1f} TFLOP/s, {run['bytes_per_s'] / 1e12:.3f} TB/s, "
                f"{run['median_ms']:.3f} ms"
            )
        lines.append(
            f"  tiny kernel {profile['tiny_kernel_us']:.2f} us, tiny matmul {profile['tiny_matmul_us']:.2f} us"
        )
        lines.append(
            f"  step floor of a 64-wide model at {profile['floor_layers']} layers: {profile['floor_step_us']} us"
        )
        found["steps"] = []
        for model in args.step_models.split(","):
            step = tfcost_json(["measure", model, "--step", "--profile", "bench-gpu", "--device", args.device,
                                "--dtype", args.dtype, "-P", "512", "-G", "128", "--format", "json", *repeats],
                               env)  # fmt: skip
            if isinstance(step, str):
                lines.append(f"step {model}: not run: {step}")
                continue
            found["steps"].append(step["step"])
            for phase in ("prefill", "decode"):
                row = step["step"][phase]
                lines.append(
                    f"step {model} {phase}: measured {row['measured_ms']:.3f} ms, bound {row['bound_ms']:.3f}, "
                    f"expected {row['expected_ms']:.3f} (expected/measured {row['expected_over_measured']:.2f})"
                )
    return lines, found


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    machine_lines, machine_found = ([], {}) if args.skip_machine else machine(args)
    if args.skip_attention:
        print("\n".join(machine_lines))
        if args.out:
            path = Path(args.out) / "measure_gpu.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"machine": machine_found}, indent=2))
        return 0
    report = tfcost_sweep(args)
    header = f"{'T':>6} {'pass':8} {'backend':16} {'tfcost ms':>10} {'p10-p90':>15} {'do_bench':>9} {'agree':>7} "
    header += f"{'TFLOP/s':>8} {'of peak':>8} {'x roof':>7} {'peak MiB':>10} {'est. MiB':>10}"
    lines = [f"device: {report['device_name']}  spec: {report['gpu']}  torch {report['torch_version']}", header]
    compared = []
    for row in report["measurements"]:
        bench, why = do_bench_ms(row, args.do_bench_ms) if row["status"] == "ok" else (None, row["reason"])
        agreement = row["median_ms"] / bench - 1 if bench and row["median_ms"] else None
        compared.append({**row, "do_bench_ms": bench, "do_bench_note": why, "agreement": agreement})
        backend = row["backend"] + (f">{row['backend_ran']}" if row["backend"] == "auto" else "")
        spread = f"{number(row['p10_ms'])}-{number(row['p90_ms'])}" if row["status"] == "ok" else row["status"]
        mib = 2**20
        lines.append(
            f"{row['seq']:>6} {'fwd' if row['direction'] == 'forward' else 'fwd+bwd':8} {backend:16} "
            f"{number(row['median_ms']):>10} {spread:>15} {number(bench):>9} {percent(agreement):>7} "
            f"{number(row['tflops_per_s'], 4):>8} {percent(row['peak_fraction']):>8} "
            f"{number(row['roofline_ratio']):>7} "
            f"{number(row['peak_memory_bytes'] and row['peak_memory_bytes'] / mib, 4):>10} "
            f"{number(row['peak_memory_estimate_bytes'] / mib, 4):>10}"
        )
    agreements = [abs(c["agreement"]) for c in compared if c["agreement"] is not None]
    worst = max(agreements, default=None)
    lines.append(f"agreement with do_bench: worst {percent(worst)} over {len(agreements)} rows (aim: within 5%)")
    skipped = {c["do_bench_note"]: c for c in compared if c["do_bench_note"] and c["status"] == "ok"}
    lines += [f"do_bench not run: {note} (e.g. {c['backend']} T={c['seq']})" for note, c in skipped.items()]
    lines += ["published: " + line for line in PUBLISHED]
    lines += [report["flop_convention"], report["timing"], *report["notes"]]
    lines += machine_lines
    print("\n".join(lines))
    if args.out:
        path = Path(args.out) / "measure_gpu.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(
                {"tfcost": report, "compared": compared, "published": PUBLISHED, "machine": machine_found}, indent=2
            )
        )
        print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
