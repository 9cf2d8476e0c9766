"""`tfcost plan train` and `tfcost plan serve`: the layouts that fit, best first, as typed reports (the search is
tfcost.costs.plan's; serving layouts are priced by `serve`'s expected figures, tfcost.reports.serve.serve_expected).
Also the nearest-layout suggestion `train` and `serve` print under a layout that does not fit."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from tfcost.costs import engine_memory, expected, parallel, serving, training
from tfcost.costs import plan as search
from tfcost.errors import UsageError, describe_validation_error
from tfcost.reports.base import PricedUnder
from tfcost.reports.suggestion import Suggestion
from tfcost.reports.train import TrainReport
from tfcost.schema import FrameworkUsed, GpuSpec, ModelShape, ServingSetup, TrainingSetup, WeightsDtype
from tfcost.units import Dtype

ReportT = TypeVar("ReportT", "TrainPlanReport", "ServePlanReport")

if TYPE_CHECKING:
    from tfcost.reports.serve import ServeReport

SetupT = TypeVar("SetupT", TrainingSetup, ServingSetup)


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class TrainPlanLayout(Frozen):
    """One training layout that fits (JSON keys as issue 23 lists them, then what reproduces and explains it)."""

    tp: int
    pp: int
    dp: int
    cp: int
    ep: int
    etp: int | None  # the routed experts' tensor-parallel size; None: tp's (Megatron-Core's default)
    virtual_stages: int
    zero: int
    recompute: str
    micro_batch: int
    global_batch: int
    offload: str
    step_seconds: float
    days: float
    mfu: float
    memory_per_gpu_bytes: int
    pp_first_layers: int | None
    pp_last_layers: int | None
    sequence_parallel: bool
    main_term: str
    host_bytes: int
    cost: float | None
    step_predicted: bool  # false: at train's default MFU, the GPU table lacking the figures to predict it


class TrainPlanReport(Frozen, PricedUnder):
    """Every legal layout of a training run searched: how many, why the refused ones were, the best that fit."""

    model: str
    gpu: str
    gpus: int
    tokens: int
    seq_len: int
    global_batch: int
    precision: str
    optimizer: str
    searched: int
    feasible: int
    rejected: dict[str, int]
    most_rejected: str | None
    layouts: list[TrainPlanLayout]


def train_layout(layout: search.TrainLayout) -> TrainPlanLayout:
    s = layout.setup
    return TrainPlanLayout(
        tp=s.tp, pp=s.pp, dp=s.data_parallel, cp=s.cp, ep=s.ep, etp=s.etp, virtual_stages=s.virtual_stages, zero=s.zero,
        recompute=s.recompute, micro_batch=s.micro_batch, global_batch=parallel.global_batch(s), offload=s.offload,
        step_seconds=layout.step_seconds, days=layout.days, mfu=layout.mfu,
        memory_per_gpu_bytes=layout.memory_per_gpu_bytes, pp_first_layers=s.pp_first_layers,
        pp_last_layers=s.pp_last_layers, sequence_parallel=s.sequence_parallel, main_term=layout.main_term,
        host_bytes=layout.host_bytes, cost=layout.cost, step_predicted=layout.predicted,
    )  # fmt: skip


def plan_train_setup(shape: ModelShape, gpu: GpuSpec, base: TrainingSetup, top: int) -> TrainPlanReport:
    """Search every legal layout of `base`'s GPUs (tfcost.costs.plan.search_training); the `top` fastest."""
    if base.global_batch is None:
        base = base.model_copy(update={"global_batch": search.default_global_batch(base.seq_len)})
    assert base.global_batch is not None
    found = search.search_training(shape, gpu, base, top, collapse=True)
    return TrainPlanReport(
        model=shape.name,
        gpu=gpu.name,
        gpus=base.gpus,
        tokens=base.tokens,
        seq_len=base.seq_len,
        global_batch=base.global_batch,
        precision=base.precision,
        optimizer=base.optimizer,
        searched=found.searched,
        feasible=found.feasible,
        rejected=dict(found.rejected.most_common()),
        most_rejected=found.most_rejected(),
        layouts=[train_layout(layout) for layout in found.layouts[:top]],
    )


