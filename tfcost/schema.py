"""Pydantic shapes: a model's architecture and a workload. Pure data, validated on the way in.

Every model is frozen and refuses unknown keys, so a typo in a preset (`n_head` for `n_heads`) is an error
naming the key rather than a silently ignored field.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeGuard

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, Strict, model_validator

from tfcost.units import MAX_SIZE, Dtype

# A model or workload size: positive, and at most MAX_SIZE so that no product of sizes outgrows printing.
Size = Annotated[int, Field(gt=0, le=MAX_SIZE)]
SizeOrZero = Annotated[int, Field(ge=0, le=MAX_SIZE)]


def is_size(value: object) -> TypeGuard[int]:
    """Whether a raw value will validate as a Size (an int, not a bool: the schema is strict)."""
    return type(value) is int and 0 < value <= MAX_SIZE


# Bounds on the assumptions a user may set: a utilization or efficiency below 0.1% (or achieved TFLOP/s below
# 10^9 FLOP/s, or above 10^18) is a typo, and would carry a time past any range a float or a reader can use.
MIN_UTILIZATION = 0.001
MIN_TFLOPS = 0.001
MAX_TFLOPS = 1e6


class Frozen(BaseModel):
    """Base of every schema: immutable, unknown keys refused, no silent str->int coercion."""

    # No inf or nan either: no size, fraction or price is infinite, and JSON could not hold one. Validators are built
    # on first use, so a command builds only the schemas it needs.
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False, defer_build=True)

    def __eq__(self, other: object) -> bool:
        """pydantic's equality (same class, same field values) without its general checks, which these models do not
        need (no private attributes; unknown keys are refused): the core's caches are keyed on shapes and compare
        them on every hit, and pydantic's own took about 6 ms of a 56-model comparison."""
        return self is other or (type(other) is type(self) and self.__dict__ == other.__dict__)

    __hash__ = BaseModel.__hash__  # defining __eq__ would otherwise drop the frozen model's hash


def check_kv_groups(heads: int, kv_heads: int, heads_name: str, kv_heads_name: str) -> None:
    """Grouped-query attention: each key-value head serves a whole group of query heads."""
    if kv_heads > heads or heads % kv_heads:
        raise ValueError(
            f"{kv_heads_name} ({kv_heads}) must divide {heads_name} ({heads}): "
            "each key-value head serves a whole group of query heads"
        )


class Biases(Frozen):
    """Which linear layers carry a bias vector (GPT-2: all three; Llama: none; Qwen2: qkv only)."""

    qkv: bool = Field(False, description="bias on the query, key and value projections")
    attn_out: bool = Field(False, description="bias on the attention output projection")
    mlp: bool = Field(False, description="bias on the feed-forward matrices")


# A list of layer indices. Written as a YAML/JSON list, held as a tuple so that shapes stay hashable.
LayerIndices = Annotated[tuple[Annotated[int, Strict()], ...], Field(strict=False)]


class MoE(Frozen):
    """Mixture of experts (Shazeer et al. 2017; Mixtral, Jiang et al. 2024; DeepSeekMoE, Dai et al. 2024): the
    MLP of an MoE block is a router and `n_experts` expert MLPs, of which each token uses `experts_per_token`,
    plus optional always-on shared experts. Experts have the model's `mlp` kind (gated or plain)."""

    n_experts: Size = Field(description="routed experts in each MoE block (Mixtral: 8; DeepSeek-V3: 256)")
    experts_per_token: Size = Field(description="k: routed experts each token is sent to (top-k)")
    expert_d_ff: Size = Field(description="hidden width of one routed expert's MLP")
    n_shared_experts: SizeOrZero = Field(
        0, description="experts every token goes through besides the routed ones (DeepSeek: 1-2; Qwen2-MoE: 1)"
    )
    shared_expert_d_ff: Size | None = Field(None, description="hidden width of one shared expert (default expert_d_ff)")
    shared_expert_gate: bool = Field(
        False, description="a d_model -> 1 sigmoid gate scales the shared experts' output (Qwen2-MoE)"
    )
    dense_layers: LayerIndices = Field(
        (), description="0-based indices of the blocks that keep a dense MLP of width d_ff (DeepSeek-V3: [0, 1, 2])"
    )
    n_zero_experts: SizeOrZero = Field(
        0,
        description="zero (identity) experts the router may pick besides the routed ones: no weights, no matmuls "
        "(LongCat-Flash); the router scores them too",
    )
    router_bias: bool = Field(False, description="a bias vector on the router's E outputs (gpt-oss)")
    router_scales: bool = Field(
        False, description="a d-wide scale on the router's input and one scale per expert (Gemma 4): d + E parameters"
    )

    @model_validator(mode="after")
    def _check_experts(self) -> MoE:
        if self.experts_per_token > self.n_experts:
            raise ValueError(
                f"moe.experts_per_token ({self.experts_per_token}) cannot exceed moe.n_experts ({self.n_experts})"
            )
        if self.n_shared_experts == 0 and (self.shared_expert_d_ff is not None or self.shared_expert_gate):
            raise ValueError("moe.shared_expert_d_ff and moe.shared_expert_gate need moe.n_shared_experts > 0")
        if len(set(self.dense_layers)) != len(self.dense_layers):
            raise ValueError("moe.dense_layers lists a layer twice")
        return self

    @property
    def shared_width(self) -> int:
        """Hidden width of one shared expert."""
        return self.shared_expert_d_ff or self.expert_d_ff


class SparseIndexer(Frozen):
    """DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2, arXiv:2512.02556, Eq. 1): per query token,
    n_heads small queries (from the MLA query latent) and weights score every earlier token's one cached index key,
    I(t, s) = sum_j w(t, j) ReLU(q(t, j) . k(s)); the attention then reads only the top-k scoring positions."""

    n_heads: Size = Field(description="H^I: indexer heads (DeepSeek-V3.2: 64)")
    head_dim: Size = Field(description="d^I: width of one indexer query and of the cached index key (128)")
    topk: Size = Field(description="k: positions each query attends to (2048)")


class MLA(Frozen):
    """Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 §2.1): keys and values are rebuilt per head from
    a small cached latent of kv_lora_rank values, plus one rotary key of qk_rope_head_dim shared by all heads."""

    q_lora_rank: Size | None = Field(
        None, description="rank of the low-rank query projection (DeepSeek-V3: 1536); null: queries projected directly"
    )
    kv_lora_rank: Size = Field(description="d_c: width of the compressed key-value latent that is cached")
    qk_nope_head_dim: Size = Field(description="per-head query/key width without rotary embedding")
    qk_rope_head_dim: Size = Field(
        description="d_h^R: per-head query/key width with rotary embedding; the key part is shared and cached"
    )
    v_head_dim: Size = Field(description="per-head value width")
    indexer: SparseIndexer | None = Field(
        None, description="DeepSeek Sparse Attention's indexer (DeepSeek-V3.2, GLM-5); null: dense MLA"
    )


class CompressedAttention(Frozen):
    """DeepSeek-V4's attention (DeepSeek-AI 2026, DeepSeek-V4 §2.3; transformers' DeepseekV4Attention): one shared
    key-value head of head_dim (keys are the values), low-rank queries, a grouped low-rank output projection, and
    besides its sliding window a compressor that folds every m positions into one entry: m = csa_rate with a
    lightning indexer picking the top-k entries (Compressed Sparse Attention), m = hca_rate without one (Heavily
    Compressed Attention)."""

    q_lora_rank: Size = Field(description="rank of the low-rank query projection (DeepSeek-V4-Flash: 1024)")
    o_groups: Size = Field(description="g: head groups of the grouped output projection (8)")
    o_lora_rank: Size = Field(description="d_g: each group's intermediate width in the output projection (1024)")
    csa_rate: Size = Field(4, description="m: positions per compressed entry in a compressed-sparse layer")
    hca_rate: Size = Field(128, description="m': positions per compressed entry in a heavily-compressed layer")
    indexer: SparseIndexer = Field(
        description="the compressed-sparse layers' lightning indexer: heads, head width, top-k compressed entries"
    )


QuantizedPart = Literal["attention", "mlp", "experts", "shared_experts", "output_head"]


class Quantization(Frozen):
    """Weights stored in a quantized format, as a checkpoint's `quantization_config` says: the format, its group or
    block of weights sharing one scale, and the parts it leaves unconverted. tfcost.core.weights turns it into bytes;
    the matmuls and their FLOPs are the same."""

    method: Literal["mxfp4", "nvfp4", "fp8", "awq", "gptq", "bnb-8bit", "bnb-4bit"] = Field(
        description="mxfp4 (OCP MX), nvfp4, fp8 (per block or per tensor), awq, gptq, bitsandbytes 8- or 4-bit"
    )
    bits: Literal[2, 3, 4, 8] = Field(description="bits per stored weight")
    group_size: Size | None = Field(
        None, description="weights sharing one scale (awq/gptq group_size; mxfp4 32; nvfp4 16; bnb 4-bit 64)"
    )
    block: tuple[Annotated[int, Field(gt=0)], Annotated[int, Field(gt=0)]] | None = Field(
        None,
        strict=False,
        description="fp8 only: rows x columns of a block sharing one fp32 scale (DeepSeek-V3: [128, 128])",
    )
    double_quant: bool = Field(False, description="bnb-4bit only: the scales are themselves quantized to 8 bits")
    not_converted: tuple[QuantizedPart, ...] = Field(
        (),
        strict=False,
        description="block parts (and an untied output head) kept at 16 bits; embeddings and norms always are",
    )


