"""Training a model: its compute, wall-clock time and cost, and the memory each GPU holds.

Symbols (Korthikanti et al. 2022's, beside docs/formulas.md's): N parameters, D tokens, s = T tokens per sequence,
b micro-batch, h = d_model, a query heads, K key-value heads, Q head_dim, F d_ff, V vocab, L layers,
t tensor-parallel size, p pipeline-parallel size, N_d data-parallel size (gpus / (t*p)).
FLOPs here are model FLOPs (what MFU counts, PaLM App. B) unless called hardware FLOPs (with recomputation).
"""

from __future__ import annotations

from functools import lru_cache

from tfcost.core import activations, flops, ops, params
from tfcost.core.blocks import Block, blocks
from tfcost.core.layers import layer_ops
from tfcost.core.model import model_of
from tfcost.costs import finetune, fit, parallel
from tfcost.costs.precision import MASTER_BYTES, bytes_per_param
from tfcost.errors import TfcostError
from tfcost.hardware import rates as hardware
from tfcost.schema import GpuSpec, ModelShape, Optimizer, Precision, Recompute, TrainingSetup
from tfcost.units import ceil_div

DEFAULT_MFU = 0.4  # `train` without --mfu, --hfu or --tflops-per-gpu
CHINCHILLA_TOKENS_PER_PARAM = 20  # Hoffmann et al. 2022, Table 3: compute-optimal D is about 20 N
DEFAULT_SEQ_LEN = 4096  # `train --seq` default, never beyond the model's own context
SECONDS_PER_DAY = 86_400
SECONDS_PER_HOUR = 3_600

LOGIT_BYTES = 4  # the output logits are kept in fp32 for the loss (Korthikanti et al. 2022: 4sbv/t)
# One cross-entropy over all the fp32 logits (`--loss full`), as torchtitan computes it:
#     def loss_fn(pred, labels):
#         return torch.nn.functional.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))
#     ...
#     pred = model(input_ids); loss = loss_fn(pred, labels)
#     # need to free to before bwd to avoid peaking memory
#     del pred; loss.backward()
# log_softmax saves its fp32 output (4sbV/t); its backward takes the gradient of that output from nll_loss (a dense
# fp32 tensor of the same size) and returns the logits' fp32 gradient: three 4sbV/t tensors alive at once, with
# every layer's saved activations still held. A loss that upcasts a chunk at a time (torchtune's
# CEWithChunkedOutputLoss, LitGPT's chunked_cross_entropy) keeps the log-probabilities and a chunk's transients.
FULL_LOSS_PEAK_LOGITS = 3
# A loss compiled with its upcast (`--loss compiled`: torchtune's CEWithChunkedOutputLoss under compile=True) does not
# keep the fp32 copy: "Chunked cross entropy reduces memory by processing and upcasting one chunk at a time. This
# allows the memory to be released after the computation. If we dont chunk, then compiling model+loss together or
# independently has no difference, as long as we compile the upcasting with the loss" (torchtune PR #1390); the
# backward needs the bf16 logits themselves, 2sbV/t (a chunk's gradient beside them, 1/8 of that, is left out).
COMPILED_LOSS_LOGIT_BYTES = 2
# The head and the loss fused (`--loss fused`): Liger-Kernel's LigerFusedLinearCrossEntropyFunction
# (src/liger_kernel/ops/fused_linear_cross_entropy.py at e11c2d6) never materializes the logits of every token:
#     inc_factor = triton.cdiv(V, H)  # (V + H - 1) // H
#     chunk_size = triton.next_power_of_2(triton.cdiv(BT, inc_factor))
#     grad_input = torch.zeros_like(_input, device=device)
#     ...
#         logits_chunk = _input_chunk @ linear.t()  # chunk_size x V
#         ...
#         logits_chunk = logits_chunk.float()
#     ...
#     ctx.save_for_backward(grad_input.detach(), grad_linear.detach())
# so at its peak it holds the input's gradient (BT x H in the compute dtype, kept for the backward) and one chunk's
# fp32 logits (chunk_size x V, about BT x H by the chunk's choice). grad_linear, the head's gradient, is counted with
# the gradients when the head trains (later Liger versions allocate it only then: "torch.zeros_like(weight) if
# weight.requires_grad else None").
FUSED_LOSS_CHUNK_BYTES = 4


def default_seq_len(shape: ModelShape) -> int:
    """`train --seq` when not given (`default_seq_len_of` the model's context)."""
    return default_seq_len_of(shape.max_seq_len)


def default_seq_len_of(max_positions: int | None) -> int:
    """4,096 tokens, or the model's context if that is shorter (4,096 when a config declares none)."""
    return DEFAULT_SEQ_LEN if max_positions is None else min(DEFAULT_SEQ_LEN, max_positions)


def chinchilla_optimal_tokens(shape: ModelShape) -> int:
    """`chinchilla_optimal_tokens_of` the model's parameters."""
    return chinchilla_optimal_tokens_of(params.total_params(shape))


def chinchilla_optimal_tokens_of(n_params: int) -> int:
    """D = 20 N: compute-optimal training tokens for N parameters (Hoffmann et al. 2022, Table 3)."""
    return CHINCHILLA_TOKENS_PER_PARAM * n_params


def check_parallel_layout(shape: ModelShape, setup: TrainingSetup) -> None:
    """Megatron-LM's layout rules (`parallel.check_layout`)."""
    parallel.check_layout(shape, setup)


