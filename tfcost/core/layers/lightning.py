"""Lightning attention (MiniMax 2025, "MiniMax-01: Scaling Foundation Models with Lightning Attention",
arXiv:2501.08313 §2.2; Qin et al. 2024, Lightning Attention-2), as transformers 5.24 builds it
(MiniMaxLightningAttention).

Symbols: d d_model, H heads of Q = head_dim, C block size. One layer:
    qkv_proj     d -> 3*H*Q (SiLU-ed queries, keys and values)
    output_gate  d -> H*Q   (a sigmoid gate on the normed output)
    norm         RMSNorm over H*Q
    out_proj     H*Q -> d
FLOPs, matmuls only as FlopCounterMode counts them, in transformers' block loop (no padding: whole blocks of C and
a last one of T mod C): within a block, Q.K^T and its product with V over Q (2*2*Q per position pair and head, the
`block_entry` rate); across blocks, each position reads the Q x Q state (Q.S) and adds to it (K^T.V): 2*2*Q^2 per
position and head. A decode step runs the same two state products per token and no block pairs (causal
convention). State per sequence: the H x Q x Q key-value state, at the model's dtype (transformers keeps it so).
Saved for the backward pass (each op keeps what its backward reads): the projections' input (d), the SiLU's input
and output (3*H*Q each: queries, keys, values), the norm's input, the sigmoid gate and the normed output it
multiplies, the out-projection's input (H*Q each), and the H x Q x Q state each block reads (its queries times the
state of the blocks before it, at the model's dtype), one per block of C positions.
"""

from __future__ import annotations

from tfcost.core.blocks import Block
from tfcost.core.ops import Op, Saved, Span
from tfcost.schema import ModelShape


def lightning_ops(shape: ModelShape, block: Block) -> list[Op]:
    """One lightning-attention mixer's rows."""
    assert shape.lightning_attention is not None  # the schema guarantees it for a 'lightning' layer
    d, heads, q = shape.d_model, shape.n_heads, shape.head_dim
    width, blocked = heads * q, Span(chunk=shape.lightning_attention.block_size)
    part = "lightning/attention"
    return [
        Op(
            "lightning/qkv_proj",
            "linear",
            d,
            3 * width,
            "token",
            flops_part="lightning/qkv_proj",
            saves=(Saved("input (read by the output gate too)", d, split=False),),
        ),
        Op(
            "lightning/output_gate",
            "linear",
            d,
            width,
            "token",
            flops_part="lightning/output_gate",
            saves=(Saved("sigmoid gate and the normed output it multiplies", 2 * width),),
        ),
        Op(
            "lightning/block_pairs",
            "linear",
            2 * q,
            heads,
            "block_entry",
            copies=0,
            flops_part=part,
            span=blocked,
            saves=(Saved("SiLU input and output (queries, keys, values)", 6 * width),),
        ),
        Op(
            "lightning/state_products",
            "linear",
            q * q,
            2 * heads,
            "token",
            copies=0,
            flops_part=part,
            saves=(
                Saved("state each block reads", heads * q * q, per="chunk", chunk=shape.lightning_attention.block_size),
            ),
        ),
        Op("lightning/norm", "norm", width, 1, "weights", saves=(Saved("input", width),)),
        Op(
            "lightning/out_proj",
            "linear",
            width,
            d,
            "token",
            flops_part="lightning/out_proj",
            saves=(Saved("input", width),),
        ),
        Op("state/lightning", "state", heads * q * q, heads, "sequence"),
    ]
