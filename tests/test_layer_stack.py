"""The layer-stack core: operation tables, compact non-uniform stacks, new kinds, and the encoder-decoder fixes.

Independent checks: masks counted entry by entry, T5-small's published sizes, and (test_layer_stack_truth.py) a
tiny gpt-oss built by transformers 5.24 on the meta device."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_in_process

from tfcost.core import flops, memory, params
from tfcost.core.blocks import Block, blocks
from tfcost.core.layers import MIXERS, layer_ops
from tfcost.core.ops import Op, score_entries
from tfcost.costs import training
from tfcost.errors import TfcostError
from tfcost.readers.presets import load_gpu, load_model
from tfcost.reports import estimate as report
from tfcost.reports import serve as serve_report
from tfcost.reports import train as train_report
from tfcost.schema import ModelShape, ServingSetup, TrainingSetup, Workload


def with_fields(shape: ModelShape, **fields: object) -> ModelShape:
    return ModelShape.model_validate({**shape.model_dump(), **fields})


def same_costs(a: ModelShape, b: ModelShape, tokens: int) -> None:
    assert params.parameter_breakdown(a) == params.parameter_breakdown(b)
    for causal in (False, True):
        assert flops.forward_flops_breakdown(a, tokens, causal) == flops.forward_flops_breakdown(b, tokens, causal)
    assert memory.kv_cache_bytes(a, tokens, 2, "bf16") == memory.kv_cache_bytes(b, tokens, 2, "bf16")
    assert flops.attention_score_flops_per_token(a, tokens) == flops.attention_score_flops_per_token(b, tokens)


def test_a_compact_stack_prices_gemma_2_as_its_flat_fields_do() -> None:
    flat = load_model("gemma-2-9b")  # sliding_layers: the even ones
    pattern = [{"window": flat.sliding_window}, {}]
    stacked = with_fields(flat, sliding_layers=None, layers=[{"pattern": pattern, "repeat": flat.n_layers // 2}])
    same_costs(flat, stacked, 9000)


def test_a_compact_stack_prices_deepseek_v3_as_its_flat_fields_do() -> None:
    flat = load_model("deepseek-v3")  # dense_layers [0, 1, 2], MoE after
    assert flat.moe is not None
    groups = [{"pattern": [{"mixer": "mla"}], "repeat": 3}, {"pattern": [{"mixer": "mla", "ffn": "moe"}], "repeat": 58}]
    stacked = with_fields(flat, moe={**flat.moe.model_dump(), "dense_layers": []}, layers=groups)
    same_costs(flat, stacked, 5000)
    assert params.active_params(flat) == params.active_params(stacked)


def test_a_stack_must_add_up_to_n_layers() -> None:
    with pytest.raises(ValueError, match="layers describes 40 layers, n_layers is 42"):
        with_fields(load_model("gemma-2-9b"), sliding_layers=None, layers=[{"pattern": [{}, {}], "repeat": 20}])


def brute_force_entries(tokens: int, window: int | None = None, chunk: int | None = None) -> int:
    """Count the (query, key) pairs a causal mask keeps, one by one."""
    return sum(
        1
        for i in range(tokens)
        for j in range(i + 1)
        if (window is None or i - j < window) and (chunk is None or i // chunk == j // chunk)
    )


@pytest.mark.parametrize("tokens", [1, 7, 8, 9, 31, 64])
@pytest.mark.parametrize("chunk", [1, 4, 8, 13])
def test_chunked_causal_entries_are_the_chunked_mask(tokens: int, chunk: int) -> None:
    assert score_entries(tokens, True, chunk=chunk) == brute_force_entries(tokens, chunk=chunk)


def test_a_chunked_layer_caches_at_most_its_chunk() -> None:
    llama = load_model("llama-3-8b")
    chunked = with_fields(llama, layers=[{"pattern": [{"chunk": 8192}], "repeat": llama.n_layers}])
    per_token = memory.kv_cache_bytes_per_token(llama, "bf16")
    assert memory.kv_cache_bytes(chunked, 100_000, 1, "bf16") == 8192 * per_token
    assert memory.kv_cache_bytes(chunked, 5000, 1, "bf16") == 5000 * per_token


def test_an_uncovered_mixer_is_an_error_naming_it(tmp_path: Path) -> None:
    llama = load_model("llama-3-8b")
    shape = with_fields(llama, layers=[{"pattern": [{"mixer": "rwkv7"}], "repeat": llama.n_layers}])
    with pytest.raises(TfcostError, match="mixer kind 'rwkv7' is not covered"):
        params.total_params(shape)
    preset = tmp_path / "hybrid.yaml"
    preset.write_text(
        (Path("presets/models/llama-3-8b.yaml")).read_text()
        + "layers:\n  - pattern: [{mixer: rwkv7}, {mixer: rwkv7}, {mixer: rwkv7}, {}]\n"
        "    repeat: 8\n"
    )
    run = run_in_process("estimate", str(preset))
    assert run.code != 0
    [line] = run.stderr.strip().splitlines()
    assert line.startswith("tfcost: error: mixer kind 'rwkv7' is not covered by tfcost's core (covered: attention, mla")


def test_hyper_connections_are_priced_in_every_layer_and_the_head() -> None:
    # DeepSeek-V4's mHC (tfcost.core.layers.hyper_connections; exact against transformers in test_truth_deepseek_v4):
    # per sublayer an n d -> (2 + n) n projection, (2 + n) n biases and 3 scales, and the streams mixed by an
    # n x n matmul (2 n^2 d FLOPs a token); after the last layer an n d -> n projection, n biases and a scale.
    base = load_model("llama-3-8b")
    n, d, layers, tokens = 4, base.d_model, base.n_layers, 100
    mixed = with_fields(base, hyper_connections=n)
    per_layer = 2 * (n * d * (2 + n) * n + (2 + n) * n + 3)
    assert params.total_params(mixed) - params.total_params(base) == layers * per_layer + n * n * d + n + 1
    per_token = layers * 2 * (2 * n * d * (2 + n) * n + 2 * n * n * d) + 2 * n * d * n
    assert flops.forward_flops(mixed, tokens) - flops.forward_flops(base, tokens) == tokens * per_token


def test_a_new_mixer_kind_is_one_table_and_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A made-up recurrent mixer: a d -> d projection per token and a fixed 64 x 64 state per head."""

    def recurrent_ops(shape: ModelShape, block: Block) -> list[Op]:
        return [
            Op("mixer/in", "linear", shape.d_model, shape.d_model, "token", flops_part="mixer/in"),
            Op("state/recurrent", "state", shape.n_heads * 64 * 64, shape.n_heads, "weights"),
        ]

    monkeypatch.setitem(MIXERS, "toy_recurrent", recurrent_ops)
    llama = load_model("llama-3-8b")
    d, heads, layers = llama.d_model, llama.n_heads, llama.n_layers
    shape = with_fields(llama, name="toy", layers=[{"pattern": [{"mixer": "toy_recurrent"}], "repeat": layers}])
    mlp_and_norms = sum(value for key, value in params.layer_params(llama).items() if not key.startswith("attention"))
    assert params.params_per_layer(shape) == d * d + mlp_and_norms
    assert memory.kv_cache_bytes(shape, 4096, 3, "bf16") == 0
    assert memory.state_bytes(shape, 3, "bf16") == layers * heads * 64 * 64 * 3 * 2
    assert flops.forward_flops_breakdown(shape, 10)["mixer/in"] == layers * 2 * 10 * d * d
    assert report.estimate(shape, Workload()).kv_cache.state_bytes == layers * heads * 64 * 64 * 2


