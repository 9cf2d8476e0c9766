"""`--explain`: every reported quantity as its formula, the model's numbers put in, and the result, with a source.

The lines are generated from the same operation rows (tfcost.core.ops, tfcost.core.layers) that the folds sum, row by
row:
a row's parameters are written from its fan_in, fan_out, bias and copies; its FLOPs from 2 x in x out x uses x its
multiplicity at T; a cache row from its elements per position. Rows that are the same in several layers are one
line, "12 layers x ...". Each line's result is the fold's own value for those rows, and the working shown is an
arithmetic expression that evaluates to it (tests/test_explain.py evaluates every line of every preset), so the
text cannot drift from the numbers.

Symbols name a row's widths where the row's number is that symbol's value for the model (d, H·Q, K·Q, F, V...):
a width no symbol matches is shown as its number, never under a wrong name.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from tfcost.core import flops, memory, params
from tfcost.core.blocks import Block, blocks
from tfcost.core.layers import embedding_ops, head_ops, layer_ops
from tfcost.core.layers.towers import tower_ops
from tfcost.core.ops import (
    Op,
    Span,
    attended_positions,
    multiplicity,
    op_cache_per_position,
    op_flops,
    op_params,
    op_score_term_per_position,
    rate_multiplicity,
)
from tfcost.costs import crossover, serving
from tfcost.reports.base import Line
from tfcost.schema import GpuSpec, ModelShape, ServingSetup, TrainingSetup
from tfcost.units import DTYPE_BYTES, Dtype, Unit, human

PARAMS = "docs/formulas.md, Parameters"
TOWERS = "docs/towers.md"
FLOPS = "docs/formulas.md, FLOPs"
SIX_N = "docs/formulas.md, FLOPs (Kaplan et al. 2020 §2.1)"
MEMORY = "docs/formulas.md, Memory of inference"
TRAINING = "docs/formulas.md, Training"
SERVING = "docs/formulas.md, Serving"
ROWS = "docs/formulas.md, One model, built once"
LINKS = "docs/formulas.md, Collectives on the link they cross"
ENGINE = "docs/formulas.md, Train and serve through the transformers engine"


def number(value: int) -> str:
    return f"{value:,}"


def real(value: float) -> str:
    """A float exactly as Python reads it back, without a trailing '.0'."""
    return repr(value).removesuffix(".0")


def line(quantity: str, formula: str, working: str, value: int | float, unit: Unit, source: str) -> Line:
    """A line whose result is the exact value, and beside it the value as the tables print it."""
    exact = number(value) if isinstance(value, int) else f"{value:,.6g}"
    exact += " B" if unit == "bytes" else ""
    shown = human(value, unit)
    return Line(quantity, formula, working, value, exact if shown == exact else f"{exact} ({shown})", source)


# Symbols -----------------------------------------------------------------------------------------------------

Factor = tuple[str, str]  # (symbol, the same with the model's numbers)


def symbol_table(shape: ModelShape) -> dict[str, tuple[int, str]]:
    """Each symbol's value for the model and how it is written with numbers ("H·Q" -> 768, "12·64")."""
    d, h, k, q = shape.d_model, shape.n_heads, shape.n_kv_heads, shape.head_dim
    table = {
        "d": (d, number(d)),
        "H·Q": (h * q, f"{number(h)}·{number(q)}"),
        "K·Q": (k * q, f"{number(k)}·{number(q)}"),
        "2·K·Q": (2 * k * q, f"2·{number(k)}·{number(q)}"),
        "Q": (q, number(q)),
        "H": (h, number(h)),
        "F": (shape.d_ff, number(shape.d_ff)),
        "V": (shape.vocab_size, number(shape.vocab_size)),
        "n_ctx": (shape.max_seq_len, number(shape.max_seq_len)),
    }
    if shape.moe is not None:
        table["F_e"] = (shape.moe.expert_d_ff, number(shape.moe.expert_d_ff))
        table["F_s"] = (shape.moe.shared_width, number(shape.moe.shared_width))
        table["E"] = (shape.moe.n_experts, number(shape.moe.n_experts))
        table["k"] = (shape.moe.experts_per_token, number(shape.moe.experts_per_token))
    return table


# The symbols a row's fan_in and fan_out are written in, by row name (an attention's prefix taken off).
ROW_SYMBOLS: dict[str, tuple[str, str]] = {
    "attention/q": ("d", "H·Q"),
    "attention/k": ("d", "K·Q"),
    "attention/v": ("d", "K·Q"),
    "attention/o": ("H·Q", "d"),
    "attention/scores": ("Q", "H"),
    "attention/values": ("Q", "H"),
    "cache/attention": ("2·K·Q", "K"),
    "mlp/gate": ("d", "F"),
    "mlp/up": ("d", "F"),
    "mlp/down": ("F", "d"),
    "moe/router": ("d", "E"),
    "moe/experts/gate": ("d", "F_e"),
    "moe/experts/up": ("d", "F_e"),
    "moe/experts/down": ("F_e", "d"),
    "moe/shared/gate": ("d", "F_s"),
    "moe/shared/up": ("d", "F_s"),
    "moe/shared/down": ("F_s", "d"),
    "embedding/tokens": ("V", "d"),
    "embedding/positions": ("n_ctx", "d"),
    "output_head": ("d", "V"),
    "mlm_transform": ("d", "d"),
    "pooler": ("d", "d"),
}


