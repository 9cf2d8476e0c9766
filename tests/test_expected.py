"""`serve`'s expected time against published measurements, and its memory terms against vLLM's KV capacity.

gpt-fast README (pytorch-labs/gpt-fast @ 0f925b5d, "Benchmarks" and "Tensor Parallelism"): 8 x A100-80GB
(power-limited to 330 W), batch 1, a 5-token prompt, generate.py's default 200 new tokens. The tensor-parallel rows
are "Base", bf16 weights; int4 uses group size 32. The fractions in tfcost.costs.expected come from other sources
(llm-analysis, FlashAttention-2, NCCL's latency model); these seven figures only check them.
"""

from __future__ import annotations

import math
from typing import Literal

import pytest

from tfcost.costs.expected import table_rates
from tfcost.readers.presets import load_gpu, load_model
from tfcost.reports.serve import serve
from tfcost.schema import ModelShape, ServingSetup

GPT_FAST = [  # model, weights, GPUs, group size, measured tokens/s, expected / measured as tfcost gives it
    ("llama-2-7b", "bf16", 1, 128, 104.9, 0.955),
    ("llama-2-7b", "int8", 1, 128, 155.58, 1.053),
    ("llama-2-7b", "int4", 1, 32, 196.80, 1.062),
    ("llama-2-70b", "int8", 1, 128, 19.13, 0.917),
    ("llama-2-70b", "bf16", 2, 128, 21.32, 0.919),
    ("llama-2-70b", "bf16", 8, 128, 62.50, 0.996),
    ("llama-2-7b", "bf16", 8, 128, 328.43, 1.098),
]


def gpt_fast_report(model: str, weights: str, gpus: int, group: int):  # type: ignore[no-untyped-def]
    setup = ServingSetup(gpus=gpus, weights_dtype=weights, batch=1, prompt=5, generate=200, group_size=group)
    return serve(load_model(model), load_gpu("a100-80gb"), setup)


@pytest.mark.parametrize(("model", "weights", "gpus", "group", "measured", "ratio"), GPT_FAST)
def test_expected_tokens_per_s_against_gpt_fast(model, weights, gpus, group, measured, ratio):  # type: ignore[no-untyped-def]
    report = gpt_fast_report(model, weights, gpus, group)
    assert report.expected.tokens_per_s / measured == pytest.approx(ratio, abs=0.005)
    assert report.latency.tokens_per_s >= measured  # the bound is never below a measurement


def test_expected_is_within_25_percent_of_gpt_fast_overall():
    distances = [
        abs(math.log(gpt_fast_report(m, w, g, s).expected.tokens_per_s / measured))
        for m, w, g, s, measured, _ in GPT_FAST
    ]
    assert math.exp(sum(distances) / len(distances)) - 1 < 0.25


def test_tensor_parallel_adds_two_allreduces_per_layer():
    """Llama-2-70B on 8 A100s: 2 x 80 all-reduces of 8192 bf16 values, each NCCL's 6.6 us + 14 hops x 0.6 us plus
    14/8 x 16 KiB over 300 GB/s."""
    report = gpt_fast_report("llama-2-70b", "bf16", 8, 128)
    one = 6.6e-6 + 14 * 0.6e-6 + 14 / 8 * 8192 * 2 / 300e9
    assert report.expected.decode_allreduce_ms == pytest.approx(160 * one * 1000)
    assert gpt_fast_report("llama-2-70b", "int8", 1, 128).expected.decode_allreduce_ms == 0


def test_decode_streams_the_layers_and_head_not_the_token_table():
    """Llama-2-7B (6,738,415,616 parameters, HF model card; a 32,000 x 4,096 token table, untied head): a decode step
    gathers one row of the token table, so expected streams 2 bytes x (N - 32,000 x 4,096) plus the KV cache of the
    205-token context in whole 16-token blocks (208 slots x 32 layers x 2 x 4,096 x 2 bytes)."""
    report = gpt_fast_report("llama-2-7b", "bf16", 1, 128)
    kv = 208 * 32 * 2 * 4096 * 2
    assert report.expected.decode_bytes_per_gpu == 2 * (6_738_415_616 - 32_000 * 4_096) + kv


