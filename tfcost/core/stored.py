"""The bytes a checkpoint really stores, from its files' headers (tfcost.readers.safetensors): every tensor's bytes by
dtype and by part of the model, beside the parameters tfcost's op tables count for the same parts, and the tensors
they do not account for (a multi-token-prediction module, a vision tower, anything unnamed).

A tensor's part comes from its name, in Hugging Face's spelling (`model.layers.3.self_attn.q_proj.weight`) or
llama.cpp's (`blk.3.attn_q.weight`); the op table's from its breakdown keys (tfcost.core.params). Quantization
scales (`weight_scale_inv`, `*_scales`, GGUF's blocks carry theirs inside) are bytes of their part but no
parameters, and packed integer payloads (mxfp4 `_blocks`, GPTQ `qweight`) hold several weights per element, so the
parameter comparison is made only where a part stores one element per weight (floats, and GGUF's types, whose
shapes count weights).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from tfcost.core import params
from tfcost.readers.safetensors import StoredTensor
from tfcost.schema import ModelShape

PARTS = (
    "embedding", "attention", "mlp", "experts", "shared_experts", "router", "norms", "output_head", "mtp", "towers",
    "other",
)  # fmt: skip
# Parts outside the op tables: the multi-token-prediction module (outside the total, tfcost.core.params.mtp_params),
# the towers of a multimodal model, and tensors no rule places.
UNACCOUNTED = ("mtp", "towers", "other")
TOWER_WORDS = frozenset(
    {"vision_model", "vision_tower", "visual", "vision", "multi_modal_projector", "mm_projector", "audio_tower",
     "audio_model", "vision_encoder", "v", "mm", "a"}
)  # fmt: skip
SCALE_NAME = re.compile(r"(scale|scales|scale_inv|_zeros|qzeros|g_idx|_amax)$")
EMBEDDING_WORDS = frozenset({"embed_tokens", "wte", "wpe", "word_embeddings", "position_embeddings", "token_embd"})
# safetensors' integer dtypes: a packed payload (GPTQ's qweight, mxfp4's _blocks) holds several weights per
# element. Every other dtype, GGUF's block-quantized types included, has one element per weight in its shape.
PACKED_DTYPES = frozenset({"BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64"})


def tensor_part(name: str, n_layers: int | None, n_experts: int | None = None) -> str:
    """The part of the model a stored tensor belongs to (PARTS), from its name. A layer past the model's last is a
    multi-token-prediction layer; an expert past its routed experts is outside the op tables ("other")."""
    words = [word for word in name.split(".") if word]
    if not words:
        return "other"
    expert = next((words[i + 1] for i, word in enumerate(words[:-1]) if word == "experts"), None)
    if expert is not None and expert.isdigit() and n_experts is not None and int(expert) >= n_experts:
        return "other"  # transformers' LongCat-Flash writes gate/up rows for its zero experts (docs/checkpoints.md)
    layers = [int(word) for word in words[:4] if word.isdigit()]
    if words[0] in TOWER_WORDS or any(word in TOWER_WORDS - {"v", "mm", "a"} for word in words):
        return "towers"
    if "mtp" in words or "nextn" in name or (layers and n_layers is not None and layers[0] >= n_layers):
        return "mtp"
    suffix = words[-1] in ("weight", "bias") or bool(SCALE_NAME.search(words[-1]))
    named = [word for word in (words[:-1] if suffix and len(words) > 1 else words) if not word.isdigit()]
    last = named[-1] if named else words[-1]  # the module's own name (LongCat's `input_layernorm.0`: the norm)
    if any(word in EMBEDDING_WORDS for word in words):
        return "embedding"
    if words[0] in ("lm_head", "embed_out", "output") or (len(words) <= 3 and "lm_head" in words):
        return "output_head" if "norm" not in words[0] else "norms"
    if "norm" in last or last.endswith(("layernorm", "_norm", "ln_1", "ln_2", "ln_f")):
        return "norms"
    if last in ("gate", "router", "e_score_correction_bias", "ffn_gate_inp", "exp_probs_b", "shared_expert_gate"):
        return "router"
    if any(word in ("shared_expert", "shared_experts") for word in words) or last.endswith("_shexp"):
        return "shared_experts"
    if any(word in ("experts", "block_sparse_moe") for word in words) or last.endswith("_exps"):
        return "experts"
    if any(word in ("self_attn", "attn", "attention") for word in words) or last.startswith("attn_"):
        return "attention"
    if any(word in ("mlp", "mlps", "feed_forward", "ffn") for word in words) or last.startswith("ffn_"):
        return "mlp"
    return "other"


def breakdown_part(key: str) -> str:
    """The part of a parameter_breakdown key, in tensor_part's terms."""
    if key.startswith("embedding/"):
        return "embedding"
    if key in ("output_head", "output_bias"):
        return "output_head"
    if "norm" in key:
        return "norms"
    if key.endswith(("/moe/router", "/moe/shared_gate")):
        return "router"
    if key.endswith("/moe/experts"):
        return "experts"
    if key.endswith("/moe/shared"):
        return "shared_experts"
    if "/attention/" in key or "/cross_attention/" in key:
        return "attention"
    if "/mlp/" in key:
        return "mlp"
    return "other"


