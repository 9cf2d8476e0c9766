"""The transformers engine: a model tfcost has no reader for, priced by transformers' own implementation.

The model is built from its config on torch's meta device: tensors with shapes and no storage, so no weights are
read or allocated whatever the model's size, and a forward pass runs no arithmetic. From it:

- parameters: the sum of the sizes of `model.parameters()` (a tied head is one tensor, counted once);
- forward FLOPs: what torch's FlopCounterMode counts over one forward pass of one T-token sequence. The model is
  built with eager attention, whose explicit matmuls score the full T x T matrix as the analytic core counts
  (the fused SDPA kernel would hide them), and with `batched_mm` experts, which run each token through its k
  experts without data-dependent routing (the `grouped_mm` kernel transformers picks by default is invisible to
  FlopCounterMode, and the eager loop over routed experts cannot run on the meta device). Logits are computed
  for all T positions, as the analytic core counts the output head;
- cache: the bytes of every tensor in the cache the forward pass returns, at T and at T + 1 tokens. What grows
  between the two is the per-token KV cache; the rest, which does not grow with T, is per-sequence state
  (a Mamba layer's convolution and SSM state, a linear-attention layer's recurrent state).

torch and transformers are imported here only, and only when the engine is asked for (`pip install 'tfcost[hf]'`).
"""

from __future__ import annotations

import logging
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from tfcost.errors import TfcostError
from tfcost.units import DTYPE_BYTES, Dtype

INSTALL_HINT = "the transformers engine needs torch and transformers: pip install 'tfcost[hf]'"
# auto_map points at remote code (never run) and quantization_config would build quantized layers; neither changes
# a count, and transformers' config classes do not take them as keyword arguments.
NOT_FOR_TRANSFORMERS = ("auto_map", "quantization_config", "model_type", "transformers_version", "architectures")


@dataclass(frozen=True)
class EngineTotals:
    """What the transformers engine measured for one sequence of `seq_len` tokens."""

    model_type: str
    seq_len: int
    params_total: int
    forward_flops: int
    kv_bytes_per_token: int  # the part of the cache that grows with each token
    state_bytes: int  # the part that does not: per sequence, whatever T


def modules() -> tuple[Any, Any]:
    """(torch, transformers), or the one-line error that says how to install them."""
    try:
        import torch
        import transformers
    except ImportError:
        raise TfcostError(INSTALL_HINT) from None
    return torch, transformers


def has_model_class(model_type: str) -> bool:
    """Whether transformers (if installed) builds a causal LM for this model_type."""
    try:
        from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    except ImportError:
        return False
    return model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES


def hf_config(data: dict[str, Any]) -> Any:
    """transformers' config object for a config.json mapping, its defaults filling what the file leaves out."""
    _, transformers = modules()
    model_type = data.get("model_type")
    if not isinstance(model_type, str):
        raise TfcostError("missing field 'model_type'; is this a Hugging Face config.json?")
    if model_type not in transformers.models.auto.configuration_auto.CONFIG_MAPPING_NAMES:
        raise TfcostError(
            f"unsupported model_type {model_type!r}: neither tfcost nor transformers {transformers.__version__} "
            "knows it"
        )
    rest = {key: value for key, value in data.items() if key not in NOT_FOR_TRANSFORMERS}
    try:
        return transformers.AutoConfig.for_model(model_type, **rest)
    except ValueError as error:  # an unknown model_type, or a config its class refuses
        raise TfcostError(f"transformers cannot read this {model_type} config: {first_line(error)}") from None


def first_line(error: BaseException) -> str:
    """An exception's message as one printable line (it may quote a config's own text)."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return "".join(char if char.isprintable() else "?" for char in text)[:300]


def build(data: dict[str, Any]) -> Any:
    """The causal LM a config describes, on the meta device: shapes, no weights, in bf16 (a cache's tensors in the
    model's dtype are then counted at the asked dtype's size; one a model keeps in another, such as an fp32 SSM
    state, at its own). See the module docstring for why eager attention and batched_mm experts."""
    torch, transformers = modules()
    config = hf_config(data)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(
            config,
            attn_implementation="eager",
            experts_implementation="batched_mm",
            dtype=torch.bfloat16,
        )
    languages = getattr(model.config, "languages", None)
    if hasattr(model, "set_default_language") and languages:  # X-MOD: one adapter per language, each the same size
        model.set_default_language(languages[0])
    return model.eval()


@dataclass(frozen=True)
class Inputs:
    """How one sequence is fed. An explicit all-ones mask means "no padding" and spares most models a data-dependent
    check that the meta device cannot run; others check the mask itself (recurrent layers) and run only without one.
    The last resort feeds fake tensors (torch's FakeTensor, shapes only like meta), which transformers takes for
    tracing and so skips its data-dependent checks (a bidirectional mask's "is it all ones?")."""

    mask: bool
    fake: bool = False


INPUT_CHOICES = (Inputs(mask=True), Inputs(mask=False), Inputs(mask=True, fake=True))


def inputs(tokens: int, how: Inputs) -> dict[str, Any]:
    """One sequence of T token ids, on the meta device (made inside FakeTensorMode when `how.fake`)."""
    torch, _ = modules()
    ids = torch.zeros((1, tokens), dtype=torch.long, device="meta")
    if not how.mask:
        return {"input_ids": ids, "use_cache": True}
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "use_cache": True}


def returned_cache(output: Any) -> Any:
    """The cache a forward pass returned (RWKV calls it `state`); None for a model that keeps none (GPT-1)."""
    for name in ("cache", "past_key_values", "cache_params", "state"):
        if getattr(output, name, None) is not None:
            return getattr(output, name)
    return None


def tensors_in(node: Any) -> list[Any]:
    """Every tensor a cache holds, each once: the keys and values of attention layers, the convolution and
    recurrent states of others, however the cache class nests them."""
    torch, _ = modules()
    found: dict[int, Any] = {}
    seen: set[int] = set()
    pending = [node]
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, torch.Tensor):
            found[id(item)] = item
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
        elif hasattr(item, "__dict__") and not isinstance(item, type):
            pending.extend(vars(item).values())
    return list(found.values())


