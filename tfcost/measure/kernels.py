"""Time torch's scaled_dot_product_attention on this machine. The only module that imports torch; the CLI imports
it lazily, for `tfcost measure` alone.

Each backend is forced with torch.nn.attention.sdpa_kernel; one that cannot run a shape is reported with torch's
reason, an out-of-memory at one size is reported for that size, and the sweep goes on. Timing follows kernel
benchmarks (triton.testing.do_bench): warm-up, then on CUDA one pair of CUDA events per repetition with the L2
cache flushed before each, one synchronize at the end; on the CPU, wall-clock time.perf_counter per repetition.
Nothing is computed here: the raw runs go to tfcost.reports.measure, which sets them beside the core's estimate.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from tfcost.errors import TfcostError
from tfcost.hardware.host import host_available_bytes
from tfcost.hardware.rates import peak_flops_per_s
from tfcost.readers.presets import gpu_for_device_name, load_gpu
from tfcost.reports.measure import (
    Direction,
    KernelRun,
    MeasureReport,
    MeasureSetup,
    calls_that_do_not_fit,
    measurement,
)
from tfcost.schema import AttentionShape, GpuSpec, MeasureDtype

try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a CPU build without numpy warns about it on import
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
except ModuleNotFoundError as error:
    if (error.name or "").split(".")[0] != "torch":
        raise
    raise TfcostError("measure needs torch, which is not installed: pip install 'tfcost[measure]'") from None
except ImportError as error:  # a torch older than 2.3 has no torch.nn.attention, or a broken install
    raise TfcostError(f"torch cannot be used ({error}): pip install 'tfcost[measure]'") from None

BACKENDS: dict[str, SDPBackend] = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "math": SDPBackend.MATH,
}
BACKEND_CHOICES = ["auto", *BACKENDS]  # what `--backend all` runs, in this order
TORCH_DTYPES: dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}

# triton.testing.do_bench zeroes a 256 MB buffer between repetitions: more than twice the L2 of an H100 (50 MB),
# so each repetition starts with Q, K, V in device memory rather than in cache.
L2_FLUSH_BYTES = 256 * 2**20
WARMUP_CALLS = 3  # at least: the first calls pay for kernel selection, autotuning and allocation
# Then keep warming up for do_bench's default 25 ms on a GPU; a CPU's thread pool took ~50 ms to settle here.
WARMUP_SECONDS = {"cuda": 0.025, "cpu": 0.1}
DEFAULT_REPEATS = {"cuda": 30, "cpu": 10}
# sdpa's enable_gqa (torch >= 2.5) lets the kernel read K heads; older torch needs K, V expanded to H heads.
GQA_SUPPORTED = "enable_gqa" in (F.scaled_dot_product_attention.__doc__ or "")


def attention_step(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, backward: bool
) -> Callable[[], object]:
    """One call to time: the forward, or forward and backward (gradients returned, never accumulated).

    Causal runs have equal query and key lengths: sdpa's is_causal mask is top-left aligned."""
    gqa: dict[str, Any] = {"enable_gqa": True} if q.shape[1] != k.shape[1] else {}

    def forward() -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, **gqa)

    if not backward:
        return forward
    grad_out = torch.randn_like(q)

    def forward_backward() -> None:
        torch.autograd.grad(forward(), (q, k, v), grad_out)

    return forward_backward


def forced_backend(backend: str) -> contextlib.AbstractContextManager[Any]:
    """Only `backend` may run inside (sdpa raises rather than fall back); 'auto' leaves torch's choice."""
    return contextlib.nullcontext() if backend == "auto" else sdpa_kernel(BACKENDS[backend])


