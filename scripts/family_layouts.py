"""Write the exact parameter layout of each model_type's default config, built by transformers on meta.

    /work/venv/bin/python scripts/family_layouts.py --out docs/family-layouts.md TYPE...

For each type: the config fields that shape the cost (generic fields dropped), then the parameters outside the
decoder layers, then each distinct decoder-layer layout (parameter names relative to the layer, with shapes)
and which layer indices have it. A reader and the core's operation tables can be written against this.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from family_truth import PATCHES, patched
from truth_harness import build, default_config, text_config

GENERIC = {
    "architectures",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "chunk_size_feed_forward",
    "dtype",
    "torch_dtype",
    "id2label",
    "label2id",
    "initializer_range",
    "is_encoder_decoder",
    "output_attentions",
    "output_hidden_states",
    "problem_type",
    "return_dict",
    "transformers_version",
    "_name_or_path",
    "use_cache",
    "attention_dropout",
    "hidden_dropout",
    "output_router_logits",
    "router_aux_loss_coef",
    "tokenizer_class",
    "router_jitter_noise",
    "rms_norm_eps",
    "layer_norm_eps",
    "layer_norm_epsilon",
    "norm_eps",
    "tf_legacy_loss",
    "use_bfloat16",
    "add_cross_attention",
    "tie_encoder_decoder",
    "cross_attention_hidden_size",
    "sep_token_id",
    "decoder_start_token_id",
    "finetuning_task",
    "prefix",
    "task_specific_params",
    "_attn_implementation_autoset",
    "base_model_tp_plan",
    "base_model_pp_plan",
    "base_model_ep_plan",
}


def short(value: Any) -> str:
    if isinstance(value, list) and len(value) > 8:
        runs: list[str] = []
        last, count = object(), 0
        for item in [*value, object()]:
            if item == last:
                count += 1
                continue
            if count:
                runs.append(f"{last!r}x{count}" if count > 1 else repr(last))
            last, count = item, 1
        return "[" + ", ".join(runs) + "]" if len(runs) <= 12 else f"[{len(value)} items: {', '.join(runs[:12])}, ...]"
    return repr(value)


def layers_of(model: Any) -> tuple[str, Any]:
    for name, module in model.named_modules():
        if name.endswith("layers") and hasattr(module, "__len__") and len(module) > 0:
            return name, module
    return "", []


def describe(label: str, config: Any) -> str:
    lines = [f"### {label}", ""]
    inner = text_config(config)
    fields = {k: v for k, v in inner.to_dict().items() if k not in GENERIC and not isinstance(v, dict)}
    nested = {k: v for k, v in inner.to_dict().items() if isinstance(v, dict) and k not in GENERIC}
    listed = "; ".join(f"`{k}`={short(v)}" for k, v in sorted(fields.items()))
    lines.append("Config fields (text config, defaults): " + listed)
    for key, value in nested.items():
        lines.append(f"`{key}`: {short(value)}")
    model = build(config)
    prefix, layers = layers_of(model)
    lines.append("")
    lines.append(f"Built: `{type(model).__name__}`; decoder layers at `{prefix}` ({len(layers)})")
    outside = [(n, tuple(p.shape)) for n, p in model.named_parameters() if not n.startswith(prefix + ".")]
    tied = "tied" if getattr(inner, "tie_word_embeddings", False) else "untied"
    lines.append(f"Outside the layers ({tied} head): " + ", ".join(f"`{n}` {list(s)}" for n, s in outside))
    groups: dict[tuple, list[int]] = {}
    for index, layer in enumerate(layers):
        signature = tuple((n, tuple(p.shape)) for n, p in layer.named_parameters())
        groups.setdefault(signature, []).append(index)
    for signature, indices in groups.items():
        total = sum(_numel(s) for _, s in signature)
        where = _ranges(indices)
        lines.append(f"- layers {where} ({len(indices)} layers, {total:,} params each):")
        lines.append("  " + ", ".join(f"`{n}` {list(s)}" for n, s in signature))
    lines.append("")
    return "\n".join(lines)


def _numel(shape: tuple) -> int:
    out = 1
    for d in shape:
        out *= d
    return out


def _ranges(indices: list[int]) -> str:
    if len(indices) > 2 and all(b - a == indices[1] - indices[0] for a, b in itertools.pairwise(indices)):
        step = indices[1] - indices[0]
        return f"{indices[0]}..{indices[-1]}" + (f" step {step}" if step > 1 else "")
    return ",".join(map(str, indices)) if len(indices) <= 16 else ",".join(map(str, indices[:16])) + ",..."


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("types", nargs="+")
    parser.add_argument("--out", default="docs/family-layouts.md")
    args = parser.parse_args()
    parts = [
        "# Parameter layouts of the default configs (transformers 5.24, meta device)",
        "",
        "Generated by `scripts/family_layouts.py`. Per type: the cost-relevant fields of the default config, the",
        "parameters outside the decoder layers, and each distinct decoder-layer layout with the layers that have it.",
        "Types whose default config transformers cannot build are built with the patch named in",
        "`scripts/family_truth.py` (PATCHES).",
        "",
    ]
    for model_type in args.types:
        try:
            config = patched(model_type) if model_type in PATCHES else default_config(model_type)
            label = f"`{model_type}`" + (" (patched default)" if model_type in PATCHES else "")
            parts.append(describe(label, config))
        except Exception as error:  # noqa: BLE001 - the doc says which types did not build
            parts.append(f"### `{model_type}`\n\nDoes not build: {type(error).__name__}: {str(error)[:200]}\n")
        print(model_type, flush=True)
    Path(args.out).write_text("\n".join(parts))


if __name__ == "__main__":
    main()
