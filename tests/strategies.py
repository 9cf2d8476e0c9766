"""Hypothesis strategies shared by the property tests: model shapes valid by construction, and any YAML value."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import strategies as st

from tfcost.schema import ModelShape
from tfcost.units import MAX_SIZE

# TFCOST_PROFILE=thorough (CI's second run) tries every example each property test asks for; the default run, a
# tenth, so that it stays quick as families are added.
THOROUGH = os.environ.get("TFCOST_PROFILE") == "thorough"


def examples(count: int) -> int:
    """How many examples a property test tries under the current profile."""
    return count if THOROUGH else max(20, count // 10)


# Hypothesis favours small numbers and the ends of a range, so this reaches both 1 and the cap.
sizes = st.integers(min_value=1, max_value=MAX_SIZE)
seq_lens = st.integers(min_value=1, max_value=10**6) | st.integers(min_value=1, max_value=MAX_SIZE)
batches = st.integers(min_value=1, max_value=10**4) | st.integers(min_value=1, max_value=MAX_SIZE)
dtypes = st.sampled_from(["fp32", "fp16", "bf16", "fp8", "int8"])


@st.composite
def shape_fields(draw: st.DrawFn) -> dict[str, Any]:
    """The keys of a valid preset file: K key-value heads each serving a group of G query heads, so K divides H;
    head_dim given (then d_model is free) or left to default to d_model / H (then d_model is a multiple of H)."""
    kv_heads = draw(st.integers(1, 64))
    heads = kv_heads * draw(st.integers(1, 16))
    fields: dict[str, Any] = {
        "vocab_size": draw(sizes),
        "n_layers": draw(sizes),
        "n_heads": heads,
        "d_ff": draw(sizes),
        "mlp": draw(st.sampled_from(["plain", "gated"])),
        "norm": draw(st.sampled_from(["layernorm", "rmsnorm"])),
        "bias": {"qkv": draw(st.booleans()), "attn_out": draw(st.booleans()), "mlp": draw(st.booleans())},
        "tied_embeddings": draw(st.booleans()),
        "position": draw(st.sampled_from(["learned", "sinusoidal", "rotary", "alibi", "none"])),
        "max_seq_len": draw(sizes),
    }
    if draw(st.booleans()):
        fields["d_model"], fields["head_dim"] = draw(sizes), draw(sizes)
    else:
        fields["d_model"] = heads * draw(st.integers(1, MAX_SIZE // heads))
    if kv_heads != heads or draw(st.booleans()):
        fields["n_kv_heads"] = kv_heads
    return fields


@st.composite
def any_shape_fields(draw: st.DrawFn) -> dict[str, Any]:
    """A valid preset of any architecture the schema knows: a plain decoder, or one with mixture-of-experts,
    latent attention (MLA) or sliding windows, or an encoder or encoder-decoder stack."""
    fields = draw(shape_fields())
    kind = draw(st.sampled_from(["plain", "moe", "mla", "window", "encoder", "encoder-decoder"]))
    listable = min(fields["n_layers"], 64) - 1  # listed layer indices stay few
    if kind == "moe":
        experts = draw(st.integers(1, 256))
        fields["moe"] = {
            "n_experts": experts,
            "experts_per_token": draw(st.integers(1, experts)),
            "expert_d_ff": draw(sizes),
            "n_shared_experts": draw(st.integers(0, 2)),
            "dense_layers": draw(st.lists(st.integers(0, listable), unique=True, max_size=4)),
        }
    elif kind == "mla":
        nope, rope = draw(st.integers(1, 256)), draw(st.integers(1, 128))
        fields |= {"position": "rotary", "n_kv_heads": fields["n_heads"], "head_dim": nope + rope}
        fields["mla"] = {
            "q_lora_rank": draw(st.none() | sizes),
            "kv_lora_rank": draw(sizes),
            "qk_nope_head_dim": nope,
            "qk_rope_head_dim": rope,
            "v_head_dim": draw(sizes),
        }
    elif kind == "window":
        fields["sliding_window"] = draw(sizes)
        if draw(st.booleans()):
            fields["sliding_layers"] = draw(st.lists(st.integers(0, listable), unique=True, min_size=1, max_size=4))
    elif kind == "encoder":
        fields["architecture"] = "encoder"
    elif kind == "encoder-decoder":
        fields |= {"architecture": "encoder-decoder", "n_decoder_layers": draw(sizes)}
    return fields


def validated(fields: dict[str, Any]) -> ModelShape:
    return ModelShape.model_validate({"name": "generated", **fields})


any_shapes = any_shape_fields().map(validated)

# Anything YAML can hold: what a hand-edited preset may contain in place of a number or a name.
yaml_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
yaml_values = st.recursive(
    yaml_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
