"""`tfcost sweep`: costs over a range of sequence lengths T and batch sizes B, for one or several models.

Each quantity is one of the core's, built once per (model, B) as an exact curve in T (tfcost.core.curves), so one
more point costs O(1): a polynomial evaluated in integers. Quantities that are not polynomials in T (the serving
times, a roofline max; the largest batch, a floor division) are the core's own functions applied to those
curves' values. T is the context: the tokens of one sequence, the prompt of a prefill, the context of a decode
step. Not swept yet: a recurrent model's state (the core has no such layer kind).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tfcost.core import flops, memory, params
from tfcost.core.curves import Curve, attention_term_curve, curve, forward_curve, kv_cache_curve, training_curve
from tfcost.costs import crossover, serving
from tfcost.costs.crossover import Crossover
from tfcost.errors import UsageError
from tfcost.hardware import rates as hardware
from tfcost.schema import GpuSpec, ModelShape, ServingSetup
from tfcost.units import Dtype, Unit, milliseconds


@dataclass(frozen=True)
class Metric:
    label: str  # what the axis and the table say, with its unit given by `unit`
    unit: Unit
    per_batch: bool  # depends on B
    needs_gpu: bool
    crossover: str | None = None  # the crossover marked on its chart
    reference: bool = False  # also draw the crossover's fixed cost (6N, the weights, the GPU memory) as a line


METRICS: dict[str, Metric] = {
    "params": Metric("parameters", "count", False, False),
    "six_n": Metric(f"6N, training FLOPs per token ({flops.SIX_N_MEANING})", "flops", False, False),
    "attention_flops": Metric(
        "attention-score FLOPs per token, 6*L*T*d", "flops", False, False, "attention_vs_6n", reference=True
    ),
    "flops_per_token": Metric("training FLOPs per token, 6N + 6*L*T*d", "flops", False, False, "attention_vs_6n"),
    "attention_share": Metric(
        "attention share of training FLOPs per token", "fraction", False, False, "attention_vs_6n"
    ),
    "forward_flops": Metric("forward FLOPs, one sequence (exact matmuls)", "flops", False, False),
    "training_flops": Metric("training FLOPs, one sequence (3x forward)", "flops", False, False),
    "kv_cache": Metric("KV cache, B sequences", "bytes", True, False, "kv_cache_vs_weights", reference=True),
    "score_matrix": Metric(
        "score matrix of one layer, B sequences", "bytes", True, False, "score_matrix_vs_gpu", reference=True
    ),
    "serve_memory": Metric("serving memory per GPU, weights + KV cache", "bytes", True, True),
    "max_batch": Metric("largest batch at context T", "count", False, True),
    "prefill_ms": Metric("prefill of B prompts of T tokens (roofline)", "ms", True, True),
    "decode_ms": Metric("decode step at context T, B sequences (roofline)", "ms", True, True),
}
DEFAULT_METRICS = ("attention_flops",)


def parse_metrics(text: str) -> list[str]:
    """'kv_cache,prefill_ms' -> the metric names, each checked."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in METRICS]
    if unknown or not names:
        raise UsageError(f"--metric: unknown '{(unknown or [text])[0]}'; known: {', '.join(METRICS)}")
    return list(dict.fromkeys(names))


def parse_positive_list(text: str, option: str) -> list[int]:
    """'1024,4k' -> [1024, 4096]: positive whole numbers, k and M binary as for sequence lengths (units)."""
    from tfcost.units import parse_length

    try:
        values = [parse_length(item) for item in text.split(",")]
    except ValueError:
        expected = "expected positive integers (or 4k, 1M) separated by commas"
        raise UsageError(f"{option}: {expected}, got '{text}'") from None
    return list(dict.fromkeys(values))


