"""The closed forms in T (tfcost.core.curves) against the core they are built from, over the shipped presets and
generated shapes of every kind, at random T and at the edges where a sliding window fills or a chunk ends; and the
crossovers (tfcost.costs.crossover) against the lesson's figures and published configs."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import any_shapes, dtypes

from tfcost.core import curves, flops, memory
from tfcost.core.ops import ClosedForm, Rate, Span, rate_multiplicity, rate_polynomial
from tfcost.costs import crossover, serving
from tfcost.costs.sweep import ModelCosts
from tfcost.readers.hf_config import read_config
from tfcost.readers.presets import load_gpu, load_model, model_from_mapping, model_preset_paths
from tfcost.schema import ModelShape, ServingSetup

PRESETS = [load_model(name) for name in model_preset_paths()]
QUANTITIES = ["attention", "forward", "training", "kv_cache", "score_matrix", "score_matrix_all_layers"]
SERVING_QUANTITIES = ["kv_per_gpu", "prefill", "decode"]
CONFIGS = Path(__file__).parent / "data" / "hf_configs"


def config_shape(name: str) -> ModelShape:
    """A model read from a config.json fixture, for the kinds no preset ships."""
    return model_from_mapping(read_config(json.loads((CONFIGS / f"{name}.json").read_text())).mapping, name, name)


def near_edges(shape):
    """T values where a piece of the curve starts or ends: each window's (or top-k's) W - 1 .. W + 3, and each
    chunk's edges C - 1 .. C + 2, 2C - 1 .. 2C + 2 and the same a thousand and a million chunks on."""
    windows, chunks = curves.span_limits(shape)
    around_windows = [t for window in windows for t in range(max(window - 1, 1), window + 4)]
    around_chunks = [k * c + i for c in chunks for k in (1, 2, 3, 1000, 10**6 + 3) for i in (-1, 0, 1, 2)]
    return [*around_windows, *around_chunks]


# Every model whose costs step at chunk edges or change formula at a top-k: the presets with a chunked scan
# (Mamba-2 in Falcon-H1, Granite 4.0-H, Codestral Mamba, Nemotron-H; Gated DeltaNet in Qwen3-Next and Qwen3.5),
# chunked attention (Llama 4) or DeepSeek Sparse Attention (DeepSeek-V3.2), and configs of the kinds no preset
# ships: lightning attention's blocks (MiniMax-01), Kimi Delta Attention (Kimi Linear), Bamba's Mamba-2.
STEPPING = [
    *(
        shape
        for shape in PRESETS
        if curves.span_limits(shape)[1] or any(s.topk for s, _ in flops.score_term_form(shape))
    ),
    *(config_shape(name) for name in ("minimax-default", "kimi-linear-default", "bamba-9b")),
]


def test_the_stepping_models_are_there():
    names = {shape.name for shape in STEPPING}
    assert {"mamba-codestral-7b", "qwen3-next-80b-a3b", "llama-4-scout", "deepseek-v3.2", "minimax-default"} <= names
    assert len(names) == 12


@pytest.mark.parametrize("shape", STEPPING, ids=lambda shape: shape.name)
def test_stepping_models_are_closed_forms_equal_to_the_core(shape):
    # Every quantity a sweep can ask, both conventions, at every chunk and top-k edge and far beyond: no model
    # falls back to evaluating the core at each point.
    points = [1, 2, 3, 100, *near_edges(shape), 10**9 + 7, 10**12 + 1]
    for causal in (False, True):
        costs = ModelCosts(shape, "bf16", causal, load_gpu("h100-sxm"), ServingSetup(gpus=2))
        for quantity in [*QUANTITIES, *SERVING_QUANTITIES]:
            fitted, function = costs.curve(quantity, 3), costs.functions(quantity, 3)
            assert fitted.is_closed_form, quantity
            assert fitted.values(points) == [function(t) for t in points], quantity
            assert [fitted(t) for t in points[::7]] == [function(t) for t in points[::7]], quantity


