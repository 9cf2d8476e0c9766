"""FLOP counts against the nanoGPT sizing notebook and the lesson."""

from __future__ import annotations

from tfcost.core.flops import (
    attention_score_flops_per_token,
    forward_flops,
    forward_flops_breakdown,
    matmul_flops,
    score_entries,
    six_n_flops_per_token,
    training_flops,
)
from tfcost.readers.presets import load_model


def test_matmul_is_two_flops_per_multiply_add():
    assert matmul_flops(2, 3, 4) == 48


def test_forward_matches_nanogpt_notebook(gpt2):
    # transformer_sizing.ipynb at T = 1024 (biases are not matmuls, so the bias=False figures carry over).
    parts = forward_flops_breakdown(gpt2, 1024)
    assert parts["attention/qkv"] == 12 * 3_623_878_656
    assert parts["attention/scores"] == 12 * 1_610_612_736
    assert parts["attention/values"] == 12 * 1_610_612_736
    assert parts["attention/o"] == 12 * 1_207_959_552
    assert parts["mlp"] == 12 * 9_663_676_416
    assert parts["output_head"] == 79_047_426_048
    assert forward_flops(gpt2, 1024) == 291_648_307_200
    assert training_flops(gpt2, 1024) == 874_944_921_600


def test_lesson_per_token_terms(gpt2):
    assert attention_score_flops_per_token(gpt2, 1024) == 56_623_104
    assert round(six_n_flops_per_token(gpt2) / 1e9, 2) == 0.51
    assert six_n_flops_per_token(gpt2) == 6 * (12 * 7_087_872 + 1_536)


def test_causal_counts_the_triangle_with_its_diagonal(gpt2):
    assert score_entries(4, causal=False) == 16
    assert score_entries(4, causal=True) == 10
    full, causal = forward_flops_breakdown(gpt2, 1024), forward_flops_breakdown(gpt2, 1024, causal=True)
    assert causal["attention/scores"] == 12 * 2 * 12 * (1024 * 1025 // 2) * 64
    assert {k: v for k, v in causal.items() if not k.startswith("attention/s") and k != "attention/values"} == {
        k: v for k, v in full.items() if not k.startswith("attention/s") and k != "attention/values"
    }


def test_gqa_and_gated_mlp_flops():
    llama3 = load_model("llama-3-8b")
    parts = forward_flops_breakdown(llama3, 2048)
    assert parts["attention/qkv"] == 32 * 2 * 2048 * 4096 * (4096 + 2 * 1024)
    assert parts["mlp"] == 32 * 3 * 2 * 2048 * 4096 * 14336
    # Scores are paid per query head, not per key-value head.
    assert parts["attention/scores"] == 32 * 2 * 32 * 2048 * 2048 * 128


def test_training_flops_per_token_and_attention_share(gpt2):
    """The lesson's per-token training FLOPs at T = 1,024: 6N = 6 x 85,056,000 and 6*L*T*d = 6*12*1,024*768; the
    attention share is one half at the crossover N / (L*d) = 9,229 1/6 (between T = 9,229 and 9,230)."""
    from tfcost.core.flops import attention_score_flops_per_token, attention_share, training_flops_per_token

    six_n = six_n_flops_per_token(gpt2)
    assert training_flops_per_token(six_n, attention_score_flops_per_token(gpt2, 1024)) == 510_336_000 + 56_623_104
    assert attention_share(six_n, attention_score_flops_per_token(gpt2, 9229)) < 0.5
    assert attention_share(six_n, attention_score_flops_per_token(gpt2, 9230)) > 0.5
    assert attention_share(six_n, six_n) == 0.5
