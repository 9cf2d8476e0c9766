"""Throughput inputs and parallel layouts against the published runs they come from."""

from __future__ import annotations

import json

import pytest
from test_cli import one_line_error

from tfcost.core import params
from tfcost.costs import parallel, training
from tfcost.errors import UsageError
from tfcost.readers.presets import load_gpu, load_model
from tfcost.reports.train import train
from tfcost.schema import TrainingSetup

# Narayanan et al. 2021 §5.1 (Eq. 4): GPT-3 175B on 300B tokens, 1024 A100s at 140 TFLOP/s per GPU (counting full
# recomputation) -> "about 34 days"; 140 TFLOP/s is 140/312 of the A100's peak.
GPT3_RUN = ("train", "gpt3-175b", "--tokens", "300B", "--seq", "2048", "--gpus", "1024", "--gpu", "a100-80gb",
            "--tp", "8", "--pp", "8", "--recompute", "full", "-f", "json")  # fmt: skip


@pytest.mark.parametrize("throughput", [("--tflops-per-gpu", "140"), ("--hfu", str(140 / 312))])
def test_megatron_gpt3_34_days(tfcost, throughput):
    run = tfcost(*GPT3_RUN, *throughput)
    assert run.code == 0, run.stderr
    time = json.loads(run.stdout)["time"]
    assert time["days"] == pytest.approx(34, rel=0.03)  # 34.73: the exact FLOPs add the s/(6h) attention term
    assert time["hardware_utilization"] == pytest.approx(140 / 312)
    assert time["achieved_flops_per_s"] == pytest.approx(140e12)


def test_hfu_typed_as_mfu_is_too_fast(tfcost):
    # The complaint: 0.449 entered as MFU makes GPT-3 a quarter too fast under full recomputation.
    as_mfu = json.loads(tfcost(*GPT3_RUN, "--mfu", str(140 / 312)).stdout)["time"]["days"]
    as_hfu = json.loads(tfcost(*GPT3_RUN, "--hfu", str(140 / 312)).stdout)["time"]["days"]
    assert as_hfu / as_mfu == pytest.approx(4 / 3, rel=0.02)


def test_one_throughput_at_most(tfcost):
    assert "at most one of mfu, hfu" in one_line_error(tfcost("train", "gpt2-small", "--mfu", "0.4", "--hfu", "0.5"), 2)


def test_llama3_405b_published_layout(tfcost):
    # Dubey et al. 2024 §3.3.2 / Table 4: 16,384 H100s, TP 8, CP 16, PP 16, DP 8 for the 131,072-token stage,
    # batch 16 per DP group (16M tokens a step); one layer fewer on the first and the last pipeline stage.
    run = tfcost("train", "llama-3.1-405b", "--gpu", "h100-sxm", "--gpus", "16384", "--tp", "8", "--pp", "16",
                 "--cp", "16", "--seq", "131072", "--global-batch", "128", "--pp-first-layers", "7",
                 "--pp-last-layers", "7", "--sequence-parallel", "--recompute", "full", "--zero", "1",
                 "--tokens", "16777216", "-f", "json")  # fmt: skip
    assert run.code == 0, run.stderr
    inputs = json.loads(run.stdout)["inputs"]
    assert inputs["data_parallel"] == 8
    assert inputs["stage_layers"] == " + ".join(["7"] + ["8"] * 14 + ["7"])
    assert (inputs["global_batch"], inputs["micro_batches"]) == (128, 16)


def test_bloom_pp12(tfcost):
    # BLOOM-176B (Le Scao et al. 2022 §3.4): 384 A100 80GB, TP 4, PP 12, DP 8; 70 layers as 5 + 10 x 6 + 5.
    run = tfcost("train", "bloom-176b", "--gpu", "a100-80gb", "--gpus", "384", "--tp", "4", "--pp", "12",
                 "--pp-first-layers", "5", "--pp-last-layers", "5", "--seq", "2048", "--global-batch", "2048",
                 "--micro-batch", "2", "--zero", "1", "-f", "json")  # fmt: skip
    assert run.code == 0, run.stderr
    inputs = json.loads(run.stdout)["inputs"]
    assert inputs["stage_layers"] == " + ".join(["5"] + ["6"] * 10 + ["5"])
    assert inputs["micro_batches"] == 2048 // (2 * 8)
    assert inputs["pipeline_bubble"] == pytest.approx(11 / 128)