class SSM(Frozen):
    """A selective state-space mixer's sizes: Mamba (Gu and Dao 2023, arXiv:2312.00752) or Mamba-2 (Dao and Gu
    2024, arXiv:2405.21060). d_inner channels are scanned with a d_state-wide state each; Mamba-2 splits them
    into n_heads heads of d_inner / n_heads and shares B and C over n_groups groups."""

    d_inner: Size = Field(description="channels the scan runs over (expand x d_model; Falcon-H1's mamba_d_ssm)")
    d_state: Size = Field(description="N: state size per channel")
    n_heads: Size = Field(1, description="Mamba-2: heads (d_inner / head_dim); Mamba: 1")
    n_groups: Size = Field(1, description="Mamba-2: groups sharing B and C")
    conv_kernel: Size = Field(4, description="K: width of the depthwise causal convolution")
    chunk_size: Size = Field(256, description="Mamba-2: positions per chunk of the chunked (SSD) scan")
    dt_rank: Size | None = Field(None, description="Mamba only: rank of the time-step projection; null: Mamba-2")
    conv_bias: bool = Field(True, description="a bias on the convolution")
    proj_bias: bool = Field(False, description="biases on the in and out projections")
    gated_norm: bool = Field(True, description="Mamba-2: a gated RMSNorm over d_inner before the out projection")
    dt_norms: bool = Field(False, description="Mamba only: RMSNorms on dt, B and C (Jamba)")

    @model_validator(mode="after")
    def _check_heads(self) -> SSM:
        if self.d_inner % self.n_heads or self.n_heads % self.n_groups:
            raise ValueError("n_heads must divide d_inner, and n_groups must divide n_heads")
        return self


class GatedDeltaNet(Frozen):
    """A Gated DeltaNet mixer's sizes (Yang, Kautz and Hatamizadeh 2024, arXiv:2412.06464; Qwen3-Next and
    Qwen3.5's linear-attention layers): key_heads query/key heads of key_head_dim, value_heads value heads of
    value_head_dim (each query/key head serves value_heads / key_heads of them), a depthwise causal convolution
    of conv_kernel over q, k and v, and the chunked delta rule in chunks of chunk_size positions."""

    key_heads: Size = Field(description="H_k: query/key heads (linear_num_key_heads)")
    value_heads: Size = Field(description="H_v: value heads (linear_num_value_heads), a multiple of key_heads")
    key_head_dim: Size = Field(description="d_k: width of one query/key head")
    value_head_dim: Size = Field(description="d_v: width of one value head")
    conv_kernel: Size = Field(4, description="K: width of the depthwise causal convolution (linear_conv_kernel_dim)")
    chunk_size: Size = Field(64, description="C: positions per chunk of the chunked delta rule (transformers: 64)")

    @model_validator(mode="after")
    def _check_heads(self) -> GatedDeltaNet:
        if self.value_heads % self.key_heads:
            raise ValueError("gated_deltanet: key_heads must divide value_heads")
        return self


class LightningAttention(Frozen):
    """MiniMax-01's lightning attention (MiniMax 2025, arXiv:2501.08313 §2.2): linear attention over the model's
    n_heads x head_dim, exact within blocks of block_size positions and through a head_dim x head_dim state
    between them."""

    block_size: Size = Field(256, description="C: positions per block")


class ShortConv(Frozen):
    """LFM2's double-gated short convolution (Liquid AI 2025): in_proj d -> 3d (B, C, x), a depthwise causal
    convolution of conv_kernel over B*x, C times its output, out_proj d -> d."""

    conv_kernel: Size = Field(3, description="L: width of the depthwise causal convolution (conv_L_cache)")
    bias: bool = Field(False, description="biases on in_proj, the convolution and out_proj (conv_bias)")


class SharedTransformer(Frozen):
    """Zamba2's shared transformer blocks (Glorioso et al. 2024, "The Zamba2 Suite", arXiv:2411.15242 §2;
    transformers' Zamba2HybridLayer): a 'shared_transformer+mamba2' layer first runs a transformer block whose
    weights are shared across depth, attention over the concatenated [hidden state, input embeddings] (2 d wide, the
    model's n_heads x head_dim) and a gated MLP of d_ff, then a d x d projection of its own into a Mamba-2 layer.
    Each use also has its own LoRA adapters (d -> r -> 2 d_ff on the MLP's gate and up; on q, k and v with
    attention_adapters). A layer marked `tied` uses a block held by an earlier layer."""

    adapter_rank: Size = Field(description="r: rank of each use's LoRA adapters (adapter_rank)")
    attention_adapters: bool = Field(
        False, description="adapters on q, k and v as well, 2 d -> r -> 2 d each (use_shared_attention_adapter)"
    )


class LayerSpec(Frozen):
    """One layer of a non-uniform stack: its mixer and its FFN. Sizes (heads, widths) are the model's."""

    mixer: str = Field(
        "attention",
        description="the token mixer: 'attention' (full, or sliding/chunked below), 'mla', 'mla_shared_topk' "
        "(sparse MLA reusing the previous layer's top-k selection, no indexer of its own: GLM-5's shared layers), "
        "'mamba', 'mamba2', 'attention+mamba2' (both in parallel, Falcon-H1), 'shared_transformer+mamba2' (Zamba2's "
        "hybrid layer, see shared_transformer), DeepSeek-V4's 'compressed_sparse', 'heavily_compressed' and "
        "'shared_kv_sliding' (its window below) or 'none'; a kind the core does not cover is an error naming it",
    )
    window: Size | None = Field(None, description="W: sliding-window attention over at most W positions")
    chunk: Size | None = Field(None, description="C: chunked attention, each query sees its own C-token chunk")
    rope: bool = Field(True, description="false: a NoPE layer (no position encoding; Llama 4's global layers)")
    ffn: Literal["dense", "moe", "dense+moe", "none"] = Field(
        "dense",
        description="dense: an MLP of width d_ff; moe: the model's moe; dense+moe: both side by side on the same "
        "input, each with its own norms (Gemma 4's enable_moe_block); none: no FFN (Mamba, Nemotron-H)",
    )
    # Per-layer sizes, where a layer differs from the model's (Gemma 3n, Gemma 4); null: the model's.
    head_dim: Size | None = Field(None, description="this layer's head width (Gemma 4 global layers: 512)")
    kv_heads: Size | None = Field(None, description="this layer's key-value heads (Gemma 4 global layers)")
    d_ff: Size | None = Field(None, description="this layer's dense MLP width (Gemma 3n's per-layer list)")
    kv_shared: bool = Field(
        False,
        description="the layer reads the keys and values of an earlier layer of its kind (Gemma 3n/4 "
        "num_kv_shared_layers): no key or value projections, no cache of its own",
    )
    values_from_keys: bool = Field(
        False, description="values are the keys (Gemma 4 attention_k_eq_v): no value projection; both are cached"
    )
    tied: bool = Field(
        False,
        description="the layer's shared weights are held by an earlier layer (Zamba2's shared transformer blocks): "
        "it does their matmuls and keeps its cache, but holds no copy of them",
    )

    @model_validator(mode="after")
    def _check_span(self) -> LayerSpec:
        if self.window is not None and self.chunk is not None:
            raise ValueError("a layer has a sliding window or a chunk, not both")
        return self


# Mixers with weights shared across depth, which a layer may tie to an earlier one (LayerSpec.tied).
SHARED_MIXERS = frozenset({"shared_transformer+mamba2"})


class LayerGroup(Frozen):
    """A run of layers written compactly: `pattern` repeated `repeat` times (Gemma 3: 5 sliding, 1 full, x8)."""

    # Written as a YAML/JSON list, held as a tuple so that shapes stay hashable.
    pattern: tuple[LayerSpec, ...] = Field(min_length=1, strict=False, description="the layers of one repeat, in order")
    repeat: Size = Field(1, description="how many times the pattern repeats")


class TowerRow(Frozen):
    """One piece of a tower outside its encoder layers: the patch embedding, a position table, a class token, a
    norm or a projector matmul, as transformers builds it. `over`: what it runs over, per image: the encoder's
    positions (patches, plus a class token), the patches, or the tokens handed to the language model (after a
    pooling or patch merge); `weights` rows do no matmul."""

    name: str = Field(description="the part, e.g. 'patch_embedding' or 'projector/linear_1'")
    kind: Literal["linear", "norm", "table", "pool"] = Field(
        description="a matmul, a norm's vectors, a table, or a pool done as a matmul by a fixed weight matrix"
    )
    fan_in: Size = Field(description="linear: input width; norm: width; table: rows; pool: width")
    fan_out: Size = Field(
        description="linear: output width; norm: vectors (LayerNorm 2, RMSNorm 1); table: columns; pool: patches "
        "averaged into each token's row of the weight matrix (every patch: a dense matrix)"
    )
    bias: bool = Field(False, description="linear: out biases")
    over: Literal["positions", "patches", "tokens", "weights", "passes", "relative", "frames"] = Field(
        "weights",
        description="what it runs over ('passes': once per encoder run, a pooling head's probe; audio: 'frames', "
        "the feature frames, 'relative', the relative positions an encoder layer projects, Gemma 4)",
    )
    times: Size = Field(
        1, description="linear: runs per unit of `over` (a convolution's outputs along the frequency axis per frame)"
    )
    stride: Size = Field(1, description="frames: runs over ceil(frames / stride) time steps (strided convolutions)")
    extra: SizeOrZero = Field(0, description="positions: runs over this many more (a padded convolution's output)")


