"""Training activations as a fold over what each op row saves: Korthikanti et al. 2022's GPT layer tensor by
tensor, and hand counts for the layer kinds the paper does not cover (gated MLP with GQA, MoE, a Mamba-2 mixer,
a stack whose layers differ)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfcost.core import activations
from tfcost.core.blocks import Block, blocks
from tfcost.core.layers import MIXERS, mtp_ops, table_of
from tfcost.costs import training
from tfcost.readers.hf_config import read_config
from tfcost.readers.presets import load_gpu, load_model, model_from_mapping, model_preset_paths
from tfcost.reports import train as train_report
from tfcost.schema import ModelShape, TrainingSetup
from tfcost.units import ceil_div

HF_CONFIGS = Path(__file__).parent / "data" / "hf_configs"


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
    """Mixtral-8x7B: its experts' input is kept once (the router's, every expert gathering from it), each of the
    k = 2 experts a token uses keeps three F-wide tensors, and the routing keeps the router's softmax output over
    E = 8 experts and the k routing weights (fp32, MixtralTopKRouter) and the k expert outputs they multiply (d
    each)."""
    mixtral = load_model("mixtral-8x7b")
    h, big_h, k, q, f, experts, used = 4096, 32, 8, 128, 14336, 8, 2
    routing = 4 * experts + 4 * used + 2 * used * h
    expected = 10 * h + 2 * (2 * big_h * q + 2 * k * q) + 2 * 3 * used * f + 4 * big_h + routing
    assert per_token_and_entry(mixtral, flash=True) == {"token": expected, "entry": 0}
    assert expected == 250_024  # the pinned 1,024,098,304 bytes per layer at s = 4096 (233,600 before the routing)


def test_deepseek_v3_mla_and_moe_layers_by_hand() -> None:
    """DeepSeek-V3 (d 7168, 128 heads, q_lora_rank 1536, kv_lora_rank 512, qk 128 + 64, v 128), FlashAttention:
    - residual stream: two norm inputs, the down-projections' input, the router's input, two dropout masks (10d);
    - MLA: Q and K of H x 192, V and the output projection's input of H x 128, an fp32 log-sum-exp per head, and
      each latent twice, its norm's input and the up-projection's input (2 x (1536 + 512)), outside the
      tensor-parallel region (the down-projections are replicated);
    - a dense layer's MLP of 18432: three F-wide tensors;
    - an MoE layer's 8 routed experts of 2048 and one shared of 2048 keep what that MLP keeps (3 x 9 x 2048), and
      the routing keeps the 256 sigmoid scores and the 8 routing weights in fp32 (DeepseekV3TopkRouter) and the 8
      expert outputs they multiply (8 x d)."""
    deepseek = load_model("deepseek-v3")
    h, big_h, experts, used = 7168, 128, 256, 8
    attention = 2 * (2 * big_h * 192 + 2 * big_h * 128) + 4 * big_h
    latents = 2 * 2 * (1536 + 512)
    routing = 4 * experts + 4 * used + 2 * used * h
    kinds = {block.ffn: block for block, _ in blocks(deepseek)}
    # (residual-stream bytes, tensor-parallel bytes) per token; the routing's tensors are d or E wide, not split
    expected = {
        "mlp": (10 * h + latents, attention + 2 * 3 * 18432),
        "moe": (10 * h + latents + routing, attention + 2 * 3 * (8 * 2048 + 2048)),
    }
    for ffn, (stream, split) in expected.items():
        terms = activations.layer_terms(deepseek, kinds[ffn], "none", True, "bf16-mixed")
        assert (terms.stream_per_token, terms.split_per_token) == (stream, split), ffn
    assert sum(expected["mlp"]) == 354_816 and sum(expected["moe"]) == 470_560
    # the pinned per-layer figure is the MoE layer's at s = 4096 (1,419,771,904 before the latents and the routing)
    assert training.activation_bytes_per_layer(deepseek, 4096, 1, flash=True) == 470_560 * 4096 == 1_927_413_760
    # tensor parallel t = 8 without sequence parallelism: the latents and the routing stay whole on every rank
    tp8 = training.activation_bytes_per_layer(deepseek, 4096, 1, tp=8, flash=True)
    stream, split = expected["moe"]
    assert tp8 == 4096 * stream + 4096 * split // 8


def test_gemma_2_post_norms_keep_their_inputs() -> None:
    """Gemma-2-9B (d 3584, 16 heads, 8 KV heads of 256, gated F 14336, four RMSNorms a layer): the two norms after
    the attention and the MLP keep their inputs like the two before them (Gemma2RMSNorm's backward reads x), so the
    residual stream holds 4 norm inputs, the q and up inputs and two dropout masks: 14d bytes per token, 160,832 in
    all with FlashAttention, the same for the sliding-window and the global layers."""
    gemma = load_model("gemma-2-9b")
    h, big_h, k, q, f = 3584, 16, 8, 256, 14336
    stream = 2 * 4 * h + 2 * h + 2 * h + 2 * h
    split = 2 * (big_h * q + k * q) + 2 * k * q + 2 * big_h * q + 2 * 3 * f + 4 * big_h
    kinds = [block for block, _ in blocks(gemma)]
    assert len(kinds) == 2  # sliding window and global
    for block in kinds:
        terms = activations.layer_terms(gemma, block, "none", True, "bf16-mixed")
        assert (terms.stream_per_token, terms.split_per_token) == (stream, split) == (50_176, 110_656)
    # the pinned per-layer figure at s = 4096: 4sbh (58,720,256 bytes) more than before the post-norms counted
    assert training.activation_bytes_per_layer(gemma, 4096, 1, flash=True) == 160_832 * 4096 == 658_767_872
    assert 658_767_872 - 600_047_616 == 4 * 4096 * h


def test_t5_decoder_layer_with_cross_attention_by_hand() -> None:
    """T5-small's decoder layer (d 512, 8 heads of 64, ReLU MLP of 2048, dropout everywhere), bytes per token and
    per score entry, s = T_source: its self-attention and MLP as a GPT layer's, and the cross-attention saving what
    self-attention does: its norm's input, q's input (the normed decoder state), Q and K, V, the output
    projection's input, the dropout mask after it, and per entry the softmax output, its dropout mask and the
    dropout's output (5H). The encoder's output its k and v read is one tensor for all decoder layers, not a row's."""
    t5 = load_model("t5-small")
    d, width, heads, f = 512, 512, 8, 2048
    attention = 2 * d + 2 * 2 * width + 2 * width + 2 * width + d  # q input, Q and K, V, o input, dropout mask
    mlp = 2 * d + 2 * f + 2 * f + d
    norms = 2 * 2 * d
    cross = 2 * d + attention  # its norm's input, then what self-attention keeps
    encoder, decoder = (block for block, _ in blocks(t5))
    unfused = {"token": attention + mlp + norms, "entry": 5 * heads}
    for block, expected in ((encoder, unfused), (decoder, {"token": unfused["token"] + cross, "entry": 10 * heads})):
        terms = activations.layer_terms(t5, block, "none", False, "bf16-mixed")
        assert {"token": terms.stream_per_token + terms.split_per_token,
                "entry": terms.stream_per_entry + terms.split_per_entry} == expected  # fmt: skip
    assert cross == 6_656 and unfused["token"] + cross == 24_064
    # FlashAttention: an fp32 log-sum-exp per query row and head in each attention; the pinned figure at s = 512
    per_token = unfused["token"] + cross + 2 * 4 * heads
    assert training.activation_bytes_per_layer(t5, 512, 1, flash=True) == per_token * 512 == 12_353_536


def test_mamba2_keeps_what_the_fused_kernel_saves() -> None:
    """Mamba-Codestral (one RMSNorm, a Mamba-2 mixer, no FFN): the norm's input and the in-projection's (d each),
    the in-projection's output z, x, B, C, dt (2D + 2GN + H) that mamba_ssm's MambaSplitConv1dScanCombinedFn keeps,
    and the scan output (D), at 2 bytes, and the gated norm's reciprocal RMS per group (G, fp32); no dropout mask (no
    output projection dropout row) and no scores."""
    mamba = load_model("mamba-codestral-7b")
    assert mamba.ssm is not None
    d, inner, groups, state, heads = 4096, 8192, 8, 128, 128
    assert (mamba.ssm.d_inner, mamba.ssm.n_groups, mamba.ssm.d_state, mamba.ssm.n_heads) == (
        inner,
        groups,
        state,
        heads,
    )
    expected = 2 * (d + d + (2 * inner + 2 * groups * state + heads) + inner) + 4 * groups  # the norm's fp32 rstd
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
    lines = {line.quantity: line for line in train_report.train(llama, load_gpu("h100-sxm"), setup, True).explain or []}
    per_token = lines["saved per token, one attention+mlp layer"]
    assert per_token.value == 147_584 and per_token.formula.startswith("attention/q input (read by q, k and v) + ")
    assert "mlp/gate activation input (gate output)" in per_token.formula
    layer = lines["activations, one attention+mlp layer"]
    assert layer.value == 604_504_064 and layer.working == "⌈1·(4,096·40,960) / 1⌉ + ⌈1·(4,096·106,624) / 1⌉"


def test_mtp_module_rows_say_what_they_save() -> None:
    """DeepSeek-V3's MTP module: its three norms keep their inputs (hidden state, embedding, the block's output)
    and its projection the two normed halves (2d), beside what its block, a layer of the stack's last kind (MoE),
    keeps. `train` prices the model without the module, as its weights and FLOPs are (params.mtp)."""
    deepseek = load_model("deepseek-v3")
    d = 7168
    module = [(op.name, saved) for op in mtp_ops(deepseek) for saved in op.saves]
    own = [(row, saved) for row, saved in module if row.startswith("mtp/")]
    assert {(row, saved.what): activations.saved_bytes(saved, "bf16-mixed") for row, saved in own} == {
        ("mtp/norms", "input"): 2 * 3 * d,
        ("mtp/projection", "input: the normed hidden state and embedding"): 2 * 2 * d,
    }
    assert module[len(own) :] == list(activations.saved_tensors(deepseek, blocks(deepseek)[-1][0]))


def test_recurrent_chunk_states_are_kept_once_per_chunk() -> None:
    """Jamba-Mini-1.5's Mamba mixer (D 8192, N 16): mamba_ssm's selective scan returns, and MambaInnerFn keeps, the
    running state at the end of each 2,048-position chunk, D x 2N in fp32: 1 MiB a chunk, ceil(s / 2048) chunks, split
    over t with the channels."""
    jamba = load_model("jamba-mini-1.5")
    mamba = next(block for block, _ in blocks(jamba) if block.mixer == "mamba" and not block.moe)
    terms = activations.layer_terms(jamba, mamba, "none", True, "bf16-mixed")
    chunk_states = 8192 * 2 * 16 * 4
    assert terms.split_per_chunk == ((2048, chunk_states),) and chunk_states == 1_048_576
    stream, split = terms.stream_per_token, terms.split_per_token
    for s, b, t, chunks in ((2048, 2, 1, 1), (2049, 2, 1, 2), (4096, 1, 8, 2)):
        expected = b * s * stream + ceil_div(b * (s * split + chunks * chunk_states), t)
        assert activations.terms_bytes(terms, s, b, t, False) == expected


def test_lightning_attention_keeps_the_state_each_block_reads() -> None:
    """MiniMax-01's lightning attention, a small one (H 4, Q 16, blocks of C = 16): each block's queries multiply
    the H x Q x Q state of the blocks before it (transformers' MiniMaxLightningAttention, at the model's dtype), so
    backward keeps one state per block, ceil(s / C) of them."""
    data = {
        "model_type": "minimax", "vocab_size": 100, "hidden_size": 64, "intermediate_size": 96,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "block_size": 16,
        "num_local_experts": 4, "num_experts_per_tok": 2, "layer_types": ["linear_attention", "full_attention"],
    }  # fmt: skip
    shape = model_from_mapping(read_config(data).mapping, "test", "test")
    lightning = next(block for block, _ in blocks(shape) if block.mixer == "lightning")
    terms = activations.layer_terms(shape, lightning, "none", True, "bf16-mixed")
    assert terms.split_per_chunk == ((16, 2 * 4 * 16 * 16),)
    assert activations.chunk_bytes(terms.split_per_chunk, 17) == 2 * 2 * 4 * 16 * 16  # 17 positions: 2 blocks


DEEPSEEK_V4 = str(HF_CONFIGS / "deepseek-v4-default.json")


def test_deepseek_v4_compressed_layers_with_hyper_connections_by_hand() -> None:
    """DeepSeek-V4's default config (V4-Flash: d 4096, H 64 heads of D 512, one key-value head, q_lora_rank 1024,
    8 output groups of rank 1024, 4 hyper-connection streams with 20 Sinkhorn iterations, CSA m = 4, HCA m = 128,
    MoE of 256 experts, 6 used and 1 shared, of 2048), bytes per token, per compressed entry and per query x
    compressed-entry pair, 16-bit, as transformers' autograd keeps them:
    - attention, whole on every rank: the normed input (d), the query latent twice (2q), the key-value head before
      its norm and after it and RoPE (2D: keys = values, one tensor); split over heads: the per-head query norm's
      input and Q (2HD), the grouped output's input (HD) and the group outputs (g r), an fp32 log-sum-exp per
      head (flash) or 5H per entry and pair (unfused: softmax output, dropout mask, dropped-out probabilities);
    - each hyper-connection (two a layer), fp32: the streams cast (n d), the rstd (1), the normed streams (n d),
      the (2 + n) n logits, two sigmoids and pre + eps (3n), the comb softmax and the 39 Sinkhorn divisions'
      numerators (40 n^2) and denominators (39 n); at 2 bytes the input streams (n d), post and comb (n + n^2)
      and the sublayer's output (d);
    - the compressor, per entry: the fp32 softmax over the window and its 16-bit copy (m D each for HCA, 2 m D
      for CSA's two series), CSA's laid-out series (2 m D), the norm's input (D), the entry the keys continue with
      (D); HCA also keeps its kv projection's output per token (D);
    - the CSA indexer keeps nothing (its only output is integer top-k indices)."""
    shape = load_model(DEEPSEEK_V4)
    d, heads, width, latent, groups, rank, n, e = 4096, 64, 512, 1024, 8, 1024, 4, 2
    attention_stream = e * (d + 2 * latent + 2 * width) + d  # + the dropout mask after the output projection
    attention_split = e * (2 * heads * width + heads * width + groups * rank) + 4 * heads
    mix = 4 * (n * d + 1 + n * d + (2 + n) * n + 3 * n + 40 * n * n + 39 * n)
    streams = e * (n * d + n + n * n + d)
    hyper = 2 * (mix + streams)
    routing = 4 * 256 + 4 * 6 + e * 6 * d
    moe_stream, moe_split = e * d + d + routing, e * 3 * (6 * 2048 + 2048)
    norms = 2 * e * d
    hca_kv = e * width
    kinds = {block.mixer: block for block, _ in blocks(shape)}
    per_entry = {
        "heavily_compressed": 4 * 128 * width + e * 128 * width + e * width + e * width,
        "compressed_sparse": e * 2 * 4 * width + 4 * 2 * 4 * width + e * 2 * 4 * width + e * width + e * width,
    }
    assert per_entry == {"heavily_compressed": 395_264, "compressed_sparse": 34_816}
    for mixer, rate in (("heavily_compressed", 128), ("compressed_sparse", 4)):
        terms = activations.layer_terms(shape, kinds[mixer], "none", True, "bf16-mixed")
        stream = attention_stream + hyper + moe_stream + norms + hca_kv * (mixer == "heavily_compressed")
        assert (terms.stream_per_token, terms.split_per_token) == (stream, attention_split + moe_split), mixer
        assert terms.stream_per_compressed == ((rate, per_entry[mixer]),)
        assert terms.split_per_compressed_entry == () and terms.stream_per_entry == terms.split_per_entry == 0
        unfused = activations.layer_terms(shape, kinds[mixer], "none", False, "bf16-mixed")
        assert unfused.split_per_token == terms.split_per_token - 4 * heads
        assert unfused.split_per_entry == 5 * heads and unfused.split_per_compressed_entry == ((rate, 5 * heads),)
    assert hyper == 350_808  # 78% of the HCA layer's 449,136 residual-stream bytes per token
    # a layer at s = 4,099 (floor(s/m) entries: 32 of HCA, 1,024 of CSA), b = 2, t = 8 with no sequence parallelism:
    # the whole-on-every-rank tensors stay whole, the per-head ones are split
    s, b = 4099, 2
    for mixer, rate in (("heavily_compressed", 128), ("compressed_sparse", 4)):
        terms = activations.layer_terms(shape, kinds[mixer], "none", False, "bf16-mixed")
        stream = b * (s * terms.stream_per_token + s // rate * per_entry[mixer])
        split = b * (s * terms.split_per_token + s * s * 5 * heads + s * (s // rate) * 5 * heads)
        assert activations.layer_activation_bytes(shape, kinds[mixer], s, b, tp=8) == stream + ceil_div(split, 8)
    indexer = [row for row, _ in activations.saved_tensors(shape, kinds["compressed_sparse"]) if "indexer" in row]
    assert indexer == []


def test_zamba2_shared_layer_by_hand() -> None:
    """Zamba2-1.2B (d 2048, 32 heads of 128 over the 2d-wide concatenation, gated MLP of 8192, adapters of rank 128
    on q, k, v and the MLP): a shared-transformer layer keeps what its plain Mamba-2 layer keeps plus, at every use
    (tied or not), the 2d-wide norm's input and q's input (2d each), Q and K, V, the output projection's input,
    the MLP norm's input (the attention output, d), the MLP's input and three F-wide tensors, two dropout masks,
    each adapter's r-wide intermediate (whole on every rank), and the d x d linear's input (d), 16-bit, flash."""
    shape = load_model(str(HF_CONFIGS / "zamba2-1.2b.json"))
    d, heads, q, f, r, e = 2048, 32, 128, 8192, 128, 2
    terms = {
        block.name: activations.layer_terms(shape, block, "none", True, "bf16-mixed") for block, _ in blocks(shape)
    }
    plain = terms["mamba2+none"]
    stream = e * (2 * d + 2 * d + d + d + 4 * r + d) + 2 * d  # norms, q and MLP inputs, adapters, linear; 2 masks
    split = e * (2 * heads * q + heads * q + heads * q + 3 * f) + 4 * heads  # Q, K, V, o input, MLP; log-sum-exp
    for name in ("shared_transformer+mamba2+none", "shared_transformer+mamba2[tied]+none"):
        shared = terms[name]
        assert shared.stream_per_token - plain.stream_per_token == stream == 33_792, name
        assert shared.split_per_token - plain.split_per_token == split == 82_048, name


def fixture_variant(name: str, **changes: object) -> ModelShape:
    """A transformers-config fixture with some keys changed, read as a config.json is."""
    data = {**json.loads((HF_CONFIGS / name).read_text()), **changes}
    return model_from_mapping(read_config(data).mapping, "test", "test")


def mixer_examples() -> dict[str, tuple[ModelShape, Block]]:
    """One layer of every mixer kind the core registers, from the presets, then the transformers-config fixtures,
    then, for the two kinds no fixture's layers have, fixtures with their layer-kind keys set: GLM-5 with layers
    that reuse the previous top-k selection (indexer_types "shared") and DeepSeek-V4 with a sliding layer."""
    shapes = (
        load_model(source) for source in (*sorted(model_preset_paths()), *sorted(map(str, HF_CONFIGS.glob("*.json"))))
    )
    glm_shared = fixture_variant("glm-5.json", indexer_types=["full", "shared"] * 39)  # its 78 layers
    v4_sliding = fixture_variant(  # its 43 layers
        "deepseek-v4-default.json", layer_types=["sliding_attention"] * 2 + ["compressed_sparse_attention"] * 41
    )
    found: dict[str, tuple[ModelShape, Block]] = {}
    for shape in (*shapes, glm_shared, v4_sliding):
        for block, _ in blocks(shape):
            found.setdefault(block.mixer, (shape, block))
    return found


def test_every_registered_mixer_kind_saves_something() -> None:
    """Every mixer kind in tfcost.core.layers.MIXERS (not only the presets' kinds) is found in a preset or a fixture,
    and
    its rows keep tensors for the backward pass: none is priced at a silent zero ('none' alone keeps nothing)."""
    examples = mixer_examples()
    assert set(examples) == set(MIXERS)
    for kind, (shape, block) in examples.items():
        rows = table_of(MIXERS, "mixer", kind)(shape, block)
        saved = [saved for op in rows for saved in op.saves]
        assert (kind == "none") == (not saved), kind
        if kind != "none":
            assert sum(activations.saved_bytes(tensor, "bf16-mixed") for tensor in saved) > 0, kind


def test_torchtitan_op_level_policy_by_hand() -> None:
    """torchtitan's op-level selective checkpointing (torchtitan/parallelisms/parallelize_llama.py, 9dec370): the
    block's input, then "Saves output of all compute ops, except every second mm". A Llama 3.1 8B block calls
    aten.mm seven times, wq wk wv wo w1 w3 w2 (d 4096, K V 1024, F 14336), and keeps the 1st, 3rd, 5th and 7th
    outputs (q 4096, v 1024, w1 14336, w2 4096) with SDPA's output (4096) and fp32 log-sum-exp (32 heads)."""
    llama = load_model("llama-3.1-8b")
    block = only_kind(llama)
    terms = activations.layer_terms(llama, block, "selective-op", True, "bf16-mixed")
    assert terms.stream_per_token == 2 * (4096 + 4096)  # the block's input, w2's output (row-parallel: d wide)
    assert terms.split_per_token == 2 * (4096 + 1024 + 14336 + 4096) + 4 * 32
    assert terms.stream_per_entry == terms.split_per_entry == 0  # SDPA's scores are never kept
    # torchao's FP8 linears call torch.mm on Float8Tensor arguments (float8_linear.py), _scaled_mm inside their
    # aten.mm (float8_ops.py): the policy sees aten.mm and keeps the same four bf16 outputs
    fp8 = activations.layer_terms(llama, block, "selective-op", True, "fp8")
    assert (fp8.stream_per_token, fp8.split_per_token) == (terms.stream_per_token, terms.split_per_token)
    # under tensor parallelism the column-parallel outputs and SDPA's heads split over t, the d-wide ones do not
    one_layer = activations.layer_activation_bytes(llama, block, 8192, 2, tp=2, recompute="selective-op", flash=True)
    assert one_layer == 2 * 8192 * 2 * (4096 + 4096) + 2 * 8192 * (2 * (4096 + 1024 + 14336 + 4096) + 4 * 32) // 2
    assert [name for name, _ in activations.held_tensors(llama, block, "selective-op", True)] == [
        "layer input", "attention/q", "attention/v", "mlp/gate", "mlp/down", "attention/scores", "attention/values",
    ]  # fmt: skip


def test_op_level_policy_keeps_less_than_korthikanti_selective_and_more_than_full() -> None:
    for name in ("llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "gpt2-small"):
        shape = load_model(name)
        for block, _ in blocks(shape):
            bytes_under = {
                recompute: activations.layer_activation_bytes(shape, block, 4096, 1, recompute=recompute, flash=True)
                for recompute in ("selective", "selective-op", "full")
            }
            assert bytes_under["full"] < bytes_under["selective-op"] < bytes_under["selective"], (name, block)