def compute_dtype(precision: Precision) -> str:
    """The peak the matmuls run at: fp32 under fp32 training, fp8 under fp8 (FP8 matmuls), else bf16."""
    return {"fp32": "fp32", "fp8": "fp8"}.get(precision, "bf16")


def peak_flops_per_s(gpu: GpuSpec, precision: Precision) -> float:
    """The GPU's dense peak at the training precision's compute dtype, or an error when the table has none."""
    dtype = compute_dtype(precision)
    peak = hardware.peak_flops_per_s(gpu, dtype)
    if peak is None:
        raise TfcostError(f"the GPU table has no verified {dtype} peak for {gpu.name}")
    return peak


def run_mfu(setup: TrainingSetup) -> float | None:
    """The MFU a run's wall clock comes from (--mfu, else DEFAULT_MFU), or None when --hfu or --tflops-per-gpu
    gives it instead."""
    if setup.hfu is not None or setup.tflops_per_gpu is not None:
        return None
    return DEFAULT_MFU if setup.mfu is None else setup.mfu


def defaults_notes(shape: ModelShape, setup: TrainingSetup) -> dict[str, str]:
    """What the report says about the defaults it used: Chinchilla-optimal tokens, the default T."""
    return defaults_notes_of(setup, chinchilla_optimal_tokens(shape), default_seq_len(shape))


def defaults_notes_of(setup: TrainingSetup, chinchilla_tokens: int, default_seq: int) -> dict[str, str]:
    """`defaults_notes` given the model's Chinchilla-optimal D and default T."""
    notes = {}
    if setup.tokens == chinchilla_tokens:
        notes["tokens"] = f" (Chinchilla-optimal: {CHINCHILLA_TOKENS_PER_PARAM} per parameter, the default)"
    if setup.seq_len == default_seq:
        notes["seq_len"] = f" (the default: {DEFAULT_SEQ_LEN:,}, or the model's context if shorter)"
    return notes


# Compute ---------------------------------------------------------------------------------------------------


def model_training_flops(shape: ModelShape, seq_len: int, tokens: int, lora_params: int | None = None) -> int:
    """Exact matmul FLOPs of training on D tokens in T-token sequences: 3 x forward per sequence, D/T sequences.
    The full T x T scores are counted, as MFU conventionally does (PaLM App. B, nanoGPT, torchtitan).
    Under LoRA, `finetune.lora_training_flops` (no weight gradients for the frozen base)."""
    if lora_params is not None:
        return finetune.lora_training_flops(shape, seq_len, tokens, lora_params)
    return training_flops_over(flops.training_flops(shape, seq_len), seq_len, tokens)


def training_flops_over(training_per_sequence: int, seq_len: int, tokens: int) -> int:
    """One T-token sequence's training FLOPs over D tokens: D / T sequences."""
    return training_per_sequence * tokens // seq_len


def recompute_flops(
    shape: ModelShape, seq_len: int, tokens: int, recompute: Recompute, precision: Precision = "bf16-mixed"
) -> int:
    """The forward work done again in the backward pass, over D tokens.

    selective: QK^T and AV of every layer (Korthikanti et al. 2022's selective
    recomputation; llm-analysis adds 4bs^2h per layer).
    full: every layer's forward once more, but not the output head (Narayanan et al. 2021 Eq. 3: four passes
    over the layers, three over the logits).
    selective-op: the linear rows torchtitan's op-level policy does not save (`activations.op_sac_recomputed_matmuls`:
    every second aten.mm, every FP8 or grouped-expert GEMM); attention's SDPA output is saved, never recomputed.
    """
    if recompute == "none":
        return 0
    if recompute == "selective-op":
        return op_sac_recompute_flops(shape, seq_len, tokens, precision)
    parts = flops.forward_flops_breakdown(shape, seq_len)
    if recompute == "selective":  # every attention's, an encoder-decoder's cross-attention too
        per_sequence = sum(value for key, value in parts.items() if key.endswith(("/scores", "/values")))
    else:
        per_sequence = sum(parts.values()) - parts.get("output_head", 0)
    return per_sequence * tokens // seq_len


def op_sac_recompute_flops(shape: ModelShape, seq_len: int, tokens: int, precision: Precision) -> int:
    """The forward FLOPs of the linear rows torchtitan's op-level policy recomputes, every layer, over D tokens."""
    per_sequence = sum(
        count * sum(
            ops.op_flops(op, flops.block_tokens(block, seq_len, None), seq_len, False)
            for op in activations.op_sac_recomputed_matmuls(shape, block, precision)
        )
        for block, count in blocks(shape)
    )  # fmt: skip
    return per_sequence * tokens // seq_len


@lru_cache(maxsize=256)  # step_time.layer_seconds asks for it on every call: thousands of times in a plan search
def op_sac_recompute_share(shape: ModelShape, precision: Precision) -> float:
    """The share of the layers' linear FLOPs torchtitan's op-level policy recomputes (`op_sac_recompute_flops` over
    every linear row's), independent of T: each row's FLOPs are per token."""
    seq_len = 1
    linear = sum(
        count * ops.op_flops(op, seq_len, seq_len, False)
        for block, count in blocks(shape)
        for op in layer_ops(shape, block)
        if op.kind == "linear"
    )
    return op_sac_recompute_flops(shape, seq_len, seq_len, precision) / linear if linear else 0.0