class AudioFeed(Frozen):
    """How an audio encoder takes S seconds of audio, as its processor and encoder do: N = S x sample_rate samples
    cut into (N + pad - window) // hop + 1 feature frames, subsampled to ceil(frames / reduction) encoder
    positions, one token each (capped at max_tokens where the processor caps them); attention within chunks of
    `chunk` queries over `context` keys (Gemma 4) or full within blocks of `block` positions (Phi-4-multimodal)."""

    sample_rate: Size = Field(16000, description="samples a second")
    window: Size = Field(description="samples one feature frame reads (its unfold's size)")
    hop: Size = Field(description="samples between frames")
    pad: SizeOrZero = Field(0, description="samples padded before the first frame")
    reduction: Size = Field(description="feature frames per encoder position (the subsampling convolutions)")
    max_tokens: Size | None = Field(None, description="most tokens one audio becomes (Gemma 4: 750)")
    chunk: Size | None = Field(None, description="queries a block of chunked local attention")
    context: Size | None = Field(None, description="keys each chunk reads (the chunk, its left and right context)")
    relative: SizeOrZero = Field(0, description="relative positions projected to keys once per layer (Gemma 4)")
    block: Size | None = Field(None, description="full attention within blocks of this many positions (Phi-4)")


class Tower(Frozen):
    """A vision (or audio) tower of a multimodal model: a bidirectional encoder of `n_layers` layers, each priced
    by the model's own op tables (an attention and an MLP of this tower's sizes), and the rows around it (patch
    embedding, positions, norms, projector into the language model's width). One image is split into
    (image_size / patch_size)^2 patches; the language model reads `tokens_per_image` tokens for it."""

    name: str = Field(description="'vision' or 'audio'")
    model_type: str = Field(description="transformers' model_type of the tower's config")
    d_model: Size = Field(description="the encoder's width")
    n_layers: Size = Field(description="encoder layers")
    n_heads: Size = Field(description="attention heads")
    n_kv_heads: Size | None = Field(None, description="key-value heads (default n_heads)")
    head_dim: Size | None = Field(None, description="width of one head (default d_model / n_heads)")
    qk_norm: bool = Field(False, description="a head-wide norm on queries and one on keys (Gemma 4)")
    block_norms: Size = Field(2, description="d-wide norms a layer: 2, or 4 with post-norms (Gemma 4)")
    d_ff: Size = Field(description="the encoder MLP's hidden width")
    mlp: Literal["plain", "gated"] = Field("plain", description="plain fc1/fc2, or gated (Pixtral)")
    norm: Literal["layernorm", "rmsnorm"] = Field("layernorm", description="the encoder's norms")
    bias: bool = Field(True, description="biases on q, k, v, o and the MLP's matrices")
    image_size: Size = Field(1, description="pixels on a side of one image (or tile) as the tower takes it")
    patch_size: Size = Field(1, description="pixels on a side of one patch")
    class_token: bool = Field(False, description="a class token before the patches (Llama 4)")
    tokens_per_image: Size = Field(1, description="tokens the language model reads for one image at image_size")
    patches_per_image: Size | None = Field(
        None, description="patches one image is padded to, where the processor fixes a budget (Gemma 4: 280 x 3^2)"
    )
    sizing: Literal["fixed", "tiles", "native", "crops"] = Field(
        "fixed",
        description="how an image of another size is fed: fixed (resized to image_size: SigLIP), tiles (cut into "
        "image_size tiles, plus a global one: Llama 4), native (its own patch grid: Pixtral, Qwen), crops (tiles "
        "whose tokens are pooled 2 x 2 with a separator a row: Phi-4-multimodal)",
    )
    merge: Size = Field(1, description="native: patches merged into one token, per side (spatial_merge_size)")
    max_tiles: Size = Field(1, description="tiles: most tiles per image (Llama 4's processor: 16)")
    max_image_size: Size | None = Field(None, description="native: larger images are resized down to it (Pixtral)")
    rows: tuple[TowerRow, ...] = Field((), strict=False, description="the pieces outside the encoder layers")
    layer_rows: tuple[TowerRow, ...] = Field(
        (), strict=False, description="rows in every encoder layer beside its attention and MLP (a conformer's)"
    )
    audio: AudioFeed | None = Field(None, description="an audio tower: how seconds of audio become its positions")


