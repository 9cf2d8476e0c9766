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
  (a Mamba layer's convolution and SSM state, a linear-attention layer's recurrent state). A model that keeps its
  state in its modules instead (RecurrentGemma) is measured by those tensors and a cache handed to it.

A model the meta device cannot run, because its control flow reads tensor values (XLM's lengths, X-MOD's language
ids, JetMoE's expert counts), is run on the CPU with random weights when its weights fit in half the memory
available (cpu_run_fits), and only if other tokens count the same FLOPs; see `fallback`.

torch and transformers are imported here only, and only when the engine is asked for (`pip install 'tfcost[hf]'`).
"""

from __future__ import annotations

import gc
import logging
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from tfcost.errors import TfcostError
from tfcost.hardware.host import host_available_bytes
from tfcost.units import DTYPE_BYTES, Dtype

Answer = TypeVar("Answer")
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
    forward_flops_next: int  # FlopCounterMode's count at T + 1 tokens: with forward_flops, F's slope at T
    head_params: int  # the output head's weight (d x V), whose matmul runs once per token: 2 x this FLOPs
    embedding_params: int  # token embeddings and an untied head: what stays 16-bit under 8- and 4-bit weights
    layer_params: int  # the largest layer's: what ZeRO-3 gathers at once (`largest_layer_params`)
    root_params: int  # all but the stack of layers' (embeddings, final norm, head): FSDP's root unit (`root_params`)
    max_positions: int | None  # the config's longest context (max_position_embeddings or its older names)


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
    state, at its own). See the module docstring for why eager attention and batched_mm experts. A config past the
    build budget (check_buildable) is refused before anything is built."""
    config = hf_config(data)
    check_buildable(config)
    return build_from(config, "meta")


# The build budget. Building on the meta device allocates nothing, but it makes every module of every layer (a few
# ms each here): a config with a million layers would build for hours. The deepest shipped preset, Llama 3.1 405B,
# has 126 layers of width 16,384 (Dubey et al. 2024, Table 3, as presets/models/llama-3.1-405b.yaml cites); the
# limits are far past it.
MAX_LAYERS = 1024
MAX_WIDTH = 1 << 20
MAX_LAYERS_X_WIDTH = 1 << 26  # 1,024 layers of 65,536, or 4,096 of 16,384 were they allowed
LAYER_FIELDS = ("num_hidden_layers", "num_layers", "n_layer", "decoder_layers", "encoder_layers", "num_decoder_layers")
WIDTH_FIELDS = ("hidden_size", "d_model", "n_embd")


def config_ints(config: Any, names: Sequence[str]) -> list[int]:
    """The integer values a config (or its text_config) sets under any of `names`."""
    found = []
    for holder in (config, getattr(config, "text_config", None)):
        for name in names:
            value = getattr(holder, name, None) if holder is not None else None
            if isinstance(value, int) and not isinstance(value, bool):
                found.append(value)
    return found


def check_buildable(config: Any) -> None:
    """Refuse, before building, a config whose model is past the build budget, or has no vocabulary."""
    layers = max(config_ints(config, LAYER_FIELDS), default=0)
    width = max(config_ints(config, WIDTH_FIELDS), default=0)
    vocab = config_ints(config, ("vocab_size",))
    if vocab and min(vocab) <= 0:
        raise TfcostError(f"vocab_size {min(vocab)}: a language model needs a vocabulary of at least one token")
    if layers > MAX_LAYERS or width > MAX_WIDTH or layers * width > MAX_LAYERS_X_WIDTH:
        raise TfcostError(
            f"{layers:,} layers of width {width:,} is past what the engine builds (at most {MAX_LAYERS:,} layers, "
            f"width {MAX_WIDTH:,}, {MAX_LAYERS_X_WIDTH:,} layers x width); no published model comes near it"
        )


def build_from(config: Any, device: str) -> Any:
    """The causal LM of a transformers config, on `device` (on the CPU: with weights, randomly initialised)."""
    torch, transformers = modules()
    with torch.device(device):
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
    Then fake tensors (torch's FakeTensor, shapes only like meta), which transformers takes for tracing and so skips
    its data-dependent checks (a bidirectional mask's "is it all ones?"). The last resort hands the model its masks
    already made, one per kind of layer, each None (`premade`): a model whose layers are all recurrent (Bamba's
    default) otherwise asks its cache for an attention length it does not have. An attention layer then scores
    without a causal mask, which changes no count: the mask is added to the scores, and FlopCounterMode counts the
    matmuls only. Or a cache that grows a layer for each one used (`lazy_cache`), for a model whose own cache is
    built with fewer layers than it has (Blenderbot's decoder: its config's layer count is the encoder's)."""

    mask: bool
    fake: bool = False
    premade: bool = False
    lazy_cache: bool = False


FAKE = Inputs(mask=True, fake=True)
INPUT_CHOICES = (
    Inputs(mask=True),
    Inputs(mask=False),
    FAKE,
    Inputs(mask=False, premade=True),
    Inputs(mask=True, lazy_cache=True),
)


def inputs(tokens: int, how: Inputs, device: Any, batch: int = 1) -> dict[str, Any]:
    """`batch` sequences of T token ids, on the model's device (made inside FakeTensorMode when `how.fake`)."""
    torch, transformers = modules()
    ids = torch.zeros((batch, tokens), dtype=torch.long, device=device)
    if how.premade:  # transformers takes a mapping as the masks already made, by layer kind: None for every kind
        positions = torch.arange(tokens, device=device).expand(batch, tokens)  # nor can the cache say where T starts
        return {"input_ids": ids, "attention_mask": defaultdict(lambda: None), "position_ids": positions,
                "use_cache": True}  # fmt: skip
    if how.lazy_cache:  # a cache that adds a full attention layer each time one is used, whatever the config says
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "cache": transformers.DynamicCache()}
    if not how.mask:
        return {"input_ids": ids, "use_cache": True}
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "use_cache": True}


def returned_cache(output: Any) -> Any:
    """The cache a forward pass returned (RWKV calls it `state`; XLNet `mems`, the hidden states it attends to again,
    up to mem_len of them); None for a model that keeps none (GPT-1)."""
    for name in ("cache", "past_key_values", "cache_params", "state", "mems"):
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


def module_tensors(model: Any) -> dict[int, Any]:
    """The tensors the model's modules hold as plain attributes (not parameters or buffers), by id."""
    torch, _ = modules()
    return {id(v): v for m in model.modules() for v in vars(m).values() if isinstance(v, torch.Tensor)}


@contextmanager
def unvalidated_distributions(torch: Any) -> Iterator[None]:
    """torch.distributions without checks of their arguments' values, which the meta device does not have (Gemma
    3n's activation sparsity builds a Normal(0, 1) for its cut-off, whose check would read the scale's value)."""
    validating = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(False)
    try:
        yield
    finally:
        torch.distributions.Distribution.set_default_validate_args(validating)


@contextmanager
def fed(how: Inputs) -> Iterator[None]:
    """What every forward pass runs under: distributions unchecked (see unvalidated_distributions), and inside
    FakeTensorMode when `how.fake`."""
    torch, _ = modules()
    from torch._subclasses.fake_tensor import FakeTensorMode

    with ExitStack() as stack:
        stack.enter_context(unvalidated_distributions(torch))
        if how.fake:
            stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
        yield


def run(model: Any, tokens: int, how: Inputs, cache: Any = None, ids: Any = None) -> tuple[int, Any, list[Any]]:
    """(FLOPs FlopCounterMode counted, the output, the tensors the modules took) of one forward pass over one T-token
    sequence (of token 0, or of `ids`), given `cache` to fill when not None."""
    torch, _ = modules()
    from torch.utils.flop_counter import FlopCounterMode

    before = module_tensors(model)
    given = inputs(tokens, how, model.device) | ({} if cache is None else {"cache": cache})
    if ids is not None:
        given["input_ids"] = ids
    with ExitStack() as stack:
        stack.enter_context(fed(how))
        stack.enter_context(torch.no_grad())
        stack.enter_context(torch.device(model.device))  # tensors a forward pass makes without naming one (XLNet)
        counter = stack.enter_context(FlopCounterMode(display=False))
        output = model(**given)
    taken = [tensor for key, tensor in module_tensors(model).items() if key not in before]
    return int(counter.get_total_flops()), output, taken


def forward(model: Any, tokens: int, how: Inputs) -> tuple[int, Any]:
    """(FLOPs FlopCounterMode counted, the cache) of one forward pass over one T-token sequence. A model that returns
    no cache but whose modules took tensors keeps its recurrent state there (RecurrentGemma) and its attention cache
    internal: it is run again, handed a cache of transformers' own kind for its config to fill, and its cache is
    that one and the tensors its modules took."""
    _, transformers = modules()
    flops, output, taken = run(model, tokens, how)
    cache = returned_cache(output)
    if cache is None and taken:
        given = transformers.DynamicCache(config=model.config)
        flops, output, taken = run(model, tokens, how, given)
        cache = returned_cache(output) or [given, taken]
    return flops, cache


def first_that_runs(
    attempt: Callable[[Inputs], Answer], choices: Sequence[Inputs] = INPUT_CHOICES
) -> tuple[Inputs, Answer]:
    """The first way of feeding the model (of `choices`) that `attempt` runs on the meta device, and what it gave.
    When none does, the error is the fake-tensor run's, which skips transformers' own data-dependent checks: what
    is left is the model's."""
    errors: dict[Inputs, Exception] = {}
    for how in choices:
        try:
            return how, attempt(how)
        except Exception as error:  # noqa: BLE001 - a data-dependent check, a mask the cache cannot size: next way
            errors[how] = error
    raise errors[FAKE]


def first_forward(model: Any, tokens: int) -> tuple[Inputs, int, Any]:
    """`first_that_runs` of a forward pass over T tokens: the way, its FLOPs and its cache."""
    how, (flops, cache) = first_that_runs(lambda how: forward(model, tokens, how))
    return how, flops, cache


def cpu_run_fits(params: int) -> bool:
    """Whether a model the meta device cannot run may be built on the CPU instead: its bf16 weights (2 bytes each)
    take at most half the memory this machine has available now, leaving the rest for the forward pass and the
    other process. JetMoE's default (4.3B parameters, 8.6 GB) runs in about 35 s on 2 cores with 22 GiB free."""
    available = host_available_bytes()
    return available is not None and 2 * params <= available // 2


# A CPU run holds real activations, which grow with T (eager attention's T x T scores, quadratically): it is made
# only up to this many tokens, whatever memory there is, so that no config and --seq can fill a machine's memory.
CPU_RUN_MAX_TOKENS = 4096


def cpu_run_refusal(params: int, seq_len: int) -> str | None:
    """Why a model the meta device cannot run is not run on the CPU either, or None when it may be."""
    if seq_len + 1 > CPU_RUN_MAX_TOKENS:  # measure_model also runs T + 1
        return (
            f"running it on the CPU instead holds activations that grow with T, so is done up to T = "
            f"{CPU_RUN_MAX_TOKENS - 1:,} only"
        )
    if not cpu_run_fits(params):
        available = host_available_bytes()
        have = f"{available / 2**30:.1f} GiB available" if available is not None else "no memory figure"
        return (
            f"running it on the CPU instead needs its {2 * params / 2**30:.1f} GiB of bf16 weights in half the "
            f"memory ({have})"
        )
    return None


def measure_model(model: Any, model_type: str, seq_len: int, dtype: Dtype) -> EngineTotals:
    """The engine's totals for a built model (see the module docstring)."""
    params = sum(parameter.numel() for parameter in model.parameters())
    try:
        how, flops, cache = first_forward(model, seq_len)
    except RuntimeError as error:
        model = fallback(model, params, error, seq_len)
        how, flops, cache = first_forward(model, seq_len)
        if model.device.type == "cpu":
            check_data_independent(model, seq_len, how, flops)
    held = cache_bytes(cache, model.dtype, dtype)
    flops_next, longer = forward(model, seq_len + 1, how)
    per_token = cache_bytes(longer, model.dtype, dtype) - held
    head, embeddings = embedding_sizes(model)
    return EngineTotals(
        model_type=model_type,
        seq_len=seq_len,
        params_total=params,
        forward_flops=flops,
        kv_bytes_per_token=per_token,
        state_bytes=held - per_token * seq_len,
        forward_flops_next=flops_next,
        head_params=head,
        embedding_params=embeddings,
        layer_params=largest_layer_params(model),
        root_params=root_params(model, params),
        max_positions=max_positions(model.config),
    )


def embedding_sizes(model: Any) -> tuple[int, int]:
    """(the output head's weights, the token embeddings' plus an untied head's): serve keeps the embeddings 16-bit
    under 8- and 4-bit weights, as tfcost.costs.serving.weight_bytes does, and counts the head's matmul once per prompt.
    (0, 0) for a model that does not name them."""
    try:
        head, tokens = model.get_output_embeddings(), model.get_input_embeddings()
    except (NotImplementedError, AttributeError):  # a model that does not say: no head correction, none kept 16-bit
        return 0, 0
    head_weight = getattr(head, "weight", None)
    token_weight = getattr(tokens, "weight", None)
    head_params = 0 if head_weight is None else head_weight.numel()
    token_params = 0 if token_weight is None else token_weight.numel()
    tied = head_weight is not None and head_weight is token_weight
    return head_params, token_params + (0 if tied else head_params)


def layer_stack(model: Any) -> Any:
    """The stack of layers: of the model's nn.ModuleLists, the one holding the most parameters (a list of experts sits
    inside a layer, so holds fewer); None for a model with no such list."""
    torch, _ = modules()
    stacks = [module for module in model.modules() if isinstance(module, torch.nn.ModuleList) and len(module)]
    if not stacks:
        return None
    return max(stacks, key=lambda stack: sum(parameter.numel() for parameter in stack.parameters()))


def largest_layer_params(model: Any) -> int:
    """The parameters of the model's largest layer, of its stack of layers (`layer_stack`); 0 without a stack."""
    layers = layer_stack(model)
    if layers is None:
        return 0
    return max(sum(parameter.numel() for parameter in layer.parameters()) for layer in layers)


def root_params(model: Any, params: int) -> int:
    """Of the model's `params`, those outside its stack of layers (embeddings, final norm, head): what FSDP's root unit
    holds when each layer is a unit (tfcost.costs.training.root_unit_params); 0 without a stack."""
    layers = layer_stack(model)
    if layers is None:
        return 0
    return params - sum(parameter.numel() for parameter in layers.parameters())


POSITION_FIELDS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx")


def max_positions(config: Any) -> int | None:
    """The longest context a config declares, under the first of its usual names that it sets; None without one."""
    for name in POSITION_FIELDS:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


@dataclass(frozen=True)
class SavedBytes:
    """What one training forward keeps for the backward pass (`saved_bytes`)."""

    total: int  # every activation autograd saves
    scores: int  # of which the T x T attention scores and probabilities, which FlashAttention never stores


def saved_bytes(model: Any, seq_len: int, batch: int, require_meta: bool = True) -> SavedBytes:
    """The bytes autograd keeps for the backward pass of one training forward (train mode, the loss on the labels)
    over `batch` sequences of T tokens on the meta device: every tensor a saved_tensors_hooks pack sees, each
    storage once (views share one), the parameters and buffers left out (they are the weights, not activations).
    This is what the model's eager implementation saves in its dtype (bf16). Of it, the tensors of T x T scores
    (batch x heads x T x T, or batch*heads x T x T) are what a fused kernel does not store: `scores`."""
    torch, _ = modules()
    if require_meta and model.device.type != "meta":  # a CPU run would hold every activation for real
        raise TfcostError("its training activations are measured on the meta device, which this model cannot run on")
    weights = {tensor.untyped_storage()._cdata for tensor in [*model.parameters(), *model.buffers()]}
    saved: dict[int, tuple[int, bool]] = {}

    def pack(tensor: Any) -> Any:
        storage = tensor.untyped_storage()
        if storage._cdata not in weights:
            square = tensor.dim() in (3, 4) and tuple(tensor.shape[-2:]) == (seq_len, seq_len)
            scores = square and (tensor.dim() == 4 or tensor.shape[0] != batch)
            saved[storage._cdata] = (storage.nbytes(), scores)
        return tensor

    def training_forward(how: Inputs) -> None:
        saved.clear()  # of an attempt that failed
        with ExitStack() as stack:
            stack.enter_context(fed(how))
            stack.enter_context(torch.device(model.device))  # what the model makes unasked is meta too, not real
            given = inputs(seq_len, how, model.device, batch)
            stack.enter_context(torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor))
            model(**(given | {"labels": given["input_ids"], "use_cache": False}))

    model.train()
    try:  # every way of feeding it but a cache's: a training forward keeps none
        first_that_runs(training_forward, [how for how in INPUT_CHOICES if not how.lazy_cache])
    finally:
        model.eval()
    return SavedBytes(
        total=sum(size for size, _ in saved.values()),
        scores=sum(size for size, scores in saved.values() if scores),
    )


def fallback(model: Any, params: int, error: RuntimeError, seq_len: int) -> Any:
    """The model to run when no way of feeding it runs on the meta device, or `error` again.

    - A model that makes some weights with a legacy constructor (XLNet's attention, torch.FloatTensor: fp32 and on
      the CPU whatever the dtype and device asked), then mixes them into bf16 matmuls, runs in fp32 on the meta device
      throughout; its cache, then in the model's dtype, is still counted at the asked dtype's size, and FLOPs do not
      depend on the dtype.
    - A model whose control flow reads its tensors' values (XLM's sequence lengths, X-MOD's language ids), which the
      meta device does not have, runs on the CPU with random weights when it fits (cpu_run_fits): FlopCounterMode then
      counts a real forward pass, and check_data_independent makes sure that the count does not depend on the data.
    """
    torch, _ = modules()
    if "expected scalar type" in str(error):
        return model.to(device="meta", dtype=torch.float32)
    gc.collect()  # an earlier CPU build, freed only by the collector (modules hold cycles), still counts as used
    refusal = cpu_run_refusal(params, seq_len)
    if refusal is None:
        torch.manual_seed(0)
        return build_from(model.config, "cpu")
    raise TfcostError(f"it does not run on the meta device ({first_line(error)}), and {refusal}")


def check_data_independent(model: Any, seq_len: int, how: Inputs, flops: int) -> None:
    """Refuse a CPU run whose FLOPs depend on the values the model computes (tokens routed by a learned router, which
    random weights route otherwise than trained ones): other tokens must count the same."""
    torch, _ = modules()
    other_tokens = torch.arange(seq_len).mul(7919).remainder(model.config.vocab_size).unsqueeze(0)
    if run(model, seq_len, how, ids=other_tokens)[0] != flops:
        raise TfcostError("its FLOPs depend on the values it computes (routing), which a build without weights lacks")


def quiet(torch: Any, transformers: Any) -> None:
    """The engine's user sees tfcost's one-line errors, not transformers' advice on building models for
    training, nor the log torch writes when a fake-tensor attempt fails and the next is tried."""
    transformers.utils.logging.set_verbosity_error()
    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)


