"""Achieved fractions of a GPU's datasheet peaks, by precision and kind of work (issue 22), each with its source.

The step-time and serving costs price work at a datasheet peak times the fraction that real kernels reach. These
are the fractions that differ from the BF16 dense case the GPU table's matmul_efficiency (MAMF) describes:

- FP8 matmuls: FP8 GEMMs reach a smaller share of the FP8 peak than BF16 GEMMs of the BF16 peak, and a
  training or serving engine adds the casts and scale (amax) kernels of dynamic quantization around each one.
  Published: the FP8 GEMM itself reaches 1,174-1,343 TFLOP/s at K = 2048 and 1,378-1,467 at K = 4096 of the
  1,979 TFLOP/s FP8 peak on H800 (tilelang benchmark/matmul_fp8/README.md, M = N = 8192), 0.59-0.74; end to end,
  FP8 training gains 1.34-1.51x over BF16 on Llama 3.1 70B and 405B (torchao README, "float8 training"), 1.35x on
  a 13B GPT with Transformer Engine (NVIDIA/Megatron-LM#396), not the 2x of the peaks. FP8_MATMUL_FRACTION is the
  share of the FP8 peak an FP8 linear layer reaches in serving (costs/expected.py), quantization kernels included;
  fitted to the fitted half of validation/cases.yaml only (never to a held-out case). Training prices its
  quantization passes apart (costs/step_time.py, fp8_cast_seconds), so its GEMMs take their own
  FP8_TRAINING_GEMM_FRACTION, the GEMM alone on an idle GPU (times ZERO3_MATMUL_SHARE under ZeRO-3, as BF16's).
- Attention under FP8: Transformer Engine's FP8 recipe, torchao's float8 training (it swaps nn.Linear only) and
  the serving engines' default kernels run scaled-dot-product attention in BF16, so attention is priced at the
  BF16 peak unless the user says the engine runs FP8 attention (`--fp8-attention`, FlashAttention-3's FP8 path).
- Fused attention by GPU generation: FlashAttention-2 reaches "up to 225 TFLOPs/s per A100 GPU (72% model FLOPs
  utilization)" (Dao 2023, abstract), but on Hopper "FlashAttention-2 achieving only 35% utilization on the H100
  GPU" (Shah et al. 2024, FlashAttention-3, abstract): FA2 cannot use Hopper's asynchronous wgmma and TMA. PyTorch's
  SDPA flash backend (torchtitan), llm-foundry's and HF's flash-attn calls run FA2, so fused attention on a Hopper
  GPU is priced at 0.35 of its peak; FA3 ("75% utilization") needs the user's own kernel and is not the default.
- FlashAttention-1-class kernels (`--flash-kernel fa1`): "FlashAttention-2 is around 2x faster than FlashAttention"
  (Dao 2023, §4.1; "1.7-3.0x" in §4), and FlashAttention-1 reached "only 25-40% of the theoretical maximum FLOPs/s"
  (FA2's abstract). llm-foundry's `attn_impl: triton` (its default, and the default of the MPT throughput tables'
  scripts/train/benchmarking/submit_benchmarks.py, `--attn_impl` default 'triton') runs HazyResearch's Triton kernel,
  whose header says "Overall Triton forward + backward is slightly slower than CUDA forward + backward" (the CUDA
  kernel then being FlashAttention-1), so it is priced as FlashAttention-1: FA2's fraction on the GPU / 2.
"""

from __future__ import annotations

from tfcost.costs import fitted
from tfcost.hardware import rates as hardware
from tfcost.schema import FlashKernel, GpuSpec

