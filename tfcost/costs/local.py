"""A model on one's own machine under llama.cpp (and ollama and LM Studio, which run it): the bytes of a GGUF file,
where llama.cpp puts each layer (`-ngl`, the split across GPUs), the largest context that fits, and prompt and
generation tokens/s. Pure arithmetic over the model's rows (tfcost.core.model) or a GGUF file's own tensors.

Sources, llama.cpp (github.com/ggml-org/llama.cpp), as read at the commits named:

- Weights. A file type (llama-quantize's Q4_K_M, ...) is a mixture: src/llama-quant.cpp at 007dbbf,
  llama_tensor_get_type_impl, chooses each tensor's ggml type from its category and layer, e.g.
      auto use_more_bits = [](int i_layer, int n_layers) -> bool {
          return i_layer < n_layers/8 || i_layer >= 7*n_layers/8 || (i_layer - n_layers/8)%3 == 2; };
      else if ((ftype == LLAMA_FTYPE_MOSTLY_Q4_K_M || ftype == LLAMA_FTYPE_MOSTLY_Q5_K_M) &&
              use_more_bits(qs.i_attention_wv, qs.n_attention_wv)) new_type = GGML_TYPE_Q6_K;
      else if (new_type != GGML_TYPE_Q8_0) { new_type = GGML_TYPE_Q6_K; }      (the output tensor)
  tensor_type() below follows it for the file types of FILE_TYPES; a tensor's bytes are its blocks times the
  block's bytes (GGML_TYPE_SIZES, the `gguf` package's GGML_QUANT_SIZES: tests/test_local.py checks them).
  Norms and biases stay F32 (tensor_allows_quantization: "quantize only 2D and 3D tensors", "do not quantize norm
  tensors"); the router (ffn_gate_inp) too.
- Placement. src/llama-model.cpp: "there is very little benefit to offloading the input layer, so always keep it
  on the CPU"; the repeating layers from `i_gpu_start = std::max((int) hparams.n_layer - n_gpu_layers, (int) 0)`
  go to the GPUs, split by `std::upper_bound(splits.begin(), splits.begin() + n_devices(), float(il -
  i_gpu_start)/act_gpu_layers)` with `act_gpu_layers = std::min(n_gpu_layers, (int)n_layer + 1)` (equal GPUs:
  equal shares); the output layer (il = n_layer) goes to a GPU only when n_gpu_layers > n_layer. A model with tied
  embeddings loads token_embd a second time as its output (TENSOR_DUPLICATED). The KV cache of each layer sits
  with the layer (offload_kqv, default true). (llama-model.cpp's lines as stored copies of it quote them; no
  commit of that file was read here.)
- Context. src/llama-context.cpp at 001d906: `cparams.n_ctx = params.n_ctx == 0 ? hparams.n_ctx_train :
  params.n_ctx`; llama.cpp's --fit (llama_params_fit) leaves `--fit-target` free on each device, 1024 MiB unless
  set (its log in llama.cpp PR #16653: "cannot fulfill margin of 1024 MiB on all devices"), and lowers the context
  no further than `--fit-ctx` before it takes layers off the GPUs: 4096 in tools/fit-params/README.md's run
  ("context size reduced from 40960 to 4096"), the floor tfcost takes.
- Compute buffers: what ggml's allocator reserves for the worst-case graph, `graph_reserve(n_tokens, n_seqs,
  n_tokens, ...)` with n_tokens = min(n_ctx, n_ubatch) (llama-context.cpp): every output row's logits (n_vocab x
  n_tokens, f32) with the last hidden state at the end of the graph; without flash attention the f32 scores of
  one layer (n_ctx x n_tokens x n_heads; soft_max runs in place) and its mask; the FFN's two intermediates.
  The largest of these is the buffer. Checked against llama.cpp's own log for Llama 3 8B Q4_K_M on CUDA at
  n_ctx 512, flash_attn 0 (tests/test_local.py): "CUDA0 compute buffer size = 258.50 MiB" = logits 250.5 MiB +
  hidden 8 MiB.
  With layers on the CPU and a GPU present, the CUDA backend runs their matmuls of a batch of 32 or more tokens
  (ggml-cuda.cu, ggml_backend_cuda_device_offload_op: `return get_op_batch_size(op) >= min_batch_size` with
  `const int min_batch_size = 32`), copying their weights over PCIe into the compute buffer: one layer's weights
  are counted in it (an approximation: the allocator frees each copy after its matmul).
- Mixtures of experts. When a model's layers do not all fit but their weights without the routed experts do,
  --fit puts every layer on the GPUs and the routed experts of as many layers as fit with them, front to back,
  the rest on the host (llama.cpp's tools/fit-params/README.md: "48 layers (34 overflowing)", printed as
  `-ot blk\\.14\\.ffn_(up|down|gate)_(ch|)exps=CPU,...`). tfcost fills the GPUs so with its own buffer sizes;
  llama.cpp's fit projects its compute buffers as it goes and may keep fewer (tests/test_local.py).
- Time. Generation reads every weight once per token and the KV cache written so far: the GPU's share at its
  bandwidth, the host's at the host's, each times the memory efficiency (ServingSetup's 0.9, llm-analysis).
  Prompt processing is compute: the forward's FLOPs at the GPU's dense 16-bit peak times the compute efficiency
  (0.7, as ServingSetup), and, for layers on the host, their weights copied over the host link once per physical
  batch (the op offload above). A mixture of experts' token reads k of E routed experts of each layer; llama.cpp's
  expert kernels at batch 1 reach less of the bandwidth than its dense ones, which tfcost does not model (its MoE
  generation is a bound). Not fitted to any measurement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tfcost.core.model import Model
from tfcost.core.ops import Op, op_flops, rate_multiplicity
from tfcost.costs.fit import CUDA_CONTEXT_GIB
from tfcost.schema import GpuSpec, LocalSetup
from tfcost.units import GIB

MIB = 2**20
# (elements per block, bytes per block) of the ggml types a GGUF file or a KV cache uses: the `gguf` package's
# GGML_QUANT_SIZES (gguf-py/gguf/constants.py), kept here so that `tfcost fit` needs no extra package.
GGML_TYPE_SIZES: dict[str, tuple[int, int]] = {
    "F32": (1, 4), "F16": (1, 2), "BF16": (1, 2),
    "Q4_0": (32, 18), "Q4_1": (32, 20), "Q5_0": (32, 22), "Q5_1": (32, 24), "Q8_0": (32, 34),
    "Q2_K": (256, 84), "Q3_K": (256, 110), "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210),
    "IQ4_NL": (32, 18), "IQ4_XS": (256, 136), "IQ3_S": (256, 110), "MXFP4": (32, 17),
}  # fmt: skip
# llama-quantize's file types (LLAMA_FTYPE_MOSTLY_*) and each one's default tensor type (llama-quant.cpp,
# llama_model_quantize_impl's `switch (ftype)`).
FILE_TYPES: dict[str, str] = {
    "F32": "F32", "F16": "F16", "BF16": "BF16", "Q8_0": "Q8_0", "Q4_0": "Q4_0", "Q4_1": "Q4_1", "Q5_0": "Q5_0",
    "Q5_1": "Q5_1", "Q2_K": "Q2_K", "Q3_K_S": "Q3_K", "Q3_K_M": "Q3_K", "Q3_K_L": "Q3_K", "Q4_K_S": "Q4_K",
    "Q4_K_M": "Q4_K", "Q5_K_S": "Q5_K", "Q5_K_M": "Q5_K", "Q6_K": "Q6_K", "IQ4_NL": "IQ4_NL", "IQ4_XS": "IQ4_XS",
    "MXFP4_MOE": "MXFP4",
}  # fmt: skip
# When a row's input width is not whole blocks of the chosen type (llama-quant.cpp, tensor_type_fallback).
FALLBACK = {"Q2_K": "Q4_0", "Q3_K": "Q4_0", "Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0", "IQ4_XS": "IQ4_NL"}
KV_TYPES = {"f16": "F16", "bf16": "BF16", "f32": "F32", "q8_0": "Q8_0", "q5_1": "Q5_1", "q5_0": "Q5_0",
            "q4_1": "Q4_1", "q4_0": "Q4_0", "iq4_nl": "IQ4_NL"}  # fmt: skip

FIT_TARGET_BYTES = 1024 * MIB  # llama.cpp --fit-target: "1024" MiB left free per device (common/arg.cpp)
FIT_MIN_CONTEXT = 4096  # llama.cpp --fit-ctx: the context --fit lowers to before it moves layers to the host
CONTEXT_STEP = 256  # contexts are reported in steps of 256 (llama.cpp pads its KV cache to 256 cells)
OP_OFFLOAD_MIN_BATCH = 32  # ggml-cuda.cu: `const int min_batch_size = 32`
DEFAULT_HOST_LINK_GB_PER_S = 32.0  # PCIe 4.0 x16, one direction, where a GPU row names no host link
F32 = 4  # bytes of an f32 activation


def tensor_bytes(type_name: str, elements: int) -> int:
    """Bytes of `elements` weights stored as a ggml type: whole blocks of the type's bytes."""
    block, size = GGML_TYPE_SIZES[type_name]
    return -(-elements // block) * size


def use_more_bits(i_layer: int, n_layers: int) -> bool:
    """llama-quant.cpp's use_more_bits: the first and last eighth of the layers and every third between."""
    return i_layer < n_layers // 8 or i_layer >= 7 * n_layers // 8 or (i_layer - n_layers // 8) % 3 == 2


@dataclass(frozen=True)
class ModelTraits:
    """What llama-quant.cpp's choices read of the model: its GQA ratio, its experts, and whether llama.cpp calls
    it a 70B (an 80-layer Llama-like model with grouped KV heads: llama-model.cpp's `case 80:` LLM_TYPE_70B)."""

    n_layers: int
    n_gqa: int
    n_experts: int
    is_70b: bool


def category(op: Op) -> str:
    """The llama-quant.cpp tensor category of a row (tensor_get_category): by its name."""
    name = op.name
    if op.kind == "table":  # positions, attention sinks: 1D or not quantized (tensor_allows_quantization)
        return "token_embd" if name == "embedding/tokens" else "unquantized"
    if name == "output_head":
        return "output"
    if op.kind != "linear" or "router" in name or "shared_gate" in name:
        return "unquantized"
    endings = {"/q": "attn_q", "/k": "attn_k", "/v": "attn_v", "/kv_up": "attn_v", "/o": "attn_output",
               "/gate": "ffn_gate", "/up": "ffn_up", "/down": "ffn_down"}  # fmt: skip
    for ending, found in endings.items():
        if name.endswith(ending):
            return found
    return "other"


def tensor_type(
    file_type: str, kind: str, i_layer: int, traits: ModelTraits, columns: int, tied: bool, experts: bool = False
) -> str:
    """The ggml type llama-quantize gives a tensor of this category in layer i_layer (llama_tensor_get_type_impl
    at 007dbbf, for FILE_TYPES; an imatrix assumed, as published IQ files are made), then its width's fallback.
    `experts`: a routed experts' tensor (3D, `tensor->ne[2] > 1`)."""
    default = FILE_TYPES[file_type]
    if kind == "unquantized" or default in ("F32", "F16", "BF16"):
        return "F32" if kind == "unquantized" else default
    if file_type == "MXFP4_MOE":  # "MoE tensors -> MXFP4, other tensors -> Q8_0" (the output too)
        return "MXFP4" if experts and kind != "output" else "Q8_0"
    n = traits.n_layers
    chosen = default
    if kind == "output" or (tied and kind == "token_embd"):
        block = GGML_TYPE_SIZES[default][0]
        chosen = "Q8_0" if columns % block else default if default == "Q8_0" else "Q6_K"
    elif kind == "attn_v":
        if file_type == "Q2_K":
            chosen = "Q4_K" if traits.n_gqa >= 4 else "Q3_K"
        elif file_type == "Q3_K_M":
            chosen = "Q5_K" if i_layer < 2 else "Q4_K"
        elif file_type == "Q3_K_L":
            chosen = "Q5_K"
        elif file_type in ("IQ4_NL", "IQ4_XS") and traits.n_gqa >= 4:
            chosen = "Q5_K"
        elif file_type in ("Q4_K_M", "Q5_K_M") and use_more_bits(i_layer, n):
            chosen = "Q6_K"
        elif file_type == "Q4_K_S" and i_layer < 4:
            chosen = "Q5_K"
        if traits.is_70b and chosen in ("Q3_K", "Q4_K"):
            chosen = "Q5_K"
        if traits.n_experts == 8:
            chosen = "Q8_0"
    elif kind == "attn_k" and traits.n_experts == 8:
        chosen = "Q8_0"
    elif kind == "ffn_down":
        if file_type == "Q2_K":
            chosen = "Q3_K"
        elif file_type == "Q3_K_M":
            chosen = "Q5_K" if i_layer < n // 16 else "Q4_K"
        elif file_type == "Q3_K_L":
            chosen = "Q5_K"
        elif file_type in ("Q4_K_M", "Q5_K_M") and use_more_bits(i_layer, n):
            chosen = "Q6_K"
        elif file_type == "Q4_K_S" and i_layer < n // 8:
            chosen = "Q5_K"
    elif kind == "attn_output":
        if traits.n_experts == 8:
            if file_type in ("Q2_K", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M", "IQ4_XS"):
                chosen = "Q5_K"
        elif file_type == "Q2_K":
            chosen = "Q3_K"
        elif file_type == "Q3_K_M":
            chosen = "Q4_K"
        elif file_type == "Q3_K_L":
            chosen = "Q5_K"
    if columns % GGML_TYPE_SIZES[chosen][0]:
        chosen = FALLBACK.get(chosen, "F16")
        if columns % GGML_TYPE_SIZES[chosen][0]:
            chosen = "F16"
    return chosen


def row_bytes(op: Op, file_type: str, i_layer: int, traits: ModelTraits, tied: bool) -> int:
    """Bytes a row's weights take in the file: its matrix in its chosen type, its biases in F32."""
    if op.copies == 0 or op.kind not in ("linear", "norm", "table"):
        return 0
    kind = category(op)
    if op.kind == "norm":
        return op.copies * op.fan_in * op.fan_out * F32
    matrix = op.copies * op.fan_in * op.fan_out
    columns = op.fan_out if op.kind == "table" else op.fan_in  # ggml's ne[0]: a table's row, a matmul's input
    chosen = tensor_type(file_type, kind, i_layer, traits, columns, tied, experts=op.copies > 1)
    biases = op.copies * op.fan_out * F32 if op.kind == "linear" and op.bias else 0
    return tensor_bytes(chosen, matrix) + biases


@dataclass(frozen=True)
class FileBytes:
    """A GGUF file's weights by where llama.cpp puts them: the input layer (token_embd, always on the host), each
    repeating layer (and, of it, its routed experts' tensors, which --fit may leave on the host), and the output
    layer (output norm and head; a tied model's duplicate of token_embd). `active`: the share of a layer's experts
    one token reads (k of E)."""

    input_layer: int
    layers: tuple[int, ...]
    output_layer: int
    experts: tuple[int, ...] = ()
    active: float = 1.0

    @property
    def total(self) -> int:
        return self.input_layer + sum(self.layers) + self.output_layer

    def experts_of(self, index: int) -> int:
        return self.experts[index] if self.experts else 0


def traits_of(model: Model) -> ModelTraits:
    shape = model.shape
    n_experts = shape.moe.n_experts if shape.moe is not None else 0
    n_gqa = shape.n_heads // max(shape.n_kv_heads, 1)
    return ModelTraits(model.n_layers, n_gqa, n_experts, model.n_layers == 80 and n_gqa > 1)


def active_share(model: Model) -> float:
    """The share of a layer's routed experts one token reads: k of E."""
    moe = model.shape.moe
    return moe.experts_per_token / moe.n_experts if moe is not None else 1.0


def is_routed(op: Op) -> bool:
    """A routed experts' row (ffn_*_exps, a 3D tensor of E copies), not a shared expert."""
    return op.kind == "linear" and op.copies > 1 and "experts" in op.name


def file_bytes(model: Model, file_type: str) -> FileBytes:
    """The bytes llama-quantize would write for this model at this file type, by where each tensor goes."""
    traits = traits_of(model)
    tied = model.shape.tied_embeddings
    embedding = sum(row_bytes(op, file_type, 0, traits, tied) for op in model.embedding)
    layers: list[int] = []
    experts: list[int] = []
    for group in model.layers:
        for _ in range(group.count):
            index = len(layers)
            layers.append(sum(row_bytes(op, file_type, index, traits, tied) for op in group.rows))
            experts.append(sum(row_bytes(op, file_type, index, traits, tied) for op in group.rows if is_routed(op)))
    head = sum(row_bytes(op, file_type, 0, traits, tied) for op in model.head)
    if tied:
        head += sum(
            row_bytes(op, file_type, 0, traits, tied) for op in model.embedding if op.name == "embedding/tokens"
        )
    return FileBytes(embedding, tuple(layers), head, tuple(experts), active_share(model))


def stored_file_bytes(tensors: list[tuple[str, int]], n_layers: int, active: float = 1.0) -> FileBytes:
    """The same split read off a GGUF file's own tensors (name, bytes): blk.N.* are layer N's (its *_exps tensors
    its routed experts), token_embd the input layer's, the rest (output_norm, output) the output layer's, with
    token_embd again where no output.weight is."""
    layers = [0] * n_layers
    experts = [0] * n_layers
    input_layer = output_layer = 0
    names = {name for name, _ in tensors}
    for name, nbytes in tensors:
        if name.startswith("blk."):
            index = int(name.split(".")[1])
            if index < n_layers:  # a next-token-prediction block past the model's layers is not loaded
                layers[index] += nbytes
                if "_exps." in name:
                    experts[index] += nbytes
        elif name.startswith("token_embd."):
            input_layer += nbytes
            if "output.weight" not in names and name == "token_embd.weight":
                output_layer += nbytes
        else:
            output_layer += nbytes
    return FileBytes(input_layer, tuple(layers), output_layer, tuple(experts), active)


def kv_bytes_per_layer(model: Model, context: int, kv_type: str) -> tuple[int, ...]:
    """Each layer's KV cache (and recurrent state, f32) for one sequence of `context` cells: a cache row's elements
    per position times the positions it keeps (a sliding window caps them), in the cache's type."""
    per_layer: list[int] = []
    for group in model.layers:
        cache = 0
        for op in group.rows:
            if op.kind == "cache":
                positions = rate_multiplicity(op.per, op.span, context, context, True)
                cache += tensor_bytes(kv_type, op.fan_in * max(op.copies, 1) * positions)
            elif op.kind == "state":
                cache += op.fan_in * max(op.copies, 1) * F32
        per_layer.extend([cache] * group.count)
    return tuple(per_layer)


def compute_buffer(model: Model, context: int, setup: LocalSetup, holds_output: bool) -> int:
    """The compute buffer one device reserves (module docstring): the largest of the logits with the last hidden
    state (only where the output layer is), a layer's attention (its f32 scores and mask without flash attention)
    and its FFN intermediates, for a batch of min(context, ubatch) tokens."""
    shape = model.shape
    tokens = min(context, setup.ubatch)
    hidden = tokens * shape.d_model * F32
    if setup.flash_attn:
        attention = tokens * context * 2 + 3 * hidden  # the f16 mask
    else:
        attention = tokens * context * shape.n_heads * F32 + tokens * context * F32 + 3 * hidden
    widest = max((op.fan_out for _, op in model.layer_rows() if category(op) in ("ffn_up", "ffn_gate")), default=0)
    routed = shape.moe.experts_per_token if shape.moe is not None else 1
    ffn = 2 * tokens * widest * routed * F32 + 2 * hidden
    logits = shape.vocab_size * tokens * F32 + hidden if holds_output else 0
    return max(attention, ffn, logits)


@dataclass(frozen=True)
class Device:
    """What one device holds: weights, KV cache, compute buffer, and the memory it has for them; and what one
    generated token reads of its weights (routed experts at their active share)."""

    name: str
    layers: int
    weights: int
    kv_cache: int
    compute: int
    budget: int | None  # bytes it may hold (None: not bounded, a host of unstated memory)
    read_per_token: int = 0

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache + self.compute

    @property
    def fits(self) -> bool:
        return self.budget is None or self.total <= self.budget


@dataclass(frozen=True)
class Placement:
    """One choice of -ngl, context and the layers whose routed experts stay on the host: each GPU's share and the
    host's."""

    gpu_layers: int
    context: int
    gpus: tuple[Device, ...]
    host: Device
    experts_on_host: int = 0  # offloaded layers whose routed experts llama.cpp's --fit leaves on the host

    @property
    def fits(self) -> bool:
        return all(device.fits for device in self.gpus) and self.host.fits


def gpu_budget(gpu: GpuSpec, setup: LocalSetup) -> int:
    """Bytes llama.cpp's --fit lets one GPU hold: its memory (a unified machine: the share the OS lets the GPU
    wire of its memory, --ram where given) less the CUDA context (a discrete GPU: costs.fit's stated 0.5 GiB) and
    --fit's 1024 MiB target."""
    if gpu.unified_memory:
        usable = (setup.ram_gib or gpu.memory_gib) * GIB * (gpu.gpu_memory_share or 1.0)
    else:
        usable = (gpu.reported_memory_gib or gpu.memory_gib) * GIB - CUDA_CONTEXT_GIB * GIB
    return int(usable) - FIT_TARGET_BYTES


def device_of_layer(index: int, first_gpu_layer: int, on_gpu: int, n_gpus: int) -> int:
    """The GPU llama.cpp's layer split gives layer `index` (the output layer is index n_layers): equal splits of
    the act_gpu_layers, llama-model.cpp's std::upper_bound over the cumulative splits."""
    return min(n_gpus - 1, (index - first_gpu_layer) * n_gpus // on_gpu)


def place(
    model: Model,
    weights: FileBytes,
    gpu: GpuSpec,
    setup: LocalSetup,
    gpu_layers: int,
    context: int,
    experts_on_gpu: int | None = None,
) -> Placement:
    """Where each layer, its cache and the compute buffers go at -ngl gpu_layers and n_ctx context. With
    `experts_on_gpu` = m, only the first m offloaded layers keep their routed experts on the GPU; the rest's stay
    on the host (llama.cpp's --fit: "distributing layers across devices with overflow to next device/system
    memory", which prints them as `-ot blk\\.N\\.ffn_(up|down|gate)_(ch|)exps=CPU`)."""
    n_layers = len(weights.layers)
    kv_type = KV_TYPES[setup.kv_dtype]
    kv = kv_bytes_per_layer(model, context, kv_type)
    on_gpu = min(gpu_layers, n_layers + 1)
    first = max(n_layers - gpu_layers, 0)
    n_gpus = setup.gpus if on_gpu else 0
    held = [[0, 0, 0, 0] for _ in range(n_gpus)]  # layers, weights, kv, read per token
    host = [0, weights.input_layer, 0, 0]
    largest_on_host = 0
    overflow = 0

    def read(index: int, share: int) -> int:
        """Bytes a token reads of `share` bytes of layer `index`: its routed experts at the active share."""
        experts = min(weights.experts_of(index), share)
        return share - experts + round(experts * weights.active)

    for index in range(n_layers):
        layer = weights.layers[index]
        if index >= first and n_gpus:
            device = held[device_of_layer(index, first, on_gpu, n_gpus)]
            spilled = experts_on_gpu is not None and index - first >= experts_on_gpu and weights.experts_of(index)
            on_host = weights.experts_of(index) if spilled else 0
            overflow += 1 if spilled else 0
            device[0] += 1
            device[1] += layer - on_host
            device[2] += kv[index]
            device[3] += read(index, layer) - (round(on_host * weights.active) if on_host else 0)
            host[1] += on_host
            host[3] += round(on_host * weights.active)
            largest_on_host = max(largest_on_host, on_host)
        else:
            host[0] += 1
            host[1] += layer
            host[2] += kv[index]
            host[3] += read(index, layer)
            largest_on_host = max(largest_on_host, layer)
    output_on_gpu = n_gpus > 0 and gpu_layers > n_layers
    output_device = device_of_layer(n_layers, first, on_gpu, n_gpus) if output_on_gpu else -1
    target = held[output_device] if output_on_gpu else host
    target[1] += weights.output_layer
    target[3] += weights.output_layer
    copies = largest_on_host if n_gpus else 0
    budget = gpu_budget(gpu, setup)
    devices = tuple(
        Device(
            f"GPU {number}", layers, weights_bytes, kv_bytes,
            compute_buffer(model, context, setup, number == output_device) + copies, budget, reading,
        )
        for number, (layers, weights_bytes, kv_bytes, reading) in enumerate(held)
    )  # fmt: skip
    tokens = min(context, setup.ubatch)
    host_compute = (
        compute_buffer(model, context, setup, True) if not output_on_gpu else tokens * model.shape.d_model * F32
    )
    host_budget = host_memory_budget(gpu, setup, devices)
    host_device = Device("host", host[0], host[1], host[2], host_compute, host_budget, host[3])
    return Placement(gpu_layers, context, devices, host_device, overflow)


def host_memory_budget(gpu: GpuSpec, setup: LocalSetup, devices: tuple[Device, ...]) -> int | None:
    """Bytes the host may hold: --ram (a unified machine: its memory less what the GPU holds), or unbounded."""
    memory = setup.ram_gib * GIB if setup.ram_gib is not None else gpu.memory_gib * GIB if gpu.unified_memory else None
    if memory is None:
        return None
    if gpu.unified_memory:
        return int(memory) - sum(device.total for device in devices)
    return int(memory)


def largest(low: int, high: int, fits: Callable[[int], bool]) -> int | None:
    """The largest n in [low, high] with fits(n), fits being monotone (true up to some n); None if none."""
    if low > high or not fits(low):
        return None
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def gpus_fit(placement: Placement) -> bool:
    return all(device.fits for device in placement.gpus)


@dataclass(frozen=True)
class Fit:
    """llama.cpp's choice: the layers on the GPUs, the context it runs, and the largest context at those layers."""

    placement: Placement
    max_context: int | None
    all_layers: int  # the layers an -ngl can count: the repeating ones and the output layer


def fit(model: Model, weights: FileBytes, gpu: GpuSpec, setup: LocalSetup) -> Fit:
    """-ngl and the context as llama.cpp's --fit chooses them (module docstring): the context asked for (else the
    model's own, lowered to no less than --fit-ctx while every layer is on the GPUs); then, for a mixture of experts
    whose layers without their routed experts all fit ("with only dense weights in device memory there is a total
    surplus"), every layer on the GPUs (-ngl n_layers) and the routed experts of as many layers as fit, front to
    back, the rest on the host; else the most layers that fit. And the largest context, in steps of 256, that fits
    the GPUs so."""
    n_layers = len(weights.layers)
    all_layers = n_layers + 1
    trained = model.shape.max_seq_len
    steps = max(trained // CONTEXT_STEP, 1)
    experts: int | None = None

    def at(layers: int, context: int) -> Placement:
        return place(model, weights, gpu, setup, layers, context, experts)

    if setup.ctx is not None:
        context = setup.ctx
    else:
        floor = min(FIT_MIN_CONTEXT, trained)
        full = largest(max(floor // CONTEXT_STEP, 1), steps, lambda step: gpus_fit(at(all_layers, step * CONTEXT_STEP)))
        context = trained if gpus_fit(at(all_layers, trained)) else full * CONTEXT_STEP if full else floor
    if setup.gpu_layers is not None:
        layers = min(setup.gpu_layers, all_layers)
    elif gpus_fit(at(all_layers, context)):
        layers = all_layers
    elif any(weights.experts) and gpus_fit(place(model, weights, gpu, setup, n_layers, context, 0)):
        layers = n_layers
        experts = largest(0, n_layers, lambda m: gpus_fit(place(model, weights, gpu, setup, n_layers, context, m)))
    else:
        layers = largest(0, all_layers, lambda count: gpus_fit(at(count, context))) or 0
    placement = at(layers, context)
    if layers == 0:
        max_context = trained if placement.host.fits else None
    else:
        step = largest(1, max(steps, context // CONTEXT_STEP), lambda s: gpus_fit(at(layers, s * CONTEXT_STEP)))
        max_context = step * CONTEXT_STEP if step is not None else None
    return Fit(placement, max_context, all_layers)


@dataclass(frozen=True)
class Speed:
    """Tokens/s of prompt processing and of generation, and the seconds each is made of."""

    prompt_tokens_per_s: float
    generation_tokens_per_s: float
    prompt_seconds: float
    generation_seconds: float


def forward_flops(model: Model, prompt: int, depth: int) -> int:
    """FLOPs of a forward over `prompt` tokens after `depth` cached ones: every matmul of each token, the head's of
    each (llama.cpp's pp computes every output row), and the causal attention scores and values between them."""
    linear = sum(count * op_flops(op, prompt, prompt, True) for count, op in model.layer_rows() if op.kind == "linear")
    attention_to = model.attention_flops(depth + prompt, causal=True)
    attention_before = model.attention_flops(depth, causal=True) if depth else 0
    return linear + model.outside_linear_flops(prompt) + attention_to - attention_before


def speed(model: Model, placement: Placement, weights: FileBytes, gpu: GpuSpec, setup: LocalSetup) -> Speed:
    """Prompt and generation tokens/s of a placement (module docstring). A generated token reads each device's
    weights (a routed expert layer at its active share) and the KV cache of its layers; a prompt's batch reads
    every weight."""
    gpu_bandwidth = gpu.memory_bandwidth_tb_per_s * 1e12 * setup.memory_efficiency
    host_bandwidth = (
        gpu_bandwidth if gpu.unified_memory else setup.ram_bandwidth_gb_per_s * 1e9 * setup.memory_efficiency
    )
    kv_type = KV_TYPES[setup.kv_dtype]
    kv_total = sum(kv_bytes_per_layer(model, max(setup.depth, 1), kv_type))
    layers = max(len(weights.layers), 1)
    host_kv = kv_total * placement.host.layers // layers
    gpu_kv = kv_total - host_kv
    # read_per_token leaves out the host's token_embd, read one row a token
    host_read = placement.host.read_per_token + host_kv
    gpu_read = sum(device.read_per_token for device in placement.gpus) + gpu_kv
    generation = gpu_read / gpu_bandwidth + host_read / host_bandwidth
    flops = forward_flops(model, setup.prompt, setup.depth)
    peak = gpu.peak_bf16_tflops * 1e12 * setup.compute_efficiency
    batches = -(-setup.prompt // setup.ubatch)
    host_weights = placement.host.weights - weights.input_layer
    if placement.gpus:
        gpu_weights = sum(device.weights for device in placement.gpus)
        compute = max(flops / peak, batches * gpu_weights / gpu_bandwidth)
        if gpu.unified_memory or min(setup.prompt, setup.ubatch) < OP_OFFLOAD_MIN_BATCH:
            copies = host_weights / host_bandwidth * batches
        else:
            copies = host_weights / ((gpu.host_link_gb_per_s or DEFAULT_HOST_LINK_GB_PER_S) * 1e9) * batches
        prompt_seconds = compute + copies
    else:  # nothing on the GPU: the host's cores, whose FLOP/s tfcost does not know, bounded by its memory
        prompt_seconds = batches * host_weights / host_bandwidth
    return Speed(setup.prompt / prompt_seconds, 1 / generation, prompt_seconds, generation)


def parse_memory_gib(text: str | float | int) -> float:
    """A memory size as people write it: 64, 64G, 64GB, 64GiB (all GiB: memory is sold in binary units), 512M."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text)
    written = str(text).strip().lower().removesuffix("b").removesuffix("i")
    scale = {"t": 1024.0, "g": 1.0, "m": 1 / 1024}
    factor = scale.get(written[-1:], None)
    number = written[:-1] if factor is not None else written
    try:
        value = float(number) * (factor or 1.0)
    except ValueError:
        raise ValueError(f"'{str(text)[:40]}' is not a memory size (64, 64G, 64GiB, 512M)") from None
    if not 0 < value < 1e6:
        raise ValueError(f"'{str(text)[:40]}' is not a memory size between 0 and 1,000,000 GiB")
    return value
