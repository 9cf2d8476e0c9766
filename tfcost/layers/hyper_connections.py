"""Manifold-constrained hyper-connections (mHC; Xie et al. 2026, DeepSeek-V4 technical report §2.2; transformers
5.24's DeepseekV4HyperConnection and DeepseekV4HyperHead): the residual is n parallel streams of d. Before each
sublayer (the mixer, the FFN) a projection of the n d flattened streams gives (2 + n) n mixing weights: n to
collapse the streams into the sublayer's input, n to expand its output back, n x n to mix the streams (made
doubly stochastic by Sinkhorn-Knopp iterations, elementwise); the n x n mix is then a matmul of the streams,
2 n^2 d FLOPs per token. After the last layer a head projects n d -> n weights that collapse the streams once more.

Parameters per sublayer: the (2 + n) n x n d projection, its (2 + n) n biases and 3 scales; the head: n x n d,
n biases and 1 scale. The normalisations are unweighted RMSNorms (no parameters).
"""

from __future__ import annotations

from tfcost.blocks import Block
from tfcost.ops import Op
from tfcost.schema import ModelShape

PART = "hyper_connections"


def hyper_connection_ops(shape: ModelShape, block: Block) -> tuple[Op, ...]:
    """A layer's hyper-connections: one before its mixer and one before its FFN (none without the slot)."""
    streams, d = shape.hyper_connections, shape.d_model
    sublayers = int(block.mixer != "none") + int(block.feed_forward)
    if not streams or not sublayers:
        return ()
    weights = (2 + streams) * streams
    return (
        Op(f"{PART}/mix", "linear", streams * d, weights, "token", False, sublayers, sublayers, PART, PART),
        Op(f"{PART}/bias_and_scales", "table", weights + 3, 1, "weights", copies=sublayers, part=PART),
        # The streams mixed by the per-token n x n weights: a matmul of activations, no weights of its own.
        Op(f"{PART}/streams", "linear", streams, streams * d, "token", False, 0, sublayers, PART, PART),
    )


def hyper_head_ops(shape: ModelShape) -> tuple[Op, ...]:
    """The streams' final collapse before the final norm (DeepseekV4HyperHead): n d -> n, n biases, 1 scale."""
    streams, d = shape.hyper_connections, shape.d_model
    if not streams:
        return ()
    return (
        Op(f"{PART}/head", "linear", streams * d, streams, "token", part=f"{PART}/head", flops_part=f"{PART}/head"),
        Op(f"{PART}/head_bias_and_scale", "table", streams + 1, 1, "weights", part=f"{PART}/head"),
    )