class ModelShape(Frozen):
    """The architecture of a transformer, as far as its costs depend on it.

    Sizes follow the lesson's notation: d = d_model, L = n_layers, H = n_heads, Q = head_dim, F = d_ff, V = vocab.
    The optional parts (MoE, MLA, sliding windows, encoder pieces) default to a plain decoder-only model.
    """

    name: str = Field(description="short name, e.g. gpt2-small")
    source: str | None = Field(None, description="where the shape and published count come from")
    published_params: PositiveInt | None = Field(
        None, description="the published parameter count this shape must reproduce exactly"
    )

    vocab_size: Size = Field(description="V: rows of the token embedding")
    d_model: Size = Field(description="d: width of the residual stream")
    n_layers: Size = Field(description="L: transformer blocks")
    n_heads: Size = Field(description="H: query heads")
    # n_kv_heads and head_dim may be left out of a preset: the "before" validator fills them in.
    n_kv_heads: Size = Field(description="key-value heads: H for MHA, 1 for MQA, between for GQA (default H)")
    head_dim: Size = Field(description="Q: width of one head (default d_model / n_heads)")
    d_ff: Size = Field(description="F: hidden width of the feed-forward block")
    mlp: Literal["plain", "gated"] = Field(
        description="plain: 2 matrices d->F->d with GELU; gated: 3 matrices (gate, up, down), SwiGLU/GeGLU"
    )
    norm: Literal["layernorm", "rmsnorm", "layernorm-noshift", "layernorm-noparams"] = Field(
        description="layernorm: scale and shift; rmsnorm: scale only; layernorm-noshift: a LayerNorm with a scale "
        "and no shift (Cohere's), priced as rmsnorm; layernorm-noparams: a LayerNorm with neither (OLMo's "
        "F.layer_norm(hidden_states, self.normalized_shape, None, None, eps=1e-5))"
    )
    bias: Biases = Field(default_factory=Biases, description="which linear layers carry biases")
    tied_embeddings: bool = Field(description="true when the output head reuses the token embedding matrix")
    position: Literal["learned", "sinusoidal", "rotary", "alibi", "relative", "none"] = Field(
        description="position scheme; 'learned' has a max_seq_len x d_model table, 'relative' (T5) a table of "
        "relative_attention_buckets x n_heads biases per stack; the others have no parameters"
    )
    max_seq_len: Size = Field(description="maximum context the model was built for")

    architecture: Literal["decoder", "encoder", "encoder-decoder"] = Field(
        "decoder",
        description="decoder: causal blocks and an LM head (GPT, Llama); encoder: bidirectional blocks (BERT); "
        "encoder-decoder: n_layers encoder blocks, then n_decoder_layers decoder blocks with cross-attention (T5)",
    )
    n_decoder_layers: Size | None = Field(
        None, description="encoder-decoder only: decoder blocks (n_layers counts the encoder's)"
    )
    block_norms: Size = Field(
        2,
        description="d_model-wide norms in each block: 2 (before attention and MLP) for most models, 1 for "
        "Falcon-7B's parallel block, 4 for Gemma-2 (before and after each); a decoder block of an "
        "encoder-decoder model has one more, before cross-attention",
    )
    qk_norm: bool = Field(False, description="a head_dim-wide norm on queries and one on keys in each block (Qwen3)")
    qk_norm_width: Literal["head", "projection"] = Field(
        "head",
        description="qk_norm over one head (Qwen3: head_dim) or over the whole projection (OLMo 2, MiniMax-M2: "
        "n_heads*head_dim on queries, n_kv_heads*head_dim on keys)",
    )
    activation_params: SizeOrZero = Field(
        0, description="learned scalars of the MLP's activation in each layer (Apertus's xIELU: alpha_p, alpha_n: 2)"
    )
    parallel_block: bool = Field(
        False,
        description="attention and MLP read the same input, x + attn(x) + mlp(x) (GPT-J, GPT-NeoX, Falcon); "
        "recorded only, it changes no count",
    )
    rotary_fraction: float = Field(
        1.0,
        gt=0,
        le=1,
        description="share of each head's dimensions that rotary embedding rotates (GPT-NeoX rotary_pct, Phi "
        "partial_rotary_factor); recorded only, rotary embedding has no parameters or matmuls",
    )
    sliding_window: Size | None = Field(
        None, description="W: a sliding-window layer attends to at most W positions, itself included (Mistral)"
    )
    sliding_layers: LayerIndices | None = Field(
        None, description="0-based indices of the layers that use the window; null: every layer (Gemma-2: even ones)"
    )
    moe: MoE | None = Field(None, description="mixture of experts in place of the dense MLP; null: dense model")
    mla: MLA | None = Field(None, description="multi-head latent attention in place of q/k/v projections")
    ssm: SSM | None = Field(None, description="the sizes of the model's Mamba or Mamba-2 layers")
    attention_output_gate: bool = Field(
        False,
        description="a sigmoid gate on each attention output from a second query-width projection, q_proj doubled "
        "(Qwen3-Next, Qwen3.5)",
    )
    gated_deltanet: GatedDeltaNet | None = Field(None, description="the sizes of the model's Gated DeltaNet layers")
    short_conv: ShortConv | None = Field(None, description="the sizes of the model's short-convolution layers (LFM2)")
    lightning_attention: LightningAttention | None = Field(
        None, description="the block size of the model's lightning-attention layers (MiniMax-01)"
    )
    shared_transformer: SharedTransformer | None = Field(
        None, description="the adapters of the model's shared transformer blocks (Zamba2)"
    )
    relative_attention_buckets: Size | None = Field(
        None, description="position 'relative' only: buckets of T5's relative position bias table"
    )
    token_types: SizeOrZero = Field(0, description="rows of a token-type (segment) embedding table (BERT: 2)")
    embedding_norm: bool = Field(False, description="a norm on the summed embeddings before the first block (BERT)")
    final_norm: bool = Field(
        True, description="a norm after the last block (pre-norm models); BERT's post-norm blocks have none"
    )
    pooler: bool = Field(False, description="BERT's pooler: a d x d dense layer with bias on the first token")
    position_offset: SizeOrZero = Field(
        0,
        description="position 'learned' only: rows of the table before position 0 (OPT's "
        "OPTLearnedPositionalEmbedding: 'self.offset = 2', a table of max_position_embeddings + 2 rows)",
    )
    head_bias: bool = Field(
        False, description="V biases on the output head's logits (GPT-J, CodeGen, Phi-1/2: lm_head with bias=True)"
    )
    quantization: Quantization | None = Field(
        None, description="weights stored quantized (a checkpoint's quantization_config); null: 16-bit weights"
    )
    attention_sinks: bool = Field(
        False, description="a learned sink logit per query head in every attention (gpt-oss): H parameters a layer"
    )
    layers: tuple[LayerGroup, ...] | None = Field(
        None,
        strict=False,
        description="a non-uniform stack, group by group, in place of sliding_layers and moe.dense_layers; null: "
        "the stack the flat fields describe",
    )
    mtp_layers: SizeOrZero = Field(
        0,
        description="multi-token-prediction modules after the stack (DeepSeek-V3: 1), each two norms, a 2d -> d "
        "projection and one more block, sharing the embedding and head; counted in params.mtp, not in the total",
    )
    per_layer_embedding_dim: SizeOrZero = Field(
        0,
        description="p: per-layer token embeddings of this width (Gemma 3n, Gemma 4): a V_p x (L p) table, a d -> L p "
        "projection of the embeddings, and in each layer a d -> p gate and a p -> d projection",
    )
    per_layer_embedding_vocab: Size | None = Field(
        None, description="V_p: rows of the per-layer embedding table (default vocab_size)"
    )
    altup_streams: SizeOrZero = Field(
        0, description="n: AltUp's residual streams (Gemma 3n altup_num_inputs: 4); 0: none (tfcost.core.layers.altup)"
    )
    laurel_rank: SizeOrZero = Field(0, description="r: LAuReL's low-rank residual branch in each layer (Gemma 3n: 64)")
    hyper_connections: SizeOrZero = Field(
        0,
        description="n: residual streams of manifold-constrained hyper-connections (DeepSeek-V4 hc_mult: 4); 0: a "
        "plain residual (tfcost.core.layers.hyper_connections)",
    )
    hyper_connection_sinkhorn_iters: Size = Field(
        20,
        description="I: Sinkhorn-Knopp iterations making each hyper-connection's n x n mix doubly stochastic "
        "(DeepSeek-V4 hc_sinkhorn_iters: 20); changes no count but the training activations they keep",
    )
    compressed_attention: CompressedAttention | None = Field(
        None, description="the sizes of the model's compressed-attention layers (DeepSeek-V4)"
    )
    towers: tuple[Tower, ...] = Field(
        (),
        strict=False,
        description="vision and audio towers of a multimodal model (*ForConditionalGeneration), in the total; "
        "tfcost.core.layers.towers",
    )
    head: Literal["lm", "mlm", "none"] = Field(
        "lm",
        description="lm: a V x d output projection; mlm: BERT's masked-LM head (d x d transform with bias, a "
        "norm, the V x d projection and a V-wide output bias); none: no head (a base encoder)",
    )

    def __hash__(self) -> int:
        # The core's caches look a shape up on every call; hashing a few sizes rather than all ~30 fields (two of
        # them models) is what keeps a sweep fast. Equal shapes still hash alike; __eq__ compares every field.
        return hash((self.name, self.vocab_size, self.d_model, self.n_layers, self.n_heads, self.d_ff))

    @model_validator(mode="before")
    @classmethod
    def _fill_head_defaults(cls, data: object) -> object:
        # Resolve the two derived sizes once, here, so the core never has to ask "was it given?".
        if not isinstance(data, dict):
            return data
        data = dict(data)
        heads, width = data.get("n_heads"), data.get("d_model")
        # When n_heads or d_model is itself wrong, its own error is the one to report: a placeholder of 1 keeps the
        # derived field from also being called missing or wrong.
        if data.get("n_kv_heads") is None:
            data["n_kv_heads"] = heads if is_size(heads) else 1
        mla = data.get("mla")
        if isinstance(mla, MLA):
            mla = mla.model_dump()
        if data.get("head_dim") is None and isinstance(mla, dict):
            # Under MLA the query/key head is the non-rotary and the rotary part side by side.
            nope, rope = mla.get("qk_nope_head_dim"), mla.get("qk_rope_head_dim")
            if is_size(nope) and is_size(rope):
                data["head_dim"] = nope + rope
        if data.get("head_dim") is None:
            if is_size(heads) and is_size(width) and width % heads:
                raise ValueError(f"n_heads ({heads}) must divide d_model ({width}) when head_dim is not given")
            data["head_dim"] = width // heads if is_size(heads) and is_size(width) else 1
        return data

    @model_validator(mode="after")
    def _check_groups(self) -> ModelShape:
        check_kv_groups(self.n_heads, self.n_kv_heads, "n_heads", "n_kv_heads")
        self._check_stacks()
        self._check_layer_lists()
        self._check_attention_variants()
        self._check_layer_groups()
        self._check_linear_mixers()
        self._check_compressed_attention()
        return self

    def _check_layer_groups(self) -> None:
        if self.layers is None:
            return
        if self.sliding_layers is not None or (self.moe is not None and self.moe.dense_layers):
            raise ValueError("layers replaces sliding_layers and moe.dense_layers: give one or the other")
        total = sum(len(group.pattern) * group.repeat for group in self.layers)
        if total != self.n_layers:
            raise ValueError(f"layers describes {total} layers, n_layers is {self.n_layers}")
        if self.architecture != "decoder":
            raise ValueError("layers: only supported for architecture 'decoder'")
        for group in self.layers:
            for spec in group.pattern:
                if spec.ffn in ("moe", "dense+moe") and self.moe is None:
                    raise ValueError("layers: an 'moe' layer needs the model's moe")
                if spec.mixer.startswith("mla") and self.mla is None:
                    raise ValueError(f"layers: an '{spec.mixer}' layer needs the model's mla")
                if spec.mixer == "mla_shared_topk" and (self.mla is None or self.mla.indexer is None):
                    raise ValueError("layers: an 'mla_shared_topk' layer needs the model's mla.indexer")
                if "mamba" in spec.mixer and self.ssm is None:
                    raise ValueError(f"layers: a '{spec.mixer}' layer needs the model's ssm")
                if spec.mixer == "mamba" and self.ssm is not None and self.ssm.dt_rank is None:
                    raise ValueError("layers: a 'mamba' layer needs ssm.dt_rank (Mamba's time-step rank)")
                if spec.kv_heads is not None:
                    check_kv_groups(self.n_heads, spec.kv_heads, "n_heads", "layers: kv_heads")
        self._check_tied_layers()

    def _check_tied_layers(self) -> None:
        # A tied layer reuses weights that an earlier layer of its kind holds: the first one cannot be tied.
        first = True
        for group in self.layers or ():
            for spec in group.pattern:
                if spec.tied and spec.mixer not in SHARED_MIXERS:
                    raise ValueError(f"layers: a '{spec.mixer}' layer has no shared weights to tie")
                if spec.mixer in SHARED_MIXERS:
                    if spec.tied and first:
                        raise ValueError(f"layers: the first '{spec.mixer}' layer holds the shared weights: not tied")
                    first = False

    def _check_linear_mixers(self) -> None:
        # Each linear mixer kind and the model field holding its sizes (KDA is a Gated DeltaNet variant).
        needs = {
            "compressed_sparse": "compressed_attention",
            "heavily_compressed": "compressed_attention",
            "shared_kv_sliding": "compressed_attention",
            "gated_deltanet": "gated_deltanet",
            "kda": "gated_deltanet",
            "short_conv": "short_conv",
            "lightning": "lightning_attention",
            "shared_transformer+mamba2": "shared_transformer",
        }
        for group in self.layers or ():
            for spec in group.pattern:
                name = needs.get(spec.mixer)
                if name is not None and getattr(self, name) is None:
                    raise ValueError(f"layers: a '{spec.mixer}' layer needs the model's {name}")

    def _check_compressed_attention(self) -> None:
        groups = self.compressed_attention.o_groups if self.compressed_attention else 1
        if (self.n_heads * self.head_dim) % groups:
            raise ValueError(
                f"compressed_attention.o_groups ({groups}) must divide n_heads x head_dim "
                f"({self.n_heads * self.head_dim}): the grouped output projection splits the heads' outputs"
            )

    def _check_stacks(self) -> None:
        if (self.architecture == "encoder-decoder") != (self.n_decoder_layers is not None):
            raise ValueError("n_decoder_layers is required for, and only for, architecture 'encoder-decoder'")
        if self.architecture != "decoder":
            for name in ("moe", "mla", "sliding_window"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name}: only supported for architecture 'decoder'")
        if (self.position == "relative") != (self.relative_attention_buckets is not None):
            raise ValueError("relative_attention_buckets is required for, and only for, position 'relative'")
        if self.rotary_fraction != 1 and self.position != "rotary":
            raise ValueError(f"rotary_fraction: only meaningful with position 'rotary', not '{self.position}'")
        if self.position_offset and self.position != "learned":
            raise ValueError(f"position_offset: only meaningful with position 'learned', not '{self.position}'")

    def _check_layer_lists(self) -> None:
        for name, layers in (
            ("sliding_layers", self.sliding_layers or ()),
            ("moe.dense_layers", self.moe.dense_layers if self.moe else ()),
        ):
            outside = [i for i in layers if not 0 <= i < self.n_layers]
            if outside:
                raise ValueError(f"{name}: layer {outside[0]} is outside 0..{self.n_layers - 1}")
        if self.sliding_layers is not None:
            if self.sliding_window is None:
                raise ValueError("sliding_layers needs sliding_window")
            if len(set(self.sliding_layers)) != len(self.sliding_layers):
                raise ValueError("sliding_layers lists a layer twice")

    def _check_attention_variants(self) -> None:
        if self.mla is None:
            return
        mla = self.mla
        if self.n_kv_heads != self.n_heads:
            raise ValueError(f"mla: n_kv_heads ({self.n_kv_heads}) must equal n_heads: MLA rebuilds keys per head")
        if self.head_dim != mla.qk_nope_head_dim + mla.qk_rope_head_dim:
            raise ValueError(
                f"mla: head_dim ({self.head_dim}) must be qk_nope_head_dim + qk_rope_head_dim "
                f"({mla.qk_nope_head_dim + mla.qk_rope_head_dim})"
            )
        if self.qk_norm:
            raise ValueError("qk_norm: not supported together with mla")
        if mla.indexer is not None and mla.q_lora_rank is None:
            raise ValueError("mla.indexer: needs mla.q_lora_rank (the indexer's queries come from the query latent)")
        if self.position != "rotary":
            raise ValueError(f"mla: needs position 'rotary', not '{self.position}'")


