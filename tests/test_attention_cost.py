"""The attention kernel's cost model (no torch): FLOPs as FlashAttention counts them, bytes moved, memory, and a
measurement set beside the estimate."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfcost.core.flops import (
    attention_backward_flops,
    attention_forward_flops,
    attention_matmul_flops,
    forward_flops_breakdown,
    score_entries,
)
from tfcost.core.memory import attention_io_bytes, attention_peak_memory_bytes, attention_scores_bytes
from tfcost.hardware.rates import achieved_per_s, peak_flops_per_s, peak_fraction, roofline_ratio
from tfcost.hardware.timing import timing_summary
from tfcost.readers.presets import load_gpu, load_model
from tfcost.reports.measure import KernelRun, MeasureSetup, kernel_flops, measurement
from tfcost.schema import AttentionShape


def fa2_benchmark_flops(batch: int, seqlen: int, nheads: int, headdim: int, causal: bool) -> int:
    # flash-attention benchmarks/benchmark_flash_attention.py, verbatim: the independent oracle.
    return 4 * batch * seqlen**2 * nheads * headdim // (2 if causal else 1)


@pytest.mark.parametrize(("batch", "seq", "heads", "head_dim"), [(32, 512, 16, 128), (1, 16384, 32, 64), (2, 7, 3, 5)])
def test_forward_flops_match_flashattention_benchmark(batch, seq, heads, head_dim):
    assert attention_forward_flops(batch, heads, seq, head_dim, False) == fa2_benchmark_flops(
        batch, seq, heads, head_dim, False
    )
    # Causal: the exact triangle keeps the diagonal, T(T+1)/2 entries where FA takes T^2/2: 2*B*H*T*Q more.
    exact = attention_forward_flops(batch, heads, seq, head_dim, True)
    assert exact - fa2_benchmark_flops(batch, seq, heads, head_dim, True) == 2 * batch * heads * seq * head_dim


def test_fa2_paper_setting():
    # FA2 §4.1: hidden 2048, head dim 128 (16 heads), seqlen 16k, batch 1: 4 * 16384^2 * 128 * 16 FLOPs forward.
    assert attention_forward_flops(1, 16, 16384, 128, False) == 2_199_023_255_552


def test_backward_is_two_and_a_half_forwards():
    forward = attention_forward_flops(4, 32, 4096, 128, True)
    assert 2 * attention_backward_flops(4, 32, 4096, 128, True) == 5 * forward
    shape = AttentionShape(heads=32, kv_heads=8, head_dim=128)
    assert 2 * kernel_flops(shape, 4, 4096, True, "forward+backward") == 7 * forward
    assert kernel_flops(shape, 4, 4096, True, "forward") == forward


def test_kernel_flops_are_the_models_attention_matmuls(gpt2):
    # The estimate's per-layer QK^T and AV terms and the kernel's FLOPs are the same formula.
    for causal in (False, True):
        parts = forward_flops_breakdown(gpt2, 1024, causal)
        per_layer = (parts["attention/scores"] + parts["attention/values"]) // gpt2.n_layers
        assert attention_forward_flops(1, gpt2.n_heads, 1024, gpt2.head_dim, causal) == per_layer
        assert attention_matmul_flops(1, 12, score_entries(1024, causal), 64) == parts["attention/scores"] // 12


def test_io_bytes_count_kv_heads_under_gqa():
    # Llama-3-8B attention, T = 4096, bf16: Q and O are 32 x 4096 x 128 x 2 B, K and V 8 heads each.
    q, kv = 32 * 4096 * 128 * 2, 8 * 4096 * 128 * 2
    assert attention_io_bytes(1, 32, 8, 4096, 128, "bf16", backward=False) == 2 * q + 2 * kv == 83_886_080
    assert attention_io_bytes(1, 32, 8, 4096, 128, "bf16", backward=True) == 2 * 83_886_080
    assert attention_io_bytes(3, 32, 8, 4096, 128, "fp32", backward=False) == 3 * 2 * 83_886_080


def test_peak_memory_estimate_is_quadratic_only_when_materialized():
    args = {"batch": 2, "heads": 12, "kv_heads": 4, "head_dim": 64, "dtype": "bf16"}
    out = 2 * 12 * 1024 * 64 * 2
    fused = attention_peak_memory_bytes(seq_len=1024, materialized=False, backward=False, **args)
    assert fused == out + 2 * 12 * 1024 * 4  # O and an fp32 log-sum-exp per query row
    assert attention_peak_memory_bytes(seq_len=2048, materialized=False, backward=False, **args) == 2 * fused
    math = attention_peak_memory_bytes(seq_len=1024, materialized=True, backward=False, **args)
    assert math == out + attention_scores_bytes(2, 12, 1024, "bf16") == out + 2 * 12 * 1024 * 1024 * 2
    grads = out + 2 * (2 * 4 * 1024 * 64 * 2)  # dQ like O; dK, dV with 4 heads
    math_bwd = attention_peak_memory_bytes(seq_len=1024, materialized=True, backward=True, **args)
    assert math_bwd == out + grads + 2 * attention_scores_bytes(2, 12, 1024, "bf16")


def test_published_utilisation_figures():
    # FA2: 230 TFLOP/s is "73% of the theoretical maximum" on A100; FA3: 740 TFLOP/s is 75% of H100's 989.
    assert peak_fraction(230e12, peak_flops_per_s(load_gpu("a100-80gb"), "bf16")) == pytest.approx(0.737, abs=1e-3)
    assert peak_fraction(740e12, peak_flops_per_s(load_gpu("h100-sxm"), "fp16")) == pytest.approx(0.748, abs=1e-3)
    assert achieved_per_s(1e12, 0.004) == 2.5e14
    assert roofline_ratio(3.0, 2.0) == 1.5


def test_timing_summary():
    assert timing_summary([10, 9, 8, 7, 6, 5, 4, 3, 2, 1]) == pytest.approx((5.5, 1.9, 9.1))  # numpy's linear
    assert timing_summary([4.0]) == (4.0, 4.0, 4.0)
    with pytest.raises(ValueError, match="no timing samples"):
        timing_summary([])


@given(st.lists(st.floats(min_value=1e-6, max_value=1e6), min_size=1, max_size=60))
def test_deciles_bracket_the_median(samples):
    median, p10, p90 = timing_summary(samples)
    assert min(samples) <= p10 <= median <= p90 <= max(samples)


SETUP = MeasureSetup(
    model="llama-3-8b",
    shape=AttentionShape(heads=32, kv_heads=8, head_dim=128),
    batch=1,
    dtype="bf16",
    causal=True,
)


def test_measurement_on_a_known_gpu():
    run = KernelRun(seq=8192, backend="auto", backend_ran="flash", direction="forward", status="ok",
                    samples_ms=[2.0, 1.0, 3.0], peak_memory_bytes=123)  # fmt: skip
    row = measurement(run, SETUP, load_gpu("h100-sxm"))
    flops = attention_forward_flops(1, 32, 8192, 128, True)
    moved = attention_io_bytes(1, 32, 8, 8192, 128, "bf16", backward=False)
    assert (row.flops, row.bytes_moved, row.median_ms, row.p10_ms, row.p90_ms) == (flops, moved, 2.0, 1.2, 2.8)
    assert row.tflops_per_s == pytest.approx(flops / 2e-3 / 1e12)
    assert row.peak_fraction == pytest.approx(flops / 2e-3 / 989.4e12)
    assert row.bandwidth_gb_per_s == pytest.approx(moved / 2e-3 / 1e9)
    # Attention at T = 8192 is far above H100's ridge point (295 FLOP/byte): compute-bound, roofline = FLOPs/peak.
    assert row.compute_bound is True
    assert row.roofline_ms == pytest.approx(flops / 989.4e12 * 1e3)
    assert row.roofline_ratio == pytest.approx(2.0 / row.roofline_ms)
    assert row.peak_memory_bytes == 123
    assert row.peak_memory_estimate_bytes == attention_peak_memory_bytes(1, 32, 8, 8192, 128, "bf16", False, False)
    assert (row.heads, row.kv_heads, row.head_dim, row.repeats) == (32, 8, 128, 3)


def test_rows_without_a_timing_or_a_gpu_keep_nulls():
    refused = KernelRun(seq=512, backend="flash", backend_ran=None, direction="forward+backward",
                        status="unsupported", reason="no kernel")  # fmt: skip
    row = measurement(refused, SETUP, load_gpu("h100-sxm"))
    assert (row.status, row.reason) == ("unsupported", "no kernel")
    assert row.median_ms is row.tflops_per_s is row.peak_fraction is None
    assert row.flops == kernel_flops(SETUP.shape, 1, 512, True, "forward+backward")  # known without running
    assert row.roofline_ms is not None  # the bound exists even when the kernel did not run
    cpu = measurement(KernelRun(seq=512, backend="math", backend_ran="math", direction="forward", status="ok",
                                samples_ms=[5.0]), SETUP, None)  # fmt: skip
    assert cpu.tflops_per_s == pytest.approx(cpu.flops / 5e-3 / 1e12)
    assert (cpu.peak_fraction, cpu.roofline_ms, cpu.roofline_ratio, cpu.compute_bound) == (None, None, None, None)
    # The math backend is estimated with its materialized score matrix.
    assert cpu.peak_memory_estimate_bytes == attention_peak_memory_bytes(1, 32, 8, 512, 128, "bf16", True, False)


def test_fp32_peak_is_the_non_tensor_one_and_may_be_unknown():
    fp32 = SETUP.model_copy(update={"dtype": "fp32"})
    run = KernelRun(seq=1024, backend="math", backend_ran="math", direction="forward", status="ok", samples_ms=[1.0])
    assert measurement(run, fp32, load_gpu("a100-80gb")).peak_fraction == pytest.approx(
        kernel_flops(SETUP.shape, 1, 1024, True, "forward") / 1e-3 / 19.5e12
    )
    assert measurement(run, fp32, load_gpu("b200")).peak_fraction is None  # no verified FP32 figure


def test_attention_shape_refuses_uneven_groups():
    with pytest.raises(ValueError, match=r"kv_heads \(5\) must divide heads \(12\)"):
        AttentionShape(heads=12, kv_heads=5, head_dim=64)
    llama = load_model("llama-3-8b")
    assert AttentionShape(heads=llama.n_heads, kv_heads=llama.n_kv_heads, head_dim=llama.head_dim).kv_heads == 8


def test_measured_units_print_as_bare_numbers_labelled_by_their_column():
    from tfcost.units import human

    assert human(1.23456, "kernel_ms") == "1.235"
    assert human(352.123, "tflops_per_s") == "352"
    assert human(0.7474, "fraction") == "74.7%"
    assert human(3.2, "ratio") == "3.20x"
    assert human(4321.06, "gb_per_s") == "4321.1"


def test_measure_table_prints_torch_reasons_verbatim(capsys):
    from tfcost.render.measure import measure_table
    from tfcost.reports.measure import MeasureReport

    reason = "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory"
    rows = [
        KernelRun(seq=4096, backend="math", backend_ran=None, direction="forward", status="oom", reason=reason),
        KernelRun(seq=4096, backend="flash", backend_ran="flash", direction="forward", status="ok", samples_ms=[2.0]),
    ]
    report = MeasureReport(device="cpu", device_name="CPU [test]", gpu=None, torch_version="2.13.0", model=None,
                           timing="wall clock", measurements=[measurement(r, SETUP, None) for r in rows])  # fmt: skip
    measure_table(report)
    out = capsys.readouterr().out
    assert f"[1] math: {reason}" in " ".join(out.split())
    assert "on CPU [test]" in out and "oom" in out and "auto" not in out
