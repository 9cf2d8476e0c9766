"""Properties of the core over generated shapes and workloads: every accepted shape yields exact, non-negative
integers that obey the invariants of the formulas (what scales with T, with the batch, with the key-value heads),
and every human-readable number is short and says the value it stands for.

The examples are generated (tests/strategies.py), from one-layer toys to the 10^18 cap on every size, plain
decoders and every variant the schema knows (MoE, MLA, sliding windows, encoders, encoder-decoders), with a fixed
seed (the "tfcost" profile in conftest.py).
"""

from __future__ import annotations

import json
import re

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import any_shape_fields, any_shapes, batches, dtypes, examples, seq_lens, shape_fields

from tfcost.core import flops, memory, params
from tfcost.reports.estimate import estimate
from tfcost.schema import ModelShape, Workload
from tfcost.units import DTYPE_BYTES, MAX_SIZE, human

MANY = settings(max_examples=examples(1000))


def numbers_in(document: object) -> list[object]:
    """Every number in a JSON document, at any depth (booleans are flags, not numbers)."""
    if isinstance(document, dict):
        return [number for value in document.values() for number in numbers_in(value)]
    if isinstance(document, list):
        return [number for value in document for number in numbers_in(value)]
    return [document] if isinstance(document, int | float) and not isinstance(document, bool) else []


@MANY
@given(any_shapes, seq_lens, batches, dtypes, st.booleans())
def test_every_reported_number_is_an_exact_non_negative_integer(shape, seq_len, batch, dtype, causal):
    result = estimate(shape, Workload(seq_len=seq_len, batch=batch, dtype=dtype, causal=causal))
    document = result.model_dump(mode="json")
    numbers = numbers_in(document)
    assert numbers and all(isinstance(n, int) and n >= 0 for n in numbers)
    assert json.loads(json.dumps(document)) == document  # exact through JSON, however large


@MANY
@given(any_shapes, seq_lens, seq_lens, batches, batches)
def test_parameters_do_not_depend_on_the_workload(shape, t1, t2, b1, b2):
    first = estimate(shape, Workload(seq_len=t1, batch=b1))
    second = estimate(shape, Workload(seq_len=t2, batch=b2, dtype="fp32", causal=True))
    assert first.params == second.params
    assert first.flops.six_n_per_token == second.flops.six_n_per_token
    assert first.kv_cache.bytes_per_token * 2 == second.kv_cache.bytes_per_token  # bf16 -> fp32, nothing else


@MANY
@given(any_shapes, seq_lens, seq_lens, batches, batches, dtypes)
def test_kv_cache_is_linear_in_tokens_and_in_batch(shape, t1, t2, b1, b2, dtype):
    assert memory.kv_cache_bytes(shape, t1, b1 + b2, dtype) == (
        memory.kv_cache_bytes(shape, t1, b1, dtype) + memory.kv_cache_bytes(shape, t1, b2, dtype)
    )
    longer = memory.kv_cache_bytes(shape, t1 + t2, b1, dtype)
    split = memory.kv_cache_bytes(shape, t1, b1, dtype) + memory.kv_cache_bytes(shape, t2, b1, dtype)
    per_token = memory.kv_cache_bytes_per_token(shape, dtype)
    if shape.sliding_window is None:
        assert memory.kv_cache_bytes(shape, t1, b1, dtype) == per_token * t1 * b1
        assert longer == split
    else:  # a sliding-window layer holds at most W tokens: never more than linear, never less as T grows
        assert memory.kv_cache_bytes(shape, t1, b1, dtype) <= per_token * t1 * b1
        assert memory.kv_cache_bytes(shape, t1, b1, dtype) <= longer <= split
    if shape.architecture == "encoder":
        assert per_token == 0 and longer == 0  # an encoder generates nothing and caches nothing


@MANY
@given(any_shapes, seq_lens, batches, st.integers(1, 1000), dtypes)
def test_score_matrix_is_quadratic_in_T(shape, seq_len, batch, k, dtype):
    assert memory.score_matrix_entries_per_head(k * seq_len) == k * k * memory.score_matrix_entries_per_head(seq_len)
    assert memory.score_matrix_bytes(shape, k * seq_len, batch, dtype) == k * k * memory.score_matrix_bytes(
        shape, seq_len, batch, dtype
    )
    assert memory.score_matrix_bytes(shape, seq_len, batch, dtype) == memory.attention_count(shape) * (
        memory.score_matrix_bytes_per_layer(shape, seq_len, batch, dtype)
    )