def make_inputs(
    shape: AttentionShape, batch: int, seq: int, dtype: MeasureDtype, device: str, backward: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random Q (B, H, T, Q) and K, V (B, K, T, Q); under old torch without enable_gqa, K and V expanded."""
    kv_heads = shape.kv_heads if GQA_SUPPORTED else shape.heads

    def tensor(heads: int) -> torch.Tensor:
        size = (batch, heads, seq, shape.head_dim)
        return torch.randn(size, dtype=TORCH_DTYPES[dtype], device=device, requires_grad=backward)

    return tensor(shape.heads), tensor(kv_heads), tensor(kv_heads)


def is_out_of_memory(error: BaseException) -> bool:
    """CUDA raises torch.OutOfMemoryError; the CPU allocator a plain RuntimeError ("DefaultCPUAllocator: can't
    allocate memory" or "not enough memory")."""
    text = str(error).lower()
    return isinstance(error, torch.OutOfMemoryError) or any(
        words in text for words in ("out of memory", "allocate memory", "not enough memory")
    )


def first_line(text: str) -> str:
    return " ".join(text.strip().split("\n")[0].split())


def auto_choice(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> str | None:
    """The kernel sdpa picks when nothing is forced (torch's own dispatch function; private, so best effort)."""
    gqa: dict[str, Any] = {"enable_gqa": True} if q.shape[1] != k.shape[1] else {}
    try:
        choice = SDPBackend(torch._fused_sdp_choice(q, k, v, is_causal=causal, **gqa))
    except (AttributeError, RuntimeError, TypeError, ValueError):
        return None
    return next((name for name, backend in BACKENDS.items() if backend == choice), choice.name.lower())


class Timer:
    """Times a step on one device and measures what it allocates."""

    def __init__(self, device: str) -> None:
        self.device = device
        # Allocated once per sweep: the flush buffer must not count towards any call's peak memory.
        self.flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device=device) if device == "cuda" else None

    def sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def warm_up(self, step: Callable[[], Any]) -> None:
        start, calls = time.perf_counter(), 0
        while calls < WARMUP_CALLS or time.perf_counter() - start < WARMUP_SECONDS[self.device]:
            step()
            self.sync()
            calls += 1

    def samples_ms(self, step: Callable[[], Any], repeats: int) -> list[float]:
        self.warm_up(step)
        if self.flush is None:
            samples = []
            for _ in range(repeats):
                began = time.perf_counter()
                step()
                samples.append((time.perf_counter() - began) * 1000)
            return samples
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
        for start, end in events:
            self.flush.zero_()
            start.record()
            step()
            end.record()
        torch.cuda.synchronize()  # once, at the end: the events are read after the GPU has run them all
        return [start.elapsed_time(end) for start, end in events]

    def peak_bytes(self, step: Callable[[], Any]) -> int | None:
        """Bytes one call allocates above what was live before it (its inputs), at its peak."""
        if self.device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            step()
            torch.cuda.synchronize()
            return torch.cuda.max_memory_allocated() - before
        return cpu_peak_bytes(step)


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """The profiler's C++ side logs start and stop lines straight to file descriptor 2."""
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def cpu_peak_bytes(step: Callable[[], Any]) -> int | None:
    """The CPU allocator keeps no peak statistic, so replay its allocations and frees as the profiler records
    them and take the highest running total. Null where this torch's profiler does not expose them."""
    from torch.profiler import ProfilerActivity, profile

    try:
        with quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            step()
        events = [event for event in prof.profiler.kineto_results.events() if event.name() == "[memory]"]
        live = peak = 0
        for event in sorted(events, key=lambda event: event.start_ns()):
            live += event.nbytes()
            peak = max(peak, live)
    except (AttributeError, RuntimeError):
        return None
    return peak


def run_kernel(
    timer: Timer,
    backend: str,
    inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    seq: int,
    causal: bool,
    direction: Direction,
    repeats: int,
) -> KernelRun:
    """One backend on one shape: unsupported, out of memory, or timed."""
    q, k, v = inputs
    row = {"seq": seq, "backend": backend, "direction": direction}
    try:
        step = attention_step(q, k, v, causal, backward=direction == "forward+backward")  # allocates dO
        with forced_backend(backend):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:  # the first call says whether torch can run this shape at all
                    step()
                except RuntimeError as error:
                    if is_out_of_memory(error):
                        raise
                    # torch explains a refusal in warnings ("... not used because ...") before the error
                    said = dict.fromkeys(first_line(str(w.message)) for w in caught)
                    reason = "; ".join([*said, first_line(str(error))])
                    return KernelRun(**row, backend_ran=None, status="unsupported", reason=reason)
            ran = backend if backend != "auto" else auto_choice(q, k, v, causal)
            samples = timer.samples_ms(step, repeats)
            peak = timer.peak_bytes(step)
    except RuntimeError as error:
        if not is_out_of_memory(error):
            raise
        return KernelRun(**row, backend_ran=None, status="oom", reason=first_line(str(error)))
    return KernelRun(**row, backend_ran=ran, status="ok", samples_ms=samples, peak_memory_bytes=peak)


def free_bytes(device: str) -> int | None:
    """Memory a call may still take: the GPU's free memory less the L2-flush buffer the timer will hold, or the
    machine's available memory."""
    if device == "cuda":
        return max(0, torch.cuda.mem_get_info()[0] - L2_FLUSH_BYTES)
    return host_available_bytes()


def free_memory(device: str) -> None:
    if device == "cuda":
        torch.cuda.empty_cache()


def pick_device(requested: str, notes: list[str]) -> str:
    if requested == "cuda" and not torch.cuda.is_available():
        build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        raise TfcostError(f"--device cuda: torch {torch.__version__} ({build}) sees no CUDA GPU")
    if requested == "cpu" or not torch.cuda.is_available():
        if requested == "auto":
            notes.append("no CUDA GPU found: measured on the CPU")
        return "cpu"
    return "cuda"


def pick_gpu(device: str, device_name: str, override: str | None, dtype: str, notes: list[str]) -> GpuSpec | None:
    """The spec-table row for peaks: --gpu NAME, else the local GPU recognised by name; none on the CPU."""
    if device == "cpu":
        if override:
            notes.append(f"--gpu {override} ignored: a CPU run is not compared with a GPU's peak")
        notes.append("CPU: no peak in the spec table, so no peak fraction or roofline")
        return None
    gpu = load_gpu(override) if override else gpu_for_device_name(device_name)
    if gpu is None:
        notes.append(
            f"GPU '{device_name}' is not in the spec table: peak fraction and roofline left out "
            "(pass --gpu NAME; `tfcost gpus` lists them)"
        )
    elif peak_flops_per_s(gpu, dtype) is None:
        notes.append(f"{gpu.name} has no verified {dtype} peak in the spec table: peak fraction left out")
    return gpu


def describe_timing(device: str, repeats: int) -> str:
    warm = f"warm-up of at least {WARMUP_CALLS} calls and {WARMUP_SECONDS[device] * 1000:g} ms"
    if device == "cuda":
        return (
            f"CUDA events around each of {repeats} repetitions, the L2 cache flushed before each "
            f"({L2_FLUSH_BYTES // 2**20} MiB zeroed), after a {warm}; median, p10, p90"
        )
    return f"wall clock (time.perf_counter) around each of {repeats} repetitions after a {warm}; median, p10, p90"


def run(
    *,
    model: str | None,
    shape: AttentionShape,
    seqs: list[int],
    batch: int,
    dtype: MeasureDtype,
    causal: bool,
    backward: bool,
    backends: list[str],
    device: str,
    repeats: int | None,
    gpu: str | None,
    progress: Callable[[int], contextlib.AbstractContextManager[Callable[[str], None]]],
) -> MeasureReport:
    """The sweep: every sequence length, direction and backend, each a row whatever happens to it.

    `progress(total)` is a context manager giving a function that is called with each step's label as it starts
    (render.progress draws it on stderr)."""
    notes: list[str] = []
    device = pick_device(device, notes)
    device_name = (
        torch.cuda.get_device_name()
        if device == "cuda"
        else f"CPU ({platform.machine() or 'unknown'}, {torch.get_num_threads()} threads)"
    )
    spec = pick_gpu(device, device_name, gpu, dtype, notes)
    if shape.kv_heads != shape.heads and not GQA_SUPPORTED:
        notes.append(f"torch {torch.__version__} has no enable_gqa: K and V expanded to {shape.heads} heads")
    repeats = repeats or DEFAULT_REPEATS[device]
    setup = MeasureSetup(model=model, shape=shape, batch=batch, dtype=dtype, causal=causal)
    directions: list[Direction] = ["forward", "forward+backward"] if backward else ["forward"]
    unfit = calls_that_do_not_fit(setup, seqs, directions, backends, free_bytes(device), device_name)

    torch.manual_seed(0)
    timer = Timer(device)
    runs: list[KernelRun] = []
    with progress(len(seqs) * len(directions) * len(backends)) as begin:
        for seq in seqs:
            for direction in directions:
                if all((seq, direction, backend) in unfit for backend in backends):  # not even the inputs
                    for backend in backends:
                        begin(f"T={seq} {direction} {backend}")
                        runs.append(KernelRun(seq=seq, backend=backend, backend_ran=None, direction=direction,
                                              status="oom", reason=unfit[seq, direction, backend]))  # fmt: skip
                    continue
                try:
                    inputs = make_inputs(shape, batch, seq, dtype, device, direction == "forward+backward")
                except RuntimeError as error:
                    if not is_out_of_memory(error):
                        raise
                    reason = f"inputs: {first_line(str(error))}"
                    for backend in backends:
                        runs.append(KernelRun(seq=seq, backend=backend, backend_ran=None, direction=direction,
                                              status="oom", reason=reason))  # fmt: skip
                        begin(f"T={seq} {direction} {backend}")
                    continue
                for backend in backends:
                    begin(f"T={seq} {direction} {backend}")
                    if (seq, direction, backend) in unfit:
                        runs.append(KernelRun(seq=seq, backend=backend, backend_ran=None, direction=direction,
                                              status="oom", reason=unfit[seq, direction, backend]))  # fmt: skip
                        continue
                    runs.append(run_kernel(timer, backend, inputs, seq, causal, direction, repeats))
                    free_memory(device)
                del inputs
                free_memory(device)
    return MeasureReport(
        device=device,
        device_name=device_name,
        gpu=spec.name if spec else None,
        torch_version=torch.__version__,
        model=model,
        timing=describe_timing(device, repeats),
        notes=notes,
        measurements=[measurement(r, setup, spec) for r in runs],
    )


# ---- measure --roofline: this machine's matmul FLOP/s, copy bandwidth and fixed cost of a kernel ----------------

# Matmul shapes (m x k) @ (k x n): decode multiplies one row per sequence by a weight matrix (it streams the
# weights); prefill multiplies a prompt's rows (it computes). Widths are a 7B model's d (4096) on a GPU and a
# smaller one on the CPU, so that a run takes seconds.
ROOFLINE_SHAPES = {
    "cuda": {"decode": (1, 8192, 8192), "prefill": (4096, 8192, 8192)},
    "cpu": {"decode": (1, 2048, 2048), "prefill": (512, 1024, 1024)},
}
# A one-row matmul's bandwidth falls with the weights' row length K (a dot product over each K-long row: on this
# CPU, fp32, K = 512 reached about 10 GB/s where K = 2048 reached 16): timed at these K, N wide, enough matrices
# in a row that the set outgrows the caches (STREAM_SET_BYTES).
DECODE_ROW_LENGTHS = {"cuda": (1024, 2048, 4096, 8192), "cpu": (256, 512, 1024, 2048, 4096)}
DECODE_ROW_WIDTH = {"cuda": 8192, "cpu": 2048}
STREAM_SET_BYTES = {"cuda": 1 * 2**30, "cpu": 128 * 2**20}
# A prefill's matmuls have B x P rows and each reads its own weight from memory: timed at these row counts,
# K = N = PREFILL_WIDTH, enough matrices in a row that the set outgrows the caches (PREFILL_SET_BYTES). On this
# CPU 128-row products each with its own weight reached ~85 GFLOP/s where one cached 512-row product reached 100.
PREFILL_ROWS = {"cuda": (512, 4096), "cpu": (128, 512)}
PREFILL_WIDTH = {"cuda": 8192, "cpu": 1024}
PREFILL_SET_BYTES = {"cuda": 1 * 2**30, "cpu": 64 * 2**20}
# The fused attention kernel (sdpa, causal, forward) at a prefill's shape: B = 1, H heads of Q, T positions.
ATTENTION_SHAPE = {"cuda": (32, 4096, 128), "cpu": (8, 512, 64)}
COPY_BYTES = {"cuda": 2 * 2**30, "cpu": 256 * 2**20}
TINY_CALLS = 1000  # back-to-back tiny kernels, timed together: their mean is the per-kernel floor
ROOFLINE_DTYPES = {"cuda": ["bf16", "fp16", "fp32"], "cpu": ["fp32", "bf16"]}
ELEMENT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1}


def device_memory_bytes(device: str) -> int:
    if device == "cuda":
        return int(torch.cuda.get_device_properties(0).total_memory)
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def device_free_bytes(device: str) -> int:
    """What can be allocated: CUDA's free memory, or the host's available memory (Linux's MemAvailable counts the
    page cache the kernel gives back; the free pages alone would refuse what fits)."""
    if device == "cuda":
        return int(torch.cuda.mem_get_info()[0])
    from tfcost.hardware.host import host_available_bytes

    available = host_available_bytes()
    return available if available is not None else int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))