class ServePlanLayout(Frozen):
    """One serving layout that fits and meets the targets (JSON keys as issue 23 lists them, then the replicas'
    total)."""

    tp: int
    pp: int
    ep: int
    replicas: int
    batch: int
    weights_dtype: str
    kv_dtype: str
    ttft_ms: float
    tpot_ms: float
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float
    memory_per_gpu_bytes: int
    tokens_per_s: float
    usd_per_million_output_tokens: float | None = Field(
        default=None,
        description="under load with --price-per-gpu-hour: $ per million output tokens",
        exclude_if=lambda value: value is None,
    )
    joules_per_output_token: float | None = Field(
        default=None,
        description="under load: energy per output token, J (the GPU's board power by phase)",
        exclude_if=lambda value: value is None,
    )


class ServePlanReport(Frozen, PricedUnder):
    """Every serving layout of the GPUs searched: how many, why the refused ones were, the best and the front."""

    model: str
    gpu: str
    gpus: int
    prompt: int
    generate: int
    ttft_ms_target: float | None
    tpot_ms_target: float | None
    load: str | None = Field(
        default=None,
        description="under load: the benchmark each layout was simulated on (targets on mean TTFT and TPOT)",
        exclude_if=lambda load: load is None,
    )
    searched: int
    feasible: int
    rejected: dict[str, int]
    most_rejected: str | None
    layouts: list[ServePlanLayout]
    pareto: list[ServePlanLayout]


def serving_evaluator(shape: ModelShape, gpu: GpuSpec) -> Callable[[ServingSetup], search.ServeOutcome]:
    """`serve`'s expected figures of a serving setup on this GPU (the GPU table's rates), as the search needs them."""
    # Imported here: `train`'s suggestion imports this module but never serve's report (~3 ms).
    from tfcost.reports.serve import serve_expected

    # What does not change with the batch, worked out once per weight format, reserve or layout, not per batch.
    usable_cache: dict[float, int] = {}
    rates_cache: dict[tuple[WeightsDtype | None, bool], expected.EngineRates] = {}
    weights_cache: dict[tuple[WeightsDtype | None, int, int, int], int] = {}

    def evaluate(setup: ServingSetup) -> search.ServeOutcome:
        setup = serving.with_weights_dtype(shape, setup)
        setup = engine_memory.with_card_max_num_seqs(setup, gpu)  # vLLM's larger default on large cards
        dtype = setup.weights_dtype
        if (dtype, setup.fp8_attention) not in rates_cache:
            compute = serving.compute_dtype(dtype, gpu, shape)
            rates_cache[dtype, setup.fp8_attention] = expected.table_rates(gpu, compute, setup.fp8_attention)
        if setup.reserve not in usable_cache:  # the memory the driver reports, as `serve` budgets it (vLLM's)
            usable_cache[setup.reserve] = engine_memory.engine_usable_bytes(gpu, setup.reserve)
        layout = (dtype, setup.gpus, setup.ep, setup.group_size)
        if layout not in weights_cache:
            served = serving.served_weight_bytes(shape, dtype, setup.group_size)
            weights_cache[layout] = serving.layout_weight_bytes_per_gpu(
                shape, served, dtype, setup.gpus, setup.ep, setup.group_size
            )
        if setup.under_load:  # the simulated benchmark: its mean TTFT and TPOT, its throughput
            from tfcost.reports.serve import serve_load

            static = serve_expected(
                shape, setup, rates_cache[dtype, setup.fp8_attention], usable_cache[setup.reserve],
                weights_cache[layout],
            )  # fmt: skip
            if not static.fits:  # the weights and one sequence do not fit: nothing to simulate
                return search.ServeOutcome(0, 0, 0, 0, static.total_bytes_per_gpu, False, static.max_batch)
            load = serve_load(shape, gpu, setup, rates_cache[dtype, setup.fp8_attention], weights_cache[layout])
            return search.ServeOutcome(
                ttft_ms=load.ttft_mean_ms,
                tpot_ms=load.tpot_mean_ms,
                tokens_per_s=load.output_tokens_per_s,
                tokens_per_s_per_sequence=load.output_tokens_per_s_per_user,
                memory_per_gpu_bytes=static.total_bytes_per_gpu,
                fits=True,
                max_batch=static.max_batch,
                mean_batch=load.mean_batch,
                usd_per_million_output_tokens=load.usd_per_million_output_tokens,
                joules_per_output_token=load.joules_per_output_token,
            )
        result = serve_expected(
            shape, setup, rates_cache[dtype, setup.fp8_attention], usable_cache[setup.reserve], weights_cache[layout]
        )
        return search.ServeOutcome(
            ttft_ms=result.ttft_ms,
            tpot_ms=result.tpot_ms,
            tokens_per_s=result.tokens_per_s,
            tokens_per_s_per_sequence=result.tokens_per_s_per_sequence,
            memory_per_gpu_bytes=result.total_bytes_per_gpu,
            fits=result.fits,
            max_batch=result.max_batch,
        )

    return evaluate


