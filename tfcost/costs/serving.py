"""Serving a model: weight and KV-cache memory per GPU, what fits, and roofline prefill and decode times.

Symbols: P prompt tokens, G generated tokens, B batch (sequences), t GPUs in tensor parallel, K key-value heads.
Tensor parallelism gives each GPU 1/t of every matmul and of the weights (assumed even); its all-reduce
traffic, activations and framework overheads are not modelled: the reserve keeps memory for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from tfcost.core import flops, memory, params, weights
from tfcost.core.layers.towers import audio_flops, image_flops
from tfcost.core.model import model_of
from tfcost.errors import TfcostError, UsageError
from tfcost.hardware.rates import (
    bandwidth_bytes_per_s,
    is_compute_bound,
    memory_bytes,
    peak_flops_per_s,
    roofline_seconds,
)
from tfcost.schema import GpuSpec, ModelShape, ServingSetup, WeightsDtype
from tfcost.units import MAX_SIZE, Dtype, ceil_div

# One weight-byte model (tfcost.core.weights): a dtype asked for here and a checkpoint's quantization_config.
WEIGHT_BITS, INT4_GROUP_SIZE, GROUP_SCALE_BYTES = (
    weights.WEIGHT_BITS,
    weights.INT4_GROUP_SIZE,
    weights.GROUP_SCALE_BYTES,
)
UNQUANTIZED_BYTES = weights.UNQUANTIZED_BYTES  # embeddings and the output head stay 16-bit under 8- and 4-bit weights


def check_generates(shape: ModelShape) -> None:
    """Serving is generation token by token from a KV cache; an encoder (BERT) has neither."""
    if shape.architecture == "encoder":
        raise TfcostError(f"{shape.name} is an encoder: it generates no tokens and keeps no KV cache to serve")


def check_tensor_parallel(shape: ModelShape, gpus: int) -> None:
    """vLLM's rule: t divides the query heads, and the key-value heads are either split (t divides K) or each
    replicated on t/K GPUs (K divides t); a Mamba-2 layer's heads (a Mamba layer's channels) are split too."""
    if shape.n_heads % gpus:
        raise UsageError(f"gpus ({gpus}) must divide the {shape.n_heads} query heads of {shape.name}")
    ssm = shape.ssm
    if ssm is not None and (ssm.n_heads if ssm.dt_rank is None else ssm.d_inner) % gpus:
        # vLLM's MambaMixer2 splits the heads (MambaMixer the channels) over the ranks
        raise UsageError(f"gpus ({gpus}) must divide the SSM heads (channels for Mamba) of {shape.name}")
    if shape.n_kv_heads % gpus and gpus % shape.n_kv_heads:
        raise UsageError(
            f"gpus ({gpus}) must divide the {shape.n_kv_heads} key-value heads of {shape.name}, or be a multiple "
            "of them"
        )


def check_parallel(shape: ModelShape, tp: int, pp: int, ep: int) -> None:
    """The pipeline and expert-parallel sizes a replica may take. pp: at most one stage a layer (vLLM's
    get_pp_indices gives every stage L // pp layers or one more); an encoder-decoder model's stages are not priced.
    ep: only for a mixture-of-experts model, dividing its routed experts, and a multiple of tp: vLLM's
    expert-parallel group is the tp x dp GPUs of a stage (docs/serving/data_parallel_deployment.md: "When TP is
    used in conjunction with DP, expert layers form an EP or TP group of size (DP x TP)")."""
    if pp > shape.n_layers:
        raise UsageError(f"pp ({pp}) must not exceed the {shape.n_layers} layers of {shape.name}")
    if pp > 1 and is_encoder_decoder(shape):
        raise UsageError(f"pp ({pp}) is not priced for an encoder-decoder model such as {shape.name}")
    if ep == 1:
        return
    if shape.moe is None:
        raise UsageError(f"ep ({ep}) needs routed experts: {shape.name} is a dense model")
    if shape.moe.n_experts % ep:
        raise UsageError(f"ep ({ep}) must divide the {shape.moe.n_experts} routed experts of {shape.name}")
    if ep % tp:
        raise UsageError(f"ep ({ep}) must be a multiple of tp ({tp}): the expert-parallel group is tp x dp GPUs")


def stage_layers(n_layers: int, pp: int) -> list[int]:
    """Layers of each pipeline stage as vLLM splits them (vllm/distributed/utils.py, get_pp_indices):
    "layers_per_partition = num_hidden_layers // pp_size" each, and the remainder one more each on the stages before
    the last ("for i in range(2, remaining_layers + 2): partitions[-i] += 1")."""
    stages = [n_layers // pp] * pp
    for i in range(2, n_layers % pp + 2):
        stages[-i] += 1
    return stages


def attention_ranks(tp: int, ep: int) -> int:
    """Attention data-parallel ranks of one stage: ep / tp when ep spans more GPUs than tp (vLLM's
    --data-parallel-size with --enable-expert-parallel: each rank runs its own batch through attention over its tp
    GPUs, and the experts are split over all tp x dp), else 1."""
    return ep // tp if ep > tp else 1


def stage_gpus(tp: int, ep: int) -> int:
    """GPUs of one pipeline stage: tp, or ep where the expert-parallel group is wider (tp x dp)."""
    return max(tp, ep)


def replica_gpus(setup: ServingSetup) -> int:
    """GPUs one replica uses: pp stages of `stage_gpus` each."""
    return setup.pp * stage_gpus(setup.gpus, setup.ep)


def step_sequences(setup: ServingSetup) -> tuple[int, int, int]:
    """(sequences the most loaded attention rank holds, micro-batches in flight, sequences one forward step carries)
    of B sequences on a replica: B over the attention ranks, then over one micro-batch in flight per pipeline stage
    (vLLM's executor: "max_concurrent_batches ... return self.parallel_config.pipeline_parallel_size"). (B, 1, B)
    without pipeline or expert parallelism."""
    held = ceil_div(setup.batch, attention_ranks(setup.gpus, setup.ep))
    in_flight = min(setup.pp, held)
    return held, in_flight, ceil_div(held, in_flight)


def layout_weight_bytes_per_gpu(
    shape: ModelShape, weights: int, dtype: WeightsDtype | None, tp: int, ep: int, group_size: int = INT4_GROUP_SIZE
) -> int:
    """The weights one GPU of each stage holds, summed over the stages: 1/t of all (`share_per_gpu`) when experts
    are split by tensor parallelism (ep <= t); with a wider expert-parallel group, the routed experts 1/ep
    (vLLM's expert parallelism gives each GPU E/ep whole experts) and the rest 1/t, replicated on each of the ep / t
    attention ranks."""
    if ep <= tp:
        return share_per_gpu(weights, tp)
    routed = routed_expert_bytes(shape, dtype, group_size)
    return share_per_gpu(weights - routed, tp) + share_per_gpu(routed, ep)


def stage_share(total: int, layers: int, n_layers: int) -> int:
    """A stage's share of what the layers hold (weights, KV cache, state): layers / L of it, rounded up. Layers
    are taken as equal; a model whose layers differ (dense first layers, sliding windows) is averaged."""
    return ceil_div(total * layers, n_layers)


def quantized_bytes(n_params: int, dtype: WeightsDtype, group_size: int = INT4_GROUP_SIZE) -> int:
    """n weights at a serving dtype (`weights.dtype_bytes`)."""
    return weights.dtype_bytes(n_params, dtype, group_size)


def quantized_params(shape: ModelShape, dtype: WeightsDtype) -> int:
    """The weights stored below 16 bits (the blocks'; embeddings and head stay 16-bit): 0 for bf16/fp16."""
    return 0 if WEIGHT_BITS[dtype] >= 8 * UNQUANTIZED_BYTES else params.non_embedding_params(shape)


def weight_bytes(shape: ModelShape, dtype: WeightsDtype, group_size: int = INT4_GROUP_SIZE) -> int:
    """Every weight at `dtype` (`weight_bytes_of`), the embeddings as tfcost.core.params counts them."""
    return weight_bytes_of(params.total_params(shape), params.embedding_params(shape), dtype, group_size)


def weight_bytes_of(total: int, embedding: int, dtype: WeightsDtype, group_size: int = INT4_GROUP_SIZE) -> int:
    """`total` weights at `dtype`. Under 8- and 4-bit weights only the blocks are quantized (the final norm rides
    along); the `embedding` weights (token and position embeddings, an untied output head) stay 16-bit, as GPTQ
    and AWQ checkpoints and vLLM's fp8 keep them."""
    if WEIGHT_BITS[dtype] >= 8 * UNQUANTIZED_BYTES:
        return quantized_bytes(total, dtype)
    return quantized_bytes(total - embedding, dtype, group_size) + embedding * UNQUANTIZED_BYTES


def served_weight_bytes(
    shape: ModelShape, dtype: WeightsDtype | None, group_size: int = INT4_GROUP_SIZE, stored: int | None = None
) -> int:
    """The weights as served: the bytes the files store (`stored`, tfcost.core.stored) when they were read, else
    at `dtype` when one is asked for, else as the model's quantized checkpoint stores them (tfcost.core.weights),
    else 16-bit."""
    if stored is not None:
        return stored
    if dtype is None:
        return weights.checkpoint_weight_bytes(shape)
    return weight_bytes(shape, dtype, group_size)


def routed_expert_bytes(shape: ModelShape, dtype: WeightsDtype | None, group_size: int = INT4_GROUP_SIZE) -> int:
    """Bytes of every routed expert as served: at `dtype` (quantized below 16 bits as the blocks are), else as the
    checkpoint's quantization stores the experts (tfcost.core.weights), else 16-bit."""
    routed = model_of(shape).routed_expert_params()
    if dtype is not None:
        return quantized_bytes(routed, dtype, group_size)
    q = shape.quantization
    if q is not None and "experts" not in q.not_converted:
        return weights.quantized_bytes(routed, q)
    return routed * UNQUANTIZED_BYTES


def unread_expert_bytes_per_gpu(
    shape: ModelShape, dtype: WeightsDtype | None, tokens: int, gpus: int, group_size: int = INT4_GROUP_SIZE
) -> int:
    """Routed expert bytes one GPU does not read in a forward pass over `tokens` tokens: in each MoE layer the experts
    no token routes to, E - E (1 - (1 - k/E)^B) of E in expectation under uniform routing (Model.untouched_expert_
    params). A decode step of one sequence reads k of E (2 of 8 for Mixtral); a large prefill nearly all. Tensor
    parallelism splits every expert over the t GPUs, so each GPU skips the same share."""
    model = model_of(shape)
    routed = model.routed_expert_params()
    if not routed:
        return 0
    unread = model.untouched_expert_params(tokens) / routed * routed_expert_bytes(shape, dtype, group_size)
    return int(unread) // gpus


def with_weights_dtype(shape: ModelShape, setup: ServingSetup) -> ServingSetup:
    """The setup with its weights' dtype made explicit: bf16 when none was asked for and the model's checkpoint is
    not quantized (a quantized one keeps None: its bytes come from the quantization_config)."""
    if setup.weights_dtype is None and shape.quantization is None:
        return setup.model_copy(update={"weights_dtype": "bf16"})
    return setup


def kernel_weights_dtype(shape: ModelShape, dtype: WeightsDtype | None) -> WeightsDtype:
    """The dtype a dequantizing kernel reads the weights at: the one asked for, else the nearest to the
    checkpoint's quantization (mxfp4 and nvfp4: fp4; 4- or 8-bit integer formats: int4, int8), else bf16."""
    if dtype is not None:
        return dtype
    q = shape.quantization
    if q is None:
        return "bf16"
    if q.method in ("mxfp4", "nvfp4"):
        return "fp4"
    if q.method == "fp8":
        return "fp8"
    return "int4" if q.bits <= 4 else "int8"


def weights_format(shape: ModelShape, dtype: WeightsDtype | None, from_files: bool = False) -> str:
    """What the weights are stored as, in words for the report."""
    if from_files:
        return "as the files store them (their headers' bytes)"
    if dtype is not None:
        return dtype
    q = shape.quantization
    return f"{q.method} (the checkpoint's quantization_config)" if q is not None else "bf16"


def share_per_gpu(total: int, gpus: int) -> int:
    """One GPU's share of the weights or of a matmul's FLOPs: tensor parallelism splits each evenly over t
    (Megatron-LM's column and row splits; the few replicated norm weights are neglected)."""
    return ceil_div(total, gpus)


def kv_heads_per_gpu(shape: ModelShape, gpus: int) -> int:
    """K/t key-value heads on each GPU, at least one (a head is replicated when t > K; llm-analysis, vLLM)."""
    return max(shape.n_kv_heads // gpus, 1)


def kv_cache_bytes_per_gpu(
    shape: ModelShape, tokens: int, batch: int, dtype: Dtype, gpus: int, encoder_tokens: int | None = None
) -> int:
    """The KV cache of B sequences of `tokens` tokens held by one of t GPUs: each cache row's share by its heads
    (memory.cache_per_position_on_gpu: K/t key-value heads, at least one; MLA's latent whole on every GPU,
    NVIDIA/TensorRT-LLM#15162). An encoder-decoder model also caches `encoder_tokens` cross keys and values."""
    return memory.kv_cache_bytes(shape, tokens, batch, dtype, encoder_tokens, gpus)


def state_bytes_per_gpu(shape: ModelShape, batch: int, dtype: Dtype, gpus: int) -> int:
    """The fixed-size recurrent state of B sequences (conv and SSM states, tfcost.core.memory.state_bytes) held by one
    of t GPUs: tensor parallelism splits Mamba's heads and channels, and so their states, over the t GPUs (vLLM's
    MambaMixer2 shards them the same way). Compressed attention's overlap state (DeepSeek-V4) belongs to its one
    shared key-value head and is replicated on every GPU, as its cache is (DeepseekV4Config's tensor-parallel plan
    keeps the attention and compressors whole)."""
    if memory.cache_steps(shape):
        return memory.state_bytes(shape, batch, dtype)
    return share_per_gpu(memory.state_bytes(shape, batch, dtype), gpus)


def usable_bytes_per_gpu(gpu: GpuSpec, reserve: float) -> int:
    """The memory a server may fill, (1 - reserve) of the GPU: vLLM's gpu_memory_utilization (0.9 by default)."""
    return int(memory_bytes(gpu) * (1 - reserve))


def kv_budget_bytes_per_gpu(usable_bytes: int, weights_bytes_per_gpu: int) -> int:
    """What is left for the KV cache once the weights are loaded; nothing when they do not fit."""
    return max(usable_bytes - weights_bytes_per_gpu, 0)


def max_batch(kv_budget_bytes: int, kv_bytes_per_sequence: int, state_bytes_per_sequence: int = 0) -> int:
    """The most whole sequences whose KV cache and recurrent state fit the budget (both are linear in B)."""
    return kv_budget_bytes // (kv_bytes_per_sequence + state_bytes_per_sequence)


def max_context(
    kv_budget_bytes: int, kv_bytes_per_token_of_batch: int, state_bytes_of_batch: int = 0, unbounded: int = 0
) -> int:
    """The longest context whose KV cache for the whole batch fits what the batch's recurrent state leaves of the
    budget (the cache is linear in tokens, the state fixed; a sliding window, where a model has one, would allow
    more). A model without a KV cache (pure Mamba) is not bounded by memory: `unbounded` if its state fits."""
    left = kv_budget_bytes - state_bytes_of_batch
    if kv_bytes_per_token_of_batch == 0:
        return unbounded if left >= 0 else 0
    return max(left, 0) // kv_bytes_per_token_of_batch


def stepped_max_context(
    shape: ModelShape, kv_budget_bytes: int, batch: int, dtype: Dtype, gpus: int, state_bytes_of_batch: int
) -> int:
    """The longest context up to which the batch's cache fits at every length, for a cache that steps every m
    positions (memory.cache_steps: compressed attention), which has no bytes per token to divide by: the largest T
    whose bound memory.kv_cache_ceiling_bytes (nondecreasing: each unclosed window counted full) fits what the
    state leaves, found by bisection over T (each point O(1))."""
    left = kv_budget_bytes - state_bytes_of_batch

    def fits(tokens: int) -> bool:
        return memory.kv_cache_ceiling_bytes(shape, tokens, batch, dtype, gpus) <= left

    if left < 0 or not fits(1):
        return 0
    if fits(MAX_SIZE):
        return MAX_SIZE
    low, high = 1, MAX_SIZE  # fits(low), not fits(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def is_encoder_decoder(shape: ModelShape) -> bool:
    """Whether the prompt goes to an encoder and generation to a decoder (T5), not both through one stack."""
    return shape.architecture == "encoder-decoder"


def cached_positions(shape: ModelShape, prompt: int, generate: int) -> tuple[int, int | None]:
    """(decoder positions, encoder positions) in the cache once G tokens are generated after a P-token prompt:
    (P + G, None) for a decoder; (G, P) for an encoder-decoder, whose decoder caches its own G positions and
    the cross-attention keys and values of the P encoder positions."""
    return (generate, prompt) if is_encoder_decoder(shape) else (prompt + generate, None)


def prefill_flops(shape: ModelShape, prompt: int, batch: int) -> int:
    """The forward pass over B prompts of P tokens, counting only the P(P+1)/2 unmasked scores (fused kernels skip
    masked tiles; nanochat's estimate_prefill_flops) and the output head for the last position only (the one
    whose next token is sampled). An encoder-decoder model encodes the P tokens and runs its decoder over the
    one start token, whose head gives the first generated token."""
    if is_encoder_decoder(shape):
        return batch * flops.forward_flops(shape, prompt, causal=True, decoder_len=1)
    parts = flops.forward_flops_breakdown(shape, prompt, causal=True)
    head = parts.get("output_head", 0)  # a headless encoder has none
    return batch * (sum(parts.values()) - head + head // prompt)


def images_prefill_flops(shape: ModelShape, setup: ServingSetup) -> int:
    """The vision tower's forward over each prompt's images (--images; their tokens are already in P), before the
    language model's prefill: B x N x one image's tower FLOPs; and the audio tower's over its audio
    (--audio-seconds)."""
    audio = audio_flops(shape, setup.audio_seconds) if setup.audio_seconds else 0
    return setup.batch * (image_flops(shape, setup.images, setup.image_size) + audio)


def decode_step_flops(shape: ModelShape, context: int, batch: int, encoder_tokens: int | None = None) -> int:
    """One new token per sequence attending to `context` positions (itself included): the difference between
    causal forward passes over `context` and `context - 1` tokens, which is exactly the last token's matmuls,
    output head included (about 2N plus 4*L*H*Q*context; nanochat's estimate_decode_flops). An encoder-decoder
    model's decoder steps at its own position `context`, reading `encoder_tokens` encoded positions."""
    if encoder_tokens is not None:
        after = flops.forward_flops(shape, encoder_tokens, causal=True, decoder_len=context)
        before = flops.forward_flops(shape, encoder_tokens, causal=True, decoder_len=context - 1)
        return batch * (after - before)
    one_token = flops.forward_flops(shape, context, causal=True) - flops.forward_flops(shape, context - 1, causal=True)
    return batch * one_token


# From two forward counts: the transformers engine -------------------------------------------------------------


def forward_coefficients(flops_at: int, flops_next: int, tokens: int) -> tuple[Fraction, Fraction]:
    """(a, b) of a forward pass's count taken as F(T) = a*T + b*T^2 (full T x T scores): a the FLOPs every token
    costs whatever the context (its matmuls and output head), b*T the FLOPs of its T-wide row of scores. Solved
    exactly from F at T and at T + 1: b = (T*F(T+1) - (T+1)*F(T)) / (T(T+1)), a = F(T)/T - b*T. A transformer's
    count is exactly this quadratic; a chunked scan or a sliding window makes it an approximation near T."""
    b = Fraction(tokens * flops_next - (tokens + 1) * flops_at, tokens * (tokens + 1))
    return Fraction(flops_at, tokens) - b * tokens, b


def prefill_flops_of(
    per_token: Fraction, per_score_row: Fraction, head_flops_per_token: int, prompt: int, batch: int
) -> int:
    """`prefill_flops` from the coefficients of `forward_coefficients`: B x (a*P + b*P(P+1)/2 - head*(P - 1)), the
    P(P+1)/2 unmasked scores of a causal prompt and the output head for its last position only."""
    per_prompt = per_token * prompt + per_score_row * prompt * (prompt + 1) / 2 - head_flops_per_token * (prompt - 1)
    return batch * round(per_prompt)


def decode_step_flops_of(per_token: Fraction, per_score_row: Fraction, context: int, batch: int) -> int:
    """`decode_step_flops` from the coefficients of `forward_coefficients`: B x (a + b * context), one token's
    matmuls and its row of `context` scores."""
    return batch * round(per_token + per_score_row * context)


def compute_dtype(weights_dtype: WeightsDtype | None, gpu: GpuSpec, shape: ModelShape | None = None) -> str:
    """The peak the matmuls run at: FP8 for fp8 weights (asked for, or a checkpoint's fp8 quantization) where the
    GPU has FP8 units (activations quantized too, as vLLM's fp8 does), otherwise 16-bit (int8, int4 and 4-bit
    formats are dequantized to 16 bits, as weight-only GPTQ/AWQ kernels do); fp32 weights run at the FP32 peak."""
    stored = shape.quantization.method if weights_dtype is None and shape and shape.quantization else weights_dtype
    if stored == "fp32":
        return "fp32"
    return "fp8" if stored == "fp8" and gpu.peak_fp8_tflops is not None else "bf16"


def effective_peak_flops_per_s(
    gpu: GpuSpec, weights_dtype: WeightsDtype | None, compute_efficiency: float, shape: ModelShape | None = None
) -> float:
    """The FLOP/s a serving kernel reaches: peak x compute efficiency (llm-analysis's flops_efficiency)."""
    dtype = compute_dtype(weights_dtype, gpu, shape)
    peak = peak_flops_per_s(gpu, dtype)
    if peak is None:
        raise TfcostError(f"the GPU table has no {dtype} peak for {gpu.name}")
    return peak * compute_efficiency


def effective_bandwidth_bytes_per_s(gpu: GpuSpec, memory_efficiency: float) -> float:
    """The bytes/s a serving kernel reaches: bandwidth x memory efficiency (llm-analysis's hbm_memory_efficiency)."""
    return bandwidth_bytes_per_s(gpu) * memory_efficiency


def bytes_moved_per_gpu(weights_bytes_per_gpu: int, kv_bytes_per_gpu: int) -> int:
    """What one forward pass moves through memory: every weight read once, plus the KV cache, written by prefill
    (the prompts' keys and values) or read by a decode step (the whole batch's cache: Scaling Book inference.md,
    weights / bandwidth + B x KV size / bandwidth; nanochat's MBU); a recurrent layer's state counts with the
    cache, read and written once a step. Activations are taken to stay on chip."""
    return weights_bytes_per_gpu + kv_bytes_per_gpu


@dataclass(frozen=True)
class Roofline:
    """One pass's work per GPU and its roofline time."""

    flops_per_gpu: int
    bytes_per_gpu: int
    seconds: float
    compute_bound: bool


def roofline(flops_per_gpu: int, bytes_per_gpu: int, peak: float, bandwidth: float) -> Roofline:
    """A pass's time, max(FLOPs / peak, bytes / bandwidth), and which term is the larger."""
    return Roofline(
        flops_per_gpu,
        bytes_per_gpu,
        roofline_seconds(flops_per_gpu, bytes_per_gpu, peak, bandwidth),
        is_compute_bound(flops_per_gpu, bytes_per_gpu, peak, bandwidth),
    )


def prefill_roofline(
    shape: ModelShape, setup: ServingSetup, weights_per_gpu: int, peak: float, bandwidth: float
) -> Roofline:
    """Prefill: the B prompts' forward pass; every weight read once (routed experts no prompt token picks excepted)
    and the prompts' keys and values written. With expert parallelism B is one attention rank's, and a GPU's E / ep
    experts meet every rank's tokens."""
    gpus, batch = setup.gpus, setup.batch
    ranks, expert_gpus = attention_ranks(gpus, setup.ep), stage_gpus(gpus, setup.ep)
    weights_per_gpu -= unread_expert_bytes_per_gpu(
        shape, setup.weights_dtype, batch * setup.prompt * ranks, expert_gpus, setup.group_size
    )
    tokens, encoder_tokens = cached_positions(shape, setup.prompt, 1 if is_encoder_decoder(shape) else 0)
    kv = kv_cache_bytes_per_gpu(shape, tokens, batch, setup.kv_dtype, gpus, encoder_tokens)
    kv += state_bytes_per_gpu(shape, batch, setup.kv_dtype, gpus)  # each prompt's final state, written once
    work = share_per_gpu(prefill_flops(shape, setup.prompt, batch) + images_prefill_flops(shape, setup), gpus)
    return roofline(work, bytes_moved_per_gpu(weights_per_gpu, kv), peak, bandwidth)


def decode_roofline(
    shape: ModelShape, setup: ServingSetup, held_per_gpu: int, peak: float, bandwidth: float
) -> Roofline:
    """A decode step at the end of generation: one token per sequence, reading what a GPU holds, every weight and the
    whole cache, but the routed experts none of the B tokens picks (`unread_expert_bytes_per_gpu`)."""
    context, encoder_tokens = cached_positions(shape, setup.prompt, setup.generate)
    ranks, expert_gpus = attention_ranks(setup.gpus, setup.ep), stage_gpus(setup.gpus, setup.ep)
    held_per_gpu -= unread_expert_bytes_per_gpu(
        shape, setup.weights_dtype, setup.batch * ranks, expert_gpus, setup.group_size
    )
    work = share_per_gpu(decode_step_flops(shape, context, setup.batch, encoder_tokens), setup.gpus)
    return roofline(work, held_per_gpu, peak, bandwidth)
