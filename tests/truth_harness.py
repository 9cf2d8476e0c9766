"""Ground truth for any model_type: transformers 5.24 builds the model on the meta device and we measure it.

Used by scripts/family_truth.py (the table in docs/family-truth.md) and meant for the truth tests of the new
readers. What it measures, for one config:

- parameters: `sum(p.numel())` of the causal LM built from the config's text part (a multimodal wrapper is
  also built whole, so its vision tower and projector can be reported apart);
- forward FLOPs: FlopCounterMode over one forward pass of batch 1 at T tokens, without a cache (full T x T
  score matrices, whatever the mask: the analytic core's convention);
- cache bytes: every tensor held by the cache the model returns, at two lengths. Bytes that grow with T are
  the per-token cache (keys, values, latents, indexer keys); bytes that do not are the per-sequence state
  (conv and recurrent states of Mamba / Gated DeltaNet / short-conv layers). Both lengths stay below the
  usual windows, so a sliding layer counts as per-token here.

The model is built as the truth tests build it: bf16, eager attention (explicit matmuls that FlopCounterMode
sees) and `batched_mm` experts (each token through its k experts without data-dependent routing, which the
meta device cannot run; on CPU transformers would pick grouped_mm, whose kernel FlopCounterMode does not
count).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, PretrainedConfig, masking_utils
from transformers.models.auto.modeling_auto import (
    MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
    MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
)

# Without a mask and a cache, transformers looks at the values of position_ids for packed sequences, which the
# meta device cannot do. Ours are 0..T-1, one sequence: the answer is "not packed" (None), given here.
masking_utils.find_packed_sequence_indices = lambda position_ids: None

# auto_map points at remote code and quantization_config would build quantized layers; neither changes a count.
NOT_FOR_TRANSFORMERS = ("auto_map", "quantization_config")
T_LONG = 100  # not a power of two, so that a T for T^2 slip cannot hide
T_SHORT = 60


def config_from_dict(data: dict[str, Any]) -> PretrainedConfig:
    """A transformers config from a config.json dict, as `from_pretrained` would read it."""
    rest = {key: value for key, value in data.items() if key not in (*NOT_FOR_TRANSFORMERS, "model_type")}
    return AutoConfig.for_model(data["model_type"], **rest)


def default_config(model_type: str) -> PretrainedConfig:
    """What `AutoConfig.for_model(model_type)` gives: the config class's defaults."""
    return AutoConfig.for_model(model_type)


def saved_forms(model_type: str) -> dict[str, dict[str, Any]]:
    """The default config as a config.json would hold it, in the two forms transformers writes: "saved" (what
    `save_pretrained` writes: only what differs from the class defaults) and "full" (`to_dict()`: every field)."""
    config = default_config(model_type)
    return {"saved": config.to_diff_dict(), "full": config.to_dict()}


def text_config(config: PretrainedConfig) -> PretrainedConfig:
    """The language model's config: `text_config` of a multimodal wrapper, else the config itself."""
    inner = config.get_text_config(decoder=True)
    return inner if inner is not None else config


def build(config: PretrainedConfig, device: str = "meta", whole: bool = False) -> Any:
    """The causal LM of the config's text part (or, with whole=True, the wrapper as published), in bf16, with
    eager attention and batched_mm experts on the meta device (eager experts with real routing on CPU)."""
    kwargs: dict[str, Any] = {
        "attn_implementation": "eager",
        "dtype": torch.bfloat16,
        "experts_implementation": "batched_mm" if device == "meta" else "eager",
    }
    with torch.device(device):
        if whole:
            mapping = MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
            if config.model_type in mapping:
                from transformers import AutoModelForImageTextToText

                return AutoModelForImageTextToText.from_config(config, **kwargs).eval()
            return AutoModel.from_config(config, **kwargs).eval()
        inner = text_config(config)
        if inner.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and config.model_type in (
            MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
        ):
            inner = config
        return AutoModelForCausalLM.from_config(inner, **kwargs).eval()


def parameter_count(model: Any) -> int:
    return sum(p.numel() for p in model.parameters())


def inputs(model: Any, tokens: int, use_cache: bool, device: str = "meta") -> dict[str, Any]:
    ids = torch.zeros((1, tokens), dtype=torch.long, device=device)
    kwargs: dict[str, Any] = {"input_ids": ids, "use_cache": use_cache}
    accepted = inspect.signature(model.forward).parameters
    # Recurrent mixers test `torch.all(mask == 1)`, which the meta device cannot answer: give them no mask.
    if "attention_mask" in accepted and not getattr(model, "_truth_no_mask", False):
        # An explicit all-ones mask means "no padding" and spares transformers a data-dependent check that the
        # meta device cannot run.
        kwargs["attention_mask"] = torch.ones((1, tokens), dtype=torch.long, device=device)
    return kwargs


def run(model: Any, tokens: int, use_cache: bool, device: str = "meta") -> Any:
    """One forward pass at batch 1. Recurrent models that look at the mask's values get none (see inputs)."""
    try:
        return model(**inputs(model, tokens, use_cache, device))
    except RuntimeError as error:
        if "cannot be called on meta tensors" not in str(error) or getattr(model, "_truth_no_mask", False):
            raise
        model._truth_no_mask = True
        return model(**inputs(model, tokens, use_cache, device))