def serve_layout(layout: search.ServeLayout, shape: ModelShape) -> ServePlanLayout:
    s, outcome = layout.setup, layout.outcome
    return ServePlanLayout(
        tp=s.gpus, pp=s.pp, ep=s.ep, replicas=layout.replicas, batch=s.batch,
        weights_dtype=serving.weights_format(shape, s.weights_dtype), kv_dtype=s.kv_dtype, ttft_ms=outcome.ttft_ms,
        tpot_ms=outcome.tpot_ms, tokens_per_s_per_gpu=layout.tokens_per_s_per_gpu,
        tokens_per_s_per_user=layout.tokens_per_s_per_user, memory_per_gpu_bytes=outcome.memory_per_gpu_bytes,
        tokens_per_s=outcome.tokens_per_s * layout.replicas,
        usd_per_million_output_tokens=outcome.usd_per_million_output_tokens,
        joules_per_output_token=outcome.joules_per_output_token,
    )  # fmt: skip


def plan_serve_setup(
    shape: ModelShape,
    gpu: GpuSpec,
    gpus: int,
    base: ServingSetup,
    top: int,
    ttft_ms: float | None = None,
    tpot_ms: float | None = None,
    weights: Sequence[WeightsDtype] | None = None,
    kv_dtypes: Sequence[Dtype] | None = None,
) -> ServePlanReport:
    """Search every serving layout of `gpus` GPUs (tfcost.costs.plan.search_serving); the `top` best and the front."""
    serving.check_generates(shape)
    found = search.search_serving(
        shape, gpus, base, serving_evaluator(shape, gpu), ttft_ms, tpot_ms, weights, kv_dtypes
    )
    return ServePlanReport(
        model=shape.name,
        gpu=gpu.name,
        gpus=gpus,
        prompt=base.prompt,
        generate=base.generate,
        ttft_ms_target=ttft_ms,
        tpot_ms_target=tpot_ms,
        load=None
        if not base.under_load
        else (
            f"closed loop, {base.concurrency} requests in flight a replica"
            if base.concurrency is not None
            else f"Poisson arrivals, {base.rate:g} requests/s over all replicas"
        ),
        searched=found.searched,
        feasible=found.feasible,
        rejected=dict(found.rejected.most_common()),
        most_rejected=found.most_rejected(),
        layouts=[serve_layout(layout, shape) for layout in found.layouts[:top]],
        pareto=[serve_layout(layout, shape) for layout in found.pareto],
    )


# The searches as the command and the Python API ask for them (tfcost.api.plan_train, plan_serve) --------------


def validated(schema: type[SetupT], **fields: object) -> SetupT:
    """A setup from the options given (None: the schema's default); a complaint is one line naming the option."""
    from pydantic import ValidationError

    try:
        return schema.model_validate({name: value for name, value in fields.items() if value is not None})
    except ValidationError as error:
        names = {"seq_len": "--seq", "price_per_gpu_hour": "--price"}
        raise UsageError(
            describe_validation_error(error, lambda field: names.get(field, "--" + field.replace("_", "-")))
        ) from None


def names_of(value: str | Sequence[str] | None, option: str = "a list option") -> list[str]:
    """A list option given as "a,b" or as a sequence, each name once (a repeated name would be searched again for
    nothing), in the order given."""
    if value is not None and not isinstance(value, str | list | tuple):
        raise UsageError(f"{option}: expected names, comma-separated or as a list, not {type(value).__name__}")
    items = value.split(",") if isinstance(value, str) else list(value or ())
    if not all(isinstance(item, str) for item in items):
        raise UsageError(f"{option}: expected names, comma-separated or as a list")
    return list(dict.fromkeys(item.strip() for item in items if item.strip()))