def gpu_hours(seconds: float, gpus: int) -> float:
    """GPU-hours: every GPU is held for the whole run."""
    return seconds * gpus / SECONDS_PER_HOUR


def training_cost(hours: float, price_per_gpu_hour: float) -> float:
    """What the GPU-hours cost at a price per GPU-hour."""
    return hours * price_per_gpu_hour


# Memory ----------------------------------------------------------------------------------------------------


def state_bytes_per_param(precision: Precision, optimizer: Optimizer) -> dict[str, int]:
    """Bytes each parameter costs in weights, gradients and optimizer states (`precision.bytes_per_param`)."""
    return bytes_per_param(precision, optimizer)


def model_state_bytes_per_gpu(
    n_params: int,
    precision: Precision,
    optimizer: Optimizer,
    zero: int,
    data_parallel: int,
    model_parallel: int = 1,
) -> dict[str, int]:
    """Weights, gradients and optimizer states on one GPU.

    Tensor and pipeline parallelism give each GPU 1/(t*p) of the parameters (assumed even). ZeRO then shards
    over the N_d data-parallel replicas (Rajbhandari et al. 2020 Fig. 1): stage 1 the optimizer states, stage 2
    also the gradients, stage 3 also the weights. Psi = 7.5B, N_d = 64, AdamW: 120, 31.4, 16.6, 1.9 GB.
    """
    per_param = state_bytes_per_param(precision, optimizer)

    def shard(bytes_per_param: int, sharded_from_stage: int) -> int:
        replicas = data_parallel if zero >= sharded_from_stage else 1
        return ceil_div(n_params * bytes_per_param, model_parallel * replicas)

    return {
        "weights": shard(per_param["weights"], 3),
        "gradients": shard(per_param["gradients"], 2),
        "optimizer": shard(per_param["optimizer"], 1),
    }


def activation_bytes_per_layer(
    shape: ModelShape,
    seq_len: int,
    micro_batch: int,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: Recompute = "none",
    flash: bool = False,
    precision: Precision = "bf16-mixed",
) -> int:
    """Activations the model's largest layer stores for its backward pass (Korthikanti et al. 2022 §4, Eq. 1 and
    Table 2), a fold over what its rows save (`activations.layer_activation_bytes`): sbh(34 + 5as/h) for GPT-3."""
    kinds = activations.activation_bytes_by_layer_kind(
        shape, seq_len, micro_batch, tp, sequence_parallel, recompute, flash, precision
    )
    return max(per_layer for _, _, per_layer in kinds)


def mlp_hidden_width(shape: ModelShape) -> int:
    """Hidden units a token's MLP activates: d_ff, or in an MoE block its k routed experts and the shared ones
    (the MoE blocks' width is used for every layer, dense ones included)."""
    if shape.moe is None:
        return shape.d_ff
    moe = shape.moe
    return moe.experts_per_token * moe.expert_d_ff + moe.n_shared_experts * moe.shared_width


def logits_bytes(shape: ModelShape, seq_len: int, micro_batch: int, tp: int) -> int:
    """The fp32 logits of one micro-batch, split over t by the vocabulary-parallel head: 4sbV/t; none for a
    model without a vocabulary head (a base encoder)."""
    if shape.head == "none":
        return 0
    return ceil_div(LOGIT_BYTES * seq_len * micro_batch * shape.vocab_size, tp)


def activation_bytes_per_gpu(shape: ModelShape, setup: TrainingSetup) -> int:
    """Activations on the busiest GPU.

    Under the 1F1B schedule stage i (from 0) holds min(m, p - i) micro-batches in flight, each through its own
    layers: the first stage L layers' worth whatever p is when stages are even (Korthikanti et al. 2022; it
    assumes at least p micro-batches per step). The interleaved schedule holds 1 + (p - 1)/(p v) times that
    (`parallel.in_flight_factor`). Context parallelism gives each GPU T / cp of every sequence.
    With p = 1 that GPU holds every layer, each kind's own bytes (an encoder-decoder model's both stacks), and also
    computes the logits, 4sbV/t; with p > 1 a stage's layers are each counted as the largest kind (an upper bound
    where kinds differ: which kinds a stage holds is not placed).
    """
    layers = layers_activation_bytes(shape, setup)
    if setup.offload_activations:
        layers -= offloaded_activation_bytes(shape, setup)
    return layers + loss_or_recompute_bytes(shape, setup)


def recompute_working_bytes(shape: ModelShape, setup: TrainingSetup) -> int:
    """Under full recomputation a layer's backward first runs its forward again with autograd on, so that layer
    holds what it would save without recomputation until its backward is done (torch.utils.checkpoint: "forward
    computation in checkpointed regions omits saving tensors for backward and recomputes them during the backward
    pass"; Unsloth's checkpointer: "with torch.enable_grad(): (output,) = ctx.forward_function(hidden_states,
    *ctx.args)"): one layer's saved tensors beyond the input already kept. 0 under other policies (not counted)."""
    if setup.recompute != "full":
        return 0
    whole = max(
        per_layer
        for _, _, per_layer in activation_bytes_by_layer_kind_of(shape, setup.model_copy(update={"recompute": "none"}))
    )
    return max(whole - activation_bytes_per_layer_of(shape, setup), 0)


