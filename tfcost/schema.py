"""Pydantic shapes: a model's architecture and a workload. Pure data, validated on the way in.

Every model is frozen and refuses unknown keys, so a typo in a preset (`n_head` for `n_heads`) is an error
naming the key rather than a silently ignored field.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, model_validator

from tfcost.units import Dtype


class Frozen(BaseModel):
    """Base of every schema: immutable, unknown keys refused, no silent str->int coercion."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


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


class ModelShape(Frozen):
    """The architecture of a decoder-only transformer, as far as its costs depend on it.

    Sizes follow the lesson's notation: d = d_model, L = n_layers, H = n_heads, Q = head_dim, F = d_ff, V = vocab.
    """

    name: str = Field(description="short name, e.g. gpt2-small")
    source: str | None = Field(None, description="where the shape and published count come from")
    published_params: PositiveInt | None = Field(
        None, description="the published parameter count this shape must reproduce exactly"
    )

    vocab_size: PositiveInt = Field(description="V: rows of the token embedding")
    d_model: PositiveInt = Field(description="d: width of the residual stream")
    n_layers: PositiveInt = Field(description="L: transformer blocks")
    n_heads: PositiveInt = Field(description="H: query heads")
    # n_kv_heads and head_dim may be left out of a preset: the "before" validator fills them in.
    n_kv_heads: PositiveInt = Field(description="key-value heads: H for MHA, 1 for MQA, between for GQA (default H)")
    head_dim: PositiveInt = Field(description="Q: width of one head (default d_model / n_heads)")
    d_ff: PositiveInt = Field(description="F: hidden width of the feed-forward block")
    mlp: Literal["plain", "gated"] = Field(
        description="plain: 2 matrices d->F->d with GELU; gated: 3 matrices (gate, up, down), SwiGLU/GeGLU"
    )
    norm: Literal["layernorm", "rmsnorm"] = Field(description="layernorm: scale and shift; rmsnorm: scale only")
    bias: Biases = Field(default_factory=Biases, description="which linear layers carry biases")
    tied_embeddings: bool = Field(description="true when the output head reuses the token embedding matrix")
    position: Literal["learned", "sinusoidal", "rotary", "alibi", "none"] = Field(
        description="position scheme; only 'learned' has parameters (a max_seq_len x d_model table)"
    )
    max_seq_len: PositiveInt = Field(description="maximum context the model was built for")

    @model_validator(mode="before")
    @classmethod
    def _fill_head_defaults(cls, data: object) -> object:
        # Resolve the two derived sizes once, here, so the core never has to ask "was it given?".
        if not isinstance(data, dict):
            return data
        data = dict(data)
        heads, width = data.get("n_heads"), data.get("d_model")
        if data.get("n_kv_heads") is None and isinstance(heads, int):
            data["n_kv_heads"] = heads
        if data.get("head_dim") is None and isinstance(heads, int) and isinstance(width, int) and heads > 0:
            if width % heads:
                raise ValueError(f"n_heads ({heads}) must divide d_model ({width}) when head_dim is not given")
            data["head_dim"] = width // heads
        return data

    @model_validator(mode="after")
    def _check_groups(self) -> ModelShape:
        check_kv_groups(self.n_heads, self.n_kv_heads, "n_heads", "n_kv_heads")
        return self


class Workload(Frozen):
    """What the model is asked to do: T tokens per sequence, B sequences, stored at a dtype."""

    seq_len: PositiveInt = Field(1024, description="T: tokens per sequence")
    batch: PositiveInt = Field(1, description="B: sequences")
    dtype: Dtype = Field("bf16", description="storage dtype of the KV cache and score matrix")
    causal: bool = Field(False, description="count only the T(T+1)/2 unmasked score entries in FLOPs")


class AttentionShape(Frozen):
    """One attention call as `tfcost measure` times it: H query heads, K key-value heads, head width Q."""

    heads: PositiveInt = Field(description="H: query heads")
    kv_heads: PositiveInt = Field(description="K: key-value heads (H for MHA, 1 for MQA)")
    head_dim: PositiveInt = Field(description="Q: width of one head")

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
    notes: str | None = Field(None, description="caveats: conflicting sources, unverified figures")


class TrainingSetup(Frozen):
    """How a model is trained: data, batch, GPUs, parallel layout, optimizer and precision.

    Layout (Megatron-LM and ZeRO conventions): `gpus` = data-parallel size x tp x pp.
    """

    tokens: PositiveInt = Field(description="D: training tokens (the CLI's default: Chinchilla-optimal, 20 N)")
    seq_len: PositiveInt = Field(description="T (Korthikanti's s): tokens per sequence")
    micro_batch: PositiveInt = Field(1, description="b: sequences per GPU per forward/backward pass")
    gpus: PositiveInt = Field(1, description="GPUs in the run")
    mfu: float = Field(0.4, gt=0, le=1, description="model FLOPs utilization (PaLM App. B): model FLOP/s / peak")
    zero: Literal[0, 1, 2, 3] = Field(
        0, description="ZeRO stage: 1 shards optimizer states, 2 also gradients, 3 also weights"
    )
    tp: PositiveInt = Field(1, description="tensor-parallel size t")
    pp: PositiveInt = Field(1, description="pipeline-parallel size p")
    sequence_parallel: bool = Field(False, description="Megatron sequence parallelism (Korthikanti et al. 2022)")
    recompute: Literal["none", "selective", "full"] = Field("none", description="activation recomputation")
    optimizer: Literal["adamw", "adamw-8bit", "sgd"] = Field("adamw", description="sgd means SGD with momentum")
    precision: Literal["bf16-mixed", "fp32"] = Field("bf16-mixed", description="bf16 compute with fp32 master weights")
    flash: bool = Field(True, description="fused attention (FlashAttention): the T x T scores are never stored")
    price_per_gpu_hour: float | None = Field(None, ge=0, description="price of one GPU-hour, for the cost line")

    @model_validator(mode="after")
    def _check_layout(self) -> TrainingSetup:
        if self.gpus % (self.tp * self.pp):
            raise ValueError(
                f"gpus ({self.gpus}) is not a multiple of tp x pp ({self.tp} x {self.pp}): "
                "every data-parallel replica needs tp x pp GPUs"
            )
        return self

    @property
    def data_parallel(self) -> int:
        """N_d: model replicas, each spread over tp x pp GPUs."""
        return self.gpus // (self.tp * self.pp)


WeightsDtype = Literal["bf16", "fp16", "fp8", "int8", "int4"]


class ServingSetup(Frozen):
    """How a model is served: tensor parallel over `gpus`, weight and KV dtypes, the batch and its lengths."""

    gpus: PositiveInt = Field(1, description="GPUs, tensor parallel (each holds 1/gpus of every layer)")
    weights_dtype: WeightsDtype = Field("bf16", description="storage dtype of the weights")
    kv_dtype: Dtype = Field("bf16", description="storage dtype of the KV cache")
    batch: PositiveInt = Field(1, description="B: sequences decoded together")
    prompt: PositiveInt = Field(2048, description="P: prompt tokens per sequence")
    generate: PositiveInt = Field(512, description="G: generated tokens per sequence")
    reserve: float = Field(0.1, ge=0, lt=1, description="fraction of GPU memory kept free")
    compute_efficiency: float = Field(0.7, gt=0, le=1, description="fraction of the peak FLOP/s reached")
    memory_efficiency: float = Field(0.9, gt=0, le=1, description="fraction of the peak bandwidth reached")

    @property
    def context(self) -> int:
        """Tokens per sequence once generation is done: P + G."""
        return self.prompt + self.generate