def row_key(name: str) -> str:
    """A row's name without its attention prefix ('cross_attention/q' -> 'attention/q')."""
    return name.replace("cross_attention", "attention")


def factor(symbols: dict[str, tuple[int, str]], symbol: str | None, value: int) -> Factor:
    """A width as its symbol where the symbol's value is the width, else as its number."""
    if symbol is not None and symbol in symbols and symbols[symbol][0] == value:
        return symbol, symbols[symbol][1]
    return number(value), number(value)


def widths(symbols: dict[str, tuple[int, str]], op: Op) -> tuple[Factor, Factor]:
    """A row's fan_in and fan_out as factors; a norm's are its width and its vectors (2 or 1)."""
    if op.kind == "norm":
        name = "Q" if op.fan_in == symbols["Q"][0] and op.name.endswith("qk_norm") else "d"
        return factor(symbols, name, op.fan_in), factor(symbols, None, op.fan_out)
    names = ROW_SYMBOLS.get(row_key(op.name), (None, None))
    return factor(symbols, names[0], op.fan_in), factor(symbols, names[1], op.fan_out)


def product(factors: Sequence[Factor]) -> Factor:
    """Factors multiplied, ones left out."""
    kept = [f for f in factors if f[1] != "1"] or [("1", "1")]
    return "·".join(f[0] for f in kept), "·".join(f[1] for f in kept)


def times(count: int, term: Factor, layers: int | None = None) -> Factor:
    """count x (term), written "12 x (...)" when the count is not 1; "L x" when it is every one of L layers."""
    if count == 1:
        return term
    wrap = (lambda t: f"({t})") if " " in term[0] or " " in term[1] else (lambda t: t)
    name = "L" if count == layers else number(count)
    return f"{name} x {wrap(term[0])}", f"{number(count)} x {wrap(term[1])}"


def every(shape: ModelShape) -> int | None:
    """L, the count a row held by every layer of a one-stack model has."""
    return None if shape.architecture == "encoder-decoder" else shape.n_layers


def total(terms: Sequence[Factor]) -> Factor:
    return " + ".join(t[0] for t in terms), " + ".join(t[1] for t in terms)


# Rows grouped across layers ----------------------------------------------------------------------------------


def grouped_rows(shape: ModelShape) -> list[tuple[Op, int, str]]:
    """Every layer row once with the number of layers that hold it (the same row in two kinds of layer adds up),
    and its stack ("" for a one-stack model, else "encoder:" or "decoder:")."""
    counts: dict[tuple[str, Op], int] = {}
    for block, count in blocks(shape):
        stack = "" if block.stack == "layers" else f"{block.stack}:"
        for op in layer_ops(shape, block):
            counts[(stack, op)] = counts.get((stack, op), 0) + count
    return [(op, count, stack) for (stack, op), count in counts.items()]


def layers_label(count: int, stack: str, op: Op) -> str:
    """'12 layers x attention/q'; a windowed or chunked row says so ('attention/scores (window 4,096)')."""
    layers = "layer" if count == 1 else "layers"
    span = op.span
    limit = (
        f" (window {number(span.window)})" if span.window else f" (chunk {number(span.chunk)})" if span.chunk else ""
    )
    return f"{number(count)} {stack.rstrip(':') + ' ' if stack else ''}{layers} x {op.name}{limit}"


# Parameters --------------------------------------------------------------------------------------------------


def row_params(symbols: dict[str, tuple[int, str]], op: Op) -> Factor:
    """A row's parameters as a formula: in·out (+ out biases), times its copies."""
    fan_in, fan_out = widths(symbols, op)
    weight = product([fan_out, fan_in] if op.kind == "norm" else [fan_in, fan_out])
    if op.kind == "linear" and op.bias:
        weight = f"{weight[0]} + {fan_out[0]}", f"{weight[1]} + {fan_out[1]}"
    if op.copies == 1:
        return weight
    copies = factor(symbols, "E" if op.copies > 1 and "experts" in op.name else None, op.copies)
    if " " not in weight[0] and " " not in weight[1]:
        return f"{copies[0]} x {weight[0]}", f"{copies[1]} x {weight[1]}"
    return f"{copies[0]} x ({weight[0]})", f"{copies[1]} x ({weight[1]})"