@st.composite
def stepping_points(draw: st.DrawFn) -> tuple[ModelShape, list[int]]:
    """A stepping model and T values: any, and within two positions of a chunk edge k*C, k up to 10^9."""
    shape = draw(st.sampled_from(STEPPING))
    windows, chunks = curves.span_limits(shape)
    limits = sorted(windows | chunks)
    near = st.builds(
        lambda c, k, i: max(k * c + i, 1), st.sampled_from(limits), st.integers(1, 10**9), st.integers(-2, 2)
    )
    return shape, draw(st.lists(near | st.integers(1, 10**7) | st.integers(1, 10**15), min_size=1, max_size=20))


@settings(max_examples=300)
@given(stepping_points(), st.integers(1, 4096), st.booleans(), st.sampled_from([*QUANTITIES, *SERVING_QUANTITIES]))
def test_stepping_curves_equal_the_core_near_chunk_edges(model_points, batch, causal, quantity):
    shape, seq_lens = model_points
    costs = ModelCosts(shape, "bf16", causal, load_gpu("h100-sxm"), ServingSetup(gpus=2))
    fitted, function = costs.curve(quantity, batch), costs.functions(quantity, batch)
    assert fitted.is_closed_form
    assert fitted.values(seq_lens) == [function(t) for t in seq_lens]
    assert fitted.values(sorted(seq_lens)) == [function(t) for t in sorted(seq_lens)]


@settings(max_examples=300)
@given(
    st.sampled_from(PRESETS),
    st.lists(st.integers(1, 10**7) | st.integers(1, 10**15), min_size=1, max_size=20),
    st.integers(1, 4096),
    st.booleans(),
    st.sampled_from(QUANTITIES),
)
def test_preset_curves_equal_the_core_at_any_t(shape, seq_lens, batch, causal, quantity):
    costs = ModelCosts(shape, "bf16", causal, None, ServingSetup())
    function = costs.functions(quantity, batch)
    seq_lens = [*seq_lens, *near_edges(shape)]
    fitted = costs.curve(quantity, batch)
    assert fitted.is_closed_form  # chunked scans too: their steps are chunked terms
    assert fitted.values(seq_lens) == [function(t) for t in seq_lens]  # unsorted
    assert fitted.values(sorted(seq_lens)) == [function(t) for t in sorted(seq_lens)]  # the sorted fast path
    assert [fitted(t) for t in seq_lens] == [function(t) for t in seq_lens]


@settings(max_examples=300)
@given(any_shapes, st.integers(1, 10**12), st.integers(1, 10**6), dtypes, st.booleans())
def test_generated_shapes_curves_equal_the_core(shape, seq_len, batch, dtype, causal):
    # Every kind the schema knows (MoE, MLA, windows on some layers, encoders, encoder-decoders), sizes to 10^18.
    points = [seq_len, *near_edges(shape)]
    checks = {
        "attention": lambda t: flops.attention_score_flops_per_token(shape, t),
        "forward": lambda t: flops.forward_flops(shape, t, causal),
        "kv": lambda t: memory.kv_cache_bytes(shape, t, batch, dtype),
        "score": lambda t: memory.score_matrix_bytes(shape, t, batch, dtype),
    }
    for function in checks.values():
        fitted = curves.curve(shape, function)
        assert fitted.is_closed_form
        assert fitted.values(points) == [function(t) for t in points]


def test_serving_curves_equal_the_core():
    shape = load_model("mistral-7b")  # a window: pieces either side of T = 4,096
    for gpus in (1, 2, 8):
        costs = ModelCosts(shape, "fp8", True, load_gpu("h100-sxm"), ServingSetup(gpus=gpus))
        seq_lens = [1, 2, 3, 4095, 4096, 4097, 4098, 4099, 10**6 + 3]
        for quantity, function in {
            "prefill": lambda t: serving.prefill_flops(shape, t, 3),
            "decode": lambda t: serving.decode_step_flops(shape, t, 3),
            "kv_per_gpu": lambda t, g=gpus: serving.kv_cache_bytes_per_gpu(shape, t, 3, "fp8", g),
        }.items():
            assert costs.curve(quantity, 3).values(seq_lens) == [function(t) for t in seq_lens]