def measure(data: dict[str, Any], seq_len: int, dtype: Dtype) -> EngineTotals:
    """Build a config's model on the meta device and measure it; what transformers cannot do is one line."""
    model_type, model = built(data)
    try:
        return measure_model(model, model_type, seq_len, dtype)
    except TfcostError as error:
        raise TfcostError(f"transformers cannot run this {model_type} model: {error}") from None
    except Exception as error:  # noqa: BLE001
        raise TfcostError(
            f"transformers cannot run this {model_type} model on the meta device: {first_line(error)}"
        ) from None


def training_activation_bytes(data: dict[str, Any], seq_len: int, batch: int) -> SavedBytes:
    """`saved_bytes` of a config's model built on the meta device; what transformers cannot do is one line."""
    model_type, model = built(data)
    try:
        return saved_bytes(model, seq_len, batch)
    except TfcostError as error:
        raise TfcostError(f"transformers cannot train this {model_type} model: {error}") from None
    except Exception as error:  # noqa: BLE001
        raise TfcostError(
            f"transformers cannot run a training forward of this {model_type} model on the meta device: "
            f"{first_line(error)}"
        ) from None


def built(data: dict[str, Any]) -> tuple[str, Any]:
    """(model_type, the model on the meta device), or transformers' refusal as one line."""
    quiet(*modules())
    model_type = str(data.get("model_type"))
    try:
        return model_type, build(data)
    except TfcostError:
        raise
    except Exception as error:  # noqa: BLE001 - transformers raises anything; the user gets one line
        raise TfcostError(f"transformers cannot build this {model_type} model: {first_line(error)}") from None