def median(samples: list[float]) -> float:
    ordered = sorted(samples)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


# A decode step streams many weight matrices, none of them in cache when its turn comes: time MATRICES of them
# in a row, as nn.Linear applies them (x @ W^T), so that the whole set outgrows the caches.
MATRICES = {"decode": 8, "prefill": 1}


def time_matmul(timer: Timer, device: str, dtype: str, m: int, k: int, n: int, count: int, repeats: int) -> float:
    x = torch.randn(m, k, device=device, dtype=TORCH_DTYPES[dtype])
    weights = [torch.randn(n, k, device=device, dtype=TORCH_DTYPES[dtype]) for _ in range(count)]

    def apply() -> None:
        for weight in weights:
            F.linear(x, weight)

    return median(timer.samples_ms(apply, repeats))


def fp8_matmul_ms(timer: Timer, m: int, k: int, n: int, repeats: int) -> float | None:
    """torch._scaled_mm on e4m3 inputs (Hopper and later); None where this GPU or torch has none."""
    try:
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device="cuda")
        step = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)  # noqa: E731
        step()
    except (AttributeError, RuntimeError, TypeError):
        return None
    return median(timer.samples_ms(step, repeats))


def attention_run(timer: Timer, device: str, dtype: str, repeats: int) -> dict[str, Any]:
    """One causal forward of sdpa at ATTENTION_SHAPE, the kernel torch picks."""
    heads, seq, head_dim = ATTENTION_SHAPE[device]
    q, k, v = (torch.randn(1, heads, seq, head_dim, device=device, dtype=TORCH_DTYPES[dtype]) for _ in range(3))
    ms = median(timer.samples_ms(attention_step(q, k, v, causal=True, backward=False), repeats))
    return {"dtype": dtype, "heads": heads, "seq": seq, "head_dim": head_dim, "median_ms": ms}


