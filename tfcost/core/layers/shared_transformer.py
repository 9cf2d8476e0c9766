"""Zamba2's hybrid layer (Glorioso et al. 2024, "The Zamba2 Suite", arXiv:2411.15242 §2, Fig. 2), as transformers
5.24 builds it (Zamba2HybridLayer): a transformer block shared across depth, a d x d projection of its output, then
a Mamba-2 layer that adds it to its input.

Symbols: d d_model, H query heads, K key-value heads, Q head_dim (2d / H), F d_ff, r adapter_rank. One use:
    norm        RMSNorm over 2d, the hidden state and the input embeddings concatenated    shared
    attention   q, k, v from 2d (H*Q, K*Q, K*Q), scores and values, o: H*Q -> d          shared
    norm, MLP   RMSNorm over d; gate and up d -> F each, down F -> d                       shared
    adapters    LoRA on the MLP's gate and up, d -> r -> 2F; on q, k and v, 2d -> r -> 2d each (with attention
                adapters)                                                                  one per use
    linear      d -> d, no bias                                                            one per use
    Mamba-2     the mixer of tfcost.core.layers.mamba2, after the layer's own RMSNorm           one per use
The shared rows' weights are held by the first uses of each of the num_mem_blocks blocks; a `tied` layer uses one
of them (tfcost.core.ops.tied): its matmuls and its KV cache count at every use, the weights once.

Saved for the backward pass, at every use (what autograd keeps through Zamba2AttentionDecoderLayer and
Zamba2HybridLayer; docs/formulas.md, "Training activations"): the 2d-wide norm's input (the hidden state and the
embeddings concatenated), then attention and the MLP as tfcost.core.layers.attention and mlp keep them (q, k and v read
the normed 2d); the MLP's norm keeps its input, the attention's output (d: the shared block has no residual inside
it). Each adapter's down-projection reads the input of the matrix it adapts, which that matrix keeps already; its
up-projection keeps its r-wide input, the low-rank intermediate (whole on every tensor-parallel rank). The d x d
linear keeps its input, the block's output (d). The layer's Mamba-2 mixer and its norm keep what they keep in a
plain Mamba-2 layer.
"""

from __future__ import annotations

from tfcost.core.blocks import Block
from tfcost.core.layers.attention import attention_ops
from tfcost.core.layers.mamba2 import mamba2_ops
from tfcost.core.layers.mlp import mlp_rows
from tfcost.core.layers.norms import norm_op
from tfcost.core.ops import Op, Saved, tied
from tfcost.schema import ModelShape


def lora_rows(name: str, fan_in: int, rank: int, fan_out: int, part: str) -> list[Op]:
    """One LoRA adapter, fan_in -> r -> fan_out without biases, added to the output of the matrix it adapts."""
    # Saved: the up-projection's input, the r-wide intermediate (held whole on every tensor-parallel rank, as MLA's
    # latents are: the down-projection is replicated); the down-projection's input is the adapted matrix's, kept by
    # that matrix's row.
    return [
        Op(f"{name}_down", "linear", fan_in, rank, "token", part=part, flops_part="adapters"),
        Op(f"{name}_up", "linear", rank, fan_out, "token", part=part, flops_part="adapters",
           saves=(Saved("input: the low-rank intermediate", rank, split=False),)),
    ]  # fmt: skip


def shared_transformer_ops(shape: ModelShape, block: Block) -> list[Op]:
    """One use of a shared transformer block, with its adapters and projection, then the layer's Mamba-2 mixer."""
    assert shape.shared_transformer is not None  # the schema guarantees it for this mixer
    d, rank = shape.d_model, shape.shared_transformer.adapter_rank
    wide = 2 * d  # Zamba2Config.attention_hidden_size: the hidden state beside the input embeddings
    gate_up = (1 + (shape.mlp == "gated")) * shape.d_ff
    shared = [
        norm_op(shape, "norm/shared_attention", wide, saves_input=1),
        *attention_ops(shape, block, width=wide),
        norm_op(shape, "norm/shared_mlp", saves_input=1),
        *mlp_rows(shape, "mlp", shape.d_ff, 1, 1, "mlp"),
    ]
    adapters = lora_rows("adapter/mlp", d, rank, gate_up, "adapter/mlp")
    if shape.shared_transformer.attention_adapters:
        for name in ("q", "k", "v"):
            adapters += lora_rows(f"adapter/{name}", wide, rank, wide, "adapter/attention")
    linear = Op("shared_transformer/linear", "linear", d, d, "token", flops_part="shared_transformer/linear",
                saves=(Saved("input: the shared block's output", d, split=False),))  # fmt: skip
    return (tied(shared) if block.tied else shared) + adapters + [linear] + mamba2_ops(shape, block)