def params_lines(shape: ModelShape) -> list[Line]:
    """Each row's parameters (the embedding, every layer row once with its layer count, the head), one layer of
    each kind by component, and the total: the fold params.parameter_breakdown sums."""
    symbols = symbol_table(shape)
    out: list[Line] = []

    def add_row(op: Op, count: int, label: str) -> None:
        if op.kind not in ("linear", "norm", "table") or op.fan_in * op.fan_out == 0:
            return
        if op.copies == 0 and op.name != "output_head":
            return
        if op.copies == 0:
            why = "tied to the token embedding" if op.name == "output_head" else "none held"
            out.append(Line(label, why, "0", 0, "0", PARAMS))
            return
        formula, working = times(count, row_params(symbols, op), every(shape))
        out.append(line(label, formula, working, count * op_params(op), "count", PARAMS))

    for op in embedding_ops(shape):
        add_row(op, 1, op.name)
    for op, count, stack in grouped_rows(shape):
        add_row(op, count, layers_label(count, stack, op))
    for block, count in blocks(shape):
        parts: dict[str, int] = {}
        for op in layer_ops(shape, block):
            component = op.params_key.split("/")[0]
            parts[component] = parts.get(component, 0) + op_params(op)
        kept = {name: value for name, value in parts.items() if value}
        one = sum(kept.values())
        formula = " + ".join(kept)
        working = " + ".join(number(value) for value in kept.values())
        out.append(line(f"one layer, {block.name}", formula, working, one, "count", PARAMS))
        out.append(
            line(
                f"{number(count)} layers, {block.name}",
                "layers x one layer",
                f"{count}·{number(one)}",
                count * one,
                "count",
                PARAMS,
            )
        )
    for op in head_ops(shape):
        add_row(op, 1, op.name)
    out += tower_params_lines(shape)
    breakdown = params.parameter_breakdown(shape)
    nonzero = [value for value in breakdown.values() if value]
    out.append(
        line(
            "total parameters",
            "sum of the parts above",
            " + ".join(map(number, nonzero)),
            params.total_params(shape),
            "count",
            PARAMS,
        )
    )
    return out


def tower_params_lines(shape: ModelShape) -> list[Line]:
    """Each row of a multimodal model's towers (tfcost.core.layers.towers): an encoder row once for its layers,
    in x out (+ out biases) for a matmul, width x vectors for a norm, rows x columns for a table."""
    out = []
    for tower in shape.towers:
        for times, op, *_ in tower_ops(tower):
            if not op_params(op):
                continue
            bias = f" + {number(op.fan_out)}" if op.kind == "linear" and op.bias else ""
            one = f"{number(op.fan_in)}·{number(op.fan_out)}{bias}"
            formula = "in·out + out" if op.kind == "linear" and op.bias else "in·out"
            if times > 1:
                formula, one = f"layers x ({formula})", f"{times} x ({one})"
            label = f"towers/{op.name}" if times == 1 else f"{times} layers x towers/{op.name}"
            out.append(line(label, formula, one, times * op_params(op), "count", TOWERS))
    return out


# FLOPs -------------------------------------------------------------------------------------------------------


def rows_of(span: Span, tokens: int, causal: bool) -> tuple[str, str]:
    """The score entries one head computes at T (tfcost.core.ops.score_entries), as a formula and with numbers."""
    t = tokens
    if span.cross:
        return "T·T_src", f"{number(t)}·{number(t)}"
    if not (causal and span.causal):
        return "T²", f"{number(t)}²"
    if span.chunk is not None:
        c = span.chunk
        whole, rest = divmod(t, c)
        return (
            "⌊T/C⌋·C(C+1)/2 + r(r+1)/2",
            f"({number(whole)}·{number(c)}·{number(c + 1)}/2 + {number(rest)}·{number(rest + 1)}/2)",
        )
    limits = [limit for limit in (span.window, span.topk) if limit is not None]  # top-k counts as a window of k
    if not limits or t <= min(limits):
        return "T(T+1)/2", f"({number(t)}·{number(t + 1)}/2)"
    w = min(limits)
    name = "W" if w == span.window else "k"
    return (
        f"{name}({name}+1)/2 + (T-{name})·{name}",
        f"({number(w)}·{number(w + 1)}/2 + {number(t - w)}·{number(w)})",
    )


def multiplicity_factor(op: Op, tokens: int, causal: bool) -> Factor:
    """A row's multiplicity at T (tfcost.core.ops.rate_multiplicity) as a formula and with numbers."""
    match op.per:
        case "token":
            return "T", number(tokens)
        case "source_token":
            return ("T_src" if op.span.cross else "T"), number(tokens)
        case "entry":
            return rows_of(op.span, tokens, causal)
        case "cached":
            seen = multiplicity(op, tokens, tokens, True)
            limit = op.span.window or op.span.chunk
            if limit is not None:
                return f"min(T, {'W' if op.span.window else 'C'})", number(seen)
            return ("T_src" if op.span.cross else "T"), number(seen)
        case "sequence" | "weights":
            return "1", "1"
        case "compressed" | "compressed_tail" | "compressed_entry":  # compressed attention, m positions an entry
            m, count = op.span.compress, number(multiplicity(op, tokens, tokens, causal))
            if op.per == "compressed":
                return f"⌊T/{m}⌋", count
            if op.per == "compressed_tail":
                return f"(T mod {m})", count
            if causal and op.span.causal:
                return ("Σₜ ⌊t/{m}⌋" if op.span.topk is None else f"Σₜ min(⌊t/{m}⌋, k)").format(m=m), count
            return f"T·⌊T/{m}⌋", count
        case _:  # a recurrent mixer's chunk or block rate (tfcost.core.ops.Rate): its count at T, from the core
            return f"n_{op.per}(T)", number(multiplicity(op, tokens, tokens, causal))