def back_to_back_us(device: str, step: Callable[[], Any]) -> float:
    """Mean wall time of TINY_CALLS calls launched back to back then synchronised: the fixed cost of a kernel."""
    for _ in range(10):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(TINY_CALLS):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / TINY_CALLS * 1e6


def roofline(device: str, repeats: int | None) -> dict[str, Any]:
    """Raw measurements of this machine (no arithmetic beyond rates of what was timed)."""
    notes: list[str] = []
    device = pick_device(device, notes)
    repeats = repeats or DEFAULT_REPEATS[device]
    timer = Timer(device)
    torch.manual_seed(0)
    matmuls = []
    for dtype in ROOFLINE_DTYPES[device]:
        for kind, (m, k, n) in ROOFLINE_SHAPES[device].items():
            count = MATRICES[kind]
            ms = time_matmul(timer, device, dtype, m, k, n, count, repeats)
            matmuls.append({"dtype": dtype, "kind": kind, "m": m, "k": k, "n": n, "count": count, "median_ms": ms})
        n = DECODE_ROW_WIDTH[device]
        for k in DECODE_ROW_LENGTHS[device]:
            count = max(MATRICES["decode"], STREAM_SET_BYTES[device] // (k * n * ELEMENT_BYTES[dtype]))
            ms = time_matmul(timer, device, dtype, 1, k, n, count, repeats)
            matmuls.append({"dtype": dtype, "kind": "decode", "m": 1, "k": k, "n": n, "count": count, "median_ms": ms})
        width = PREFILL_WIDTH[device]
        for m in PREFILL_ROWS[device]:
            count = max(1, PREFILL_SET_BYTES[device] // (width * width * ELEMENT_BYTES[dtype]))
            ms = time_matmul(timer, device, dtype, m, width, width, count, repeats)
            matmuls.append({"dtype": dtype, "kind": "prefill", "m": m, "k": width, "n": width, "count": count,
                            "median_ms": ms})  # fmt: skip
    attentions = [attention_run(timer, device, dtype, repeats) for dtype in ROOFLINE_DTYPES[device]]
    if device == "cuda":
        for kind, (m, k, n) in ROOFLINE_SHAPES[device].items():
            fp8_ms = fp8_matmul_ms(timer, max(m, 16), k, n, repeats)  # _scaled_mm needs m divisible by 16
            if fp8_ms is None:
                notes.append("fp8: torch._scaled_mm did not run on this GPU")
                break
            matmuls.append({"dtype": "fp8", "kind": kind, "m": max(m, 16), "k": k, "n": n, "median_ms": fp8_ms})
    source = torch.empty(COPY_BYTES[device] // 4, dtype=torch.float32, device=device)
    target = torch.empty_like(source)
    copy_ms = median(timer.samples_ms(lambda: target.copy_(source), repeats))

    one = torch.ones(1, device=device)
    small_a = torch.randn(16, 16, device=device)
    floors = step_floors_us(device, repeats)
    return {
        "device": device,
        "device_name": device_label(device),
        "torch_version": torch.__version__,
        "memory_bytes": device_memory_bytes(device),
        "matmuls": matmuls,
        "attentions": attentions,
        "copy_bytes": 2 * COPY_BYTES[device],  # read once and written once
        "copy_ms": copy_ms,
        "tiny_kernel_us": back_to_back_us(device, lambda: one.add_(1)),
        "tiny_matmul_us": back_to_back_us(device, lambda: small_a @ small_a),
        "floor_layers": list(FLOOR_LAYERS),
        "floor_step_us": floors,
        "timing": describe_timing(device, repeats),
        "notes": notes,
    }


def device_label(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name()
    return f"CPU ({platform.machine() or 'unknown'}, {torch.get_num_threads()} threads)"


# A model so narrow that its decode step is all fixed cost (module calls, kernel launches), built at two depths:
# the difference is the floor of one layer, the rest the floor of the step (embedding, head, sampling inputs).
FLOOR_LAYERS = (1, 3)


def floor_shape(layers: int) -> Any:
    from tfcost.schema import ModelShape

    fields = {
        "name": f"floor-{layers}",
        "source": "a Llama-like layer 64 wide, to time fixed costs",
        "vocab_size": 256,
        "d_model": 64,
        "n_layers": layers,
        "n_heads": 2,
        "n_kv_heads": 1,
        "d_ff": 128,
        "mlp": "gated",
        "norm": "rmsnorm",
        "tied_embeddings": False,
        "position": "rotary",
        "max_seq_len": 256,
    }
    return ModelShape.model_validate(fields)


def step_floors_us(device: str, repeats: int) -> list[float] | None:
    """Decode-step time of the narrow model at each depth in FLOOR_LAYERS (None without transformers)."""
    try:
        import transformers  # noqa: F401
    except ModuleNotFoundError:
        return None
    floors = []
    for layers in FLOOR_LAYERS:
        timed = step(floor_shape(layers), prompt=16, generate=16, batch=1, dtype="fp32", device=device,
                     repeats=repeats, needed_bytes=0)  # fmt: skip
        floors.append(timed["decode_ms"] * 1000)
    return floors


# ---- measure --model M --step: a real prefill and decode step of the model, random weights ----------------------


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers logs deprecation notes (past_key_values) on every call; they are not the user's concern."""
    import transformers

    level = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        yield
    finally:
        transformers.logging.set_verbosity(level)


def hf_model(shape: Any, dtype: str, device: str) -> Any:
    """The model in transformers with random weights: GPT-2's layout (learned positions, LayerNorm, plain MLP) or
    Llama's (rotary, RMSNorm, gated MLP); other layouts are refused."""
    import transformers

    config: Any
    common = {"vocab_size": shape.vocab_size, "tie_word_embeddings": shape.tied_embeddings}
    if shape.position == "learned" and shape.mlp == "plain" and shape.norm == "layernorm" and shape.moe is None:
        config = transformers.GPT2Config(
            n_embd=shape.d_model, n_layer=shape.n_layers, n_head=shape.n_heads, n_inner=shape.d_ff,
            n_positions=shape.max_seq_len, **common,
        )  # fmt: skip
    elif shape.position == "rotary" and shape.mlp == "gated" and shape.norm == "rmsnorm" and shape.moe is None:
        config = transformers.LlamaConfig(
            hidden_size=shape.d_model, intermediate_size=shape.d_ff, num_hidden_layers=shape.n_layers,
            num_attention_heads=shape.n_heads, num_key_value_heads=shape.n_kv_heads, head_dim=shape.head_dim,
            max_position_embeddings=shape.max_seq_len, **common,
        )  # fmt: skip
    else:
        raise TfcostError(f"--step builds GPT-2- and Llama-like models only; {shape.name} is neither")
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=TORCH_DTYPES[dtype])
    return model.eval()


def step(
    shape: Any, *, prompt: int, generate: int, batch: int, dtype: str, device: str, repeats: int | None,
    needed_bytes: int,
) -> dict[str, Any]:  # fmt: skip
    """Time one prefill of B x P tokens and one decode step at context P + G (the cache cropped back to P + G - 1
    before each repetition). Refuses when `needed_bytes` (weights, KV cache, the widest forward's activations and
    logits: reports.step.step_memory_bytes) exceed the memory that can be allocated."""
    notes: list[str] = []
    device = pick_device(device, notes)
    free = device_free_bytes(device)
    if needed_bytes > free:
        raise TfcostError(
            f"{shape.name} needs about {needed_bytes / 2**30:.1f} GiB for weights, KV cache and the prompt's "
            f"activations and logits; {device} has {free / 2**30:.1f} GiB available"
        )
    repeats = repeats or DEFAULT_REPEATS[device]
    timer = Timer(device)
    torch.manual_seed(0)
    with warnings.catch_warnings(), quiet_transformers():
        warnings.simplefilter("ignore")
        model = hf_model(shape, dtype, device)
    context = prompt + generate
    prompt_ids = torch.randint(0, shape.vocab_size, (batch, prompt), device=device)
    history = torch.randint(0, shape.vocab_size, (batch, context - 1), device=device)
    token = torch.randint(0, shape.vocab_size, (batch, 1), device=device)
    with torch.inference_mode(), warnings.catch_warnings(), quiet_transformers():
        warnings.simplefilter("ignore")
        # Logits of the last position only (logits_to_keep=1), as a server samples them and as serving.prefill_flops
        # counts them: the head over all P positions would add 2 P d V FLOPs no engine spends.
        prefill_ms = median(timer.samples_ms(lambda: model(prompt_ids, use_cache=True, logits_to_keep=1), repeats))
        cache = model(history, use_cache=True, logits_to_keep=1).past_key_values

        def decode() -> None:
            if cache.get_seq_length() > context - 1:
                cache.crop(-1)  # back to P + G - 1 cached tokens (this transformers crops by a negative count)
            model(token, past_key_values=cache, use_cache=True, logits_to_keep=1)

        decode_ms = median(timer.samples_ms(decode, repeats))
    return {
        "device": device,
        "device_name": device_label(device),
        "torch_version": torch.__version__,
        "prefill_ms": prefill_ms,
        "decode_ms": decode_ms,
        "timing": describe_timing(device, repeats),
        "notes": notes,
    }