@dataclass
class StoredBytes:
    """A checkpoint's stored tensors summed: bytes in all, by dtype and by part; by part also the weights'
    elements where every weight of the part is a float, and the op table's parameters; the tensors outside it."""

    total: int
    by_dtype: dict[str, int]
    by_part: dict[str, int]
    elements_by_part: dict[str, int]
    params_by_part: dict[str, int] = field(default_factory=dict)
    unaccounted: list[str] = field(default_factory=list)
    unaccounted_bytes: int = 0

    @property
    def served_bytes(self) -> int:
        """The bytes a server holds: every tensor but the multi-token-prediction module's, which vLLM and SGLang
        load only for speculative decoding."""
        return self.total - self.by_part.get("mtp", 0)


def stored_bytes(tensors: Sequence[StoredTensor], shape: ModelShape | None = None) -> StoredBytes:
    """Sum a checkpoint's stored tensors; with the model's shape, set the op table's parameters by part beside
    them. A tensor stored twice under one name in two shards counts twice: both copies are on disk and loaded."""
    n_layers = shape.n_layers if shape is not None else None
    n_experts = shape.moe.n_experts if shape is not None and shape.moe is not None else None
    by_dtype: dict[str, int] = {}
    by_part: dict[str, int] = {}
    elements: dict[str, int] = {}
    packed: set[str] = set()
    unaccounted: list[str] = []
    for tensor in tensors:
        part = tensor_part(tensor.name, n_layers, n_experts)
        by_dtype[tensor.dtype] = by_dtype.get(tensor.dtype, 0) + tensor.nbytes
        by_part[part] = by_part.get(part, 0) + tensor.nbytes
        if part in UNACCOUNTED:
            unaccounted.append(tensor.name)
        if SCALE_NAME.search(tensor.name.removesuffix(".weight")):
            continue
        if tensor.dtype in PACKED_DTYPES:
            packed.add(part)
        else:
            elements[part] = elements.get(part, 0) + tensor.elements
    for part in packed:  # a part with packed payloads has no one-element-per-weight count
        elements.pop(part, None)
    counted: dict[str, int] = {}
    if shape is not None:
        for key, count in params.parameter_breakdown(shape).items():
            part = breakdown_part(key)
            counted[part] = counted.get(part, 0) + count
    order = {part: index for index, part in enumerate(PARTS)}
    return StoredBytes(
        total=sum(by_dtype.values()),
        by_dtype=dict(sorted(by_dtype.items(), key=lambda item: -item[1])),
        by_part=dict(sorted(by_part.items(), key=lambda item: order[item[0]])),
        elements_by_part=dict(sorted(elements.items(), key=lambda item: order[item[0]])),
        params_by_part={part: count for part, count in sorted(counted.items(), key=lambda i: order[i[0]]) if count},
        unaccounted=unaccounted,
        unaccounted_bytes=sum(by_part.get(part, 0) for part in UNACCOUNTED),
    )
