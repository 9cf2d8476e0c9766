"""A training step's time predicted from its parts, as NVIDIA's Calculon does (Isaev et al., SC'23): the work of
one micro-batch on the busiest pipeline stage, summed op by op, times the micro-batches, plus the pipeline bubble,
the data-parallel gradient sync and the optimizer step. One constant here is fitted to runs' step times, on
validation's fitted half only: the share of MAMF BF16 GEMMs reach under ZeRO-3/FSDP (costs/efficiency.py,
ZERO3_MATMUL_SHARE); FP8's GEMM fraction FP8_TRAINING_GEMM_FRACTION is fitted as well, its quantization passes
counted apart (`fp8_cast_seconds`). The rest is counted or sourced.

Per layer, per micro-batch of b sequences, on one GPU (t tensor-, c context-parallel), each a fold over the model's
rows (tfcost.core.model.Model), the average of its layers:
- matmuls: the layers' linear rows as GEMMs (`layer_gemms`: their FLOPs are the core's count) x 3 (forward, two
  backward GEMMs) / (peak x e), where e is the GPU's measured largest matmul efficiency (MAMF, ml-engineering's
  table; under ZeRO-3 times the fitted ZERO3_MATMUL_SHARE) times the wave-quantization efficiency of the layer's
  GEMMs: a GEMM runs in waves of one output tile (256 x 128) per SM, and a last wave that is part-full costs a whole
  one (NVIDIA, "Matrix Multiplication Background User's Guide" §3.2);
- attention: QK^T and AV at the same efficiency, plus the score tensor's memory traffic (written by QK^T, read
  and written by the fused scale-mask-softmax and by dropout with its 1-byte mask, read by AV: 13 bytes per entry
  in 16-bit, Megatron-LM's kernels); with flash attention, the entries a causal mask keeps (the kernel skips the
  masked blocks, and FlashAttention's benchmark measures its efficiency over those FLOPs) at FlashAttention-2's
  measured efficiency on the GPU's generation (costs/efficiency.py: 0.73 on A100, 0.35 on Hopper; half that for a
  FlashAttention-1-class kernel, `--flash-kernel fa1`), backward 2.5 x forward (Dao 2023 §4.1);
- memory-bound ops: norms, residual/bias-dropout-adds and the MLP activation, each reading and writing its
  tensors once at the HBM bandwidth; backward twice the forward's traffic. Under `--precision fp8` also the
  quantization passes of each FP8 linear (`fp8_cast_seconds`: the input's and weight's cast-transpose forward, the
  output gradient's backward, e + 2 bytes an element, as Transformer Engine v0.10 and torchao's roofline count them),
  the forward's again under full recomputation. With `--kernels eager` (no compile,
  norms written in Python) also each unfused pass of an RMSNorm, rotary and SwiGLU (`eager_bytes_per_token`; with
  `--kernels fused-norm`, no compile but a fused norm kernel, those of rotary and SwiGLU), and with `--loss full`
  the fp32 cross-entropy's passes over the logits on the last stage (`loss_seconds`), and with `--logit-metrics N`
  the forward passes of N cross-entropy metrics over them (`metric_seconds`, Composer's);
- recomputation: selective redoes the attention scores; full redoes the layer's forward (compute and TP comm);
- tensor-parallel communication: per layer 4 all-gathers/reduce-scatters forward and 6 backward with sequence
  parallelism (the all-gather is redone for the weight gradients), or 2 + 2 all-reduces without, of the
  b x T/c x d activations, ring cost (t-1)/t x size / bandwidth (Megatron-LM runs them unoverlapped); under
  `--precision fp8` with sequence parallelism the all-gathers move the FP8 copy, one byte an element (torchao's
  Float8ColwiseParallel and Transformer Engine cast before gathering: `tp_collective_units`); with
  `--tp-keeps-gathered-input` (PyTorch's DTensor, torchtitan) the backward redoes no all-gather, 4 collectives not 6;
  with `--async-tp` (torch.compile's micro-pipelined TP) ASYNC_TP_EXPOSED_SHARE of them, fitted to torchtitan's 2D /
  2D + AsyncTP pair;
- context-parallel ring attention: c-1 exchanges of what the cache rows hold (K and V; MLA's latent) forward, of
  them and their gradients backward, each collective also paying NCCL's ring latency: a base latency and one per
  step, 14 us for each step that crosses nodes (`cp_ring_latency_seconds`);
- expert parallelism: the all-to-all dispatch and combine of each MoE layer, forward and backward, of the tokens
  the GPU holds (its sequence-parallel share), the copies to this node's GPUs over NVLink and to other nodes over
  the network at once, a token sent once to each node under node-limited routing, and the experts' tensor-parallel
  all-gathers and reduce-scatters around it (`ep_seconds`); with `--ep-overlap`
  (Megatron-Core's --overlap-moe-expert-parallel-comm, whose combined 1F1B schedule runs "MoE all-to-all
  communication (dispatch/combine) ... with computation on the other stream"; DeepSeek-V3's DualPipe, where "both
  all-to-all and PP communication can be fully hidden during execution", §3.2.1) only what outlasts the layer's
  compute is exposed, and while it runs its kernels hold EP_COMM_SMS of the SMs: exposed = max(C - W, C x 20/SMs);
- routed experts: a grouped GEMM over the E / e experts a GPU holds, each expert's rows padded to whole tiles
  (`grouped_wave_efficiency`), the experts' own tensor parallelism etp setting their width and rows (Megatron-Core's
  ETP: `Model.gemm_groups`); the token permutations around it (permute, sort by local expert, unpermute) as
  memory-bound passes (`parallel.permute_bytes`);
- pipeline: each stage boundary sends one micro-batch's activations forward and their gradients back, split over
  t (Narayanan et al. 2021 §4.1), over the network unless the whole run is one node; bubble (p-1)/v of one
  micro-batch's stage time;
- data parallelism: an all-reduce of the fp32 gradients once a step (reduce-scatter + all-gather under ZeRO, the
  same volume), and ZeRO-3's weight all-gathers each forward and backward, each hierarchical: a ring inside the
  node on its link (NVLink, xGMI, PCIe; the GPU table's gpus_per_node), then a ring across the nodes of the 1/n
  shard each GPU holds (`hierarchical_ring_seconds`; docs/formulas.md, "Collectives"). Gradients are reduced in
  fp32: Megatron-LM's default under --bf16 (arguments.py sets accumulate_allreduce_grads_in_fp32 unless told
  --grad-reduce-in-bf16), NeMo's ("the default fp32 precision") and torchtitan's (mixed_precision_reduce float32).
  By default (`dp_overlap`) these collectives run in per-layer buckets overlapped with compute, as PyTorch DDP's
  buckets, FSDP's prefetch, Megatron-Core's --overlap-grad-reduce/--overlap-param-gather and Calculon's
  data_par_overlap do: each layer's bucket is launched when that layer's backward (forward, for gathers) ends
  and hides under the next layer's compute, so the last bucket is always exposed and any excess of a bucket
  over a layer's compute adds up (`overlapped_seconds`; NeMo: the overlap "exposes only one DP communication
  chunk"). While a hidden bucket runs, its NCCL kernel holds NCCL_RING_CTAS of the SMs (24 on an NVLink node,
  NCCL's channel count) and the compute beside it runs on the rest (`nccl_sm_share`). Gradients reduce during
  the last micro-batch's backward (the all-gather half of ZeRO's reduce during the next step's first forward,
  Megatron's --overlap-param-gather); ZeRO-3's gathers in every pass. Without
  overlap (`--no-dp-overlap`, Megatron-LM's own default and its 2022 runs) all of it is exposed;
- FSDP2 (`--fsdp2`): its copy-out of each all-gather into the parameters and copy-in of each reduce-scatter's fp32
  input, each a pass over the stage's weights at the HBM bandwidth, with the memory-bound ops
  (`fsdp2_copy_seconds`);
- optimizer: reads and writes every sharded weight, gradient and state byte once at the HBM bandwidth.
Collectives run at the bus bandwidth nccl-tests measure: 200 of NVLink 3's 300 GB/s on 8 A100s
(NVIDIA/nccl-tests#149) and 96 of 100 GB/s over 4 HDR InfiniBand ports (NVIDIA/nccl-tests#119).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from tfcost.core import activations, params
from tfcost.core.blocks import layer_count, moe_layer_count
from tfcost.core.model import model_of
from tfcost.costs import fitted, parallel, training
from tfcost.costs.efficiency import (
    FP8_TRAINING_GEMM_FRACTION,
    attention_peak_flops_per_s,
    causal_skip_efficiency,
    flash_attention_efficiency,
    training_matmul_share,
)
from tfcost.hardware import rates as hardware
from tfcost.schema import GpuSpec, ModelShape, TrainingSetup
from tfcost.units import GIGA, ceil_div

GEMM_TILE = (256, 128)  # cuBLAS's largest output tile on A100/H100 (NVIDIA Matrix Multiplication guide §2.3)
FLASH_BACKWARD_FACTOR = 2.5  # FlashAttention's backward: 5 matmuls to the forward's 2 (Dao 2023 §4.1)
NVLINK_BUS_EFFICIENCY = 200 / 300  # nccl-tests all_reduce busbw on 8 A100 SXM4 80GB (NVIDIA/nccl-tests#149)
NETWORK_BUS_EFFICIENCY = 96 / 100  # nccl-tests all_reduce over 4 x 200 Gb/s HDR per 8 A100 (NVIDIA/nccl-tests#119)
SCORE_BYTES_PER_ENTRY = 13  # QK^T writes 2; softmax reads 2, writes 2; dropout reads 2, writes 2 + 1 mask; AV reads 2
# SMs the overlapped all-to-all kernels hold while they run: "we allocate 20 out of the 132 SMs available in the H800
# GPU for this purpose, which will limit the computational throughput" (DeepSeek-V3 report §3.5.1; DeepEP's default)
EP_COMM_SMS = 20
# CTAs (one per SM) an NCCL ring all-gather or reduce-scatter launches on an 8-GPU NVLink/NVSwitch node: one CTA per
# channel (NVIDIA/nccl v2.21.5-1 src/enqueue.cc: "dim3 grid = {(unsigned)plan->channelCount, 1, 1};"), and large
# messages use every channel. The channels: the ring search finds up to MAXCHANNELS/2 (init.cc: "ringGraph.maxChannels
# = MAXCHANNELS/2"), ncclTopoDupChannels doubles them ("int dupChannels = std::min(graph->nChannels*2,
# graph->maxChannels)") and ncclTopoPostset doubles them again ("nChannels = comm->nChannels =
# std::min(MAXCHANNELS,nChannels*2)"): on HGX A100 (12 NVLinks at SM80_NVLINK_BW 20.0) 6 ring channels at
# speedArrayIntra's 40 GB/s, 12, then 24, as NCCL's own log on an 8 x A100 NVSwitch node prints ("NCCL INFO Channel
# 23/24 :    0   1   2   3   4   5   6   7", NVIDIA/nccl-tests#100). On an 8 x H100 node (18 NVLinks at 20.6) the same
# steps give 6 at sm90SpeedArrayIntra's 60 GB/s, 12, 24 (and on H800, 8 NVLinks: 4 at 40, 8, 16, as its log prints,
# "NCCL INFO 16 coll channels, 0 nvls channels", NVIDIA/nccl#892). While the kernel runs its CTAs hold their SMs: the
# layers' compute beside it runs on the rest, as EP_COMM_SMS prices for the all-to-alls. Multi-node rings are searched
# against the NICs' bandwidth instead (a count not derived here); the node's count is used.
NCCL_RING_CTAS = 24
GPUS_PER_NODE = 8  # tensor and context parallelism stay inside a node up to this many GPUs
# Eager PyTorch (`--kernels eager`: no torch.compile, norms written in Python) runs each elementwise op of a layer as
# its own kernel, each reading and writing its tensors at the HBM rate, where the fold above counts a fused norm's,
# residual add's and MLP activation's tensors once. Counted from torchtitan's Llama, which its A100 benchmarks ran
# with "compile = false" (at 0413364, the commit of docs/performance.md's A100 tables: train_configs/llama3_70b.toml
# with 'norm_type = "rmsnorm"', eager; llama3_8b.toml and llama2_13b.toml with 'norm_type = "fused_rmsnorm"',
# torchtitan/models/norms.py's FusedRMSNorm, a Triton kernel: `--kernels fused-norm`, the passes below but the
# RMSNorm's), in bytes per element of
# e-byte activations:
# - RMSNorm, "output = self._norm(x.float()).type_as(x); return output * self.weight" with "_norm: x *
#   torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)" (torchtitan/models/norms.py): the upcast e + 4, pow 8,
#   mean 4, the product 8, type_as 4 + e, the weight 2e: 28 + 4e, of which the fold counts 2e (nn.LayerNorm is one
#   fused kernel: nothing more);
EAGER_RMSNORM_FP32_BYTES = 28
# - rotary, "torch.view_as_complex(xq.float()...)", "torch.view_as_real(xq_ * freqs_cis)", "xq_out.type_as(xq)" for
#   queries and keys (torchtitan/models/llama/model.py, apply_rotary_emb): the upcast e + 4, the complex product 8, the
#   downcast 4 + e: 16 + 2e per element of q and k, none of it in the fold;
EAGER_ROTARY_FP32_BYTES = 16
# - SwiGLU, "self.w2(F.silu(self.w1(x)) * self.w3(x))": silu writes its output and the product reads it again, 2e per
#   gated element beyond the fold's three tensors.
# Backward, as the other memory-bound ops, twice the forward's traffic.
# NCCL's latency model of a ring all-gather or reduce-scatter, the Simple protocol its large messages use (NVIDIA/nccl
# src/graph/tuning.cc, ncclTopoTuneModel, commit b647562): a base latency, baseLat Ring Simple 8.4 us, plus one
# hwLat per step of the ring, Ring Simple 3.4 us on NVLink, 5.7 us on PCI, 14.0 us on the network
# ("NET ... Ring (LL/LL128/Simple) { 2.7, 4.0, 14.0 }"), with nsteps = nRanks - 1 and nInterSteps = nNodes - 1:
#     comm->latencies[coll][a][p] += (nsteps-nInterSteps)*intraLat + nInterSteps*interLat;
RING_BASE_LATENCY_S = 8.4e-6
NVLINK_STEP_LATENCY_S = 3.4e-6
PCI_STEP_LATENCY_S = 5.7e-6
NETWORK_STEP_LATENCY_S = 14.0e-6


def wave_efficiency(rows: int, cols: int, sms: int) -> float:
    """Share of the last wave's SMs a GEMM with a rows x cols output keeps busy: tiles / (waves x SMs)."""
    tiles = ceil_div(rows, GEMM_TILE[0]) * ceil_div(cols, GEMM_TILE[1])
    return tiles / (ceil_div(tiles, sms) * sms)