# A prompt's images and audio, in Workload, TrainingSetup and ServingSetup alike: left out of the JSON when not asked
# for, so a text-only run's report is what it was.
Images = Annotated[
    SizeOrZero,
    Field(description="N: images in each sequence's prompt, through the vision tower", exclude_if=lambda n: n == 0),
]
ImageSide = Annotated[
    Size | None,
    Field(
        description="S: pixels on a side of each (square) image; null: the tower's own image_size",
        exclude_if=lambda side: side is None,
    ),
]
AudioSeconds = Annotated[
    float,
    Field(
        ge=0,
        le=86400,
        allow_inf_nan=False,
        description="seconds of audio in each sequence's prompt, through the audio tower",
        exclude_if=lambda seconds: seconds == 0,
    ),
]


class Workload(Frozen):
    """What the model is asked to do: T tokens per sequence, B sequences, stored at a dtype."""

    seq_len: Size = Field(1024, description="T: tokens per sequence")
    batch: Size = Field(1, description="B: sequences")
    dtype: Dtype = Field("bf16", description="storage dtype of the KV cache and score matrix")
    causal: bool = Field(
        False, description="count only the score entries the mask keeps (causal triangle, sliding windows) in FLOPs"
    )
    images: Images = 0
    image_size: ImageSide = None
    audio_seconds: AudioSeconds = 0


MeasureDtype = Literal["bf16", "fp16", "fp32"]  # what `tfcost measure` times: torch's floating types
SdpaBackend = Literal["auto", "flash", "efficient", "cudnn", "math"]  # auto: torch's own pick
MeasureDevice = Literal["cuda", "cpu"]


class AttentionShape(Frozen):
    """One attention call as `tfcost measure` times it: H query heads, K key-value heads, head width Q."""

    heads: Size = Field(description="H: query heads")
    kv_heads: Size = Field(description="K: key-value heads (H for MHA, 1 for MQA)")
    head_dim: Size = Field(description="Q: width of one head")

    @model_validator(mode="after")
    def _check_groups(self) -> AttentionShape:
        check_kv_groups(self.heads, self.kv_heads, "heads", "kv_heads")
        return self


class GpuSpec(Frozen):
    """One accelerator's datasheet numbers. Peaks are dense (without 2:4 sparsity, which datasheets print first);
    memory is as sold (HBM and GDDR "GB" are binary: 80 GB = 80 GiB), bandwidth in decimal TB/s."""

    name: str = Field(description="short name, e.g. h100-sxm")
    source: str = Field(description="where these numbers were read")
    device_names: list[str] = Field(
        description="regular expressions matched against torch.cuda.get_device_name() to recognise this GPU"
    )
    peak_bf16_tflops: float = Field(gt=0, description="dense BF16/FP16 tensor-core peak, 10^12 FLOP/s")
    peak_fp8_tflops: float | None = Field(None, gt=0, description="dense FP8 peak; null when the GPU has none")
    peak_fp32_tflops: float | None = Field(None, gt=0, description="FP32 (non-tensor-core) peak; null if unverified")
    memory_gib: float = Field(gt=0, description="device memory, GiB")
    memory_bandwidth_tb_per_s: float = Field(gt=0, description="device memory bandwidth, 10^12 bytes/s")
    intra_node_link: str | None = Field(None, description="the GPU-to-GPU link inside a node (NVLink 4, PCIe 4)")
    intra_node_bandwidth_gb_per_s: float | None = Field(
        None, gt=0, description="per GPU, one direction, 10^9 B/s, over the intra-node link"
    )
    intra_node_latency_us: float | None = Field(None, ge=0, description="one message's latency inside a node, us")
    inter_node_bandwidth_gb_per_s: float | None = Field(
        None, gt=0, description="per GPU, one direction, 10^9 B/s, over the network between nodes"
    )
    gpus_per_node: int | None = Field(
        None, gt=0, description="GPUs one node joins by the intra-node link (8 on an HGX/DGX board, 72 in an NVL72)"
    )
    sm_count: int | None = Field(None, gt=0, description="streaming multiprocessors (compute units): GEMM waves")
    matmul_efficiency: float | None = Field(
        None, gt=0, le=1, description="largest measured BF16 matmul FLOP/s over the peak (MAMF, ml-engineering)"
    )
    interconnect_source: str | None = Field(None, description="where the link, SM and matmul figures were read")
    reported_memory_gib: float | None = Field(
        None, gt=0, description="device memory the driver reports (what vLLM budgets from), GiB; null: memory_gib"
    )
    notes: str | None = Field(None, description="caveats: conflicting sources, unverified figures")
    unified_memory: bool = Field(
        False, description="the GPU shares the host's memory (Apple M-series, DGX Spark, Strix Halo): memory_gib is it"
    )
    gpu_memory_share: float | None = Field(
        None,
        gt=0,
        le=1,
        description="unified memory only: the share of it the OS lets the GPU wire by default (Metal's "
        "recommendedMaxWorkingSetSize over the machine's memory); null: all of it",
    )
    host_link_gb_per_s: float | None = Field(
        None, gt=0, description="the link to the host's memory (PCIe x16), one direction, 10^9 B/s; null: unknown"
    )
    board_power_w: float | None = Field(
        None, gt=0, description="the board's power limit (TDP), W: what a compute-bound step draws; null: unsourced"
    )
    power_source: str | None = Field(None, description="where the board power was read")


# selective: Korthikanti et al. 2022's (the attention scores recomputed); selective-op: torchtitan's op-level policy
# (the outputs of every other aten.mm and of SDPA saved, the rest recomputed: tfcost.core.activations)
Recompute = Literal["none", "selective", "selective-op", "full"]
Optimizer = Literal["adamw", "adamw-8bit", "paged-adamw", "paged-adamw-8bit", "adafactor", "sgd", "muon"]
Precision = Literal["bf16-mixed", "fp8", "bf16", "fp32"]
# How the elementwise ops run: fused (compiled), eager PyTorch (norms keep fp32 copies), or fused-norm: no compile but
# the norms in one fused kernel (torchtitan's norm_type = "fused_rmsnorm", a Triton kernel), the rest eager
Kernels = Literal["fused", "eager", "fused-norm"]
# Which fused attention kernel: fa2 (FlashAttention-2: flash-attn 2.x, PyTorch SDPA's flash backend) or fa1 (a
# FlashAttention-1-class kernel: flash-attn 1.x, llm-foundry's Triton kernel, attn_impl: triton)
FlashKernel = Literal["fa2", "fa1"]
Offload = Literal["none", "optimizer", "params"]
MemoryConvention = Literal["zero", "deepspeed", "megatron"]
# How the loss holds the logits: chunked (upcast and log-softmaxed a chunk at a time: torchtune, LitGPT), full (one
# fp32 cross-entropy over all of them: torchtitan, transformers) or compiled (the upcast compiled with the loss, the
# fp32 copy released: torchtune under compile=True), or fused (the output head and the loss in one kernel that never
# holds more than a chunk of logits: Liger's FusedLinearCrossEntropy, as Unsloth's and Cut Cross-Entropy also avoid
# the logits)
Loss = Literal["chunked", "full", "compiled", "fused"]
# When FSDP (ZeRO-3) frees a layer's gathered weights after its forward (torchtitan's
# --parallelism.fsdp_reshard_after_forward): always, never (kept gathered until the backward), or default (never
# under pipeline parallelism, else always)
ReshardAfterForward = Literal["default", "always", "never"]