def forward_flops(model: Any, tokens: int = T_LONG, device: str = "meta") -> tuple[int, dict[str, int]]:
    """FlopCounterMode's total for one forward pass at batch 1, and its split by aten op."""
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        run(model, tokens, use_cache=False, device=device)
    by_op = {str(op): int(n) for op, n in counter.get_flop_counts().get("Global", {}).items()}
    return int(counter.get_total_flops()), by_op


def _tensors(value: Any, path: str, seen: set[int], out: dict[str, int]) -> None:
    if isinstance(value, torch.Tensor):
        if id(value) not in seen:
            seen.add(id(value))
            out[path] = out.get(path, 0) + value.numel() * value.element_size()
    elif isinstance(value, dict):
        for item in value.values():
            _tensors(item, path, seen, out)
    elif isinstance(value, list | tuple):
        for item in value:
            _tensors(item, path, seen, out)
    elif hasattr(value, "__dict__") and not isinstance(value, type | torch.nn.Module):
        for name, item in vars(value).items():
            _tensors(item, f"{path}.{name}" if path else name, seen, out)


def cache_tensors(cache: Any) -> dict[str, int]:
    """Bytes of every tensor a cache object holds, summed per attribute path with the layer index dropped
    (e.g. {"keys": ..., "values": ..., "conv_states": ..., "indexer_keys": ...})."""
    out: dict[str, int] = {}
    seen: set[int] = set()
    layers = getattr(cache, "layers", None)
    if layers is not None:
        for layer in layers:
            _tensors(layer, "", seen, out)
        rest = {k: v for k, v in vars(cache).items() if k != "layers"}
        _tensors(rest, "cache", seen, out)
    else:
        _tensors(cache, "", seen, out)
    return out


def cache_bytes(model: Any, tokens: int, device: str = "meta") -> dict[str, int]:
    with torch.no_grad():
        out = run(model, tokens, use_cache=True, device=device)
    cache = getattr(out, "past_key_values", None)
    if cache is None:
        cache = getattr(out, "cache_params", None)
    return {} if cache is None else cache_tensors(cache)


def held(name: str) -> bool:
    """Whether a cache attribute is model state (keys, values, latents, index keys, conv and recurrent states)
    rather than bookkeeping (`_sliding_window_tensor`, position ids, lengths)."""
    leaf = name.rsplit(".", 1)[-1]
    return not leaf.startswith("_") and "position" not in leaf and "length" not in leaf


@dataclass
class Truth:
    """What transformers says one config costs."""

    model_type: str
    text_model_type: str
    architecture: str
    params: int
    forward_flops: int  # at T_LONG, batch 1, no cache
    kv_bytes_per_token: int  # bf16; the part of the cache that grows with T (below every window)
    state_bytes: int  # bf16 (unless the model keeps states in float32); fixed per sequence
    cache_split: dict[str, tuple[int, int]] = field(default_factory=dict)  # attribute -> (per token, fixed)
    flops_by_op: dict[str, int] = field(default_factory=dict)
    wrapper_params: int | None = None  # the whole multimodal model, where the config is a wrapper
    notes: list[str] = field(default_factory=list)


def measure(config: PretrainedConfig, tokens: int = T_LONG, whole: bool = True) -> Truth:
    """Parameters, forward FLOPs and cache bytes of one config. A stage transformers cannot run on the meta
    device leaves its figure at -1 and says why in `notes`; the other stages still run."""
    model = build(config)
    notes: list[str] = []
    params = parameter_count(model)
    flops, by_op = -1, {}
    try:
        flops, by_op = forward_flops(model, tokens)
    except Exception as error:  # noqa: BLE001 - reported in the table
        notes.append(f"forward: {failure(error)}")
    split: dict[str, tuple[int, int]] = {}
    try:
        long = cache_bytes(model, tokens)
        short = cache_bytes(model, T_SHORT)
        for name in sorted(set(long) | set(short)):
            grow = long.get(name, 0) - short.get(name, 0)
            per_token, rest = divmod(grow, tokens - T_SHORT)
            if rest:
                notes.append(f"cache '{name}' does not grow linearly: {short.get(name, 0)} -> {long.get(name, 0)}")
            split[name] = (per_token, long.get(name, 0) - per_token * tokens)
        kv = sum(per_token for name, (per_token, _) in split.items() if held(name))
        state = sum(fixed for name, (_, fixed) in split.items() if held(name))
    except Exception as error:  # noqa: BLE001 - reported in the table
        notes.append(f"cache: {failure(error)}")
        kv = state = -1
    wrapper = None
    if whole and text_config(config) is not config:
        try:
            wrapper = parameter_count(build(config, whole=True))
        except Exception as error:  # noqa: BLE001 - reported, not raised: the text model is what is priced
            notes.append(f"wrapper does not build: {failure(error)}")
    return Truth(
        model_type=config.model_type,
        text_model_type=model.config.model_type,
        architecture=type(model).__name__,
        params=params,
        forward_flops=flops,
        kv_bytes_per_token=kv,
        state_bytes=state,
        cache_split=split,
        flops_by_op=by_op,
        wrapper_params=wrapper,
        notes=notes,
    )


def failure(error: BaseException) -> str:
    """One line: the exception and the transformers file and line it came from."""
    import traceback
    from pathlib import Path

    frames = [f for f in traceback.extract_tb(error.__traceback__) if "transformers" in f.filename]
    where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    first = (str(error).splitlines() or [""])[0][:160]
    return f"{type(error).__name__}: {first}{where}"
