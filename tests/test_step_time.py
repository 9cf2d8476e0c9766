"""The predicted step time against Korthikanti et al. 2022's measured Megatron-LM runs on A100s.

Table 3 (models and layouts) and Table 5 (seconds per iteration with selective recomputation and sequence
parallelism) of arXiv:2205.05198, as transcribed in NVIDIA Calculon's validation (calculon/megatron/validation.py,
validation/*_seqsel.json, which also give the interleaving: 3 virtual stages for 175B and 530B). All use T = 2048, a
51,200-token vocabulary, tensor parallelism 8 inside a DGX A100 and one data-parallel replica. No constant of the
prediction is fitted to these times; the ratios are what the measured GEMM, NCCL and FlashAttention efficiencies give.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_in_process

from tfcost.core import params
from tfcost.costs import engine_memory, step_time
from tfcost.readers.presets import load_gpu, load_model
from tfcost.reports.train import train
from tfcost.schema import ModelShape, TrainingSetup

# name: (d_model, heads, layers, tp, pp, global batch, micro-batch, virtual stages, published seconds per step)
KORTHIKANTI = {
    "22B": (6144, 64, 48, 8, 1, 4, 4, 1, 1.10),
    "175B": (12288, 96, 96, 8, 8, 64, 1, 3, 13.75),
    "530B": (20480, 128, 105, 8, 35, 280, 1, 3, 37.83),
    "1T": (25600, 160, 128, 8, 64, 512, 1, 1, 71.49),
}
MPT_1B = Path(__file__).resolve().parent.parent / "validation" / "models" / "mpt-1b.yaml"
# What the prediction gives today, predicted / published: a change to the model shows up here.
RATIOS = {"22B": 0.936, "175B": 0.942, "530B": 0.906, "1T": 0.959}


def run(name: str) -> tuple[ModelShape, TrainingSetup]:
    d, heads, layers, tp, pp, batch, micro, virtual, _ = KORTHIKANTI[name]
    gpt = load_model("gpt3-175b").model_dump()
    shape = ModelShape(**{**gpt, "name": name, "vocab_size": 51200, "d_model": d, "n_heads": heads,
                          "n_kv_heads": heads, "head_dim": d // heads, "n_layers": layers, "d_ff": 4 * d})  # fmt: skip
    setup = TrainingSetup(tokens=batch * 2048, seq_len=2048, micro_batch=micro, gpus=tp * pp, tp=tp, pp=pp,
                          global_batch=batch, virtual_stages=virtual, sequence_parallel=True,
                          recompute="selective", flash=False)  # fmt: skip
    return shape, setup


@pytest.mark.parametrize("name", sorted(KORTHIKANTI))
def test_korthikanti_step_time_within_15_percent(name):
    shape, setup = run(name)
    report = train(shape, load_gpu("a100-80gb"), setup)
    assert report.step is not None and report.time.throughput_from == "predicted step time"
    predicted = report.step.seconds["total"]
    published = KORTHIKANTI[name][-1]
    assert predicted / published == pytest.approx(1, abs=0.15)
    assert predicted / published == pytest.approx(RATIOS[name], abs=0.005)
    assert report.step.steps == 1  # --tokens = global batch x T: one step
    assert report.time.days * 86_400 == pytest.approx(predicted)


def test_22b_layer_matches_table_4():
    # Korthikanti et al. 2022 Table 4: one 22B layer, selective recompute + sequence parallelism, 7.2 ms forward
    # and 13.1 ms backward: a measurement apart from the step times above.
    shape, setup = run("22B")
    layer = step_time.layer_seconds(shape, load_gpu("a100-80gb"), setup)
    assert sum(layer.values()) * 1e3 == pytest.approx(7.2 + 13.1, rel=0.05)


def test_mfu_implied_beside_the_published():
    # Table 5's MFU with selective recompute + sequence parallelism: 41.5%, 51.4%, 56.0%, 56.3%.
    published = {"22B": 0.415, "175B": 0.514, "530B": 0.560, "1T": 0.563}
    for name, mfu in published.items():
        shape, setup = run(name)
        implied = train(shape, load_gpu("a100-80gb"), setup).time.model_utilization
        assert implied == pytest.approx(mfu, rel=0.15), name


def test_wave_quantization():
    # NVIDIA's guide §3.2: 108 SMs; 108 tiles fill one wave, 109 need two of which the second is nearly empty.
    assert step_time.wave_efficiency(256 * 108, 128, 108) == 1
    assert step_time.wave_efficiency(256 * 109, 128, 108) == pytest.approx(109 / 216)


def test_a_throughput_given_skips_the_prediction():
    shape, setup = run("22B")
    report = train(shape, load_gpu("a100-80gb"), setup.model_copy(update={"mfu": 0.4}))
    assert report.step is None and report.time.model_utilization == pytest.approx(0.4)


def test_a_gpu_without_link_figures_falls_back_to_the_default_mfu():
    shape, setup = run("175B")
    report = train(shape, load_gpu("rtx-4090"), setup)
    assert report.step is None and "the GPU table cannot predict" in report.time.throughput_from


def llama_on_64_h100s(**update) -> tuple[ModelShape, TrainingSetup]:
    """The README's example: Llama-3-8B, 64 H100s data-parallel, ZeRO-1, micro-batch 1, T = 4,096, one step."""
    setup = TrainingSetup(tokens=64 * 4096, seq_len=4096, gpus=64, zero=1)
    return load_model("llama-3-8b"), setup.model_copy(update=update)


def test_unoverlapped_dp_comm_is_the_hierarchical_all_reduce_of_the_fp32_gradients():
    # --no-dp-overlap: the whole all-reduce exposed. 64 H100s are 8 nodes of 8: each half of the all-reduce (reduce-
    # scatter, all-gather) is a ring of 8 inside the node over NVLink 4 (450 GB/s a direction at nccl-tests' 200/300
    # bus efficiency), then a ring of 8 nodes over the 1/8 shard at 96% of 50 GB/s a GPU (NVIDIA/nccl-tests#119).
    # Before the node size (issue 21): one flat ring of 64 over InfiniBand, 2 x 63/64 x 4N / 48 GB/s = 1.3175 s.
    shape, setup = llama_on_64_h100s(dp_overlap=False)
    parts = step_time.step_seconds(shape, load_gpu("h100-sxm"), setup)
    gradients = 4 * 8_030_261_248
    half = 7 / 8 * gradients / (450e9 * 200 / 300) + 7 / 8 * gradients / 8 / (50e9 * 0.96)
    assert parts["dp_comm"] == pytest.approx(2 * half, rel=1e-9)
    assert parts["dp_comm"] == pytest.approx(0.3338, abs=1e-4)  # docs/training.md: 4.71 days at 32.1% MFU


def test_overlap_hides_what_the_compute_covers_and_no_more():
    # Per-layer buckets (Calculon's data_par_overlap): exposed = c + (n - 1) max(0, c - w, c s) in each pass, s = 24 /
    # 132 the SMs NCCL's 24 ring CTAs hold on an H100. Under ZeRO-1 the gradients' reduce-scatter runs under the
    # backward pass, whose layers each outlast a bucket (the last exposed, the 31 others slow the compute by c s),
    # and the updated weights' all-gather under the next forward, whose layers are shorter than a bucket: the 31
    # excesses add up.
    shape, setup = llama_on_64_h100s()
    gpu = load_gpu("h100-sxm")
    parts = step_time.step_seconds(shape, gpu, setup)
    link = step_time.step_seconds(shape, gpu, setup.model_copy(update={"dp_overlap": False}))["dp_comm"]
    layer = step_time.layer_seconds(shape, gpu, setup)
    forward = step_time.layer_forward_seconds(layer, setup)
    backward = sum(layer.values()) - forward
    bucket = link / 32 / 2
    assert forward < bucket < backward
    share = 24 / 132
    assert bucket - forward > bucket * share
    assert parts["dp_comm"] == pytest.approx(2 * bucket + 31 * (bucket - forward) + 31 * bucket * share, rel=1e-9)
    assert parts["dp_comm"] == pytest.approx(0.1087, abs=1e-4)  # docs/training.md: 3.12 days at 48.5% MFU
    assert 0 < parts["dp_comm"] < link


