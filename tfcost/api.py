"""tfcost from Python: the reports the commands render, as typed pydantic models.

    import tfcost
    report = tfcost.estimate("llama-3-8b", seq=8192, batch=4)
    report.kv_cache.total_bytes                                  # 4294967296
    tfcost.train("llama-3-8b", gpus=64, tokens="15T", zero=1).time
    tfcost.serve("qwen3-8b", gpu="h100-sxm", batch=32, prompt=4096).memory

Each function takes what its command takes, by the option's name with underscores (`--micro-batch 2` is
`micro_batch=2`; `--set n_kv_heads=16` is `overrides=["n_kv_heads=16"]` or `overrides={"n_kv_heads": 16}`), and
returns the report that `tfcost <command> ... --format json` prints: `report.model_dump(mode="json")` is that JSON
without its `tfcost_version` key. Nothing is printed: what the command writes to stderr as notes (config keys
ignored, towers not priced, a Hub checkpoint's stored bytes) are fields of the report. Bad input raises
`tfcost.errors.TfcostError` (`UsageError` for a bad option) carrying the command's one-line message.

The commands (tfcost/cli) call these functions and render what they return; this module imports no CLI and no rich,
and its imports are made inside the functions, so `import tfcost` stays instant.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import TypeVar

    from pydantic import BaseModel

    from tfcost.costs.profiles import Profile
    from tfcost.engines.dispatch import Engine, EngineModel
    from tfcost.engines.report import EngineEstimate, EngineServeReport, EngineTrainReport
    from tfcost.readers.presets import ModelSource
    from tfcost.reports.estimate import Estimate
    from tfcost.reports.serve import ServeReport
    from tfcost.reports.train import TrainReport
    from tfcost.schema import FrameworkKind, FrameworkUsed, GpuSpec, TrainingSetup

    BaseModelT = TypeVar("BaseModelT", bound=BaseModel)
    # `--set` as the commands take it (["n_kv_heads=16"]) or as a mapping ({"n_kv_heads": 16}).
    Overrides = Sequence[str] | Mapping[str, object]


class ModelRequest:
    """The model a call is about, as every model-taking command names it: MODEL, --config, --set, --strict,
    --lenient and --revision. (A plain class: a dataclass would cost each command's start-up a few hundred us.)"""

    __slots__ = ("config", "lenient", "model", "overrides", "revision", "strict")

    def __init__(
        self,
        model: str | None,
        config: str | None,
        overrides: tuple[str, ...],
        strict: bool,
        lenient: bool,
        revision: str | None,
    ) -> None:
        self.model, self.config, self.overrides = model, config, overrides
        self.strict, self.lenient, self.revision = strict, lenient, revision

    def source(self) -> ModelSource:
        """The model by tfcost's own reader, with what its source said that was not used."""
        from tfcost.readers.presets import resolve_source

        return resolve_source(
            self.model, self.config, self.overrides, strict=self.strict, lenient=self.lenient, revision=self.revision
        )

    def for_engine(self, engine: Engine) -> EngineModel | None:
        """The model the transformers engine prices, or None where tfcost's own reader answers."""
        from typing import get_args

        from tfcost.engines.dispatch import Engine, engine_model

        if not isinstance(engine, str) or engine not in get_args(Engine):
            raise usage(f"engine: expected one of {', '.join(get_args(Engine))}, not {shown(engine)}")

        return engine_model(self.model, self.config, self.overrides, engine, self.revision)


def request(
    model: str | os.PathLike[str] | None,
    config: str | os.PathLike[str] | None,
    overrides: Overrides | None,
    strict: bool,
    lenient: bool,
    revision: str | None,
) -> ModelRequest:
    """The model options checked as the command line's parser checks them: MODEL and --config text or a path
    (os.PathLike, as pathlib.Path), --revision text, --strict and --lenient true or false."""
    for name, flag in (("strict", strict), ("lenient", lenient)):
        if not isinstance(flag, bool):
            raise usage(f"{name}: expected True or False, not {shown(flag)}")
    if revision is not None and not isinstance(revision, str):
        raise usage(f"revision: expected a branch, tag or commit, not {shown(revision)}")
    return ModelRequest(
        path_text(model, "model"), path_text(config, "config"), override_texts(overrides), strict, lenient, revision
    )


def check_flags(**flags: object) -> None:
    """Flags (--explain, the crossovers) true or false, as the command line gives them."""
    for name, flag in flags.items():
        if not isinstance(flag, bool):
            raise usage(f"{name}: expected True or False, not {shown(flag)}")


def path_text(value: str | os.PathLike[str] | None, name: str) -> str | None:
    """A model or config given as text or as a path object, as text; anything else one usage error."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        if isinstance(path, str):
            return path
    raise usage(f"{name}: expected a preset name, a path or a Hub id (str or os.PathLike), not {shown(value)}")


def usage(message: str) -> Exception:
    from tfcost.errors import UsageError

    return UsageError(message)


def shown(value: object) -> str:
    """A wrong argument named in a message: its type, and its value where that is short."""
    text = repr(value)
    return f"{type(value).__name__} {text}" if len(text) <= 40 else type(value).__name__


def override_texts(overrides: Overrides | None) -> tuple[str, ...]:
    """`--set` texts: a mapping's values written as JSON, which the override reader (YAML) reads back as the same
    value: 16, true, [0, 2], "text"."""
    if overrides is None:
        return ()
    if isinstance(overrides, str):
        return (overrides,)
    if isinstance(overrides, Mapping):
        import json  # here only: the commands' start-up need not import it

        if not all(isinstance(key, str) for key in overrides):
            raise usage("overrides: a mapping's keys are field names (text)")
        try:
            return tuple(f"{key}={json.dumps(value)}" for key, value in overrides.items())
        except (TypeError, ValueError) as error:
            raise usage(f"overrides: {error}") from None
        except RecursionError:
            raise usage("overrides: a value nested too deeply") from None
    if isinstance(overrides, list | tuple) and all(isinstance(text, str) for text in overrides):
        return tuple(overrides)
    raise usage(f"overrides: expected KEY=VALUE texts or a mapping, not {shown(overrides)}")


OPTION_NAMES = {
    "seq_len": "seq",
    "lora_rank": "lora",
    "ram_bandwidth_gb_per_s": "ram-bandwidth",
    "ram_gib": "ram",
}  # setup fields whose option is not the field's name


def option_name(field: str) -> str:
    """The command-line option that sets a setup field: seq_len -> --seq, micro_batch -> --micro-batch."""
    return "--" + OPTION_NAMES.get(field, field.replace("_", "-"))


def validated(schema: type[BaseModelT], **fields: object) -> BaseModelT:
    """A setup schema built from the options; its complaints become one usage-error line naming the options."""
    from pydantic import ValidationError

    from tfcost.errors import UsageError, describe_validation_error

    try:
        setup = schema.model_validate(fields)
    except ValidationError as error:
        raise UsageError(describe_validation_error(error, option_name)) from None
    if getattr(setup, "image_size", None) is not None and not getattr(setup, "images", 0):
        raise UsageError("--image-size sizes the images --images puts in the prompt: give --images N too")
    return setup


def given(**fields: object) -> dict[str, object]:
    """The fields a caller set: None leaves a field at the schema's default."""
    return {name: value for name, value in fields.items() if value is not None}


def conventions_of(framework: str | None, framework_set: Overrides | None, kind: FrameworkKind) -> FrameworkUsed:
    """The framework a run is priced under (`framework`: NAME[@VERSION]) with the user's overrides of its fields
    (`framework_set`, as --framework-set takes them); with none, tfcost's defaults, named as assumed."""
    from tfcost.readers.frameworks import framework_used, parse_framework_set

    if framework is not None and not isinstance(framework, str):
        from tfcost.errors import UsageError

        raise UsageError(f"framework: a name such as 'vllm@0.8', not {type(framework).__name__}")
    return framework_used(framework, kind, parse_framework_set(override_texts(framework_set), kind))


def convention_values(used: FrameworkUsed) -> dict[str, object]:
    from tfcost.readers.frameworks import convention_values as values

    return values(used)


def load_profile(name: str | None) -> Profile | None:
    """The saved measured profile of that name (`tfcost profiles`), or None; read only when asked for."""
    if name is None:
        return None
    from tfcost.costs import profiles

    return profiles.load(name)


def estimate(
    model: str | None = None,
    *,
    config: str | None = None,
    overrides: Overrides | None = None,
    seq: int | None = None,
    batch: int | None = None,
    dtype: str | None = None,
    causal: bool | None = None,
    gpu: str | None = None,
    engine: Engine = "auto",
    explain: bool = False,
    strict: bool = False,
    lenient: bool = False,
    revision: str | None = None,
    images: int | None = None,
    image_size: int | None = None,
    audio_seconds: float | None = None,
    crossovers: bool = True,
) -> Estimate | EngineEstimate:
    """`tfcost estimate`: parameters, FLOPs, KV cache, score matrix and the crossovers in T of one model.

    `model` is a preset name, a YAML preset or config.json path, or a Hub id; `config` a config.json path instead.
    `seq`, `batch`, `dtype`, `causal` are the workload (T, B, the cache's dtype, the causal count; None: the
    command's default); `images` and `image_size` put N images of S pixels a side through a multimodal model's
    vision tower, their tokens in T (`audio_seconds`: S seconds of audio through its audio tower); `gpu` adds
    the T at which one layer's score matrix outgrows that GPU.
    `engine`: "analytic", "transformers" (needs tfcost[hf]) or "auto"; `explain` adds each quantity's formula
    (the report's `explain`); `crossovers=False` leaves the crossovers out (the report's `crossovers` is None),
    as `tfcost compare` does for its table and CSV, which print none.
    """
    from tfcost.schema import Workload

    check_flags(explain=explain, crossovers=crossovers)

    workload = validated(
        Workload,
        **given(
            seq_len=seq,
            batch=batch,
            dtype=dtype,
            causal=causal,
            images=images,
            image_size=image_size,
            audio_seconds=audio_seconds,
        ),
    )
    asked = request(model, config, overrides, strict, lenient, revision)
    found = asked.for_engine(engine)
    if found is not None:
        from tfcost.engines.dispatch import transformers_estimate

        return transformers_estimate(found, workload)
    from tfcost.readers.presets import load_gpu
    from tfcost.reports.base import with_source
    from tfcost.reports.estimate import estimate as run_estimate

    source = asked.source()
    chosen_gpu = load_gpu(gpu) if gpu is not None else None
    estimated = run_estimate(source.shape, workload, chosen_gpu, explained=explain, with_crossovers=crossovers)
    return with_source(estimated, source, tokens=workload.seq_len)


def train(
    model: str | None = None,
    *,
    config: str | None = None,
    overrides: Overrides | None = None,
    tokens: int | str | None = None,
    seq: int | None = None,
    gpu: str = "h100-sxm",
    profile: str | None = None,
    engine: Engine = "auto",
    explain: bool = False,
    strict: bool = False,
    lenient: bool = False,
    revision: str | None = None,
    framework: str | None = None,
    framework_set: Overrides | None = None,
    **setup: Any,
) -> TrainReport | EngineTrainReport:
    """`tfcost train`: training compute, time, cost and memory per GPU.

    `tokens` is D (an int, or text as the command takes it: "300B", "1.4T"; None: Chinchilla-optimal, 20 N), `seq`
    is T (None: the training default, or the model's context if shorter). Every other keyword is a field of
    `tfcost.schema.TrainingSetup`, named as the command's option with underscores (micro_batch, gpus, zero, tp, pp,
    cp, ep, mfu, recompute, optimizer, precision, lora_rank for --lora, lora_targets as a list or "q,k,v,o", ...);
    a field not given keeps its default. `gpu` names a GPU from `tfcost gpus`; `profile` a saved measured profile
    in its place. `framework` names the trainer and its release ("torchtitan", "megatron-core@0.12", `tfcost
    frameworks`), whose conventions set the setup's convention fields; `framework_set` overrides them
    (["loss=full"] or {"loss": "full"}); a keyword given here wins over both.
    """
    from tfcost.schema import TrainingSetup

    check_flags(explain=explain)

    used = conventions_of(framework, framework_set, "training")
    fields: dict[str, Any] = {**convention_values(used), **given(**setup)}
    if isinstance(fields.get("lora_targets"), str):
        fields["lora_targets"] = tuple(name.strip() for name in fields["lora_targets"].split(",") if name.strip())
    elif isinstance(fields.get("lora_targets"), list):
        fields["lora_targets"] = tuple(fields["lora_targets"])  # any other type is the schema's to refuse
    wanted_tokens = count(tokens, "tokens") if tokens is not None else None

    def make_setup(default_seq: int, default_tokens: int) -> TrainingSetup:
        """The setup asked for, the model's defaults where T or D was not given."""
        return validated(
            TrainingSetup,
            tokens=wanted_tokens if wanted_tokens is not None else default_tokens,
            seq_len=seq if seq is not None else default_seq,
            **given(**fields),
        )

    asked = request(model, config, overrides, strict, lenient, revision)
    found = asked.for_engine(engine)
    spec = gpu_or_profile(gpu, load_profile(profile))
    if found is not None:
        from tfcost.engines.dispatch import train_report

        return train_report(found, spec, make_setup, explained=explain).model_copy(update={"framework": used})
    from tfcost.costs import training
    from tfcost.reports.base import with_source
    from tfcost.reports.train import train as run_train
    from tfcost.reports.train import with_default_layout, with_intervals

    source = asked.source()
    shape = source.shape
    seq_len, default_tokens = training.default_seq_len(shape), training.chinchilla_optimal_tokens(shape)
    layout = {name: value for name, value in fields.items() if name not in ("global_batch", "zero")}

    def setup_with(global_batch: int | None, zero: int) -> TrainingSetup:
        """The setup asked for, at a global batch and ZeRO stage with_default_layout chooses where not given."""
        return validated(
            TrainingSetup,
            tokens=wanted_tokens if wanted_tokens is not None else default_tokens,
            seq_len=seq if seq is not None else seq_len,
            **given(**layout, global_batch=global_batch, zero=zero),
        )

    report = with_default_layout(
        setup_with,
        lambda chosen: run_train(shape, spec, chosen, explained=explain),
        fields.get("global_batch"),
        fields.get("zero"),
    )
    report = with_intervals(report.model_copy(update={"framework": used}))
    return with_source(report, source, tokens=report.setup.seq_len)


def serve(
    model: str | None = None,
    *,
    config: str | None = None,
    overrides: Overrides | None = None,
    gpu: str = "h100-sxm",
    profile: str | None = None,
    engine: Engine = "auto",
    explain: bool = False,
    strict: bool = False,
    lenient: bool = False,
    revision: str | None = None,
    framework: str | None = None,
    framework_set: Overrides | None = None,
    **setup: Any,
) -> ServeReport | EngineServeReport:
    """`tfcost serve`: serving memory, largest batch and context, prefill and decode times (bound and expected).

    Every keyword after the model's is a field of `tfcost.schema.ServingSetup`, named as the command's option with
    underscores (gpus, pp, ep, weights_dtype, kv_dtype, batch, prompt, generate, reserve, compute_efficiency,
    memory_efficiency, group_size, kv_block, kv_pool, vllm_profile, max_num_seqs; under load: concurrency or rate,
    requests, length_spread, prefix_hit, speculative, draft_tokens, acceptance, seed, price_per_gpu_hour,
    grid_gco2_per_kwh); a field not given keeps its default. With a measured `profile` the efficiencies are its own
    (1.0 over its measured rates). `framework` names the engine and its release ("vllm@0.8", "sglang", `tfcost
    frameworks`), whose conventions set the setup's convention fields (KV pool, profile run, reserve, the scheduler's
    step budget); `framework_set` overrides them; a keyword given here wins.
    """
    from tfcost.schema import ServingSetup

    check_flags(explain=explain)

    used = conventions_of(framework, framework_set, "serving")
    asked = request(model, config, overrides, strict, lenient, revision)
    found = asked.for_engine(engine)
    measured = load_profile(profile)
    if measured is not None:
        setup = {**setup, "memory_efficiency": 1.0, "compute_efficiency": 1.0}
    chosen = validated(ServingSetup, **{**convention_values(used), **given(**setup)})
    if found is not None:
        if chosen.pp > 1 or chosen.ep > 1:
            from tfcost.errors import UsageError

            raise UsageError("--pp and --ep are priced by the formulas, not by the transformers engine")
        from tfcost.engines.dispatch import serve_report

        answered = serve_report(found, gpu_or_profile(gpu, measured), chosen, explained=explain)
        return answered.model_copy(update={"framework": used})
    from tfcost.reports.base import with_source
    from tfcost.reports.serve import serve as run_serve
    from tfcost.reports.serve import with_intervals as with_serve_intervals
    from tfcost.reports.stored import stored_report

    source = asked.source()
    files = stored_report(source.stored, source.shape).served_bytes if source.stored is not None else None
    rates, profile_name = (measured.rates(), measured.name) if measured is not None else (None, None)
    report = run_serve(
        source.shape, gpu_or_profile(gpu, measured), chosen, rates, profile_name, explained=explain,
        stored_bytes=files,
    )  # fmt: skip
    report = with_serve_intervals(report.model_copy(update={"framework": used}))
    return with_source(report, source, tokens=chosen.context, tokens_are="P + G")


def plan_train(
    model: str | None = None,
    *,
    config: str | None = None,
    overrides: Overrides | None = None,
    gpu: str = "h100-sxm",
    strict: bool = False,
    lenient: bool = False,
    revision: str | None = None,
    framework: str | None = None,
    framework_set: Overrides | None = None,
    **options: Any,
) -> Any:
    """`tfcost plan train`: the training layouts that fit, fastest first. `options` are the command's (gpus, seq,
    tokens, global_batch, precision, top, ...), passed on as `tfcost.reports.plan.plan_train(shape, gpu, **options)`
    takes them; `framework` and `framework_set` as `train` takes them."""
    used = conventions_of(framework, framework_set, "training")
    asked = request(model, config, overrides, strict, lenient, revision)
    return plan("plan_train", asked, gpu, {**options, "conventions": convention_values(used)}, used)


def plan_serve(
    model: str | None = None,
    *,
    config: str | None = None,
    overrides: Overrides | None = None,
    gpu: str = "h100-sxm",
    strict: bool = False,
    lenient: bool = False,
    revision: str | None = None,
    framework: str | None = None,
    framework_set: Overrides | None = None,
    **options: Any,
) -> Any:
    """`tfcost plan serve`: the serving layouts that meet the latency targets, most tokens/s per GPU first.
    `options` are the command's (gpus, prompt, generate, ttft_ms, tpot_ms, top, ...), passed on as
    `tfcost.reports.plan.plan_serve(shape, gpu, **options)` takes them; `framework` and `framework_set` as `serve`
    takes them."""
    used = conventions_of(framework, framework_set, "serving")
    asked = request(model, config, overrides, strict, lenient, revision)
    return plan("plan_serve", asked, gpu, {**options, "conventions": convention_values(used)}, used)


def plan(search: str, asked: ModelRequest, gpu: str, options: dict[str, Any], used: FrameworkUsed) -> Any:
    """One of tfcost.reports.plan's searches on a model and GPU, with its source's notes where its report has them,
    and the framework its layouts were priced under."""
    import inspect

    from tfcost.readers.presets import load_gpu

    searches = plan_module()
    accepted = list(inspect.signature(getattr(searches, search)).parameters)[2:]
    unknown = [name for name in options if name not in accepted]
    if unknown:
        raise usage(f"{search}: no option {unknown[0]!r} (it takes {', '.join(accepted)})")
    source = asked.source()
    report = searches.with_intervals(getattr(searches, search)(source.shape, load_gpu(gpu), **options), used)
    from tfcost.reports.base import SourceNotes, with_source

    return with_source(report, source) if isinstance(report, SourceNotes) else report


def plan_module() -> ModuleType:
    """tfcost.reports.plan, imported when a plan is asked for (the search, tfcost.costs.plan, is the `tfcost plan`
    command's; the report builders that call it sit above it, in reports)."""
    import importlib

    from tfcost.errors import TfcostError

    try:
        return importlib.import_module("tfcost.reports.plan")
    except ModuleNotFoundError as error:
        if error.name != "tfcost.reports.plan":
            raise
        raise TfcostError("plan: this version of tfcost has no layout search (tfcost.reports.plan)") from None


def gpu_or_profile(gpu: str, measured: Profile | None) -> GpuSpec:
    """The GPU a run is priced on: a measured profile's, or the named one's datasheet."""
    if measured is not None:
        return measured.gpu_spec()
    from tfcost.readers.presets import load_gpu

    return load_gpu(gpu)


def count(value: int | str, name: str) -> int:
    """A token count given as a number or as people write it ("300B", "1.4T")."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    from tfcost.errors import UsageError
    from tfcost.units import parse_count

    try:
        return parse_count(str(value))
    except ValueError as error:
        raise UsageError(f"{name}: {error}") from None


# What the package offers at its top level (tfcost/__init__.py reads this, lazily).
__all__ = ["estimate", "plan_serve", "plan_train", "serve", "train"]


def fit(
    model: str | None = None,
    *,
    config: str | None = None,
    overrides: Overrides | None = None,
    gpu: str = "rtx-4090",
    ram: str | float | None = None,
    strict: bool = False,
    lenient: bool = False,
    revision: str | None = None,
    **setup: Any,
) -> Any:
    """`tfcost fit`: a model under llama.cpp (ollama, LM Studio) on one's own GPUs: -ngl and the split across GPUs,
    the largest context that fits, prompt and generation tokens/s (a tfcost.reports.local.LocalReport).

    `model` is a preset, a config or a .gguf file (priced from its own tensors); `ram` the host's memory ("64G",
    or GiB as a number; a unified-memory machine: its memory). Every other keyword is a field of
    `tfcost.schema.LocalSetup` (quant, kv_dtype, ctx, gpus, gpu_layers, ram_bandwidth_gb_per_s, ubatch,
    flash_attn, prompt, depth, memory_efficiency, compute_efficiency).
    """
    from tfcost.core.model import model_of
    from tfcost.costs.local import FILE_TYPES, parse_memory_gib
    from tfcost.errors import UsageError
    from tfcost.readers.presets import load_gpu
    from tfcost.reports.local import fit_report
    from tfcost.schema import LocalSetup

    fields = dict(setup)
    if ram is not None:
        try:
            fields["ram_gib"] = parse_memory_gib(ram)
        except ValueError as error:
            raise UsageError(f"--ram: {error}") from None
    if isinstance(fields.get("quant"), str):
        fields["quant"] = fields["quant"].upper()
        if fields["quant"] not in FILE_TYPES:
            raise UsageError(
                f"--quant: unknown GGUF file type '{fields['quant'][:40]}'; known: {', '.join(FILE_TYPES)}"
            )
    chosen = validated(LocalSetup, **given(**fields))
    asked = request(model, config, overrides, strict, lenient, revision)
    source = asked.source()
    spec = load_gpu(gpu)
    stored = source.stored
    tensors = None
    stored_type = None
    if stored is not None and stored.gguf_metadata:
        tensors = [(tensor.name, tensor.nbytes) for tensor in stored.tensors]
        stored_type = gguf_file_type(stored.gguf_metadata)
    name = source.shape.name
    return fit_report(name, model_of(source.shape), spec, chosen, tensors, stored_type)


def gguf_file_type(metadata: dict[str, Any]) -> str | None:
    """A GGUF file's `general.file_type` by llama-quantize's name (gguf's LlamaFileType), or None."""
    value = metadata.get("general.file_type")
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    from gguf import LlamaFileType

    try:
        return LlamaFileType(value).name.removeprefix("MOSTLY_")
    except ValueError:
        return None


__all__.append("fit")  # `tfcost fit`, beside the list above


def max_train_seq(model: str | None = None, *, gpu: str = "h100-sxm", limit: int | None = None, **options: Any) -> Any:
    """`tfcost train --max-seq`: the longest sequence T a training setup fits at (a tfcost.reports.max_seq
    MaxSeqReport): every other option as `train` takes it, T searched from 1 to `limit` (default: the model's own
    context), memory per GPU growing with T. `max_seq` is None when not even one token fits."""
    from tfcost.errors import UsageError
    from tfcost.reports.max_seq import MaxSeqReport
    from tfcost.reports.train import TrainReport

    options.pop("seq", None)
    tokens = options.pop("tokens", None) or 10**9  # D changes time, not memory
    asked = request(
        model, options.get("config"), options.get("overrides"), options.get("strict", False),
        options.get("lenient", False), options.get("revision"),
    )  # fmt: skip
    high = limit if limit is not None else asked.source().shape.max_seq_len

    def report_at(seq: int) -> TrainReport:
        result = train(model, gpu=gpu, seq=seq, tokens=tokens, **options)
        if not isinstance(result, TrainReport):
            raise UsageError("--max-seq is searched with tfcost's own formulas, not the transformers engine")
        return result

    low = 1 if report_at(1).memory_per_gpu.fits else None
    if low is not None:
        top = high
        while low < top:  # the largest T that fits: memory grows with T
            middle = (low + top + 1) // 2
            if report_at(middle).memory_per_gpu.fits:
                low = middle
            else:
                top = middle - 1
    at = report_at(low if low is not None else 1)
    return MaxSeqReport(
        model=at.model, gpu=at.gpu, max_seq=low, searched_to=high, setup=at.setup,
        memory_per_gpu_bytes=at.memory_per_gpu.total_bytes,
    )  # fmt: skip


__all__.append("max_train_seq")