# The search budget (docs/security.md). A plan lays out every way of splitting its GPUs into tp x pp x cp x dp
# (training) or replicas of tp x pp stages (serving): as many as the ordered factorizations of the GPU count into
# four factors, tau_4(gpus), which a count with many divisors makes large (720,720 GPUs: 89,600). Those, times the
# micro-batches tried (the divisors of the global batch) and the expert-parallel sizes (the divisors of the expert
# count) for training, or the weight and KV formats for serving, are the candidates the search lays out; past
# MAX_PLAN_CANDIDATES it is refused before it starts. Every power of two up to MAX_PLAN_GPUS stays inside it for
# dense models and for DeepSeek-V3 up to 4,096 GPUs.
MAX_PLAN_GPUS = 1 << 17  # 131,072: above the largest clusters trained on (about 100,000 H100s)
MAX_PLAN_GLOBAL_BATCH = 1 << 24  # sequences a step: Llama 3's 16M tokens a step is 16M sequences only at T = 1
MAX_PLAN_TOKENS_PER_SEQUENCE = 1 << 24  # --prompt and --generate, as `measure --step`'s cap is for its lengths
MAX_PLAN_TARGET_MS = 10_000_000  # --ttft-ms and --tpot-ms: about three hours
MAX_PLAN_CANDIDATES = 100_000


def divisor_count(n: int, factors: int = 2) -> int:
    """How many ways n is a product of `factors` ordered positive factors (factors = 2: n's divisors): for each
    prime power p^e of n, C(e + factors - 1, factors - 1) ways to share its exponent, multiplied."""
    from math import comb

    count, prime = 1, 2
    while prime * prime <= n:
        exponent = 0
        while n % prime == 0:
            n //= prime
            exponent += 1
        count *= comb(exponent + factors - 1, factors - 1)
        prime += 1
    return count * (factors if n > 1 else 1)


def check_plan_size(option: str, value: float | None, cap: int, low: int = 0, whole: bool = False) -> None:
    """A number option of `plan` inside its range (finite, `low` to `cap`; `whole`: an integer, and given), else one
    line naming the option."""
    import math

    if value is None and not whole:
        return
    kind = int if whole else int | float
    if isinstance(value, bool) or not isinstance(value, kind):
        expected = "a whole number" if whole else "a number"
        raise UsageError(f"{option}: expected {expected}, not {type(value).__name__}")
    if not (math.isfinite(value) and low <= value <= cap):
        shown = f"{value:,}" if isinstance(value, int) else f"{value:g}"
        raise UsageError(f"{option}: {shown} is outside the range a plan searches ({low} to {cap:,})")


def check_budget(kind: str, gpus: int, candidates: int, what: str) -> None:
    """The search's candidates inside MAX_PLAN_CANDIDATES, else one line saying what to give instead."""
    if candidates > MAX_PLAN_CANDIDATES:
        raise UsageError(
            f"plan {kind}: {gpus:,} GPUs {what} make {candidates:,} candidate layouts, past the search budget of "
            f"{MAX_PLAN_CANDIDATES:,}; give a GPU count with fewer divisors (a power of two), or fewer choices"
        )


def plan_train(
    shape: ModelShape,
    gpu: GpuSpec,
    *,
    gpus: int = 8,
    seq: int | None = None,
    tokens: int | None = None,
    global_batch: int | None = None,
    precision: str | None = None,
    optimizer: str | None = None,
    price: float | None = None,
    top: int = 10,
    conventions: Mapping[str, object] | None = None,
) -> TrainPlanReport:
    """`tfcost plan train`: T defaults to 4,096 (or the model's context), D to 20 N, B to 4M tokens / T;
    `conventions` are a framework's (tfcost.readers.frameworks.convention_values), every layout priced under them."""
    check_plan_size("--gpus", gpus, MAX_PLAN_GPUS, low=1, whole=True)
    check_plan_size("--global-batch", global_batch, MAX_PLAN_GLOBAL_BATCH, low=1)
    check_plan_size("--top", top, MAX_PLAN_CANDIDATES, low=1, whole=True)
    setup = validated(
        TrainingSetup,
        **{
            **(conventions or {}),
            "tokens": tokens if tokens is not None else training.chinchilla_optimal_tokens(shape),
            "seq_len": seq if seq is not None else training.default_seq_len(shape),
            "gpus": gpus, "global_batch": global_batch, "precision": precision, "optimizer": optimizer,
            "price_per_gpu_hour": price,
        },
    )  # fmt: skip
    batch = setup.global_batch or search.default_global_batch(setup.seq_len)
    experts = divisor_count(shape.moe.n_experts) if shape.moe is not None else 1
    candidates = divisor_count(setup.gpus, 4) * divisor_count(batch) * experts
    splits = f" x {experts} expert-parallel sizes" if shape.moe is not None else ""
    check_budget("train", setup.gpus, candidates, f"x {batch:,} sequences a step{splits}")
    return plan_train_setup(shape, gpu, setup, top)