def test_overlap_exposes_only_the_last_bucket_when_compute_covers_the_rest():
    # NeMo's DP overlap "exposes only one DP communication chunk": 32 sequences a micro-batch give each layer's
    # backward more time than its gradient bucket takes, so only the last bucket (the first layer's) is exposed; the
    # 31 hidden ones slow the compute beside them by their time x 24 / 132 (NCCL's 24 ring CTAs on an H100's SMs).
    shape, setup = llama_on_64_h100s(micro_batch=32, tokens=32 * 64 * 4096, zero=0)
    gpu = load_gpu("h100-sxm")
    link = step_time.step_seconds(shape, gpu, setup.model_copy(update={"dp_overlap": False}))["dp_comm"]
    layer = step_time.layer_seconds(shape, gpu, setup)
    backward = sum(layer.values()) - step_time.layer_forward_seconds(layer, setup)
    assert backward > link / 32
    assert step_time.step_seconds(shape, gpu, setup)["dp_comm"] == pytest.approx(
        link / 32 * (1 + 31 * 24 / 132), rel=1e-9
    )


def test_overlapped_seconds():
    assert step_time.overlapped_seconds(2.0, 3.0, 10) == 2.0  # hidden but the last
    assert step_time.overlapped_seconds(3.0, 2.0, 10) == 3.0 + 9 * 1.0  # the excess adds up
    assert step_time.overlapped_seconds(0.0, 2.0, 10) == 0.0
    # NCCL's kernel holding a share s of the SMs: a hidden bucket of c seconds delays the compute beside it by c s,
    # or by its excess c - w when that is larger (the larger of the two)
    assert step_time.overlapped_seconds(2.0, 3.0, 10, 0.25) == 2.0 + 9 * 0.5
    assert step_time.overlapped_seconds(3.0, 2.0, 10, 0.25) == 3.0 + 9 * 1.0
    assert step_time.overlapped_seconds(3.0, 2.5, 10, 0.25) == 3.0 + 9 * 0.75


def test_nccl_sm_share_is_24_ctas_of_the_sms_on_an_nvlink_node():
    # NCCL launches one CTA per channel, 24 channels on an 8-GPU NVSwitch node: HGX A100's log prints "Channel 23/24"
    # (NVIDIA/nccl-tests#100); A100 has 108 SMs, H100 132; a PCIe node is not priced
    assert step_time.nccl_sm_share(load_gpu("a100-80gb")) == pytest.approx(24 / 108, rel=1e-12)
    assert step_time.nccl_sm_share(load_gpu("h100-sxm")) == pytest.approx(24 / 132, rel=1e-12)
    assert step_time.nccl_sm_share(load_gpu("h100-pcie")) == 0.0


def test_fsdp_on_64_a100s_pays_the_nccl_share_of_every_hidden_bucket():
    # torchtitan's Llama 3 8B on 64 A100s (ZeRO-3, one micro-batch): the forward hides 31 weight all-gathers, the
    # backward 31 all-gathers plus fp32 gradient reduce-scatters, each bucket shorter than a layer's compute; with the
    # share, each hidden bucket adds its time x 24/108 (a hand sum over the buckets from dp_seconds' own parts).
    shape = load_model("llama-3-8b")
    gpu = load_gpu("a100-80gb")
    setup = TrainingSetup(tokens=64 * 8192, seq_len=8192, gpus=64, zero=3, global_batch=64, recompute="selective-op")
    layer = step_time.layer_seconds(shape, gpu, setup)
    forward = step_time.layer_forward_seconds(layer, setup)
    backward = sum(layer.values()) - forward
    params_per_layer = params.total_params(shape) / 32
    gather = step_time.hierarchical_ring_seconds(params_per_layer * 2, gpu, setup)
    half = step_time.hierarchical_ring_seconds(step_time.gradient_bucket_bytes(shape, setup, 32), gpu, setup)
    first, last = gather + half, gather + half  # the deferred all-gather half in the forward, the rest backward
    assert first < forward and last < backward
    share = 24 / 108
    expected = first + 31 * first * share + last + 31 * last * share
    assert step_time.step_seconds(shape, gpu, setup)["dp_comm"] == pytest.approx(expected, rel=1e-9)


def test_zero3_gathers_overlap_each_pass():
    # ZeRO-3 gathers every layer's weights in every forward and backward; overlapped, each pass exposes at least
    # its last bucket and never more than the unoverlapped total.
    shape, setup = llama_on_64_h100s(zero=3, global_batch=256, tokens=256 * 4096)
    gpu = load_gpu("h100-sxm")
    overlapped = step_time.step_seconds(shape, gpu, setup)["dp_comm"]
    exposed = step_time.step_seconds(shape, gpu, setup.model_copy(update={"dp_overlap": False}))["dp_comm"]
    assert 0 < overlapped < exposed


def test_no_dp_overlap_through_the_cli(tfcost):
    import json

    args = (
        "train",
        "llama-3-8b",
        "--gpus",
        "64",
        "--gpu",
        "h100-sxm",
        "--zero",
        "1",
        "--global-batch",
        "64",
        "-f",
        "json",
    )
    days = {
        overlap: json.loads(tfcost(*args, "--framework-set", f"dp_overlap={overlap}").stdout)["time"]["days"]
        for overlap in ("true", "false")
    }
    assert round(days["false"], 2) == 4.71 and round(days["true"], 2) == 3.12  # docs/training.md


def test_flash_attention_on_hopper_runs_at_fa2s_35_percent():
    # FlashAttention-2 forward + backward: up to 72% of an A100's peak (Dao 2023), "only 35% utilization on the H100
    # GPU" (Shah et al. 2024, FlashAttention-3's abstract). The same layer's attention, one GPU each, no tp: the
    # H100's time is the A100's x (312 x 0.73) / (989.4 x 0.35).
    shape = load_model("llama-3-8b")
    setup = TrainingSetup(tokens=10**9, seq_len=8192, gpus=1)
    a100 = step_time.layer_seconds(shape, load_gpu("a100-80gb"), setup)["attention"]
    h100 = step_time.layer_seconds(shape, load_gpu("h100-sxm"), setup)["attention"]
    assert h100 / a100 == pytest.approx(312 * 0.73 / (989.4 * 0.35), rel=1e-9)
    # A FlashAttention-1-class kernel (--flash-kernel fa1: flash-attn 1.x, llm-foundry's Triton kernel) at half FA2's
    # rate on either GPU: "FlashAttention-2 is around 2x faster than FlashAttention" (Dao 2023, §4.1).
    fa1 = setup.model_copy(update={"flash_kernel": "fa1"})
    assert step_time.layer_seconds(shape, load_gpu("a100-80gb"), fa1)["attention"] == pytest.approx(2 * a100, rel=1e-12)
    assert step_time.layer_seconds(shape, load_gpu("h100-sxm"), fa1)["attention"] == pytest.approx(2 * h100, rel=1e-12)


def test_flash_attention_is_priced_over_the_entries_the_causal_mask_keeps():
    # FlashAttention skips the blocks a causal mask hides, and its benchmark measures its efficiency over the kept
    # entries: "f = 4 * batch * seqlen**2 * nheads * headdim // (2 if causal else 1)", backward 2.5 x forward
    # (Dao-AILab/flash-attention benchmarks/benchmark_flash_attention.py). Llama-3-8B, one layer, T = 8,192, one
    # A100: QK^T and AV over T(T+1)/2 entries of 32 heads of 128, 2 FLOPs an entry and head dim each.
    shape = load_model("llama-3-8b")
    setup = TrainingSetup(tokens=10**9, seq_len=8192, gpus=1)
    forward = 2 * 2 * 32 * 128 * 8192 * 8193 / 2
    attention = step_time.layer_seconds(shape, load_gpu("a100-80gb"), setup)["attention"]
    assert attention == pytest.approx(3.5 * forward / (312e12 * 0.73 * 1.75 / 2), rel=1e-9)  # "1.7-1.8x", not 2x
    # A dense kernel computes every entry whatever the mask: its QK^T and AV run over all T x T.
    dense = step_time.layer_seconds(shape, load_gpu("a100-80gb"), setup.model_copy(update={"flash": False}))
    assert dense["attention"] > 2 * attention


