"""What a serving engine is expected to reach, beside the roofline bound: the rates real kernels achieve, and the
costs a roofline leaves out (per-step floor, tensor-parallel all-reduces, dequantization, paged KV blocks, the
CUDA context and the activation workspace).

Each default below names its source. A profile measured on the user's machine (`tfcost measure --roofline
--save-profile NAME`) replaces the table-derived rates with measured ones (tfcost.costs.profiles builds them).

Symbols: L layers, d d_model, t tensor-parallel GPUs, B batch, P prompt tokens, n quantized weights per GPU.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import pairwise

from pydantic import BaseModel, ConfigDict, Field

from tfcost.core import activations, flops, params
from tfcost.core.blocks import blocks, moe_layer_count
from tfcost.core.layers import head_ops, layer_ops
from tfcost.core.model import model_of
from tfcost.core.ops import Op, op_flops, op_params
from tfcost.costs import efficiency, fitted
from tfcost.costs.serving import UNQUANTIZED_BYTES, WEIGHT_BITS
from tfcost.hardware.rates import bandwidth_bytes_per_s, peak_flops_per_s
from tfcost.schema import GpuSpec, ModelShape, WeightsDtype
from tfcost.units import GIB, ceil_div

# Fraction of the datasheet bandwidth that weight- and KV-streaming decode kernels reach at small batch.
# llm-analysis's README: efficiencies "up to ... 0.7 for inference" reported in the literature; the survey:
# 0.65-0.75 of peak at batch 1. (Not fitted to gpt-fast: with it, Llama-2-7B bf16 comes out 5% under gpt-fast.)
BANDWIDTH_FRACTION = 0.7
BANDWIDTH_FRACTION_SOURCE = "0.7 of datasheet bandwidth (llm-analysis README: ~0.7 reported for inference)"
# Fraction of the dense tensor peak that large (prefill) matmuls and fused attention reach: FlashAttention-2 §4.1,
# forward up to 230 of 312 TFLOP/s on A100 (73%); FlashAttention-2 Table 1, GPT3-2.7B end to end 72% MFU.
MATMUL_FRACTION = 0.7
MATMUL_FRACTION_SOURCE = "0.7 of the dense tensor peak (FlashAttention-2: 73% forward, 72% MFU end to end, A100)"
# The time floor of one GPU kernel replayed in a CUDA graph (vLLM and gpt-fast capture decode in CUDA graphs).
# An assumption (no published per-kernel figure was verified); `measure --roofline` measures it on your machine.
KERNEL_FLOOR_S = 2e-6
KERNEL_FLOOR_SOURCE = "2 us per kernel (assumed; a profile measures it)"
# Kernels one decoder layer launches in a fused engine: 2 norms, QKV, rotary, KV-cache write, attention, output
# projection, gate-up, activation, down projection (vLLM's Llama layer); plus 2 for the final norm and head.
KERNELS_PER_LAYER = 10
KERNELS_OUTSIDE_LAYERS = 2
# Ops a weight-only kernel spends dequantizing one weight on the CUDA cores: int8 convert and scale (2); int4
# shift/mask, convert, subtract the zero point, scale (4); fp4 table lookup, convert, scale (3). GPTQ/AWQ/Marlin
# and gpt-fast's int8/int4 kernels all dequantize in registers before the matmul.
DEQUANT_OPS_PER_WEIGHT: dict[WeightsDtype, int] = {"int8": 2, "int4": 4, "fp4": 3}
# NCCL's latency model (src/graph/tuning.cc, quoted in NVIDIA/nccl#1334): a ring all-reduce costs a base latency
# (baseLat, Ring LL: 6.6 us) plus 2(t-1) hops of the link's latency; DGX-A100 ring all-reduce measured 10 us at
# t = 2 and 33.7 us at t = 8 (NVIDIA/nccl-tests#123), the model gives 7.8 and 15 us with the LL protocol.
ALLREDUCE_BASE_LATENCY_S = 6.6e-6
ALLREDUCES_PER_LAYER = 2  # Megatron-LM: one after attention's row-parallel output, one after the MLP's
ACTIVATION_BYTES = activations.ACTIVATION_BYTES["bf16"]  # bf16 activations travel in the all-reduce
# The CUDA context and library handles (cuBLAS, NCCL) take memory outside PyTorch's allocator: vLLM counts it as
# "non-torch memory" in its profile run. 0.5 GiB is an assumption (it varies by driver and GPU); a profile may
# record it.
CUDA_CONTEXT_BYTES = GIB // 2
LOGITS_BYTES = 4  # logits are kept in fp32 for sampling (vLLM's sampler upcasts)


class EngineRates(BaseModel):
    """The rates `expected` uses, per GPU, each with where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stream_bytes_per_s: float = Field(gt=0, description="bandwidth decode kernels reach streaming weights and KV")
    matmul_flops_per_s: float = Field(gt=0, description="FLOP/s large (prefill) matmuls reach")
    attention_flops_per_s: float | None = Field(
        default=None, gt=0, description="FLOP/s the fused attention kernel reaches (None: the matmul rate)"
    )
    matmul_by_rows: tuple[tuple[int, float], ...] = Field(
        default=(), description="(M, FLOP/s) matmuls of M rows reach, weights read from memory (a profile's)"
    )
    stream_by_row_length: tuple[tuple[int, float], ...] = Field(
        default=(), description="(K, bytes/s) a one-row matmul reaches on K-long weight rows (a profile's)"
    )
    dequant_ops_per_s: float | None = Field(default=None, gt=0, description="CUDA-core op/s for dequantization")
    kernel_floor_s: float = Field(ge=0, description="fixed cost of one kernel")
    kernels_per_layer: int = Field(gt=0, description="kernels one layer launches per step")
    step_fixed_s: float = Field(default=0, ge=0, description="fixed cost of a step outside the layers (a profile's)")
    link_bytes_per_s: float | None = Field(default=None, gt=0, description="intra-node link, one direction")
    link_latency_s: float = Field(default=0, ge=0, description="one hop's latency on that link")
    network_bytes_per_s: float | None = Field(default=None, gt=0, description="between nodes, per GPU, one direction")
    gpus_per_node: int | None = Field(default=None, gt=0, description="GPUs the intra-node link joins")
    cuda_context_bytes: int = Field(ge=0, description="memory outside the allocator")
    sources: dict[str, str]