def plan_serve(
    shape: ModelShape,
    gpu: GpuSpec,
    *,
    gpus: int = 8,
    prompt: int | None = None,
    generate: int | None = None,
    ttft_ms: float | None = None,
    tpot_ms: float | None = None,
    weights_dtype: str | Sequence[str] | None = None,
    kv_dtype: str | Sequence[str] | None = None,
    reserve: float | None = None,
    top: int = 10,
    conventions: Mapping[str, object] | None = None,
    concurrency: int | None = None,
    rate: float | None = None,
    requests: int | None = None,
    price_per_gpu_hour: float | None = None,
) -> ServePlanReport:
    """`tfcost plan serve`: weights_dtype and kv_dtype list the formats to try ("bf16,fp8" or a list); `conventions`
    are an engine's (tfcost.readers.frameworks.convention_values), every layout priced under them. With a
    `concurrency` (each replica's requests in flight) or a `rate` (requests a second over all replicas), every
    layout is ranked by its simulated benchmark (`serve --concurrency/--rate`), its targets on the mean TTFT and
    TPOT, and its batch the mean the scheduler ran."""
    if concurrency is not None and rate is not None:
        raise UsageError("give --concurrency (a closed loop) or --rate (Poisson arrivals), not both")
    check_plan_size("--gpus", gpus, MAX_PLAN_GPUS, low=1, whole=True)
    check_plan_size("--prompt", prompt, MAX_PLAN_TOKENS_PER_SEQUENCE, low=1)
    check_plan_size("--generate", generate, MAX_PLAN_TOKENS_PER_SEQUENCE, low=1)
    check_plan_size("--ttft-ms", ttft_ms, MAX_PLAN_TARGET_MS)
    check_plan_size("--tpot-ms", tpot_ms, MAX_PLAN_TARGET_MS)
    check_plan_size("--top", top, MAX_PLAN_CANDIDATES, low=1, whole=True)
    setup = validated(
        ServingSetup,
        **{**(conventions or {}), "gpus": gpus, "prompt": prompt, "generate": generate, "reserve": reserve},
        concurrency=concurrency,
        rate=rate,
        requests=requests,
        price_per_gpu_hour=price_per_gpu_hour,
    )
    weights = [
        validated(ServingSetup, weights_dtype=name).weights_dtype for name in names_of(weights_dtype, "--weights-dtype")
    ]
    kv = [validated(ServingSetup, kv_dtype=name).kv_dtype for name in names_of(kv_dtype, "--kv-dtype")]
    chosen = [name for name in weights if name is not None] or None
    formats = len(search.serving_weights(shape, chosen)) * len(kv or search.SERVING_KV)
    splits = 2 if shape.moe is not None else 1  # a stage's experts by tensor or by expert parallelism
    candidates = divisor_count(gpus, 4) * splits * formats
    check_budget("serve", gpus, candidates, f"x {formats} weight and KV formats")
    return plan_serve_setup(shape, gpu, gpus, setup, top, ttft_ms, tpot_ms, chosen, kv or None)


# The suggestion under `train` and `serve` ------------------------------------------------------------------


def with_suggestion(
    report: TrainReport | ServeReport, shape: ModelShape, gpu: GpuSpec, model: Sequence[str]
) -> TrainReport | ServeReport:
    """The report with the nearest layout that fits (`train_suggestion`, `serve_suggestion`) when it needs one."""
    if not report.needs_suggestion():
        return report
    if isinstance(report, TrainReport):
        return report.model_copy(update={"suggestion": train_suggestion(shape, gpu, report.setup, model)})
    return report.model_copy(update={"suggestion": serve_suggestion(shape, gpu, report.setup, model)})


def option_words(name: str, value: object) -> list[str]:
    """A setup field as the command-line option that sets it (`--sequence-parallel`, a flag, when true)."""
    option = "--" + name.replace("_", "-")
    if isinstance(value, bool):
        return [option] if value else []
    return [option, str(value)]


