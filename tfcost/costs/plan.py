"""`tfcost plan`: search every legal layout of a run and rank those that fit, as Calculon searches training layouts
(Isaev et al., SC'23: an exhaustive search over tp x pp x dp, the schedule, recomputation and ZeRO) and NVIDIA's
AIConfigurator searches serving configurations against TTFT/TPOT targets. Nothing here is a new formula: each
training layout is priced by the same functions `train` uses (training.memory_per_gpu, fit.fits,
step_time.step_seconds); serving layouts are priced by the caller's evaluation (`serve`'s expected figures, which
live in tfcost.reports.serve), and this module enumerates them, keeps the Pareto front and ranks.

What is searched, for training on N GPUs with a fixed global batch B (sequences per step):
- tp x pp x cp x dp = N over every divisor, pp at most the layers L; for a mixture of experts, the experts' own
  layout folded over the attention's as Megatron-Core folds it (`parallel.check_layout`): the experts' tensor
  parallelism etp = tp or 1 (Megatron-Core's default, and whole experts: "MoE parallel folding", arXiv 2504.14960),
  and ep over the divisors of the routed experts with etp x ep dividing tp x cp x dp;
- pipeline stages: even when p divides L; otherwise Megatron's uneven first and last stages
  (`--decoder-first/last-pipeline-num-layers`): the middle stages ceil(L / p) layers each and the two ends the rest,
  split equally (Llama 3 405B: 7 + 14 x 8 + 7; BLOOM-176B: 5 + 10 x 6 + 5), or only the last stage lighter when
  the rest is odd;
- virtual stages v (interleaved 1F1B) over the divisors of every stage's layers, with p > 1, or of each stage's
  layer slots when the end stages are one layer lighter, the embedding and the loss taking a layer's place
  (Megatron's `--account-for-embedding/loss-in-pipeline-split`; Llama 3 405B's v chunks of 7 + 14 x 8 + 7);
- micro-batch b over the divisors of B / dp (m = B / (b dp) micro-batches a step);
- ZeRO stage 0-3 (3 is FSDP's full sharding), recomputation none, selective or full, offload none, optimizer or
  params. Offload moves states to host memory and its PCIe traffic is not priced by the step time, so it is never
  faster: it is tried only for a layout that does not fit without it (the others are counted as rejected, "fits
  without offload");
- sequence parallelism is on whenever tp > 1 and tp divides T (Korthikanti et al. 2022: it only removes work).

A parallel shape that Megatron's rules refuse (`parallel.check_layout`) is counted once, under the rule's words,
not once per setting of the options below it. Where the GPU table lacks the link or matmul figures to predict a
layout's step time, the layout is priced as `train` prices it there, at its default MFU (ASSUMED_MAIN_TERM).
"""

from __future__ import annotations

import heapq
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

from tfcost.core.blocks import layer_count
from tfcost.costs import fit, parallel, serving, step_time, throughput, training
from tfcost.errors import UsageError
from tfcost.hardware import rates as hardware
from tfcost.schema import GpuSpec, ModelShape, Offload, Recompute, ServingSetup, TrainingSetup, WeightsDtype
from tfcost.units import Dtype

# Llama 2 (Touvron et al. 2023, Table 1): "All models are trained with a global batch-size of 4M tokens."
DEFAULT_GLOBAL_BATCH_TOKENS = 4 * 2**20
RECOMPUTES: tuple[Recompute, ...] = ("none", "selective", "full")  # from holding the most to the least
ZERO_STAGES: tuple[int, ...] = (0, 1, 2, 3)
OFFLOADS: tuple[Offload, ...] = ("none", "optimizer", "params")
# A layer's times by recomputation and whether ZeRO-3 shards the weights (`TrainPricer.layer`)
LayerKey = tuple[Recompute, bool]

OPTIONS_PER_LAYOUT = len(RECOMPUTES) * len(ZERO_STAGES) * len(OFFLOADS)
# The options that hold the least on a GPU: memory only grows with the micro-batch and the virtual stages and only
# shrinks with recomputation and offload (tests/test_plan.py checks it), so when this does not fit, none does. With
# the params offloaded every model state is on the host whatever the ZeRO stage, but ZeRO-3 under pipeline
# parallelism keeps its stage gathered and its gradients unsharded (FSDP's, `training.keeps_weights_gathered`), and
# DeepSpeed's ZeRO-2/3 estimators keep 2N or 4 x the largest layer: ZeRO-1 is the least of them.
LEAST_RECOMPUTE: Recompute = "full"
LEAST_ZERO = 1
LEAST_OFFLOAD: Offload = "params"
LEAST_MEMORY = {"recompute": LEAST_RECOMPUTE, "zero": LEAST_ZERO, "offload": LEAST_OFFLOAD}
DOES_NOT_FIT = "does not fit in GPU memory"
FITS_WITHOUT_OFFLOAD = "fits without offload (offload is never faster: its PCIe time is not priced)"
# With --top, a parallel shape whose step time cannot be under the top-th best found is not searched below
# (`shape_bound`): its micro-batches, virtual stages and options are counted under this reason.
CANNOT_RANK = "cannot rank among the best (a lower bound on its step time exceeds them)"
# Where the GPU table lacks the link or matmul figures to predict a layout's step time (`step_time.can_predict`),
# `train` falls back to its default MFU (docs/training.md: "a GPU without them falls back to MFU 0.4 and says so"),
# and so does the search, by the same functions (`TrainPricer.assumed_seconds`): the step time is then the same for
# every layout, which rank by the fewest options changed, after every layout whose step time is predicted.
ASSUMED_MAIN_TERM = "none: MFU assumed"
# The layout fields `train` takes as options, in the order a suggestion names them.
LAYOUT_FIELDS = (
    "tp",
    "pp",
    "cp",
    "ep",
    "etp",
    "virtual_stages",
    "pp_first_layers",
    "pp_last_layers",
    "zero",
    "recompute",
    "micro_batch",
    "offload",
    "sequence_parallel",
)