def table_rates(gpu: GpuSpec, compute_dtype: str, fp8_attention: bool = False) -> EngineRates:
    """Rates from the GPU table's datasheet figures and the published fractions above; FP8 matmuls at the share
    of the FP8 peak of tfcost.costs.efficiency, and attention in BF16 unless `fp8_attention`."""
    peak = peak_flops_per_s(gpu, compute_dtype) or peak_flops_per_s(gpu, "bf16")
    assert peak is not None  # the bf16 peak is a required field
    fp8 = compute_dtype == "fp8" and peak_flops_per_s(gpu, "fp8") is not None
    link = gpu.intra_node_bandwidth_gb_per_s
    return EngineRates(
        stream_bytes_per_s=bandwidth_bytes_per_s(gpu) * BANDWIDTH_FRACTION,
        matmul_flops_per_s=peak * (efficiency.FP8_MATMUL_FRACTION if fp8 else MATMUL_FRACTION),
        attention_flops_per_s=efficiency.attention_peak_flops_per_s(gpu, compute_dtype, fp8_attention)
        * MATMUL_FRACTION,
        dequant_ops_per_s=peak_flops_per_s(gpu, "fp32"),
        kernel_floor_s=KERNEL_FLOOR_S,
        kernels_per_layer=KERNELS_PER_LAYER,
        link_bytes_per_s=None if link is None else link * 1e9,
        link_latency_s=(gpu.intra_node_latency_us or 0) * 1e-6,
        network_bytes_per_s=None
        if gpu.inter_node_bandwidth_gb_per_s is None
        else gpu.inter_node_bandwidth_gb_per_s * 1e9,
        gpus_per_node=gpu.gpus_per_node,
        cuda_context_bytes=CUDA_CONTEXT_BYTES,
        sources={
            "stream": BANDWIDTH_FRACTION_SOURCE,
            "matmul": efficiency.FP8_MATMUL_SOURCE if fp8 else MATMUL_FRACTION_SOURCE,
            "dequant": "the FP32 (CUDA-core) peak of the GPU table"
            if gpu.peak_fp32_tflops
            else "not counted: no verified FP32 peak",
            "kernel_floor": KERNEL_FLOOR_SOURCE,
            "allreduce": f"{gpu.intra_node_link or 'no link in the table'}; NCCL tuning.cc latency model",
            "cuda_context": "0.5 GiB (assumed)",
        }
        | ({"attention": efficiency.BF16_ATTENTION_SOURCE} if fp8 and not fp8_attention else {}),
    )