def test_a_function_that_is_no_polynomial_is_evaluated_directly():
    # A step every 8,192 tokens, fitted without its chunk size: the check catches it; the values stay exact.
    def chunked(t: int) -> int:
        return (t // 8192) * 7 + t

    fitted = curves.fit(chunked)
    assert not fitted.is_closed_form
    seq_lens = [1, 8191, 8192, 8193, 10**9]
    assert fitted.values(seq_lens) == [chunked(t) for t in seq_lens]

    # Told the chunk, the fit finds a chunked term for steps at T = kC + 1 (the padded chunks, ceil(T/C) = m + 1);
    # T // C steps at T = kC instead, which no quadratic in m and s = 1..C has: still evaluated directly.
    def padded(t: int) -> int:
        return -(-t // 8192) * 7 + t

    told = curves.fit(padded, chunks=[8192])
    assert told.is_closed_form and [term.chunk for term in told.chunked] == [8192]
    points = [*seq_lens, 16383, 16384, 16385, 10**12]
    assert told.values(points) == [padded(t) for t in points]
    assert [told(t) for t in points] == [padded(t) for t in points]
    assert not curves.fit(chunked, chunks=[8192]).is_closed_form

    def cubic_steps(t: int) -> int:
        return -((-t // 64) ** 3)

    assert not curves.fit(cubic_steps, chunks=[64]).is_closed_form


def test_a_curve_is_integer_arithmetic_with_the_lessons_coefficients():
    # GPT-2 small (the lesson): attention-score FLOPs per token are 6*L*T*d = 6*12*768*T = 55,296*T, one piece.
    fitted = curves.curve(
        load_model("gpt2-small"), lambda t: flops.attention_score_flops_per_token(load_model("gpt2-small"), t)
    )
    assert [(p.start, p.a, p.b, p.c, p.den) for p in fitted.pieces] == [(1, 0, 6 * 12 * 768, 0, 1)]


# The lesson's crossovers -----------------------------------------------------------------------------------


def test_gpt2_small_attention_reaches_6n_at_9229():
    # The lesson: 6N per token with N = 124,439,808 - 39,383,808 embeddings = 85,056,000, against the attention
    # term 6*L*T*d with L = 12, d = 768: equal at T = 85,056,000 / (12*768) = 9,229 1/6.
    found = crossover.attention_equals_six_n(load_model("gpt2-small"))
    assert Fraction(found.exact) == Fraction(85_056_000, 12 * 768)
    assert found.seq_len == 9229  # rounded down
    gpt2 = load_model("gpt2-small")
    assert flops.attention_score_flops_per_token(gpt2, 9229) <= 6 * 85_056_000
    assert flops.attention_score_flops_per_token(gpt2, 9230) > 6 * 85_056_000


def test_gpt2_small_kv_cache_reaches_its_weights():
    # The lesson: 36 MiB of bf16 KV cache for 1,024 tokens, so 36,864 B per token; weights 124,439,808 x 2 B.
    for batch in (1, 8):
        found = crossover.kv_cache_equals_weights(load_model("gpt2-small"), batch, "bf16")
        assert Fraction(found.exact) == Fraction(124_439_808 * 2, 36_864 * batch)
        assert found.seq_len == 124_439_808 * 2 // (36_864 * batch)


def test_llama_3_8b_score_matrix_outgrows_an_h100():
    # Llama-3-8B has 32 query heads (its config.json); an H100 SXM has 80 GiB. One layer's bf16 scores for one
    # sequence, 32 * T^2 * 2 bytes, fit while T <= sqrt(80 * 2^30 / 64).
    found = crossover.score_matrix_exceeds_memory(load_model("llama-3-8b"), 1, "bf16", load_gpu("h100-sxm"))
    assert found.seq_len == math.isqrt(80 * 2**30 // 64) == 36_635
    assert found.exact is None  # a square root: no fraction
    assert 36_635 < found.crossing < 36_636


@pytest.mark.parametrize(
    ("name", "which", "reason"),
    [
        ("mistral-7b", "attention", "sliding windows"),  # every layer windowed at 4,096
        ("mistral-7b", "kv", "sliding windows"),
        ("bert-base", "kv", "encoder keeps no KV cache"),
    ],
)
def test_no_crossover_is_said_so(name, which, reason):
    shape = load_model(name)
    found = (
        crossover.attention_equals_six_n(shape)
        if which == "attention"
        else crossover.kv_cache_equals_weights(shape, 1, "bf16")
    )
    assert found.seq_len is None
    assert reason in found.reason


def test_half_windowed_gemma_2_still_crosses():
    # Gemma-2 windows only its even layers: the odd ones keep growing, so the attention term does reach 6N.
    found = crossover.attention_equals_six_n(load_model("gemma-2-9b"))
    shape = load_model("gemma-2-9b")
    six_n = flops.six_n_flops_per_token(shape)
    assert flops.attention_score_flops_per_token(shape, found.seq_len) <= six_n
    assert flops.attention_score_flops_per_token(shape, found.seq_len + 1) > six_n


def test_a_missed_window_edge_is_caught_not_fitted_across():
    # Mistral-7B's KV cache stops growing at its 4,096-token window; fitted without that edge, the one piece from
    # T = 1 fails its check at T = 65,538 and the curve falls back to the core, so its values stay right.
    shape = load_model("mistral-7b")

    def kv(t: int) -> int:
        return memory.kv_cache_bytes(shape, t, 1, "bf16")

    unguided = curves.fit(kv)
    assert not unguided.is_closed_form
    assert unguided.values([4096, 4097, 10**6]) == [kv(4096), kv(4097), kv(10**6)]
    assert curves.curve(shape, kv).is_closed_form  # with the edge, two pieces


# The closed forms of the operation rows (tfcost.core.ops.rate_polynomial, form_polynomial) -----------------------

SPANS = st.builds(
    Span,
    st.booleans(),
    st.none() | st.integers(1, 10**6),
    st.none() | st.integers(1, 10**6),
    st.booleans(),
)


# Every rate with a closed form: compressed attention's step every m positions and have none (rate_polynomial says
# None; test_rate_polynomial_refuses_the_compressed_rates).
RATES: list[Rate] = [rate for rate in get_args(Rate) if not rate.startswith("compressed")]


def closed_value(closed: ClosedForm, t: int) -> Fraction:
    """A closed form at T, in exact fractions: its piece, plus each chunked term in m = (T-1)//C, s = T - m*C."""
    _, a, b, c, den = [piece for piece in closed.pieces if piece[0] <= t][-1] if closed.pieces else (1, 0, 0, 0, 1)
    value = Fraction(a * t * t + b * t + c, den)
    for chunk, ca, cb, cc, cd, ce, cden in closed.chunked:
        m = (t - 1) // chunk
        s = t - m * chunk
        value += Fraction(ca * m * m + cb * m + cc * s * s + cd * s + ce, cden)
    return value


@settings(max_examples=1000)
@given(
    st.sampled_from(RATES),
    SPANS,
    st.booleans(),
    st.lists(st.integers(1, 10**7) | st.integers(1, 10**15), min_size=1, max_size=10),
    st.integers(1, 10**9),
)
def test_rate_polynomial_is_the_multiplicity(per, span, causal, seq_lens, far):
    # Every rate, the chunked ones included, at random T, at each piece's start and around chunk edges: the first
    # chunks (C - 1, C, C + 1, 2C) and one far out.
    closed = rate_polynomial(per, span, causal)
    edges = [t for piece in closed.pieces for t in (piece[0] - 1, piece[0], piece[0] + 1)]
    chunk = span.chunk or 1
    edges += [k * chunk + i for k in (1, 2, 3, far) for i in (-1, 0, 1)]
    for t in [*seq_lens, *(t for t in edges if t >= 1)]:
        value = closed_value(closed, t)
        assert value.denominator == 1
        assert value == rate_multiplicity(per, span, t, t, causal)


def test_chunked_counts_by_hand():
    # Mamba-2's SSD with C = 256 pads T = 257 to two chunks (Dao and Gu 2024, Listing 1): 512 padded positions,
    # 2 x 256^2 position pairs, (2 + 1)^2 chunk-state pairs; lightning attention's blocks of 256 do not pad:
    # 256^2 + 1^2; Llama 4's causal chunks of 8,192 at T = 8,193: 8,192 x 8,193 / 2 + 1.
    chunked = Span(chunk=256)
    expected = {"chunk_token": 512, "chunk_readout": 512, "chunk_entry": 2 * 256**2, "chunk_pair": 9}
    for per, count in {**expected, "block_entry": 256**2 + 1}.items():
        assert closed_value(rate_polynomial(per, chunked, False), 257) == count
    assert closed_value(rate_polynomial("chunk_readout", chunked, True), 257) == 257  # one readout per token
    assert closed_value(rate_polynomial("entry", Span(causal=True, chunk=8192), True), 8193) == 8192 * 8193 // 2 + 1


@settings(max_examples=300)
@given(any_shapes, st.integers(1, 10**12), st.booleans())
def test_row_closed_forms_equal_the_core(shape, seq_len, causal):
    # forward, training, the attention term and the KV cache: no sampling, from the rows alone
    points = [seq_len, 1, 2, 3, *near_edges(shape)]
    forward = curves.forward_curve(shape, causal)
    assert forward.values(points) == [flops.forward_flops(shape, t, causal) for t in points]
    attention = curves.attention_term_curve(shape)
    assert attention.values(points) == [flops.attention_score_flops_per_token(shape, t) for t in points]
    training = curves.training_curve(shape, causal)
    assert training.values(points) == [flops.training_flops(shape, t, causal) for t in points]
    kv = curves.kv_cache_curve(shape, 3, "fp8")
    assert kv.values(points) == [memory.kv_cache_bytes(shape, t, 3, "fp8") for t in points]


def test_edges_come_from_the_rows():
    """A `layers:` stack's own windows (no model-wide sliding_window) still give closed forms on both sides; a
    causal chunked attention's forward is a chunked term, from the rows, and so is its decode step, fitted."""
    base = load_model("llama-3-8b").model_dump()
    windowed = {**base, "layers": [{"pattern": [{"window": 1000}, {}], "repeat": 16}], "n_layers": 32}
    shape = type(load_model("llama-3-8b")).model_validate(windowed)
    assert curves.edges(shape) == (1001, 1002)
    kv = curves.curve(shape, lambda t: memory.kv_cache_bytes(shape, t, 2, "bf16"))
    assert kv.is_closed_form and [p.start for p in kv.pieces] == [1, 1001, 1002]
    points = [1, 999, 1000, 1001, 1002, 1003, 10**9]
    assert kv.values(points) == [memory.kv_cache_bytes(shape, t, 2, "bf16") for t in points]
    chunked = type(shape).model_validate({**windowed, "layers": [{"pattern": [{"chunk": 64}, {}], "repeat": 16}]})
    assert [term.chunk for term in curves.forward_curve(chunked, True).chunked] == [64]
    costs = ModelCosts(chunked, "bf16", True, None, ServingSetup())
    assert costs.curve("forward", 1).values(points) == [flops.forward_flops(chunked, t, True) for t in points]
    decode = costs.curve("decode", 2)
    assert decode.is_closed_form and [term.chunk for term in decode.chunked] == [64]
    points += [63, 64, 65, 128, 129, 64 * 10**6 + 1]
    assert decode.values(points) == [serving.decode_step_flops(chunked, t, 2) for t in points]


def test_rate_polynomial_refuses_the_compressed_rates():
    compressed = [rate for rate in get_args(Rate) if rate.startswith("compressed")]
    assert compressed == ["compressed", "compressed_tail", "compressed_entry"]
    for rate in compressed:
        assert rate_polynomial(rate, Span(causal=True, compress=4), True) is None