def row_flops(symbols: dict[str, tuple[int, str]], op: Op, tokens: int, causal: bool) -> Factor:
    fan_in, fan_out = widths(symbols, op)
    uses = factor(symbols, "k" if "experts" in op.name else None, op.uses)
    return product([("2", "2"), fan_in, fan_out, uses, multiplicity_factor(op, tokens, causal)])


def forward_lines(shape: ModelShape, tokens: int, causal: bool) -> list[Line]:
    """Each row's forward matmul FLOPs over one T-token sequence, and their sum (flops.forward_flops)."""
    symbols = symbol_table(shape)
    out: list[Line] = []
    values: list[int] = []
    rows = [(op, count, stack) for op, count, stack in grouped_rows(shape)] + [(op, 1, "") for op in head_ops(shape)]
    for op, count, stack in rows:
        value = count * op_flops(op, tokens, tokens, causal)
        if not value:
            continue
        label = layers_label(count, stack, op) if op not in head_ops(shape) else op.name
        formula, working = times(count, row_flops(symbols, op, tokens, causal), every(shape))
        out.append(line(f"{label}, forward", formula, working, value, "flops", FLOPS))
        values.append(value)
    forward = flops.forward_flops(shape, tokens, causal)
    out.append(
        line("forward, one sequence", "sum of the rows above", " + ".join(map(number, values)), forward, "flops", FLOPS)
    )
    out.append(
        line(
            "training, one sequence",
            f"{flops.TRAINING_PER_FORWARD} x forward",
            f"{flops.TRAINING_PER_FORWARD}·{number(forward)}",
            flops.training_flops(shape, tokens, causal),
            "flops",
            FLOPS,
        )
    )
    return out


def six_n_lines(shape: ModelShape) -> list[Line]:
    total_n, embedding = params.total_params(shape), params.embedding_params(shape)
    inactive = params.total_params(shape) - params.active_params(shape)
    formula, working = "total - embedding", f"{number(total_n)} - {number(embedding)}"
    if inactive:
        formula, working = f"{formula} - unused experts", f"{working} - {number(inactive)}"
    n = flops.six_n_params(shape)
    return [
        line("N, non-embedding (active)", formula, working, n, "count", SIX_N),
        line("training per token", "6N", f"6·{number(n)}", flops.six_n_flops_per_token(shape), "flops", SIX_N),
    ]


def attention_term_lines(shape: ModelShape, tokens: int) -> list[Line]:
    """The lesson's 6·L·T·(H·Q): each score and value row's 3·Q·H per key position it reads, T capped at W."""
    symbols = symbol_table(shape)
    terms: list[Factor] = []
    for op, count, _ in grouped_rows(shape):
        if not op_score_term_per_position(op):
            continue
        fan_in, fan_out = widths(symbols, op)
        positions = multiplicity_factor(
            Op(op.name, "cache", 0, 0, "cached", span=op.span), tokens, True
        )  # the positions a query reads: T, or min(T, W)
        read = number(attended_positions(op.span, tokens, tokens))
        if op.span.compress is not None:  # the compressed entries closed so far (at most k under CSA's top-k)
            m = op.span.compress
            positions = (f"⌊T/{m}⌋" if op.span.topk is None else f"min(⌊T/{m}⌋, k)", read)
        elif op.span.topk is not None:  # of those, at most k under top-k sparse attention
            positions = ("min(T, k)", read)
        terms.append(times(count, product([("3", "3"), fan_in, fan_out, positions]), every(shape)))
    value = flops.attention_score_flops_per_token(shape, tokens)
    formula, working = total(terms) if terms else ("0", "0")
    return [line("attention scores per token, 6·L·T·(H·Q)", formula, working, value, "flops", SIX_N)]


def crossover_lines(shape: ModelShape) -> list[Line]:
    """The lesson's crossover: the T at which the attention term reaches 6N, 6N / (6·L·(H·Q)) where the term is
    linear in T (no window or chunk caps it)."""
    found = crossover.attention_equals_six_n(shape)
    form = flops.score_term_form(shape)
    if (
        found.crossing is None
        or found.seq_len is None
        or any(span.window or span.chunk or span.topk for span, _ in form)
    ):
        return []
    per_position = sum(value for _, value in form)
    six_n = flops.six_n_flops_per_token(shape)
    result = f"{found.crossing:,.4f} (rounded down: {number(found.seq_len)})"
    working = f"{number(six_n)} / {number(per_position)}"
    return [Line("attention term = 6N at T", "6N / (6·L·(H·Q))", working, found.crossing, result, SIX_N)]


# Memory ------------------------------------------------------------------------------------------------------


