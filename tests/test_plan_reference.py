"""`tfcost plan train`'s fast search against a slow reference: every legal layout evaluated plainly, each setting's
memory by `training.memory_per_gpu` of its own setup and every layout that fits priced by `step_time.step_seconds`,
without the search's caches, sums, pruning or bound. The counts (searched, fit, rejected by reason) and the best
layouts must be equal, not close: the search's speed work (issue 23: the 405B search under 2 s, benchmarks/plan.py)
may change no result."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from tfcost.costs import fit, parallel, plan, step_time, training
from tfcost.errors import UsageError
from tfcost.hardware import rates as hardware
from tfcost.readers.presets import load_gpu, load_model
from tfcost.schema import MemoryConvention, ModelShape, TrainingSetup

TOP = 10
CONVENTIONS: tuple[MemoryConvention, ...] = ("zero", "deepspeed")


def reference(shape: ModelShape, gpu_name: str, base: TrainingSetup) -> tuple[int, int, Counter[str], list[tuple]]:
    """(searched, fit, rejected by reason, every layout that fits ranked as `plan.rank` ranks them): each of the
    36 settings (ZeRO x recomputation x offload) of every legal parallel layout, micro-batch and v evaluated. For a
    ZeRO stage and recomputation, the lightest offload that fits is the layout; the heavier ones count as "fits
    without offload", the lighter ones as "does not fit" (the search's counting, module docstring of plan.py)."""
    gpu = load_gpu(gpu_name)
    capacity = hardware.memory_bytes(gpu)
    overhead = fit.overhead_bytes(capacity, base.cuda_context_gib, base.allocator_reserve)
    batch = base.global_batch
    assert batch is not None
    searched, rejected, fitting = 0, Counter[str](), []
    for structure in plan.parallel_shapes(shape, base):
        try:
            parallel.check_layout(shape, structure)
        except UsageError as error:
            searched += 1
            rejected[plan.rule_reason(error, shape)] += 1
            continue
        for micro_batch in plan.divisors(batch // structure.data_parallel):
            for virtual in plan.virtual_stage_counts(shape, structure):
                layout = structure.model_copy(update={"micro_batch": micro_batch, "virtual_stages": virtual})
                try:
                    parallel.check_layout(shape, layout)
                except UsageError as error:
                    searched += 1
                    rejected[plan.rule_reason(error, shape)] += 1
                    continue
                # the search's order, which ties keep: ZeRO stage up, recomputation from full to none
                for zero, recompute in itertools.product(plan.ZERO_STAGES, plan.RECOMPUTES[::-1]):
                    lightest = None
                    for offload in plan.OFFLOADS:
                        searched += 1
                        setup = layout.model_copy(update={"zero": zero, "recompute": recompute, "offload": offload})
                        if lightest is not None:
                            rejected[plan.FITS_WITHOUT_OFFLOAD] += 1
                        elif fit.fits(training.memory_per_gpu(shape, setup)["total"], overhead, capacity):
                            lightest = setup
                        else:
                            rejected[plan.DOES_NOT_FIT] += 1
                    if lightest is not None:
                        fitting.append(lightest)
    steps = base.tokens / (batch * base.seq_len)
    # where the GPU table cannot predict a step, train's wall clock at its default MFU: model FLOPs / (N peak MFU)
    assumed = training.model_training_flops(shape, base.seq_len, base.tokens) / (
        base.gpus * training.peak_flops_per_s(gpu, base.precision) * training.DEFAULT_MFU
    )
    priced = []
    for setup in fitting:
        predicted = step_time.can_predict(gpu, setup)
        step = step_time.step_seconds(shape, gpu, setup)["total"] if predicted else assumed / steps
        days = (steps * step if predicted else assumed) / training.SECONDS_PER_DAY
        held = training.memory_per_gpu(shape, setup)
        priced.append((setup, step, days, held["total"], held["host"], predicted))
    priced.sort(key=lambda p: (p[0].offload != "none", not p[5], p[1], plan.distance(base, p[0])))
    return searched, len(fitting), rejected, priced


CASES = [
    ("llama-3-8b", "h100-sxm", dict(tokens=10**11, seq_len=4096, gpus=8, global_batch=32)),
    ("mixtral-8x7b", "h100-sxm", dict(tokens=10**12, seq_len=4096, gpus=16, global_batch=32)),
    ("llama-3.1-70b", "h100-sxm", dict(tokens=10**12, seq_len=4096, gpus=32, global_batch=64)),
    # no step time predicted (no matmul efficiency in the GPU table): train's default MFU for every layout
    ("llama-3-8b", "rtx-4090", dict(tokens=10**11, seq_len=4096, gpus=8, global_batch=32)),
]  # fmt: skip


@pytest.mark.parametrize(("name", "gpu_name", "fields"), CASES)
def test_the_search_equals_a_plain_evaluation_of_every_layout(name, gpu_name, fields):
    shape, base = load_model(name), TrainingSetup(**fields)
    searched, feasible, rejected, priced = reference(shape, gpu_name, base)
    assert feasible and any(p[0].offload != "none" for p in priced)  # the case is not empty, and ranks both groups
    for top in (TOP, None):
        found = plan.search_training(shape, load_gpu(gpu_name), base, top)
        if top is None:
            assert (found.searched, found.feasible) == (searched, feasible)
            assert {k: v for k, v in found.rejected.items() if v} == {k: v for k, v in rejected.items() if v}
        else:  # the branch and bound leaves whole parallel shapes unsearched: their options are counted apart
            unsearched = found.rejected.pop(plan.CANNOT_RANK, 0)
            assert found.searched == searched and found.feasible <= feasible
            assert all(found.rejected[reason] <= count for reason, count in rejected.items())
            assert found.feasible + sum(found.rejected.values()) + unsearched == searched
        best = [
            (s.setup, s.step_seconds, s.days, s.memory_per_gpu_bytes, s.host_bytes, s.predicted) for s in found.layouts
        ]
        assert best[:TOP] == priced[:TOP]
        if top is None:
            assert best == priced


@pytest.mark.parametrize(
    ("name", "layout", "seq"),
    [
        ("llama-3-8b", dict(gpus=8, tp=2, pp=2), 4096),
        ("mixtral-8x7b", dict(gpus=16, tp=2, pp=4, ep=2), 4096),
        ("gpt3-175b", dict(gpus=64, tp=8, pp=8), 2048),
        ("llama-3.1-405b", dict(gpus=256, tp=8, pp=16, pp_first_layers=7, pp_last_layers=7), 4096),
    ],
)
def test_model_states_read_neither_recomputation_nor_v(name, layout, seq):
    # The search sums what a setting holds as its model states (memory_per_gpu with the activations given as 0),
    # kept per parallel shape and micro-batch, plus its activations (plan.TrainPricer.model_states): that holds
    # only while the model states change with neither recomputation nor v, and the total is the sum of its parts.
    shape = load_model(name)
    for micro_batch, convention in itertools.product((1, 2), CONVENTIONS):
        base = TrainingSetup(tokens=10**9, seq_len=seq, global_batch=64, micro_batch=micro_batch,
                             memory_convention=convention, **layout)  # fmt: skip
        for zero, offload in itertools.product(plan.ZERO_STAGES, plan.OFFLOADS):
            totals = set()
            for recompute, virtual in itertools.product(plan.RECOMPUTES, (1, 2)):
                setup = base.model_copy(
                    update={"zero": zero, "offload": offload, "recompute": recompute, "virtual_stages": virtual}
                )
                states = training.memory_per_gpu(shape, setup, 0)["total"]
                assert training.memory_per_gpu(shape, setup)["total"] == states + training.activation_bytes_per_gpu(
                    shape, setup
                )
                totals.add(states)
            assert len(totals) == 1