def test_attention_models_have_no_state() -> None:
    for name in ("llama-3-8b", "deepseek-v3", "t5-small", "gemma-2-9b"):
        assert memory.state_bytes(load_model(name), 8, "bf16") == 0


@pytest.mark.parametrize("name", ["gemma-2-9b", "deepseek-v3", "t5-small", "bert-base"])
def test_by_layer_kind_adds_up_to_the_layers(name: str) -> None:
    shape = load_model(name)
    parts = params.parameter_breakdown(shape)
    in_layers = sum(value for key, value in parts.items() if key.split("/")[0] in ("layers", "encoder", "decoder"))
    assert sum(params.params_by_layer_kind(shape).values()) == in_layers
    outside = ("output_head", "pooler", "mlm_transform")
    head = sum(value for key, value in flops.forward_flops_breakdown(shape, 300).items() if key in outside)
    assert sum(flops.flops_by_layer_kind(shape, 300).values()) == flops.forward_flops(shape, 300) - head


def test_layer_kinds_are_named_by_what_differs() -> None:
    assert [(block.name, count) for block, count in blocks(load_model("gemma-2-9b"))] == [
        ("attention(window=4096)+mlp", 21),
        ("attention+mlp", 21),
    ]
    assert [block.name for block, _ in blocks(load_model("t5-small"))] == [
        "encoder:attention+mlp",
        "decoder:attention+cross_attention+mlp",
    ]


def test_deepseek_v3_mtp_module_is_one_more_moe_block_a_projection_and_three_norms() -> None:
    """DeepSeek's README_WEIGHTS: 11.5B unique MTP parameters besides the shared embedding and head; vLLM's
    DeepSeekMultiTokenPredictorLayer: enorm, hnorm, eh_proj (2d -> d), the block, shared_head.norm."""
    shape = load_model("deepseek-v3")
    d = shape.d_model
    moe_block = next(block for block, _ in blocks(shape) if block.moe)
    one_block = sum(params.block_params(shape, moe_block).values())
    assert params.mtp_params(shape) == one_block + 2 * d * d + 3 * d == 11_610_067_968
    assert 11.5e9 <= params.mtp_params(shape) < 11.65e9
    assert report.estimate(shape, Workload()).params.mtp == 11_610_067_968
    assert "mtp" not in report.estimate(load_model("llama-3-8b"), Workload()).params.model_dump()