FLASH_EFFICIENCY = 0.73  # FlashAttention-2 forward+backward on A100: up to 230 of 312 TFLOP/s (Dao 2023, abstract)
HOPPER_FLASH_EFFICIENCY = 0.35  # "FlashAttention-2 achieving only 35% utilization on the H100 GPU" (FA3, abstract)
# Causal block skipping: "This leads to around 1.7-1.8x speedup compared to attention without the causal mask" (Dao
# 2023, §3.1), not the 2x of the FLOPs it skips: over the kept FLOPs a causal kernel reaches 1.75 / 2 of its dense rate
# (FLASH_EFFICIENCY's "up to 230 TFLOPs/s" is then a dense run's).
CAUSAL_SKIP_SPEEDUP = 1.75
FA1_SLOWDOWN = 2.0  # "FlashAttention-2 is around 2x faster than FlashAttention" (Dao 2023, §4.1, A100)
HOPPER_NAMES = ("h100", "h200", "h800", "h20", "gh200")  # GH100/GH200 dies (the GPU table's names start so)

FP8_MATMUL_FRACTION = fitted.FP8_MATMUL_FRACTION.value  # fitted (tfcost.costs.fitted)
FP8_MATMUL_SOURCE = (
    "0.5 of the FP8 dense peak, quantization kernels included (fitted on validation's fitted half; published: FP8 "
    "GEMMs 0.59-0.74 of peak at K 2048-4096, tilelang; 1.34-1.51x end to end over BF16, torchao)"
)
# FP8 GEMMs in a training step, the quantization passes priced apart (step_time.fp8_cast_seconds): the share of the FP8
# peak an FP8 GEMM reaches on an idle GPU, times ZERO3_MATMUL_SHARE under ZeRO-3/FSDP as BF16 GEMMs are (the same
# gathers and reduce-scatters run beside them; every fitted FP8 run that moves with it ran FSDP). Fitted on validation's
# fitted step-time cases only, over the published FP8 GEMM range 0.59-0.74 (tilelang, above) in steps of 0.01: fitted
# step-time geo-mean error 8.27% at 0.59 (with the ZeRO-3 share at 0.78), rising through the range (0.62: 9.11%, 0.70:
# 11.13%; sum |ln ratio| of the FP8 fitted cases 0.195 at 0.59, 0.312 at 0.62, 0.587 at 0.70). Below the range the
# minimum is 0.55 (7.10%), not taken: it is under tilelang's range, though DeepGEMM's README table (H800, M 4096, K >=
# 1536) publishes 0.57-0.77 of the FP8 peak and, divided by its "Speedup" column, 0.47-0.55 for "our internally and
# carefully optimized implementation based on CUTLASS 3.6" (the step-dsv3 pass, issue 22); the only held-out FP8 case
# that moves with it, #75, wants a higher fraction, not a lower one. The fitted FP8 cases' own implied fractions (the
# value that makes each exact, at the 0.78 share): #8 (MPT-3B, Transformer Engine) 0.553, #88 (MPT-1B, T 512) 0.532, #16
# (Llama 3.1 70B, torchao) 0.542, #17 (405B) 0.550; #67 (DeepSeek-V3) does not move with it (its layers are priced by
# their overlapped all-to-alls, step_time.layer_seconds).
FP8_TRAINING_GEMM_FRACTION = fitted.FP8_TRAINING_GEMM_FRACTION.value  # fitted (tfcost.costs.fitted)
# The share of the GPU's MAMF a step's BF16 (FP16, FP32) GEMMs reach under ZeRO-3 / FSDP, where the weights' all-gathers
# and the gradients' reduce-scatters run beside the layers' compute through forward and backward. MAMF is the best rate
# of a sweep over shapes, each GEMM repeated back to back on an idle GPU (ml-engineering's mamf-finder); NCCL's kernels'
# SMs are priced apart (step_time.nccl_sm_share), their HBM traffic and what else slows the GEMMs beside them is not,
# and no source gives it. So this is fitted, on validation's fitted step-time cases only: the share minimising their
# geometric-mean error over 0.70-0.90 in steps of 0.01, with FP8 GEMMs taking it too. It was 0.79 (10.64% then) until
# the FP8 tensor-parallel gathers were priced at one byte and Megatron-LM's 1T run (#70) joined the fitted half (issue
# 22, 2 Dec), when the minimum moved to 0.78 (9.93%); DTensor's tensor-parallel backward (#16, #17,
# `--tp-keeps-gathered-input`) then left the error flat from 0.74 to 0.78 (sum |ln ratio| 1.1914-1.1916 over 15 cases,
# 8.27% since #23's command was corrected, 10.24% before; 8.29% at 0.79, 8.52% at 0.80; 16.7% without the share), and it
# is kept at 0.78 rather than moved a hundredth of a percent. The fitted ZeRO-3 cases' own implied shares (the share
# that makes each exact): BF16 #5 0.71, #7 0.86, #10 0.95, #11 0.79, #13 0.62, #19 0.79, #20 0.90; FP8 #8 0.73, #16
# 0.72, #17 0.73, #88 0.71. Without ZeRO-3 the GEMMs keep MAMF: Korthikanti et al.'s 22B Megatron layer (Table 4, 20.3
# ms; tests/test_step_time.py), not a validation case, is priced at 20.39 ms by MAMF and at 22.38 ms by a share of 0.86
# on every run, which is why the share is not applied there. FP8 GEMMs take it too, over FP8_TRAINING_GEMM_FRACTION
# (above).
ZERO3_MATMUL_SHARE = fitted.ZERO3_MATMUL_SHARE.value  # fitted (tfcost.costs.fitted)
ZERO3_MATMUL_SOURCE = (
    "BF16 GEMMs under ZeRO-3/FSDP at 0.78 of the GPU's MAMF (fitted on validation's fitted step-time cases only; "
    "MAMF is an idle GPU's best over shapes)"
)