def layer_gemms(
    shape: ModelShape, tokens: int, tp: int, seq_len: int | None = None, cp: int = 1
) -> list[tuple[int, int, int]]:
    """(rows, inner, cols) of every layer's forward GEMMs on one GPU over `tokens` = b T / c positions, read from the
    model's linear rows (`Model.gemms`: q, k, v fused, gate and up fused, a routed expert row tokens x k rows of one
    expert's width, column rows split by t in their columns, row-parallel rows in their inner dimension). Their
    FLOPs, 2 x rows x inner x cols, are the core's linear FLOPs fold. `seq_len`: T (default: `tokens`, one sequence)."""
    seq = tokens * cp if seq_len is None else seq_len
    return model_of(shape).gemms(seq, tokens * cp // seq, tp, cp)


@dataclass(frozen=True)
class MatmulTerms:
    """The matmul fold of one layer's forward, one micro-batch on one GPU: the layers' distinct GEMMs (count, rows,
    inner, cols), their FLOPs per layer Σ count·2·rows·inner·cols / L, and the time at peak x efficiency."""

    gemms: tuple[tuple[int, int, int, int], ...]
    layers: int
    flops_per_layer: float
    peak: float
    efficiency: float  # measured x wave efficiency, as BF16 GEMMs reach it (attention's matmuls too)
    linear_efficiency: float  # the linear layers': `efficiency` at their precision (FP8: costs/efficiency.py)

    @property
    def seconds(self) -> float:
        return self.flops_per_layer / (self.peak * self.linear_efficiency)


def matmul_terms(shape: ModelShape, gpu: GpuSpec, setup: TrainingSetup) -> MatmulTerms:
    """One layer's forward GEMMs (`layer_gemms`) and their time: what layer_seconds charges and --explain shows."""
    key = (shape, setup.micro_batch, setup.tp, setup.seq_len, setup.cp, setup.expert_tp, expert_load(shape, setup))
    gemms, distinct, layers, flops = layer_matmuls(*key)
    if gemms:
        assert gpu.matmul_efficiency is not None and gpu.sm_count is not None
        best = gpu.matmul_efficiency * training_matmul_share(setup.zero)  # ZeRO-3's, fitted (costs/efficiency.py)
        efficiency = layer_matmul_efficiency(*key, setup.ep, gpu.sm_count, best)
        # FP8 linear GEMMs reach FP8_TRAINING_GEMM_FRACTION of the FP8 peak (x the waves, x ZeRO-3's share as BF16's
        # do), fitted with the quantization passes priced apart (fp8_cast_seconds)
        precision_scale = FP8_TRAINING_GEMM_FRACTION / gpu.matmul_efficiency if setup.precision == "fp8" else 1.0
    else:
        efficiency, precision_scale = gpu.matmul_efficiency or 1.0, 1.0
    peak = training.peak_flops_per_s(gpu, setup.precision)
    return MatmulTerms(distinct, layers, flops, peak, efficiency, efficiency * precision_scale)


def expert_load(shape: ModelShape, setup: TrainingSetup) -> float:
    """The busiest GPU's routed expert rows over the balanced share: `parallel.routed_copies_scale` (a capacity
    factor's padding, an assumed imbalance), 1 for a dense model."""
    return parallel.routed_copies_scale(setup) if shape.moe is not None else 1.0


@lru_cache(maxsize=4096)  # a layout search (tfcost plan) asks for the same micro-batch's GEMMs thousands of times
def layer_matmuls(
    shape: ModelShape, micro_batch: int, t: int, s: int, c: int, etp: int | None = None, load: float = 1.0
) -> tuple[tuple[tuple[int, int, int, int], ...], tuple[tuple[int, int, int, int], ...], int, float]:
    """(every GEMM with the routed experts its rows spread over, the distinct ones with their counts, layers, FLOPs
    per layer) of one micro-batch's forward; `etp`, `load`: the experts' tensor-parallel size and rows' scale
    (`Model.gemm_groups`)."""
    model = model_of(shape)
    grouped = model.gemm_groups(s, micro_batch, t, c, etp, load)  # as layer_gemms: b sequences of T / c positions
    gemms = [(rows, inner, cols) for rows, inner, cols, _ in grouped]
    counted = Counter(gemms)
    flops = sum(count * 2 * rows * inner * cols for (rows, inner, cols), count in counted.items()) / model.n_layers
    return tuple(grouped), tuple((count, *gemm) for gemm, count in counted.items()), model.n_layers, flops


def matmul_efficiency(gpu: GpuSpec, gemms: Sequence[tuple[int, int, int]]) -> float:
    """The GPU's measured best matmul efficiency times the FLOP-weighted wave efficiency of these GEMMs."""
    assert gpu.matmul_efficiency is not None and gpu.sm_count is not None
    return wave_weighted(gpu.sm_count, gpu.matmul_efficiency, gemms)


@lru_cache(maxsize=4096)  # as layer_matmuls: once per micro-batch shape and GPU in a layout search
def layer_matmul_efficiency(
    shape: ModelShape,
    micro_batch: int,
    t: int,
    s: int,
    c: int,
    etp: int | None,
    load: float,
    ep: int,
    sm_count: int,
    best: float,
) -> float:
    """matmul_efficiency of one micro-batch's layer GEMMs (layer_matmuls) on a GPU of `sm_count` SMs, a routed
    expert GEMM as a grouped GEMM over the E / e experts each GPU holds under expert parallelism e."""
    gemms = Counter(
        (rows, inner, cols, experts // ep)
        for rows, inner, cols, experts in layer_matmuls(shape, micro_batch, t, s, c, etp, load)[0]
    )
    return wave_weighted(sm_count, best, list(gemms), list(gemms.values()))


# Main gradients are accumulated in fp32 by the weight-gradient GEMM itself (Megatron-Core's gradient accumulation
# fusion; Transformer Engine's GroupedLinear "fuse_wgrad_accumulation": the GEMM reads and writes main_grad): 4 bytes
# read and 4 written an element.
MAIN_GRAD_ACCUMULATE_BYTES = 8


def expert_gemm_output_seconds(shape: ModelShape, gpu: GpuSpec, setup: TrainingSetup) -> float:
    """The routed experts' GEMM outputs written at the HBM rate, one layer's forward and backward, one micro-batch on
    one GPU (the average over the layers): a GEMM's output tiles are written after their main loop, so a GEMM of small
    inner dimension K spends a share of its time writing that its FLOPs do not count. DeepGEMM's dense FP8 table on
    H800 (deepseek-ai/DeepGEMM README at fea9309), its best rate 1520 TFLOPS (M 4096, N 7168, K 16384) plus the
    output's write at 3.35 TB/s: N 32768, K 512, 806 against 775 measured; N 24576, K 1536, 1175 against 1212; N
    4096, K 7168, 1449 against 1410; N 7168, K 2048, 1245 against 1168 (N 2112, K 7168: 1428 against 1127, its
    inputs' reads not counted). Priced for the experts alone, whose K is an expert's width over etp (Qwen3-30B-A3B's
    down projection: 768, 384 at etp 2) and whose row-parallel down projection writes the whole d-wide output on
    every one of its etp GPUs; a dense layer's GEMMs keep the measured MAMF efficiency the validation was set with
    (their K is the model's width over t, and MAMF's own shapes include their writes). Forward: rows x cols; backward:
    the input gradient's rows x inner and each local expert's weight gradient inner x cols accumulated in fp32
    (MAIN_GRAD_ACCUMULATE_BYTES)."""
    if shape.moe is None:
        return 0.0
    element = activations.ACTIVATION_BYTES[setup.precision]
    grouped, _, n_layers, _ = layer_matmuls(
        shape, setup.micro_batch, setup.tp, setup.seq_len, setup.cp, setup.expert_tp, expert_load(shape, setup)
    )
    written = 0.0
    for rows, inner, cols, experts in grouped:
        if experts > 1:
            local = max(1, experts // setup.ep)
            written += (rows * cols + rows * inner) * element + local * inner * cols * MAIN_GRAD_ACCUMULATE_BYTES
    return written / n_layers / hardware.bandwidth_bytes_per_s(gpu)


def grouped_wave_efficiency(rows: int, cols: int, groups: int, sms: int) -> float:
    """Share of the tile slots a grouped GEMM keeps busy: `groups` problems of rows / groups x cols each, launched
    together (CUTLASS's grouped GEMM and Transformer Engine's, as MoE layers run their experts), each padded to
    whole 256 x 128 output tiles ("tile quantization": a dimension the tile does not divide leaves part of its last
    tile idle, NVIDIA Matrix Multiplication guide §2.3), the tiles run in waves of one per SM. A few hundred rows
    per expert leave most of a tile row idle: 300 rows fill 300 of 512."""
    per_group = ceil_div(rows, groups)
    tiles = groups * ceil_div(per_group, GEMM_TILE[0]) * ceil_div(cols, GEMM_TILE[1])
    return rows * cols / (GEMM_TILE[0] * GEMM_TILE[1]) / (ceil_div(tiles, sms) * sms)


def wave_weighted(
    sm_count: int, best: float, gemms: Sequence[tuple[int, ...]], counts: Sequence[int] | None = None
) -> float:
    """`best` x the FLOP-weighted wave efficiency of these GEMMs on `sm_count` SMs: (rows, inner, cols) each, or
    (rows, inner, cols, groups) with the experts a grouped GEMM's rows spread over on one GPU; `counts`: how many
    times each runs (a model's layers repeat the same few GEMMs, so a plan search weighs the distinct ones)."""
    counts = counts or [1] * len(gemms)
    work = [count * gemm[0] * gemm[1] * gemm[2] for count, gemm in zip(counts, gemms, strict=True)]
    waves = sum(w * gemm_wave_efficiency(gemm, sm_count) for w, gemm in zip(work, gemms, strict=True))
    return best * waves / sum(work)


def gemm_wave_efficiency(gemm: tuple[int, ...], sms: int) -> float:
    """`wave_efficiency` of a dense GEMM, `grouped_wave_efficiency` of one spread over more than one expert."""
    rows, _, cols, *rest = gemm
    groups = rest[0] if rest else 1
    return grouped_wave_efficiency(rows, cols, groups, sms) if groups > 1 else wave_efficiency(rows, cols, sms)


def ring_seconds(size_bytes: float, ranks: int, bandwidth: float) -> float:
    """One ring all-gather or reduce-scatter of a `size_bytes` tensor: (n-1)/n of it crosses each GPU's link."""
    return 0.0 if ranks == 1 else (ranks - 1) / ranks * size_bytes / bandwidth


def node_size(gpu: GpuSpec) -> int:
    """GPUs one node joins by its intra-node link (NVLink/NVSwitch, xGMI, PCIe): the GPU table's, else
    GPUS_PER_NODE (an HGX/DGX board of 8, the most common server)."""
    return gpu.gpus_per_node or GPUS_PER_NODE


def link_bandwidth(gpu: GpuSpec, group: int, inside_node: bool) -> float:
    """Bytes/s a collective over `group` GPUs gets per GPU: the intra-node link's inside a node (when the group fits
    in one), the network's across."""
    if inside_node and group <= node_size(gpu) and gpu.intra_node_bandwidth_gb_per_s is not None:
        return gpu.intra_node_bandwidth_gb_per_s * GIGA * NVLINK_BUS_EFFICIENCY
    return gpu.inter_node_bandwidth_gb_per_s * GIGA * NETWORK_BUS_EFFICIENCY  # type: ignore[operator]


def data_parallel_split(gpu: GpuSpec, setup: TrainingSetup) -> tuple[int, int]:
    """(ranks inside one node, nodes) of the group the gradients are reduced over (N_d x c ranks: Megatron-LM reduces
    over data and context parallel together). Megatron-LM orders the ranks tensor first, then context, then data
    parallel (parallel_state's order "tp-cp-ep-dp-pp"), so a node of n GPUs holds n / t of that group's ranks and
    the group spans the rest in nodes."""
    replicas = setup.data_parallel * setup.cp
    inside = max(1, min(replicas, node_size(gpu) // setup.tp))
    while replicas % inside:
        inside -= 1
    return inside, replicas // inside


@dataclass(frozen=True)
class RingTerms:
    """One hierarchical reduce-scatter (or all-gather) of `size` bytes: a ring of `inside` ranks on the node's link at
    `intra` bytes/s, then a ring of `nodes` over the size / inside shard at `inter` bytes/s (0: not crossed)."""

    size: float
    inside: int
    nodes: int
    intra: float
    inter: float

    @property
    def seconds(self) -> float:
        intra = ring_seconds(self.size, self.inside, self.intra) if self.inside > 1 else 0.0
        inter = ring_seconds(self.size / self.inside, self.nodes, self.inter) if self.nodes > 1 else 0.0
        return intra + inter


def hierarchical_ring_terms(size_bytes: float, gpu: GpuSpec, setup: TrainingSetup) -> RingTerms:
    """One reduce-scatter (or all-gather) of `size_bytes` over the data-parallel group, hierarchically: a ring inside
    each node over its intra-node link, then a ring across the nodes of the 1/n_in shard each GPU then holds, every
    GPU of a node on its own network port at once (NCCL's and Horovod's hierarchical all-reduce; the bandwidth term of
    Calculon's two-level data-parallel network). All inside one node: the intra-node ring alone."""
    inside, nodes = data_parallel_split(gpu, setup)
    intra = link_bandwidth(gpu, inside, True) if inside > 1 else 0.0
    inter = link_bandwidth(gpu, nodes, False) if nodes > 1 else 0.0
    return RingTerms(size_bytes, inside, nodes, intra, inter)


def hierarchical_ring_seconds(size_bytes: float, gpu: GpuSpec, setup: TrainingSetup) -> float:
    """`hierarchical_ring_terms`' time."""
    return hierarchical_ring_terms(size_bytes, gpu, setup).seconds


def gradient_bucket_bytes(shape: ModelShape, setup: TrainingSetup, n_layers: int) -> float:
    """One layer's bucket of fp32 gradients on one GPU: what is trained (the adapters alone under LoRA), routed
    experts split over e, the rest over t x p, over the stage's layers."""
    experts = parallel.routed_expert_params(shape) if setup.ep > 1 or setup.expert_tp != setup.tp else 0
    params_per_gpu = (params.total_params(shape) - experts) / (setup.tp * setup.pp) + experts / (
        setup.ep * setup.expert_tp * setup.pp
    )
    if setup.lora_rank is not None:
        params_per_gpu = training.trainable_params(shape, setup) / (setup.tp * setup.pp)
    return params_per_gpu / n_layers * training.MAIN_GRADIENT_BYTES  # fp32 main gradients, all-reduced


def can_predict(gpu: GpuSpec, setup: TrainingSetup) -> bool:
    """Whether the GPU table has what the prediction needs for this layout."""
    if gpu.matmul_efficiency is None or gpu.sm_count is None:
        return False
    inside, nodes = data_parallel_split(gpu, setup)
    needs_intra = setup.tp * setup.cp * setup.ep > 1 or inside > 1
    needs_inter = setup.pp > 1 or nodes > 1 or setup.tp * setup.cp > node_size(gpu)
    return (not needs_intra or gpu.intra_node_bandwidth_gb_per_s is not None) and (
        not needs_inter or gpu.inter_node_bandwidth_gb_per_s is not None
    )


def layer_seconds(shape: ModelShape, gpu: GpuSpec, setup: TrainingSetup, ideal: bool = False) -> dict[str, float]:
    """One layer's forward and backward of one micro-batch on one GPU, by part (the module docstring): the average
    of the model's layers, each part a fold over their rows (`tfcost.core.model.Model`).

    `ideal`: a lower bound of it that b x the bound at b = 1 stays under for any micro-batch b (`tfcost plan`'s
    `shape_bound`): the GEMMs at the GPU's best efficiency with no wave lost (wave efficiency is at most 1), the
    parts that do not grow with b (ring latency, FP8's weight casts) left out; every other part is linear in b."""
    t, c, b, s = setup.tp, setup.cp, setup.micro_batch, setup.seq_len
    model = model_of(shape)
    n_layers = model.n_layers
    element = activations.ACTIVATION_BYTES[setup.precision]
    bandwidth = hardware.bandwidth_bytes_per_s(gpu)
    tokens = b * s // c
    per_gpu = b / (n_layers * t * c)  # one layer's share of a micro-batch's forward FLOPs on one GPU
    attention_flops = model.attention_flops(s) * per_gpu  # QK^T, AV (cross-attention's too) and an indexer's
    # A fused kernel skips the blocks a causal mask hides, and its measured efficiency is over the kept entries:
    # FlashAttention's benchmark counts "f = 4 * batch * seqlen**2 * nheads * headdim // (2 if causal else 1)"
    # (Dao-AILab/flash-attention benchmarks/benchmark_flash_attention.py), the FLOPs FLASH_EFFICIENCY's 225
    # TFLOP/s are measured in. A dense kernel computes every score entry whatever the mask (below).
    flash_flops = model.attention_flops(s, causal=True) * per_gpu
    if ideal:
        assert gpu.matmul_efficiency is not None  # can_predict
        efficiency = gpu.matmul_efficiency * training_matmul_share(setup.zero)
        flops = layer_matmuls(shape, b, t, s, c, setup.expert_tp, expert_load(shape, setup))[3]
        precision_scale = FP8_TRAINING_GEMM_FRACTION / gpu.matmul_efficiency if setup.precision == "fp8" else 1.0
        matmul_fwd = flops / (training.peak_flops_per_s(gpu, setup.precision) * efficiency * precision_scale)
    else:
        gemm = matmul_terms(shape, gpu, setup)
        efficiency, matmul_fwd = gemm.efficiency, gemm.seconds
    attention_peak = attention_peak_flops_per_s(gpu, training.compute_dtype(setup.precision), setup.fp8_attention)

    d = shape.d_model
    d_wide = shape.block_norms * 2 * element + 2 * (
        3 * element + activations.DROPOUT_MASK_BYTES
    )  # norms, residual adds
    activation = element * model.activation_elements_per_token()  # the MLP rows' activations (none without an MLP)
    elementwise_fwd = tokens * (d_wide * d / (t if setup.sequence_parallel else 1) + activation / t) / bandwidth
    if setup.kernels != "fused":
        elementwise_fwd += tokens * eager_bytes_per_token(shape, setup, element) / bandwidth
    elementwise_fwd += parallel.permute_bytes(shape, setup) * moe_share(shape) / bandwidth  # MoE token permutes
    if setup.flash:
        # its rate over the kept entries: a causal run gains 1.7-1.8x, not 2x (costs/efficiency.py)
        skip = causal_skip_efficiency(flash_flops, attention_flops)
        flash = flash_attention_efficiency(gpu, setup.flash_kernel) * skip
        attention_fwd = flash_flops / (attention_peak * flash)
        attention_bwd = FLASH_BACKWARD_FACTOR * attention_fwd
    else:  # the score entries each scores row's heads materialise, split over t by heads and c by queries
        entries = b * model.score_entries(s) / (n_layers * t * c)
        attention_fwd = attention_flops / (attention_peak * efficiency) + entries * SCORE_BYTES_PER_ENTRY / bandwidth
        attention_bwd = 2 * attention_fwd

    activations_bytes = tokens * d * element
    tp_unit = ring_seconds(activations_bytes, t, link_bandwidth(gpu, t, True)) if t > 1 else 0.0
    tp_fwd_units, tp_bwd_units = tp_collective_units(setup, element)
    # the share async TP leaves exposed; it overlaps sequence parallelism's collectives, none without it
    tp_exposed = ASYNC_TP_EXPOSED_SHARE if setup.async_tp and setup.sequence_parallel else 1.0
    tp_fwd, tp_bwd = tp_fwd_units * tp_unit * tp_exposed, tp_bwd_units * tp_unit * tp_exposed
    # Ring attention passes each GPU's cached keys and values (what the cache rows hold: 2 K Q for GQA, MLA's
    # latent) around the c ranks: the cache width of one layer, its share on one of t GPUs.
    kv_bytes = tokens * model.cache_width(t) / n_layers * element
    cp_fwd = 0.0
    if c > 1:
        cp_fwd = (c - 1) * kv_bytes / link_bandwidth(gpu, t * c, True)
        cp_fwd += 0.0 if ideal else cp_ring_latency_seconds(gpu, setup)

    ep_comm = ep_seconds(shape, gpu, setup)

    # FP8's quantization passes (0 otherwise)
    cast_fwd, cast_bwd = (0.0, 0.0) if ideal else fp8_cast_seconds(shape, gpu, setup)
    recompute = {
        "none": 0.0,
        "selective": attention_fwd,
        "selective-op": matmul_fwd * training.op_sac_recompute_share(shape, setup.precision) + elementwise_fwd,
        "full": matmul_fwd + attention_fwd + elementwise_fwd + cast_fwd + tp_fwd + cp_fwd,
    }[setup.recompute]
    matmuls = (2 if setup.lora_rank is not None else 3) * matmul_fwd  # a frozen base has no weight grads
    if not ideal and setup.lora_rank is None:
        matmuls += expert_gemm_output_seconds(shape, gpu, setup)
    if setup.ep_overlap:  # the all-to-alls on their own stream beside another micro-batch's compute
        compute = matmuls + attention_fwd + attention_bwd + 3 * elementwise_fwd + cast_fwd + cast_bwd + recompute
        assert gpu.sm_count is not None  # can_predict
        ep_comm = max(ep_comm - compute, ep_comm * EP_COMM_SMS / gpu.sm_count)
    return {
        "matmuls": matmuls,
        "attention": attention_fwd + attention_bwd,
        "memory_bound": 3 * elementwise_fwd + cast_fwd + cast_bwd,
        "recompute": recompute,
        "tp_comm": tp_fwd + tp_bwd,
        "cp_comm": 3 * cp_fwd,
        "ep_comm": ep_comm,
    }


# FP8 training's quantization passes around each FP8 linear layer (`--precision fp8`), memory-bound at the HBM rate.
# Transformer Engine v0.10 (the version llm-foundry's fp8 tables installed; transformer_engine/pytorch/module/
# linear.py and module/base.py at tag v0.10) runs per te.Linear and micro-batch:
# - forward, the input: "inputmat, inputmat_t = fp8_cast_transpose_fused(inputmat, fp8_meta["scaling_fwd"], ...)";
# - forward, the weight: "update_fp8_weights = is_first_microbatch is None or is_first_microbatch" then
#   "fp8_cast_transpose_fused(weight, ..., cast_out=weight_fp8, transpose_out=weight_t_fp8)": every micro-batch
#   unless the caller passes is_first_microbatch (llm-foundry's MPT never does: the name appears nowhere in
#   llmfoundry/ at 061f2c7, whose fc.py registers "FC_CLASS_REGISTRY['te'] = te.Linear"); the weight is read at
#   e bytes (FSDP's gathered dtype under Composer's DEFAULT mixed precision not checked here: 4 if fp32);
# - backward, the output gradient: grad_output_preprocess's "grad_output_c, grad_output_t =
#   fp8_cast_transpose_fused(grad_output_mat, ctx.fp8_meta["scaling_bwd"], ...)"; dgrad and wgrad then read the
#   saved FP8 weight_t_fp8 and inputmat_t, no further cast.
# Each cast-transpose reads its e-byte tensor once and writes two 1-byte copies, its amax reduced in the same kernel
# ("/* warp tile amax reduce*/ ... if (amax != nullptr) atomicMaxFloat(amax, max);", common/transpose/
# cast_transpose.cu at v0.10): e + 2 bytes an element. Delayed scaling's amax history and scale update touch one
# scalar per tensor: not priced.
# torchao's float8 training with tensorwise dynamic scaling (torchtitan's cases; torchao 0afa4c1) counts the same
# passes in its own roofline (torchao/testing/float8/roofline_utils.py, get_tensor_memory_traffic_ovhd_s): an input
# or output gradient "kernel 1: x_bf16 -> max_abs_stage_1 -> tmp" (free "if fuse_with_prev", as torch.compile fuses
# it into the op that made the tensor) and "kernel 3: read in bf16, write twice in float8 (row-major and col-major)":
# e + 2 bytes an element, as Transformer Engine's; a weight "kernel 3 (fwd): x_bf16, max_abs -> to_float8 ->
# x_fp8_dim0" and "kernel 4 (bwd)" for the other layout, 2(e + 1) bytes, where it is priced here at Transformer
# Engine's e + 2 (the weights' casts are a few percent of these passes on the validation's torchtitan runs). Under
# FSDP2's float8 all-gather (`--fsdp-float8-all-gather`) the weight is cast on its 1/N_d shard before the gather and
# the layer skips its own cast (the comment above fsdp_float8_weight_share).
# Under sequence parallelism both cast a d-wide activation on its 1/t shard before the all-gather: Transformer
# Engine's forward casts "inputmat" and then "if parallel_mode == "column" and sequence_parallel: inputmat_total, _ =
# gather_along_first_dim(inputmat, tp_group)", and its backward "cast_to_fp8(grad_output_mat, ...)" before
# "gather_along_first_dim(grad_output_c, ctx.tp_group)" (a row-parallel layer's output gradient); torchao's
# Float8ColwiseParallel "input_tensor = hp_tensor_to_float8_dynamic(...)  # DTensor(Float8Tensor)" then
# "input_tensor.redistribute(...)", and for the output gradient "fwd noop bwd cast" (torchao/float8/
# float8_tensor_parallel.py at 0afa4c1). A GEMM's d-wide input or output gradient is then counted over t.
FP8_CAST_WRITE_BYTES = 2  # the cast and its transpose, one byte each (E4M3 / E5M2)


def fp8_cast_seconds(shape: ModelShape, gpu: GpuSpec, setup: TrainingSetup) -> tuple[float, float]:
    """(forward, backward) seconds of one layer's FP8 quantization passes for one micro-batch on one GPU (the comment
    above), the average over the layers: forward each linear GEMM's input (rows x inner) and weight (inner x cols,
    E / e of them for a routed expert GEMM) cast-transposed, backward its output gradient (rows x cols), each at
    e + FP8_CAST_WRITE_BYTES bytes an element, a d-wide one over t under sequence parallelism. (0, 0) unless
    `--precision fp8`."""
    if setup.precision != "fp8":
        return 0.0, 0.0
    grouped, _, n_layers, _ = layer_matmuls(shape, setup.micro_batch, setup.tp, setup.seq_len, setup.cp)
    d, t = shape.d_model, setup.tp

    def shard(width: int) -> float:  # a d-wide tensor's share under sequence parallelism (the comment above)
        return 1 / t if setup.sequence_parallel and width == d else 1.0

    # under FSDP's float8 all-gather the weight is cast on its 1/N_d shard before each gather, and the layer finds it
    # already in FP8 (fsdp_float8_weight_share's comment)
    weight_share = 1 / (setup.data_parallel * setup.cp) if training.gathers_float8(setup) else 1.0
    forward = sum(
        rows * inner * shard(inner) + max(1, experts // setup.ep) * inner * cols * weight_share
        for rows, inner, cols, experts in grouped
    )
    backward = sum(rows * cols * shard(cols) for rows, _, cols, _ in grouped)
    per_element = activations.ACTIVATION_BYTES[setup.precision] + FP8_CAST_WRITE_BYTES
    seconds_per_element = per_element / (n_layers * hardware.bandwidth_bytes_per_s(gpu))
    return forward * seconds_per_element, backward * seconds_per_element


# Under `--precision fp8` with sequence parallelism the all-gathers of the tensor-parallel region move the FP8 copy,
# one byte an element, while the reduce-scatters move the GEMMs' e-byte outputs and input gradients. torchao's
# float8 tensor parallelism (torchao/float8/float8_tensor_parallel.py at eab345c, the torchao of torchtitan's Dec 2024
# H100 tables, which torchtitan 9dec370's apply_tp uses "if enable_float8": Float8ColwiseParallel,
# Float8RowwiseParallel, PrepareFloat8ModuleInput):
# - the forward all-gathers of a block's input: PrepareFloat8ModuleInput "after we prepare the input DTensor, we cast
#   the input to DTensor(Float8Tensor) ... This is to ensure the float8 cast happens before the all-gather (i.e.
#   Shard -> Replicate)", then "dt_inp = dt_inp.redistribute(placements=(desired_layout,))";
# - the backward all-gathers of a row-parallel layer's output gradient: the forward's "outputs =
#   outputs.redistribute(placements=output_layouts, async_op=True)" (the reduce-scatter) is followed by "# fwd noop bwd
#   cast to DTensor(Float8Tensor)" NoopFwToFloat8BwDynamic, so backward casts the gradient's shard before the
#   redistribute's backward gathers it;
# - the reduce-scatters of the row-parallel outputs and of the column-parallel inputs' gradients: the GEMMs' high-
#   precision results, e bytes.
# Transformer Engine (v0.10, the comment above fp8_cast_seconds) gathers the cast input and the cast output gradient
# likewise. torchtitan 9dec370's docs/float8.md: "For TP, ... For input, we cast sharded input into float8 and perform
# float8 all-gather for unsharded input." The redone all-gathers (Megatron-LM's, for the weight gradients) are counted
# as before, now of the FP8 copy, as Transformer Engine's Linear backward redoes it: "if ctx.fp8 and not
# ctx.fp8_meta["recipe"].override_linear_precision.wgrad: inputmat_t_total, handle = gather_along_last_dim(inputmat_t,
# ctx.tp_group, ...)" (module/linear.py). PyTorch's DTensor tensor parallelism (torchtitan) does not: the column-
# parallel linear's matmul saves the input it is given, already gathered by ColwiseParallel's redistribute (torchao's
# Float8ColwiseParallel: "input_tensor = input_tensor.redistribute(placements=desired_input_layouts, async_op=True)",
# float8_tensor_parallel.py; its float8 matmul: "ctx.save_for_backward(input_fp8, weight_fp8_t)", float8_linear.py,
# both at eab345c; a bf16 nn.Linear saves its input likewise), and the all-gather's backward is the reduce-scatter of
# the input's gradient. So under `--tp-keeps-gathered-input` the backward has 2 all-gathers (of the row-parallel
# outputs' gradients) and 2 reduce-scatters, not Megatron-LM's 4 + 2 (issue 22: read at the merge of step-titan,
# which had found and left it; it moves #16 and #17 further over their figures). The gathered inputs it keeps are
# memory the activation fold (Korthikanti et al.'s sequence-parallel count) does not hold; under full recomputation,
# as #16 and #17 run, only the layers' inputs are kept and nothing changes.
FP8_GATHER_BYTES = 1  # E4M3 / E5M2


# Async tensor parallelism (`--async-tp`): torchtitan 9dec370's apply_tp, "if enable_async_tp: ...
# torch._inductor.config._micro_pipeline_tp = True; enable_symm_mem_for_group(tp_mesh.get_group().group_name)" (it
# "requires --training.compile"): torch.compile splits each sequence-parallel all-gather + matmul and matmul +
# reduce-scatter into per-rank chunks whose symmetric-memory copies run beside the chunks' GEMMs. How much stays exposed
# no source states; PyTorch's post gives only end-to-end figures ("Up to ~20% forward pass speedup and ~8% E2E speedup
# in Llama3 70B", "[Distributed w/ TorchTitan] Introducing Async Tensor Parallelism in PyTorch",
# discuss.pytorch.org/t/209487), and hiding every collective under the GEMMs would overshoot: #16's layout would run at
# 1,150 TPS/GPU, not the 876 measured. So the share is fitted to the one measured pair on a fitted case's layout:
# torchtitan docs/performance.md at eaea6f6, Table 4 (Llama 3.1 70B, 256 H100s, FSDP 32 x TP 8, compile, Float8, full
# AC, local batch 16, torch 1963fc8): "| 2D | 829 |" (fitted case #16) and "| 2D + AsyncTP | 876 |" (not a validation
# case). The share that keeps tfcost's '2D + AsyncTP' prediction at the ratio of its '2D' one (876 / 829 of it) is 0.775
# with DTensor's backward (`--tp-keeps-gathered-input`, both rows; 0.794 when it was first fitted with Megatron-LM's
# re-gathers): the TP collectives' time, forward, backward and recomputed, x 0.78. It applies to #17 (Table 5: "3D ... +
# Float8 + AsyncTP", same torch), which it moved from 1.002 to 1.042 when first fitted: the pair's 5.7% gain on 70B is
# larger, relative to tfcost's TP pricing, than #17's row wants. torchtitan's June 2025 benchmark (benchmarks/
# asyncTP_llama3_h100_2025-06_torchtitan.md, torch 38410cf9) measures 1.16x on the same 70B layout in float8 and 1.09x
# in bf16 with a later torch: the share is for torch 1963fc8's async TP.
ASYNC_TP_EXPOSED_SHARE = fitted.ASYNC_TP_EXPOSED_SHARE.value  # fitted (tfcost.costs.fitted)


def tp_collective_units(setup: TrainingSetup, element: int) -> tuple[float, float]:
    """(forward, backward) tensor-parallel collectives of one layer, in ring passes of the b x T/c x d activations at
    `element` bytes: 4 all-reduce halves and 4 without sequence parallelism; with it 2 all-gathers and 2
    reduce-scatters forward, 4 all-gathers (2 redone for the weight gradients; 2 under `--tp-keeps-gathered-input`)
    and 2 reduce-scatters backward, the all-gathers at FP8_GATHER_BYTES / element of a pass under `--precision fp8`
    (the comment above)."""
    if not setup.sequence_parallel:
        return 4.0, 4.0
    gather = FP8_GATHER_BYTES / element if setup.precision == "fp8" else 1.0
    backward_gathers = 2 if setup.tp_keeps_gathered_input else 4
    return 2 * gather + 2, backward_gathers * gather + 2


def cp_ring_latency_seconds(gpu: GpuSpec, setup: TrainingSetup) -> float:
    """The latency of one context-parallel collective over the c ranks (RING_BASE_LATENCY_S and a step latency for
    each of its c - 1 steps, NCCL's model), besides its bytes. Ranks are ordered tensor first, then context (Llama 3:
    "we place parallelism dimensions in the order of [TP, CP, PP, DP]"; Megatron-LM's "tp-cp-ep-dp-pp"), so a node
    holds n / t of the c ranks and t 8 on a node of 8 puts every rank on its own node: c - 1 network steps. Llama 3
    all-gathers K and V this way, and "the all-gather communication latency is exposed in the critical path" (Dubey
    et al. 2024 §3.3.2). Zero without context parallelism."""
    c = setup.cp
    if c == 1:
        return 0.0
    per_node = max(1, min(c, node_size(gpu) // setup.tp))
    nodes = ceil_div(c, per_node)
    nvlink = (gpu.intra_node_link or "").lower().startswith("nvlink")  # NCCL's NVLink or PCI intra-node latency
    intra = NVLINK_STEP_LATENCY_S if nvlink else PCI_STEP_LATENCY_S
    return RING_BASE_LATENCY_S + (c - nodes) * intra + (nodes - 1) * NETWORK_STEP_LATENCY_S


def layer_forward_seconds(parts: dict[str, float], setup: TrainingSetup) -> float:
    """The forward share of one layer's parts (`layer_seconds`): a third of the matmuls (half under LoRA: no
    weight gradients), 1/(1 + backward factor) of attention, a third of the memory-bound ops, the forward's
    tensor-parallel collectives (4 of 8, or 4 of 10 with sequence parallelism, its all-gathers at their FP8 size
    under `--precision fp8`: `tp_collective_units`), a third of the context-parallel
    exchanges and half the expert all-to-alls. The rest, recomputation included, is the backward pass."""
    attention_share = 1 / (1 + (FLASH_BACKWARD_FACTOR if setup.flash else 2))
    tp_forward, tp_backward = tp_collective_units(setup, activations.ACTIVATION_BYTES[setup.precision])
    tp_share = tp_forward / (tp_forward + tp_backward)
    return (
        parts["matmuls"] / (2 if setup.lora_rank is not None else 3)
        + parts["attention"] * attention_share
        + parts["memory_bound"] / 3
        + parts["tp_comm"] * tp_share
        + parts["cp_comm"] / 3
        + parts["ep_comm"] / 2
    )


def eager_bytes_per_token(shape: ModelShape, setup: TrainingSetup, element: int) -> float:
    """What one layer's eager elementwise ops read and write per token on one GPU beyond the fold, forward (the
    constants above): the block's RMSNorms (split over t with sequence parallelism; none under `fused-norm`, whose
    norm is one fused kernel, as the fold counts it), rotary on queries and keys and the SwiGLU product's extra pass
    (split over t by heads and columns)."""
    t = setup.tp
    eager_norms = shape.norm == "rmsnorm" and setup.kernels == "eager"
    norms = shape.block_norms * shape.d_model * (EAGER_RMSNORM_FP32_BYTES + 2 * element) if eager_norms else 0
    rotary = 0
    if shape.position == "rotary":
        rotary = (shape.n_heads + shape.n_kv_heads) * shape.head_dim * (EAGER_ROTARY_FP32_BYTES + 2 * element)
    gated = model_of(shape).activation_elements_per_token() / 3 if shape.mlp == "gated" else 0.0  # F of 3 tensors
    return norms / (t if setup.sequence_parallel else 1) + (rotary + 2 * element * gated) / t


# A full fp32 cross-entropy (`--loss full`): torchtitan's "torch.nn.functional.cross_entropy(pred.flatten(0,
# 1).float(), labels.flatten(0, 1))" (train.py's loss_fn) runs eager over every logit: forward the upcast (e + 4) and
# log_softmax (reads 4, writes 4); backward nll_loss's fp32 gradient (writes 4), log_softmax's (reads 8, writes 4) and
# the upcast's (reads 4, writes e): 32 + 2e bytes a logit at the HBM rate.
LOSS_FP32_BYTES_PER_LOGIT = 32


def loss_seconds(shape: ModelShape, gpu: GpuSpec, setup: TrainingSetup) -> float:
    """The full fp32 loss's memory traffic for one micro-batch on the last stage (`--loss full`; the logits split
    over t, torchtitan's loss_parallel), 0 for the other loss modes (not priced)."""
    if setup.loss != "full":
        return 0.0
    element = activations.ACTIVATION_BYTES[setup.precision]
    logits = setup.micro_batch * setup.seq_len / (setup.tp * setup.cp) * shape.vocab_size
    return logits * (LOSS_FP32_BYTES_PER_LOGIT + 2 * element) / hardware.bandwidth_bytes_per_s(gpu)


# Metrics over the logits (`--logit-metrics N`): Composer's trainer updates every train metric on each micro-batch's
# logits after its backward, "if self.state.train_metrics is not None and len(self.state.train_metrics) != 0: ...
# self._eval_train_metrics(device_batch)" (composer/trainer/trainer.py at v0.16.4, the <0.17 that llm-foundry's
# setup.py at 061f2c7 asks for), which reuses the training outputs ("output = outputs if outputs else
# self.forward(batch)", models/huggingface.py) under the training precision context. llm-foundry's MPT asks for two,
# "train_metrics = [LanguageCrossEntropy(), LanguagePerplexity()] if use_train_metrics else []" (use_train_metrics
# defaults True, modeling_mpt.py at 061f2c7), and each update runs "torch.nn.CrossEntropyLoss(ignore_index=ignore_index,
# reduction='sum')" over every logit (composer/metrics/nlp.py; LanguagePerplexity subclasses LanguageCrossEntropy and
# inherits its update). Forward only, under torch.no_grad. Under autocast (bf16-mixed: Composer's amp_bf16 is
# "torch.cuda.amp.autocast(enabled=True, dtype=torch.bfloat16)") cross_entropy is one of the "CUDA Ops that can autocast
# to float32" (PyTorch's torch.amp docs): the upcast reads e and writes 4, log_softmax reads 4 and writes 4; without it
# (Composer's amp_fp8 is "te.fp8_autocast" alone, composer/core/precision.py) log_softmax reads and writes e. The
# nll_loss gathers one entry a row: left out.
METRIC_FP32_BYTES_PER_LOGIT = 12


def metric_seconds(shape: ModelShape, gpu: GpuSpec, setup: TrainingSetup) -> float:
    """The logit metrics' memory traffic for one micro-batch on the last stage (`--logit-metrics`), the logits split
    over t; 0 without metrics."""
    if setup.logit_metrics == 0:
        return 0.0
    element = activations.ACTIVATION_BYTES[setup.precision]
    per_logit = element + METRIC_FP32_BYTES_PER_LOGIT if setup.precision == "bf16-mixed" else 2 * element
    logits = setup.micro_batch * setup.seq_len / (setup.tp * setup.cp) * shape.vocab_size
    return setup.logit_metrics * logits * per_logit / hardware.bandwidth_bytes_per_s(gpu)


def ep_seconds(shape: ModelShape, gpu: GpuSpec, setup: TrainingSetup) -> float:
    """One layer's expert-parallel all-to-alls (dispatch and combine, forward and backward), the average over the
    layers: the copies to GPUs of this node over its link and those to other nodes over the network
    (`parallel.all_to_all_split`), at once, so the slower of the two. NCCL's all-to-all (torch's all_to_all_single,
    Megatron-Core's alltoall dispatcher) is one group of sends and receives to every peer, each on its own link."""
    if setup.ep == 1:
        return 0.0
    inside = parallel.expert_ranks_per_node(setup, node_size(gpu))
    intra, inter = parallel.all_to_all_split(shape, setup, node_size(gpu))
    seconds = intra / link_bandwidth(gpu, inside * setup.expert_tp, True) if intra else 0.0
    if inter:
        seconds = max(seconds, inter / link_bandwidth(gpu, setup.ep, False))
    # the experts' tensor-parallel all-gathers and reduce-scatters around it, on the node's link (etp ranks adjacent)
    etp_bytes = parallel.expert_tp_bytes(shape, setup)
    if etp_bytes:
        seconds += etp_bytes / setup.expert_tp / link_bandwidth(gpu, setup.expert_tp, True)
    return seconds * moe_share(shape)


def overlapped_seconds(bucket: float, window: float, buckets: int, sm_share: float = 0.0) -> float:
    """Exposed time of `buckets` equal collectives, each launched as one layer's compute ends and run while the
    next layer computes for `window` seconds: the last bucket has nothing left to hide under, and a bucket longer
    than its window delays the next. While a hidden bucket runs, its NCCL kernel holds `sm_share` of the SMs
    (`nccl_sm_share`): the window's compute runs on the rest, so it ends c x share later, or the bucket outlasts it:
    c + (n - 1) max(0, c - w, c x share), as ep_seconds prices the overlapped all-to-alls. Calculon's
    data_par_overlap (calculon/llm/llm.py: every chunk but the last overlapped, the excess exposed) plus that
    share."""
    if bucket == 0:
        return 0.0
    return bucket + (buckets - 1) * max(0.0, bucket - window, bucket * sm_share)


def moe_share(shape: ModelShape) -> float:
    """Share of the layers that are MoE layers (the others have no all-to-all)."""
    if shape.moe is None:
        return 0.0
    return moe_layer_count(shape) / layer_count(shape)


# FP8 training runs the layers' linear rows in FP8 and leaves the output head in BF16, in every engine the validation
# cases ran: Transformer Engine casts only its own modules, and llm-foundry's FP8 tables swap those in for the layers
# alone ("parameters['model']['fc_type'] = 'te'", scripts/train/benchmarking/submit_benchmarks.py at 061f2c7) while
# MPT's head stays the tied embedding's "return F.linear(input, self.weight)" (llmfoundry/models/layers/
# custom_embedding.py); torchtitan's float8 converts "module_filter_fn=lambda mod, fqn: fqn != \"output\"" (torchao's
# convert_to_float8_training); DeepSeek-V3 keeps "the original precision (e.g., BF16 or FP32) for ... the embedding
# module, the output head, MoE gating modules, normalization operators, and attention operators" (report §3.3.1).


def head_seconds(shape: ModelShape, gpu: GpuSpec, setup: TrainingSetup) -> float:
    """The matmuls outside the layers (the output head, and an embedding projection or pooler where a model has
    them) forward and backward for one micro-batch, on the last stage, split over t (vocabulary parallel), at the
    GPU's measured matmul efficiency, in BF16 under FP8 training (the engines' sources above)."""
    if setup.precision == "fp8":
        peak = hardware.peak_flops_per_s(gpu, "bf16")
        assert peak is not None  # the bf16 peak is a required field
    else:
        peak = training.peak_flops_per_s(gpu, setup.precision)
    assert gpu.matmul_efficiency is not None
    outside = model_of(shape).outside_linear_flops(setup.seq_len)
    return (
        3
        * outside
        * setup.micro_batch
        / (setup.tp * setup.cp)
        / (peak * gpu.matmul_efficiency * training_matmul_share(setup.zero))
    )


def step_seconds(
    shape: ModelShape, gpu: GpuSpec, setup: TrainingSetup, layer: dict[str, float] | None = None
) -> dict[str, float]:
    """One optimizer step, by part, on the busiest pipeline stage; "total" is their sum. `layer`: this setup's
    `layer_seconds` when the caller has it (a plan search reuses it across v, ZeRO and offload)."""
    stages = parallel.setup_stages(shape, setup)
    layer = layer_seconds(shape, gpu, setup) if layer is None else layer
    head = head_seconds(shape, gpu, setup)
    loss = loss_seconds(shape, gpu, setup) + metric_seconds(shape, gpu, setup)
    per_layer = sum(layer.values())
    times = [n * per_layer + (head + loss if i == len(stages) - 1 else 0.0) for i, n in enumerate(stages)]
    busiest = max(range(len(stages)), key=lambda i: times[i])
    m, v, p = parallel.micro_batches(setup), setup.virtual_stages, setup.pp
    element = activations.ACTIVATION_BYTES[setup.precision]
    boundary = setup.micro_batch * setup.seq_len // setup.cp * shape.d_model * element / setup.tp
    # Pipeline stages are the outermost ranks (Megatron-LM's order tp-cp-ep-dp-pp): neighbours share a node only
    # when the whole run fits in one, else the send crosses the network.
    p2p = 2 * v * boundary / link_bandwidth(gpu, setup.gpus, True) if p > 1 else 0.0
    micro_batch = times[busiest] + p2p

    n_layers = stages[busiest]
    parts = {key: m * n_layers * value for key, value in layer.items()}
    parts["matmuls"] += m * (head if busiest == len(stages) - 1 else 0.0)
    parts["memory_bound"] += m * (loss if busiest == len(stages) - 1 else 0.0) + fsdp2_copy_seconds(shape, gpu, setup)
    parts["pp_comm"] = m * p2p
    parts["bubble"] = parallel.bubble_fraction(p, m, v) * m * micro_batch

    parts["dp_comm"] = dp_seconds(shape, gpu, setup, n_layers, layer)
    held = training.model_state_bytes_per_gpu(
        params.total_params(shape),
        setup.precision,
        setup.optimizer,
        setup.zero,
        setup.data_parallel * setup.cp,
        setup.tp * p,
    )
    parts["optimizer"] = 2 * sum(held.values()) / hardware.bandwidth_bytes_per_s(gpu)
    parts["total"] = sum(parts.values())
    return parts


def stage_params_per_gpu(shape: ModelShape, setup: TrainingSetup) -> float:
    """The parameters one GPU's stage holds unsharded: the routed experts split over e, the rest over t x p."""
    experts = parallel.routed_expert_params(shape) if setup.ep > 1 or setup.expert_tp != setup.tp else 0
    return (params.total_params(shape) - experts) / (setup.tp * setup.pp) + experts / (
        setup.ep * setup.expert_tp * setup.pp
    )


# FSDP2 (PyTorch's fully_shard, `--fsdp2`) copies on the GPU what it gathers and reduces (torch/distributed/
# _composable/fsdp/_fsdp_collectives.py at pytorch 01d66d2; later versions make the same two calls, as
# torch.ops.fsdp.split_with_sizes_copy and foreach_reduce_scatter_copy_in):
# - foreach_all_gather_copy_out, after each all-gather, on the compute stream: "torch.split_with_sizes_copy(
#   all_gather_output, all_gather_input_split_sizes, dim=1, out=out)" into every unsharded parameter: the layer's
#   weights read and written once, 2e bytes a parameter, each forward and (resharded after it) each backward;
# - foreach_reduce_scatter_copy_in, before each reduce-scatter: "reduce_scatter_input = torch.empty(
#   (reduce_scatter_input_numel,), dtype=reduce_dtype, ...)" and "torch.cat(grad_views, dim=-1,
#   out=reduce_scatter_input.view(world_size, -1))": each e-byte gradient read and written in the fp32 reduce dtype
#   (torchtitan's mixed_precision_reduce float32), e + 4 bytes a parameter;
# - the all-gather's copy-in (torch._foreach_copy_ of the 1/n shard) and the reduce-scatter's 1/n output: not priced.
# FSDP1 (llm-foundry, Composer) has none of these: it all-gathers into one flat buffer the parameters are views of
# ("_use_unsharded_flat_param ... This is a view into the *padded* unsharded flat parameter", torch/distributed/fsdp/
# _flat_param.py) and reduce-scatters the flat gradient as it is.


# FSDP2 with torchao's float8 all-gather (`--fsdp-float8-all-gather`; torchtitan's
# "--float8.enable_fsdp_float8_all_gather": "cast `Float8Linear.weight` from high precision to float8 before FSDP
# all-gather so we can communicate in float8 to save bandwidth", torchtitan 9dec370 docs/float8.md). torchao eab345c
# torchao/float8/fsdp_utils.py, WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather casts the local shard
# ("float8_tensor = hp_tensor_and_scale_to_float8(self._tensor, self._precomputed_scale, ...)", or
# hp_tensor_to_float8_dynamic with
# "reduce_amax=True") and "return (float8_tensor._data,), (float8_tensor._scale,)": the gather and its copy-out move one
# byte a weight element; torchao/float8/float8_linear.py's cast_weight_to_float8_t then skips the layer's own cast:
# "if tensor_already_casted_to_fp8(weight): return weight.t()". Only Float8Linear weights (torchtitan converts every
# nn.Linear but the output head: 'module_filter_fn=lambda mod, fqn: fqn != "output"'); norms, embeddings and the head
# gather at e bytes. The shard's cast is priced at the layer cast's bytes over N_d (fp8_cast_seconds); the amax
# all-reduce of precompute_float8_dynamic_scale_for_fsdp, one scalar a weight, is not priced.


def fsdp_float8_weight_share(shape: ModelShape, setup: TrainingSetup) -> float:
    """The share of a stage's per-GPU parameters that FSDP's float8 all-gather moves in FP8: the layers' linear
    weights (`layer_gemms`' inner x cols, E / e of them for a routed expert GEMM) over `stage_params_per_gpu`; 0
    without `--fsdp-float8-all-gather`."""
    if not training.gathers_float8(setup):
        return 0.0
    grouped, _, _, _ = layer_matmuls(
        shape, setup.micro_batch, setup.tp, setup.seq_len, setup.cp, setup.expert_tp, expert_load(shape, setup)
    )
    weights = sum(max(1, experts // setup.ep) * inner * cols for _, inner, cols, experts in grouped)
    return min(1.0, weights / setup.pp / stage_params_per_gpu(shape, setup))


def gathered_bytes_per_param(shape: ModelShape, setup: TrainingSetup) -> float:
    """Bytes a ZeRO-3 all-gather moves (and FSDP2 copies out) per parameter: e, the FP8 linear weights'
    share at FP8_GATHER_BYTES under `--fsdp-float8-all-gather` (the comment above)."""
    element = activations.ACTIVATION_BYTES[setup.precision]
    return element - fsdp_float8_weight_share(shape, setup) * (element - FP8_GATHER_BYTES)


def fsdp2_copy_seconds(shape: ModelShape, gpu: GpuSpec, setup: TrainingSetup) -> float:
    """FSDP2's copies in one step on the busiest stage at the HBM bandwidth (the comment above): each micro-batch's
    all-gathers copied out (forward, and backward unless the weights stay gathered), and each reduce-scatter's input
    copied in (every micro-batch's when gradients are reduced each, else the last's); 0 without `--fsdp2`, or with one
    data-parallel rank."""
    if not training.uses_fsdp2(setup) or setup.data_parallel * setup.cp == 1:
        return 0.0
    m = parallel.micro_batches(setup)
    element = activations.ACTIVATION_BYTES[setup.precision]
    gathers = m * (1 if training.keeps_weights_gathered(setup) else 2)
    reduces = m if training.shards_accumulated_gradients(setup) else 1
    # the gradients copied into the fp32 reduce dtype, as dp_seconds reduces them (training.MAIN_GRADIENT_BYTES)
    copied = gathers * 2 * gathered_bytes_per_param(shape, setup) + reduces * (element + training.MAIN_GRADIENT_BYTES)
    return stage_params_per_gpu(shape, setup) * copied / hardware.bandwidth_bytes_per_s(gpu)


def dp_seconds(shape: ModelShape, gpu: GpuSpec, setup: TrainingSetup, n_layers: int, layer: dict[str, float]) -> float:
    """The data-parallel collectives' exposed time in one step on a stage of `n_layers` layers: its parameters in
    one bucket a layer; per bucket a reduce-scatter of the fp32 gradients of what is trained (the adapters alone
    under LoRA) and an all-gather (together the all-reduce), and under ZeRO-3 an all-gather of every weight in
    every forward and backward, each hierarchical (inside the node on its link, then across nodes:
    `hierarchical_ring_seconds`). Without overlap all of it; with it (the default) `overlapped_seconds` in each
    pass (the module docstring)."""
    replicas, m = setup.data_parallel * setup.cp, parallel.micro_batches(setup)
    if replicas == 1:
        return 0.0
    params_per_gpu = stage_params_per_gpu(shape, setup)
    half = hierarchical_ring_seconds(gradient_bucket_bytes(shape, setup, n_layers), gpu, setup)
    gathered = params_per_gpu / n_layers * gathered_bytes_per_param(shape, setup)
    gather = hierarchical_ring_seconds(gathered, gpu, setup) if setup.zero == 3 else 0.0
    if not setup.dp_overlap:
        every = (m - 1) * half if training.shards_accumulated_gradients(setup) else 0.0
        return n_layers * (2 * half + every + 2 * m * gather)
    forward = layer_forward_seconds(layer, setup)
    backward = sum(layer.values()) - forward
    deferred = half if setup.zero >= 1 else 0.0  # ZeRO's all-gather of the updated weights: next step's forward
    share = nccl_sm_share(gpu)
    first_forward = overlapped_seconds(gather + deferred, forward, n_layers, share)
    last_backward = overlapped_seconds(gather + 2 * half - deferred, backward, n_layers, share)
    # Gradients synced every micro-batch (training.shards_accumulated_gradients): each backward reduce-scatters
    every = half if training.shards_accumulated_gradients(setup) else 0.0
    other_passes = (m - 1) * (
        overlapped_seconds(gather, forward, n_layers, share)
        + overlapped_seconds(gather + every, backward, n_layers, share)
    )
    return first_forward + last_backward + other_passes


def nccl_sm_share(gpu: GpuSpec) -> float:
    """The share of the GPU's SMs an overlapped data-parallel collective's NCCL kernel holds while it runs:
    NCCL_RING_CTAS / SMs on a GPU whose node is joined by NVLink, 0 elsewhere (a PCIe node's rings take a few
    channels, not priced) or where the table has no SM count."""
    nvlink = (gpu.intra_node_link or "").lower().startswith("nvlink")
    if not nvlink or gpu.sm_count is None:
        return 0.0
    return NCCL_RING_CTAS / gpu.sm_count