def test_output_head_is_its_own_roofline_in_prefill():
    """A compute-bound prefill still streams the head's V x d matrix for its one sampled row: GPT-2's 50,257 x 768
    tied table, 2 bytes each at 0.7 x 2.039 TB/s, is added to the layers' compute time."""
    gpt2 = load_model("gpt2-small")
    setup = ServingSetup(batch=1, prompt=2048, generate=1)
    report = serve(gpt2, load_gpu("a100-80gb"), setup)
    head_s = 50_257 * 768 * 2 / (0.7 * 2.039e12)
    assert report.expected.prefill_bound == "compute-bound"
    assert report.expected.prefill_kernels_ms == pytest.approx(
        ((report.expected.prefill_flops_per_gpu - 2 * 50_257 * 768) / (0.7 * 312e12) + head_s) * 1000
    )


def test_stream_rate_follows_the_measured_row_lengths():
    """Between two measured row lengths the rate is interpolated in log K; outside, the nearest measurement."""
    from tfcost.costs.expected import EngineRates, stream_rate

    rates = EngineRates(stream_bytes_per_s=16e9, matmul_flops_per_s=1e11, kernel_floor_s=0, kernels_per_layer=1,
                        cuda_context_bytes=0, sources={}, stream_by_row_length=((512, 10e9), (2048, 16e9)))  # fmt: skip
    assert stream_rate(1024, rates) == pytest.approx(13e9)  # halfway in log K
    assert stream_rate(256, rates) == 10e9 and stream_rate(8192, rates) == 16e9


def test_group_size_changes_int4_bytes():
    small = gpt_fast_report("llama-2-7b", "int4", 1, 32).memory.weights_bytes
    large = gpt_fast_report("llama-2-7b", "int4", 1, 128).memory.weights_bytes
    blocks = load_model("llama-2-7b")
    from tfcost.core.params import non_embedding_params

    n = non_embedding_params(blocks)
    assert small - large == (math.ceil(n / 32) - math.ceil(n / 128)) * 2


# OPT-13B (Zhang et al. 2022; facebook/opt-13b config.json): 40 layers, d 5120, 40 heads, FFN 20480, vocab 50272,
# learned positions (2048 + OPT's offset of 2), LayerNorm, biases, ReLU MLP, tied head.
OPT_13B = ModelShape(
    name="opt-13b",
    vocab_size=50272,
    d_model=5120,
    n_layers=40,
    n_heads=40,
    d_ff=20480,
    mlp="plain",
    norm="layernorm",
    bias={"qkv": True, "attn_out": True, "mlp": True},
    tied_embeddings=True,
    position="learned",
    max_seq_len=2048,
)


def test_vllm_kv_capacity_of_opt_13b_on_a100_40gb():
    """PagedAttention (Kwon et al. 2023): OPT-13B on one A100-40GB holds about 15.7K tokens of KV cache. The vLLM of
    the paper budgeted PyTorch's peak only ("peak_memory = torch.cuda.max_memory_allocated()"; PR #2031, Dec 2023,
    added the memory outside the allocator), so no CUDA context here; with a 2048-token profile run (vLLM's OPT
    layer keeps 2d + 2 x 4d a token at its peak) and whole 16-token blocks, tfcost's capacity is 15,536 (1.0% under)."""
    gpu = load_gpu("a100-40gb")
    setup = ServingSetup(batch=1, prompt=2048, generate=1)
    rates = table_rates(gpu, "bf16").model_copy(update={"cuda_context_bytes": 0})
    report = serve(OPT_13B, gpu, setup, rates=rates)
    assert report.expected.max_kv_tokens == pytest.approx(15_700, rel=0.05)
    assert report.expected.max_kv_tokens % 16 == 0
    assert report.expected.max_kv_tokens < report.max_context  # context and workspace take their share


