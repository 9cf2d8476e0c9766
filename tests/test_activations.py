"""Training activations as a fold over what each op row saves: Korthikanti et al. 2022's GPT layer tensor by
tensor, and hand counts for the layer kinds the paper does not cover (gated MLP with GQA, MoE, a Mamba-2 mixer,
a stack whose layers differ)."""

from __future__ import annotations

import pytest

from tfcost import activations, report, training
from tfcost.blocks import Block, blocks
from tfcost.layers import MIXERS, table_of
from tfcost.presets import load_gpu, load_model, model_preset_paths
from tfcost.schema import ModelShape, TrainingSetup


def only_kind(shape: ModelShape) -> Block:
    (block, _), *_ = blocks(shape)
    return block


def per_token_and_entry(shape: ModelShape, dropout: bool = True, flash: bool = False) -> dict[str, int]:
    """Bytes per token ("token") and per score entry ("entry") one layer of a uniform model saves, in 16-bit."""
    terms = activations.layer_terms(shape, only_kind(shape), "none", flash, "bf16-mixed", dropout)
    return {
        "token": terms.stream_per_token + terms.split_per_token,
        "entry": terms.stream_per_entry + terms.split_per_entry,
    }


def test_gpt3_layer_saves_korthikanti_section_4_1_tensor_by_tensor() -> None:
    """§4.1's list for one GPT layer (h = 12288, a = 96, 2 bytes, masks 1 byte), as bytes per token (sbh terms
    divided by sb) and per score entry (as^2b terms divided by s^2 b): the rows save exactly these."""
    gpt3 = load_model("gpt3-175b")
    h, a = 12288, 96
    kept = activations.held_tensors(gpt3, only_kind(gpt3), "none", flash=False)
    saved = {(row, tensor.what): activations.saved_bytes(tensor, "bf16-mixed") for row, tensor in kept}
    assert saved == {
        ("attention/q", "input (read by q, k and v)"): 2 * h,  # QKV input 2sbh
        ("attention/scores", "Q and K"): 4 * h,  # QK^T: 4sbh
        ("attention/scores", "softmax output"): 2 * a,  # 2as^2b
        ("attention/scores", "attention dropout mask"): a,  # as^2b
        ("attention/values", "V"): 2 * h,  # attention over values: V 2sbh
        ("attention/values", "dropped-out probabilities"): 2 * a,  # and the dropout output 2as^2b
        ("attention/o", "input"): 2 * h,  # output projection input 2sbh
        ("attention/o", "dropout mask"): h,  # its dropout mask sbh
        ("mlp/up", "input"): 2 * h,  # first linear input 2sbh
        ("mlp/up", "activation input"): 8 * h,  # GeLU input 8sbh
        ("mlp/down", "input"): 8 * h,  # second linear input 8sbh
        ("mlp/down", "dropout mask"): h,  # dropout mask sbh
        ("norm/attention", "input"): 2 * h,  # each layer norm's input 2sbh
        ("norm/mlp", "input"): 2 * h,
    }
    per_token = {part: 0 for part in ("attention", "mlp", "norm")}
    for row, tensor in kept:
        if tensor.per == "token":
            per_token[row.split("/")[0]] += activations.saved_bytes(tensor, "bf16-mixed") // h
    assert per_token == {"attention": 11, "mlp": 19, "norm": 4}  # 11sbh + 19sbh + 4sbh = 34sbh
    assert per_token_and_entry(gpt3) == {"token": 34 * h, "entry": 5 * a}


def test_without_dropout_the_masks_and_the_dropout_output_go() -> None:
    """No dropout: no masks (2sbh, as^2b) and AV reads the softmax output the scores row keeps (no 2as^2b copy)."""
    gpt3 = load_model("gpt3-175b")
    h, a = 12288, 96
    assert per_token_and_entry(gpt3, dropout=False) == {"token": 32 * h, "entry": 2 * a}


def test_gated_mlp_and_gqa_by_hand() -> None:
    """Llama-3-8B (h 4096, H 32, K 8, Q 128, F 14336, gated SwiGLU), s = 4096, b = 1, by hand: 10sbh of the residual
    stream (two norm inputs, the attention and MLP inputs, two dropout masks), Q and the attention output H*Q wide,
    K and V K*Q wide, three F-wide tensors of the gated MLP (gate output, up output, down input), at 2 bytes."""
    llama = load_model("llama-3-8b")
    s, b, h, big_h, k, q, f = 4096, 1, 4096, 32, 8, 128, 14336
    per_token = 10 * h + 2 * (2 * big_h * q + 2 * k * q) + 2 * 3 * f
    unfused = s * b * per_token + 5 * big_h * s * s * b  # the scores, softmax and dropout as Korthikanti counts them
    fused = s * b * per_token + 4 * big_h * s * b  # FlashAttention: an fp32 log-sum-exp per query row and head
    assert training.activation_bytes_per_layer(llama, s, b) == unfused
    assert training.activation_bytes_per_layer(llama, s, b, flash=True) == fused == 604_504_064
    # tensor parallel t = 8 with sequence parallelism divides all of it by t
    assert training.activation_bytes_per_layer(llama, s, b, tp=8, sequence_parallel=True) == unfused // 8