def cache_bytes(cache: Any, model_dtype: Any, dtype: Dtype) -> int:
    """Bytes of the keys, values and states a returned cache holds, its tensors in the model's dtype counted at
    `dtype`'s size (a tensor the model keeps in another dtype, such as an fp32 SSM state, at its own)."""
    return sum(
        tensor.numel() * (DTYPE_BYTES[dtype] if tensor.dtype == model_dtype else tensor.element_size())
        for tensor in tensors_in(cache)
        if tensor.is_floating_point()  # integer tensors are bookkeeping (a sliding layer's window, a length)
    )


def module_tensors(model: Any) -> set[int]:
    """Ids of the tensors the model's modules hold as plain attributes (not parameters or buffers)."""
    torch, _ = modules()
    return {id(v) for m in model.modules() for v in vars(m).values() if isinstance(v, torch.Tensor)}


def forward(model: Any, tokens: int, how: Inputs) -> tuple[int, Any]:
    """(FLOPs FlopCounterMode counted, the cache returned) of one forward pass over one T-token sequence."""
    torch, _ = modules()
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils.flop_counter import FlopCounterMode

    before = module_tensors(model)
    with ExitStack() as stack:
        if how.fake:
            stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
        stack.enter_context(torch.no_grad())
        stack.enter_context(torch.device("meta"))  # tensors a forward pass makes without naming a device (XLNet)
        counter = stack.enter_context(FlopCounterMode(display=False))
        output = model(**inputs(tokens, how))
    cache = returned_cache(output)
    if cache is None and module_tensors(model) - before:
        raise TfcostError("the model keeps its cache inside its modules and returns none to measure")
    return int(counter.get_total_flops()), cache


def first_forward(model: Any, tokens: int) -> tuple[Inputs, int, Any]:
    """The first way of feeding the model that runs on the meta device, and what it gave."""
    for how in INPUT_CHOICES[:-1]:
        try:
            return (how, *forward(model, tokens, how))
        except RuntimeError:  # a data-dependent check (Tensor.item() on the meta device): try the next way
            pass
    how = INPUT_CHOICES[-1]
    return (how, *forward(model, tokens, how))


def measure_model(model: Any, model_type: str, seq_len: int, dtype: Dtype) -> EngineTotals:
    """The engine's totals for a built model (see the module docstring)."""
    how, flops, cache = first_forward(model, seq_len)
    held = cache_bytes(cache, model.dtype, dtype)
    _, longer = forward(model, seq_len + 1, how)
    per_token = cache_bytes(longer, model.dtype, dtype) - held
    return EngineTotals(
        model_type=model_type,
        seq_len=seq_len,
        params_total=sum(parameter.numel() for parameter in model.parameters()),
        forward_flops=flops,
        kv_bytes_per_token=per_token,
        state_bytes=held - per_token * seq_len,
    )


def quiet(torch: Any, transformers: Any) -> None:
    """The engine's user sees tfcost's one-line errors, not transformers' advice on building models for
    training, nor the log torch writes when a fake-tensor attempt fails and the next is tried."""
    transformers.utils.logging.set_verbosity_error()
    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)


def measure(data: dict[str, Any], seq_len: int, dtype: Dtype) -> EngineTotals:
    """Build a config's model on the meta device and measure it; what transformers cannot do is one line."""
    quiet(*modules())
    model_type = str(data.get("model_type"))
    try:
        model = build(data)
    except TfcostError:
        raise
    except Exception as error:  # noqa: BLE001 - transformers raises anything; the user gets one line
        raise TfcostError(f"transformers cannot build this {model_type} model: {first_line(error)}") from None
    try:
        return measure_model(model, model_type, seq_len, dtype)
    except TfcostError as error:
        raise TfcostError(f"transformers cannot run this {model_type} model: {error}") from None
    except Exception as error:  # noqa: BLE001
        raise TfcostError(
            f"transformers cannot run this {model_type} model on the meta device: {first_line(error)}"
        ) from None