def test_matmul_rate_follows_the_rows_in_flight():
    """A profile's prefill rate at B x P rows: 128 rows at 50 GFLOP/s, 512 at 100; 256 rows halfway in log M."""
    from tfcost.costs.expected import EngineRates, phase_seconds

    rates = EngineRates(stream_bytes_per_s=1e10, matmul_flops_per_s=1e11, kernel_floor_s=0, kernels_per_layer=1,
                        cuda_context_bytes=0, sources={}, matmul_by_rows=((128, 5e10), (512, 1e11)))  # fmt: skip
    assert phase_seconds(1e11, 0, rates, rows=128) == pytest.approx(2.0)
    assert phase_seconds(1e11, 0, rates, rows=256) == pytest.approx(1e11 / 7.5e10)
    assert phase_seconds(1e11, 0, rates) == pytest.approx(1.0)  # no rows given: the single rate


# A whole run and in-flight batching (issue 22) ------------------------------------------------------------------


def test_mean_decode_context_is_the_mean_of_the_steps_contexts():
    """The G steps of a generation attend to P + 1, ..., P + G positions."""
    from tfcost.costs.expected import mean_decode_context

    for prompt, generate in [(128, 2048), (1000, 1000), (5, 1), (2048, 127)]:
        contexts = range(prompt + 1, prompt + generate + 1)
        assert mean_decode_context(prompt, generate) == math.floor(sum(contexts) / generate)


def test_mean_step_is_the_mean_of_every_steps_time():
    """With one-token blocks the cache grows one token a step, and a memory-bound step's time is linear in its
    context: the step at P + (G + 1) / 2 is the mean of the G steps, each priced as a one-token generation at its own
    context (P' = context - 1, G' = 1)."""
    gpu, shape = load_gpu("h100-sxm"), load_model("llama-2-7b")
    prompt, generate = 1000, 63
    report = serve(shape, gpu, ServingSetup(batch=16, prompt=prompt, generate=generate, kv_block=1))
    steps = [
        serve(
            shape, gpu, ServingSetup(batch=16, prompt=context - 1, generate=1, kv_block=1)
        ).expected.decode_ms_per_token
        for context in range(prompt + 1, prompt + generate + 1)
    ]
    assert report.expected.decode_mean_ms_per_token == pytest.approx(sum(steps) / generate, rel=1e-9)
    assert report.expected.run_ms == pytest.approx(report.expected.prefill_ms + sum(steps), rel=1e-9)
    assert report.expected.run_tokens_per_s == pytest.approx(16 * generate / report.expected.run_ms * 1000)


def test_in_flight_step_carries_the_tokens_trtllm_bench_sizes_it_for():
    """trtllm-bench (tensorrt_llm/bench/build/tuning.py, finetune_setting) sizes a step's tokens as
    raw_bs * (1 + input_len / output_len): the batch's decode tokens and its share of prompt tokens."""
    from tfcost.costs.expected import prompt_tokens_per_step

    for batch, isl, osl in [(115, 1000, 1000), (64, 128, 2048), (50, 5000, 500)]:
        assert batch + prompt_tokens_per_step(batch, isl, osl) == pytest.approx(batch * (1 + isl / osl))


def test_in_flight_step_lies_between_decode_alone_and_decode_then_prefill():
    """Mixing B x P / G prompt tokens into a decode step costs at least the decode step and at most the decode step
    plus a 1/G share of the batch's prefill run on its own (no overlap at all)."""
    gpu = load_gpu("h100-sxm")
    for model, batch, prompt, generate in [("llama-2-7b", 64, 2048, 128), ("llama-2-70b", 32, 1000, 1000)]:
        shape = load_model(model)
        setup = ServingSetup(gpus=2, weights_dtype="fp8", batch=batch, prompt=prompt, generate=generate)
        e = serve(shape, gpu, setup).expected
        assert e.decode_mean_ms_per_token < e.inflight_step_ms
        assert e.inflight_step_ms < e.decode_mean_ms_per_token + e.prefill_ms / generate
        assert e.inflight_tokens_per_s == pytest.approx(batch / e.inflight_step_ms * 1000)