class TrainingSetup(Frozen):
    """How a model is trained: data, batch, GPUs, parallel layout, optimizer and precision.

    Layout (Megatron-LM and ZeRO conventions): `gpus` = data-parallel size x tp x pp.
    """

    tokens: PositiveInt = Field(description="D: training tokens (the CLI's default: Chinchilla-optimal, 20 N)")
    seq_len: Size = Field(description="T (Korthikanti's s): tokens per sequence")
    micro_batch: Size = Field(1, description="b: sequences per GPU per forward/backward pass")
    gpus: Size = Field(1, description="GPUs in the run")
    mfu: float | None = Field(
        None,
        ge=MIN_UTILIZATION,
        le=1,
        description="model FLOPs utilization (PaLM App. B): model FLOP/s / peak; default 0.4",
    )
    hfu: float | None = Field(
        None,
        ge=MIN_UTILIZATION,
        le=1,
        description="hardware FLOPs utilization: model and recomputed FLOP/s / peak (PaLM App. B)",
    )
    tflops_per_gpu: float | None = Field(
        None,
        ge=MIN_TFLOPS,
        le=MAX_TFLOPS,
        description="achieved 10^12 FLOP/s per GPU counting recomputation, as Megatron-LM reports it",
    )
    global_batch: Size | None = Field(
        None, description="sequences per optimizer step; default: one micro-batch per data-parallel replica"
    )
    pp_first_layers: Size | None = Field(
        None, description="layers of the first pipeline stage (Megatron --decoder-first-pipeline-num-layers)"
    )
    pp_last_layers: Size | None = Field(
        None, description="layers of the last pipeline stage (Megatron --decoder-last-pipeline-num-layers)"
    )
    virtual_stages: Size = Field(1, description="v: model chunks per pipeline stage (interleaved 1F1B)")
    pp_layout: str | None = Field(
        None,
        max_length=1000,
        description="the layers of every pipeline chunk as Megatron-Core's --pipeline-model-parallel-layout says them: "
        "chunks split by '|', E the embedding, t a transformer layer, m a multi-token-prediction layer, L the loss, "
        "'(...)*n' and 'x*n' repeats (DeepSeek-V3 on 8 stages of 4 chunks: 'Et|(tt|)*30mL')",
    )
    cp: Size = Field(1, description="context-parallel size: each sequence split over cp GPUs")
    ep: Size = Field(1, description="expert-parallel size: each MoE layer's routed experts split over ep GPUs")
    etp: Size | None = Field(
        None,
        description="expert-tensor-parallel size: each routed expert's matrices split over etp GPUs, the experts' "
        "layout folded over tp x cp x data-parallel apart from the attention's (Megatron-Core's "
        "--expert-tensor-parallel-size, 'MoE parallel folding', arXiv 2504.14960); default: tp, as Megatron-Core "
        "defaults it",
    )
    images: Images = 0
    image_size: ImageSide = None
    audio_seconds: AudioSeconds = 0
    zero: Literal[0, 1, 2, 3] = Field(
        0, description="ZeRO stage: 1 shards optimizer states, 2 also gradients, 3 also weights"
    )
    tp: Size = Field(1, description="tensor-parallel size t")
    pp: Size = Field(1, description="pipeline-parallel size p")
    sequence_parallel: bool = Field(False, description="Megatron sequence parallelism (Korthikanti et al. 2022)")
    recompute: Recompute = Field("none", description="activation recomputation")
    optimizer: Optimizer = Field(
        "adamw", description="sgd means SGD with momentum; paged ones page their states to the host"
    )
    precision: Precision = Field(
        "bf16-mixed",
        description="bf16-mixed: bf16 compute, fp32 master weights; fp8: FP8 matmuls, the same states; bf16: pure "
        "bf16, no master copy; fp32",
    )
    optimizer_in_backward: bool = Field(
        False, description="each parameter is updated and its gradient freed during the backward pass"
    )
    offload: Offload = Field(
        "none", description="ZeRO-Offload: optimizer states (and master) to the host; params: the weights too"
    )
    flash: bool = Field(True, description="fused attention (FlashAttention): the T x T scores are never stored")
    flash_kernel: FlashKernel = Field(
        "fa2", description="the fused attention kernel: fa2 (FlashAttention-2, SDPA) or fa1 (flash-attn 1.x, Triton)"
    )
    fp8_attention: bool = Field(
        False, description="under fp8, attention runs in FP8 too (else BF16, as Transformer Engine and torchao do)"
    )
    kernels: Kernels = Field(
        "fused",
        description="fused: compiled or fused norms keep their 16-bit input; eager: unfused PyTorch norms; fused-norm: "
        "uncompiled, norms in a fused kernel (torchtitan's fused_rmsnorm)",
    )
    dp_overlap: bool = Field(
        True, description="data-parallel collectives in per-layer buckets overlapped with compute (DDP, FSDP)"
    )
    ep_overlap: bool = Field(
        False, description="expert all-to-alls overlapped with another micro-batch's compute (DualPipe, Megatron-Core)"
    )
    moe_node_limit: SizeOrZero = Field(
        0,
        description="node-limited routing: each token goes to experts on at most M nodes, sent once to each node "
        "and forwarded inside it over NVLink (DeepSeek-V3 with DeepEP: 'we limit each token to be dispatched to at "
        "most 4 nodes', report §3.2.2); 0: no limit, every copy sent to its expert's GPU (Megatron-Core's all-to-all)",
    )
    moe_capacity_factor: float = Field(
        0,
        ge=0,
        le=64,
        description="each expert's tokens padded to capacity = factor x k x tokens / E (Megatron-Core's "
        "--moe-expert-capacity-factor with --moe-pad-expert-input-to-capacity): the all-to-alls and expert GEMMs "
        "move and run that many rows; 0: dropless, the tokens routed",
    )
    moe_load_imbalance: float = Field(
        1.0,
        ge=1,
        le=64,
        description="routed tokens of the busiest expert-parallel rank over the mean (an assumption: 1, balanced, "
        "as DeepSeek's profile-data runs 'an absolutely balanced MoE routing strategy'); the step waits for it",
    )
    price_per_gpu_hour: float | None = Field(None, ge=0, le=1e6, description="price of one GPU-hour, for the cost line")
    grid_gco2_per_kwh: float | None = Field(
        None,
        gt=0,
        le=1e5,
        description="grams of CO2 the grid emits a kWh: the run's energy in CO2",
        exclude_if=lambda grams: grams is None,
    )
    lora_rank: Size | None = Field(None, description="r: fine-tune LoRA adapters of this rank on a frozen base")
    lora_targets: tuple[str, ...] = Field(("q", "k", "v", "o"), description="matrices LoRA adapts in each layer")
    qlora: bool = Field(False, description="store the frozen base in NF4 with double quantisation (QLoRA)")
    memory_convention: MemoryConvention = Field(
        "zero",
        description="model states as the ZeRO paper counts them, as DeepSpeed's estimators do, or as Megatron-LM "
        "holds them (fp32 main gradients)",
    )
    loss: Loss = Field(
        "chunked",
        description="chunked: the fp32 log-probabilities alone at the loss (4sbV/t); full: one fp32 cross-entropy over "
        "all the logits, 3 x that at the backward's peak (torchtitan); compiled: the upcast compiled with the loss, "
        "the bf16 logits alone (2sbV/t; torchtune under compile=True); fused: the head and the loss in one chunked "
        "kernel (Liger's FusedLinearCrossEntropy), its input gradient and one chunk's fp32 logits",
    )
    reshard_after_forward: ReshardAfterForward = Field(
        "default",
        description="ZeRO-3 / FSDP: free each layer's gathered weights after its forward (always), keep them until "
        "its backward (never), or default: never under pipeline parallelism, else always (torchtitan)",
    )
    accumulate_unsharded: bool = Field(
        False,
        description="ZeRO-3 / FSDP: the step's micro-batches accumulate their gradients unsharded, reduce-scattered "
        "at the last (FSDP's no_sync, Lightning's no_backward_sync); under pipeline parallelism always",
    )
    fsdp2: bool = Field(
        False,
        description="ZeRO-3 as PyTorch's FSDP2 (fully_shard) runs it: each all-gather copied out into the "
        "parameters and each reduce-scatter's fp32 input copied in from the gradients, on the GPU (torchtitan)",
    )
    fsdp_float8_all_gather: bool = Field(
        False,
        description="FP8 training under ZeRO-3 / FSDP2 with torchao's float8 all-gather (torchtitan's "
        "enable_fsdp_float8_all_gather): each FP8 linear weight cast on its shard and gathered in float8, 1 byte",
    )
    tp_keeps_gathered_input: bool = Field(
        False,
        description="tensor parallelism as PyTorch's DTensor runs it (torchtitan): each column-parallel linear keeps "
        "the all-gathered input it was given for its weight gradient, so the backward redoes no all-gather "
        "(Megatron-LM and Transformer Engine re-gather it)",
    )
    async_tp: bool = Field(
        False,
        description="tensor parallelism with PyTorch's async TP (torchtitan's enable_async_tensor_parallel: "
        "torch.compile's micro-pipelined all-gather-matmul and matmul-reduce-scatter): part of the TP "
        "collectives hidden under the GEMMs",
    )
    reduce_every_micro_batch: bool = Field(
        False,
        description="ZeRO-2 / ZeRO-3 as FSDP syncs by default: each micro-batch's gradients reduce-scattered after its "
        "backward and accumulated sharded, under pipeline parallelism too (Llama 3's FSDP; fairscale's no_sync: "
        "accumulation 'can be done without this context, avoiding the extra GPU memory overhead')",
    )
    dropout: bool = Field(
        True,
        description="the model trains with dropout: its masks are saved for the backward (Korthikanti et al.'s count); "
        "off for models without dropout (Llama's code has none)",
    )
    logit_metrics: int = Field(
        0,
        ge=0,
        description="cross-entropy metrics computed on each micro-batch's logits besides the loss, forward only "
        "(Composer's train metrics: llm-foundry's MPT computes LanguageCrossEntropy and LanguagePerplexity, 2)",
    )
    offload_activations: bool = Field(
        False,
        description="every layer's saved activations but the one in use move to host memory (torchtune's "
        "enable_activation_offloading); the loss's logits stay",
    )
    frozen_gradients: bool = Field(
        False,
        description="LoRA under ZeRO-3 / FSDP1 with each adapter in its frozen layer's unit (use_orig_params=True): "
        "the layers' gradients are kept as if they were not frozen",
    )
    cuda_context_gib: float = Field(
        0.5, ge=0, le=1024, description="memory the CUDA context takes, GiB (an assumption)"
    )
    allocator_reserve: float = Field(
        0.05, ge=0, le=0.99, description="fraction of the GPU the allocator holds beyond live tensors (an assumption)"
    )

    @model_validator(mode="after")
    def _check_layout(self) -> TrainingSetup:
        if self.qlora and self.lora_rank is None:
            raise ValueError("qlora needs a lora rank (--lora R)")
        # A framework's conventions about a layout the run does not use (FSDP2's copies without ZeRO-3, DTensor's
        # gathered inputs without sequence parallelism) say nothing about it: the costs read them only where they
        # apply (tfcost.costs.training.uses_fsdp2 and its neighbours), so they are not refused here.
        if self.accumulate_unsharded and self.reduce_every_micro_batch:
            raise ValueError("--accumulate-unsharded and reduce_every_micro_batch contradict each other: choose one")
        if self.gpus % (self.tp * self.pp * self.cp):
            raise ValueError(
                f"gpus ({self.gpus}) is not a multiple of tp x pp x cp ({self.tp} x {self.pp} x {self.cp}): "
                "every data-parallel replica needs tp x pp x cp GPUs"
            )
        given = [name for name in ("mfu", "hfu", "tflops_per_gpu") if getattr(self, name) is not None]
        if len(given) > 1:
            raise ValueError(f"give at most one of mfu, hfu and tflops_per_gpu, not {' and '.join(given)}")
        return self

    @property
    def data_parallel(self) -> int:
        """N_d: model replicas, each spread over tp x pp x cp GPUs."""
        return self.gpus // (self.tp * self.pp * self.cp)

    @property
    def expert_tp(self) -> int:
        """The routed experts' tensor-parallel size: etp, else tp (Megatron-Core's parallel_state: "if
        expert_tensor_parallel_size is None: expert_tensor_parallel_size = tensor_model_parallel_size")."""
        return self.etp or self.tp

    @property
    def expert_data_parallel(self) -> int:
        """The routed experts' data-parallel size, what their gradients are reduced and ZeRO shards them over:
        gpus / (etp x ep x pp) (Megatron-Core's parallel_state: "expert_data_parallel_size = world_size //
        expert_tensor_model_pipeline_parallel_size")."""
        return max(1, self.gpus // (self.expert_tp * self.ep * self.pp))


WeightsDtype = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4"]
# How a serving engine sizes its KV-cache pool (tfcost.costs.engine_memory.kv_pool_bytes): vLLM, TensorRT-LLM, SGLang.
KvPool = Literal["vllm", "trtllm", "sglang"]
# Which vLLM profile run sizes the activation peak (tfcost.costs.engine_memory.vllm_profile_activation_bytes): V0's
# (2023-24), V1's of Jan 2025 (logits of every token, no sampler), V1's with the sampler's dummy run (from Feb 2025).
VllmProfile = Literal["v0", "v1", "v1-sampler"]


class ServingSetup(Frozen):
    """How a model is served: tensor parallel over `gpus`, weight and KV dtypes, the batch and its lengths."""

    gpus: Size = Field(1, description="GPUs, tensor parallel (each holds 1/gpus of every layer)")
    pp: Size = Field(
        1,
        description="pipeline stages, each on its own gpus (vLLM's --pipeline-parallel-size)",
        exclude_if=lambda p: p == 1,
    )
    ep: Size = Field(
        1,
        description="expert-parallel GPUs (vLLM's --enable-expert-parallel: tp x dp, ep / gpus attention data-parallel "
        "ranks); 1: experts split by tensor parallelism",
        exclude_if=lambda e: e == 1,
    )
    weights_dtype: WeightsDtype | None = Field(
        None, description="storage dtype of the weights; null: as the checkpoint stores them (quantization), else bf16"
    )
    kv_dtype: Dtype = Field("bf16", description="storage dtype of the KV cache")
    batch: Size = Field(1, description="B: sequences decoded together")
    prompt: Size = Field(2048, description="P: prompt tokens per sequence")
    generate: Size = Field(512, description="G: generated tokens per sequence")
    reserve: float = Field(0.1, ge=0, le=0.99, description="fraction of GPU memory kept free")
    compute_efficiency: float = Field(0.7, ge=MIN_UTILIZATION, le=1, description="fraction of the peak FLOP/s reached")
    memory_efficiency: float = Field(
        0.9, ge=MIN_UTILIZATION, le=1, description="fraction of the peak bandwidth reached"
    )
    group_size: Size = Field(128, description="weights per quantization scale (int4, fp4)")
    kv_block: Size = Field(16, description="tokens per KV-cache block (vLLM's PagedAttention default)")
    fp8_attention: bool = Field(
        False, description="with FP8 compute, attention runs in FP8 too (else BF16, the engines' default kernels)"
    )
    gqa_decode: Literal["shared", "per-query-head"] = Field(
        "shared",
        description="how decode attention reads a key-value head several query heads share: once (FlashAttention, "
        "FlashInfer, TensorRT-LLM's XQA) or once per query head (TensorRT-LLM's masked MHA before v0.8)",
        exclude_if=lambda reads: reads == "shared",
    )
    trt_session: bool = Field(
        False,
        description="time the prefill as TensorRT-LLM's GptSession runs its context step (v0.5-v0.8, "
        "gptSessionBenchmark): new shapes on a TensorRT context, no CUDA graph, a fixed host time a layer",
        exclude_if=lambda session: not session,
    )
    nccl_record_stream: bool = Field(
        False,
        description="the profile run holds every all-reduced activation until it ends (PyTorch's NCCL "
        "record_stream, vLLM of late 2023 with tensor parallelism: vllm#2248)",
        exclude_if=lambda held: not held,
    )
    kv_pool: KvPool = Field(
        "vllm",
        description="how the engine sizes its KV-cache pool from the fraction 1 - reserve: vLLM's "
        "gpu_memory_utilization, TensorRT-LLM's free_gpu_memory_fraction, SGLang's mem_fraction_static",
        exclude_if=lambda pool: pool == "vllm",
    )
    vllm_profile: VllmProfile = Field(
        "v0",
        description="the vLLM profile run whose activation peak is taken from the budget: v0 (2023-24: the forward "
        "plus fp32 logits of max_num_seqs rows), v1 (Jan 2025: the forward, then bf16 logits of every token), "
        "v1-sampler (Feb 2025 on: the forward, then the sampler's dummy run over max_num_seqs rows)",
        exclude_if=lambda profile: profile == "v0",
    )
    max_num_seqs: Size = Field(
        256,
        description="vLLM's max_num_seqs: the dummy requests of its profile run, one logits row each (256 by "
        "default; V1 of mid-2025 takes 1024 on cards of 70 GiB and more)",
        exclude_if=lambda seqs: seqs == 256,
    )
    large_card_max_num_seqs: Size | None = Field(
        None,
        description="vLLM's max_num_seqs on a card of 70 GiB or more that is not an A100, where its release "
        "defaults larger there (1024 from April 2025: vllm#16158, then arg_utils.py's 'device_memory >= 70 * "
        "GiB_bytes'); null: max_num_seqs on every card",
        exclude_if=lambda seqs: seqs is None,
    )
    images: Images = 0
    image_size: ImageSide = None
    audio_seconds: AudioSeconds = 0
    # The engine's scheduler under load (issue 39): conventions a framework file sets, not the user's setup.
    max_num_batched_tokens: Size = Field(
        8192,
        description="tokens one step may carry, prefill chunks and decodes together (vLLM's max_num_batched_tokens: "
        "vllm/engine/arg_utils.py get_batch_defaults, 'For GPUs like H100 and MI300x, use larger default values', "
        "UsageContext.OPENAI_API_SERVER: 8192; SGLang's chunked_prefill_size and TensorRT-LLM's max_num_tokens are "
        "the same budget, set by their framework files)",
        exclude_if=lambda tokens: tokens == 8192,
    )
    chunked_prefill: bool = Field(
        True,
        description="long prompts are split into chunks that share a step with the running decodes (vLLM V1's "
        "scheduler, always on); off: a step is either whole prompts or decodes (vLLM V0 without "
        "--enable-chunked-prefill)",
        exclude_if=lambda chunked: chunked,
    )
    scheduler_steps: Size = Field(
        1,
        le=64,
        description="decode steps one scheduling pass runs on a fixed batch, admitting no new prompt inside it, its "
        "tokens streamed when the pass ends (vLLM V0's --num-scheduler-steps, 'Maximum number of forward steps per "
        "scheduler call', vllm/engine/arg_utils.py; streamed at the end as with its later "
        "--multi-step-stream-outputs False, 'If False, then multi-step will stream outputs at the end of all "
        "steps'); 1: every step",
        exclude_if=lambda steps: steps == 1,
    )
    # The load (issue 39): the published setup of a serving benchmark, the user's options.
    concurrency: Size | None = Field(
        None,
        description="N requests in flight, each sent when one finishes (benchmark_serving's --max-concurrency, "
        "genai-perf's --concurrency): a closed loop",
        exclude_if=lambda n: n is None,
    )
    rate: float | None = Field(
        None,
        gt=0,
        le=1e6,
        description="requests per second arriving as a Poisson process (benchmark_serving's --request-rate)",
        exclude_if=lambda r: r is None,
    )
    requests: Size | None = Field(
        None,
        le=100_000,
        description="requests the benchmark sends (benchmark_serving's --num-prompts); null: 8 x concurrency, at "
        "least 100 and at most 1,000, or 1,000 at a rate",
        exclude_if=lambda n: n is None,
    )
    length_spread: float = Field(
        0,
        ge=0,
        lt=1,
        description="r: each prompt and output length drawn uniformly from [L(1 - r), L(1 + r)] (benchmark_serving's "
        "--random-range-ratio); 0: every request P and G",
        exclude_if=lambda r: r == 0,
    )
    prefix_hit: float = Field(
        0,
        ge=0,
        lt=1,
        description="share of each prompt already in the prefix cache: neither prefilled nor written again",
        exclude_if=lambda f: f == 0,
    )
    speculative: Literal["mtp", "eagle"] | None = Field(
        None,
        description="speculative decoding: mtp (the model's own multi-token-prediction module, DeepSeek-V3) or eagle "
        "(an EAGLE-3 draft head); each decode step verifies K drafted tokens",
        exclude_if=lambda method: method is None,
    )
    draft_tokens: Size | None = Field(
        None,
        le=64,
        description="K: tokens drafted per step; null: the method's default",
        exclude_if=lambda k: k is None,
    )
    acceptance: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="a: the chance each drafted token is accepted, given the ones before it were; null: the "
        "method's published default",
        exclude_if=lambda a: a is None,
    )
    seed: int = Field(0, ge=0, description="seed of the arrivals, lengths and acceptances", exclude_if=lambda s: s == 0)
    price_per_gpu_hour: float | None = Field(
        None,
        gt=0,
        le=1e6,
        description="what one GPU costs an hour, in dollars: prices the tokens",
        exclude_if=lambda price: price is None,
    )

    disaggregated: str | None = Field(
        None,
        pattern=r"^[1-9][0-9]{0,3}:[1-9][0-9]{0,3}$",
        description="P:D: P replicas that only prefill and D that only decode, each of `gpus` GPUs, the KV cache "
        "sent between them (DistServe, Splitwise; vLLM's and SGLang's prefill-decode disaggregation); under --rate",
        exclude_if=lambda pools: pools is None,
    )
    grid_gco2_per_kwh: float | None = Field(
        None,
        gt=0,
        le=1e5,
        description="grams of CO2 the grid emits a kWh: prices the tokens' energy in CO2",
        exclude_if=lambda grams: grams is None,
    )

    @property
    def pools(self) -> tuple[int, int] | None:
        """(prefill replicas, decode replicas) of a disaggregated engine; None for one engine doing both."""
        if self.disaggregated is None:
            return None
        prefill, decode = self.disaggregated.split(":")
        return int(prefill), int(decode)

    @property
    def under_load(self) -> bool:
        """Whether a load was given (--concurrency or --rate): the scheduler's simulation runs."""
        return self.concurrency is not None or self.rate is not None

    @property
    def context(self) -> int:
        """Tokens per sequence once generation is done: P + G."""
        return self.prompt + self.generate