def kv_lines(shape: ModelShape, tokens: int, batch: int, dtype: Dtype) -> list[Line]:
    """The cache rows: elements per position times positions held, times B and bytes per element s."""
    symbols = symbol_table(shape)
    s = DTYPE_BYTES[dtype]
    per_token: list[Factor] = []
    held: list[Factor] = []
    for op, count, _ in grouped_rows(shape):
        if not op_cache_per_position(op):
            continue
        width = factor(symbols, ROW_SYMBOLS.get(row_key(op.name), (None,))[0], op.fan_in)
        per_token.append(times(count, width, every(shape)))
        held.append(times(count, product([width, multiplicity_factor(op, tokens, True)]), every(shape)))
    if not per_token:
        return []

    def with_bytes(terms: list[Factor], extra: Sequence[Factor]) -> Factor:
        inner = total(terms)
        wrap = (lambda t: f"({t})") if len(terms) > 1 else (lambda t: t)
        return product([(wrap(inner[0]), wrap(inner[1])), *extra])

    s_factor = ("s", str(s))
    formula, working = with_bytes(per_token, [s_factor])
    formula_t, working_t = with_bytes(held, [("B", number(batch)), s_factor])
    # A cache that steps every m positions (compressed attention) has no per-token figure: only its bytes at T.
    per_token_line = [
        line("KV cache per token", formula, working, memory.kv_cache_bytes_per_token(shape, dtype), "bytes", MEMORY)
    ]
    return [
        *([] if memory.cache_steps(shape) else per_token_line),
        line(
            f"KV cache, {number(batch)} x {number(tokens)} tokens",
            formula_t,
            working_t,
            memory.kv_cache_bytes(shape, tokens, batch, dtype),
            "bytes",
            MEMORY,
        ),
    ]


def score_lines(shape: ModelShape, tokens: int, batch: int, dtype: Dtype) -> list[Line]:
    s, h = DTYPE_BYTES[dtype], shape.n_heads
    one = memory.score_matrix_bytes_per_layer(shape, tokens, batch, dtype)
    attentions = memory.attention_count(shape)
    return [
        line(
            "score entries per head",
            "T²",
            f"{number(tokens)}²",
            memory.score_matrix_entries_per_head(tokens),
            "count",
            MEMORY,
        ),
        line(
            "score matrices, one layer",
            "B·H·T²·s",
            f"{number(batch)}·{number(h)}·{number(tokens)}²·{s}",
            one,
            "bytes",
            MEMORY,
        ),
        line(
            "score matrices, all layers",
            "attentions x one layer",
            f"{number(attentions)}·{number(one)}",
            memory.score_matrix_bytes(shape, tokens, batch, dtype),
            "bytes",
            MEMORY,
        ),
    ]


def estimate_lines(shape: ModelShape, tokens: int, batch: int, dtype: Dtype, causal: bool) -> list[Line]:
    """Every quantity `tfcost estimate` reports, explained."""
    return [
        *params_lines(shape),
        *six_n_lines(shape),
        *attention_term_lines(shape, tokens),
        *crossover_lines(shape),
        *forward_lines(shape, tokens, causal),
        *kv_lines(shape, tokens, batch, dtype),
        *score_lines(shape, tokens, batch, dtype),
    ]


# `tfcost train` and `tfcost serve` ---------------------------------------------------------------------------


def train_lines(
    shape: ModelShape,
    setup: TrainingSetup,
    model_flops: int,
    seconds_from_mfu: tuple[float, float, float] | None,
    held: dict[str, int],
    activations_by_kind: tuple[tuple[Block, int, int], ...],
    logits: int,
    gpu: GpuSpec | None = None,
) -> list[Line]:
    """`tfcost train`'s main quantities: 6ND, the exact model FLOPs (3 x forward per sequence, x D / T), the wall
    clock at an MFU, the predicted step's matmuls and gradient reduce (when `gpu` is given: the step is predicted),
    and the memory per GPU by part. `seconds_from_mfu` is (seconds, peak FLOP/s, MFU) when the time comes from an
    MFU; `held` is training.memory_per_gpu."""

    t, d = setup.seq_len, setup.tokens
    n = flops.six_n_params(shape)
    out = [line("6ND", "6·N·D", f"6·{number(n)}·{number(d)}", flops.six_nd_flops(shape, d), "flops", SIX_N)]
    out += forward_lines(shape, t, False)
    per_sequence = flops.training_flops(shape, t)
    out += run_lines(setup, per_sequence if setup.lora_rank is None else None, model_flops, seconds_from_mfu)
    if gpu is not None:
        out += step_lines(shape, gpu, setup)
    out += train_memory_lines(shape, setup, held, activations_by_kind, logits)
    return out