def test_per_query_head_decode_reads_a_gqa_cache_once_from_hbm_and_half_its_repeats():
    """Llama-2-70B has 64 query heads on 8 key-value heads: each key-value head serves 8 query heads at any tensor
    parallelism that splits both, so a per-query-head kernel reads it 8 times, the first from HBM and half of the 7
    repeats (REPEAT_READ_HBM_SHARE = 0.5): 4.5 reads; Llama-2-7B (32 and 32) reads its cache once either way. At
    batch 1 the attention is memory-bound, so the step grows by exactly 3.5 more reads of the cache at the stream
    rate."""
    from tfcost.costs.expected import REPEAT_READ_HBM_SHARE, cache_reads_per_decode
    from tfcost.costs.serving import kv_cache_bytes_per_gpu

    assert REPEAT_READ_HBM_SHARE == 0.5
    llama70, llama7 = load_model("llama-2-70b"), load_model("llama-2-7b")
    assert [cache_reads_per_decode(llama70, t, "per-query-head") for t in (1, 2, 4, 8)] == [4.5, 4.5, 4.5, 4.5]
    assert cache_reads_per_decode(llama70, 1, "shared") == 1
    assert cache_reads_per_decode(llama7, 1, "per-query-head") == 1
    gpu = load_gpu("a100-80gb")
    setup = ServingSetup(gpus=4, weights_dtype="bf16", batch=1, prompt=4000, generate=96)
    shared = serve(llama70, gpu, setup).expected
    per_head = serve(llama70, gpu, setup.model_copy(update={"gqa_decode": "per-query-head"})).expected
    cache = kv_cache_bytes_per_gpu(llama70, 4096, 1, "bf16", 4)  # 4,096 slots: whole 16-token blocks
    stream = table_rates(gpu, "bf16").stream_bytes_per_s
    assert per_head.decode_ms_per_token - shared.decode_ms_per_token == pytest.approx(3.5 * cache / stream * 1000)


def test_per_query_head_reads_put_trtllm_v061_llama_70b_throughput_near_the_published_rows():
    """The two fitted cases REPEAT_READ_HBM_SHARE was fitted on (validation #52 and #56, TensorRT-LLM v0.6.1's
    performance.md, Llama-2-70B peak throughput, per GPU): H100 FP8 TP2, batch 64, 2048/2048: 547 out tok/s/GPU;
    A100 FP16 TP4, batch 240, 128/2048: 525. With every repeat read from HBM (8 reads) they came out at 411 and 346
    (0.75, 0.66), with one read (XQA) at 1,076 and 959; with half the repeats, within 10% of both."""
    shape = load_model("llama-2-70b")
    rows: list[tuple[str, Literal["fp8", "fp16"], int, int, int, int]] = [
        ("h100-sxm", "fp8", 2, 64, 2048, 547),
        ("a100-80gb", "fp16", 4, 240, 128, 525),
    ]
    for gpu_name, dtype, gpus, batch, prompt, published in rows:
        setup = ServingSetup(
            gpus=gpus,
            weights_dtype=dtype,
            kv_dtype=dtype,
            batch=batch,
            prompt=prompt,
            generate=2048,
            gqa_decode="per-query-head",
        )
        per_gpu = serve(shape, load_gpu(gpu_name), setup).expected.run_tokens_per_s / gpus
        assert 0.9 < per_gpu / published < 1.1, (gpu_name, per_gpu)


