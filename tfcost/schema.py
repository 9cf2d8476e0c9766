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