def test_grouped_expert_gemm_pays_for_part_filled_tiles():
    # 8 experts of 300 rows each, 4,096 columns, on 132 SMs: each expert's rows fill 2 tiles of 256 (300 of 512);
    # 8 x 2 x 32 = 512 tiles run in 4 waves of 132 slots, and the useful work is 2,400 x 4,096 / (256 x 128) = 300
    # tiles' worth: 300 / 528. As one dense GEMM the same rows would be 10 x 32 = 320 tiles in 3 waves: 320 / 396.
    assert step_time.grouped_wave_efficiency(2400, 4096, 8, 132) == pytest.approx(300 / 528)
    assert step_time.wave_efficiency(2400, 4096, 132) == pytest.approx(320 / 396)
    assert step_time.gemm_wave_efficiency((2400, 1024, 4096, 8), 132) == pytest.approx(300 / 528)
    assert step_time.gemm_wave_efficiency((2400, 1024, 4096, 1), 132) == pytest.approx(320 / 396)


def test_routed_experts_are_grouped_gemms_over_the_experts_a_gpu_holds():
    # Mixtral at b 1, T 4096: k = 2 of 8 experts, 8,192 routed rows; without expert parallelism each of the 8
    # experts gets 1,024 (whole tiles); the fused gate + up GEMM (1,024 x 28,672 per expert) and the down GEMM.
    mixtral = load_model("mixtral-8x7b")
    grouped = [gemm for gemm in step_time.layer_matmuls(mixtral, 1, 1, 4096, 1)[0] if gemm[3] > 1]
    assert set(grouped) == {(8192, 4096, 2 * 14336, 8), (8192, 14336, 4096, 8)}
    # At a micro-batch of 2 sequences of 160 tokens, 640 rows over 8 experts: 80 each, a third of a tile.
    short = TrainingSetup(tokens=10**9, seq_len=160, gpus=1, micro_batch=2)
    gpu = load_gpu("h100-sxm")
    terms = step_time.matmul_terms(mixtral, gpu, short)
    dense = step_time.matmul_efficiency(gpu, [gemm[:3] for gemm in step_time.layer_matmuls(mixtral, 2, 1, 160, 1)[0]])
    assert terms.efficiency < 0.6 * dense


def test_expert_all_to_all_split_by_the_link_it_crosses():
    # DeepSeek-V3 with e = 64, t = 1 on 8-GPU nodes: 8 of the group's ranks share a node, so 7/64 of a token's
    # k = 8 copies cross NVLink and 56/64 the network; together (e - 1)/e, parallel.all_to_all_bytes.
    from tfcost.costs import parallel

    deepseek = load_model("deepseek-v3")
    setup = TrainingSetup(tokens=10**9, seq_len=4096, gpus=2048, pp=16, ep=64, zero=1, pp_first_layers=4,
                          pp_last_layers=1)  # fmt: skip
    copies = 4 * 4096 * 8 * 7168 * 2  # dispatch + combine, forward + backward, bf16
    intra, inter = parallel.all_to_all_split(deepseek, setup, 8)
    assert (intra, inter) == (copies * 7 / 64, copies * 56 / 64)
    assert intra + inter == pytest.approx(parallel.all_to_all_bytes(deepseek, setup))
    gpu = load_gpu("h800")
    nvlink, network = 200 * 1e9 * 200 / 300, 50 * 1e9 * 0.96  # h800's table: 200 GB/s NVLink, 50 GB/s IB
    assert gpu.intra_node_bandwidth_gb_per_s == 200 and gpu.inter_node_bandwidth_gb_per_s == 50
    moe_share = 58 / 61
    expected = max(intra / nvlink, inter / network) * moe_share
    assert step_time.ep_seconds(deepseek, gpu, setup) == pytest.approx(expected, rel=1e-9)


def test_ep_overlap_exposes_what_outlasts_compute_or_the_comm_sms_share():
    # DualPipe / Megatron-Core's --overlap-moe-expert-parallel-comm: exposed = max(C - W, C x 20 / 132), with C the
    # layer's all-to-alls and W its compute (matmuls, attention, memory-bound ops, recomputation).
    deepseek = load_model("deepseek-v3")
    gpu = load_gpu("h800")
    branches = set()
    for seq_len in (16384, 1024):  # at 16,384 tokens MLA's causal attention outlasts the all-to-alls; at 1,024 not
        setup = TrainingSetup(tokens=10**9, seq_len=seq_len, gpus=2048, pp=16, ep=64, zero=1, pp_first_layers=4,
                              pp_last_layers=1)  # fmt: skip
        plain = step_time.layer_seconds(deepseek, gpu, setup)
        overlapped = step_time.layer_seconds(deepseek, gpu, setup.model_copy(update={"ep_overlap": True}))
        work = sum(plain[key] for key in ("matmuls", "attention", "memory_bound", "recompute"))
        comm = plain["ep_comm"]
        assert overlapped["ep_comm"] == pytest.approx(max(comm - work, comm * 20 / 132), rel=1e-9)
        branches.add(comm - work > comm * 20 / 132)
        assert {k: v for k, v in overlapped.items() if k != "ep_comm"} == {
            k: v for k, v in plain.items() if k != "ep_comm"
        }
    assert branches == {True, False}


def test_fsdp2_copies_each_gathered_weight_and_each_reduced_gradient_once():
    # FSDP2's split_with_sizes_copy after each all-gather (read and write 2 bytes a bf16 weight, forward and backward)
    # and its torch.cat of the bf16 gradients into the fp32 reduce-scatter input (read 2, write 4): 14 bytes for each
    # of Llama-3-8B's 8,030,261,248 parameters on each of 64 A100s (2.039 TB/s), one micro-batch a step; with the
    # weights kept gathered to the backward (--reshard-after-forward never) one copy-out fewer, 10 bytes.
    shape = load_model("llama-3-8b")
    gpu = load_gpu("a100-80gb")
    setup = TrainingSetup(tokens=64 * 8192, seq_len=8192, gpus=64, zero=3, global_batch=64, fsdp2=True)
    assert step_time.fsdp2_copy_seconds(shape, gpu, setup) == pytest.approx(8_030_261_248 * 14 / 2.039e12, rel=1e-9)
    kept = setup.model_copy(update={"reshard_after_forward": "never"})
    assert step_time.fsdp2_copy_seconds(shape, gpu, kept) == pytest.approx(8_030_261_248 * 10 / 2.039e12, rel=1e-9)
    # four micro-batches, gradients reduced at the last only: 4 x 2 copy-outs and one copy-in, 4 x 8 + 6 bytes
    four = setup.model_copy(update={"global_batch": 256, "tokens": 256 * 8192})
    assert step_time.fsdp2_copy_seconds(shape, gpu, four) == pytest.approx(8_030_261_248 * 38 / 2.039e12, rel=1e-9)
    without = setup.model_copy(update={"fsdp2": False})
    assert step_time.fsdp2_copy_seconds(shape, gpu, without) == 0.0
    steps = {flag: step_time.step_seconds(shape, gpu, s) for flag, s in ((True, setup), (False, without))}
    assert steps[True]["memory_bound"] - steps[False]["memory_bound"] == pytest.approx(
        8_030_261_248 * 14 / 2.039e12, rel=1e-9
    )