def test_qk_norm_keeps_the_query_and_key_inputs() -> None:
    """Qwen3-8B's head_dim-wide norms on queries and keys each keep their input: (H + K)*Q more per token than the
    same layer without them."""
    qwen3 = load_model("qwen3-8b")
    without = qwen3.model_copy(update={"qk_norm": False})
    extra = per_token_and_entry(qwen3)["token"] - per_token_and_entry(without)["token"]
    assert extra == 2 * (qwen3.n_heads + qwen3.n_kv_heads) * qwen3.head_dim


def test_moe_layers_by_hand() -> None:
    """Mixtral-8x7B: its experts' input is kept once (the router's, every expert gathering from it) and each of
    the k = 2 experts a token uses keeps three F-wide tensors. DeepSeek-V3: 8 routed experts of 2048 and one shared
    of 2048 keep what its dense layers' MLP of 18432 keeps (3 x 18432 = 3 x (8 + 1) x 2048), beside MLA's Q and K of
    H x 192, V and the attention output of H x 128."""
    mixtral = load_model("mixtral-8x7b")
    h, big_h, k, q, f = 4096, 32, 8, 128, 14336
    expected = 10 * h + 2 * (2 * big_h * q + 2 * k * q) + 2 * 3 * 2 * f + 4 * big_h
    assert per_token_and_entry(mixtral, flash=True) == {"token": expected, "entry": 0}
    assert expected == 233_600  # the pinned 956,825,600 bytes per layer at s = 4096

    deepseek = load_model("deepseek-v3")
    h, big_h = 7168, 128
    mla = 2 * (2 * big_h * 192 + 2 * big_h * 128) + 4 * big_h
    kinds = {block.ffn: block for block, _ in blocks(deepseek)}
    for ffn, width in (("mlp", 18432), ("moe", 8 * 2048 + 2048)):
        terms = activations.layer_terms(deepseek, kinds[ffn], "none", True, "bf16-mixed")
        assert terms.stream_per_token + terms.split_per_token == 10 * h + mla + 2 * 3 * width == 346_624


def test_mamba2_keeps_what_the_fused_kernel_saves() -> None:
    """Mamba-Codestral (one RMSNorm, a Mamba-2 mixer, no FFN): the norm's input and the in-projection's (d each),
    the in-projection's output z, x, B, C, dt (2D + 2GN + H) that mamba_ssm's MambaSplitConv1dScanCombinedFn keeps,
    and the scan output (D), at 2 bytes; no dropout mask (no output projection dropout row) and no scores."""
    mamba = load_model("mamba-codestral-7b")
    assert mamba.ssm is not None
    d, inner, groups, state, heads = 4096, 8192, 8, 128, 128
    assert (mamba.ssm.d_inner, mamba.ssm.n_groups, mamba.ssm.d_state, mamba.ssm.n_heads) == (
        inner,
        groups,
        state,
        heads,
    )
    expected = 2 * (d + d + (2 * inner + 2 * groups * state + heads) + inner)
    assert per_token_and_entry(mamba) == {"token": expected, "entry": 0}


def test_a_stack_of_different_layers_sums_its_kinds() -> None:
    """Jamba-Mini-1.5 (Mamba + MLP, Mamba + MoE and attention + MLP layers): with one pipeline stage each layer
    counts its own kind's bytes; `activations_per_layer` reports the largest kind."""
    jamba = load_model("jamba-mini-1.5")
    setup = TrainingSetup.model_validate({"gpus": 8, "tokens": 10**9, "seq_len": 4096})
    kinds = training.activation_bytes_by_layer_kind_of(jamba, setup)
    assert len({per_layer for _, _, per_layer in kinds}) == 3
    layers = sum(count * per_layer for _, count, per_layer in kinds)
    logits = training.last_stage_logits_bytes(jamba, setup)
    assert training.activation_bytes_per_gpu(jamba, setup) == layers + logits
    assert training.activation_bytes_per_layer_of(jamba, setup) == max(per_layer for _, _, per_layer in kinds)
    assert sum(count for _, count, _ in kinds) == jamba.n_layers


@pytest.mark.parametrize("name", sorted(model_preset_paths()))
def test_every_mixer_of_every_preset_saves_something(name: str) -> None:
    """No layer kind is priced at a silent zero: every mixer's rows (but a layer without one) keep tensors."""
    shape = load_model(name)
    for block, _ in blocks(shape):
        rows = table_of(MIXERS, "mixer", block.mixer)(shape, block)
        assert (block.mixer == "none") == (not any(op.saves for op in rows)), block.name
        assert activations.layer_activation_bytes(shape, block, 128, 1) > 0


def test_explain_lists_each_row_that_saves() -> None:
    """`train --explain` writes a layer's activations from its rows: Llama-3-8B's 147,584 bytes per token as the
    sum of what each row keeps, then the layer at s = 4096 (the pinned 604,504,064 bytes)."""
    llama = load_model("llama-3-8b")
    setup = TrainingSetup.model_validate({"gpus": 64, "tokens": 10**12, "seq_len": 4096})
    lines = {line.quantity: line for line in report.train(llama, load_gpu("h100-sxm"), setup, True).explain or []}
    per_token = lines["saved per token, one attention+mlp layer"]
    assert per_token.value == 147_584 and per_token.formula.startswith("attention/q input (read by q, k and v) + ")
    assert "mlp/gate activation input (gate output)" in per_token.formula
    layer = lines["activations, one attention+mlp layer"]
    assert layer.value == 604_504_064 and layer.working == "⌈1·(4,096·40,960) / 1⌉ + ⌈1·(4,096·106,624) / 1⌉"