def plan_command(kind: str, model: Sequence[str], words: Sequence[str]) -> str:
    """`tfcost plan KIND MODEL ...`, quoted for a POSIX shell."""
    return shlex.join(["tfcost", "plan", kind, *model, *words])


# The suggestion's reason when the nearest-layout search stopped at its budget (tfcost.costs.plan.NEAREST_BUDGET).
NOT_NEAR = f"none of the {search.NEAREST_BUDGET:,} layouts nearest the one asked for fits"


def train_suggestion(shape: ModelShape, gpu: GpuSpec, asked: TrainingSetup, model: Sequence[str]) -> Suggestion:
    """The nearest training layout that fits the asked one's GPUs, tokens, T and global batch, and the `plan train`
    command (`model`: the model as given on the command line, e.g. ["llama-3-8b"] or ["--config", "c.json"])."""
    batch = parallel.global_batch(asked)
    given = {  # what `plan train` would not assume by itself
        "seq": asked.seq_len if asked.seq_len != training.default_seq_len(shape) else None,
        "tokens": asked.tokens if asked.tokens != training.chinchilla_optimal_tokens(shape) else None,
        "global_batch": batch,
        "precision": asked.precision if asked.precision != TrainingSetup.model_fields["precision"].default else None,
        "optimizer": asked.optimizer if asked.optimizer != TrainingSetup.model_fields["optimizer"].default else None,
    }
    words = [word for name, value in given.items() if value is not None for word in option_words(name, value)]
    command = plan_command("train", model, ["--gpus", str(asked.gpus), "--gpu", gpu.name, *words])
    nearest, found = search.nearest_training_layout(shape, gpu, asked)
    if nearest is None:
        reason = NOT_NEAR if found.cut_short else found.most_rejected()
        return Suggestion(options=[], reason=reason, command=command)
    options = search.suggested_options(shape, asked, nearest.setup)
    assert options is not None  # the search keeps only layouts the options can say
    words = [word for name, value in options.items() for word in option_words(name, value)]
    return Suggestion(
        options=words,
        step_seconds=nearest.step_seconds,
        memory_per_gpu_bytes=nearest.memory_per_gpu_bytes,
        command=command,
    )


def serve_suggestion(shape: ModelShape, gpu: GpuSpec, asked: ServingSetup, model: Sequence[str]) -> Suggestion:
    """The nearest serving layout on the asked GPUs that fits, and the `plan serve` command."""
    command = plan_command(
        "serve", model,
        ["--gpus", str(serving.replica_gpus(asked)), "--gpu", gpu.name, "--prompt", str(asked.prompt), "--generate",
         str(asked.generate)],
    )  # fmt: skip
    evaluate = serving_evaluator(shape, gpu)
    asked = serving.with_weights_dtype(shape, asked)
    nearest = search.nearest_serving_layout(shape, asked, evaluate)
    if nearest is None:
        found = search.search_serving(shape, serving.replica_gpus(asked), asked, evaluate)
        return Suggestion(options=[], reason=found.most_rejected(), command=command)
    names = {name: name.replace("_", "-") for name in search.SERVING_FIELDS}
    words = [
        word
        for name, option in names.items()
        if getattr(nearest.setup, name) != getattr(asked, name)
        for word in (f"--{option}", str(getattr(nearest.setup, name)))
    ]
    return Suggestion(
        options=words,
        tokens_per_s_per_gpu=nearest.tokens_per_s_per_gpu,
        memory_per_gpu_bytes=nearest.outcome.memory_per_gpu_bytes,
        command=command,
    )


def with_intervals(report: ReportT, used: FrameworkUsed) -> ReportT:
    """A plan under the framework `used`, each layout figure with the factors of its error bar."""
    from tfcost.costs.intervals import interval

    framework = used.name
    if isinstance(report, TrainPlanReport):
        bars = {
            "step_seconds": interval(None, "step_time", framework),
            "memory_per_gpu_bytes": interval(None, "training_memory", framework),
        }
    else:
        bars = {
            "ttft_ms": interval(None, "serving", framework),
            "tpot_ms": interval(None, "serving", framework),
            "tokens_per_s_per_gpu": interval(None, "serving", framework, rate=True),
        }
    found = {key: bar for key, bar in bars.items() if bar is not None}
    return report.model_copy(update={"framework": used, "intervals": found})