def test_xqa_speedup_on_llama_70b_lies_within_what_per_query_head_reads_give():
    """TensorRT-LLM's XQA post (docs/source/blogs/XQA-kernel.md): "2.4x more Llama-70B throughput within the same
    latency budget": 1 H200, 128/2048, FP8, 1,227 tok/s per GPU without XQA and 2,941 with it, batches not stated.
    Take the batch at which tfcost's per-query-head reads reach 1,227 tok/s: at that batch shared reads are faster
    by less than 2.4x, and at the same time a step (the same latency budget, a larger batch) by more."""
    shape, gpu = load_model("llama-2-70b"), load_gpu("h200")
    setup = ServingSetup(weights_dtype="fp8", kv_dtype="fp8", batch=1, prompt=128, generate=2048)
    largest = serve(shape, gpu, setup).expected.max_batch

    def throughput(batch: int, gqa_decode: str) -> float:
        at = setup.model_copy(update={"batch": batch, "gqa_decode": gqa_decode})
        return serve(shape, gpu, at).expected.run_tokens_per_s

    without = next(b for b in range(1, largest + 1) if throughput(b, "per-query-head") >= 1227)
    budget = without / throughput(without, "per-query-head")  # seconds a token of each sequence
    same_batch = throughput(without, "shared") / throughput(without, "per-query-head")
    in_budget = max(b for b in range(without, largest + 1) if b / throughput(b, "shared") <= budget)
    same_latency = throughput(in_budget, "shared") / throughput(without, "per-query-head")
    assert same_batch < 2941 / 1227 < same_latency


def test_trt_session_adds_a_fixed_host_time_a_layer_to_the_prefill_only():
    """--trt-session: GptSession's context step adds SESSION_CONTEXT_HOST_S_PER_LAYER (110 us) a layer to the time to
    first token, whatever the prompt length (Llama-2-7B: 32 layers, 3.52 ms; Llama-2-70B: 80, 8.8 ms), and nothing to
    a decode step."""
    from tfcost.costs.expected import SESSION_CONTEXT_HOST_S_PER_LAYER

    assert SESSION_CONTEXT_HOST_S_PER_LAYER == 110e-6
    gpu = load_gpu("h100-sxm")
    for name, layers in (("llama-2-7b", 32), ("llama-2-70b", 80)):
        shape = load_model(name)
        for prompt in (128, 2048):
            setup = ServingSetup(gpus=4, weights_dtype="fp8", kv_dtype="fp8", batch=1, prompt=prompt, generate=1)
            plain = serve(shape, gpu, setup).expected
            session = serve(shape, gpu, setup.model_copy(update={"trt_session": True})).expected
            assert session.ttft_ms - plain.ttft_ms == pytest.approx(layers * 0.110)
            assert session.tpot_ms == plain.tpot_ms


def test_trt_session_on_the_v05_low_latency_rows_no_validation_case_holds():
    """TensorRT-LLM's docs/source/performance.md (v0.5 low-latency tables, batch 1, 1st token latency) has four
    Llama-2 rows at 128 input tokens that are not validation cases, so SESSION_CONTEXT_HOST_S_PER_LAYER was not fitted
    on them: H100 FP8 70B TP4 26 ms, L40S FP8 7B 14 ms, A100 FP16 7B 16 ms and 70B TP4 47 ms. Without the session's
    host time tfcost gave 0.45, 0.85, 0.62 and 0.62 of them; with it each is within 25% and closer than before."""
    rows: list[tuple[str, str, Literal["fp8", "fp16"], int, int]] = [
        ("llama-2-70b", "h100-sxm", "fp8", 4, 26),
        ("llama-2-7b", "l40s", "fp8", 1, 14),
        ("llama-2-7b", "a100-80gb", "fp16", 1, 16),
        ("llama-2-70b", "a100-80gb", "fp16", 4, 47),
    ]
    for name, gpu_name, dtype, gpus, published in rows:
        shape, gpu = load_model(name), load_gpu(gpu_name)
        setup = ServingSetup(gpus=gpus, weights_dtype=dtype, kv_dtype=dtype, batch=1, prompt=128, generate=1)
        plain = serve(shape, gpu, setup).expected.ttft_ms / published
        session = serve(shape, gpu, setup.model_copy(update={"trt_session": True})).expected.ttft_ms / published
        assert 0.75 < session < 1.25, (name, gpu_name, session)
        assert abs(math.log(session)) < abs(math.log(plain))