# A run is a model, a framework and a machine. A framework (a trainer or an engine, at a version) decides what
# the user of tfcost cannot be expected to know: how FSDP shards and syncs, what the loss keeps, how the engine sizes
# its KV pool. These are the setup fields a framework file (presets/frameworks/NAME.yaml) may set, each with its
# source; everything else in a setup is the published setup (model, GPUs, layout, batch, lengths, precision).
TRAINING_CONVENTIONS = frozenset(
    {
        "memory_convention",
        "loss",
        "kernels",
        "flash",
        "flash_kernel",
        "fp8_attention",
        "dropout",
        "logit_metrics",
        "dp_overlap",
        "ep_overlap",
        "moe_node_limit",
        "moe_capacity_factor",
        "moe_load_imbalance",
        "reduce_every_micro_batch",
        "accumulate_unsharded",
        "reshard_after_forward",
        "fsdp2",
        "fsdp_float8_all_gather",
        "tp_keeps_gathered_input",
        "async_tp",
        "frozen_gradients",
        "offload_activations",
        "optimizer_in_backward",
        "recompute",
        "sequence_parallel",
        "cuda_context_gib",
        "allocator_reserve",
    }
)
SERVING_CONVENTIONS = frozenset(
    {
        "reserve",
        "kv_block",
        "fp8_attention",
        "gqa_decode",
        "trt_session",
        "nccl_record_stream",
        "kv_pool",
        "vllm_profile",
        "max_num_seqs",
        "max_num_batched_tokens",
        "chunked_prefill",
        "scheduler_steps",
        "large_card_max_num_seqs",
    }
)
FrameworkKind = Literal["training", "serving"]
# A framework field's value as YAML writes it: a setup field's value (validated against that field when read); null
# for a field whose default is none (large_card_max_num_seqs).
FieldValue = bool | int | float | str | None