def test_uneven_stages_are_refused_without_their_counts(tfcost):
    assert "or give --pp-first-layers" in one_line_error(tfcost("train", "bloom-176b", "--gpus", "12", "--pp", "12"), 2)
    assert "split evenly" in one_line_error(
        tfcost("train", "bloom-176b", "--gpus", "12", "--pp", "12", "--pp-first-layers", "3"), 2
    )


def test_stage_layers():
    assert parallel.stage_layers(32, 4) == [8, 8, 8, 8]
    assert parallel.stage_layers(126, 16, 7, 7) == [7] + [8] * 14 + [7]
    assert parallel.stage_layers(30, 4, None, 3) == [9, 9, 9, 3]
    with pytest.raises(UsageError):
        parallel.stage_layers(126, 16)


def test_bubble_and_interleaving():
    # Narayanan et al. 2021 §2.2: (p - 1)/m, divided by v for the interleaved schedule.
    assert parallel.bubble_fraction(8, 64) == pytest.approx(7 / 64)
    assert parallel.bubble_fraction(8, 64, 3) == pytest.approx(7 / 192)
    # Korthikanti et al. 2022 §4.2.3: the first stage holds 1 + (p - 1)/(p v) of L layers' activations.
    assert parallel.in_flight_factor(8, 1) == 1
    assert parallel.in_flight_factor(8, 3) == pytest.approx(1 + 7 / 24)


def layout(**fields: object) -> TrainingSetup:
    return TrainingSetup(tokens=10**9, seq_len=2048, **fields)  # type: ignore[arg-type]


def test_layout_rules():
    gpt3 = load_model("gpt3-175b")
    with pytest.raises(UsageError, match="must divide every stage"):
        parallel.check_layout(gpt3, layout(gpus=64, tp=8, pp=8, virtual_stages=5))
    with pytest.raises(UsageError, match="multiple of micro-batch x data-parallel"):
        parallel.check_layout(gpt3, layout(gpus=128, tp=8, pp=8, global_batch=63))
    with pytest.raises(UsageError, match="multiple of pp"):
        parallel.check_layout(gpt3, layout(gpus=64, tp=8, pp=8, virtual_stages=3, global_batch=12))
    with pytest.raises(UsageError, match="2 x cp"):
        parallel.check_layout(gpt3, TrainingSetup(tokens=10**9, seq_len=2050, gpus=16, tp=8, cp=2))
    # Megatron-Core's own attention asserts "Context parallelism is only supported by TEDotProductAttention!", and
    # Transformer Engine disables its unfused backend under context parallelism: the ring needs a fused kernel.
    with pytest.raises(UsageError, match=r"context parallelism \(cp 2\) needs fused attention"):
        parallel.check_layout(gpt3, layout(gpus=16, tp=8, cp=2, flash=False))
    assert parallel.check_layout(gpt3, layout(gpus=16, tp=8, cp=2)) == [96]
    assert parallel.check_layout(gpt3, layout(gpus=64, tp=8, pp=8, virtual_stages=3, global_batch=64)) == [12] * 8


def test_interleaving_and_cp_change_the_activations():
    gpt3, gpu = load_model("gpt3-175b"), load_gpu("a100-80gb")
    base = dict(gpus=64, tp=8, pp=8, sequence_parallel=True, recompute="selective", global_batch=64)
    plain = train(gpt3, gpu, layout(**base)).memory_per_gpu.activations_bytes
    interleaved = train(gpt3, gpu, layout(**base, virtual_stages=3)).memory_per_gpu.activations_bytes
    assert interleaved / plain == pytest.approx(1 + 7 / 24, rel=1e-6)
    halved = train(gpt3, gpu, layout(**{**base, "gpus": 128}, cp=2)).memory_per_gpu.activations_bytes
    assert halved * 2 == pytest.approx(plain, rel=1e-6)


