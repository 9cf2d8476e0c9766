"""Start-up and throughput of tfcost, as ratios to a floor.

    python benchmarks/run.py            # 20 runs of each command after a warm-up, then the throughput grid
    python benchmarks/run.py --runs 5   # quicker, noisier

Start-up: each command below runs as a whole new process (the installed `tfcost` console script), and so does
benchmarks/floor_app.py, a minimal typer + rich + pydantic + pyyaml app that prints one table. The runs are
interleaved, one of each per round, so that a busy machine slows every row alike; each row reports its median
wall time and its ratio to the floor's median. Target: every command at most 1.1x the floor.

Throughput: every shipped preset x 1,000 sequence lengths x 8 batch sizes (over 100,000 points) evaluated
through the public core functions, in one process. Target: at least 100,000 points per second.

Curves: the same five quantities through tfcost.costs.sweep's closed forms (tfcost.core.curves), every preset x 8
batch sizes
x 2,000 sequence lengths, a new T at every point (no cache can help), the curves' building included. Target: at
least 1,000,000 points per second.

Sweep: `tfcost sweep <5 presets> --points 2000 --format csv` (10,000 rows) is timed with the start-up rows, against
its own target of 1.2x the floor.

Rows report PASS or FAIL; the exit code is 0 either way (this is a measurement, not a gate).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tfcost.core import flops, memory, params
from tfcost.costs.sweep import ModelCosts
from tfcost.readers.presets import load_model, model_preset_paths
from tfcost.schema import ModelShape, ServingSetup

HERE = Path(__file__).resolve().parent
PRESETS = list(model_preset_paths())

# One line per command to time: a label and the arguments after `tfcost`. Add new commands here.
COMMANDS: dict[str, list[str]] = {
    "tfcost --help": ["--help"],
    "tfcost estimate gpt2-small": ["estimate", "gpt2-small"],
    f"tfcost compare <all {len(PRESETS)} presets>": ["compare", *PRESETS],
    f"tfcost compare <all {len(PRESETS)} presets> --format json": ["compare", *PRESETS, "--format", "json"],
    "tfcost estimate gpt2-small --format json": ["estimate", "gpt2-small", "--format", "json"],
    "tfcost train llama-3-8b --gpus 8": ["train", "llama-3-8b", "--gpus", "8"],
    "tfcost serve llama-3-8b --batch 4": ["serve", "llama-3-8b", "--batch", "4"],
    "tfcost train llama-3-8b": ["train", "llama-3-8b"],  # the default layout: up to four ZeRO stages tried
    "tfcost compare llama-3-8b llama-3-8b:n_kv_heads=32 -f csv": [
        "compare",
        "llama-3-8b",
        "llama-3-8b:n_kv_heads=32",
        "--format",
        "csv",
    ],
    "tfcost list --family qwen3": ["list", "--family", "qwen3"],
    "tfcost gpus": ["gpus"],
}
SWEEP_MODELS = ["gpt2-small", "llama-3-8b", "mistral-7b", "gemma-2-9b", "deepseek-v3"]
SWEEP = "tfcost sweep <5 presets> --points 2000 -f csv"
COMMANDS[SWEEP] = ["sweep", *SWEEP_MODELS, "--seq", "512..131072", "--points", "2000", "--format", "csv"]
SWEEP_TARGET = 1.2  # the sweep computes and prints 10,000 rows: a little more than one table
FLOOR = "floor: typer + rich + pydantic + pyyaml, one table"
STARTUP_TARGET = 1.1  # at most this many times the floor's median

SEQ_LENS = range(1, 1001)
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128)
THROUGHPUT_TARGET = 100_000  # points per second


def tfcost_command() -> list[str]:
    """The console script installed beside this interpreter, as a user runs it; `python -m tfcost` otherwise."""
    script = Path(sys.executable).with_name("tfcost")
    if script.is_file():
        return [str(script)]
    found = shutil.which("tfcost")
    return [found] if found else [sys.executable, "-m", "tfcost"]


def cpu_seconds_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one whole process."""
    cpu, start = cpu_seconds_of_children(), time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False)
    wall, cpu = time.perf_counter() - start, cpu_seconds_of_children() - cpu
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode(errors='replace')}")
    return wall, cpu