@MANY
@given(any_shape_fields(), seq_lens, batches, dtypes)
def test_halving_the_kv_heads_halves_the_kv_cache(fields, seq_len, batch, dtype):
    shape = ModelShape.model_validate({"name": "full", **fields})
    assume(shape.n_kv_heads % 2 == 0 and shape.mla is None)  # MLA caches a latent, not K heads
    halved = ModelShape.model_validate({"name": "halved", **fields, "n_kv_heads": shape.n_kv_heads // 2})
    assert 2 * memory.kv_cache_bytes(halved, seq_len, batch, dtype) == memory.kv_cache_bytes(
        shape, seq_len, batch, dtype
    )
    for part in ("attention/k", "attention/v"):  # the K and V projections shrink with them, biases included
        assert 2 * params.layer_params(halved)[part] == params.layer_params(shape)[part]
    assert params.layer_params(halved)["attention/q"] == params.layer_params(shape)["attention/q"]
    assert memory.kv_cache_bytes_per_token(shape, dtype) == 2 * memory.kv_cache_bytes_per_token(halved, dtype)


@MANY
@given(any_shapes)
def test_active_parameters_never_exceed_the_total(shape):
    # That a breakdown sums to its total, or training is 3x forward, is how they are defined; the truth tests
    # check the parts themselves against transformers, an independent implementation.
    assert params.active_params(shape) <= params.total_params(shape)


@MANY
@given(any_shapes, seq_lens)
def test_causal_forward_never_exceeds_the_full_one(shape, seq_len):
    full = flops.forward_flops_breakdown(shape, seq_len, causal=False)
    causal = flops.forward_flops_breakdown(shape, seq_len, causal=True)
    assert causal.keys() == full.keys()
    assert all(causal[part] <= full[part] for part in full)
    masked = ("attention/scores", "attention/values")  # the mask only removes score entries
    assert all(causal[part] == full[part] for part in full if not part.endswith(masked))
    if shape.architecture == "decoder" and shape.sliding_window is None:
        assert (flops.forward_flops(shape, seq_len, True) == flops.forward_flops(shape, seq_len)) == (seq_len == 1)


@MANY
@given(shape_fields(), st.integers(1, 10**6))
def test_one_more_layer_adds_exactly_one_block(fields, layers):
    shape = ModelShape.model_validate({"name": "a", **fields, "n_layers": layers})
    deeper = ModelShape.model_validate({"name": "b", **fields, "n_layers": layers + 1})
    assert params.total_params(deeper) - params.total_params(shape) == params.params_per_layer(shape)


@MANY
@given(any_shapes, seq_lens, batches)
def test_bytes_scale_with_the_dtype(shape, seq_len, batch):
    for dtype, size in DTYPE_BYTES.items():
        assert memory.kv_cache_bytes(shape, seq_len, batch, dtype) == size * memory.kv_cache_bytes(
            shape, seq_len, batch, "int8"
        )
        assert memory.score_matrix_bytes(shape, seq_len, batch, dtype) == size * memory.score_matrix_bytes(
            shape, seq_len, batch, "int8"
        )


SI_PREFIXES = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18, "Z": 1e21, "Y": 1e24}
SI_PREFIXES |= {"R": 1e27, "Q": 1e30}
IEC_PREFIXES = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60, "Zi": 2**70}
IEC_PREFIXES |= {"Yi": 2**80}
HUMAN = re.compile(r"(?P<mantissa>\d+(\.\d\d)?)( (?P<prefix>[kMGTPEZYRQ]|[KMGTPEZY]i)?(FLOP|B)?)?$")
SCIENTIFIC = re.compile(r"(?P<mantissa>\d\.\d{3}e\+\d+)( (FLOP|B))?$")
# The largest number a report can hold: the score matrices of all layers, B*H*T^2*s*L, at the cap on every size.
LARGEST = 4 * MAX_SIZE**6


@settings(max_examples=examples(2000))
@given(st.integers(0, 10**6) | st.integers(0, LARGEST), st.sampled_from(["count", "flops", "bytes"]))
def test_human_numbers_are_short_and_say_the_value(value, unit):
    text = human(value, unit)
    assert len(text) <= 16, text
    if match := SCIENTIFIC.match(text):  # past the last prefix: three decimals of the mantissa
        assert abs(float(match["mantissa"]) - value) <= 0.0005 * value, text
        return
    match = HUMAN.match(text)
    assert match, text
    prefixes, base = (IEC_PREFIXES, 1024) if unit == "bytes" else (SI_PREFIXES, 1000)
    mantissa, scale = float(match["mantissa"]), prefixes[match["prefix"] or ""]
    assert 1 <= mantissa < base or value < base, text  # the largest prefix that keeps the mantissa >= 1
    # rounded to two decimals, never further (a value on a half, 521,585 -> 521.59 k, is off by the half exactly)
    assert abs(mantissa * scale - value) <= 0.005 * scale * (1 + 1e-9), text