def allreduce_seconds(message_bytes: int, gpus: int, rates: EngineRates) -> float:
    """One ring all-reduce of `message_bytes` over t GPUs: 2(t-1)/t x bytes / link bandwidth (each GPU sends and
    receives that much; Patarasuk and Yuan 2009, NCCL's busBw convention) plus NCCL's base latency and 2(t-1) hops.
    Zero for one GPU; with no link bandwidth in the table only the latency terms count."""
    if gpus == 1:
        return 0.0
    hops = 2 * (gpus - 1)
    transfer = 0.0 if rates.link_bytes_per_s is None else hops / gpus * message_bytes / rates.link_bytes_per_s
    return transfer + ALLREDUCE_BASE_LATENCY_S + hops * rates.link_latency_s


def tensor_parallel_seconds(shape: ModelShape, tokens: int, gpus: int, rates: EngineRates) -> float:
    """All-reduces of one forward pass over `tokens` tokens (B for a decode step, B x P for a prefill): 2 per layer,
    each of tokens x d activations (Megatron-LM tensor parallelism)."""
    message = tokens * shape.d_model * ACTIVATION_BYTES
    return ALLREDUCES_PER_LAYER * shape.n_layers * allreduce_seconds(message, gpus, rates)


def expert_parallel_allreduce_seconds(shape: ModelShape, tokens: int, gpus: int, rates: EngineRates) -> float:
    """`tensor_parallel_seconds` with expert parallelism: the all-reduce after each MoE layer's experts is replaced
    by the all-to-all (`all_to_all_seconds`), and attention's (and dense layers' MLP) all-reduces over t stay."""
    message = tokens * shape.d_model * ACTIVATION_BYTES
    count = ALLREDUCES_PER_LAYER * shape.n_layers - moe_layer_count(shape)
    return count * allreduce_seconds(message, gpus, rates)


def all_to_all_seconds(shape: ModelShape, tokens: int, ep: int, rates: EngineRates) -> float:
    """The expert-parallel dispatch and combine of one forward pass: in each MoE layer every GPU sends its `tokens`
    tokens to their k experts and takes the results back ("All-to-All Dispatch: Tokens are shuffled across GPUs to
    their assigned experts ... All-to-All Combine: Results are gathered back", SGLang's expert-parallelism docs;
    vLLM: "The underlying communication pattern for expert parallelism is All-to-All among the ranks in the EP
    group"). Under uniform routing (ep - 1) / ep of the k copies leave the GPU, bf16 d-wide, each way at the link
    bandwidth (DeepEP's intranode kernels reach it: "Intranode | 8 | 153 GB/s (NVLink)" on H800's "~160 GB/s
    NVLink maximum bandwidth"); in a group wider than a node the copies for other nodes, (ep - n) / ep, go at the
    network's ("Internode | 16 | 43 GB/s (RDMA)" on its "~50 GB/s" NIC), the two at once. Plus one hop's latency
    and one kernel's floor each way. Zero for ep = 1."""
    if ep == 1 or shape.moe is None:
        return 0.0
    copies = tokens * shape.moe.experts_per_token * shape.d_model * ACTIVATION_BYTES
    node = rates.gpus_per_node
    if node is not None and ep > node and rates.network_bytes_per_s is not None:
        off_node = copies * (ep - node) / ep / rates.network_bytes_per_s
        on_node = 0.0 if rates.link_bytes_per_s is None else copies * (node - 1) / ep / rates.link_bytes_per_s
        transfer = max(off_node, on_node)
    else:
        transfer = 0.0 if rates.link_bytes_per_s is None else copies * (ep - 1) / ep / rates.link_bytes_per_s
    return 2 * moe_layer_count(shape) * (transfer + rates.link_latency_s + rates.kernel_floor_s)