def startup(runs: int) -> bool:
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    env.pop("TFCOST_DEBUG", None)
    # The warm-up round writes tfcost's .pyc files, as pip's install does; with PYTHONDONTWRITEBYTECODE set (some
    # shells and containers set it) every run would compile tfcost's ~60 modules from source again (~60 ms here),
    # while the floor's libraries are already compiled in site-packages: a cost no installed tfcost pays.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    tfcost = tfcost_command()
    argvs = {FLOOR: [sys.executable, str(HERE / "floor_app.py"), str(HERE / "floor.yaml")]}
    argvs.update({label: [*tfcost, *args] for label, args in COMMANDS.items()})
    walls: dict[str, list[float]] = {label: [] for label in argvs}
    cpus: dict[str, list[float]] = {label: [] for label in argvs}
    for round_number in range(runs + 1):  # round 0 is the warm-up: page cache, .pyc files
        for label, argv in argvs.items():
            wall, cpu = timed_run(argv, env)
            if round_number:
                walls[label].append(wall)
                cpus[label].append(cpu)

    floor_wall, floor_cpu = statistics.median(walls[FLOOR]), statistics.median(cpus[FLOOR])
    width = max(map(len, argvs))
    print(f"Start-up: medians of {runs} whole-process runs each, after a warm-up; target <= {STARTUP_TARGET}x floor")
    print("(wall time is the verdict; CPU time, user + system, is shown because it is steadier on a busy machine)")
    print(f"{'command':<{width}}  {'wall':>8}  {'ratio':>6}  {'cpu':>8}  {'ratio':>6}  verdict")
    all_pass = True
    for label in argvs:
        wall, cpu = statistics.median(walls[label]), statistics.median(cpus[label])
        ratio = wall / floor_wall
        target = SWEEP_TARGET if label == SWEEP else STARTUP_TARGET
        verdict = "floor" if label == FLOOR else ("PASS" if ratio <= target else "FAIL")
        all_pass &= verdict != "FAIL"
        print(
            f"{label:<{width}}  {wall * 1000:>6.0f}ms  {ratio:>5.2f}x  {cpu * 1000:>6.0f}ms  {cpu / floor_cpu:>5.2f}x  "
            f"{verdict}"
        )
    return all_pass


def evaluate_point(shape: ModelShape, seq_len: int, batch: int) -> None:
    params.total_params(shape)
    flops.forward_flops(shape, seq_len)
    flops.attention_score_flops_per_token(shape, seq_len)
    memory.kv_cache_bytes(shape, seq_len, batch, "bf16")
    memory.score_matrix_bytes(shape, seq_len, batch, "bf16")


def evaluate_grid() -> int:
    """Every preset x sequence length x batch size through the core; returns the number of points."""
    points = 0
    for shape in (load_model(name) for name in PRESETS):
        for seq_len in SEQ_LENS:
            for batch in BATCHES:
                evaluate_point(shape, seq_len, batch)
                points += 1
    return points


def evaluate_cold(per_preset: int) -> int:
    """As many points, each with a sequence length the grid never used, so no forward_flops is cached."""
    first = SEQ_LENS[-1] + 1
    for shape in (load_model(name) for name in PRESETS):
        for seq_len in range(first, first + per_preset):
            evaluate_point(shape, seq_len, 1)
    return per_preset * len(PRESETS)


