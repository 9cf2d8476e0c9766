"""Families people still price every day that had no reader (issue 38): GPT-Neo and StarCoder (gpt_bigcode), as
GPT-2's reader with their differences, and the Llama-like ones as `Flags` rows (tfcost.readers.families.flags):
Cohere's Command R, Helium, GLM, StarCoder2, EXAONE 3, InternLM3, StableLM and Persimmon. Each is exact against
transformers 5.24 on the meta device in both forms a config.json holds it (tests/test_truth_classic.py); what each
flag means is read off the model's modeling file in transformers 5.24, quoted beside its row.
"""

from __future__ import annotations

from typing import Any

from tfcost.errors import TfcostError
from tfcost.readers.families.base import (
    CROSS_ATTENTION,
    GPT2_IGNORED,
    LLAMA_IGNORED,
    ROTARY_IGNORED,
    Family,
    Fields,
    Refusal,
    causal_lm_head,
    read_gpt2,
    sizes,
)
from tfcost.readers.families.flags import Flags, flags_family
from tfcost.readers.families.ssm import FAMILIES as SSM_FAMILIES


def read_gpt_bigcode(fields: Fields) -> dict[str, Any]:
    """StarCoder, SantaCoder: GPT-2's block with multi-query attention. GPTBigCodeAttention: "self.kv_heads = 1 if
    self.multi_query else self.num_heads"; c_attn is Linear(d, d + 2 * kv_heads * head_dim) with a bias."""
    shape = read_gpt2(fields)
    kv_heads = 1 if fields.bool("multi_query", True) else shape["n_heads"]
    # transformers 5 writes the derived count; any other value is not the model it builds.
    fields.require("num_key_value_heads", kv_heads, fields.int("num_key_value_heads", kv_heads), "1 with multi_query")
    return {**shape, "n_kv_heads": kv_heads}


