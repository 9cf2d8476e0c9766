"""A model, built once: its operation rows per layer group, and the folds the scenarios read.

`Model` holds a `ModelShape`'s rows (tfcost.core.layers): the embedding rows, each layer group (a block kind and how
many layers have it) with its rows, and the head rows. Training step time, serving, LoRA and context parallelism
(tfcost.costs) read widths from here, not from the shape: what a row is (`Op.work`), how tensor parallelism splits it
(`Op.tp_split`, `Op.tp_share` from its fan_out), whether it is quantizable (`Op.quantizable`), its expert group
(`Op.experts`) and, for LoRA, its PEFT module name (`peft_name`). So a model without attention has no attention work,
MLA's cache is its latent, and an MoE's experts are a grouped matmul of k of E copies.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

from tfcost.core.blocks import Block, blocks
from tfcost.core.layers import embedding_ops, head_ops, layer_ops
from tfcost.core.ops import Op, op_flops, op_params, rate_multiplicity
from tfcost.schema import ModelShape
from tfcost.units import ceil_div

# The module names PEFT's target_modules match (the transformers modules each row is), by the row's name: Llama's
# q_proj ... down_proj (LlamaAttention, LlamaMLP), MLA's low-rank projections (DeepseekV3Attention: q_a_proj,
# q_b_proj, kv_a_proj_with_mqa, kv_b_proj), Mamba's in_proj/x_proj/dt_proj/out_proj (MambaMixer, Mamba2Mixer), and
# the routed experts as one target, "experts" (transformers' fused MoE experts, which PEFT adapts by
# target_parameters). Shared experts are MLPs whose modules are gate_proj, up_proj and down_proj (DeepseekV3MLP).
PEFT_NAMES = {
    "attention/q": "q_proj",
    "attention/k": "k_proj",
    "attention/v": "v_proj",
    "attention/o": "o_proj",
    "attention/q_down": "q_a_proj",
    "attention/q_up": "q_b_proj",
    "attention/kv_down": "kv_a_proj_with_mqa",
    "attention/kv_up": "kv_b_proj",
    "mlp/gate": "gate_proj",
    "mlp/up": "up_proj",
    "mlp/down": "down_proj",
    "moe/shared/gate": "gate_proj",
    "moe/shared/up": "up_proj",
    "moe/shared/down": "down_proj",
    "moe/experts/gate": "experts",
    "moe/experts/up": "experts",
    "moe/experts/down": "experts",
    "mamba/in_proj": "in_proj",
    "mamba/x_proj": "x_proj",
    "mamba/dt_proj": "dt_proj",
    "mamba/out_proj": "out_proj",
}


def peft_name(op: Op) -> str | None:
    """The PEFT target module a linear row is, or None where PEFT names none of tfcost's rows."""
    return PEFT_NAMES.get(op.name) if op.kind == "linear" and op.copies else None


def same_input(a: Op, b: Op) -> bool:
    """Whether two linear rows read one input and can run as one GEMM: same width, rate, uses, FLOPs key and split."""
    return (a.fan_in, a.per, a.span, a.uses, a.flops_part, a.tp_split) == (
        b.fan_in, b.per, b.span, b.uses, b.flops_part, b.tp_split
    )  # fmt: skip


@dataclass(frozen=True)
class LayerGroup:
    """`count` layers of one block kind, each with these rows."""

    block: Block
    count: int
    rows: tuple[Op, ...]


