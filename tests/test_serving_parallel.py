"""`serve --pp/--ep` and `plan serve` over tp x pp x ep: values derived by hand from the models' configs, vLLM's
stage split, and the send and all-to-all each step adds (issue 23)."""

from __future__ import annotations

import json

import pytest
from test_cli import one_line_error

from tfcost import api
from tfcost.costs import expected, serving
from tfcost.readers.presets import load_gpu, load_model
from tfcost.reports.serve import serve
from tfcost.schema import ServingSetup

H100 = load_gpu("h100-sxm")
# Llama 3 8B (meta-llama/Meta-Llama-3-8B config.json): 32 layers, hidden_size 4096, untied 128,256-token embedding
# and head; 8,030,261,248 parameters (the model card's 8.03B; the safetensors index's total_size 16,060,522,496
# bytes in bf16).
LLAMA_3_8B_BYTES = 16_060_522_496
# Qwen3-30B-A3B (Qwen/Qwen3-30B-A3B config.json): 48 layers, hidden_size 2048, num_experts 128,
# num_experts_per_tok 8, moe_intermediate_size 768, every layer MoE; a routed expert is a gated MLP, 3 matrices.
QWEN3_ROUTED_PARAMS = 48 * 128 * 3 * 2048 * 768


def test_stage_layers_as_vllm_splits_them():
    # get_pp_indices: L // pp each, the remainder one more each on the stages before the last.
    assert serving.stage_layers(32, 2) == [16, 16]
    assert serving.stage_layers(10, 4) == [2, 3, 3, 2]
    assert serving.stage_layers(61, 8) == [7, 7, 8, 8, 8, 8, 8, 7]  # DeepSeek-V3
    assert serving.stage_layers(5, 1) == [5]


def test_pipeline_times_by_hand():
    # Stages of 2 and 2 layers (4 in all): 8 ms of layers, 1 ms of head on the last, 0.5 ms a send.
    one_pass, slowest = expected.pipeline_seconds(8.0, 1.0, [2, 2], 4, [0.5])
    assert (one_pass, slowest) == (4.0 + 5.0 + 0.5, 5.0)
    assert expected.pipeline_token_seconds(one_pass, slowest, 1) == 9.5  # one micro-batch: its own pass
    assert expected.pipeline_token_seconds(one_pass, slowest, 2) == 10.0  # two: both through the slowest stage
    assert expected.pipeline_batch_seconds(one_pass, slowest, 2) == 14.5  # the second prefilled a stage later


def test_pipeline_halves_the_weights_per_gpu():
    tp_only = serve(load_model("llama-3-8b"), H100, ServingSetup(gpus=1))
    piped = serve(load_model("llama-3-8b"), H100, ServingSetup(gpus=1, pp=2))
    assert tp_only.memory.weights_bytes_per_gpu == LLAMA_3_8B_BYTES
    assert piped.memory.weights_bytes_per_gpu == LLAMA_3_8B_BYTES // 2
    # Expected: the first stage 16 layers and the embedding, the last 16 layers and the head, the same size here
    # (an untied head is the embedding's shape); the KV cache of 16 layers; context and workspace on each GPU.
    e1, e2 = tp_only.expected, piped.expected
    kv_per_sequence = 2 * 32 * 8 * 128 * 2 * e1.kv_tokens_per_sequence  # 2 (K, V) x L x K heads x 128 x 2 bytes
    assert e1.total_bytes_per_gpu == LLAMA_3_8B_BYTES + kv_per_sequence + e1.cuda_context_bytes + e1.workspace_bytes
    assert e2.total_bytes_per_gpu == (LLAMA_3_8B_BYTES + kv_per_sequence) // 2 + e2.cuda_context_bytes + (
        e2.workspace_bytes
    )
    assert e2.max_batch > 2 * e1.max_batch  # half the weights and half the cache a sequence