def read_gpt_neo(fields: Fields) -> dict[str, Any]:
    """GPT-Neo: GPT-2's block under other names, q/k/v without biases (GPTNeoSelfAttention: "nn.Linear(self.embed_dim,
    self.embed_dim, bias=False)" for k, v and q; out_proj with one), and a local layer's window of window_size
    positions ("bias = torch.bitwise_xor(bias, torch.tril(bias, -config.window_size))": i - W < j <= i)."""
    causal_lm_head(fields)
    width, layers = fields.int("hidden_size"), fields.int("num_layers")
    kinds = fields.list_of("attention_layers", str, None)
    if kinds is None:  # GPTNeoConfig expands attention_types, [[["global", "local"], num_layers // 2]] by default
        kinds = expand_attention_types(fields.raw("attention_types", [[["global", "local"], layers // 2]]))
    fields.read.add("attention_types")
    if len(kinds) != layers or any(kind not in ("global", "local") for kind in kinds):
        raise TfcostError(f"gpt_neo config: 'attention_layers' should be {layers} of 'global'/'local', not {kinds}")
    local = [index for index, kind in enumerate(kinds) if kind == "local"]
    window = fields.int("window_size", 256)
    return {
        "vocab_size": fields.int("vocab_size"),
        "d_model": width,
        "n_layers": layers,
        "n_heads": fields.int("num_heads"),
        "d_ff": fields.nullable_int("intermediate_size", None) or 4 * width,  # GPTNeoMLP: None means 4 * hidden
        "mlp": "plain",
        "norm": "layernorm",
        "bias": {"qkv": False, "attn_out": True, "mlp": True},
        "tied_embeddings": fields.bool("tie_word_embeddings", True),
        "position": "learned",
        "max_seq_len": fields.int("max_position_embeddings", 2048),
        **({"sliding_window": window} if local else {}),
        **({"sliding_layers": local} if local and len(local) != layers else {}),
    }


def expand_attention_types(types: Any) -> list[str]:
    """GPTNeoConfig.expand_attention_types_params: each [kinds, repeat] item is its kinds, repeat times over."""
    if not isinstance(types, list):
        raise TfcostError(f"gpt_neo config: 'attention_types' should be a list of [kinds, repeat], not {types!r}")
    kinds: list[str] = []
    for item in types:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], list) and isinstance(item[1], int)):
            raise TfcostError(f"gpt_neo config: 'attention_types' item {item!r} is not [kinds, repeat]")
        kinds += [str(kind) for kind in item[0]] * item[1]
    return kinds


def read_gptj(fields: Fields) -> dict[str, Any]:
    """GPT-J and CodeGen: one LayerNorm before a parallel block (GPTJBlock: "feed_forward_hidden_states =
    self.mlp(hidden_states)" beside the attention, from ln_1 alone), q/k/v and out_proj without biases, fc_in and
    fc_out with them, rotary over rotary_dim of each head, and "self.lm_head = nn.Linear(config.n_embd,
    config.vocab_size)": a head with V biases. CodeGen's qkv_proj is the same three matrices fused."""
    causal_lm_head(fields)
    width, heads = fields.int("n_embd"), fields.int("n_head")
    head_dim = width // heads
    rotary = fields.nullable_int("rotary_dim", None) or head_dim  # None: every channel rotates
    fields.read.add("n_ctx")  # CodeGenConfig's, beside n_positions; the position tables are rotary, it builds none
    shape = {
        "vocab_size": fields.int("vocab_size"),
        "d_model": width,
        "n_layers": fields.int("n_layer"),
        "n_heads": heads,
        "d_ff": fields.nullable_int("n_inner", None) or 4 * width,  # GPTJMLP: n_inner, or 4 * n_embd when null
        "mlp": "plain",
        "norm": "layernorm",
        "bias": {"qkv": False, "attn_out": False, "mlp": True},
        "tied_embeddings": fields.bool("tie_word_embeddings", False),
        "position": "rotary",
        "max_seq_len": fields.int("n_positions"),
        "block_norms": 1,
        "parallel_block": True,
        "head_bias": True,
    }
    return {**shape, **({"rotary_fraction": rotary / head_dim} if rotary != head_dim else {})}


def read_phi(fields: Fields) -> dict[str, Any]:
    """Phi-1, 1.5 and 2: one input_layernorm before a parallel block, q/k/v and dense with biases, fc1 and fc2 with
    them, partial rotary, qk_layernorm a LayerNorm(head_dim) shared by the heads, and PhiForCausalLM's "self.lm_head
    = nn.Linear(config.hidden_size, config.vocab_size, bias=True)"."""
    flags = Flags(
        norm="layernorm",
        mlp="plain",
        qkv_bias=True,
        out_bias=True,
        mlp_bias=True,
        block_norms=1,
        parallel_block=True,
        qk_norm="head",
        qk_norm_switch=("qk_layernorm", False),
    )
    return {**flags_family(flags)(fields), "head_bias": True}


def read_opt(fields: Fields) -> dict[str, Any]:
    """OPT: GPT-2's block under other names (fc1/fc2 of ffn_dim, biases "bias=config.enable_bias"), LayerNorms
    "elementwise_affine=config.layer_norm_elementwise_affine", and a learned position table two rows longer than
    the context (OPTLearnedPositionalEmbedding: "self.offset = 2 ... super().__init__(num_embeddings + self.offset,
    embedding_dim)"). The final LayerNorm exists "if config.do_layer_norm_before and not
    config._remove_final_layer_norm". OPT-350m's project_in/project_out (word_embed_proj_dim other than
    hidden_size) are refused: no shape field says them."""
    causal_lm_head(fields)
    width = fields.int("hidden_size")
    fields.require("word_embed_proj_dim", width, fields.int("word_embed_proj_dim", width), "OPT-350m's projections")
    bias = fields.bool("enable_bias", True)
    final = fields.bool("do_layer_norm_before", True) and not fields.bool("_remove_final_layer_norm", False)
    return {
        "vocab_size": fields.int("vocab_size"),
        "d_model": width,
        "n_layers": fields.int("num_hidden_layers"),
        "n_heads": fields.int("num_attention_heads"),
        "d_ff": fields.int("ffn_dim"),
        "mlp": "plain",
        "norm": "layernorm" if fields.bool("layer_norm_elementwise_affine", True) else "layernorm-noparams",
        "bias": {"qkv": bias, "attn_out": bias, "mlp": bias},
        "tied_embeddings": fields.bool("tie_word_embeddings", True),
        "position": "learned",
        "max_seq_len": fields.int("max_position_embeddings"),
        "position_offset": 2,
        "final_norm": final,
    }


def read_minicpm3(fields: Fields) -> dict[str, Any]:
    """MiniCPM3: DeepSeek-V2's multi-head latent attention (q_a_proj, q_a_layernorm, q_b_proj, kv_a_proj_with_mqa,
    kv_a_layernorm, kv_b_proj, o_proj: MiniCPM3Attention) over a dense SwiGLU MLP in every layer, RMSNorms, a tied
    head. Its scale_emb, scale_depth and dim_model_base scale the embeddings, the residual branches and the logits
    by constants: no parameter and no matmul."""
    causal_lm_head(fields)
    fields.read.update({"num_key_value_heads", "head_dim"})  # MLA rebuilds keys and values for every query head
    shape = sizes(fields)
    nope, rope = fields.int("qk_nope_head_dim"), fields.int("qk_rope_head_dim")
    fields.require(
        "qk_head_dim", nope + rope, fields.int("qk_head_dim", nope + rope), "qk_nope_head_dim + qk_rope_head_dim"
    )
    attention_bias = fields.bool("attention_bias", False)
    return {
        **shape,
        "n_kv_heads": shape["n_heads"],
        "head_dim": nope + rope,
        "d_ff": fields.int("intermediate_size"),
        "mlp": "gated",
        "norm": "rmsnorm",
        "bias": {"qkv": attention_bias, "attn_out": attention_bias, "mlp": fields.bool("mlp_bias", False)},
        "tied_embeddings": fields.bool("tie_word_embeddings", True),
        "position": "rotary",
        "max_seq_len": fields.int("max_position_embeddings"),
        "mla": {
            "q_lora_rank": fields.nullable_int("q_lora_rank", None),
            "kv_lora_rank": fields.int("kv_lora_rank"),
            "qk_nope_head_dim": nope,
            "qk_rope_head_dim": rope,
            "v_head_dim": fields.int("v_head_dim"),
        },
    }


def read_bloom(fields: Fields) -> dict[str, Any]:
    """BLOOM: GPT-2's block with ALiBi for positions and a LayerNorm on the embeddings (BloomModel:
    "self.word_embeddings_layernorm = LayerNorm(self.embed_dim)"); BloomMLP is always 4 x hidden
    ("nn.Linear(hidden_size, 4 * hidden_size)"), biases everywhere. The config has no context length: BLOOM was
    trained on 2,048-token sequences (BigScience 2022, arXiv:2211.05100 Table 3, the bloom-176b preset's source),
    unless the file says seq_length. bigscience/bloom's config.json reads as 176,247,271,424 parameters, the
    published count (tests/test_truth_classic.py)."""
    causal_lm_head(fields)
    width = fields.int("hidden_size")
    return {
        "vocab_size": fields.int("vocab_size"),
        "d_model": width,
        "n_layers": fields.int("n_layer"),
        "n_heads": fields.int("n_head"),
        "d_ff": 4 * width,
        "mlp": "plain",
        "norm": "layernorm",
        "bias": {"qkv": True, "attn_out": True, "mlp": True},
        "tied_embeddings": fields.bool("tie_word_embeddings", True),
        "position": "alibi",
        "max_seq_len": fields.int("seq_length", 2048),
        "embedding_norm": True,
    }


def read_stablelm(fields: Fields) -> dict[str, Any]:
    """StableLM: Llama's attention and gated MLP under LayerNorms with a shift. StableLmAttention: q/k/v biases
    "bias=config.use_qkv_bias", o_proj none; use_parallel_residual: one input_layernorm and
    "self.post_attention_layernorm = None" (qk_layernorm is refused: FAMILIES)."""
    parallel = fields.bool("use_parallel_residual", False)
    flags = Flags(
        norm="layernorm",
        qkv_bias=("use_qkv_bias", False),
        out_bias=False,
        block_norms=1 if parallel else 2,
        parallel_block=parallel,
    )
    return flags_family(flags)(fields)


# Keys of BigScience's BLOOM files that change no count in transformers' BloomModel (Megatron-DeepSpeed's fusion
# and training switches; n_inner: BloomMLP builds 4 x hidden whatever it says).
BLOOM_IGNORED = frozenset(
    {
        "apply_residual_connection_post_layernorm", "slow_but_exact", "pretraining_tp", "offset_alibi",
        "skip_bias_add", "skip_bias_add_qkv", "masked_softmax_fusion", "bias_dropout_fusion",
        "attention_softmax_in_fp32", "unk_token_id", "n_inner",
    }
)  # fmt: skip

FAMILIES: dict[str, Family] = {
    "bloom": Family(read_bloom, BLOOM_IGNORED),
    "opt": Family(read_opt, frozenset({"layerdrop", "init_std", "dropout"})),
    "minicpm3": Family(read_minicpm3, LLAMA_IGNORED | {"scale_emb", "scale_depth", "dim_model_base"}),
    # FalconMambaMixer is Mamba's with "rms_forward(B, variance_epsilon=self.rms_eps)" on B, C and the time step:
    # norms without weights, no parameter and no matmul; mixer_rms_eps is their epsilon.
    "falcon_mamba": Family(
        SSM_FAMILIES["mamba"].read,
        SSM_FAMILIES["mamba"].harmless | {"mixer_rms_eps"},
        unused=SSM_FAMILIES["mamba"].unused,
        refused=SSM_FAMILIES["mamba"].refused,
    ),
    "gpt_bigcode": Family(
        read_gpt_bigcode,
        GPT2_IGNORED | {"scale_attention_softmax_in_fp32", "attention_softmax_in_fp32"},
        refused=(CROSS_ATTENTION,),
    ),
    "gpt_neo": Family(read_gpt_neo, frozenset({"resid_dropout", "embed_dropout"})),
    "gptj": Family(read_gptj, ROTARY_IGNORED),
    "codegen": Family(read_gptj, ROTARY_IGNORED),
    "phi": Family(read_phi, ROTARY_IGNORED | {"partial_rotary_factor"}),
    # CohereDecoderLayer: "hidden_states = residual + hidden_states_attention + hidden_states_mlp" from one
    # input_layernorm, a CohereLayerNorm with a weight and no bias; use_qk_norm: CohereLayerNorm((num_heads,
    # head_dim)) on queries and ((num_key_value_heads, head_dim)) on keys.
    "cohere": Family(
        flags_family(
            Flags(
                tied=True,
                norm="layernorm-noshift",
                block_norms=1,
                parallel_block=True,
                qk_norm="projection",
                qk_norm_switch=("use_qk_norm", False),
            )
        ),
        LLAMA_IGNORED | {"logit_scale"},
    ),
    # OlmoLayerNorm: "F.layer_norm(hidden_states.to(dtype=torch.float32), self.normalized_shape, None, None,
    # eps=1e-5)", no parameters; OlmoAttention and OlmoMLP: Llama's, attention_bias on q/k/v and o. clip_qkv
    # clamps values and changes no count.
    "olmo": Family(flags_family(Flags(norm="layernorm-noparams")), LLAMA_IGNORED | {"clip_qkv"}),
    # Arcee (AFM), IQuest-Coder: Llama's attention; Arcee's MLP is up/down with relu2, no gate (ArceeMLP).
    "arcee": Family(flags_family(Flags(mlp="plain", mlp_bias=("mlp_bias", False))), LLAMA_IGNORED),
    "iquestcoder": Family(flags_family(Flags(mlp_bias=("mlp_bias", False))), LLAMA_IGNORED),
    # Nemotron-4 (NemotronLayerNorm1P: a LayerNorm with weight and bias), Jais 2: LayerNorms and an up/down relu2
    # MLP; Jais 2's biases default on. NemotronConfig's num_key_value_heads default (None) does not build.
    "nemotron": Family(
        flags_family(Flags(norm="layernorm", mlp="plain", mlp_bias=("mlp_bias", False))), LLAMA_IGNORED | {"norm_eps"}
    ),
    "jais2": Family(
        flags_family(
            Flags(
                norm="layernorm",
                mlp="plain",
                qkv_bias=("attention_bias", True),
                out_bias=("attention_bias", True),
                mlp_bias=("mlp_bias", True),
            )
        ),
        LLAMA_IGNORED,
    ),
    # VaultGemma: Gemma 2's attention and windows (layer_types) without its post-norms, a tied head.
    "vaultgemma": Family(
        flags_family(Flags(tied=True, windows="layer_types")),
        LLAMA_IGNORED | {"query_pre_attn_scalar", "attn_logit_softcapping", "final_logit_softcapping"},
    ),
    # HeliumAttention: q/k/v "bias=config.attention_bias", o_proj "bias=False"; HeliumMLP: "bias=config.mlp_bias".
    "helium": Family(flags_family(Flags(out_bias=False, mlp_bias=("mlp_bias", False))), LLAMA_IGNORED),
    # GlmAttention: "bias=config.attention_bias" on q, k and v, "bias=False" on o_proj; fused gate_up_proj.
    "glm": Family(flags_family(Flags(qkv_bias=("attention_bias", True), out_bias=False)), LLAMA_IGNORED),
    # Starcoder2: LayerNorms with a shift, a plain c_fc/c_proj MLP, every linear layer "bias=config.use_bias".
    "starcoder2": Family(
        flags_family(
            Flags(
                tied=True,
                norm="layernorm",
                mlp="plain",
                qkv_bias=("use_bias", True),
                out_bias=("use_bias", True),
                mlp_bias=("use_bias", True),
                windows="every-layer",
            )
        ),
        LLAMA_IGNORED | {"residual_dropout", "embedding_dropout", "norm_epsilon"},
    ),
    # ExaoneAttention and InternLM3's: Llama's, attention_bias and mlp_bias.
    "exaone": Family(flags_family(Flags(mlp_bias=("mlp_bias", False))), LLAMA_IGNORED),
    "internlm3": Family(flags_family(Flags(mlp_bias=("mlp_bias", False))), LLAMA_IGNORED),
    "stablelm": Family(
        read_stablelm,
        ROTARY_IGNORED | {"partial_rotary_factor"},
        # StableLmLayerNormPerHead builds LayerNorm(head_dim, bias=False) per head: a scale beside block norms
        # with a shift, which no shape field says (StableLM-2-12B sets it; StableLM-2-1.6B and 3B do not).
        refused=(Refusal("qk_layernorm", "bool", False, (False,), "per-head query/key LayerNorms are not modelled"),),
    ),
    # PersimmonAttention: a fused query_key_value and dense with biases, q_layernorm and k_layernorm
    # "nn.LayerNorm(self.head_dim)" shared by the heads; PersimmonMLP: dense_h_to_4h and dense_4h_to_h with biases.
    "persimmon": Family(
        flags_family(
            Flags(
                norm="layernorm",
                mlp="plain",
                qkv_bias=True,
                out_bias=True,
                mlp_bias=True,
                qk_norm="head",
                qk_norm_switch=("qk_layernorm", True),
            )
        ),
        ROTARY_IGNORED | {"partial_rotary_factor"},
    ),
}
