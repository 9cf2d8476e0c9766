"""MoE, MLA, sliding windows, parallel blocks, encoders and encoder-decoders: the core on the shipped presets,
against published figures and hand-derived counts (tests/test_truth.py checks the same against transformers)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfcost.core.flops import (
    attention_score_flops_per_token,
    forward_flops,
    forward_flops_breakdown,
    score_entries,
    six_n_flops_per_token,
)
from tfcost.core.memory import (
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    score_matrix_bytes,
    score_matrix_bytes_per_layer,
)
from tfcost.core.params import (
    active_non_embedding_params,
    active_params,
    layer_params,
    parameter_breakdown,
    params_per_layer,
    total_params,
)
from tfcost.readers.presets import load_model


def test_mixtral_total_and_active():
    mixtral = load_model("mixtral-8x7b")
    assert total_params(mixtral) == 46_702_792_704
    # Per token 2 of 8 experts: 32 layers * 6 idle experts * 3 * 4096 * 14336 parameters sit out.
    assert total_params(mixtral) - active_params(mixtral) == 32 * 6 * 3 * 4096 * 14336
    assert active_params(mixtral) == 12_879_925_248  # "12.9B active parameters" (Mistral AI)
    assert six_n_flops_per_token(mixtral) == 6 * active_non_embedding_params(mixtral)


def test_mixtral_forward_runs_two_experts_per_token():
    parts = forward_flops_breakdown(load_model("mixtral-8x7b"), 1000)
    assert parts["moe/experts"] == 32 * 2 * 3 * 2 * 1000 * 4096 * 14336
    assert parts["moe/router"] == 32 * 2 * 1000 * 4096 * 8
    assert "mlp" not in parts


def test_deepseek_v3_dense_then_moe_blocks():
    v3 = load_model("deepseek-v3")
    assert total_params(v3) == 671_026_404_352
    # 58 MoE blocks, each with 248 of its 256 routed experts idle for a given token.
    assert total_params(v3) - active_params(v3) == 58 * 248 * 3 * 7168 * 2048
    assert 37e9 < active_params(v3) < 38e9  # "37B activated for each token" (DeepSeek-V3 abstract)
    # per_layer describes the most common block: the 58 MoE blocks, not the 3 dense ones.
    assert params_per_layer(v3) == 11_507_286_016
    assert layer_params(v3)["moe/shared"] == 3 * 7168 * 2048
    parts = parameter_breakdown(v3)
    assert parts["layers/mlp/up"] == 3 * 7168 * 18432
    assert parts["layers/moe/experts"] == 58 * 256 * 3 * 7168 * 2048


def test_mla_caches_latent_and_rotary_key():
    v3 = load_model("deepseek-v3")
    assert kv_cache_bytes_per_token(v3, "bf16") == 70_272  # (512 + 64) * 61 layers * 2 bytes
    # DeepSeek-V2 (60 layers, same d_c = 512, d_h^R = 64): 34,560 elements per token, Table 9's 34.6K.
    v2 = v3.model_copy(update={"n_layers": 60})
    assert kv_cache_bytes_per_token(v2, "bf16") == 69_120


def test_mla_projection_flops():
    v3 = load_model("deepseek-v3")
    t = 10
    parts = forward_flops_breakdown(v3, t)
    q = 2 * t * 7168 * 1536 + 2 * t * 1536 * 128 * 192
    kv = 2 * t * 7168 * (512 + 64) + 2 * t * 512 * 128 * (128 + 128)
    assert parts["attention/qkv"] == 61 * (q + kv)
    assert parts["attention/scores"] == 61 * 2 * 128 * t * t * 192
    assert parts["attention/values"] == 61 * 2 * 128 * t * t * 128
    assert parts["attention/o"] == 61 * 2 * t * 128 * 128 * 7168


@given(st.integers(1, 300), st.integers(1, 300))
def test_windowed_causal_entries_count_the_mask(tokens, window):
    kept = sum(1 for q in range(tokens) for k in range(tokens) if q - window < k <= q)
    assert score_entries(tokens, causal=True, window=window) == kept
    assert score_entries(tokens, causal=False, window=window) == tokens * tokens


def test_sliding_window_caps_the_kv_cache():
    mistral = load_model("mistral-7b")
    per_token = kv_cache_bytes_per_token(mistral, "bf16")
    assert kv_cache_bytes(mistral, 4096, 1, "bf16") == 4096 * per_token
    assert kv_cache_bytes(mistral, 32768, 2, "bf16") == 2 * 4096 * per_token  # the 8x of Mistral 7B §2
    gemma2 = load_model("gemma-2-9b")
    per_layer_token = 2 * 8 * 256 * 2
    assert kv_cache_bytes(gemma2, 8192, 1, "bf16") == per_layer_token * (21 * 4096 + 21 * 8192)


def test_windows_cut_only_the_masked_count():
    mistral = load_model("mistral-7b")
    unwindowed = mistral.model_copy(update={"sliding_window": None})
    assert forward_flops(mistral, 8192) == forward_flops(unwindowed, 8192)  # a dense kernel computes T x T
    entries = 4096 * 4097 // 2 + 4096 * 4096
    assert forward_flops_breakdown(mistral, 8192, causal=True)["attention/scores"] == 32 * 2 * 32 * entries * 128
    assert attention_score_flops_per_token(mistral, 8192) == 6 * 32 * 4096 * 4096


def test_gemma2_has_four_norms_per_block():
    parts = layer_params(load_model("gemma-2-9b"))
    assert sum(v for k, v in parts.items() if k.startswith("norm/")) == 4 * 3584


def test_falcon_parallel_block_with_one_norm_and_one_kv_head():
    falcon = load_model("falcon-7b")
    parts = layer_params(falcon)
    assert parts["norm/input"] == 2 * 4544 and "norm/mlp" not in parts
    assert parts["attention/k"] == parts["attention/v"] == 4544 * 64
    assert kv_cache_bytes_per_token(falcon, "bf16") == 32 * 2 * 64 * 2


def test_qk_norm_adds_two_head_wide_norms():
    shape = load_model("llama-3-8b")
    normed = shape.model_copy(update={"qk_norm": True})
    assert total_params(normed) - total_params(shape) == 32 * 2 * 128


def test_bert_embeddings_heads_and_no_cache():
    bert = load_model("bert-base")
    parts = parameter_breakdown(bert)
    assert parts["embedding/token_types"] == 2 * 768
    assert parts["embedding_norm"] == 2 * 768
    assert parts["mlm_transform"] == 768 * 768 + 768 + 2 * 768
    assert parts["output_bias"] == 30522 and parts["output_head"] == 0  # tied to the token embedding
    assert parts["final_norm"] == 0
    assert total_params(bert) == 109_514_298
    assert kv_cache_bytes(bert, 512, 8, "bf16") == 0
    # Bidirectional: the causal option has no mask to count.
    assert forward_flops(bert, 128, causal=True) == forward_flops(bert, 128)
    base = bert.model_copy(update={"head": "none", "pooler": True})
    assert total_params(base) == 109_482_240  # transformers' BertModel
    assert forward_flops_breakdown(base, 128)["pooler"] == 2 * 768 * 768  # the first token only


def test_t5_encoder_decoder():
    t5 = load_model("t5-small")
    parts = parameter_breakdown(t5)
    assert parts["embedding/positions"] == 2 * 32 * 8  # one relative-bias table per stack
    assert parts["final_norm"] == 2 * 512
    assert parts["decoder/cross_attention/q"] == 6 * 512 * 512
    assert parts["decoder/norm/cross_attention"] == 6 * 512
    assert params_per_layer(t5) == 4 * 512 * 512 * 2 + 2 * 512 * 2048 + 3 * 512  # a decoder block
    # Self keys/values of the decoder's tokens and cross keys/values of the encoder's, 6 layers each.
    assert kv_cache_bytes_per_token(t5, "fp32") == 2 * 6 * 2 * 512 * 4
    assert score_matrix_bytes(t5, 64, 1, "bf16") == 18 * score_matrix_bytes_per_layer(t5, 64, 1, "bf16")
    flops = forward_flops_breakdown(t5, 128)
    assert flops["decoder/cross_attention/scores"] == 6 * 2 * 8 * 128 * 128 * 64
    causal = forward_flops_breakdown(t5, 128, causal=True)
    # Only the decoder's self-attention is masked.
    assert causal["encoder/attention/scores"] == flops["encoder/attention/scores"]
    assert causal["decoder/cross_attention/scores"] == flops["decoder/cross_attention/scores"]
    assert causal["decoder/attention/scores"] == 6 * 2 * 8 * (128 * 129 // 2) * 64


@pytest.mark.parametrize(
    ("update", "message"),
    [
        ({"moe": {"n_experts": 4, "experts_per_token": 5, "expert_d_ff": 8}}, "cannot exceed moe.n_experts"),
        ({"moe": {"n_experts": 4, "experts_per_token": 2, "expert_d_ff": 8, "dense_layers": [40]}}, "outside 0..31"),
        ({"moe": {"n_experts": 4, "experts_per_token": 2, "expert_d_ff": 8, "shared_expert_gate": True}}, "n_shared"),
        ({"sliding_layers": [0, 2]}, "sliding_layers needs sliding_window"),
        ({"sliding_window": 16, "sliding_layers": [1, 1]}, "lists a layer twice"),
        ({"n_decoder_layers": 4}, "n_decoder_layers is required for, and only for"),
        ({"position": "relative"}, "relative_attention_buckets is required"),
        ({"position": "learned", "rotary_fraction": 0.5}, "rotary_fraction"),
        ({"architecture": "encoder", "sliding_window": 8}, "sliding_window: only supported"),
        ({"rotary_fraction": 0}, "rotary_fraction"),
        ({"block_norms": 0}, "block_norms"),
        ({"head": "classifier"}, "head"),
        (
            {"mla": {"kv_lora_rank": 8, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "v_head_dim": 8}},
            "n_kv_heads (8) must equal n_heads",
        ),
    ],
)
def test_impossible_shapes_are_refused_naming_the_field(update, message):
    from pydantic import ValidationError

    from tfcost.schema import ModelShape

    data = load_model("llama-3-8b").model_dump(exclude={"head_dim"}) | update
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ModelShape.model_validate(data)


def test_serving_keeps_mla_latent_whole_per_gpu():
    from tfcost.costs.serving import kv_cache_bytes_per_gpu

    v3, llama = load_model("deepseek-v3"), load_model("llama-3-8b")
    assert kv_cache_bytes_per_gpu(v3, 1000, 2, "bf16", 8) == kv_cache_bytes(v3, 1000, 2, "bf16")
    assert kv_cache_bytes_per_gpu(llama, 1000, 2, "bf16", 8) == kv_cache_bytes(llama, 1000, 2, "bf16") // 8


def test_training_prices_moe_by_active_parameters_and_every_attention():
    from tfcost.core.flops import six_nd_flops
    from tfcost.core.params import embedding_params
    from tfcost.costs.training import recompute_flops

    mixtral = load_model("mixtral-8x7b")
    assert six_nd_flops(mixtral, 10**9) == 6 * (active_params(mixtral) - embedding_params(mixtral)) * 10**9
    t5 = load_model("t5-small")
    parts = forward_flops_breakdown(t5, 512)
    attention = sum(v for k, v in parts.items() if k.endswith(("attention/scores", "attention/values")))
    assert attention == 3 * 6 * 2 * 2 * 8 * 512 * 512 * 64  # encoder self, decoder self and cross, 6 layers each
    assert recompute_flops(t5, 512, 5120, "selective") == 10 * attention