def test_pipeline_adds_the_stage_to_stage_send():
    shape = load_model("llama-3-8b")
    tp_only = serve(shape, H100, ServingSetup(gpus=1)).expected
    piped = serve(shape, H100, ServingSetup(gpus=1, pp=2)).expected
    # One sequence: one micro-batch in flight, the stages in turn, one send of hidden states and residual between
    # them: 2 x 4,096 x 2 bytes over NVLink 4 (450 GB/s one way) plus its 0.6 us latency.
    send_s = 2 * 4096 * 2 / 450e9 + 0.6e-6
    assert piped.pipeline_send_ms == pytest.approx(send_s * 1e3, rel=1e-12)
    assert piped.tpot_ms == pytest.approx(tp_only.tpot_ms + send_s * 1e3, rel=1e-9)
    prompt_send_s = 2048 * 2 * 4096 * 2 / 450e9 + 0.6e-6  # the 2,048-token prompt's hidden states and residual
    assert piped.ttft_ms == pytest.approx(tp_only.ttft_ms + prompt_send_s * 1e3, rel=1e-9)
    # Sixteen sequences: two micro-batches of 8, each stage's step at 8, every token waiting for both.
    eight = serve(shape, H100, ServingSetup(gpus=1, batch=8)).expected
    sixteen = serve(shape, H100, ServingSetup(gpus=1, pp=2, batch=16)).expected
    assert sixteen.tokens_per_s == pytest.approx(16 / (sixteen.tpot_ms / 1e3))
    assert eight.tpot_ms < sixteen.tpot_ms < eight.tpot_ms * 1.1  # the head makes the last stage the slower
    assert sixteen.decode_flops_per_gpu == eight.decode_flops_per_gpu  # a step's work is the micro-batch's


def test_expert_parallelism_splits_the_expert_bytes():
    shape = load_model("qwen3-30b-a3b")
    whole = serve(shape, H100, ServingSetup(gpus=1)).memory.weights_bytes
    routed = 2 * QWEN3_ROUTED_PARAMS
    # tp 1, ep 8: each GPU holds its 16 of 128 experts and the rest (attention, router, embeddings) whole.
    split = serve(shape, H100, ServingSetup(gpus=1, ep=8, batch=8))
    assert split.memory.weights_bytes_per_gpu == whole - routed + routed // 8
    # tp 8, ep 8: the experts whole on 8 GPUs, everything else in 8: the same bytes as tensor parallelism.
    same = serve(shape, H100, ServingSetup(gpus=8, ep=8, batch=8))
    assert same.memory.weights_bytes_per_gpu == serve(shape, H100, ServingSetup(gpus=8)).memory.weights_bytes_per_gpu
    # The dispatch and combine: each GPU's one decode token (8 sequences over 8 attention ranks) to k = 8 experts,
    # 7 in 8 of them on other GPUs, bf16 2,048-wide, both ways in each of the 48 MoE layers, plus latency and floor.
    one_way = 1 * 8 * 7 / 8 * 2048 * 2 / 450e9 + 0.6e-6 + expected.KERNEL_FLOOR_S
    assert split.expected.decode_all_to_all_ms == pytest.approx(2 * 48 * one_way * 1e3, rel=1e-12)
    assert split.expected.max_batch % 8 == 0  # 8 attention ranks, each as many sequences


def test_api_takes_pp_and_ep():
    report = api.serve("qwen3-30b-a3b", gpus=2, pp=2, ep=4, batch=16)
    assert (report.setup.pp, report.setup.ep) == (2, 4)
    assert report.expected.decode_all_to_all_ms is not None and report.expected.pipeline_send_ms is not None
    assert "pp" not in api.serve("llama-3-8b").model_dump(mode="json")["setup"]  # tp-only output unchanged


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("llama-3-8b", "--ep", "2", "--gpus", "2"), "ep (2) needs routed experts: llama-3-8b is a dense model"),
        (("llama-3-8b", "--pp", "33"), "pp (33) must not exceed the 32 layers of llama-3-8b"),
        (("mixtral-8x7b", "--ep", "3", "--gpus", "1"), "ep (3) must divide the 8 routed experts of mixtral-8x7b"),
        (("mixtral-8x7b", "--ep", "2", "--gpus", "4"), "ep (2) must be a multiple of tp (4)"),
        (("t5-small", "--pp", "2"), "pp (2) is not priced for an encoder-decoder model"),
        (("llama-3-8b", "--pp", "2", "--explain"), "--explain works out tensor parallelism only"),
    ],
)
def test_bad_layouts_are_one_line(tfcost, args, words):
    assert words in one_line_error(tfcost("serve", *args), 2)  # a usage error