# A gated MLP's backward: PyTorch's derivative of act(gate) * up (tools/autograd/derivatives.yaml at e7cd59c,
# L840-843: "- name: mul.Tensor(Tensor self, Tensor other) -> Tensor", "self: mul_tensor_backward(grad, other,
# self.scalar_type())", "other: mul_tensor_backward(grad, self, other.scalar_type())") makes both inputs' gradients
# from the incoming one, so three hidden-wide gradients are alive at once, beside the layer's saved tensors.
GATED_MLP_BACKWARD_GRADIENTS = 3


def backward_transient_bytes(shape: ModelShape, setup: TrainingSetup) -> int:
    """The gradients a layer's backward holds beyond what the layers saved: a gated MLP's three hidden-wide ones
    (GATED_MLP_BACKWARD_GRADIENTS) in the activations' dtype, the hidden units split over t. 0 for other MLPs (not
    counted)."""
    if shape.mlp != "gated":
        return 0
    tokens = setup.micro_batch * setup.seq_len // setup.cp
    element = activations.ACTIVATION_BYTES[setup.precision]
    return GATED_MLP_BACKWARD_GRADIENTS * tokens * ceil_div(mlp_hidden_width(shape), setup.tp) * element


def loss_or_recompute_bytes(shape: ModelShape, setup: TrainingSetup) -> int:
    """What the busiest GPU holds beside the layers' saved tensors at its peak: the loss's logit tensors (at the
    loss's backward, before any layer's) or, later, a layer's backward: its gradients in flight
    (backward_transient_bytes) and, when fully recomputed, its tensors; whichever is larger: the loss's are freed
    once the head's backward has used their gradient."""
    layer = recompute_working_bytes(shape, setup) + backward_transient_bytes(shape, setup)
    return max(last_stage_logits_bytes(shape, setup), layer)


def layers_activation_bytes(shape: ModelShape, setup: TrainingSetup) -> int:
    """What the busiest GPU's layers save for the backward pass (`activation_bytes_per_gpu` less the logits)."""
    stages = parallel.setup_stages(shape, setup)
    in_flight = min(parallel.micro_batches(setup), setup.pp) if setup.global_batch is not None else setup.pp
    busiest = max(min(in_flight, setup.pp - i) * layers for i, layers in enumerate(stages))
    factor = parallel.in_flight_factor(setup.pp, setup.virtual_stages)
    kinds = activation_bytes_by_layer_kind_of(shape, setup)
    if setup.pp == 1:
        layers_bytes = sum(count * per_layer for _, count, per_layer in kinds)
    else:
        layers_bytes = max(per_layer for _, _, per_layer in kinds) * busiest
    return round(layers_bytes * factor)


def offloaded_activation_bytes(shape: ModelShape, setup: TrainingSetup) -> int:
    """What `--offload-activations` moves to host memory: every layer's saved activations but one layer's, the
    largest, which the backward brings back to use. torchtune's activation offloading (get_act_offloading_ctx_manager,
    around the model's forward; the loss runs outside it): "All but the last output Linear in every step will be
    offloaded", so the logits the loss keeps stay on the GPU."""
    if not setup.offload_activations:
        return 0
    layers = layers_activation_bytes(shape, setup)
    return layers - min(layers, activation_bytes_per_layer_of(shape, setup))


def activation_bytes_by_layer_kind_of(shape: ModelShape, setup: TrainingSetup) -> tuple[tuple[Block, int, int], ...]:
    """`activations.activation_bytes_by_layer_kind` under a training setup: (kind, layers, bytes of one)."""
    return activations.activation_bytes_by_layer_kind(
        shape, setup.seq_len // setup.cp, setup.micro_batch, setup.tp, setup.sequence_parallel, setup.recompute,
        setup.flash, setup.precision, setup.dropout,
    )  # fmt: skip


def activation_bytes_per_layer_of(shape: ModelShape, setup: TrainingSetup) -> int:
    """`activation_bytes_per_layer` under a training setup: the largest layer kind's."""
    return max(per_layer for _, _, per_layer in activation_bytes_by_layer_kind_of(shape, setup))


