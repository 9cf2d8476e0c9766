"""Parallel layouts as Megatron-LM runs them: which sizes must divide which, how many layers each pipeline stage
holds, how many micro-batches a step has, and what the pipeline schedule costs in idle time and in activations.

Symbols: L layers, p pipeline stages, v virtual stages (model chunks) per pipeline stage, m micro-batches per step,
b micro-batch, B global batch (sequences per optimizer step), N_d data-parallel replicas, t tensor-parallel size,
c context-parallel size.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from tfcost.core import activations, params
from tfcost.core.blocks import layer_count, moe_layer_count
from tfcost.errors import UsageError
from tfcost.schema import ModelShape, TrainingSetup


def stage_layers(n_layers: int, pp: int, first: int | None = None, last: int | None = None) -> list[int]:
    """Layers of each pipeline stage, first to last.

    Megatron-LM splits the layers evenly over the stages; `--decoder-first-pipeline-num-layers` and
    `--decoder-last-pipeline-num-layers` set the first and last stages' counts, and the rest must split evenly
    over the stages between (Megatron-Core's transformer_layer count check). Llama 3 405B: 126 layers over 16
    stages with one layer fewer on the first and the last, 7 + 14 x 8 + 7 (Dubey et al. 2024 §3.3.2); BLOOM-176B:
    70 layers over 12 stages as 5 + 10 x 6 + 5, the embeddings taking a layer's place at each end (BigScience's
    Megatron-DeepSpeed partition "type:transformer|embedding").
    """
    if pp == 1:
        if first is not None or last is not None:
            raise UsageError("--pp-first-layers and --pp-last-layers need pp > 1")
        return [n_layers]
    ends = (first or 0) + (last or 0)
    middle_stages = pp - (first is not None) - (last is not None)
    rest = n_layers - ends
    if rest < 0 or (middle_stages == 0 and rest != 0) or (middle_stages > 0 and (rest <= 0 or rest % middle_stages)):
        if first is None and last is None:
            raise UsageError(f"pp ({pp}) must divide the {n_layers} layers, or give --pp-first-layers/--pp-last-layers")
        raise UsageError(
            f"after the first/last stages' {ends} layers, the other {rest} layers must split evenly over "
            f"the {middle_stages} stages between"
        )
    middle = rest // middle_stages if middle_stages else 0
    stages = [middle] * pp
    if first is not None:
        stages[0] = first
    if last is not None:
        stages[-1] = last
    return stages


# Megatron-Core's layout characters (pipeline_parallel_layer_layout.py at d98e8a6, parse_str_to_list: "E":
# LayerType.embedding, "L": LayerType.loss, "t": LayerType.decoder, "m": LayerType.mtp) and the most chunks a layout
# may unroll to here (a bad repeat count is refused in one line, not expanded)
LAYOUT_CHARACTERS = frozenset("ELtm")
MAX_LAYOUT_CHUNKS = 4096


def layout_chunks(layout: str) -> list[str]:
    """The chunks of a --pipeline-model-parallel-layout string, in layer order, as Megatron-Core parses it
    (PipelineParallelLayerLayout.parse_str_to_list: commas are cosmetic, "(...)*n" and "x*n" are unrolled, chunks are
    split by "|"): "Et|(tt|)*2mL" is ["Et", "tt", "tt", "mL"]."""
    text = layout.replace(",", "")
    for pattern in (r"\(([^()]+)\)\*(\d+)", r"(.)\*(\d+)"):

        def unroll(match: re.Match[str]) -> str:
            times = int(match.group(2))
            if times * len(match.group(1)) > MAX_LAYOUT_CHUNKS * 64:
                raise UsageError(f"--pp-layout repeats {match.group(0)!r} more than a layout can hold")
            return match.group(1) * times

        text = re.sub(pattern, unroll, text)
    chunks = text.split("|")
    if len(chunks) > MAX_LAYOUT_CHUNKS:
        raise UsageError(f"--pp-layout has {len(chunks)} chunks, more than {MAX_LAYOUT_CHUNKS}")
    wrong = sorted(set(text) - LAYOUT_CHARACTERS - {"|"})
    if wrong:
        raise UsageError(f"--pp-layout: unknown characters {''.join(wrong)!r} (E, t, m, L, |, (...)*n, x*n)")
    return chunks


def layout_stages(layout: str, n_layers: int, pp: int, virtual_stages: int) -> list[int]:
    """Transformer layers of each pipeline stage under a Megatron-Core layout string: chunk i runs on stage i mod p
    ("layout[vpp_rank * pipeline_model_parallel_size + pp_rank]"), the layout holds p x v chunks ("len(layout) %
    pipeline_model_parallel_size == 0", v = their quotient), the embedding first and the loss last, once each, and
    the model's L layers as t ("Number of decoder layers ... must match num_layers"). A multi-token-prediction layer
    (m) is not one of the L: not counted."""
    chunks = layout_chunks(layout)
    if len(chunks) != pp * virtual_stages:
        raise UsageError(
            f"--pp-layout has {len(chunks)} chunks: it needs pp x virtual stages ({pp} x {virtual_stages}), one a "
            "chunk (give --virtual-stages as the layout's chunks over pp)"
        )
    flat = "".join(chunks)
    if not flat.startswith("E") or not flat.endswith("L") or flat.count("E") != 1 or flat.count("L") != 1:
        raise UsageError("--pp-layout must start with the embedding (E) and end with the loss (L), each once")
    if flat.count("t") != n_layers:
        raise UsageError(f"--pp-layout holds {flat.count('t')} transformer layers (t); the model has {n_layers}")
    return [sum(chunk.count("t") for chunk in chunks[stage::pp]) for stage in range(pp)]


def setup_stages(shape: ModelShape, setup: TrainingSetup) -> list[int]:
    """Layers of each pipeline stage: the layout string's (`layout_stages`) when given, else `stage_layers`."""
    if setup.pp_layout is not None:
        return layout_stages(setup.pp_layout, layer_count(shape), setup.pp, setup.virtual_stages)
    return stage_layers(layer_count(shape), setup.pp, setup.pp_first_layers, setup.pp_last_layers)


def accounted_slots(stages: list[int]) -> list[int]:
    """The layers a stage would hold, s, if the split were Megatron-LM's `--account-for-embedding-in-pipeline-split`
    / `--account-for-loss-in-pipeline-split`: every stage s layers except that the embedding takes a layer's place
    on the first stage and the loss on the last, which then hold s - 1 (Megatron-Core's TransformerConfig: "the
    embedding layer will be treated as a standard transformer layer in the context of partition and placement for
    pipeline parallelism"; the same for the loss). Llama 3 405B's 7 + 14 x 8 + 7 is this split of 126 + 2 over 16
    stages (s = 8): "we reduce one Transformer layer each from the first and the last stages ... the first model
    chunk on the first stage has only the embedding, and the last model chunk on the last stage has only output
    projection and loss calculation" (Dubey et al. 2024 §3.3.2); BLOOM-176B's 5 + 10 x 6 + 5 is 70 + 2 over 12.
    Empty when the stages are not such a split (or p = 1)."""
    if len(stages) < 2:
        return []
    first, middle, last = stages[0], set(stages[1:-1]), stages[-1]
    if len(middle) > 1:
        return []
    # With no middle stage s is the larger end, or one more than both when they are equal (both accounted).
    candidates = middle or {max(first, last), max(first, last) + (first == last)}
    return sorted(s for s in candidates if first in (s, s - 1) and last in (s, s - 1))


def interleavable_layers(stages: list[int]) -> list[int]:
    """The layer counts v may divide for the interleaved schedule (a divisor of any of them is a legal v): every stage's
    layers, as Megatron-Core checks `--num-layers-per-virtual-pipeline-stage` with `--decoder-first/last-pipeline-
    num-layers` ("number of layers at last stage ... must be divisible by virtual pipeline parallel degree", the
    same for the first and the middle stages), or, for a split that accounts for the embedding and the loss
    (`accounted_slots`), s: "number of layers on each pipeline rank ... (after enable account_for_embedding_in_
    pipeline_split or account_for_loss_in_pipeline_split) must be divisible by virtual_pipeline_model_parallel_size"
    (each of the p v model chunks then holds s / v layer slots, the first chunk's first slot the embedding and the
    last chunk's last slot the loss: Llama 3's v = 8 chunks of one slot on 16 stages)."""
    return sorted({math.gcd(*stages), *accounted_slots(stages)})


def micro_batches(setup: TrainingSetup) -> int:
    """m = B / (b x N_d): micro-batches each replica runs per optimizer step (Megatron's num_microbatches).
    Without a global batch: one micro-batch per replica."""
    if setup.global_batch is None:
        return 1
    return setup.global_batch // (setup.micro_batch * setup.data_parallel)


def global_batch(setup: TrainingSetup) -> int:
    """B: sequences per optimizer step."""
    return setup.micro_batch * setup.data_parallel * micro_batches(setup)


def bubble_fraction(pp: int, microbatches: int, virtual_stages: int = 1) -> float:
    """Idle time of the 1F1B pipeline over its useful time: (p - 1) / (v x m) (Narayanan et al. 2021 §2.2.1 for
    v = 1, §2.2.2 for the interleaved schedule, whose bubble shrinks by the v model chunks per stage)."""
    return (pp - 1) / (virtual_stages * microbatches)


def in_flight_factor(pp: int, virtual_stages: int) -> float:
    """Activations the first stage holds, in units of one micro-batch through all L layers: 1 under 1F1B
    (p micro-batches in flight through L/p layers each) and 1 + (p - 1)/(p v) under the interleaved schedule
    (Korthikanti et al. 2022 §4.2.3)."""
    if virtual_stages == 1:
        return 1.0
    return 1 + (pp - 1) / (pp * virtual_stages)


def check_layout(shape: ModelShape, setup: TrainingSetup) -> list[int]:
    """Megatron-LM's (and torchtitan's) rules for what must divide what; returns the layers of each stage.

    - t divides the query and the key-value heads (each GPU holds whole heads);
    - with sequence parallelism, t divides T; with context parallelism, 2c divides T (each GPU takes two
      chunks of the sequence, one early and one late, to balance the causal work: Megatron-Core's CP), and the
      attention is a fused kernel (`flash`): Megatron-Core's own attention refuses it ("Context parallelism is only
      supported by TEDotProductAttention!", megatron/core/transformer/dot_product_attention.py), and Transformer
      Engine's ring runs only its flash and cuDNN backends ("Disabling UnfusedDotProductAttention as it does not
      support context parallelism", TransformerEngine's attention backend selection);
    - the stages' layers as `stage_layers`, and v divides each stage's layers (interleaved 1F1B), with p > 1, or
      the layer slots of a split that counts the embedding and the loss as layers (`interleavable_layers`);
    - b x N_d divides the global batch; the interleaved schedule needs m to be a multiple of p;
    - e (expert parallelism) divides the routed experts, and etp x e (the experts' tensor- and expert-parallel
      ranks) divides t x c x N_d, the GPUs of one pipeline stage: Megatron-Core folds the experts' layout over the
      attention's ("world_size ... is not divisible by expert_tensor_model_pipeline_parallel size", parallel_state
      at 00caa53), so e may exceed N_d x c (Qwen3-235B's t 2, p 8, e 32 on 256 GPUs: 16 data-parallel replicas).
    """
    if shape.n_heads % setup.tp or shape.n_kv_heads % setup.tp:
        raise UsageError(
            f"tp ({setup.tp}) must divide the query heads ({shape.n_heads}) and the key-value heads "
            f"({shape.n_kv_heads}) of {shape.name}"
        )
    if setup.sequence_parallel and setup.seq_len % setup.tp:
        raise UsageError(f"sequence parallelism needs tp ({setup.tp}) to divide T ({setup.seq_len})")
    if setup.cp > 1 and setup.seq_len % (2 * setup.cp):
        raise UsageError(f"context parallelism needs 2 x cp ({2 * setup.cp}) to divide T ({setup.seq_len})")
    if setup.cp > 1 and not setup.flash:
        raise UsageError(f"context parallelism (cp {setup.cp}) needs fused attention (--flash): no ring runs unfused")
    if setup.pp_layout is not None and (setup.pp_first_layers is not None or setup.pp_last_layers is not None):
        raise UsageError("--pp-layout says every stage's layers: give it without --pp-first-layers/--pp-last-layers")
    stages = setup_stages(shape, setup)
    v = setup.virtual_stages
    if v > 1 and setup.pp_layout is not None and setup.pp == 1:
        raise UsageError("--virtual-stages needs pp > 1")
    if v > 1 and setup.pp_layout is None:
        if setup.pp == 1:
            raise UsageError("--virtual-stages needs pp > 1")
        if all(layers % v for layers in interleavable_layers(stages)):
            raise UsageError(
                f"virtual stages ({v}) must divide every stage's layers ({stages}), or each stage's layer slots "
                "where the first and last stages hold one layer fewer for the embedding and the loss"
            )
    if setup.etp is not None and shape.moe is None:
        raise UsageError(f"--etp needs a mixture-of-experts model; {shape.name} is dense")
    if setup.ep > 1 or setup.etp is not None:
        if shape.moe is None:
            raise UsageError(f"--ep needs a mixture-of-experts model; {shape.name} is dense")
        if shape.moe.n_experts % setup.ep:
            raise UsageError(f"ep ({setup.ep}) must divide the {shape.moe.n_experts} routed experts")
        stage_gpus = setup.tp * setup.cp * setup.data_parallel
        if stage_gpus % (setup.expert_tp * setup.ep):
            raise UsageError(
                f"etp x ep ({setup.expert_tp} x {setup.ep}) must divide tp x cp x data-parallel ({stage_gpus}), the "
                "GPUs of a pipeline stage: Megatron-Core folds the experts' ranks over them"
            )
    replicas_batch = setup.micro_batch * setup.data_parallel
    if setup.global_batch is not None:
        if setup.global_batch % replicas_batch:
            raise UsageError(
                f"global batch ({setup.global_batch}) must be a multiple of micro-batch x data-parallel "
                f"({setup.micro_batch} x {setup.data_parallel})"
            )
        if v > 1 and micro_batches(setup) % setup.pp:
            raise UsageError(
                f"the interleaved schedule needs the micro-batches per step ({micro_batches(setup)}) to be a "
                f"multiple of pp ({setup.pp})"
            )
    return stages


@lru_cache(maxsize=4096)  # asked for every layout a plan search prices (memory and step time), per model
def routed_expert_params(shape: ModelShape) -> int:
    """Parameters of every routed expert of every MoE layer: what expert parallelism splits."""
    if shape.moe is None:
        return 0
    return moe_layer_count(shape) * shape.moe.n_experts * params.expert_params(shape)


def dispatched_tokens(setup: TrainingSetup) -> int:
    """Tokens one GPU routes per MoE layer per micro-batch: its sequence-parallel share b T / (c t) (Megatron-Core's
    token dispatcher at 0014f13: "num_local_tokens: S/TP*B"; Megatron-LM refuses MoE with t > 1 without sequence
    parallelism), or b T / c without sequence parallelism, each of the t ranks holding every token."""
    tokens = setup.micro_batch * setup.seq_len // setup.cp
    return tokens // setup.tp if setup.sequence_parallel else tokens


def routed_copies_scale(setup: TrainingSetup) -> float:
    """How many times the balanced share of routed token copies the busiest expert-parallel rank sends, receives and
    computes: the capacity factor when experts are padded to capacity (Megatron-Core's get_capacity, "capacity =
    math.ceil((num_tokens / num_experts) * capacity_factor)", moe_utils.py), else the assumed load imbalance."""
    return setup.moe_capacity_factor if setup.moe_capacity_factor > 0 else setup.moe_load_imbalance


def all_to_all_bytes(shape: ModelShape, setup: TrainingSetup) -> int:
    """Bytes one GPU sends per MoE layer per micro-batch: each of its `dispatched_tokens` goes to k experts and comes
    back (dispatch and combine), forward and again backward, d-wide at the activation width; (e - 1)/e of the
    experts live elsewhere (Megatron-Core's all-to-all token dispatcher)."""
    if shape.moe is None or setup.ep == 1:
        return 0
    element = activations.ACTIVATION_BYTES[setup.precision]
    copies = dispatched_tokens(setup) * shape.moe.experts_per_token * routed_copies_scale(setup)
    per_pass = int(copies * shape.d_model * element) * (setup.ep - 1) // setup.ep
    return 4 * per_pass  # dispatch + combine, forward + backward


def expert_ranks_per_node(setup: TrainingSetup, node_gpus: int) -> int:
    """Ranks of one expert-parallel group a node of n GPUs holds: Megatron-Core orders the experts' ranks etp, ep,
    edp, pp ("expert_decoder_rank_generator = RankGenerator(tp=expert_tensor_parallel_size,
    ep=expert_model_parallel_size, dp=expert_data_parallel_size, pp=..., cp=1, order=order)", parallel_state at
    00caa53, order "tp-cp-ep-dp-pp"), so the e ranks sit etp apart and a node holds min(e, n / etp) of them."""
    return max(1, min(setup.ep, node_gpus // setup.expert_tp))


def all_to_all_split(shape: ModelShape, setup: TrainingSetup, node_gpus: int) -> tuple[float, float]:
    """`all_to_all_bytes` split by the link each copy crosses: (to the other GPUs of this node, to other nodes).
    A node holds `expert_ranks_per_node` ranks of the group; under uniform routing a token's k copies go to each rank
    of the group alike, (inside - 1)/e of them over the node's link and (e - inside)/e across the network.

    Node-limited routing (`moe_node_limit` M, DeepSeek-V3 with DeepEP): a token crosses the network once to each other
    node it reaches, "first ... transmitted via IB to the GPUs with the same in-node index on its target nodes.
    Once it reaches the target nodes ... instantaneously forwarded via NVLink to specific GPUs that host their target
    experts" (report §3.2.2): its network copies are the distinct other nodes its k experts sit on, in expectation
    N (1 - (1 - 1/N)^k) nodes of the group's N, at most M, times (N - 1)/N; its NVLink copies every copy but those on
    its own GPU, (e - 1)/e of k."""
    if shape.moe is None or setup.ep == 1:
        return 0.0, 0.0
    element = activations.ACTIVATION_BYTES[setup.precision]
    k = shape.moe.experts_per_token
    token_bytes = 4 * dispatched_tokens(setup) * routed_copies_scale(setup) * shape.d_model * element
    inside = expert_ranks_per_node(setup, node_gpus)
    if setup.moe_node_limit > 0 and inside < setup.ep:
        nodes = setup.ep // inside
        reached = min(float(setup.moe_node_limit), nodes * (1 - (1 - 1 / nodes) ** k))
        return token_bytes * k * (setup.ep - 1) / setup.ep, token_bytes * reached * (nodes - 1) / nodes
    copies = token_bytes * k  # dispatch + combine, fwd + bwd
    return copies * (inside - 1) / setup.ep, copies * (setup.ep - inside) / setup.ep


def expert_tp_bytes(shape: ModelShape, setup: TrainingSetup) -> float:
    """Bytes one GPU's expert-tensor-parallel collectives move per MoE layer per micro-batch: after the all-to-all
    each rank all-gathers the tokens its etp peers received and reduce-scatters the experts' outputs before the
    combine (Megatron-Core's dispatcher: "permute->A2A(EP)->AG(TP)->sort_chunk" and "sort_chunk->RS(TP)->A2A(EP)->
    unpermute", its TP group the experts' "expt_tp_group"), and the reverse backward: 4 ring passes of (etp - 1) x
    the k copies it received, d-wide. Without expert parallelism the layer's tensor-parallel collectives
    (step_time's tp_comm) stand for them; with it tp_comm's MLP half is left as it is (one copy of k: a small
    overcount)."""
    if shape.moe is None or setup.expert_tp == 1 or setup.ep == 1:
        return 0.0
    element = activations.ACTIVATION_BYTES[setup.precision]
    copies = dispatched_tokens(setup) * shape.moe.experts_per_token * routed_copies_scale(setup)
    return 4 * (setup.expert_tp - 1) * copies * shape.d_model * element


def permute_bytes(shape: ModelShape, setup: TrainingSetup) -> float:
    """Bytes one GPU's token permutations move per MoE layer per micro-batch, forward: Megatron-Core's dispatcher runs
    "permute->A2A(EP)->AG(TP)->sort_chunk(if num_local_experts>1)" and "sort_chunk(if num_local_experts>1)->RS(TP)->
    A2A(EP)->unpermute" (token_dispatcher.py at 0014f13). The permute gathers each of its T tokens' k copies into
    expert order (reads and writes T k rows), the unpermute reads the k copies back and sums them into T rows, and
    each sort over the E / e local experts reads and writes the etp T k rows the GPU received; d-wide at the
    activation width. Memory-bound, as the layer's other elementwise passes (backward twice the forward)."""
    if shape.moe is None:
        return 0.0
    element = activations.ACTIVATION_BYTES[setup.precision]
    tokens = dispatched_tokens(setup)
    copies = tokens * shape.moe.experts_per_token * routed_copies_scale(setup)
    rows = 2 * copies + (copies + tokens)  # permute: read and write k T; unpermute: read k T, write T
    if shape.moe.n_experts // setup.ep > 1:
        rows += 2 * 2 * setup.expert_tp * copies  # sort_chunk on dispatch and on combine: read and write
    return rows * shape.d_model * element