class FrameworkField(Frozen):
    """One convention of a framework: its value, where the framework's code or docs say so, and, when it is a
    setting the framework's user can change (a config key, a flag), that setting's own name."""

    value: FieldValue
    source: str = Field(min_length=20, description="URL at a commit or tag, and the quoted line that says so")
    switch: str | None = Field(
        None,
        description="the framework's own name for this setting when its users set it (torchtitan's "
        "enable_async_tensor_parallel); a published run that set it may say so with --framework-set",
    )


class FrameworkVersion(Frozen):
    """A release of a framework: what changed from the release before it (the first lists every field)."""

    version: str = Field(min_length=1, max_length=40, pattern=r"^[0-9A-Za-z][0-9A-Za-z.+_-]*$")
    released: str | None = Field(
        None, pattern=r"^\d{4}-\d{2}(-\d{2})?$", description="when it was released or committed"
    )
    source: str = Field(min_length=10, description="the code or docs read, at this version: URL with tag or commit")
    fields: dict[str, FrameworkField] = Field(default_factory=dict)


class Framework(Frozen):
    """A trainer or serving engine as tfcost prices it (presets/frameworks/NAME.yaml)."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$", max_length=40)
    title: str = Field(min_length=1, max_length=80)
    kind: FrameworkKind
    url: str = Field(min_length=10)
    about: str = Field(min_length=1, description="what it is and what its file covers")
    versions: list[FrameworkVersion] = Field(min_length=1, description="oldest first")

    @model_validator(mode="after")
    def _check_fields(self) -> Framework:
        allowed = TRAINING_CONVENTIONS if self.kind == "training" else SERVING_CONVENTIONS
        seen: set[str] = set()
        for release in self.versions:
            unknown = sorted(set(release.fields) - allowed)
            if unknown:
                raise ValueError(
                    f"version {release.version}: {', '.join(unknown)} is not a {self.kind} convention "
                    f"(known: {', '.join(sorted(allowed))})"
                )
            if release.version in seen:
                raise ValueError(f"version {release.version} is listed twice")
            seen.add(release.version)
        return self


class FrameworkUsed(Frozen):
    """The framework a run was priced under, at one version, with every convention it set and where it comes from:
    the framework file's fields, then the user's --framework-set overrides (their source says so). With no
    --framework, name is null and `fields` lists tfcost's own defaults, the conventions assumed."""

    name: str | None = Field(description="the framework file's name; null: none was given, tfcost's defaults")
    title: str
    version: str | None = None
    source: str | None = Field(None, description="the framework's code or docs read, at that version")
    fields: dict[str, FrameworkField] = Field(default_factory=dict)
    overridden: tuple[str, ...] = Field((), description="fields set by --framework-set")


class Interval(Frozen):
    """The range the validation suite measured around one predicted figure: the 10th to 90th percentile of what the
    published runs of its category measured against what tfcost predicted for them (presets/validation-errors.json,
    written by benchmarks/validate.py --write), applied to this prediction."""

    category: str = Field(description="the validation category whose runs give the range")
    framework: str | None = Field(None, description="the framework whose own runs give it, where it has enough")
    runs: int = Field(description="published runs compared (both halves)")
    held_out_runs: int = Field(description="of them, held out (never fitted)")
    geo_mean_error: float = Field(description="their geometric-mean error")
    low_factor: float = Field(description="what was measured, at the 10th percentile, per unit predicted")
    high_factor: float = Field(description="the same at the 90th percentile")
    low: float | None = Field(None, description="the predicted figure times low_factor")
    high: float | None = Field(None, description="the predicted figure times high_factor")


# llama.cpp's KV cache types (--cache-type-k / --cache-type-v): ggml types, block-quantized but f16 and f32
LocalKvType = Literal["f16", "bf16", "f32", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl"]


class LocalSetup(Frozen):
    """How a model runs on one's own machine under llama.cpp (and ollama and LM Studio on it): the GGUF file type,
    the KV cache's type, the context, the GPUs and the host's memory (`tfcost fit`)."""

    quant: str = Field("Q4_K_M", description="llama.cpp file type (llama-quantize's name): Q4_K_M, Q8_0, IQ4_XS, ...")
    kv_dtype: LocalKvType = Field("f16", description="KV cache type of keys and values (-ctk / -ctv)")
    ctx: Size | None = Field(None, description="context asked for (-c); null: the largest that fits, as --fit does")
    gpus: Size = Field(1, description="GPUs, layers split across them (llama.cpp's default --split-mode layer)")
    gpu_layers: SizeOrZero | None = Field(None, description="layers on the GPUs (-ngl); null: as many as fit")
    ram_gib: float | None = Field(
        None, gt=0, le=1e6, description="host memory, GiB (a unified-memory machine: its memory); null: enough"
    )
    ram_bandwidth_gb_per_s: float = Field(
        89.6, gt=0, le=1e5, description="host memory bandwidth, 10^9 B/s (default: two channels of DDR5-5600)"
    )
    ubatch: Size = Field(512, description="physical batch (-ub): llama.cpp's default 512")
    flash_attn: bool = Field(True, description="flash attention (-fa; llama.cpp's 'auto' turns it on for CUDA, Metal)")
    prompt: Size = Field(512, description="prompt tokens timed (llama-bench's pp512)")
    depth: SizeOrZero = Field(0, description="tokens already in the cache when timing (llama-bench's -d)")
    memory_efficiency: float = Field(0.9, ge=MIN_UTILIZATION, le=1, description="fraction of peak bandwidth reached")
    compute_efficiency: float = Field(0.7, ge=MIN_UTILIZATION, le=1, description="fraction of peak FLOP/s reached")