def pipeline_send_seconds(shape: ModelShape, tokens: int, rates: EngineRates, across_nodes: bool = False) -> float:
    """One stage-to-stage send of `tokens` tokens: vLLM's non-last stage returns
    `IntermediateTensors({"hidden_states": hidden_states, "residual": residual})` (its Llama forward), two bf16
    d-wide rows a token, sent point to point on the link (one hop), or on the network between two nodes."""
    message = 2 * tokens * shape.d_model * ACTIVATION_BYTES
    rate = rates.network_bytes_per_s if across_nodes else rates.link_bytes_per_s
    return (0.0 if rate is None else message / rate) + rates.link_latency_s


def stage_boundaries_across_nodes(pp: int, stage_gpus: int, rates: EngineRates) -> list[bool]:
    """For each of the pp - 1 stage boundaries, whether the two stages sit on different nodes: stage i holds GPUs
    i*s to (i+1)*s - 1, nodes of n GPUs in a row (the GPU table's gpus_per_node; none known: one node)."""
    node = rates.gpus_per_node
    if node is None:
        return [False] * (pp - 1)
    return [(i * stage_gpus) // node != (i * stage_gpus - 1) // node for i in range(1, pp)]


def pipeline_seconds(
    layer_seconds: float, end_seconds: float, stages: list[int], n_layers: int, sends: list[float]
) -> tuple[float, float]:
    """(one pass, the slowest stage) of a pipeline of stages holding `stages` layers: each stage's time is its
    layers' share of `layer_seconds` (the whole stack's), the last adding `end_seconds` (the head and its kernels);
    one pass of a micro-batch is every stage in turn plus the `sends` between them."""
    times = [layer_seconds * layers / n_layers for layers in stages]
    times[-1] += end_seconds
    return sum(times) + sum(sends), max(times)


def pipeline_token_seconds(one_pass: float, slowest: float, in_flight: int) -> float:
    """The time between two tokens of a sequence with `in_flight` micro-batches in the pipeline (vLLM's executor:
    "max_concurrent_batches ... return self.parallel_config.pipeline_parallel_size", one batch in flight per stage):
    its own pass, or every micro-batch through the slowest stage if that is longer."""
    return max(one_pass, in_flight * slowest)


def pipeline_batch_seconds(one_pass: float, slowest: float, in_flight: int) -> float:
    """The time until the last of `in_flight` micro-batches is through the pipeline once (every prompt of the batch
    prefilled): the first one's pass, then each other one a slowest stage later."""
    return one_pass + (in_flight - 1) * slowest


def dequant_seconds(quantized_weights_per_gpu: int, dtype: WeightsDtype, rates: EngineRates) -> float:
    """Weight-only int8/int4/fp4 kernels dequantize each weight once per forward pass: n x ops per weight / the
    CUDA-core rate. Zero for 16-bit and fp8 weights, or when the table has no CUDA-core peak."""
    ops = DEQUANT_OPS_PER_WEIGHT.get(dtype)
    if ops is None or rates.dequant_ops_per_s is None:
        return 0.0
    return quantized_weights_per_gpu * ops / rates.dequant_ops_per_s


# TensorRT-LLM's GptSession (v0.5-v0.8; gptSessionBenchmark, whose time to first token is a whole generate() call
# with one output token) runs the context step on its own TensorRT execution context given the request's new input
# shapes, without a CUDA graph: cpp/tensorrt_llm/runtime/gptSession.cpp, "// Instantiate two contexts for
# flip-flopping", and at step 0 "buffers.prepareContextStep(...)", "mRuntime->setInputTensors(contextId, ...)",
# CUDA graph instances "instance.clear()", then "enqueueSuccessful = mRuntime->executeContext(contextId)"; the
# generation steps alternate the two contexts at fixed shapes (and replay a graph with --enable_cuda_graph, which the
# documented benchmark commands do not pass). That host work before and between the context step's kernels is
# priced as a fixed time a layer, fitted on validation's fitted half only: the v0.5 low-latency rows #94 (Llama-2-7B,
# H100, 128 tokens: 3.5 ms more than the kernels), #58 (70B TP4 H100, 2048: 15 ms), #61 (70B TP4 A100, 2048: 20 ms)
# and #59 (7B L40S, 2048: 4.8 ms less) are closest together at 110 us a layer. Which host work it is (TensorRT's
# shape inference for the new shapes, the plugins' enqueue, the decoder's setup in newBatch) is not measured here.
SESSION_CONTEXT_HOST_S_PER_LAYER = fitted.SESSION_CONTEXT_HOST_S_PER_LAYER.value  # fitted (tfcost.costs.fitted)


def session_context_host_seconds(shape: ModelShape) -> float:
    """The host time a GptSession context step adds to the time to first token (`serve --trt-session`): a fixed
    SESSION_CONTEXT_HOST_S_PER_LAYER a layer, whatever the prompt length."""
    return shape.n_layers * SESSION_CONTEXT_HOST_S_PER_LAYER


def step_floor_seconds(shape: ModelShape, rates: EngineRates) -> float:
    """The fixed cost of one forward step: (kernels per layer x L + head kernels) x one kernel's floor, plus what a
    profile measured outside the layers."""
    kernels = rates.kernels_per_layer * shape.n_layers + KERNELS_OUTSIDE_LAYERS
    return kernels * rates.kernel_floor_s + rates.step_fixed_s


def phase_seconds(
    flops: float,
    bytes_moved: float,
    rates: EngineRates,
    attention_flops: float = 0,
    weight_stream_s: float = 0,
    rows: int | None = None,
) -> float:
    """The kernels' own time at the rates reached: max(compute, memory). Compute: the projections' FLOPs at the
    matmul rate (at `rows` rows in flight where a profile measured how it changes with them) plus the attention's
    (QK^T and AV, `attention_flops`, part of `flops`) at the attention kernel's; memory: `bytes_moved` at the stream
    rate, or, where a profile measured how the rate falls with the weights' row length, `weight_stream_s` for the
    weights (weights_stream_seconds) and `bytes_moved` for the rest."""
    matmul_rate = (
        rates.matmul_flops_per_s
        if rows is None
        else measured_rate(rows, rates.matmul_by_rows, rates.matmul_flops_per_s)
    )
    attention_rate = rates.attention_flops_per_s or rates.matmul_flops_per_s
    compute = (flops - attention_flops) / matmul_rate + attention_flops / attention_rate
    return max(compute, weight_stream_s + bytes_moved / rates.stream_bytes_per_s)


def measured_rate(size: int, points: tuple[tuple[int, float], ...], default: float) -> float:
    """A rate a profile measured at several sizes (row length K, rows in flight M), at `size`: interpolated linearly
    in log size between the nearest measurements below and above, the nearest one outside them; `default` when
    none was measured."""
    ordered = sorted(points)
    if not ordered:
        return default
    if size <= ordered[0][0]:
        return ordered[0][1]
    for (low_size, low), (high_size, high) in pairwise(ordered):
        if size <= high_size:
            share = (math.log(size) - math.log(low_size)) / (math.log(high_size) - math.log(low_size))
            return low + share * (high - low)
    return ordered[-1][1]


def stream_rate(row_length: int, rates: EngineRates) -> float:
    """Bytes/s of a one-row matmul over weight rows of length K (measured_rate over the profile's curve); the
    single stream rate without one."""
    return measured_rate(row_length, rates.stream_by_row_length, rates.stream_bytes_per_s)


def weights_stream_seconds(shape: ModelShape, weight_bytes: float, rates: EngineRates) -> float:
    """Time to stream `weight_bytes` of the layers' matrices through one-row matmuls (a decode step): each linear
    row's share of the weights at the rate measured for its row length K = fan_in (nn.Linear computes x W^T, a dot
    product over each K-long row of W). Without a measured curve: bytes / the stream rate."""
    rows, total = linear_row_params(shape)
    if not rates.stream_by_row_length or not total:
        return weight_bytes / rates.stream_bytes_per_s
    return sum(weight_bytes * params / total / stream_rate(k, rates) for params, k in rows)


def head_seconds(shape: ModelShape, head_flops: float, head_bytes: float, rates: EngineRates) -> float:
    """The output head on the sampled positions, a roofline of its own: its B rows are too few to reuse the V x d
    matrix, so even in a compute-bound prefill it streams the matrix, at the rate for its row length d."""
    rows = [op.fan_in for op in head_ops(shape) if op.kind == "linear"]
    rate = stream_rate(rows[0], rates) if rows else rates.stream_bytes_per_s
    return max(head_flops / rates.matmul_flops_per_s, head_bytes / rate)


def layer_linear_rows(shape: ModelShape) -> list[tuple[int, Op]]:
    """Every linear row of the layers, with its count."""
    return [(count, op) for block, count in blocks(shape) for op in layer_ops(shape, block) if op.kind == "linear"]


@lru_cache(maxsize=1024)  # `tfcost plan serve` streams the weights of every layout and batch: the rows once a model
def linear_row_params(shape: ModelShape) -> tuple[tuple[tuple[int, int], ...], int]:
    """((weights, row length K) of each linear row of the layers, all their weights)."""
    rows = tuple((count * op_params(op), op.fan_in) for count, op in layer_linear_rows(shape))
    return rows, sum(params for params, _ in rows)


def table_element_bytes(read_as: WeightsDtype) -> int:
    """Bytes of one embedding or head weight: 16-bit under 8- and 4-bit weights (tfcost.costs.serving.weight_bytes),
    else
    the weights' own width."""
    return max(WEIGHT_BITS[read_as], 8 * UNQUANTIZED_BYTES) // 8


def lookup_table_elements(shape: ModelShape) -> int:
    """Embedding tables a step only looks rows up in (token, position, per-layer tables), not read whole: the
    embedding parameters less the head's matrix (a tied head reads the token table, so that one is streamed)."""
    return max(params.embedding_params(shape) - head_weight_elements(shape), 0)


def head_weight_elements(shape: ModelShape) -> int:
    """The output head's matrix, V x d (a tied head reads the embedding table): its forward FLOPs per token / 2."""
    return flops.forward_flops_breakdown(shape, 1).get("output_head", 0) // 2


def attention_flops(shape: ModelShape, tokens: int, causal: bool = True) -> int:
    """The attention kernels' FLOPs of one sequence of T tokens: the score (QK^T) and value (AV) rows."""
    rows = [(count, op) for block, count in blocks(shape) for op in layer_ops(shape, block)]
    return sum(count * op_flops(op, tokens, tokens, causal) for count, op in rows if op.kind in ("scores", "values"))


def allocated_kv_tokens(tokens: int, block: int) -> int:
    """PagedAttention allocates the KV cache in blocks of `block` tokens (vLLM CacheConfig.DEFAULT_BLOCK_SIZE = 16):
    a sequence of n tokens holds ceil(n / block) x block slots."""
    return ceil_div(tokens, block) * block


def workspace_bytes(shape: ModelShape, tokens: int, batch: int) -> int:
    """Activation workspace of one forward over `tokens` tokens in flight (B x P in a prefill): the widest
    intermediate of a layer, held once (llm-analysis: in inference the activation memory of a layer is the max of
    its parts, and layers reuse it): the residual plus the widest fused GEMM output of the model's rows (QKV, gate
    and up, a token's k experts: Model.widest_intermediate), 16-bit; plus fp32 logits of the B sampled positions."""
    widest = shape.d_model + model_of(shape).widest_intermediate()
    return tokens * widest * ACTIVATION_BYTES + batch * shape.vocab_size * LOGITS_BYTES


# A whole run rather than one step (issue 22): what a benchmark's throughput and inter-token latency average over.


def mean_decode_context(prompt: int, generate: int) -> int:
    """The mean context of a generation's G decode steps (P + 1, ..., P + G): P + (G + 1) / 2, rounded down. A step's
    cache read and attention FLOPs grow linearly with its context, so the step at the mean context costs the mean
    step wherever one side of the roofline holds throughout (the cost is piecewise linear in the context); the step
    at P + G, which the bound and the memory are sized for, is the slowest."""
    return prompt + (generate + 1) // 2


def prompt_tokens_per_step(batch: int, prompt: int, generate: int) -> float:
    """Prompt tokens an in-flight-batching step carries at concurrency B in steady state: each request's P prompt
    tokens are prefilled once in its G steps, so a step runs B decode tokens and B x P / G prompt tokens. TensorRT-LLM
    sizes its steps so (tensorrt_llm/bench/build/tuning.py, finetune_setting: "raw_token = min(raw_bs * (1 +
    input_len / output_len), 32768)" and "Set min to 2048 to ensure Ctx/Gen overlap efficiency"); its tuning guide:
    "it's inflight batching scheduler and runtime that handles simultaneously scheduling and executing requests in
    both context and generation phases" (docs/source/performance/performance-tuning-guide, "Tuning Max Batch Size
    and Max Num Tokens")."""
    return batch * prompt / generate


def split_step_seconds(
    linear_flops: float,
    weight_stream_s: float,
    attention_flops: float,
    cache_bytes: float,
    rates: EngineRates,
    rows: int | None = None,
) -> float:
    """A step whose projections and attention run as separate kernels, one after the other, each at its own roofline
    (Williams et al. 2009 bound one kernel, not a sequence of them): max(projection FLOPs / matmul rate, the weights'
    stream time) + max(attention FLOPs / attention rate, cache bytes / stream rate). A step that mixes prompt chunks
    with decode tokens has compute-bound projections (B(1 + P/G) rows) and a memory-bound cache read in the same
    step; one max() over both would hide one behind the other."""
    matmul_rate = (
        rates.matmul_flops_per_s
        if rows is None
        else measured_rate(rows, rates.matmul_by_rows, rates.matmul_flops_per_s)
    )
    attention_rate = rates.attention_flops_per_s or rates.matmul_flops_per_s
    projections = max(linear_flops / matmul_rate, weight_stream_s)
    return projections + max(attention_flops / attention_rate, cache_bytes / rates.stream_bytes_per_s)


# Under a per-query-head kernel the H/K query heads of one key-value head read the same cache in neighbouring thread
# blocks of one launch ("a single CUDA thread-block per head", TensorRT-LLM docs/source/advanced/gpt-attention.md),
# close enough in time that part of the repeat reads are served from the L2 cache rather than HBM. The share of the
# repeat reads that reach HBM is fitted on validation's fitted half only: TensorRT-LLM v0.6.1's Llama-2-70B peak
# throughput rows (cases #52, H100 FP8 TP2 64 x 2048/2048, and #56, A100 FP16 TP4 240 x 128/2048) put it at 0.60 and
# 0.47 with the rest of their steps priced as tfcost prices them; 8 full reads (share 1) left them at 0.75 and 0.66 of
# the published throughput, one read (XQA's) at 1.97 and 1.83. No held-out case runs a per-query-head kernel.
REPEAT_READ_HBM_SHARE = fitted.REPEAT_READ_HBM_SHARE.value  # fitted (tfcost.costs.fitted)


def cache_reads_per_decode(shape: ModelShape, gpus: int, gqa_decode: str) -> float:
    """How many times a decode step reads each key-value head's cache from HBM on one GPU: once where the kernel
    loads a head's keys and values for all the query heads that share it (FlashAttention, FlashInfer, TensorRT-LLM's
    XQA); under TensorRT-LLM's masked MHA before v0.8, "the 'vanilla' implementation that uses a single CUDA
    thread-block per head" (docs/source/advanced/gpt-attention.md), each of the g = (H/t) / max(K/t, 1) query heads
    of a key-value head reads it, the first from HBM and REPEAT_READ_HBM_SHARE of the g - 1 others (the rest from
    L2): 1 + (g - 1) x share. TensorRT-LLM's XQA post ("XQA kernel provides optimization for MQA and GQA during
    generation phase ... reducing data loading"; "will be included in the v0.8 releases") measured Llama-70B
    128/2048 on one H200 at 1,227 tok/s without it and 2,941 with it."""
    if gqa_decode == "shared":
        return 1.0
    group = max(max(shape.n_heads // gpus, 1) // max(shape.n_kv_heads // gpus, 1), 1)
    return 1 + (group - 1) * REPEAT_READ_HBM_SHARE