def throughput(repeats: int = 3) -> bool:
    best = float("inf")
    for _ in range(repeats):  # best of a few, as timeit does: slower runs measure the machine, not the code
        start = time.perf_counter()
        points = evaluate_grid()
        best = min(best, time.perf_counter() - start)
    rate = points / best
    verdict = "PASS" if rate >= THROUGHPUT_TARGET else "FAIL"
    print(
        f"\nThroughput: {points:,} points ({len(PRESETS)} presets x {len(SEQ_LENS):,} sequence lengths x "
        f"{len(BATCHES)} batch sizes), each: total_params, forward_flops, attention_score_flops_per_token, "
        "kv_cache_bytes, score_matrix_bytes"
    )
    print(f"best of {repeats}: {best:.3f} s = {rate:,.0f} points/s, target >= {THROUGHPUT_TARGET:,}/s  {verdict}")
    start = time.perf_counter()
    cold = evaluate_cold(len(SEQ_LENS) * len(BATCHES))
    cold_rate = cold / (time.perf_counter() - start)
    print(
        f"(forward_flops is cached per model and T, so the grid computes it once per 8 points; with a new T at "
        f"every point: {cold_rate:,.0f} points/s)"
    )
    return verdict == "PASS"


CURVE_SEQ_LENS = 2_000  # per (model, batch)
CURVE_THROUGHPUT_TARGET = 1_000_000  # points per second


def evaluate_curves(first: int) -> tuple[int, float, float]:
    """Every preset x 8 batch sizes x 2,000 sequence lengths through the closed forms, every point at a T that
    model has not been asked at before; building each model's curves is part of the time."""
    points = 0
    plans = [(name, first + i * len(BATCHES) * CURVE_SEQ_LENS) for i, name in enumerate(PRESETS)]
    shapes = {name: load_model(name) for name in PRESETS}
    seq_lists = {
        (name, batch): list(range(start + j * CURVE_SEQ_LENS, start + (j + 1) * CURVE_SEQ_LENS))
        for name, start in plans
        for j, batch in enumerate(BATCHES)
    }
    begin, cpu = time.perf_counter(), time.process_time()
    for name, _ in plans:
        shape = shapes[name]
        costs = ModelCosts(shape, "bf16", False, None, ServingSetup())
        total = params.total_params(shape)
        for batch in BATCHES:
            seq_lens = seq_lists[(name, batch)]
            columns = (
                [total] * len(seq_lens),
                costs.curve("forward", 1).values(seq_lens),
                costs.curve("attention", 1).values(seq_lens),
                costs.curve("kv_cache", batch).values(seq_lens),
                costs.curve("score_matrix_all_layers", batch).values(seq_lens),
            )
            points += min(map(len, columns))
    return points, time.perf_counter() - begin, time.process_time() - cpu


def curve_throughput(repeats: int = 5) -> bool:
    best, best_cpu, points = float("inf"), float("inf"), 0
    for repeat in range(repeats):  # a fresh range of T each time: nothing is cached between repeats either
        points, seconds, cpu = evaluate_curves(10**6 + repeat * 10**8)
        best, best_cpu = min(best, seconds), min(best_cpu, cpu)
    rate = points / best
    verdict = "PASS" if rate >= CURVE_THROUGHPUT_TARGET else "FAIL"
    print(
        f"\nCurves: {points:,} points ({len(PRESETS)} presets x {len(BATCHES)} batch sizes x {CURVE_SEQ_LENS:,} "
        "sequence lengths, a new T at every point), the same five quantities through tfcost.costs.sweep's closed forms"
    )
    print(f"best of {repeats}: {best:.3f} s = {rate:,.0f} points/s, target >= {CURVE_THROUGHPUT_TARGET:,}/s  {verdict}")
    print(f"(CPU time, steadier on a busy machine: {best_cpu:.3f} s = {points / best_cpu:,.0f} points/s)")
    return verdict == "PASS"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="timed runs of each command (default 20)")
    parser.add_argument("--curves-only", action="store_true", help="only the closed-form throughput")
    options = parser.parse_args()
    if options.curves_only:
        curve_throughput()
        return
    startup_ok = startup(options.runs)
    throughput_ok = throughput()
    curves_ok = curve_throughput()
    print(
        f"\nstart-up: {'PASS' if startup_ok else 'FAIL'}; throughput: {'PASS' if throughput_ok else 'FAIL'}; "
        f"curves: {'PASS' if curves_ok else 'FAIL'}"
    )


if __name__ == "__main__":
    main()