def step_lines(shape: ModelShape, gpu: GpuSpec, setup: TrainingSetup) -> list[Line]:
    """The predicted step's terms as step_time computes them (its MatmulTerms and RingTerms, not a restatement):
    one layer's forward GEMMs from the rows, and the hierarchical reduce-scatter of one layer's gradient bucket."""
    from tfcost.costs import step_time  # train only

    gemm = step_time.matmul_terms(shape, gpu, setup)
    sums = " + ".join(f"{number(count)}·2·{number(r)}·{number(i)}·{number(c)}" for count, r, i, c in gemm.gemms)
    out = [
        line(
            "matmuls, one layer's forward, one micro-batch on one GPU, seconds",
            "Σ GEMMs of the rows: layers·2·rows·inner·cols / L / (peak x measured x wave efficiency)",
            f"({sums or 0}) / {gemm.layers} / ({real(gemm.peak)}·{real(gemm.linear_efficiency)})",
            gemm.seconds,
            "seconds",
            ROWS,
        )
    ]
    if setup.data_parallel * setup.cp > 1 and setup.pp == 1:
        ring = step_time.hierarchical_ring_terms(step_time.gradient_bucket_bytes(shape, setup, gemm.layers), gpu, setup)
        intra = f"({ring.inside} - 1)/{ring.inside}·{real(ring.size)}/{real(ring.intra)}" if ring.inside > 1 else "0"
        inter = (
            f"({ring.nodes} - 1)/{ring.nodes}·{real(ring.size)}/{ring.inside}/{real(ring.inter)}"
            if ring.nodes > 1
            else "0"
        )
        out.append(
            line(
                "gradient reduce-scatter of one layer's bucket, seconds",
                "(n_in - 1)/n_in x S / B_node + (n_nodes - 1)/n_nodes x S/n_in / B_network",
                f"{intra} + {inter}",
                ring.seconds,
                "seconds",
                LINKS,
            )
        )
    return out


def run_lines(
    setup: TrainingSetup,
    per_sequence: int | None,
    model_flops: int,
    seconds_from_mfu: tuple[float, float, float] | None,
) -> list[Line]:
    """The run's model FLOPs from one sequence's training FLOPs (when given: not under LoRA), and its wall clock
    when the time comes from an MFU ((seconds, peak FLOP/s, MFU))."""
    out = []
    t, d = setup.seq_len, setup.tokens
    if per_sequence is not None:
        out.append(
            line(
                "model FLOPs",
                "training per sequence x D / T (rounded down)",
                f"{number(per_sequence)}·{number(d)} // {number(t)}",
                model_flops,
                "flops",
                TRAINING,
            )
        )
    if seconds_from_mfu is not None:
        seconds, peak, mfu = seconds_from_mfu
        out.append(
            line(
                "wall clock, seconds",
                "model FLOPs / (gpus x peak x MFU)",
                f"{number(model_flops)} / ({number(setup.gpus)}·{real(peak)}·{mfu:g})",
                seconds,
                "seconds",
                TRAINING,
            )
        )
    return out


def plain_model_states(setup: TrainingSetup) -> bool:
    """Whether the model states per GPU are N x bytes / (t·p) [/ N_d] alone, with no adjustment to explain."""
    return (
        setup.ep == 1
        and setup.lora_rank is None
        and setup.zero < 3
        and setup.offload == "none"
        and not setup.optimizer.startswith("paged-")
        and not setup.optimizer_in_backward
        and not (setup.memory_convention == "deepspeed" and setup.zero == 2)
        and setup.memory_convention != "megatron"
    )


def model_state_lines(n: int, setup: TrainingSetup, held: dict[str, int]) -> list[Line]:
    """Weights, gradients and optimizer states per GPU of N parameters, each sharded by ZeRO from its stage on."""
    from tfcost.costs import training  # train only: estimate need not import them

    out = []
    per_param = training.state_bytes_per_param(setup.precision, setup.optimizer)
    replicas = setup.data_parallel * setup.cp
    for part, from_stage in (("weights", 3), ("gradients", 2), ("optimizer", 1)):
        sharded = setup.zero >= from_stage
        formula = f"⌈N x {part} bytes per parameter / (t·p{'·N_d' if sharded else ''})⌉"
        split = setup.tp * setup.pp * (replicas if sharded else 1)
        working = f"⌈{number(n)}·{per_param[part]} / {number(split)}⌉"
        out.append(line(f"{part} per GPU", formula, working, held[part], "bytes", TRAINING))
    return out


def train_memory_lines(
    shape: ModelShape,
    setup: TrainingSetup,
    held: dict[str, int],
    activations_by_kind: tuple[tuple[Block, int, int], ...],
    logits: int,
) -> list[Line]:
    out: list[Line] = []

    if plain_model_states(setup):
        out += model_state_lines(params.total_params(shape), setup, held)
    if setup.pp == 1:
        for block, _, per_layer in activations_by_kind:
            out += activation_lines(shape, setup, block, per_layer)
        working = " + ".join(f"{number(count)}·{number(per_layer)}" for _, count, per_layer in activations_by_kind)
        at_loss = "logits at the loss (4sbV/t, --loss) or a fully recomputed layer's tensors, the larger"
        formula = f"Σ layer kinds: layers x one layer's saved tensors + {at_loss}"
        if setup.offload_activations:  # the rest of the layers' are on the host
            working = number(max(per_layer for _, _, per_layer in activations_by_kind))
            formula = f"the largest layer's saved tensors (the others offloaded) + {at_loss}"
        out.append(
            line(
                "activations per GPU",
                formula,
                f"{working} + {number(logits)}",
                held["activations"],
                "bytes",
                TRAINING,
            )
        )
    parts = [key for key in ("weights", "gradients", "optimizer", "activations")]
    out.append(
        line(
            "total per GPU",
            " + ".join(parts),
            " + ".join(number(held[key]) for key in parts),
            held["total"],
            "bytes",
            TRAINING,
        )
    )
    return out