def test_plan_serve_finds_expert_and_pipeline_layouts(tfcost):
    run = tfcost("plan", "serve", "qwen3-30b-a3b", "--gpus", "8", "-P", "1000", "-G", "1000", "--top", "100",
                 "-f", "json")  # fmt: skip
    assert run.code == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["searched"] == report["feasible"] + sum(report["rejected"].values())
    layouts = report["layouts"]
    assert any(layout["ep"] > 1 for layout in layouts) and any(layout["pp"] > 1 for layout in layouts)
    assert layouts[0]["ep"] == 8  # experts over all 8 GPUs, attention in data parallel: the most tokens/s per GPU
    shape = load_model("qwen3-30b-a3b")
    for layout in layouts[:5] + report["pareto"]:
        replica = layout["pp"] * max(layout["tp"], layout["ep"])
        assert replica * layout["replicas"] == 8
        setup = ServingSetup(gpus=layout["tp"], pp=layout["pp"], ep=layout["ep"], batch=layout["batch"],
                             weights_dtype=layout["weights_dtype"], kv_dtype=layout["kv_dtype"], prompt=1000,
                             generate=1000)  # fmt: skip
        result = serve(shape, H100, setup).expected  # the figures `serve` prints for the same layout
        assert result.fits and (result.ttft_ms, result.tpot_ms) == (layout["ttft_ms"], layout["tpot_ms"])
        assert result.total_bytes_per_gpu == layout["memory_per_gpu_bytes"]
        assert layout["tokens_per_s_per_gpu"] == pytest.approx(result.tokens_per_s / replica)


def test_plan_serve_counts_the_expert_rule(tfcost):
    report = json.loads(tfcost("plan", "serve", "mixtral-8x7b", "--gpus", "6", "-f", "json").stdout)
    assert report["rejected"]["ep must divide the 8 routed experts"] > 0  # ep 3 and 6
    dense = json.loads(tfcost("plan", "serve", "llama-3.1-8b", "--gpus", "4", "--top", "1000", "-f", "json").stdout)
    assert {layout["ep"] for layout in dense["layouts"]} == {1}  # no expert parallelism without experts
    assert {layout["pp"] for layout in dense["layouts"]} == {1, 2, 4}


def test_a_replica_wider_than_a_node_crosses_the_network():
    shape = load_model("qwen3-30b-a3b")
    # ep 16 over two 8-GPU nodes (DGX H100: one 400 Gb/s port a GPU, 50 GB/s): of each token's 8 copies, 8 in 16 go
    # to the other node at 50 GB/s while 7 in 16 go over NVLink at 450 GB/s; the network is the slower.
    wide = serve(shape, H100, ServingSetup(gpus=1, ep=16, batch=16)).expected
    copies = 1 * 8 * 2048 * 2
    one_way = max(copies * 8 / 16 / 50e9, copies * 7 / 16 / 450e9) + 0.6e-6 + expected.KERNEL_FLOOR_S
    assert wide.decode_all_to_all_ms == pytest.approx(2 * 48 * one_way * 1e3, rel=1e-12)
    # tp 8 x pp 2: the second stage on the second node, its one send over the network.
    piped = serve(shape, H100, ServingSetup(gpus=8, pp=2)).expected
    assert piped.pipeline_send_ms == pytest.approx((2 * 2048 * 2 / 50e9 + 0.6e-6) * 1e3, rel=1e-12)
    inside = serve(shape, H100, ServingSetup(gpus=4, pp=2)).expected  # both stages on one node: NVLink
    assert inside.pipeline_send_ms == pytest.approx((2 * 2048 * 2 / 450e9 + 0.6e-6) * 1e3, rel=1e-12)
