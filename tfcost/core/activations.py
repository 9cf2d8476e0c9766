"""Training activations: what each layer keeps for its backward pass, a fold over what its rows save (`ops.Saved`).

Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models", arXiv:2205.05198) §4.1
count, for a GPT layer of hidden size h, a heads, s tokens and micro-batch b in 16-bit, sbh(34 + 5as/h) bytes:
11sbh + 5as^2b in attention, 19sbh in the MLP and 4sbh in the two layer norms. Each term is one tensor a row of
the layer's table keeps (tfcost.core.layers: attention, mlp, norms), so the fold reproduces the paper's Table 2:

    no parallelism                       sbh(34 + 5as/h)
    tensor parallel t                    sbh(10 + 24/t + 5as/(ht))
    + sequence parallel                  sbh(34 + 5as/h)/t
    + selective recomputation            sbh(10 + 24/t)  (with sequence parallelism 34sbh/t)
    full recomputation                   2sbh             (the layer's input only; with sequence parallelism /t)

A tensor inside the tensor-parallel region (Q, K, V, the scores, the MLP's hidden units) is split over t ranks;
one of the d-wide residual stream (norm inputs, the attention and MLP inputs, the dropout masks after them) only
under sequence parallelism. A fused attention kernel (FlashAttention, Dao 2022) keeps no score entries but one fp32
log-sum-exp per query row and head (4asb, as llm-analysis counts it); selective recomputation keeps neither.
Elements are 2 bytes (4 in fp32 training), dropout masks 1 byte; masks are counted as the paper does, dropout on.

torchtitan's selective recomputation is another policy, by operator (`--recompute selective-op`, `op_sac_tensors`):
the checkpointed layer keeps its input, and what its policy marks MUST_SAVE; everything else is recomputed. Its code
(torchtitan/parallelisms/parallelize_llama.py, 2024; the llama3 configs' `selective_ac_option = 'op'`):

    _save_list = {torch.ops.aten.mm.default, torch.ops.aten._scaled_dot_product_efficient_attention.default,
                  torch.ops.aten._scaled_dot_product_flash_attention.default,
                  torch.ops._c10d_functional.reduce_scatter_tensor.default}
    # Saves output of all compute ops, except every second mm
    to_save = func in _save_list and not (func == torch.ops.aten.mm.default and meta[mm_count_key] % 2 == 0)

So of a layer's matmul rows, in table order (a Llama layer's wq, wk, wv, wo, w1, w3, w2: the order torchtitan's
forward calls them), the 1st, 3rd, 5th... keep their outputs; SDPA keeps its output and its fp32 log-sum-exp. FP8
linears are counted the same: torchao's Float8Linear (0afa4c1, float8/float8_linear.py) multiplies with
`res_bits = torch.mm(input_maybe_fp8_reshaped, weight_maybe_fp8_t)` on Float8Tensor arguments, whose aten.mm
(float8/float8_ops.py, `@implements([aten.mm.default, aten.matmul.default]) def float8_mm`) calls torch._scaled_mm
inside; the policy, a TorchDispatchMode ("override the meaning of all ``__torch_dispatch__`` overrideable functions
within a dynamic scope", torch/utils/_python_dispatch.py), sees aten.mm.default first, counts it and saves its bf16
output. Routed experts run grouped GEMMs, not aten.mm, and are recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from tfcost.core.blocks import Block, blocks
from tfcost.core.layers import layer_ops
from tfcost.core.ops import Op, Saved, SavedWhen
from tfcost.schema import ModelShape, Precision, Recompute
from tfcost.units import ceil_div

# Bytes of one stored activation element: Korthikanti et al. 2022 assume 16-bit activations (fp32 under fp32).
ACTIVATION_BYTES: dict[Precision, int] = {"bf16-mixed": 2, "fp8": 2, "bf16": 2, "fp32": 4}
DROPOUT_MASK_BYTES = 1  # Korthikanti et al. 2022 §4.1: a dropout mask is one byte per element
LOGSUMEXP_BYTES = 4  # FlashAttention keeps one fp32 log-sum-exp per query row for the backward pass


# Bytes per chunk, by chunk length C: (C, bytes) pairs, a sequence of s tokens holding ceil(s / C) chunks of each.
ChunkBytes = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class LayerTerms:
    """One layer's saved bytes as b*(s*per_token + s^2*per_entry + sum of ceil(s/C)*per_chunk), for the
    residual-stream tensors (split over t only by sequence parallelism) and those inside the tensor-parallel region
    (split over t). Only a recurrent kernel's chunk states are saved per chunk, all inside the tensor-parallel
    region. Compressed attention (DeepSeek-V4) adds, by compression rate m, sum of floor(s/m)*per_compressed for its
    compressed entries (one key-value head wide, held whole on every rank like MLA's latents) and
    sum of s*floor(s/m)*per_compressed_entry for the query x compressed-entry scores (per head, split over t)."""

    stream_per_token: int
    stream_per_entry: int
    split_per_token: int
    split_per_entry: int
    split_per_chunk: ChunkBytes = ()
    stream_per_compressed: ChunkBytes = ()  # (m, bytes) pairs: floor(s/m) compressed entries of each
    split_per_compressed_entry: ChunkBytes = ()  # (m, bytes) pairs: s floor(s/m) query x entry pairs of each


def chunk_bytes(per_chunk: ChunkBytes, seq_len: int) -> int:
    """Bytes of the per-chunk tensors of one sequence of s tokens: sum of ceil(s / C) x bytes per chunk."""
    return sum(ceil_div(seq_len, chunk) * size for chunk, size in per_chunk)


def compressed_bytes(per_compressed: ChunkBytes, seq_len: int) -> int:
    """Bytes of the per-compressed-entry tensors of one sequence of s tokens: sum of floor(s / m) x bytes."""
    return sum(seq_len // rate * size for rate, size in per_compressed)


def compressed_entry_bytes(per_pair: ChunkBytes, seq_len: int) -> int:
    """Bytes of the query x compressed-entry tensors of one sequence: sum of s floor(s / m) x bytes per pair."""
    return sum(seq_len * (seq_len // rate) * size for rate, size in per_pair)


def held(when: SavedWhen, recompute: Recompute, flash: bool, dropout: bool) -> bool:
    """Whether a saved tensor stays in memory until the backward pass (ops.SavedWhen)."""
    match when:
        case "always":
            return True
        case "dropout":
            return dropout
        case "unfused":
            return recompute == "none" and not flash
        case "unfused_dropout":
            return recompute == "none" and not flash and dropout
        case "fused":
            return recompute == "none" and flash


def saved_bytes(saved: Saved, precision: Precision) -> int:
    """Bytes per unit (token or score entry) of a saved tensor: its width x the activation dtype's size, one byte
    per element of a dropout mask, four of an fp32 log-sum-exp."""
    size = {"activation": ACTIVATION_BYTES[precision], "mask": DROPOUT_MASK_BYTES, "fp32": LOGSUMEXP_BYTES}
    return saved.width * size[saved.store]


def saved_tensors(shape: ModelShape, block: Block) -> tuple[tuple[str, Saved], ...]:
    """One layer's rows and the tensors each saves, in table order (what `--explain` and docs/formulas.md list)."""
    return tuple((op.name, saved) for op in layer_ops(shape, block) for saved in op.saves)


def held_tensors(
    shape: ModelShape,
    block: Block,
    recompute: Recompute,
    flash: bool,
    dropout: bool = True,
    precision: Precision = "bf16-mixed",
) -> tuple[tuple[str, Saved], ...]:
    """The saved tensors that stay until the backward pass under this setup (none of the rows' under full
    recomputation, which keeps the layer's input alone; torchtitan's op-level policy's under selective-op)."""
    if recompute == "full":
        return ()
    if recompute == "selective-op":
        return op_sac_tensors(shape, block, precision)
    return tuple(
        (row, saved) for row, saved in saved_tensors(shape, block) if held(saved.when, recompute, flash, dropout)
    )


def op_sac_saved_matmuls(shape: ModelShape, block: Block, precision: Precision) -> tuple[Op, ...]:
    """The matmul rows whose outputs torchtitan's op-level policy saves: the odd-numbered aten.mm calls of the
    layer, in table order, under FP8 too (torchao's float8 linears reach the policy as aten.mm: module docstring).
    Grouped expert GEMMs are not aten.mm and are not counted. `precision` is kept for callers: it changes nothing."""
    del precision  # every precision's linears are aten.mm to the policy
    matmuls = [op for op in layer_ops(shape, block) if op.work == "matmul"]
    return tuple(matmuls[0::2])


def op_sac_tensors(shape: ModelShape, block: Block, precision: Precision) -> tuple[tuple[str, Saved], ...]:
    """What a layer keeps under torchtitan's op-level selective checkpointing (module docstring): its input (the
    checkpoint's argument, d wide), the outputs of the saved matmuls (a column-parallel row's split over t, a
    row-parallel one's d-wide on the residual stream), and each attention's SDPA output (heads x value width, split)
    and fp32 log-sum-exp (one per head)."""
    out = [("layer input", Saved("checkpointed input", shape.d_model, split=False))]
    for op in op_sac_saved_matmuls(shape, block, precision):
        out.append((op.name, Saved("output (aten.mm, saved)", op.fan_out, split=op.tp_split == "column")))
    for op in layer_ops(shape, block):
        if op.kind == "values":
            out.append((op.name, Saved("output (SDPA, saved)", op.fan_in * op.fan_out)))
        elif op.kind == "scores":
            out.append((op.name, Saved("log-sum-exp (SDPA, saved)", op.fan_out, store="fp32")))
    return tuple(out)


def op_sac_recomputed_matmuls(shape: ModelShape, block: Block, precision: Precision) -> tuple[Op, ...]:
    """The linear rows torchtitan's op-level policy runs again in the backward pass: every one it does not save."""
    saved = {op.name for op in op_sac_saved_matmuls(shape, block, precision)}
    return tuple(op for op in layer_ops(shape, block) if op.kind == "linear" and op.name not in saved)


@lru_cache(maxsize=4096)
def layer_terms(
    shape: ModelShape, block: Block, recompute: Recompute, flash: bool, precision: Precision, dropout: bool = True
) -> LayerTerms:
    """The fold: each tensor a row of the layer saves, held under this setup, added to its group (built once per
    layer kind and setup, so a new s or b costs a few multiplications). Full recomputation keeps only the layer's
    d-wide input (Korthikanti et al. 2022 §5: 2sbh)."""
    if recompute == "full":
        return LayerTerms(shape.d_model * ACTIVATION_BYTES[precision], 0, 0, 0)
    terms = {(split, per): 0 for split in (False, True) for per in ("token", "entry")}
    # per-chunk and per-compressed tensors, by chunk length or compression rate
    by_rate: dict[str, dict[int, int]] = {"chunk": {}, "compressed": {}, "compressed_entry": {}}
    for _, saved in held_tensors(shape, block, recompute, flash, dropout, precision):
        if saved.per in by_rate:
            # a kernel's chunk states and the compressed scores are per channel or head (split); the compressed
            # entries one key-value head, held whole on every rank (not split)
            assert saved.split == (saved.per != "compressed") and (saved.chunk or saved.compress) > 0
            group, rate = by_rate[saved.per], saved.chunk or saved.compress
            group[rate] = group.get(rate, 0) + saved_bytes(saved, precision)
        else:
            terms[(saved.split, saved.per)] += saved_bytes(saved, precision)
    chunks, compressed, pairs = (tuple(sorted(by_rate[per].items())) for per in by_rate)
    return LayerTerms(
        terms[(False, "token")], terms[(False, "entry")], terms[(True, "token")], terms[(True, "entry")],
        chunks, compressed, pairs,
    )  # fmt: skip


def terms_bytes(terms: LayerTerms, seq_len: int, micro_batch: int, tp: int, sequence_parallel: bool) -> int:
    """A layer's bytes on one GPU: ceil(b(s*A + s^2*B + compressed entries' bytes) / t) with t only under sequence
    parallelism for the residual stream's tensors (and the compressed entries, held whole like MLA's latents), plus
    ceil(b(s*C + s^2*D + chunk bytes + compressed pairs' bytes) / t) for the tensor-parallel ones."""
    s, b = seq_len, micro_batch
    stream = b * (
        s * terms.stream_per_token + s * s * terms.stream_per_entry + compressed_bytes(terms.stream_per_compressed, s)
    )
    split = b * (
        s * terms.split_per_token + s * s * terms.split_per_entry + chunk_bytes(terms.split_per_chunk, s)
        + compressed_entry_bytes(terms.split_per_compressed_entry, s)
    )  # fmt: skip
    return ceil_div(stream, tp if sequence_parallel else 1) + ceil_div(split, tp)


def layer_activation_bytes(
    shape: ModelShape,
    block: Block,
    seq_len: int,
    micro_batch: int,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: Recompute = "none",
    flash: bool = False,
    precision: Precision = "bf16-mixed",
    dropout: bool = True,
) -> int:
    """Bytes one layer of kind `block` keeps for its backward pass on one GPU, for a micro-batch of b sequences of
    s tokens: the sum of its rows' saved tensors (`layer_terms`, `terms_bytes`). Score entries are what a dense
    kernel materialises, all s^2 whatever the mask (Korthikanti's 5as^2b)."""
    terms = layer_terms(shape, block, recompute, flash, precision, dropout)
    return terms_bytes(terms, seq_len, micro_batch, tp, sequence_parallel)


@lru_cache(maxsize=16384)  # `tfcost plan train` asks again for every pp, dp, v, ZeRO and offload of one shape
def activation_bytes_by_layer_kind(
    shape: ModelShape,
    seq_len: int,
    micro_batch: int,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: Recompute = "none",
    flash: bool = False,
    precision: Precision = "bf16-mixed",
    dropout: bool = True,
) -> tuple[tuple[Block, int, int], ...]:
    """Each layer kind of the model (encoder and decoder stacks both), how many layers it has and the bytes one of
    them keeps (`layer_activation_bytes`); without `dropout`, no dropout mask."""
    return tuple(
        (block, count, layer_activation_bytes(
            shape, block, seq_len, micro_batch, tp, sequence_parallel, recompute, flash, precision, dropout
        ))
        for block, count in blocks(shape)
    )  # fmt: skip