@dataclass(frozen=True)
class Model:
    """A model's rows, built once from its shape (`model_of`); every scenario folds over them."""

    shape: ModelShape
    embedding: tuple[Op, ...]
    layers: tuple[LayerGroup, ...]
    head: tuple[Op, ...]

    @property
    def n_layers(self) -> int:
        return sum(group.count for group in self.layers)

    def layer_rows(self) -> tuple[tuple[int, Op], ...]:
        """(layers, row) for every row of every layer group (built once: a stack of thousands of distinct blocks
        has hundreds of thousands of them, and each cost folds over them)."""
        return self.all_layer_rows

    @cached_property
    def all_layer_rows(self) -> tuple[tuple[int, Op], ...]:
        return tuple((group.count, op) for group in self.layers for op in group.rows)

    def outside_rows(self) -> tuple[Op, ...]:
        """The rows before and after the layers: embeddings and head."""
        return self.embedding + self.head

    def layer_flops(self, seq_len: int, works: tuple[str, ...], causal: bool = False) -> int:
        """Forward FLOPs of every layer's rows of these kinds of work over one T-token sequence."""
        return sum(
            count * op_flops(op, seq_len, seq_len, causal) for count, op in self.layer_rows() if op.work in works
        )

    def linear_flops(self, seq_len: int, causal: bool = False) -> int:
        """The layers' matmul FLOPs (dense and grouped) over one sequence: what a training step's GEMMs do."""
        return self.layer_flops(seq_len, ("matmul", "grouped_matmul"), causal)

    def attention_flops(self, seq_len: int, causal: bool = False) -> int:
        """The layers' attention FLOPs (QK^T, AV, an indexer's scores) over one sequence."""
        return self.layer_flops(seq_len, ("attention",), causal)

    def outside_linear_flops(self, seq_len: int) -> int:
        """Matmul FLOPs of the rows outside the layers (the output head, an embedding projection, a pooler)."""
        return sum(op_flops(op, seq_len, seq_len, False) for op in self.outside_rows() if op.kind == "linear")

    def score_entries(self, seq_len: int) -> int:
        """Score entries a non-fused kernel materialises over one sequence, all layers: each scores row's heads
        (fan_out) x its full entries (T x T, T x T_source for cross-attention; a dense kernel computes every one
        whatever the mask). Zero for a model without attention."""
        return sum(
            count * op.fan_out * rate_multiplicity(op.per, op.span, seq_len, seq_len, False)
            for count, op in self.layer_rows()
            if op.kind == "scores"
        )

    def cache_width(self, tp: int = 1) -> float:
        """Cached elements per position, all layers, held by one of t GPUs: each cache row's fan_in x its tensor-
        parallel share (`Op.tp_share`, from the row's fan_out: K key-value heads for attention, one latent for MLA).
        A compressed cache row (DeepSeek-V4) holds one entry per m positions."""
        width = 0.0
        for count, op in self.layer_rows():
            if op.kind == "cache" and op.per in ("cached", "compressed"):
                per_position = op.fan_in / (op.span.compress or 1 if op.per == "compressed" else 1)
                width += count * per_position * op.tp_share(tp)
        return width

    def gemms(self, seq_len: int, sequences: int, tp: int = 1, cp: int = 1) -> list[tuple[int, int, int]]:
        """(rows, inner, cols) of every layer's forward GEMMs on one GPU, each layer's repeated `count` times:
        `sequences` sequences of T / cp positions. Consecutive linear rows that read the same input (same fan_in,
        rate, uses and FLOPs key: q, k and v; gate and up) are one fused GEMM, as Megatron-LM and vLLM fuse them;
        a routed expert row is tokens x k rows of one expert's width; column-parallel rows split their columns over
        t, row-parallel rows their inner dimension. The sum of 2 x rows x inner x cols at t = cp = 1 is the layers'
        linear FLOPs fold (`linear_flops`)."""
        return [(rows, inner, cols) for rows, inner, cols, _ in self.gemm_groups(seq_len, sequences, tp, cp)]

    def gemm_groups(
        self,
        seq_len: int,
        sequences: int,
        tp: int = 1,
        cp: int = 1,
        expert_tp: int | None = None,
        expert_load: float = 1.0,
    ) -> list[tuple[int, int, int, int]]:
        """`gemms` with the routed experts E each GEMM's rows are spread over (1 for a dense GEMM): a grouped GEMM
        runs E problems of about rows / E rows each (tfcost.costs.step_time prices their tiles). `expert_tp`: the
        routed experts' own tensor-parallel size (Megatron-Core's ETP, default t): an expert row's width splits over
        it and its rows grow by etp / t, the tokens of the etp ranks gathered (the same FLOPs on a GPU); `expert_load`:
        the busiest GPU's routed rows over the balanced share (a capacity factor, a load imbalance)."""
        etp = tp if expert_tp is None else expert_tp
        out: list[tuple[int, int, int, int]] = []
        for group in self.layers:
            fused: list[tuple[Op, int, int, int]] = []  # (first row, rows, inner, cols)
            for op in group.rows:
                if op.work not in ("matmul", "grouped_matmul") or not op.uses:
                    continue
                rows = sequences * rate_multiplicity(op.per, op.span, seq_len, seq_len, False) * op.uses // cp
                if fused and same_input(fused[-1][0], op):
                    first, rows, inner, cols = fused[-1]
                    fused[-1] = (first, rows, inner, cols + op.fan_out)
                else:
                    fused.append((op, rows, op.fan_in, op.fan_out))
            for first, rows, inner, cols in fused:  # a width t does not divide (a gate of 1) rounds up
                split = tp
                if first.experts is not None and first.experts.experts > 1:
                    split = etp
                    if etp != tp or expert_load != 1.0:
                        rows = max(1, round(rows * etp / tp * expert_load))
                if first.tp_split == "row":
                    inner = ceil_div(inner, split)
                else:
                    cols = ceil_div(cols, split)
                experts = first.experts.experts if first.experts is not None else 1
                out += [(rows, inner, cols, experts)] * group.count
        return out

    def activation_elements_per_token(self) -> float:
        """Elements the MLP activations read and write per token, averaged over the layers: each up projection's
        output (fan_out x uses: an MoE's k experts and its shared ones) read and the activation written, and under a
        gated MLP the gate's output read too (3 tensors F wide, 2 for a plain MLP). Zero for a layer without an MLP
        (Mamba blocks, Nemotron-H's mixer-only layers)."""
        total = 0
        for group in self.layers:
            gates = {op.name.rsplit("/", 1)[0] for op in group.rows if op.name.endswith("/gate") and op.uses}
            for op in group.rows:
                if op.kind == "linear" and op.name.endswith("/up") and op.uses:
                    tensors = 3 if op.name.rsplit("/", 1)[0] in gates else 2
                    total += group.count * tensors * op.fan_out * op.uses
        return total / self.n_layers if self.n_layers else 0.0

    def widest_intermediate(self) -> int:
        """Elements per token of a layer's widest intermediate: the outputs of one fused GEMM (q, k and v together;
        gate and up together; k experts' rows for a token routed to k), over every layer's linear rows."""
        widest = 0
        for group in self.layers:
            fused: list[tuple[Op, int]] = []  # (first row, outputs per token)
            for op in group.rows:
                if op.kind != "linear" or op.per != "token" or not op.uses:
                    continue
                if fused and same_input(fused[-1][0], op):
                    fused[-1] = (fused[-1][0], fused[-1][1] + op.fan_out * op.uses)
                else:
                    fused.append((op, op.fan_out * op.uses))
            widest = max([widest, *(width for _, width in fused)])
        return widest

    def largest_matrix_params(self) -> int:
        """The biggest single weight matrix of any row: one copy (one expert) of a linear row, or a table."""
        rows = [op for _, op in self.layer_rows()] + list(self.outside_rows())
        return max((op.fan_in * op.fan_out for op in rows if op.kind in ("linear", "table")), default=0)

    def routed_expert_params(self) -> int:
        """Weights of every routed expert of every layer."""
        return sum(count * op_params(op) for count, op in self.layer_rows() if op.experts is not None)

    def untouched_expert_params(self, tokens: float) -> float:
        """Routed expert weights `tokens` tokens leave unread in one forward pass, in expectation under uniform
        routing: each layer's E - E (1 - (1 - k/E)^B) experts no token picked (`ExpertGroup.distinct_experts`)."""
        untouched = 0.0
        for count, op in self.layer_rows():
            if op.experts is not None and op.copies:
                missed = 1 - op.experts.distinct_experts(tokens) / op.experts.experts
                untouched += count * op_params(op) * missed
        return untouched

    def layer_params(self) -> int:
        """Weights of every layer (embeddings and head not counted)."""
        return sum(count * op_params(op) for count, op in self.layer_rows())

    def peft_rows(self) -> dict[str, list[tuple[int, Op]]]:
        """The rows LoRA can adapt, by PEFT target name (`peft_name`), with their layer counts."""
        found: dict[str, list[tuple[int, Op]]] = {}
        for count, op in self.layer_rows():
            name = peft_name(op)
            if name is not None:
                found.setdefault(name, []).append((count, op))
        return found


@lru_cache(maxsize=1024)
def model_of(shape: ModelShape) -> Model:
    """The model's rows, built once per shape."""
    groups = tuple(LayerGroup(block, count, layer_ops(shape, block)) for block, count in blocks(shape))
    return Model(shape, embedding_ops(shape), groups, head_ops(shape))