def activation_lines(shape: ModelShape, setup: TrainingSetup, block: Block, per_layer: int) -> list[Line]:
    """One layer kind's training activations from its rows (tfcost.core.activations): the bytes each row saves per token
    and per score entry, then the layer's bytes for the micro-batch on one GPU (Korthikanti et al. 2022 §4)."""
    from tfcost.core import activations  # train only: estimate need not import them

    kept = activations.held_tensors(shape, block, setup.recompute, setup.flash, precision=setup.precision)
    terms = activations.layer_terms(shape, block, setup.recompute, setup.flash, setup.precision)
    out = []
    for label, per, total in (
        ("token", "token", terms.stream_per_token + terms.split_per_token),
        ("score entry", "entry", terms.stream_per_entry + terms.split_per_entry),
        ("chunk", "chunk", sum(size for _, size in terms.split_per_chunk)),
        ("compressed entry", "compressed", sum(size for _, size in terms.stream_per_compressed)),
        ("query x compressed entry", "compressed_entry", sum(size for _, size in terms.split_per_compressed_entry)),
    ):
        rows = [(row, saved) for row, saved in kept if saved.per == per]
        if rows:
            formula = " + ".join(f"{row} {saved.what}" for row, saved in rows)
            working = " + ".join(number(activations.saved_bytes(saved, setup.precision)) for _, saved in rows)
            out.append(line(f"saved per {label}, one {block.name} layer", formula, working, total, "bytes", TRAINING))
    s, b, t = setup.seq_len // setup.cp, setup.micro_batch, setup.tp
    stream_by = t if setup.sequence_parallel else 1

    def per_sequence(
        per_token: int,
        per_entry: int,
        per_chunk: activations.ChunkBytes = (),
        per_compressed: activations.ChunkBytes = (),
        per_pair: activations.ChunkBytes = (),
    ) -> str:
        chunks = "".join(f" + ⌈{number(s)}/{number(chunk)}⌉·{number(size)}" for chunk, size in per_chunk)
        entries = f" + {number(s)}²·{number(per_entry)}" if per_entry else ""
        compressed = "".join(f" + ⌊{number(s)}/{number(m)}⌋·{number(size)}" for m, size in per_compressed)
        pairs = "".join(f" + {number(s)}·⌊{number(s)}/{number(m)}⌋·{number(size)}" for m, size in per_pair)
        return f"{number(s)}·{number(per_token)}{entries}{chunks}{compressed}{pairs}"

    stream = per_sequence(terms.stream_per_token, terms.stream_per_entry, per_compressed=terms.stream_per_compressed)
    split = per_sequence(
        terms.split_per_token, terms.split_per_entry, terms.split_per_chunk, per_pair=terms.split_per_compressed_entry
    )
    stream_extra = " + ⌊s/m⌋·per compressed entry" if terms.stream_per_compressed else ""
    split_extra = (" + ⌈s/C⌉·per chunk" if terms.split_per_chunk else "") + (
        " + s·⌊s/m⌋·per query x compressed entry" if terms.split_per_compressed_entry else ""
    )
    out.append(
        line(
            f"activations, one {block.name} layer",
            f"⌈b·(s·stream per token + s²·per entry{stream_extra}) / t if sequence-parallel⌉ + ⌈b·(s·split per "
            f"token + s²·per entry{split_extra}) / t⌉",
            f"⌈{b}·({stream}) / {stream_by}⌉ + ⌈{b}·({split}) / {t}⌉",
            per_layer,
            "bytes",
            TRAINING,
        )
    )
    return out


def serve_lines(
    shape: ModelShape,
    setup: ServingSetup,
    weights_bytes: int,
    weights_per_gpu: int,
    kv_per_gpu: int,
    prefill: serving.Roofline,
    decode: serving.Roofline,
    peak: float,
    bandwidth: float,
) -> list[Line]:
    """`tfcost serve`'s main quantities: the weights and KV cache per GPU and the prefill and decode rooflines."""
    out: list[Line] = []
    n, t = params.total_params(shape), setup.gpus
    if setup.weights_dtype in ("bf16", "fp16"):
        out.append(line("weights", "N x 2 bytes", f"{number(n)}·2", weights_bytes, "bytes", SERVING))
    out.append(
        line(
            "weights per GPU", "⌈weights / gpus⌉", f"⌈{number(weights_bytes)} / {t}⌉", weights_per_gpu, "bytes", SERVING
        )
    )
    tokens, encoder_tokens = serving.cached_positions(shape, setup.prompt, setup.generate)
    if encoder_tokens is None:
        out += kv_lines(shape, tokens, setup.batch, setup.kv_dtype)
        form = memory.cache_form(shape, t)
        terms = " + ".join(
            f"{number(value)}·{number(rate_multiplicity(per, span, tokens, tokens, True))}" for per, span, value in form
        )
        out.append(
            line(
                "KV cache per GPU",
                "Σ cache rows: layers x fan_in x max(heads / gpus, 1) / heads x positions, x B x s",
                f"({terms or 0})·{setup.batch}·{DTYPE_BYTES[setup.kv_dtype]}",
                kv_per_gpu,
                "bytes",
                ROWS,
            )
        )
    unread = serving.unread_expert_bytes_per_gpu(shape, setup.weights_dtype, setup.batch, t, setup.group_size)
    if unread:
        kv_and_state = kv_per_gpu + serving.state_bytes_per_gpu(shape, setup.batch, setup.kv_dtype, t)
        out.append(
            line(
                "decode step bytes per GPU",
                "weights per GPU - routed experts no token picks + KV cache and state",
                f"{number(weights_per_gpu)} - {number(unread)} + {number(kv_and_state)}",
                decode.bytes_per_gpu,
                "bytes",
                ROWS,
            )
        )
    return out + roofline_lines(prefill, decode, peak, bandwidth)