def test_ep_overlap_through_the_cli(tfcost):
    import json

    args = ("train", "mixtral-8x7b", "--gpu", "h100-sxm", "--gpus", "64", "--tp", "2", "--ep", "8", "-T", "4096",
            "--zero", "1", "-f", "json")  # fmt: skip
    seconds = {
        flag: json.loads(tfcost(*args, *flag).stdout)["step"]["seconds"]
        for flag in (
            (),
            (
                "--framework-set",
                "ep_overlap=true",
            ),
        )
    }
    plain, overlapped = (
        seconds[()],
        seconds[
            (
                "--framework-set",
                "ep_overlap=true",
            )
        ],
    )
    assert 0 < overlapped["ep_comm"] < plain["ep_comm"]
    assert overlapped["matmuls"] == plain["matmuls"] and overlapped["attention"] == plain["attention"]


def test_eager_kernels_price_each_unfused_elementwise_pass():
    # Eager PyTorch (--kernels eager: torchtitan's A100 presets, "compile = false", "norm_type = rmsnorm"). Per token of
    # one Llama-3-8B layer (d 4,096; 32 query and 8 key-value heads of 128; F 14,336), forward, beyond the fold, in
    # bf16: each of the 2 RMSNorms 36 bytes an element (x.float() 2 + 4, pow 4 + 4, mean 4, x * rsqrt 4 + 4, type_as
    # 4 + 2, * weight 2 + 2) less the fused norm's 4; rotary 20 an element of q and k (float() 2 + 4, the complex
    # product 4 + 4, type_as 4 + 2); SwiGLU's silu output written and read again, 4 an element of F. The backward
    # twice that, as the other memory-bound ops.
    shape = load_model("llama-3-8b")
    gpu = load_gpu("a100-80gb")
    fused = TrainingSetup(tokens=10**9, seq_len=8192, gpus=1)
    eager = fused.model_copy(update={"kernels": "eager"})
    per_token = 2 * 4096 * (36 - 4) + (32 + 8) * 128 * 20 + 14336 * 4
    assert per_token == 421_888
    extra = (
        step_time.layer_seconds(shape, gpu, eager)["memory_bound"]
        - step_time.layer_seconds(shape, gpu, fused)["memory_bound"]
    )
    assert extra == pytest.approx(3 * 8192 * per_token / 2.039e12, rel=1e-9)
    # torchtitan's op-level policy recomputes the forward's elementwise ops: the eager forward's traffic again.
    op_sac = {
        name: setup.model_copy(update={"recompute": "selective-op"}) for name, setup in (("f", fused), ("e", eager))
    }
    recompute = {name: step_time.layer_seconds(shape, gpu, setup)["recompute"] for name, setup in op_sac.items()}
    assert recompute["e"] - recompute["f"] == pytest.approx(8192 * per_token / 2.039e12, rel=1e-9)
    # MPT (one fused nn.LayerNorm kernel, ALiBi, a GELU MLP) has no such pass: eager and fused are priced alike.
    mpt = load_model("validation/models/mpt-7b.yaml")
    assert step_time.layer_seconds(mpt, gpu, eager) == step_time.layer_seconds(mpt, gpu, fused)


def test_fused_norm_kernels_price_rotary_and_swiglu_but_not_the_norms():
    # torchtitan 0413364's llama3_8b.toml and llama2_13b.toml: "compile = false" with norm_type = "fused_rmsnorm" (a
    # Triton kernel, counted once in the fold as a fused norm): of the eager passes above, only rotary's 20 bytes an
    # element of q and k and SwiGLU's 4 an element of F remain, per token of a Llama-3-8B layer, forward; backward
    # twice that. Its activations keep the fused norm's 16-bit input, as --kernels fused.
    shape = load_model("llama-3-8b")
    gpu = load_gpu("a100-80gb")
    fused = TrainingSetup(tokens=10**9, seq_len=8192, gpus=1)
    fused_norm = fused.model_copy(update={"kernels": "fused-norm"})
    per_token = (32 + 8) * 128 * 20 + 14336 * 4
    assert per_token == 159_744
    extra = (
        step_time.layer_seconds(shape, gpu, fused_norm)["memory_bound"]
        - step_time.layer_seconds(shape, gpu, fused)["memory_bound"]
    )
    assert extra == pytest.approx(3 * 8192 * per_token / 2.039e12, rel=1e-9)
    assert engine_memory.eager_norm_bytes(shape, fused_norm) == 0
    assert engine_memory.eager_norm_bytes(shape, fused.model_copy(update={"kernels": "eager"})) > 0


def test_full_fp32_loss_prices_its_passes_over_the_logits():
    # torchtitan's loss_fn, "cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))" (--loss full): per
    # logit, forward the upcast (2 + 4) and log_softmax (4 + 4), backward nll_loss's fp32 gradient (4), log_softmax's
    # (8 + 4) and the upcast's (4 + 2): 36 bytes. Llama-3-8B (V 128,256), b 2 x T 8,192, on one H100 (3.35 TB/s).
    shape = load_model("llama-3-8b")
    gpu = load_gpu("h100-sxm")
    chunked = TrainingSetup(tokens=2 * 8192, seq_len=8192, micro_batch=2, gpus=1)
    full = chunked.model_copy(update={"loss": "full"})
    assert step_time.loss_seconds(shape, gpu, chunked) == 0
    assert step_time.loss_seconds(shape, gpu, full) == pytest.approx(2 * 8192 * 128256 * 36 / 3.35e12, rel=1e-9)
    steps = {name: step_time.step_seconds(shape, gpu, setup) for name, setup in (("c", chunked), ("f", full))}
    assert steps["f"]["memory_bound"] - steps["c"]["memory_bound"] == pytest.approx(
        2 * 8192 * 128256 * 36 / 3.35e12, rel=1e-9
    )
    assert steps["f"]["matmuls"] == steps["c"]["matmuls"]


def test_context_parallel_latency_is_nccls_ring_latency():
    # NCCL's model of a ring all-gather (src/graph/tuning.cc, Simple protocol): baseLat 8.4 us plus, for each of the
    # c - 1 steps, 3.4 us on NVLink or 14.0 us when the step crosses nodes. Ranks go tensor first, then context
    # (Llama 3's [TP, CP, PP, DP]), on 8-GPU nodes.
    gpu = load_gpu("h100-sxm")

    def latency(tp: int, cp: int) -> float:
        setup = TrainingSetup(tokens=131072, seq_len=131072, gpus=tp * cp, tp=tp, cp=cp)
        return step_time.cp_ring_latency_seconds(gpu, setup)

    assert latency(8, 1) == 0.0
    assert latency(8, 32) == pytest.approx(8.4e-6 + 31 * 14e-6)  # every rank on its own node: 442.4 us
    assert latency(8, 16) == pytest.approx(8.4e-6 + 15 * 14e-6)
    assert latency(2, 4) == pytest.approx(8.4e-6 + 3 * 3.4e-6)  # 8 GPUs: one node
    assert latency(4, 4) == pytest.approx(8.4e-6 + 2 * 3.4e-6 + 1 * 14e-6)  # two ranks a node on two nodes
    assert step_time.cp_ring_latency_seconds(load_gpu("h100-pcie"), TrainingSetup(
        tokens=4096, seq_len=4096, gpus=4, tp=1, cp=4)) == pytest.approx(8.4e-6 + 3 * 5.7e-6)  # fmt: skip