def test_expert_parallelism_shards_the_experts():
    # Mixtral 8x7B: 32 layers x 8 experts x 3 x 4096 x 14336 routed-expert parameters, the rest shared.
    mixtral, gpu = load_model("mixtral-8x7b"), load_gpu("h100-sxm")
    experts = 32 * 8 * 3 * 4096 * 14336
    assert parallel.routed_expert_params(mixtral) == experts
    rest = 46_702_792_704 - experts
    setup = TrainingSetup(tokens=10**9, seq_len=4096, gpus=64, tp=2, ep=8, zero=1, global_batch=256)
    memory = train(mixtral, gpu, setup).memory_per_gpu
    assert memory.weights_bytes == 2 * rest // 2 + 2 * experts // 16
    assert memory.optimizer_bytes == -(-12 * rest // 64) + -(-12 * experts // (16 * 4))  # ZeRO over N_d / e


def test_all_to_all_volume():
    # Each of b T tokens goes to k = 2 experts and back, forward and backward, d-wide in bf16; 7/8 leave the GPU.
    mixtral = load_model("mixtral-8x7b")
    setup = TrainingSetup(tokens=10**9, seq_len=4096, gpus=64, tp=2, ep=8)
    assert parallel.all_to_all_bytes(mixtral, setup) == 4 * (4096 * 2 * 4096 * 2 * 7 // 8)
    report = train(mixtral, load_gpu("h100-sxm"), setup)
    assert report.step is not None and report.step.seconds["ep_comm"] > 0


def test_expert_parallel_rules():
    mixtral, gpt3 = load_model("mixtral-8x7b"), load_model("gpt3-175b")
    with pytest.raises(UsageError, match="must divide the 8 routed experts"):
        parallel.check_layout(mixtral, TrainingSetup(tokens=1, seq_len=4096, gpus=48, ep=3))
    with pytest.raises(UsageError, match=r"etp x ep \(1 x 8\) must divide tp x cp x data-parallel \(4\)"):
        parallel.check_layout(mixtral, TrainingSetup(tokens=1, seq_len=4096, gpus=4, ep=8))
    with pytest.raises(UsageError, match="--etp needs a mixture-of-experts model"):
        parallel.check_layout(gpt3, TrainingSetup(tokens=1, seq_len=2048, gpus=8, tp=8, etp=1))
    with pytest.raises(UsageError, match="dense"):
        parallel.check_layout(gpt3, TrainingSetup(tokens=1, seq_len=2048, gpus=8, ep=2))


def test_interleaving_an_embedding_and_loss_accounted_split():
    # Megatron-Core's TransformerConfig: with --account-for-embedding-in-pipeline-split and
    # --account-for-loss-in-pipeline-split, (L + 2) / p layer slots a stage, "number of layers on each pipeline rank
    # ... must be divisible by virtual_pipeline_model_parallel_size"; with --decoder-first/last-pipeline-num-layers,
    # v must divide the first, the last and the middle stages' layers.
    assert parallel.accounted_slots([7] + [8] * 14 + [7]) == [8]  # Llama 3 405B: 126 + 2 over 16
    assert parallel.accounted_slots([5] + [6] * 10 + [5]) == [6]  # BLOOM-176B: 70 + 2 over 12
    assert parallel.accounted_slots([7] + [8] * 15) == [8]  # the embedding alone accounted: 127 + 1 over 16
    assert parallel.accounted_slots([16, 16]) == [16, 17]  # p = 2: even, or both ends one short of 17
    assert parallel.accounted_slots([4] * 15 + [1]) == []  # DeepSeek-V3's 4 x 15 + 1: no such split
    assert parallel.accounted_slots([12]) == []
    assert parallel.interleavable_layers([7] + [8] * 14 + [7]) == [1, 8]
    assert parallel.interleavable_layers([4] * 15 + [1]) == [1]
    assert parallel.interleavable_layers([12] * 8) == [12]
    assert parallel.interleavable_layers([16, 16]) == [16, 17]  # v = 2, 4, 8, 16 (even) or 17 (one slot a chunk)
    gpt2 = load_model("gpt2-small")  # 12 layers on 2 stages: 6 + 6, or 6 + 6 with the embedding and loss: 7 slots
    for v, legal in ((2, True), (3, True), (6, True), (7, True), (4, False), (5, False)):
        setup = TrainingSetup(tokens=1, seq_len=1024, gpus=2, pp=2, virtual_stages=v, global_batch=8)
        if legal:
            assert parallel.check_layout(gpt2, setup) == [6, 6]
        else:
            with pytest.raises(UsageError, match="layer slots"):
                parallel.check_layout(gpt2, setup)
    llama = load_model("llama-3.1-405b")
    published = dict(gpus=16384, tp=8, pp=16, cp=16, pp_first_layers=7, pp_last_layers=7, global_batch=128)
    for v in (2, 4, 8):  # Dubey et al. 2024 §3.3.2: "an interleaved schedule ... with V pipeline stages on one rank"
        stages = parallel.check_layout(llama, layout(**published, virtual_stages=v))
        assert stages == [7] + [8] * 14 + [7]
    for v in (3, 7, 16):
        with pytest.raises(UsageError, match="layer slots"):
            parallel.check_layout(llama, layout(**published, virtual_stages=v))
    # v chunks of 7 + 14 x 8 + 7 are priced as any interleaved layout: the bubble (p - 1)/(v m) of the busiest
    # stage's time, "Overall pipeline bubble ratio is (PP-1)/(V*M)" (Llama 3 §3.3.2)
    gpu = load_gpu("h100-sxm")
    run = TrainingSetup(tokens=16777216, seq_len=131072, recompute="full", sequence_parallel=True, **published)
    plain = train(llama, gpu, run)
    interleaved = train(llama, gpu, run.model_copy(update={"virtual_stages": 8}))
    assert plain.step is not None and interleaved.step is not None
    assert interleaved.inputs.pipeline_bubble == pytest.approx(15 / (8 * 16))
    # an eighth of the plain schedule's, and a little more: each micro-batch's stage time carries its 2 v
    # point-to-point sends (pp_comm), 8 x as many
    ratio = interleaved.step.seconds["bubble"] / plain.step.seconds["bubble"]
    sends = interleaved.step.seconds["pp_comm"] - plain.step.seconds["pp_comm"]
    assert ratio == pytest.approx((plain.step.seconds["bubble"] + 15 / 16 * sends) / 8 / plain.step.seconds["bubble"])


def test_zero2_under_pipeline_parallelism_holds_the_gradients_as_zero1():
    # A pipeline stage accumulates every micro-batch's gradients before one reduce-scatter (DeepSpeed's pipeline
    # engine refuses ZeRO-2; Megatron-LM's distributed optimizer shards the optimizer states only; FSDP under
    # torch.distributed.pipelining syncs at the last backward): with m > 1 ZeRO-2 holds them unsharded. Llama-3-8B,
    # t 1, p 2, d 4 over 8 GPUs: 8.03B / 2 parameters a GPU at 2 bytes, sharded over 4 only with one micro-batch.
    shape = load_model("llama-3-8b")
    stage_params = params.total_params(shape) / 2

    def gradients(**fields: object) -> int:
        return training.memory_per_gpu(shape, layout(gpus=8, pp=2, **fields))["gradients"]

    assert gradients(zero=2, global_batch=8) == pytest.approx(2 * stage_params, rel=1e-9)  # m = 2
    assert gradients(zero=2, global_batch=8) == gradients(zero=1, global_batch=8)
    assert gradients(zero=2, global_batch=4) == pytest.approx(2 * stage_params / 4, rel=1e-9)  # m = 1
    no_pipeline = training.memory_per_gpu(shape, layout(gpus=8, zero=2, global_batch=64))["gradients"]
    assert no_pipeline == pytest.approx(2 * params.total_params(shape) / 8, rel=1e-9)
    # The optimizer states stay sharded: ZeRO-2's optimizer bytes are ZeRO-1's.
    held = training.memory_per_gpu(shape, layout(gpus=8, pp=2, zero=2, global_batch=8))
    assert held["optimizer"] == pytest.approx(12 * stage_params / 4, rel=1e-9)


def test_experts_fold_over_tensor_and_data_parallelism():
    # Megatron-Bridge's Qwen3-235B-A22B recipe on 256 H100s, "TP=2 PP=8 VP=4 EP=32" (perf_recipes qwen3_moe): 16
    # data-parallel replicas of t = 2, so e = 32 is drawn from t x N_d = 32 GPUs a stage with etp = 1. Megatron-Core's
    # parallel_state (00caa53): "expert_data_parallel_size = world_size // expert_tensor_model_pipeline_parallel_size"
    # = 256 // (1 x 32 x 8) = 1, and etp defaults to tp: with etp = 2, 2 x 32 = 64 GPUs do not fit in a stage's 32.
    qwen = load_model("qwen3-235b-a22b")
    recipe = {
        "tokens": 10**9,
        "seq_len": 4096,
        "gpus": 256,
        "tp": 2,
        "pp": 8,
        "ep": 32,
        "sequence_parallel": True,
        "virtual_stages": 4,
        "pp_first_layers": 11,
        "pp_last_layers": 11,
        "global_batch": 2048,
        "zero": 1,
    }
    folded = TrainingSetup(**recipe, etp=1)
    assert folded.data_parallel == 16 and folded.expert_data_parallel == 1
    assert parallel.check_layout(qwen, folded) == [11] + [12] * 6 + [11]
    with pytest.raises(UsageError, match=r"etp x ep \(2 x 32\) must divide tp x cp x data-parallel \(32\)"):
        parallel.check_layout(qwen, TrainingSetup(**recipe))
    # Each GPU holds 1/(etp e p) of the routed experts (94 layers x 128 experts x 3 x 4096 x 1536), the rest 1/(t p);
    # the experts' optimizer states are sharded over the experts' data-parallel group (1 rank), the rest over 16.
    experts = 94 * 128 * 3 * 4096 * 1536
    assert parallel.routed_expert_params(qwen) == experts
    rest = params.total_params(qwen) - experts
    memory = train(qwen, load_gpu("h100-sxm"), folded).memory_per_gpu
    assert memory.weights_bytes == -(-2 * rest // 16) + -(-2 * experts // 256)
    assert memory.optimizer_bytes == -(-12 * rest // (16 * 16)) + -(-12 * experts // 256)


def test_all_to_all_counts_the_sequence_parallel_share():
    # Megatron-Core's dispatcher (token_dispatcher.py at 0014f13): "num_local_tokens: S/TP*B". Qwen3-235B, t = 2 with
    # sequence parallelism, etp = 1, e = 32: each GPU routes 4096 / 2 = 2,048 tokens to k = 8 experts, d = 4096, bf16,
    # dispatch + combine, forward + backward. Experts' ranks are etp = 1 apart, so a node of 8 holds 8 of the 32:
    # 7/32 of the copies over NVLink and 24/32 over the network.
    qwen = load_model("qwen3-235b-a22b")
    setup = TrainingSetup(tokens=10**9, seq_len=4096, gpus=256, tp=2, pp=8, ep=32, etp=1, sequence_parallel=True)
    assert parallel.dispatched_tokens(setup) == 2048
    copies = 4 * 2048 * 8 * 4096 * 2
    assert parallel.all_to_all_split(qwen, setup, 8) == (copies * 7 / 32, copies * 24 / 32)
    assert parallel.expert_tp_bytes(qwen, setup) == 0
    # etp = 2 (t x N_d = 64 on 512 GPUs): after the all-to-all each rank all-gathers its etp peer's copies and
    # reduce-scatters them back, forward and backward: 4 x (2 - 1) x 2,048 x 8 copies, d-wide; a node holds 4 ranks.
    wide = setup.model_copy(update={"gpus": 512, "etp": 2})
    assert parallel.expert_tp_bytes(qwen, wide) == 4 * 2048 * 8 * 4096 * 2
    assert parallel.all_to_all_split(qwen, wide, 8) == (copies * 3 / 32, copies * 28 / 32)


def test_node_limited_routing_sends_a_token_once_to_each_node():
    # DeepSeek-V3 §3.2.2: "we limit each token to be dispatched to at most 4 nodes"; with e = 64 over 8 nodes and
    # k = 8 uniform picks a token reaches 8 (1 - (7/8)^8) = 5.25 nodes in expectation, capped at M = 4, of which 7/8
    # are other nodes; every copy but the 1/64 on its own GPU crosses NVLink once it lands.
    deepseek = load_model("deepseek-v3")
    setup = TrainingSetup(tokens=10**9, seq_len=4096, gpus=2048, pp=16, ep=64, zero=1, pp_first_layers=4,
                          pp_last_layers=1, moe_node_limit=4)  # fmt: skip
    token_bytes = 4 * 4096 * 7168 * 2
    intra, inter = parallel.all_to_all_split(deepseek, setup, 8)
    assert inter == pytest.approx(token_bytes * 4 * 7 / 8)
    assert intra == pytest.approx(token_bytes * 8 * 63 / 64)
    # Padded to capacity (Megatron-Core's get_capacity: capacity_factor x tokens x k / E per expert), the copies grow
    # by the factor.
    padded = setup.model_copy(update={"moe_node_limit": 0, "moe_capacity_factor": 1.25})
    plain = setup.model_copy(update={"moe_node_limit": 0})
    assert parallel.all_to_all_bytes(deepseek, padded) == pytest.approx(
        1.25 * parallel.all_to_all_bytes(deepseek, plain), rel=1e-6
    )


def test_token_permutations_are_counted_as_memory_traffic():
    # Megatron-Core's dispatcher: "permute->A2A(EP)->AG(TP)->sort_chunk(if num_local_experts>1)" and back. DeepSeek-V3,
    # e = 64 (4 local experts), t = 1, b 1, T 4096: the permute reads and writes 4,096 x 8 rows, the unpermute reads
    # the 32,768 and writes 4,096, each sort reads and writes 32,768 (twice): 7 x 32,768 + 4,096 rows of 7,168 bf16.
    deepseek = load_model("deepseek-v3")
    setup = TrainingSetup(tokens=10**9, seq_len=4096, gpus=2048, pp=16, ep=64, pp_first_layers=4, pp_last_layers=1)
    assert parallel.permute_bytes(deepseek, setup) == (7 * 32768 + 4096) * 7168 * 2
    # with e = 256 each GPU holds one expert: no sort
    one = setup.model_copy(update={"ep": 256})
    assert parallel.permute_bytes(deepseek, one) == (3 * 32768 + 4096) * 7168 * 2
    assert parallel.permute_bytes(load_model("gpt3-175b"), setup.model_copy(update={"ep": 1})) == 0


def test_a_megatron_pipeline_layout_string_sets_each_stages_layers():
    # Megatron-Core's parse_str_to_list (pipeline_parallel_layer_layout.py at d98e8a6): 'Example: "Ettt|(tt|)*29,m|L"
    # will be parsed to [["E","t","t","t"]]+[["t","t"]]*29+[["m"],["L"]]'; chunk i runs on stage i mod p.
    assert parallel.layout_chunks("Ettt|(tt|)*29,m|L") == ["Ettt"] + ["tt"] * 29 + ["m", "L"]
    # Megatron-Bridge's DeepSeek-V3 H100 recipe: pp 8, vpp 4, pp_layout "Et|(tt|)*30mL" (deepseek_workload_base_configs
    # .py): 32 chunks; stage 0 holds chunks 0, 8, 16, 24 = 1 + 2 + 2 + 2 = 7 layers, stage 7 holds 2 + 2 + 2 + 0 = 6,
    # the others 8: 61 in all, where an even split cannot place 61 layers on 32 chunks.
    stages = parallel.layout_stages("Et|(tt|)*30mL", 61, 8, 4)
    assert stages == [7, 8, 8, 8, 8, 8, 8, 6] and sum(stages) == 61
    deepseek = load_model("deepseek-v3")
    setup = TrainingSetup(tokens=1, seq_len=4096, gpus=1024, tp=2, pp=8, virtual_stages=4, ep=64, etp=1,
                          sequence_parallel=True, global_batch=8192, pp_layout="Et|(tt|)*30mL")  # fmt: skip
    assert parallel.check_layout(deepseek, setup) == stages
    with pytest.raises(UsageError, match="holds 60 transformer layers"):
        parallel.layout_stages("Et|(tt|)*29,t|mL", 61, 8, 4)
    with pytest.raises(UsageError, match="start with the embedding"):
        parallel.layout_stages("t|(tt|)*30mEL", 61, 8, 4)
    with pytest.raises(UsageError, match="without --pp-first-layers"):
        parallel.check_layout(deepseek, setup.model_copy(update={"pp_first_layers": 7}))