def training_matmul_share(zero: int) -> float:
    """What a training step's BF16 GEMMs reach of the GPU's MAMF: ZERO3_MATMUL_SHARE under ZeRO-3, else all of it."""
    return ZERO3_MATMUL_SHARE if zero == 3 else 1.0


BF16_ATTENTION_SOURCE = "attention in BF16 (Transformer Engine, torchao float8 and serving engines keep SDPA in BF16)"


def fp8_matmul_scale(gpu: GpuSpec) -> float:
    """What the GPU's BF16 matmul efficiency (MAMF) is multiplied by for FP8 GEMMs: FP8_MATMUL_FRACTION over it,
    so that FP8 matmuls reach FP8_MATMUL_FRACTION of the FP8 peak (times the shapes' wave efficiency)."""
    assert gpu.matmul_efficiency is not None
    return FP8_MATMUL_FRACTION / gpu.matmul_efficiency


def attention_peak_flops_per_s(gpu: GpuSpec, compute_dtype: str, fp8_attention: bool) -> float:
    """The dense peak attention runs at: the BF16 peak when the matmuls are FP8 and attention is not."""
    dtype = compute_dtype if compute_dtype != "fp8" or fp8_attention else "bf16"
    peak = hardware.peak_flops_per_s(gpu, dtype) or hardware.peak_flops_per_s(gpu, "bf16")
    assert peak is not None  # the bf16 peak is a required field
    return peak


def flash_attention_efficiency(gpu: GpuSpec, kernel: FlashKernel = "fa2") -> float:
    """The share of the attention peak a fused attention kernel reaches forward and backward: FlashAttention-2's 0.35
    on Hopper (FA3's abstract), else FLASH_EFFICIENCY (FA2's A100 figure); a FlashAttention-1-class kernel ("fa1")
    half that (FA1_SLOWDOWN)."""
    fa2 = HOPPER_FLASH_EFFICIENCY if gpu.name.startswith(HOPPER_NAMES) else FLASH_EFFICIENCY
    return fa2 / FA1_SLOWDOWN if kernel == "fa1" else fa2


def causal_skip_efficiency(kept_flops: float, all_flops: float) -> float:
    """What a fused kernel's efficiency is multiplied by over the FLOPs a mask keeps: CAUSAL_SKIP_SPEEDUP / 2 when it
    skips masked blocks (kept < all), else 1."""
    return CAUSAL_SKIP_SPEEDUP / 2 if kept_flops < all_flops else 1.0