def test_llama3_context_parallel_exchange_by_hand():
    # Llama 3 405B's 131k stage at t 8, c 32 (the best layout tfcost plan finds): each GPU holds T / c = 4,096
    # positions of K and V for its one key-value head of 8 (t 8), 2 x 128 values a position in bf16; a forward
    # gathers the other 31 ranks' over the network (96% of 50 GB/s a GPU), the backward gathers again and
    # reduce-scatters the gradients, each collective paying 8.4 + 31 x 14 us. Full recomputation repeats the forward.
    shape, gpu = load_model("llama-3.1-405b"), load_gpu("h100-sxm")
    setup = TrainingSetup(tokens=131072, seq_len=131072, gpus=16384, tp=8, cp=32, pp=8, global_batch=128)
    kv_bytes = 4096 * 2 * 128 * 2
    forward = 31 * kv_bytes / (50e9 * 0.96) + 8.4e-6 + 31 * 14e-6
    layer = step_time.layer_seconds(shape, gpu, setup)
    assert layer["cp_comm"] == pytest.approx(3 * forward, rel=1e-9)
    assert forward == pytest.approx(1.797e-3, abs=1e-6)  # 1.355 ms of bytes, 0.442 ms of latency
    full = step_time.layer_seconds(shape, gpu, setup.model_copy(update={"recompute": "full"}))
    assert full["recompute"] == pytest.approx(step_time.layer_forward_seconds(layer, setup), rel=1e-12)


def test_syncing_every_micro_batch_reduce_scatters_every_backward():
    # FSDP without no_sync reduce-scatters each micro-batch's gradients ("with the extra networking overhead",
    # fairscale's no_sync): ZeRO-2 with m = 2 micro-batches (B 128 on 64 GPUs) and nothing overlapped pays one
    # reduce-scatter more than its all-reduce (one reduce-scatter and one all-gather of the same bytes): 3/2 of it.
    shape, setup = llama_on_64_h100s(dp_overlap=False, zero=2, global_batch=128)
    gpu = load_gpu("h100-sxm")
    once = step_time.step_seconds(shape, gpu, setup)["dp_comm"]
    every = step_time.step_seconds(shape, gpu, setup.model_copy(update={"reduce_every_micro_batch": True}))["dp_comm"]
    assert every == pytest.approx(1.5 * once, rel=1e-9)
    # overlapped: the extra reduce-scatter runs under the first micro-batch's backward, whose layers each outlast a
    # bucket, so only its last bucket is exposed, and the 31 others hold 24 of the H100's 132 SMs while they run
    overlapped = setup.model_copy(update={"dp_overlap": True})
    before = step_time.step_seconds(shape, gpu, overlapped)["dp_comm"]
    after = step_time.step_seconds(shape, gpu, overlapped.model_copy(update={"reduce_every_micro_batch": True}))
    assert after["dp_comm"] == pytest.approx(before + once / 2 / 32 * (1 + 31 * 24 / 132), rel=1e-9)


def test_logit_metrics_price_composers_cross_entropies_over_the_logits():
    # Composer updates each train metric on every micro-batch's logits, forward only: llm-foundry's MPT asks for two
    # (LanguageCrossEntropy, LanguagePerplexity). Under autocast (bf16-mixed) cross_entropy runs in fp32: the upcast
    # reads 2 and writes 4 bytes a logit, log_softmax reads 4 and writes 4: 14; under fp8 (Composer's amp_fp8: no
    # autocast) log_softmax on the bf16 logits, 2 + 2. MPT-1B (V 50,368), b 14 x T 2,048 on one A100 80GB (2.039 TB/s).
    shape = load_model(str(MPT_1B))
    gpu = load_gpu("a100-80gb")
    plain = TrainingSetup(tokens=14 * 2048, seq_len=2048, micro_batch=14, gpus=1)
    metered = plain.model_copy(update={"logit_metrics": 2})
    logits = 14 * 2048 * 50368
    assert step_time.metric_seconds(shape, gpu, plain) == 0
    assert step_time.metric_seconds(shape, gpu, metered) == pytest.approx(2 * logits * 14 / 2.039e12, rel=1e-9)
    fp8 = metered.model_copy(update={"precision": "fp8"})
    assert step_time.metric_seconds(shape, gpu, fp8) == pytest.approx(2 * logits * 4 / 2.039e12, rel=1e-9)
    steps = {name: step_time.step_seconds(shape, gpu, setup) for name, setup in (("p", plain), ("m", metered))}
    assert steps["m"]["memory_bound"] - steps["p"]["memory_bound"] == pytest.approx(
        2 * logits * 14 / 2.039e12, rel=1e-9
    )
    assert steps["m"]["matmuls"] == steps["p"]["matmuls"]


def test_fp8_training_runs_the_output_head_in_bf16():
    # Transformer Engine converts only its own modules (llm-foundry swaps te.Linear in for the layers; MPT's head is
    # the tied embedding's F.linear), torchtitan's float8 skips "output", DeepSeek-V3 keeps "the output head" in BF16:
    # the head's 3 x 2 d V FLOPs a token at the BF16 peak (989.4 TFLOP/s) x MAMF (0.8009) on an H100, under fp8 as
    # under bf16-mixed. MPT-1B: d 2,048, V 50,368, b 56 x T 512.
    shape = load_model(str(MPT_1B))
    gpu = load_gpu("h100-sxm")
    bf16 = TrainingSetup(tokens=56 * 512, seq_len=512, micro_batch=56, gpus=1)
    fp8 = bf16.model_copy(update={"precision": "fp8"})
    expected = 3 * 2 * 2048 * 50368 * 56 * 512 / (989.4e12 * 0.8009)
    assert step_time.head_seconds(shape, gpu, fp8) == pytest.approx(expected, rel=1e-9)
    assert step_time.head_seconds(shape, gpu, bf16) == pytest.approx(expected, rel=1e-9)


def test_negative_logit_metrics_fail_in_one_line():
    bad = run_in_process("train", str(MPT_1B), "--gpu", "a100-80gb", "--framework-set", "logit_metrics=-1")
    assert bad.code != 0 and bad.stdout == ""
    assert len(bad.stderr.strip().splitlines()) == 1 and "logit_metrics" in bad.stderr


def test_llama3_8k_stage_fits_without_checkpointing_and_loses_what_the_paper_says_at_dp_128():
    # Dubey et al. 2024 (arXiv 2407.21783) Table 4's two 8K rows, t 8, c 1, p 16, 16M tokens a step: 8,192 GPUs (d 64,
    # 32 sequences a replica) at 430 TFLOP/s, 43% MFU; 16,384 (d 128, 16 a replica) at 400, 41%. §3.3.2: "we could
    # pre-train Llama 3 on sequences of 8K tokens without activation checkpointing", with the interleaved schedule of
    # chunks that "the first model chunk on the first stage has only the embedding" makes one layer slot each
    # (v 8 of 7 + 14 x 8 + 7), and "The slight drop in MFU to 41% on 16K GPUs with DP=128 compared to 43% on 8K GPUs
    # with DP=64 is due to the lower batch size per DP group": half the micro-batches under the same bubble.
    shape, gpu = load_model("llama-3.1-405b"), load_gpu("h100-sxm")
    stage = dict(tokens=16777216, seq_len=8192, tp=8, pp=16, pp_first_layers=7, pp_last_layers=7, virtual_stages=8,
                 global_batch=2048, sequence_parallel=True, zero=2, reduce_every_micro_batch=True,
                 memory_convention="megatron", dropout=False)  # fmt: skip
    eight, sixteen = (train(shape, gpu, TrainingSetup(gpus=gpus, **stage)) for gpus in (8192, 16384))
    assert eight.memory_per_gpu.fits and sixteen.memory_per_gpu.fits  # no recomputation (tfcost's default)
    assert eight.step is not None and sixteen.step is not None
    assert (eight.inputs.micro_batches, sixteen.inputs.micro_batches) == (32, 16)
    assert eight.step.seconds["bubble"] == pytest.approx(sixteen.step.seconds["bubble"], rel=1e-9)
    # the published ratio of the two throughputs, 400 / 430 = 0.930; without interleaving (v 1) tfcost gave 0.75
    mfu = sixteen.time.model_utilization / eight.time.model_utilization
    assert mfu == pytest.approx(400 / 430, rel=0.02)
    plain = [train(shape, gpu, TrainingSetup(gpus=gpus, **{**stage, "virtual_stages": 1})) for gpus in (8192, 16384)]
    assert plain[1].time.model_utilization / plain[0].time.model_utilization < 0.8


