"""Training activations against what autograd keeps: a small DeepSeek-V4 (transformers 5.24, bf16, eager, on CPU),
every tensor its forward saves for backward recorded with torch.autograd.graph.saved_tensors_hooks, by the module
running when it was saved, deduplicated by storage, parameters left out, and only those still held once the
forward returns (a graph no output depends on is freed). Checked against the rows' saves (tfcost.core.layers):

- the two hyper-connections of a layer and the layer's mixing of the streams (DeepseekV4HyperConnection and
  DeepseekV4DecoderLayer): byte for byte, the operands of the 5 Sinkhorn-Knopp iterations the config asks for
  included (hc_sinkhorn_iters, read into hyper_connection_sinkhorn_iters);
- each compressor's window softmax, its 16-bit copy and the kv tensor the window sums read (HCA's kv output, CSA's
  laid-out series), per compressed entry or token, less the RoPE tables its rotation expands (not counted);
- CSA's lightning indexer: nothing is held.
The norms are checked by convention, not here: eager RMSNorm also keeps an fp32 copy of its input, which tfcost,
as Korthikanti et al. 2022, does not count (a fused norm keeps the input alone).
"""

from __future__ import annotations

import gc
import weakref
from collections import defaultdict
from functools import cache
from typing import Any

import pytest

WHY = "the truth tests need torch and transformers: pip install -e '.[test]'"
torch = pytest.importorskip("torch", reason=WHY)
pytest.importorskip("transformers", reason=WHY)

import truth_harness as th  # noqa: E402

from tfcost.core import activations  # noqa: E402
from tfcost.core.blocks import blocks  # noqa: E402
from tfcost.readers.hf_config import read_config  # noqa: E402
from tfcost.readers.presets import model_from_mapping  # noqa: E402

TOKENS = 64  # whole windows of both rates, so the compressed and the per-position tensors agree exactly
ROPE = 8  # the rotated channels: the RoPE tables each rotation expands are this wide
SMALL = {
    "model_type": "deepseek_v4", "vocab_size": 50, "hidden_size": 64, "moe_intermediate_size": 32,
    "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 32, "q_lora_rank": 16, "o_groups": 2,
    "o_lora_rank": 8, "n_routed_experts": 4, "num_experts_per_tok": 2, "index_n_heads": 2, "index_head_dim": 16,
    "index_topk": 4, "sliding_window": 8, "hc_mult": 4, "hc_sinkhorn_iters": 5, "qk_rope_head_dim": ROPE,
    "num_nextn_predict_layers": 0,
    "compress_rates": {"compressed_sparse_attention": 4, "heavily_compressed_attention": 8},
    "layer_types": ["heavily_compressed_attention", "compressed_sparse_attention"],
    "mlp_layer_types": ["moe", "moe"],
}  # fmt: skip
KINDS = {"heavily_compressed_attention": "heavily_compressed", "compressed_sparse_attention": "compressed_sparse"}


class Held:
    """A saved tensor (detached: a saved output must not hold its own graph) and the module that saved it."""

    def __init__(self, tensor: Any, where: str) -> None:
        self.tensor, self.where = tensor, where


@cache
def held_by_module(layer_index: int) -> dict[str, list[Any]]:
    """The tensors autograd holds after one forward of TOKENS tokens, saved inside the given decoder layer, by the
    name of the innermost module running ('' for the layer itself)."""
    torch.manual_seed(0)
    model = th.build(th.config_from_dict(SMALL), device="cpu").train()
    weights = {tensor.untyped_storage().data_ptr() for tensor in (*model.parameters(), *model.buffers())}
    running = ["outside"]

    def enter(name: str) -> Any:
        return lambda module, args: running.append(name)  # returns None: the input is left alone

    def leave(module: Any, args: Any, out: Any) -> None:
        running.pop()

    for name, module in model.model.layers[layer_index].named_modules():
        module.register_forward_pre_hook(enter(name))
        module.register_forward_hook(leave)
    saved: list[weakref.ref[Held]] = []

    def pack(tensor: Any) -> Held:
        box = Held(tensor.detach(), running[-1])
        saved.append(weakref.ref(box))
        return box

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda box: box.tensor):
        logits = model(torch.randint(0, SMALL["vocab_size"], (1, TOKENS)), use_cache=False).logits
    gc.collect()  # the output is alive: what it depends on stays held, the rest is freed
    by_storage: dict[int, Held] = {}
    for ref in saved:
        box = ref()
        if box is not None and box.where != "outside":
            by_storage.setdefault(box.tensor.untyped_storage().data_ptr(), box)
    out: dict[str, list[Any]] = defaultdict(list)
    for storage, box in by_storage.items():
        if storage not in weights:
            out[box.where].append(box.tensor)
    assert logits.requires_grad  # the graph was built
    return out


def nbytes(tensors: list[Any]) -> int:
    return sum(tensor.untyped_storage().nbytes() for tensor in tensors)


def rows_bytes(kind: str, rows: tuple[str, ...]) -> int:
    """What the named rows of one layer of this kind save over TOKENS tokens, in 16-bit training, unfused."""
    shape = model_from_mapping(read_config(dict(SMALL)).mapping, "test", "test")
    block = next(block for block, _ in blocks(shape) if block.mixer == kind)
    total = 0
    for row, saved in activations.held_tensors(shape, block, "none", flash=False, dropout=False):
        if row in rows:
            assert saved.per in ("token", "compressed")
            units = TOKENS if saved.per == "token" else TOKENS // saved.compress
            total += units * activations.saved_bytes(saved, "bf16-mixed")
    return total


@pytest.mark.parametrize("layer_index", [0, 1])
def test_hyper_connections_keep_what_autograd_keeps(layer_index):
    held = held_by_module(layer_index)
    kind = KINDS[SMALL["layer_types"][layer_index]]
    measured = sum(
        nbytes(tensors) for where, tensors in held.items() if where.split(".")[0] in ("", "attn_hc", "ffn_hc")
    )
    expected = rows_bytes(kind, ("hyper_connections/mix", "hyper_connections/streams"))
    assert (
        measured
        == expected
        == TOKENS * (2 * 4 * (2 * 4 * 64 + 1 + 24 + 12 + 10 * 16 + 9 * 4) + 2 * 2 * (4 * 64 + 4 + 16 + 64))
    )


@pytest.mark.parametrize("layer_index", [0, 1])
def test_compressors_keep_what_autograd_keeps_and_the_indexer_nothing(layer_index):
    held = held_by_module(layer_index)
    kind = KINDS[SMALL["layer_types"][layer_index]]
    compressor = [tensor for tensor in held["self_attn.compressor"] if tensor.shape[-1] != ROPE]
    expected = rows_bytes(kind, ("attention/compressor/kv", "attention/compressor/gate"))
    assert nbytes(compressor) == expected > 0
    assert not [where for where in held if "indexer" in where]