def default_global_batch(seq_len: int) -> int:
    """B when none is given: Llama 2's 4M tokens a step, in T-token sequences (at least one)."""
    return max(1, DEFAULT_GLOBAL_BATCH_TOKENS // seq_len)


def divisors(n: int) -> list[int]:
    """Every divisor of n, ascending."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)})


def stage_splits(n_layers: int, pp: int) -> list[tuple[int | None, int | None]]:
    """(first, last) stage layers for p stages (None: as the even split gives): the even split when p divides L,
    else the middle stages ceil(L / p) each and the ends the rest, equally, or only the last lighter (module
    docstring). Empty when neither works (then p cannot hold L layers)."""
    if n_layers % pp == 0:
        return [(None, None)]
    if pp < 2:
        return []
    middle = -(-n_layers // pp)
    ends = n_layers - (pp - 2) * middle
    if ends % 2 == 0 and 1 <= ends // 2 <= middle:
        return [(ends // 2, ends // 2)]
    last = n_layers - (pp - 1) * middle
    return [(None, last)] if 1 <= last < middle else []


def rule_reason(error: UsageError, shape: ModelShape) -> str:
    """A layout rule's refusal as a count key: its words without the sizes in brackets or the model's name."""
    text = re.sub(r" \([^()]*\)", "", str(error)).replace(f" of {shape.name}", "")
    return text.split(":")[0]


@dataclass(frozen=True)
class TrainLayout:
    """One training layout that fits, priced: the setup and what `plan train` prints of it."""

    setup: TrainingSetup
    step_seconds: float
    days: float
    mfu: float
    memory_per_gpu_bytes: int
    host_bytes: int
    main_term: str
    cost: float | None
    predicted: bool = True  # the step time predicted (`step_time.step_seconds`), not from train's default MFU


class Fitting(NamedTuple):  # a tuple: made for each of the tens of thousands of layouts that fit
    """A layout that fits, before it is priced: its parallel layout (micro-batch and v set), the options over it,
    the activation bytes it holds, one layer's times (`step_time.layer_seconds`) and a lower bound on its step time
    (`step_bound`). The setup itself and what it holds are made only for the layouts priced (`TrainPricer.held`)."""

    layout: TrainingSetup
    zero: int
    recompute: Recompute
    offload: Offload
    activations: int
    layer: dict[str, float] | None  # None: the step time cannot be predicted (ASSUMED_MAIN_TERM)
    bound: float

    def setup(self) -> TrainingSetup:
        return with_options(self.layout, recompute=self.recompute, zero=self.zero, offload=self.offload)


@dataclass
class Search:
    """What a search looked at: how many layouts, why each refused one was, how many fit, and those priced (all
    that fit, or as many as the best `top` needed: `price_ranked`), best first."""

    searched: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    layouts: list[TrainLayout] = field(default_factory=list)
    feasible: int = 0
    cut_short: bool = False  # the nearest-layout search stopped at NEAREST_BUDGET before finding one

    def reject(self, reason: str, count: int = 1) -> None:
        self.searched += count
        self.rejected[reason] += count

    def most_rejected(self) -> str | None:
        """The reason that refused the most layouts."""
        return self.rejected.most_common(1)[0][0] if self.rejected else None


def expert_layouts(shape: ModelShape, tp: int, stage_gpus: int) -> list[tuple[int, int | None]]:
    """(ep, etp) of the experts' layout on a stage of `stage_gpus` = tp x cp x dp GPUs: etp = tp (None, Megatron-
    Core's default) or 1 (whole experts on each GPU), ep over the divisors of the routed experts with etp x ep
    dividing the stage's GPUs (`parallel.check_layout`); (1, None) for a dense model."""
    if shape.moe is None:
        return [(1, None)]
    return [
        (e, etp)
        for etp in ((None, 1) if tp > 1 else (None,))
        for e in divisors(shape.moe.n_experts)
        if stage_gpus % ((etp or tp) * e) == 0 and (etp is None or e > 1)
    ]


def parallel_shapes(shape: ModelShape, base: TrainingSetup) -> Iterator[TrainingSetup]:
    """Every tp x pp x cp (x ep) over the GPUs, stages split as `stage_splits`, sequence parallel where it can be;
    micro-batch 1, one virtual stage."""
    n_layers, gpus = layer_count(shape), base.gpus
    for tp in divisors(gpus):
        for pp in (p for p in divisors(gpus // tp) if p <= n_layers):
            for first, last in stage_splits(n_layers, pp):
                for cp in divisors(gpus // (tp * pp)):
                    for ep, etp in expert_layouts(shape, tp, gpus // pp):
                        yield base.model_copy(
                            update={
                                "tp": tp,
                                "pp": pp,
                                "cp": cp,
                                "ep": ep,
                                "etp": etp,
                                "pp_first_layers": first,
                                "pp_last_layers": last,
                                "pp_layout": None,
                                "virtual_stages": 1,
                                "micro_batch": 1,
                                "sequence_parallel": tp > 1 and base.seq_len % tp == 0,
                            }
                        )


def legal_shapes(shape: ModelShape, base: TrainingSetup, found: Search) -> Iterator[TrainingSetup]:
    """`parallel_shapes` that Megatron's rules allow; each other one is counted in `found` under the reason that
    rejected it."""
    for structure in parallel_shapes(shape, base):
        try:
            parallel.check_layout(shape, structure)
        except UsageError as error:
            found.reject(rule_reason(error, shape))
            continue
        yield structure


def virtual_stage_counts(shape: ModelShape, setup: TrainingSetup) -> list[int]:
    """v over the divisors of every stage's layers, or of each stage's layer slots where the end stages hold one
    layer fewer for the embedding and the loss (`parallel.interleavable_layers`); 1 alone without pipeline
    parallelism."""
    if setup.pp == 1:
        return [1]
    stages = parallel.stage_layers(layer_count(shape), setup.pp, setup.pp_first_layers, setup.pp_last_layers)
    return sorted({v for layers in parallel.interleavable_layers(stages) for v in divisors(layers)})


class TrainPricer:
    """Prices training layouts of one model, GPU, token count and global batch, computing once what does not change
    between layouts: the model's FLOPs, the peak, the number of steps, the GPU's memory and overheads (the core
    caches the per-model sums the memory and the step time read: parameters, FLOPs by part, activation terms)."""

    def __init__(self, shape: ModelShape, gpu_spec: GpuSpec, base: TrainingSetup) -> None:
        assert base.global_batch is not None
        self.shape, self.gpu, self.base = shape, gpu_spec, base
        self.peak = training.peak_flops_per_s(gpu_spec, base.precision)
        self.model_flops = training.model_training_flops(shape, base.seq_len, base.tokens)
        self.steps = base.tokens / (base.global_batch * base.seq_len)
        self.capacity = hardware.memory_bytes(gpu_spec)
        self.overhead = fit.overhead_bytes(self.capacity, base.cuda_context_gib, base.allocator_reserve)
        mfu = training.run_mfu(base)  # train's: --mfu, else its default (the search's base has no --hfu)
        assert mfu is not None
        # The run's wall clock where the step time cannot be predicted, as `train` gives it (ASSUMED_MAIN_TERM).
        self.assumed_seconds = throughput.seconds_at_mfu(self.model_flops, base.gpus, self.peak, mfu)
        self.prices: dict[int, TrainLayout] = {}  # `priced`, by the candidate's identity

    def memory(self, setup: TrainingSetup) -> dict[str, int]:
        """What the layout holds per GPU (`training.memory_per_gpu`)."""
        return training.memory_per_gpu(self.shape, setup)

    def activations(self, setup: TrainingSetup, recompute: Recompute, activations: dict[Recompute, int]) -> int:
        """The activation bytes of `setup` under `recompute`, kept in `activations` for one parallel shape,
        micro-batch and v: they do not change with ZeRO or offload."""
        if recompute not in activations:
            activations[recompute] = training.activation_bytes_per_gpu(
                self.shape, with_options(setup, recompute=recompute)
            )
        return activations[recompute]

    def model_states(
        self, setup: TrainingSetup, zero: int, offload: Offload, states: dict[tuple[int, Offload], int]
    ) -> int:
        """What `setup` holds under `zero` and `offload` besides its activations: `training.memory_per_gpu`'s total
        with the activations given as none, so that the total with them is this plus theirs (the total is the sum
        of its parts). Kept in `states` for one parallel shape and micro-batch: memory_per_gpu's weights, gradients
        and optimizer states read neither the recomputation nor v (tests/test_plan.py checks it), which change
        only the activations."""
        key = (zero, offload)
        if key not in states:
            states[key] = training.memory_per_gpu(self.shape, with_options(setup, zero=zero, offload=offload), 0)[
                "total"
            ]
        return states[key]

    def held(self, candidate: Fitting) -> tuple[TrainingSetup, dict[str, int]]:
        """A layout that fits, made: its setup and what it holds (`training.memory_per_gpu`)."""
        setup = candidate.setup()
        return setup, training.memory_per_gpu(self.shape, setup, candidate.activations)

    def fits(self, held: dict[str, int]) -> bool:
        return self.fits_bytes(held["total"])

    def fits_bytes(self, total: int) -> bool:
        return fit.fits(total, self.overhead, self.capacity)

    def layer(self, setup: TrainingSetup, layers: dict[LayerKey, dict[str, float]]) -> dict[str, float]:
        """One layer's times (`step_time.layer_seconds`), kept in `layers` by recomputation and whether ZeRO-3 shards
        the weights (its GEMMs' share of MAMF, costs/efficiency.py) for one parallel shape and micro-batch: they do not
        change with v, offload or ZeRO below 3."""
        key = (setup.recompute, setup.zero == 3)
        if key not in layers:
            layers[key] = step_time.layer_seconds(self.shape, self.gpu, setup)
        return layers[key]

    def priced(self, candidate: Fitting) -> TrainLayout:
        """`price` of a layout that fits, kept: the branch and bound prices a shape's best layouts as it goes, and
        `price_ranked` asks for them again."""
        key = id(candidate)  # the search's list of fitting layouts keeps every candidate alive
        if key not in self.prices:
            self.prices[key] = self.price(*self.held(candidate), candidate.layer)
        return self.prices[key]

    def price(self, setup: TrainingSetup, held: dict[str, int], layer: dict[str, float] | None = None) -> TrainLayout:
        """The layout's step time, days, MFU and cost (`layer`: its `layer_seconds`, when known): predicted where the
        GPU table can (`step_time.can_predict`), else at train's default MFU (ASSUMED_MAIN_TERM)."""
        predicted = step_time.can_predict(self.gpu, setup)
        if predicted:
            parts = step_time.step_seconds(self.shape, self.gpu, setup, layer)
            step, seconds = parts["total"], self.steps * parts["total"]
            main_term = max((key for key in parts if key != "total"), key=lambda key: parts[key])
        else:
            seconds, main_term = self.assumed_seconds, ASSUMED_MAIN_TERM
            step = seconds / self.steps
        price = self.base.price_per_gpu_hour
        return TrainLayout(
            setup=setup,
            step_seconds=step,
            days=seconds / training.SECONDS_PER_DAY,
            mfu=throughput.utilization(self.model_flops, seconds, setup.gpus, self.peak),
            memory_per_gpu_bytes=held["total"],
            host_bytes=held["host"],
            main_term=main_term,
            cost=None if price is None else training.training_cost(training.gpu_hours(seconds, setup.gpus), price),
            predicted=predicted,
        )


def search_training(
    shape: ModelShape, gpu_spec: GpuSpec, base: TrainingSetup, top: int | None = None, collapse: bool = False
) -> Search:
    """Every legal training layout of `base` (its GPUs, tokens, T, global batch, precision and optimizer kept),
    those that fit ranked fastest first (module docstring): all of them priced, or with `top`, those the best
    `top` need (`price_ranked`). `collapse`: layouts equal but for a higher ZeRO stage listed once (collapse_zero),
    as `tfcost plan` shows them."""
    if base.global_batch is None:
        base = base.model_copy(update={"global_batch": default_global_batch(base.seq_len)})
    pricer = TrainPricer(shape, gpu_spec, base)
    found, fitting = Search(), list[Fitting]()
    structures = list(legal_shapes(shape, base, found))
    if top is None:
        for structure in structures:
            search_shape(pricer, structure, found, fitting)
        found.layouts = price_ranked(pricer, fitting, top)
        return found
    # Branch and bound over the parallel shapes: the shapes whose step time is predicted, by their lower bound
    # (`shape_bound`), each searched whole and its fitting layouts priced by their own bounds (as `price_ranked`),
    # until a shape's bound exceeds the top-th best step time found: no layout below it nor below any later shape can
    # rank among the best, so the best `top` are exactly the whole search's. Offload and layouts at the default MFU
    # rank after every predicted one that fits without offload (`rank`): they cannot displace those.
    predicted = [structure for structure in structures if step_time.can_predict(gpu_spec, structure)]
    for structure in structures:
        if not step_time.can_predict(gpu_spec, structure):
            search_shape(pricer, structure, found, fitting)
    best: list[float] = []  # the `top` smallest step times of fitting layouts without offload, negated
    ordered = sorted(zip(map(lambda st: shape_bound(pricer, st), predicted), range(len(predicted)), predicted,
                         strict=True))  # fmt: skip
    for index, (bound, _, structure) in enumerate(ordered):
        if len(best) == top and bound > -best[0]:
            for _, _, rest in ordered[index:]:
                count_unsearched(pricer, rest, found)
            break
        start = len(fitting)
        search_shape(pricer, structure, found, fitting)
        for candidate in sorted(fitting[start:], key=lambda f: f.bound):
            if candidate.offload != "none" or (len(best) == top and candidate.bound > -best[0]):
                continue
            step = pricer.priced(candidate).step_seconds
            (heapq.heappush if len(best) < top else heapq.heappushpop)(best, -step)
    found.layouts = price_ranked(pricer, fitting, top)
    if collapse:
        found.layouts = collapse_zero(found.layouts)
        more = 0
        while top is not None and len(found.layouts) < top and top + more < len(fitting):  # some went: price more
            more += top - len(found.layouts)
            found.layouts = collapse_zero(price_ranked(pricer, fitting, top + more))
        found.layouts = found.layouts[:top]
    return found


def collapse_zero(layouts: list[TrainLayout]) -> list[TrainLayout]:
    """The layouts, ranked, less each that differs from another only in a higher ZeRO stage with the same step time
    and memory (on one data-parallel replica every stage holds the same; under pipeline parallelism ZeRO-2 holds its
    gradients as ZeRO-1, `training.held_zero_stage`): the lowest stage stands for them, as it asks the least of a
    framework."""
    lowest: dict[tuple[str, float, int, int], int] = {}
    keys = []
    for layout in layouts:
        key = (layout.setup.model_copy(update={"zero": 0}).model_dump_json(), layout.step_seconds,
               layout.memory_per_gpu_bytes, layout.host_bytes)  # fmt: skip
        keys.append(key)
        lowest[key] = min(lowest.get(key, layout.setup.zero), layout.setup.zero)
    return [layout for layout, key in zip(layouts, keys, strict=True) if layout.setup.zero == lowest[key]]


def search_shape(pricer: TrainPricer, structure: TrainingSetup, found: Search, fitting: list[Fitting]) -> None:
    """Every micro-batch, virtual-stage count and option over one parallel shape: those that fit appended to
    `fitting`, the others counted in `found` under their reason."""
    shape, batch = pricer.shape, pricer.base.global_batch
    assert batch is not None
    predicted = step_time.can_predict(pricer.gpu, structure)  # it reads only the parallel shape
    too_big = False  # the micro-batches are tried smallest first: once none fits, no larger one will
    for micro_batch in divisors(batch // structure.data_parallel):
        layers: dict[LayerKey, dict[str, float]] = {}
        states: dict[tuple[int, Offload], int] = {}
        for virtual in virtual_stage_counts(shape, structure):
            setup = with_options(structure, micro_batch=micro_batch, virtual_stages=virtual)
            try:
                stages = parallel.check_layout(shape, setup)
            except UsageError as error:
                found.reject(rule_reason(error, shape))
                continue
            activations: dict[Recompute, int] = {}
            if too_big or not pricer.fits_bytes(
                pricer.model_states(setup, LEAST_ZERO, LEAST_OFFLOAD, states)
                + pricer.activations(setup, LEAST_RECOMPUTE, activations)
            ):
                found.reject(DOES_NOT_FIT, OPTIONS_PER_LAYOUT)
                too_big = too_big or virtual == 1
                continue
            search_options(pricer, setup, max(stages), found, layers if predicted else None, states, activations,
                           fitting)  # fmt: skip


def count_unsearched(pricer: TrainPricer, structure: TrainingSetup, found: Search) -> None:
    """A parallel shape the bound leaves unsearched, counted as the whole search would count it: each micro-batch and
    virtual-stage count a layout rule refuses once under its reason, each other one's OPTIONS_PER_LAYOUT options
    under CANNOT_RANK (the search never learns whether they fit)."""
    shape, batch = pricer.shape, pricer.base.global_batch
    assert batch is not None
    for micro_batch in divisors(batch // structure.data_parallel):
        for virtual in virtual_stage_counts(shape, structure):
            try:
                parallel.check_layout(shape, with_options(structure, micro_batch=micro_batch, virtual_stages=virtual))
            except UsageError as error:
                found.reject(rule_reason(error, shape))
                continue
            found.reject(CANNOT_RANK, OPTIONS_PER_LAYOUT)


# The bound's margin for rounding: a GEMM's routed rows at b = 1 are rounded to whole rows (Model.gemm_groups), so b
# x them may exceed the rows at b by up to half a row each; a thousandth of the bound covers it many times over.
BOUND_MARGIN = 1e-3


def shape_bound(pricer: TrainPricer, structure: TrainingSetup) -> float:
    """A lower bound on the step time of every layout over one parallel shape, whatever its micro-batch b, virtual
    stages v and options: one layer's `step_time.layer_seconds` at b = 1, ideal (the GEMMs at the GPU's best
    efficiency, the parts that do not grow with b left out: b x it is under the layer's time at b) with no
    recomputation and no ZeRO-3 (each only adds time); the busiest stage runs its S layers m times a step, m b = B /
    dp, and idles (p - 1)/v of one micro-batch, at least (p - 1)/v_max of b = 1: S x layer x (B / dp + (p - 1)/v_max).
    Every other part of the step (head, sends, data-parallel sync, optimizer) is a time, never negative.
    tests/test_plan.py checks it under every layout of several searches."""
    shape, batch = pricer.shape, pricer.base.global_batch
    assert batch is not None
    stages = parallel.stage_layers(
        layer_count(shape), structure.pp, structure.pp_first_layers, structure.pp_last_layers
    )
    lightest = with_options(structure, micro_batch=1, virtual_stages=1, recompute="none", zero=0)
    layer = sum(step_time.layer_seconds(shape, pricer.gpu, lightest, ideal=True).values())
    most_virtual = max(virtual_stage_counts(shape, structure))
    sequences = batch / structure.data_parallel + (structure.pp - 1) / most_virtual
    return max(stages) * layer * sequences * (1 - BOUND_MARGIN)


def step_bound(stage: int, m: int, pp: int, virtual_stages: int, layer: dict[str, float]) -> float:
    """A lower bound on `step_time.step_seconds`, from one layer's times alone: the busiest stage runs m
    micro-batches through at least the largest stage's S layers (a stage with fewer is the busiest only when the
    head makes it slower), and the bubble idles (p - 1)/(v m) of that, m S x layer (1 + (p - 1)/(v m)); every other
    part (the head, the pipeline sends, the data-parallel sync, the optimizer) is a time, never negative.
    tests/test_plan.py checks the bound against every layout of several searches. `stage`: S, the most layers a
    stage holds."""
    return m * stage * sum(layer.values()) * (1 + parallel.bubble_fraction(pp, m, virtual_stages))


def price_ranked(pricer: TrainPricer, fitting: list[Fitting], top: int | None) -> list[TrainLayout]:
    """The layouts that fit, priced and ranked (`rank`): all, or with `top`, only as many as the best `top` need.
    Taken by their lower bound (`step_bound`), those that do not need offload first (they rank first), a layout is
    left unpriced once its bound exceeds the top-th best step time already found: it cannot rank among the top
    (branch and bound: the best `top` are exactly those the whole pricing gives). Layouts at train's default MFU
    (ASSUMED_MAIN_TERM) share one step time: the `top` changing the fewest options are priced."""
    base, priced = pricer.base, list[TrainLayout]()
    for kind in ((False, False), (False, True), (True, False), (True, True)):  # `rank`'s: (offload, MFU assumed)
        group = [f for f in fitting if (f.offload != "none", f.layer is None) == kind]
        wanted = None if top is None else top - len(priced)
        if wanted is not None and wanted <= 0:
            break
        if kind[1]:  # one step time for all: they rank by the options changed alone
            nearest = sorted(group, key=lambda f: distance(base, f.setup()))
            priced.extend(pricer.price(*pricer.held(candidate)) for candidate in nearest[:wanted])
            continue
        best: list[float] = []  # the `wanted` smallest step times so far, negated (a max-heap)
        for candidate in sorted(group, key=lambda f: f.bound):
            if wanted is not None and len(best) == wanted and candidate.bound > -best[0]:
                break
            layout = pricer.priced(candidate)
            priced.append(layout)
            if wanted is not None:
                (heapq.heappush if len(best) < wanted else heapq.heappushpop)(best, -layout.step_seconds)
    return sorted(priced, key=lambda layout: rank(base, layout))


def rank(base: TrainingSetup, layout: TrainLayout) -> tuple[bool, bool, float, int]:
    """Fastest first, but every layout that needs offload after every one that does not: its step time leaves the
    host traffic out, so it cannot be compared with theirs; and among each, every layout whose step time is
    predicted before every one at train's default MFU (ASSUMED_MAIN_TERM). Ties: the layout nearer the one asked
    for."""
    return layout.setup.offload != "none", not layout.predicted, layout.step_seconds, distance(base, layout.setup)


def with_options(setup: TrainingSetup, **options: object) -> TrainingSetup:
    """`setup.model_copy(update=options)`, for options the search sets from its own legal values (a user's input is
    validated where it is read): Llama 3.1 405B on 16,384 GPUs makes ~110,000 of these, and pydantic's copy, which
    copies each of the model's dicts through `copy.copy`, was a sixth of that search's time."""
    copied = object.__new__(TrainingSetup)
    object.__setattr__(copied, "__dict__", {**setup.__dict__, **options})
    object.__setattr__(copied, "__pydantic_fields_set__", setup.__pydantic_fields_set__ | options.keys())
    object.__setattr__(copied, "__pydantic_extra__", None)
    object.__setattr__(copied, "__pydantic_private__", None)
    return copied


def search_options(
    pricer: TrainPricer,
    setup: TrainingSetup,
    stage: int,
    found: Search,
    layers: dict[LayerKey, dict[str, float]] | None,
    states: dict[tuple[int, Offload], int],
    activations: dict[Recompute, int],
    fitting: list[Fitting],
) -> None:
    """Recomputation x ZeRO x offload over one parallel layout: offload only where the layout does not fit
    without it, the lighter offload first. Less recomputation never holds less, so the offloads a more recomputing
    setting could not fit without are refused for a less recomputing one untried (counted all the same). `stage`:
    the most layers a pipeline stage holds; `layers`, `states`, `activations`: what the search keeps of one parallel
    shape and micro-batch (and v: `activations`), as `TrainPricer.layer`, `model_states` and `activations` (`layers`
    None: the GPU table cannot predict the step time, ASSUMED_MAIN_TERM, which is then its own bound). What a
    setting holds is its model states plus its activations, plain sums: no setup is made for a setting until it is
    priced (`price_ranked`)."""
    m = parallel.micro_batches(setup)
    held = {recompute: pricer.activations(setup, recompute, activations) for recompute in RECOMPUTES}
    bounds: dict[LayerKey, float] = {}
    searched = does_not_fit = fits_without_offload = 0
    fits, overhead, capacity = fit.fits, pricer.overhead, pricer.capacity  # the inner loop's names, looked up once
    for zero in ZERO_STAGES:
        lightest = 0  # the first offload that can fit at this ZeRO stage, from the recomputations tried so far
        for recompute in RECOMPUTES[::-1]:
            does_not_fit += lightest
            searched += lightest
            for index in range(lightest, len(OFFLOADS)):
                offload = OFFLOADS[index]
                searched += 1
                model_states = states.get((zero, offload))
                if model_states is None:
                    model_states = pricer.model_states(setup, zero, offload, states)
                if fits(model_states + held[recompute], overhead, capacity):  # as `TrainPricer.fits`
                    key = (recompute, zero == 3)  # as `TrainPricer.layer`
                    if key not in bounds:
                        if layers is None:
                            bounds[key] = pricer.assumed_seconds / pricer.steps
                        else:
                            layer = pricer.layer(with_options(setup, recompute=recompute, zero=zero), layers)
                            bounds[key] = step_bound(stage, m, setup.pp, setup.virtual_stages, layer)
                    fitting.append(
                        Fitting(
                            setup, zero, recompute, offload, held[recompute],
                            None if layers is None else layers[key], bounds[key],
                        )
                    )  # fmt: skip
                    found.feasible += 1
                    fits_without_offload += len(OFFLOADS) - index - 1
                    searched += len(OFFLOADS) - index - 1
                    break
                does_not_fit += 1
                lightest = index + 1
    found.searched += searched
    found.rejected[DOES_NOT_FIT] += does_not_fit  # the key, as before, even at 0: the reasons' order is the JSON's
    if bounds:  # a setting fit
        found.rejected[FITS_WITHOUT_OFFLOAD] += fits_without_offload


def changed_fields(base: TrainingSetup, setup: TrainingSetup) -> list[str]:
    """The layout options `setup` sets otherwise than `base` (sequence parallelism follows tp: not counted)."""
    return [name for name in LAYOUT_FIELDS[:-1] if getattr(base, name) != getattr(setup, name)]


def distance(base: TrainingSetup, setup: TrainingSetup) -> int:
    """How many layout options differ: the nearest layout changes the fewest."""
    return len(changed_fields(base, setup))


# The suggestion under `train` -------------------------------------------------------------------------------

# The most layouts (memory and step-time evaluations) the suggestion looks at: about a second on one core (0.1 ms
# each for DeepSeek-V3's 61 layers). It searches outward from the asked layout, one changed option at a time, so
# it finds the nearest layout long before this wherever one is near; `tfcost plan train` searches them all.
NEAREST_BUDGET = 10_000
ENDS = ("pp_first_layers", "pp_last_layers")


def end_stages(shape: ModelShape, setup: TrainingSetup) -> tuple[int, int] | None:
    """The first and last stages' layers as the split gives them; None without pipeline parallelism."""
    if setup.pp == 1:
        return None
    stages = parallel.stage_layers(layer_count(shape), setup.pp, setup.pp_first_layers, setup.pp_last_layers)
    return stages[0], stages[-1]


def suggested_options(shape: ModelShape, asked: TrainingSetup, setup: TrainingSetup) -> dict[str, object] | None:
    """The options to add to the asked command line for `setup`, by name (the order of LAYOUT_FIELDS), or None when
    they cannot say it. The end stages' layers count as changed only where they differ from what the asked ones
    give: `--pp-first-layers 4` on 16 stages of DeepSeek-V3's 61 layers with `--pp-last-layers 1` is the even split
    of the other 60, so a layout that leaves `pp_first_layers` unset there changes nothing; where they do change,
    the option names the stage's layers as a number. A layout without pipeline parallelism cannot drop a
    `--pp-first/last-layers` the asked one gives (an option can be changed, not removed): None."""
    if asked.pp_layout is not None and setup.pp_layout != asked.pp_layout:
        return None  # an asked --pp-layout cannot be dropped by adding options
    options: dict[str, object] = {}
    for name in LAYOUT_FIELDS[:-1]:
        if name not in ENDS and getattr(asked, name) != getattr(setup, name):
            options[name] = getattr(setup, name)
    if asked.pp_first_layers is None and asked.pp_last_layers is None:
        options.update({name: getattr(setup, name) for name in ENDS if getattr(setup, name) is not None})
    else:
        ends = end_stages(shape, setup)
        if ends is None:
            return None
        for name, asked_value, value in zip(ENDS, end_stages(shape, asked) or (None, None), ends, strict=True):
            if asked_value != value or (getattr(asked, name) is None and getattr(setup, name) is not None):
                options[name] = value
    if setup.sequence_parallel != asked.sequence_parallel:
        options["sequence_parallel"] = setup.sequence_parallel
    return {name: options[name] for name in LAYOUT_FIELDS if name in options}


@dataclass
class Candidates:
    """The settings below one parallel shape that the nearest-layout search has looked at, kept across its rounds
    so that each memory evaluation is done once: per (micro-batch, v), the setup (None: a rule refuses it, or even
    the least-memory options do not fit), and per (micro-batch, v, ZeRO, recompute), the lightest offload that fits
    (None: none)."""

    structure: TrainingSetup
    changed: int  # options changed by the shape alone (tp, pp, cp, ep, the end stages)
    setups: dict[tuple[int, int], TrainingSetup | None] = field(default_factory=dict)
    offloads: dict[tuple[int, int, int, str], Offload | None] = field(default_factory=dict)
    smallest_too_big: int | None = None  # the smallest micro-batch whose least-memory options do not fit at v = 1


def nearest_training_layout(
    shape: ModelShape, gpu_spec: GpuSpec, asked: TrainingSetup
) -> tuple[TrainLayout | None, Search]:
    """The layout that fits closest to the one asked for (fewest options changed, then `rank`: fastest), with its
    GPUs, tokens, T and global batch (as given, or as the asked layout implies: b x N_d x m), and what the search
    looked at; (None, ...) when none fits within NEAREST_BUDGET evaluations.

    The same layouts `search_training` tries, searched outward from the asked one: round k keeps the layouts that
    change exactly k options and stops at the first round that finds one (each memory evaluation is done once over
    all rounds), so a layout one option away costs a few evaluations where the whole search of DeepSeek-V3 on
    2,048 GPUs is 1.3 million (tests/test_plan.py checks that both give the same layout)."""
    base = asked.model_copy(
        update={"global_batch": parallel.global_batch(asked), "mfu": None, "hfu": None, "tflops_per_gpu": None}
    )
    pricer, found = TrainPricer(shape, gpu_spec, base), Search()
    batch = base.global_batch
    assert batch is not None
    shapes: list[Candidates] = []
    for structure in legal_shapes(shape, base, found):
        options = suggested_options(shape, asked, structure.model_copy(update=asked_settings(asked)))
        if options is not None:
            shapes.append(Candidates(structure, len(options) - ("sequence_parallel" in options)))
    shapes.sort(key=lambda candidates: candidates.changed)
    evaluations = 0
    for limit in range(len(LAYOUT_FIELDS)):
        kept: list[TrainingSetup] = []
        for candidates in shapes:
            if candidates.changed > limit or evaluations > NEAREST_BUDGET:
                break
            evaluations += collect(pricer, asked, candidates, limit, kept, found)
        if kept:  # every layout nearer was tried in the rounds before
            priced = [pricer.price(setup, pricer.memory(setup)) for setup in kept]
            found.layouts.extend(priced)
            found.feasible += len(priced)
            return min(priced, key=lambda layout: rank(asked, layout)), found
        if evaluations > NEAREST_BUDGET:
            found.cut_short = True
            break
    return None, found


def asked_settings(asked: TrainingSetup) -> dict[str, object]:
    """The settings below the parallel shape, as asked."""
    return {name: getattr(asked, name) for name in ("micro_batch", "virtual_stages", "zero", "recompute", "offload")}


def collect(
    pricer: TrainPricer, asked: TrainingSetup, candidates: Candidates, limit: int, kept: list[TrainingSetup],
    found: Search,
) -> int:  # fmt: skip
    """Add to `kept` the layouts of one parallel shape that fit and change exactly `limit` options from `asked`
    (the lightest offload that fits, as `search_options` keeps); returns the memory evaluations it made."""
    structure, evaluations = candidates.structure, 0
    batch = pricer.base.global_batch
    assert batch is not None
    for micro_batch in divisors(batch // structure.data_parallel):
        changed_batch = candidates.changed + (micro_batch != asked.micro_batch)
        if changed_batch > limit:
            continue
        if candidates.smallest_too_big is not None and micro_batch >= candidates.smallest_too_big:
            break  # a larger micro-batch never holds less, nor a larger v (tests/test_plan.py)
        for virtual in virtual_stage_counts(pricer.shape, structure):
            changed_virtual = changed_batch + (virtual != asked.virtual_stages)
            if changed_virtual > limit:
                continue
            key = (micro_batch, virtual)
            if key not in candidates.setups:
                setup: TrainingSetup | None = structure.model_copy(
                    update={"micro_batch": micro_batch, "virtual_stages": virtual}
                )
                try:
                    parallel.check_layout(pricer.shape, setup)  # type: ignore[arg-type]
                except UsageError as error:
                    found.reject(rule_reason(error, pricer.shape))
                    setup = None
                if setup is not None:
                    evaluations += 1
                    if not pricer.fits(pricer.memory(setup.model_copy(update=LEAST_MEMORY))):
                        found.reject(DOES_NOT_FIT, OPTIONS_PER_LAYOUT)
                        setup = None
                        if virtual == 1:
                            candidates.smallest_too_big = min(micro_batch, candidates.smallest_too_big or micro_batch)
                candidates.setups[key] = setup
            setup = candidates.setups[key]
            if setup is None:
                continue
            for zero, recompute in itertools.product(ZERO_STAGES, RECOMPUTES):
                changed = changed_virtual + (zero != asked.zero) + (recompute != asked.recompute)
                if changed > limit:
                    continue
                option_key = (micro_batch, virtual, zero, recompute)
                if option_key not in candidates.offloads:
                    candidates.offloads[option_key] = None
                    for offload in OFFLOADS:
                        evaluations += 1
                        update = {"zero": zero, "recompute": recompute, "offload": offload}
                        if pricer.fits(pricer.memory(setup.model_copy(update=update))):
                            candidates.offloads[option_key] = offload
                            break
                lightest = candidates.offloads[option_key]
                if lightest is not None and changed + (lightest != asked.offload) == limit:
                    kept.append(setup.model_copy(update={"zero": zero, "recompute": recompute, "offload": lightest}))
    return evaluations


# Serving ---------------------------------------------------------------------------------------------------

# A checkpoint stored at 16 bits may be served as it is or quantized: the weight formats tried unless told otherwise.
SERVING_WEIGHTS: tuple[WeightsDtype, ...] = ("bf16", "fp8", "int8", "int4")
SERVING_KV: tuple[Dtype, ...] = ("bf16", "fp8")
WEIGHTS_DO_NOT_FIT = "the weights leave no room for one sequence's KV cache"
MISSES_TTFT = "misses the time-to-first-token target"
MISSES_TPOT = "misses the time-per-output-token target"


@dataclass(frozen=True)
class ServeOutcome:
    """What `serve`'s expected figures say of one serving setup (tfcost.reports.serve.serve_expected)."""

    ttft_ms: float
    tpot_ms: float
    tokens_per_s: float  # B / TPOT, one replica
    tokens_per_s_per_sequence: float  # 1 / TPOT
    memory_per_gpu_bytes: int
    fits: bool
    max_batch: int
    mean_batch: float | None = None  # under load: the sequences a step carried, mean
    usd_per_million_output_tokens: float | None = None  # under load, with a price a GPU-hour
    joules_per_output_token: float | None = None  # under load, where the GPU's board power is known


# Under load (--concurrency or --rate), a layout the load model does not price (pipeline stages, attention data
# parallelism, an encoder-decoder model) is refused for this reason.
NOT_UNDER_LOAD = "not modelled under load (pipeline or attention data parallelism)"


@dataclass(frozen=True)
class ServeLayout:
    """One serving layout that fits and meets the targets: t GPUs a replica, N / t replicas."""

    setup: ServingSetup
    replicas: int
    outcome: ServeOutcome
    tokens_per_s_per_gpu: float

    @property
    def tokens_per_s_per_user(self) -> float:
        return self.outcome.tokens_per_s_per_sequence


@dataclass
class ServeSearch:
    """A serving search: how many layouts, why each refused one was, those kept (best first) and their front."""

    searched: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    layouts: list[ServeLayout] = field(default_factory=list)
    pareto: list[ServeLayout] = field(default_factory=list)

    def reject(self, reason: str, count: int = 1) -> None:
        self.searched += count
        self.rejected[reason] += count

    @property
    def feasible(self) -> int:
        return len(self.layouts)

    def most_rejected(self) -> str | None:
        return self.rejected.most_common(1)[0][0] if self.rejected else None


def serving_weights(shape: ModelShape, asked: Sequence[WeightsDtype] | None) -> list[WeightsDtype | None]:
    """The weight formats to try: a quantized checkpoint as it is stored (None: its quantization_config), a 16-bit
    one as `asked` or SERVING_WEIGHTS."""
    if shape.quantization is not None:
        return [None]
    return list(asked or SERVING_WEIGHTS)


def serving_layouts(shape: ModelShape, gpus: int) -> Iterator[tuple[int, int, int]]:
    """(tp, pp, ep) of every replica whose GPUs divide `gpus`: pp stages of s GPUs over every divisor, and in a stage
    t in tensor parallel over the divisors of s; for a mixture-of-experts model the experts split over the stage's
    s GPUs when t < s (vLLM's --enable-expert-parallel with s / t attention data-parallel ranks) and, where t = s,
    by tensor parallelism (ep = 1) or by expert parallelism (ep = t). A dense model's stage is its t GPUs."""
    for replica in divisors(gpus):
        for pp in divisors(replica):
            stage = replica // pp
            for tp in divisors(stage):
                if shape.moe is None:
                    if tp == stage:
                        yield tp, pp, 1
                elif tp < stage:
                    yield tp, pp, stage
                else:
                    yield from ((tp, pp, ep) for ep in sorted({1, stage}))


def search_serving(
    shape: ModelShape,
    gpus: int,
    base: ServingSetup,
    evaluate: Callable[[ServingSetup], ServeOutcome],
    ttft_ms: float | None = None,
    tpot_ms: float | None = None,
    weights: Sequence[WeightsDtype] | None = None,
    kv_dtypes: Sequence[Dtype] | None = None,
) -> ServeSearch:
    """Every serving layout of `gpus` GPUs: replicas of tp x pp x ep (`serving_layouts`; vLLM's rules,
    `serving.check_tensor_parallel` and `serving.check_parallel`) and gpus / (their GPUs) replicas, each weight and
    KV format, batches as `serving_batches`; kept when it fits and its expected TTFT and TPOT meet the targets;
    ranked by tokens/s per GPU, with the Pareto front against tokens/s per user. A replica's GPUs are priced on the
    intra-node link, wherever they are."""
    found = ServeSearch()
    for tp, pp, ep in serving_layouts(shape, gpus):
        try:
            serving.check_tensor_parallel(shape, tp)
        except UsageError as error:
            found.reject(rule_reason(error, shape).replace("gpus", "tp"))
            continue
        try:
            serving.check_parallel(shape, tp, pp, ep)
        except UsageError as error:
            found.reject(rule_reason(error, shape))
            continue
        replica = pp * serving.stage_gpus(tp, ep)
        for weights_dtype in serving_weights(shape, weights):
            for kv_dtype in kv_dtypes or SERVING_KV:
                first = base.model_copy(
                    update={
                        "gpus": tp, "pp": pp, "ep": ep, "weights_dtype": weights_dtype, "kv_dtype": kv_dtype,
                        "batch": 1,
                    }
                )  # fmt: skip
                if base.under_load:  # one simulated benchmark of the load on each replica
                    search_under_load(found, first, gpus // replica, replica, evaluate, ttft_ms, tpot_ms)
                    continue
                at_one = evaluate(first)  # batch 1's figures, and the largest batch the KV pool holds
                if at_one.max_batch < 1:
                    found.reject(WEIGHTS_DO_NOT_FIT)
                    continue
                batches = serving_batches(at_one.max_batch)
                for tried, batch in enumerate(batches):
                    setup = first if batch == 1 else first.model_copy(update={"batch": batch})
                    outcome = at_one if batch == 1 else evaluate(setup)
                    if not outcome.fits:
                        # Memory grows with the batch (the KV cache held, the profile run's workspace), so no
                        # larger batch fits either: counted as refused without pricing them.
                        found.reject(DOES_NOT_FIT, len(batches) - tried)
                        break
                    if ttft_ms is not None and outcome.ttft_ms > ttft_ms:
                        found.reject(MISSES_TTFT)
                    elif tpot_ms is not None and outcome.tpot_ms > tpot_ms:
                        found.reject(MISSES_TPOT)
                    else:
                        found.searched += 1
                        found.layouts.append(
                            ServeLayout(setup, gpus // replica, outcome, outcome.tokens_per_s / replica)
                        )
    if base.rate is not None:  # at a given rate every layout serves the same tokens: the fastest per user first
        found.layouts.sort(key=lambda layout: (-layout.tokens_per_s_per_user, -layout.tokens_per_s_per_gpu))
    else:
        found.layouts.sort(key=lambda layout: (-layout.tokens_per_s_per_gpu, -layout.tokens_per_s_per_user))
    found.pareto = pareto_front(found.layouts, lambda p: p.tokens_per_s_per_gpu, lambda p: p.tokens_per_s_per_user)
    return found


def search_under_load(
    found: ServeSearch,
    setup: ServingSetup,
    replicas: int,
    replica_gpus: int,
    evaluate: Callable[[ServingSetup], ServeOutcome],
    ttft_ms: float | None,
    tpot_ms: float | None,
) -> None:
    """One layout under the load: each replica gets the --concurrency asked for, or its share of the --rate; kept
    when its weights fit and its mean TTFT and TPOT meet the targets (tfcost.costs.scheduler's benchmark)."""
    if setup.rate is not None:
        setup = setup.model_copy(update={"rate": setup.rate / replicas})
    try:
        outcome = evaluate(setup)
    except UsageError as error:
        found.reject(NOT_UNDER_LOAD if "--pp" in str(error) or "encoder" in str(error) else str(error))
        return
    if not outcome.fits:
        found.reject(DOES_NOT_FIT)
    elif ttft_ms is not None and outcome.ttft_ms > ttft_ms:
        found.reject(MISSES_TTFT)
    elif tpot_ms is not None and outcome.tpot_ms > tpot_ms:
        found.reject(MISSES_TPOT)
    else:
        found.searched += 1
        batch = max(round(outcome.mean_batch or 1), 1)
        found.layouts.append(
            ServeLayout(
                setup.model_copy(update={"batch": batch}), replicas, outcome, outcome.tokens_per_s / replica_gpus
            )
        )


def nearest_serving_layout(
    shape: ModelShape, asked: ServingSetup, evaluate: Callable[[ServingSetup], ServeOutcome]
) -> ServeLayout | None:
    """The serving layout on the same GPUs that fits closest to the one asked for: the fewest of tp, pp, ep, weight
    format, KV format and batch changed, then the most tokens/s per GPU; None when none fits."""
    found = search_serving(shape, serving.replica_gpus(asked), asked, evaluate)

    def changes(layout: ServeLayout) -> int:
        return sum(getattr(layout.setup, name) != getattr(asked, name) for name in SERVING_FIELDS)

    return min(found.layouts, key=lambda layout: (changes(layout), -layout.tokens_per_s_per_gpu), default=None)


SERVING_FIELDS = ("gpus", "pp", "ep", "weights_dtype", "kv_dtype", "batch")


Point = TypeVar("Point")


def pareto_front(
    points: Sequence[Point], per_gpu: Callable[[Point], float], per_user: Callable[[Point], float]
) -> list[Point]:
    """The points no other beats on both tokens/s per GPU and tokens/s per user (AIConfigurator's front), by
    tokens/s per user ascending: taken fastest per user first, a point is on the front when its per-GPU
    throughput beats that of every point faster per user."""
    ordered = sorted(points, key=lambda p: (-per_user(p), -per_gpu(p)))
    front: list[Point] = []
    best = -math.inf
    for point in ordered:
        if per_gpu(point) > best:
            front.append(point)
            best = per_gpu(point)
    return front[::-1]


def serving_batches(max_batch: int) -> list[int]:
    """Batch sizes tried: the powers of two up to the largest batch that fits, and that largest batch."""
    if max_batch < 1:
        return []
    return sorted({*(2**i for i in range(max_batch.bit_length())), max_batch})