def test_zero3_gemms_run_at_the_fitted_share_of_mamf_fp8_too():
    # costs/efficiency.py: BF16 GEMMs under ZeRO-3/FSDP reach ZERO3_MATMUL_SHARE (0.78, fitted on validation's fitted
    # step-time cases only) of the GPU's MAMF; below ZeRO-3 all of it (Korthikanti et al.'s 22B layer, above, is
    # priced at MAMF within 1%); FP8 GEMMs reach FP8_TRAINING_GEMM_FRACTION (0.59) of the FP8 peak, times the same
    # share under ZeRO-3.
    shape, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    base = TrainingSetup(tokens=8 * 4096, seq_len=4096, micro_batch=1, gpus=8, zero=1)
    sharded = base.model_copy(update={"zero": 3})
    one, three = step_time.matmul_terms(shape, gpu, base), step_time.matmul_terms(shape, gpu, sharded)
    assert three.seconds / one.seconds == pytest.approx(1 / 0.78, rel=1e-12)
    assert step_time.head_seconds(shape, gpu, sharded) / step_time.head_seconds(shape, gpu, base) == pytest.approx(
        1 / 0.78, rel=1e-12
    )
    fp8 = [step_time.matmul_terms(shape, gpu, s.model_copy(update={"precision": "fp8"})) for s in (base, sharded)]
    assert fp8[1].seconds / fp8[0].seconds == pytest.approx(1 / 0.78, rel=1e-12)
    # FP8 at 0.59 of the 1,978.9 TFLOP/s FP8 peak, times the same wave efficiency as BF16 at MAMF (0.8009)
    assert fp8[0].seconds == pytest.approx(one.seconds * 989.4 * 0.8009 / (1978.9 * 0.59), rel=1e-3)


def test_fp8_quantization_passes_match_a_hand_count_of_transformer_engine_and_torchao():
    # Llama 3 8B (d 4096, 32 query and 8 KV heads of 128, SwiGLU 14336), one 4096-token sequence on one H100 SXM
    # (3.35 TB/s). Per layer, Transformer Engine v0.10's te.Linear (module/linear.py) cast-transposes each GEMM's
    # input and weight forward and its output gradient backward, reading bf16 (2 bytes) and writing two FP8 copies
    # (1 + 1): 4 bytes an element; torchao's roofline counts an input's the same under torch.compile.
    shape, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    setup = TrainingSetup(tokens=4096, seq_len=4096, micro_batch=1, gpus=1, precision="fp8")
    tokens, d = 4096, 4096
    # (inner, cols): q, k, v fused; the output projection; gate and up fused; down
    gemms = [(d, d + 2 * 8 * 128), (d, d), (d, 2 * 14336), (14336, d)]
    inputs = sum(tokens * inner for inner, _ in gemms)
    weights = sum(inner * cols for inner, cols in gemms)
    grads = sum(tokens * cols for _, cols in gemms)
    forward, backward = step_time.fp8_cast_seconds(shape, gpu, setup)
    assert forward == pytest.approx((inputs + weights) * 4 / 3.35e12, rel=1e-12)
    assert backward == pytest.approx(grads * 4 / 3.35e12, rel=1e-12)
    assert step_time.fp8_cast_seconds(shape, gpu, setup.model_copy(update={"precision": "bf16-mixed"})) == (0.0, 0.0)
    # the passes are memory-bound ops of the layer, and full recomputation redoes the forward's
    bf16 = step_time.layer_seconds(shape, gpu, setup.model_copy(update={"precision": "bf16-mixed"}))
    fp8 = step_time.layer_seconds(shape, gpu, setup)
    assert fp8["memory_bound"] - bf16["memory_bound"] == pytest.approx(forward + backward, rel=1e-9)
    full = step_time.layer_seconds(shape, gpu, setup.model_copy(update={"recompute": "full"}))
    assert full["recompute"] - fp8["matmuls"] / 3 - fp8["attention"] / 3.5 - bf16["memory_bound"] / 3 == (
        pytest.approx(forward, rel=1e-9)
    )