def geometric(low: int, high: int, points: int | None) -> list[int]:
    """`points` whole values from low to high in equal ratios (rounded, duplicates dropped); by default doubling
    from low, with high last."""
    if points is None:
        values = [low * 2**k for k in range((high // low).bit_length()) if low * 2**k < high]
        return [*values, high]
    if points == 1 or low == high:
        return [low]
    ratio = high / low
    inner = (round(low * ratio ** (i / (points - 1))) for i in range(1, points - 1))
    return list(dict.fromkeys([low, *(min(max(value, low), high) for value in inner), high]))


def linear(low: int, high: int, points: int | None) -> list[int]:
    """`points` whole values from low to high in equal steps (rounded down, duplicates dropped); 10 by default."""
    count = points or 10
    if count == 1 or low == high:
        return [low]
    return list(dict.fromkeys(low + (high - low) * i // (count - 1) for i in range(count)))


def parse_seq(text: str, points: int | None, spacing: str) -> list[int]:
    """'512..131072' -> geometric (or linear) steps from 512 to 131,072; '1024,4096' -> exactly those."""
    if ".." not in text:
        if points is not None:
            raise UsageError("--points: give --seq as a range LOW..HIGH")
        return sorted(parse_positive_list(text, "--seq"))
    low_text, _, high_text = text.partition("..")
    bounds = parse_positive_list(f"{low_text},{high_text}", "--seq")
    if len(bounds) == 1:
        bounds *= 2
    low, high = bounds
    if low > high:
        raise UsageError(f"--seq: the range {text} runs backwards; write LOW..HIGH")
    if points is not None and not 1 <= points <= 100_000:
        raise UsageError(f"--points: expected 1 to 100,000, got {points}")
    return geometric(low, high, points) if spacing == "geometric" else linear(low, high, points)


@dataclass
class ModelCosts:
    """One model's costs as curves in T, each built on first use for the batch size it is asked at."""

    shape: ModelShape
    dtype: Dtype
    causal: bool
    gpu: GpuSpec | None
    serving: ServingSetup
    curves: dict[tuple[str, int], Curve] = field(default_factory=dict)

    def curve(self, quantity: str, batch: int) -> Curve:
        key = (quantity, batch)
        if key not in self.curves:
            closed = self.closed_form(quantity, batch)
            self.curves[key] = closed or curve(self.shape, self.functions(quantity, batch))
        return self.curves[key]

    def closed_form(self, quantity: str, batch: int) -> Curve | None:
        """The folds taken straight from the operation rows' closed forms (tfcost.core.curves.form_curve)."""
        if quantity == "attention":
            return attention_term_curve(self.shape)
        if quantity == "forward":
            return forward_curve(self.shape, self.causal)
        if quantity == "training":
            return training_curve(self.shape, self.causal)
        if quantity == "kv_cache":
            return kv_cache_curve(self.shape, batch, self.dtype)
        return None

    def functions(self, quantity: str, batch: int) -> Callable[[int], int]:
        s, dtype, causal, setup = self.shape, self.dtype, self.causal, self.serving
        return {
            "attention": lambda t: flops.attention_score_flops_per_token(s, t),
            "forward": lambda t: flops.forward_flops(s, t, causal),
            "training": lambda t: flops.training_flops(s, t, causal),
            "kv_cache": lambda t: memory.kv_cache_bytes(s, t, batch, dtype),
            "score_matrix": lambda t: memory.score_matrix_bytes_per_layer(s, t, batch, dtype),
            "score_matrix_all_layers": lambda t: memory.score_matrix_bytes(s, t, batch, dtype),
            "kv_per_gpu": lambda t: serving.kv_cache_bytes_per_gpu(s, t, batch, dtype, setup.gpus),
            "prefill": lambda t: serving.prefill_flops(s, t, batch),
            "decode": lambda t: serving.decode_step_flops(s, t, batch),
        }[quantity]

    def values(self, metric: str, seq_lens: Sequence[int], batch: int) -> list[int] | list[float]:
        """The metric at every T of `seq_lens` for B = batch."""
        s = self.shape
        if metric == "params":
            return [params.total_params(s)] * len(seq_lens)
        if metric == "six_n":
            return [flops.six_n_flops_per_token(s)] * len(seq_lens)
        if metric in ("attention_flops", "flops_per_token", "attention_share"):
            attention = self.curve("attention", 1).values(seq_lens)
            six_n = flops.six_n_flops_per_token(s)
            if metric == "attention_flops":
                return attention
            if metric == "flops_per_token":
                return [flops.training_flops_per_token(six_n, a) for a in attention]
            return [flops.attention_share(six_n, a) for a in attention]
        simple = {"forward_flops": "forward", "training_flops": "training", "kv_cache": "kv_cache"}
        if metric in simple:
            return self.curve(simple[metric], batch if METRICS[metric].per_batch else 1).values(seq_lens)
        if metric == "score_matrix":
            return self.curve("score_matrix", batch).values(seq_lens)
        return self.serve_values(metric, seq_lens, batch)

    def serve_values(self, metric: str, seq_lens: Sequence[int], batch: int) -> list[int] | list[float]:
        """The serving metrics, as `tfcost serve` computes them with P + G = T (decode) or P = T (prefill)."""
        s, setup, gpu = self.shape, self.serving, self.gpu
        assert gpu is not None  # checked by sweep()
        weights = serving.share_per_gpu(serving.served_weight_bytes(s, setup.weights_dtype), setup.gpus)
        if metric == "serve_memory":
            return [serving.bytes_moved_per_gpu(weights, kv) for kv in self.curve("kv_per_gpu", batch).values(seq_lens)]
        if metric == "max_batch":
            budget = serving.kv_budget_bytes_per_gpu(serving.usable_bytes_per_gpu(gpu, setup.reserve), weights)
            return [serving.max_batch(budget, kv) for kv in self.curve("kv_per_gpu", 1).values(seq_lens)]
        peak = serving.effective_peak_flops_per_s(gpu, setup.weights_dtype, setup.compute_efficiency, s)
        bandwidth = serving.effective_bandwidth_bytes_per_s(gpu, setup.memory_efficiency)
        work = self.curve("prefill" if metric == "prefill_ms" else "decode", batch).values(seq_lens)
        kv = self.curve("kv_per_gpu", batch).values(seq_lens)
        return [
            milliseconds(
                hardware.roofline_seconds(
                    serving.share_per_gpu(f, setup.gpus), serving.bytes_moved_per_gpu(weights, k), peak, bandwidth
                )
            )
            for f, k in zip(work, kv, strict=True)
        ]


@dataclass(frozen=True)
class Series:
    model: str
    batch: int
    metric: str
    values: list[int] | list[float]


@dataclass(frozen=True)
class SweepReport:
    """A sweep: for each metric, model and batch, the values at every T; and each model's crossovers."""

    seq_lens: list[int]
    batches: list[int]
    metrics: list[str]
    dtype: str
    causal: bool
    gpu: str | None
    series: list[Series]
    crossovers: list[Crossover]
    models: list[str]
    contexts: list[int] = field(default_factory=list)  # each model's own context (max_seq_len), in models' order

    def units(self) -> dict[str, Unit]:
        return {name: METRICS[name].unit for name in self.metrics}


def sweep(
    shapes: Sequence[ModelShape],
    seq_lens: Sequence[int],
    batches: Sequence[int],
    metrics: Sequence[str],
    dtype: Dtype,
    causal: bool,
    gpu: GpuSpec | None,
    setup: ServingSetup,
) -> SweepReport:
    """Every metric for every model and batch at every T, and the crossovers of each model and batch."""
    needing = [name for name in metrics if METRICS[name].needs_gpu]
    if needing and gpu is None:
        raise UsageError(f"--metric {needing[0]}: needs --gpu (see `tfcost gpus`)")
    if needing:
        for shape in shapes:
            serving.check_generates(shape)
            serving.check_tensor_parallel(shape, setup.gpus)
    series, found = [], []
    for shape in shapes:
        costs = ModelCosts(shape, dtype, causal, gpu, serving.with_weights_dtype(shape, setup))
        found.append(crossover.attention_equals_six_n(shape))
        for batch in batches:
            found.append(crossover.kv_cache_equals_weights(shape, batch, dtype, setup.weights_dtype))
            if gpu is not None:
                found.append(crossover.score_matrix_exceeds_memory(shape, batch, dtype, gpu))
        for metric in metrics:
            for batch in batches if METRICS[metric].per_batch else batches[:1]:
                series.append(Series(shape.name, batch, metric, costs.values(metric, seq_lens, batch)))
    return SweepReport(
        seq_lens=list(seq_lens),
        batches=list(batches),
        metrics=list(metrics),
        dtype=dtype,
        causal=causal,
        gpu=gpu.name if gpu else None,
        series=series,
        crossovers=found,
        models=[shape.name for shape in shapes],
        contexts=[shape.max_seq_len for shape in shapes],
    )


def spans_decades(values: Sequence[float]) -> bool:
    """Whether a chart axis should be logarithmic: positive values spanning at least a factor of 10."""
    positive = [v for v in values if v > 0]
    return bool(positive) and len(positive) == len(values) and max(positive) >= 10 * min(positive)


def past_context(report: SweepReport, model: str) -> list[bool]:
    """For each swept T, whether it passes the model's own context (the region tables and charts mark)."""
    context = dict(zip(report.models, report.contexts, strict=True)).get(model)
    return [context is not None and t > context for t in report.seq_lens]