def roofline_lines(prefill: serving.Roofline, decode: serving.Roofline, peak: float, bandwidth: float) -> list[Line]:
    """The prefill and the decode step as the roofline's larger term."""
    return [
        line(
            f"{name}, seconds",
            "max(FLOPs per GPU / peak, bytes per GPU / bandwidth)",
            f"max({number(pass_.flops_per_gpu)} / {real(peak)}, {number(pass_.bytes_per_gpu)} / {real(bandwidth)})",
            pass_.seconds,
            "seconds",
            SERVING,
        )
        for name, pass_ in (("prefill", prefill), ("decode step", decode))
    ]


# The transformers engine -------------------------------------------------------------------------------------


def fraction(value: Fraction) -> str:
    """An exact rational as arithmetic: 1,234 or (1,234/5)."""
    if value.denominator == 1:
        return number(value.numerator)
    return f"({number(value.numerator)}/{number(value.denominator)})"


def engine_train_lines(
    setup: TrainingSetup,
    forward: int,
    model_flops: int,
    seconds_from_mfu: tuple[float, float, float] | None,
    n: int,
    held: dict[str, int],
    saved: int,
    scores: int,
) -> list[Line]:
    """`tfcost train` by the transformers engine: 3 x FlopCounterMode's forward, the run, ZeRO's model states over
    the parameter sum, and the activations autograd saved (less the T x T scores under --flash)."""
    per_sequence = flops.training_flops_from_forward(forward)
    out = [
        line("training per sequence", "3 x forward (FlopCounterMode)", f"3·{number(forward)}", per_sequence, "flops",
             ENGINE),
    ]  # fmt: skip
    out += run_lines(setup, per_sequence, model_flops, seconds_from_mfu)
    if plain_model_states(setup):  # not at ZeRO-3, whose gathered layers the line does not show
        out += model_state_lines(n, setup, held)
    formula, working = ("saved - T x T scores", f"{number(saved)} - {number(scores)}") if setup.flash else (
        "saved", number(saved))  # fmt: skip
    out.append(line("activations per GPU", formula, working, held["activations"], "bytes", ENGINE))
    parts = ("weights", "gradients", "optimizer", "activations")
    out.append(
        line("total per GPU", " + ".join(parts), " + ".join(number(held[key]) for key in parts), held["total"],
             "bytes", TRAINING)
    )  # fmt: skip
    return out


def engine_serve_lines(
    setup: ServingSetup,
    counts: tuple[int, int, int],
    coefficients: tuple[Fraction, Fraction],
    head_flops: int,
    prefill: serving.Roofline,
    decode: serving.Roofline,
    peak: float,
    bandwidth: float,
) -> list[Line]:
    """`tfcost serve` by the transformers engine: FlopCounterMode's counts (P, F(P), F(P + 1)) solved as
    F(T) = a·T + b·T² (serving.forward_coefficients), then the prefill and decode step from a and b, and their
    rooflines."""
    p, at, after = counts
    a, b = coefficients
    row = f"({number(p)}·{number(after)} - {number(p + 1)}·{number(at)}) / ({number(p)}·{number(p + 1)})"
    context, batch = setup.context, setup.batch
    return [
        line("b, FLOPs per score-row position", "(P·F(P+1) - (P+1)·F(P)) / (P(P+1))", row, float(b), "flops",
             ENGINE),
        line("a, FLOPs per token", "F(P) / P - b·P", f"{number(at)} / {number(p)} - {fraction(b)}·{number(p)}",
             float(a), "flops", ENGINE),
        line("prefill FLOPs", "B·(a·P + b·P(P+1)/2 - head·(P - 1))",
             f"{batch}·({fraction(a)}·{number(p)} + {fraction(b)}·{number(p)}·{number(p + 1)}/2 - "
             f"{number(head_flops)}·({number(p)} - 1))", prefill.flops_per_gpu, "flops", ENGINE),
        line("decode step FLOPs", "B·(a + b·(P + G))", f"{batch}·({fraction(a)} + {fraction(b)}·{number(context)})",
             decode.flops_per_gpu, "flops", ENGINE),
        *roofline_lines(prefill, decode, peak, bandwidth),
    ]  # fmt: skip