def test_fp8_casts_of_d_wide_tensors_are_split_by_sequence_parallelism():
    # Transformer Engine casts a column-parallel input before "gather_along_first_dim(inputmat, tp_group)" and a
    # row-parallel output gradient before gathering it; torchao's Float8ColwiseParallel casts the DTensor shard
    # before redistributing it. At t = 2 with sequence parallelism the d-wide tensors (the q/k/v and gate/up inputs,
    # the output and down projections' output gradients) are cast on half the tokens; the rest are split by columns.
    shape, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    setup = TrainingSetup(tokens=4096, seq_len=4096, micro_batch=1, gpus=2, tp=2, precision="fp8")
    tokens, d = 4096, 4096
    per_gpu = [(d, (d + 2 * 8 * 128) // 2), (d // 2, d), (d, 14336), (14336 // 2, d)]  # (inner, cols) on one GPU
    weights = sum(inner * cols for inner, cols in per_gpu)
    plain_in = sum(tokens * inner for inner, _ in per_gpu)
    plain_grad = sum(tokens * cols for _, cols in per_gpu)
    sp_in = tokens * d / 2 + tokens * d // 2 + tokens * d / 2 + tokens * 14336 // 2
    sp_grad = tokens * (d + 2 * 8 * 128) // 2 + tokens * d / 2 + tokens * 14336 + tokens * d / 2
    plain = step_time.fp8_cast_seconds(shape, gpu, setup)
    sp = step_time.fp8_cast_seconds(shape, gpu, setup.model_copy(update={"sequence_parallel": True}))
    assert plain == pytest.approx(((plain_in + weights) * 4 / 3.35e12, plain_grad * 4 / 3.35e12), rel=1e-12)
    assert sp == pytest.approx(((sp_in + weights) * 4 / 3.35e12, sp_grad * 4 / 3.35e12), rel=1e-12)


def test_fp8_sequence_parallel_all_gathers_move_one_byte_an_element():
    # torchao's PrepareFloat8ModuleInput casts a block's input shard "before the all-gather (i.e. Shard -> Replicate)"
    # and NoopFwToFloat8BwDynamic casts a row-parallel output's gradient before its all-gather; the reduce-scatters
    # move the GEMMs' bf16 results. On 8 H100s (NVLink 450 GB/s each way at 200/300 of it, nccl-tests), a micro-batch
    # of 4,096 Llama-3-8B tokens: one ring pass of the 4,096 x 4,096 activations is 7/8 x 33.55 MB / 300 GB/s. Per
    # layer bf16 runs 2 all-gathers + 2 reduce-scatters forward and 4 + 2 backward, 10 passes; FP8 the all-gathers at
    # half: 1 + 2 forward, 2 + 2 backward, 7 passes, whose forward share is 3 of 7.
    shape, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    setup = TrainingSetup(
        tokens=4096, seq_len=4096, micro_batch=1, gpus=8, tp=8, sequence_parallel=True, precision="fp8"
    )
    ring_pass = 7 / 8 * 4096 * 4096 * 2 / (450e9 * 200 / 300)
    fp8 = step_time.layer_seconds(shape, gpu, setup)
    bf16 = step_time.layer_seconds(shape, gpu, setup.model_copy(update={"precision": "bf16-mixed"}))
    assert bf16["tp_comm"] == pytest.approx(10 * ring_pass, rel=1e-12)
    assert fp8["tp_comm"] == pytest.approx(7 * ring_pass, rel=1e-12)
    no_sp = setup.model_copy(update={"sequence_parallel": False})  # all-reduces of the bf16 outputs: no FP8 copy
    assert step_time.layer_seconds(shape, gpu, no_sp)["tp_comm"] == pytest.approx(8 * ring_pass, rel=1e-12)
    only_tp = {key: (value if key == "tp_comm" else 0.0) for key, value in fp8.items()}
    assert step_time.layer_forward_seconds(only_tp, setup) == pytest.approx(3 * ring_pass, rel=1e-12)


def test_dtensor_tensor_parallelism_redoes_no_all_gather_in_the_backward(tfcost):
    # PyTorch's DTensor TP (torchtitan) keeps each column-parallel linear's gathered input for its weight gradient
    # (torchao eab345c: "ctx.save_for_backward(input_fp8, weight_fp8_t)" after ColwiseParallel's redistribute), so
    # the backward drops Megatron-LM's 2 re-gathers: bf16 2 + 2 forward and 2 + 2 backward, 8 ring passes (10 with
    # the re-gathers); FP8 the all-gathers at half, 1 + 2 and 1 + 2, 6 passes (7), forward share 3 of 6. The same 8
    # H100s and 4,096 Llama-3-8B tokens as the test above.
    shape, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    setup = TrainingSetup(tokens=4096, seq_len=4096, micro_batch=1, gpus=8, tp=8, sequence_parallel=True,
                          tp_keeps_gathered_input=True)  # fmt: skip
    ring_pass = 7 / 8 * 4096 * 4096 * 2 / (450e9 * 200 / 300)
    assert step_time.layer_seconds(shape, gpu, setup)["tp_comm"] == pytest.approx(8 * ring_pass, rel=1e-12)
    fp8 = setup.model_copy(update={"precision": "fp8"})
    parts = step_time.layer_seconds(shape, gpu, fp8)
    assert parts["tp_comm"] == pytest.approx(6 * ring_pass, rel=1e-12)
    only_tp = {key: (value if key == "tp_comm" else 0.0) for key, value in parts.items()}
    assert step_time.layer_forward_seconds(only_tp, fp8) == pytest.approx(3 * ring_pass, rel=1e-12)
    # A framework's convention about a layout the run does not use changes nothing: without sequence parallelism
    # there is no all-gather to keep.
    args = ("train", "llama-3-8b", "--gpus", "8", "--tp", "8", "--tokens", "1e9", "-f", "json")
    plain, kept = (tfcost(*args, *extra) for extra in ((), ("--framework-set", "tp_keeps_gathered_input=true")))
    assert plain.code == kept.code == 0, kept.stderr
    assert json.loads(plain.stdout)["step"] == json.loads(kept.stdout)["step"]


# Llama-3-8B's linear weights in its 32 layers, each d(d + 2KQ) for q, k, v, d·d for o and 3·d·F for the SwiGLU MLP
# (d 4,096, K Q = 8 x 128, F 14,336): what torchtitan converts to Float8Linear (every nn.Linear but the output head).
LLAMA_3_8B_LAYER_LINEARS = 32 * (4096 * (4096 + 2 * 8 * 128) + 4096 * 4096 + 3 * 4096 * 14336)
LLAMA_3_8B_PARAMS = 8_030_261_248


def test_fsdp_float8_all_gather_moves_and_copies_linear_weights_in_one_byte():
    # torchao's fsdp_pre_all_gather casts each weight shard to float8 and gathers "(float8_tensor._data,)": of each
    # FSDP2 copy-out (2 x e bytes a parameter) the 6,979,321,856 linear weights move 2 x 1. On 64 H100s (3.35 TB/s),
    # one micro-batch: two copy-outs and one fp32 copy-in, 14 bytes a parameter in bf16, 4 fewer a linear weight.
    assert LLAMA_3_8B_LAYER_LINEARS == 6_979_321_856
    shape, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    setup = TrainingSetup(tokens=64 * 8192, seq_len=8192, gpus=64, zero=3, global_batch=64, fsdp2=True, precision="fp8")
    float8 = setup.model_copy(update={"fsdp_float8_all_gather": True})
    assert step_time.fsdp2_copy_seconds(shape, gpu, setup) == pytest.approx(LLAMA_3_8B_PARAMS * 14 / 3.35e12, rel=1e-9)
    expected = (LLAMA_3_8B_PARAMS * 14 - LLAMA_3_8B_LAYER_LINEARS * 4) / 3.35e12
    assert step_time.fsdp2_copy_seconds(shape, gpu, float8) == pytest.approx(expected, rel=1e-9)
    assert step_time.gathered_bytes_per_param(shape, float8) == pytest.approx(
        2 - LLAMA_3_8B_LAYER_LINEARS / LLAMA_3_8B_PARAMS, rel=1e-12
    )
    # the layer's own weight cast is skipped ("if tensor_already_casted_to_fp8(weight): return weight.t()"): the
    # forward casts the weights' 1/64 shard instead, at the same e + 2 bytes an element
    plain_fwd, plain_bwd = step_time.fp8_cast_seconds(shape, gpu, setup)
    float8_fwd, float8_bwd = step_time.fp8_cast_seconds(shape, gpu, float8)
    weights_per_layer = LLAMA_3_8B_LAYER_LINEARS / 32 * 4 / 3.35e12
    assert plain_fwd - float8_fwd == pytest.approx(weights_per_layer * 63 / 64, rel=1e-9)
    assert float8_bwd == plain_bwd
    # the data-parallel gathers move fewer bytes: the exposed time cannot grow
    layer = step_time.layer_seconds(shape, gpu, float8)
    assert step_time.dp_seconds(shape, gpu, float8, 32, layer) < step_time.dp_seconds(shape, gpu, setup, 32, layer)


def test_fsdp_float8_all_gather_applies_to_fp8_under_zero_3_only(tfcost):
    # torchtitan's enable_fsdp_float8_all_gather, set through its framework file, says nothing about a run that
    # does not gather FP8 weights: the step is the same with and without it there.
    args = ("train", "llama-3-8b", "--gpus", "8", "--tokens", "1e9", "--format", "json")
    setting = ("--framework-set", "fsdp_float8_all_gather=true")
    for extra in (("--zero", "3"), ("--precision", "fp8")):
        plain, gathered = tfcost(*args, *extra), tfcost(*args, *extra, *setting)
        assert plain.code == gathered.code == 0, gathered.stderr
        assert json.loads(plain.stdout)["step"] == json.loads(gathered.stdout)["step"]
    plain = tfcost(*args, "--zero", "3", "--precision", "fp8", "--framework-set", "fsdp2=true")
    gathered = tfcost(*args, "--zero", "3", "--precision", "fp8", "--framework-set", "fsdp2=true", *setting)
    assert gathered.code == plain.code == 0, gathered.stderr
    assert (
        json.loads(gathered.stdout)["step"]["seconds"]["total"] < json.loads(plain.stdout)["step"]["seconds"]["total"]
    )


def test_async_tp_leaves_its_fitted_share_of_the_tp_collectives_exposed(tfcost):
    shape, gpu = load_model("llama-3-8b"), load_gpu("h100-sxm")
    setup = TrainingSetup(tokens=4096, seq_len=4096, micro_batch=1, gpus=8, tp=8, sequence_parallel=True)
    plain = step_time.layer_seconds(shape, gpu, setup)
    hidden = step_time.layer_seconds(shape, gpu, setup.model_copy(update={"async_tp": True}))
    assert hidden["tp_comm"] == pytest.approx(step_time.ASYNC_TP_EXPOSED_SHARE * plain["tp_comm"], rel=1e-12)
    assert {k: v for k, v in hidden.items() if k != "tp_comm"} == {k: v for k, v in plain.items() if k != "tp_comm"}
    # The share's fit (docs/formulas.md): torchtitan docs/performance.md at eaea6f6, Table 4, Llama 3.1 70B on 256
    # H100s (FSDP 32 x TP 8, Float8, full AC, local batch 16, DTensor's TP): "| 2D | 829 |" and "| 2D + AsyncTP |
    # 876 |" TPS/GPU. At the rounded share the AsyncTP row's prediction keeps the 2D row's ratio to within 0.5%.
    args = ["train", "llama-3.1-70b", "--gpu", "h100-96gb-500w", "--gpus", "256", "--tp", "8", "-T", "8192", "-b"]
    args += ["16", "--global-batch", "512", "--zero", "3", "--recompute", "full", "--precision", "fp8"]
    # torchtitan's Float8 rows run under torch.compile (training.compile): its kernels fused
    args += ["--sequence-parallel", "--framework", "torchtitan@9dec370", "--framework-set", "kernels=fused"]
    args += ["--format", "json"]
    predicted = {}
    for extra in ((), ("--framework-set", "async_tp=true")):
        run = tfcost(*args, *extra)
        assert run.code == 0, run.stderr
        output = json.loads(run.stdout)
        predicted[extra] = output["inputs"]["tokens"] / (output["time"]["gpu_hours"] * 3600)
    assert predicted[("--framework-set", "async_tp=true")] / predicted[()] == pytest.approx(876 / 829, rel=0.005)
    # Without sequence parallelism async TP overlaps nothing: the convention changes no step there.
    args = ("train", "llama-3-8b", "--gpus", "8", "--tp", "8", "--tokens", "1e9", "-f", "json")
    plain, overlapped = (tfcost(*args, *extra) for extra in ((), ("--framework-set", "async_tp=true")))
    assert json.loads(plain.stdout)["step"] == json.loads(overlapped.stdout)["step"]


# DeepSeek's own profile of DeepSeek-V3's training step (deepseek-ai/profile-data at 4496024, train.json, added in its
# first commit de0b460): "a pair of individual forward and backward chunks in DualPipe. Each chunk contains 4 MoE
# (Mixture of Experts) layers. The parallel configuration aligns with DeepSeek-V3 pretraining settings: EP64, TP1 with
# 4K sequence length. And the PP communication is not included during profiling", "an absolutely balanced MoE routing
# strategy" (its README). Its GPU kernels (PyTorch profiler, one H800, 132 SMs) run 129.0 ms from the first one's start
# to the last one's end: one micro-batch's forward through the 4 layers beside another's backward. The parts, per
# layer, summed over its kernels: FP8 GEMMs (dpsk::grouped_gemm, on 112 SMs) 18.6 ms, attention (FlashAttention-3-style
# flash::compute_attn_ws forward and FlashAttnBwd) 5.5 ms, the rest (FP8 casts and transposes, norms, rotary, SwiGLU,
# permutations) 8.3 ms on the compute streams; the all-to-all stream (DeepEP's dispatch, combine and their notify
# kernels, 20 SMs) is busy 28.6 ms a layer.
DEEPSEEK_V3_PROFILE_SECONDS = 0.1290


def test_deepseek_v3_moe_layers_against_deepseeks_training_profile():
    # The pre-training setup of validation cases #66/#67 (H800, ep 64, tp 1, T 4,096, one sequence a micro-batch, FP8,
    # --ep-overlap) on a chunk of 4 MoE layers: tfcost's forward and backward of one micro-batch, with its all-to-alls
    # overlapped, is the time one DualPipe forward-backward pair takes in the steady state. tfcost prices 137.0 ms,
    # 6% over the profile. The parts differ more than the sum: tfcost's layer is bound by its all-to-alls (34.3 ms of
    # them against 23.6 ms of compute: GEMMs 12.8, attention 7.9, memory-bound 2.9), the profile's compute streams
    # are busy about as long as its all-to-all stream. Within 8%: 6.2% today, the profile's own layers 30.9-32.8 ms
    # apart (its attention kernels' starts); a change to either side alone shows up here.
    deepseek = load_model("deepseek-v3")
    assert deepseek.moe is not None
    moe_only = deepseek.moe.model_copy(update={"dense_layers": ()})  # the profile's chunk: MoE layers only
    chunk = deepseek.model_copy(update={"moe": moe_only, "n_layers": 4})
    setup = TrainingSetup(tokens=10**9, seq_len=4096, gpus=2048, pp=16, ep=64, zero=1, precision="fp8",
                          ep_overlap=True)  # fmt: skip
    layer = step_time.layer_seconds(chunk, load_gpu("h800"), setup)
    assert 4 * sum(layer.values()) == pytest.approx(DEEPSEEK_V3_PROFILE_SECONDS, rel=0.08)


def test_expert_tensor_parallel_reshapes_the_grouped_gemms():
    # Mixtral at b 1, T 4096, t = 2 with sequence parallelism: with etp = t each GPU runs every routed row at half an
    # expert's width (8,192 rows of 14,336 / 2 x 2 gate + up columns); with etp = 1 ("MoE parallel folding") each GPU
    # runs whole experts over the tokens its t = 2 attention peers hold between them, halved: 4,096 rows. The FLOPs
    # on a GPU are the same, the shapes not.
    mixtral = load_model("mixtral-8x7b")
    split = {gemm for gemm in step_time.layer_matmuls(mixtral, 1, 2, 4096, 1)[0] if gemm[3] > 1}
    whole = {gemm for gemm in step_time.layer_matmuls(mixtral, 1, 2, 4096, 1, 1)[0] if gemm[3] > 1}
    assert split == {(8192, 4096, 14336, 8), (8192, 7168, 4096, 8)}
    assert whole == {(4096, 4096, 2 * 14336, 8), (4096, 14336, 4096, 8)}
    assert step_time.layer_matmuls(mixtral, 1, 2, 4096, 1)[3] == step_time.layer_matmuls(mixtral, 1, 2, 4096, 1, 1)[3]
    # An assumed imbalance of 1.25 (the busiest GPU's routed rows over the mean) scales the routed rows alone.
    loaded = {gemm for gemm in step_time.layer_matmuls(mixtral, 1, 2, 4096, 1, 1, 1.25)[0] if gemm[3] > 1}
    assert loaded == {(5120, 4096, 2 * 14336, 8), (5120, 14336, 4096, 8)}


def test_expert_gemm_outputs_are_written_at_the_hbm_rate():
    # The rule against DeepGEMM's dense FP8 table on H800 (deepseek-ai/DeepGEMM README at fea9309, M = 4096): its best
    # rate, 1520 TFLOPS (N 7168, K 16384), for the FLOPs plus the bf16 output written at 3.35 TB/s gives each row's
    # rate within 8%: "| 4096 | 32768 |  512  | 775 TFLOPS", "| 4096 | 24576 | 1536  | 1212 TFLOPS", "| 4096 | 4096  |
    # 7168  | 1410 TFLOPS", "| 4096 | 7168  | 2048  | 1168 TFLOPS".
    for n, k, measured in ((32768, 512, 775), (24576, 1536, 1212), (4096, 7168, 1410), (7168, 2048, 1168)):
        flops = 2 * 4096 * n * k
        seconds = flops / 1520e12 + 4096 * n * 2 / 3.35e12
        assert flops / seconds / 1e12 == pytest.approx(measured, rel=0.08)
    # Qwen3-30B-A3B, b 1, T 4096, e 8 (16 local experts), bf16: per layer the fused gate + up GEMM (32,768 rows,
    # K 2048, N 1536) and the down GEMM (32,768 rows, K 768, N 2048): outputs forward (rows x N) and backward (rows x
    # K), 2 bytes, and each local expert's weight gradient accumulated in fp32 (read and write, 8 bytes).
    qwen, gpu = load_model("qwen3-30b-a3b"), load_gpu("h100-sxm")
    setup = TrainingSetup(tokens=10**9, seq_len=4096, gpus=8, ep=8)
    written = sum((32768 * n + 32768 * k) * 2 + 16 * k * n * 8 for k, n in ((2048, 1536), (768, 2048)))
    expected = written / (gpu.memory_bandwidth_tb_per_s * 1e12)
    assert step_time.expert_gemm_output_seconds(qwen, gpu, setup) == pytest.approx(expected, rel=1e-9)
    assert step_time.expert_gemm_output_seconds(load_model("llama-3-8b"), gpu, setup.model_copy(update={"ep": 1})) == 0