def last_stage_logits_bytes(shape: ModelShape, setup: TrainingSetup) -> int:
    """The logits on the busiest GPU: only when it is also the last pipeline stage (p = 1); under `--loss full` the
    three fp32 logit-sized tensors of the loss's backward (FULL_LOSS_PEAK_LOGITS), under `--loss compiled` the bf16
    logits alone (COMPILED_LOSS_LOGIT_BYTES)."""
    if setup.pp > 1:
        return 0
    fp32 = logits_bytes(shape, setup.seq_len // setup.cp, setup.micro_batch, setup.tp)
    if setup.loss == "compiled":
        return fp32 * COMPILED_LOSS_LOGIT_BYTES // LOGIT_BYTES
    if setup.loss == "fused":
        return fused_loss_bytes(shape, setup) if fp32 else 0
    return FULL_LOSS_PEAK_LOGITS * fp32 if setup.loss == "full" else fp32


def fused_loss_bytes(shape: ModelShape, setup: TrainingSetup) -> int:
    """What a fused head-and-loss kernel holds (`--loss fused`, FUSED_LOSS_CHUNK_BYTES): the input's gradient, BT x H
    in the activations' dtype, and one chunk of next_power_of_2(ceil(BT / ceil(V / H))) tokens' fp32 logits; the
    vocabulary split over t as the head is."""
    tokens = setup.micro_batch * setup.seq_len // setup.cp
    width, vocab = shape.d_model, shape.vocab_size
    chunk = min(tokens, 1 << max(ceil_div(tokens, ceil_div(vocab, width)) - 1, 0).bit_length())
    element = activations.ACTIVATION_BYTES[setup.precision]
    return tokens * width * element + ceil_div(FUSED_LOSS_CHUNK_BYTES * chunk * vocab, setup.tp)


def trainable_params(shape: ModelShape, setup: TrainingSetup) -> int:
    """Every parameter, or under LoRA only the adapters'."""
    if setup.lora_rank is None:
        return params.total_params(shape)
    return finetune.lora_params(shape, setup.lora_rank, setup.lora_targets)


def largest_weight_params(shape: ModelShape) -> int:
    """The biggest single weight matrix (Model.largest_matrix_params: the embedding or head, an MLP matrix, one
    expert's, the query projection). Under optimizer-in-backward only one parameter's gradient is alive at a time."""
    return model_of(shape).largest_matrix_params()


def zero3_gathered_bytes(layer_params: int, setup: TrainingSetup) -> int:
    """What ZeRO-3 holds gathered besides each GPU's shard: the layer in use and the one prefetched (DeepSpeed's
    live-parameter caps, `fit.zero3_live_params`), each GPU's 1/t of them, at the weights' bytes."""
    live = fit.zero3_live_params(ceil_div(layer_params, setup.tp))
    return live * bytes_per_param(setup.precision, setup.optimizer)["weights"]


# FSDP2 accumulates a gradient it does not reduce-scatter yet in the reduce dtype (torch.distributed.fsdp
# _fully_shard/_fsdp_param.py, FSDPParam.to_accumulated_grad_if_needed:
#     self.unsharded_accumulated_grad = unsharded_grad.to(self.reduce_dtype)
# ), fp32 by torchtitan's default: `mixed_precision_reduce: Literal["float32"] = "float32"`.
ACCUMULATED_GRADIENT_BYTES = 4


def uses_fsdp2(setup: TrainingSetup) -> bool:
    """FSDP2's copies (`fsdp2`, a framework's convention) are paid only where it shards the weights: ZeRO-3."""
    return setup.fsdp2 and setup.zero == 3


def gathers_float8(setup: TrainingSetup) -> bool:
    """torchao's float8 all-gather (`fsdp_float8_all_gather`) runs only where FSDP gathers FP8 linear weights."""
    return setup.fsdp_float8_all_gather and setup.zero == 3 and setup.precision == "fp8"


def keeps_frozen_gradients(setup: TrainingSetup) -> bool:
    """FSDP1's flat parameters give a LoRA run's frozen layers gradients (`frozen_gradients`) only under ZeRO-3."""
    return setup.frozen_gradients and setup.zero == 3 and setup.lora_rank is not None


def keeps_weights_gathered(setup: TrainingSetup) -> bool:
    """Whether ZeRO-3 / FSDP keeps every layer's gathered weights from its forward to its backward
    (reshard_after_forward=False). torchtitan's default does under pipeline parallelism
    (torchtitan/parallelisms/parallelize_llama.py, apply_fsdp):
        if pp_enabled:
            # For PP, do not reshard after forward to avoid per-microbatch
            # all-gathers, which can be expensive and non-overlapped
            reshard_after_forward = False
    and --parallelism.fsdp_reshard_after_forward always|never overrides it ("never" will disable
    `reshard_after_forward` for all forward passes)."""
    if setup.reshard_after_forward == "default":
        return setup.pp > 1
    return setup.reshard_after_forward == "never"


def accumulates_unsharded_gradients(setup: TrainingSetup) -> bool:
    """Whether FSDP holds the gradients unsharded through the step, reduce-scattering them at the last micro-batch's
    backward only. Under pipeline parallelism always (torch.distributed.pipelining, PipelineStage):
        self.submod.set_is_last_backward(last_backward)
        self.submod.set_requires_gradient_sync(last_backward)
    DeepSpeed's ZeRO-3 never runs under its pipeline engine ("ZeRO-2 and ZeRO-3 are incompatible with pipeline
    parallelism", deepspeed/runtime/pipe/engine.py), so ZeRO-3 with p > 1 is FSDP's. Without it, when the trainer
    accumulates under no_sync (`--accumulate-unsharded`; LitGPT's `with fabric.no_backward_sync(model,
    enabled=is_accumulating)`): "This likely results in higher memory usage because FSDP will accumulate the full
    model gradients (instead of gradient shards) until the eventual sync" (FullyShardedDataParallel.no_sync).
    With one micro-batch per step its backward is the last; without a global batch a pipelined step is taken to
    have at least p micro-batches, as the activations' 1F1B count does. Not under `reduce_every_micro_batch`
    (`shards_accumulated_gradients`), which syncs every micro-batch."""
    if shards_accumulated_gradients(setup):
        return False
    if setup.pp == 1 and not setup.accumulate_unsharded:
        return False
    if setup.global_batch is None:
        return setup.pp > 1
    return parallel.micro_batches(setup) > 1


def gpu_share_params(shape: ModelShape, setup: TrainingSetup, n_params: int) -> int:
    """Of `n_params` (all the model's or its trainable ones), those one GPU holds before ZeRO shards them over the
    data-parallel ranks: 1/(t p), the routed experts (of full training) 1/(etp p e), etp their own tensor-parallel
    size (t unless told)."""
    split = setup.ep > 1 or setup.expert_tp != setup.tp
    experts = parallel.routed_expert_params(shape) if split and setup.lora_rank is None else 0
    return ceil_div(n_params - experts, setup.tp * setup.pp) + ceil_div(experts, setup.expert_tp * setup.pp * setup.ep)


def gathered_weight_bytes(shape: ModelShape, setup: TrainingSetup) -> int:
    """ZeRO-3 weights gathered on one GPU when none is freed after its forward: all of its 1/(t p) share (assumed
    even over the stages) at the weights' bytes, beside its shard; under LoRA the frozen base too (FSDP gathers it)."""
    if setup.lora_rank is not None:
        adapters = gpu_share_params(shape, setup, trainable_params(shape, setup))
        base = ceil_div(finetune.frozen_base_bytes(shape, setup.qlora), setup.tp * setup.pp)
        return base + adapters * bytes_per_param(setup.precision, setup.optimizer)["weights"]
    weights = bytes_per_param(setup.precision, setup.optimizer)["weights"]
    return gpu_share_params(shape, setup, params.total_params(shape)) * weights


def root_unit_params(shape: ModelShape) -> int:
    """The parameters of FSDP's root unit when every layer is a unit of its own (torchtitan's apply_fsdp, torchtune's
    shard_model, LitGPT's auto_wrap_policy={Block}): all but the layers' (the embedding, the final norm, the head),
    the language model's only."""
    layers = sum(params.params_by_layer_kind(shape).values())
    return params.total_params(shape) - layers - params.towers_params(shape)


def root_gathered_bytes(shape: ModelShape, setup: TrainingSetup) -> int:
    """ZeRO-3 as FSDP runs it keeps the root unit's weights gathered from its forward to its backward, each GPU's 1/t
    of them (the vocabulary-parallel embedding and head) at the weights' bytes (bf16 under LoRA: the frozen base).
    FSDP2's fully_shard: "The root FSDP state has its value specially set to ``False`` as a heuristic since its
    parameters would typically be immediately all-gathered for backward"; FSDP1 (_runtime_utils._post_forward_reshard):
    "Do not free the root's parameters in the post-forward for `FULL_SHARD` with the intention that they are
    immediately used for backward computation". None when every layer stays gathered anyway (`keeps_weights_gathered`,
    which counts the root with them) and under pipeline parallelism, whose stages are not placed."""
    return root_gathered_bytes_of(root_unit_params(shape), setup)


def root_gathered_bytes_of(root_params: int, setup: TrainingSetup) -> int:
    """`root_gathered_bytes` for a root unit of `root_params` parameters (the transformers engine's count)."""
    if setup.zero != 3 or setup.pp > 1 or keeps_weights_gathered(setup):
        return 0
    lora_base = setup.lora_rank is not None
    element = finetune.BASE_BYTES if lora_base else bytes_per_param(setup.precision, setup.optimizer)["weights"]
    return ceil_div(root_params, setup.tp) * element


def gradient_params(shape: ModelShape, setup: TrainingSetup) -> int:
    """The parameters that get gradients: the trainable ones; under `--frozen-gradients` also every layer's frozen
    weights, which FSDP1 flattens into one parameter with its adapters when they share a unit (LitGPT 8641822's
    FSDPStrategy(auto_wrap_policy={Block}, ...), use_orig_params=True by Lightning's default): "For
    use_orig_params=True, FSDP supports mixing frozen and non-frozen, but we recommend not doing so since then the
    gradient memory usage will be higher than expected (namely, equivalent to not freezing those parameters)"
    (torch.distributed.fsdp.FullyShardedDataParallel). The embedding and head, in the root unit without adapters,
    stay without."""
    trainable = trainable_params(shape, setup)
    if not keeps_frozen_gradients(setup):
        return trainable
    return trainable + sum(params.params_by_layer_kind(shape).values())


def unsharded_gradient_bytes(shape: ModelShape, setup: TrainingSetup) -> int:
    """The gradients FSDP accumulates unsharded over a step's micro-batches: one GPU's 1/(t p) share of the
    parameters that get gradients, fp32 under mixed precision (ACCUMULATED_GRADIENT_BYTES: FSDP2's reduce dtype;
    FSDP1 is taken to do the same), else the gradients' own bytes."""
    mixed = MASTER_BYTES[setup.precision] > 0
    element = ACCUMULATED_GRADIENT_BYTES if mixed else bytes_per_param(setup.precision, setup.optimizer)["gradients"]
    return gpu_share_params(shape, setup, gradient_params(shape, setup)) * element


def data_parallel_memory_per_gpu(
    n_params: int, layer_params: int, activations: int, setup: TrainingSetup, root_params: int = 0
) -> dict[str, int]:
    """Weights, gradients, optimizer states and activations per GPU, and their total, under data parallelism alone
    (ZeRO over all the GPUs), for a model known by its totals (the transformers engine's): N parameters, the largest
    layer's and the root unit's (`root_gathered_bytes`) for ZeRO-3, and its activations as measured."""
    parts = model_state_bytes_per_gpu(n_params, setup.precision, setup.optimizer, setup.zero, setup.gpus)
    if setup.zero == 3:
        parts["weights"] += zero3_gathered_bytes(layer_params, setup) + root_gathered_bytes_of(root_params, setup)
    parts["activations"] = activations
    parts["total"] = sum(parts.values())
    return parts


def measured_activation_bytes(saved: int, scores: int, flash: bool) -> int:
    """Activations measured (what autograd saved in one training forward, the transformers engine's), less the T x T
    scores under fused attention: FlashAttention stores none of them."""
    return saved - scores if flash else saved


def frozen_base_bytes_per_gpu(shape: ModelShape, setup: TrainingSetup) -> int:
    """The frozen base (bf16, or NF4 under QLoRA) on one GPU: split over t x p, and under ZeRO-3 / FSDP sharded over
    the N_d x c data-parallel ranks too, as FSDP shards every parameter whether it trains or not: FSDP-QLoRA shards
    the NF4 base, "that can train a 70b model on two 24GB GPUs" (answer.ai/posts/2024-03-06-fsdp-qlora)."""
    shards = setup.tp * setup.pp * (setup.data_parallel * setup.cp if setup.zero == 3 else 1)
    return ceil_div(finetune.frozen_base_bytes(shape, setup.qlora), shards)


# Megatron-LM accumulates and reduces the gradients of a 16-bit run in an fp32 buffer, its main_grads:
#     # bfloat16 requires gradient accumulation and all-reduce to
#     # be done in fp32.
#     if not args.accumulate_allreduce_grads_in_fp32:
#         args.accumulate_allreduce_grads_in_fp32 = True
# (megatron/training/arguments.py), so its own estimate counts 18 bytes a parameter, 6 + 12 / N_d with the
# distributed optimizer: "num_bytes_per_parameter = (18 if not args.use_distributed_optimizer else 6 + (12 /
# args.data_parallel_size))" (megatron/training/theoretical_memory_usage.py): 16-bit weights, fp32 gradients, the
# fp32 master copy and two moments. Llama 3 holds the same: "we use FP32 gradients accumulation during backward
# computation over multiple micro-batches" (Dubey et al. 2024 §3.3.2).
MAIN_GRADIENT_BYTES = 4


def main_gradient_bytes(gradients: int, setup: TrainingSetup) -> int:
    """`gradients` (the bytes a GPU holds at the precision's gradient width) held as fp32 main gradients instead
    (`--memory-convention megatron`), under mixed precision; a precision without a master copy keeps its own."""
    width = bytes_per_param(setup.precision, setup.optimizer)["gradients"]
    if MASTER_BYTES[setup.precision] == 0 or width >= MAIN_GRADIENT_BYTES:
        return gradients
    return gradients * MAIN_GRADIENT_BYTES // width


# FSDP reduce-scatters each micro-batch's gradients unless told not to sync (no_sync), and accumulates the shards:
# fairscale's FullyShardedDataParallel.no_sync: "This likely results in higher memory usage because FSDP will
# accumulate the full model gradients (instead of gradient shards) until the eventual sync. ... Gradient accumulation
# can be done without this context, avoiding the extra GPU memory overhead, but with the extra networking overhead."
# Llama 3 ran FSDP so under pipeline parallelism: "Our use of FSDP for Llama 3 shards optimizer states and gradients,
# but for model shards we do not reshard after forward computation"; "we use FP32 gradient accumulation during
# backward computation over multiple micro-batches and also reduce-scatter gradients in FP32 across data parallel
# workers in FSDP"; "DP (i.e., FSDP) is the outermost parallelism because it can tolerate longer network latency by
# asynchronously prefetching sharded model weights and reducing gradients" (Dubey et al. 2024 §3.3.2).
def shards_accumulated_gradients(setup: TrainingSetup) -> bool:
    """Whether ZeRO-2 or 3 accumulates the step's gradients sharded, reduce-scattering each micro-batch's
    (the setup's `reduce_every_micro_batch`; the extra reduce-scatters are priced in step_time.dp_seconds)."""
    return setup.reduce_every_micro_batch and setup.zero >= 2


def held_zero_stage(setup: TrainingSetup) -> int:
    """The ZeRO stage the model states are held at through a step: `setup.zero`, except that ZeRO-2 under pipeline
    parallelism with more than one micro-batch holds its gradients unsharded, as ZeRO-1: the stage accumulates every
    micro-batch's gradients before one reduce-scatter. No framework shards them sooner there: DeepSpeed's pipeline
    engine refuses it ("ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism",
    deepspeed/runtime/pipe/engine.py); Megatron-LM's distributed optimizer shards only the optimizer states
    ("num_bytes_per_parameter = 18 if not args.use_distributed_optimizer else 6 + (12 / args.data_parallel_size)",
    megatron/training/theoretical_memory_usage.py); FSDP under torch.distributed.pipelining reduce-scatters at the
    last micro-batch's backward only (`set_requires_gradient_sync(last_backward)`), and Llama 3 "use[s] FP32 gradient
    accumulation during backward computation over multiple micro-batches and also reduce-scatter[s] gradients in FP32
    across data parallel workers in FSDP" (Dubey et al. 2024 §3.3.2). ZeRO-3 is left as it is. Without a global
    batch the step is taken to have more than one micro-batch, as the activations' 1F1B count takes p.

    Except under `reduce_every_micro_batch` (`shards_accumulated_gradients`): FSDP without no_sync reduce-scatters
    every micro-batch's gradients and accumulates the shards, as Llama 3's FSDP did."""
    if shards_accumulated_gradients(setup):
        return setup.zero
    if setup.zero == 2 and setup.pp > 1 and (setup.global_batch is None or parallel.micro_batches(setup) > 1):
        return 1
    return setup.zero


def memory_per_gpu(shape: ModelShape, setup: TrainingSetup, activations: int | None = None) -> dict[str, int]:
    """Everything the busiest GPU holds: weights, gradients, optimizer states and activations, and their total;
    and what lives in host memory instead ("host"). `activations`: this setup's `activation_bytes_per_gpu` when the
    caller has it (a plan search reuses it across ZeRO stages and offloads, which do not change it).

    Optimizer-in-backward (torchtune's optimizer_in_bwd): each parameter is stepped as soon as its gradient is
    complete and the gradient freed, so only the largest one is alive at once. A paged optimizer's states sit in
    host memory; ZeRO-Offload's optimizer states (master copy included, Ren et al. 2021) and gradients too;
    offloading params (ZeRO-Infinity, FSDP's CPU offload) moves the weights there as well, but for the layers
    ZeRO-3 gathers for compute. Under `--memory-convention deepspeed` (ZeRO-2 and 3, no LoRA) the model states are
    DeepSpeed's estimators' (`fit.deepspeed_model_states`).
    """
    trainable = trainable_params(shape, setup)
    replicas = setup.data_parallel * setup.cp
    split = setup.ep > 1 or setup.expert_tp != setup.tp
    experts = parallel.routed_expert_params(shape) if split and setup.lora_rank is None else 0
    zero = held_zero_stage(setup)
    parts = model_state_bytes_per_gpu(
        trainable - experts, setup.precision, setup.optimizer, zero, replicas, setup.tp * setup.pp
    )
    if experts:  # expert parallelism: each GPU holds 1/(etp e) of the routed experts, ZeRO (the distributed
        # optimizer, FSDP) shards them over the experts' data-parallel group, gpus / (etp e p) ranks (Megatron-Core
        # parallel_state's expert_data_parallel_size: t c N_d / (etp e))
        sharded = model_state_bytes_per_gpu(
            experts, setup.precision, setup.optimizer, zero, setup.expert_data_parallel,
            setup.expert_tp * setup.pp * setup.ep,
        )  # fmt: skip
        parts = {key: parts[key] + sharded[key] for key in parts}
    if setup.memory_convention == "deepspeed" and setup.zero in (2, 3) and setup.lora_rank is None:
        parts, host = fit.deepspeed_model_states(
            ceil_div(trainable, setup.tp * setup.pp), setup.zero, setup.data_parallel * setup.cp,
            ceil_div(largest_weight_params(shape), setup.tp), setup.offload,
        )  # fmt: skip
        parts["activations"] = activation_bytes_per_gpu(shape, setup) if activations is None else activations
        parts["total"] = sum(parts.values())
        parts["host"] = host
        return parts
    if setup.lora_rank is not None:  # the frozen base besides the adapters' own weights
        parts["weights"] += frozen_base_bytes_per_gpu(shape, setup)
    if keeps_frozen_gradients(setup):  # the layers' frozen weights get sharded gradients too (FSDP1's flat parameters)
        per_param = bytes_per_param(setup.precision, setup.optimizer)["gradients"]
        parts["gradients"] = ceil_div(gradient_params(shape, setup) * per_param, setup.tp * setup.pp * replicas)
    if setup.optimizer_in_backward:
        per_param = bytes_per_param(setup.precision, setup.optimizer)["gradients"]
        parts["gradients"] = min(parts["gradients"], ceil_div(largest_weight_params(shape) * per_param, setup.tp))
    if setup.memory_convention == "megatron":
        parts["gradients"] = main_gradient_bytes(parts["gradients"], setup)
    host = 0
    if setup.offload != "none" or setup.optimizer.startswith("paged-"):
        host += parts["optimizer"]
        parts["optimizer"] = 0
    if setup.offload != "none":
        # ZeRO-Offload moves the gradients with the optimizer states: DeepSpeed's ZeRO-2 estimator keeps only the
        # 16-bit weights on the GPU under cpu_offload (`gpu_mem = 2 * total_params`, tfcost.costs.fit); FSDP's
        # CPUOffload(offload_params=True) "implicitly enables gradient offloading to CPU in order for params and
        # grads to be on same device to work with optimizer" (PyTorch FSDP docs).
        host += parts["gradients"]
        parts["gradients"] = 0
    if setup.offload == "params":
        host += parts["weights"]
        parts["weights"] = 0
    if setup.zero == 3 and keeps_weights_gathered(setup):
        parts["weights"] += gathered_weight_bytes(shape, setup)
    elif setup.zero == 3 or setup.offload == "params":  # the layers gathered (or streamed in) for compute stay
        parts["weights"] += zero3_gathered_bytes(params.params_per_layer(shape), setup)
    parts["weights"] += root_gathered_bytes(shape, setup)  # FSDP's root unit: gathered from forward to backward
    if setup.zero == 3 and accumulates_unsharded_gradients(setup):  # until the last backward's reduce-scatter
        parts["gradients"] = max(parts["gradients"], unsharded_gradient_bytes(shape, setup))
    parts["activations"] = activation_bytes_per_gpu(shape, setup) if activations is None else activations
    parts["total"] = sum(parts.values())
    parts["host"] = host + offloaded_activation_bytes(shape, setup)
    return parts