# The encoder-decoder and head-less fixes -------------------------------------------------------------------

T5_DECODER_LAYERS, T5_HEADS, T5_HEAD_DIM = 6, 8, 64  # T5-small (Raffel et al. 2020; t5-small config.json)


def test_serving_t5_caches_g_decoder_and_p_encoder_positions() -> None:
    shape, gpu = load_model("t5-small"), load_gpu("h100-sxm")
    setup = ServingSetup(batch=8, prompt=4096, generate=1024)
    served = serve_report.serve(shape, gpu, setup)
    # Each decoder layer caches 2*H*Q per decoder position (self) and per encoder position (cross), in bf16.
    per_position = 2 * T5_DECODER_LAYERS * T5_HEADS * T5_HEAD_DIM * 2
    assert served.memory.kv_cache_bytes == 8 * (1024 + 4096) * per_position == 503_316_480


def test_serving_t5_encodes_the_prompt_once_and_decodes_one_token_at_a_time() -> None:
    """T5-small: d 512, H*Q 512, F 2048 (plain ReLU MLP), V 32128, 6 decoder layers; P 4096, G 1024."""
    from tfcost.costs import serving

    shape, d, hq, ff, vocab, layers, p, g = load_model("t5-small"), 512, 512, 2048, 32128, 6, 4096, 1024
    encoder = sum(v for k, v in flops.forward_flops_breakdown(shape, p, True).items() if k.startswith("encoder/"))
    # prefill = the encoder over P + the start token's decoder pass, which also projects the P encoder positions
    # into cross-attention keys and values once
    start_token = (
        layers
        * (2 * 4 * d * hq + 2 * 2 * hq * 1 + 2 * 2 * d * hq + 2 * 2 * p * d * hq + 2 * 2 * hq * p + 2 * 2 * d * ff)
        + 2 * d * vocab
    )
    assert serving.prefill_flops(shape, p, 1) == encoder + start_token
    # a decode step at decoder position G: self q/k/v/o, scores and values over G positions, cross q/o, scores
    # and values over the P cached encoder positions, the MLP and the head; no encoder work, no cross k/v
    step = layers * (2 * 4 * d * hq + 2 * 2 * hq * g + 2 * 2 * d * hq + 2 * 2 * hq * p + 2 * 2 * d * ff) + 2 * d * vocab
    assert serving.decode_step_flops(shape, g, 1, p) == step


def test_training_t5_stores_activations_for_both_stacks() -> None:
    shape, gpu = load_model("t5-small"), load_gpu("h100-sxm")
    setup = TrainingSetup(gpus=8, tokens=10**9, seq_len=512)
    held = train_report.train(shape, gpu, setup).memory_per_gpu
    # 6 encoder layers of 17,440 bytes per token (s = 512, flash) and 6 decoder layers that also keep their
    # cross-attention's 6,688 (tests/test_activations.py counts both by hand); the decoder's is the largest layer
    encoder, decoder = 17_440 * 512, (17_440 + 6_688) * 512
    assert held.activations_per_layer_bytes == decoder
    assert held.activations_bytes == 6 * encoder + 6 * decoder + held.logits_bytes


def test_a_headless_model_keeps_no_logits() -> None:
    bert = with_fields(load_model("bert-base"), head="none", pooler=False)
    assert training.logits_bytes(bert, 512, 4, 1) == 0
    assert training.logits_bytes(load_model("bert-base"), 512, 4, 1) == 4 * 512 * 4 * 30522


def test_every_row_of_llama_3_8b_has_a_known_kind() -> None:
    llama = load_model("llama-3-8b")
    ((block, count),) = blocks(llama)
    rows = layer_ops(llama, block)
    assert count == 32
    assert [op.name for op in rows] == [
        "attention/q", "attention/k", "attention/v", "attention/scores", "attention/values", "attention/o",
        "cache/attention", "mlp/gate", "mlp/up", "mlp/down", "norm/attention", "norm/mlp",
    ]  # fmt: skip


def test_one_expert_is_its_three_matrices() -> None:
    """Mixtral-8x7B: d 4096, expert width 14336, gated, no biases (Jiang et al. 2024)."""
    assert params.expert_params(load_model("mixtral-8x7b")) == 3 * 4096 * 14336
    assert params.expert_params(load_model("llama-3-8b")) == 0
