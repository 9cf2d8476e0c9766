"""Manifold-constrained hyper-connections (mHC; Xie et al. 2026, DeepSeek-V4 technical report §2.2; transformers
5.24's DeepseekV4HyperConnection and DeepseekV4HyperHead): the residual is n parallel streams of d. Before each
sublayer (the mixer, the FFN) a projection of the n d flattened streams gives (2 + n) n mixing weights: n to
collapse the streams into the sublayer's input, n to expand its output back, n x n to mix the streams (made
doubly stochastic by Sinkhorn-Knopp iterations, elementwise); the n x n mix is then a matmul of the streams,
2 n^2 d FLOPs per token. After the last layer a head projects n d -> n weights that collapse the streams once more.

Parameters per sublayer: the (2 + n) n x n d projection, its (2 + n) n biases and 3 scales; the head: n x n d,
n biases and 1 scale. The normalisations are unweighted RMSNorms (no parameters).

Saved for the backward pass, per sublayer and token (what autograd keeps through DeepseekV4HyperConnection and
the layer's mixing, DeepseekV4DecoderLayer; the module runs in fp32, _keep_in_fp32_modules_strict):
    mix       the flattened streams cast to fp32 (the norm's input, n d), the norm's reciprocal RMS (1), the normed
              streams the fn matmul reads (n d), its (2 + n) n logits (read by the three scale products), the pre
              and post sigmoids' outputs (2n), pre + eps (n, the collapse product's operand), the comb softmax's
              output (n^2) and the Sinkhorn-Knopp normalisations': each of the 2I - 1 divisions keeps its
              numerator (n^2) and its denominator (n), all fp32 (I = hc_sinkhorn_iters, the model's
              hyper_connection_sinkhorn_iters)
    streams   the input streams (n d, read by the collapse and the n x n mix), post and comb cast to the model's
              dtype (n + n^2, the expand product's and the mix matmul's operands) and the sublayer's output (d,
              the expand product's other operand)
All of it is the residual stream's, outside the tensor-parallel region (split only by sequence parallelism).
The final collapse (hyper_head_ops) is held outside the layers, with the final norm's input.
"""

from __future__ import annotations

from tfcost.core.blocks import Block
from tfcost.core.ops import Op, Saved
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
        Op(f"{PART}/mix", "linear", streams * d, weights, "token", False, sublayers, sublayers, PART, PART,
           saves=mix_saves(streams, d, sublayers, shape.hyper_connection_sinkhorn_iters)),
        Op(f"{PART}/bias_and_scales", "table", weights + 3, 1, "weights", copies=sublayers, part=PART),
        # The streams mixed by the per-token n x n weights: a matmul of activations, no weights of its own.
        Op(f"{PART}/streams", "linear", streams, streams * d, "token", False, 0, sublayers, PART, PART,
           saves=streams_saves(streams, d, sublayers)),
    )  # fmt: skip


def mix_saves(streams: int, d: int, sublayers: int, iterations: int) -> tuple[Saved, ...]:
    """What computing the mixing weights keeps, per token, for each of the layer's `sublayers` (see the module's
    docstring): the norm's fp32 input and reciprocal RMS, the fn matmul's fp32 input, its logits, the sigmoids' and
    the collapse weights, and the softmax and 2I - 1 Sinkhorn divisions' operands (I = `iterations`)."""
    n, divisions = streams, 2 * iterations - 1

    def fp32(what: str, width: int) -> Saved:
        return Saved(what, sublayers * width, store="fp32", split=False)

    return (
        fp32("input streams cast to fp32 (the norm's input)", n * d),
        fp32("the norm's reciprocal RMS", 1),
        fp32("input: the normed streams", n * d),
        fp32("output: the pre, post and comb logits", (2 + n) * n),
        fp32("pre and post sigmoids' outputs, pre + eps", 3 * n),
        fp32("comb softmax output and the Sinkhorn divisions' numerators", (1 + divisions) * n * n),
        fp32("the Sinkhorn divisions' denominators", divisions * n),
    )


def streams_saves(streams: int, d: int, sublayers: int) -> tuple[Saved, ...]:
    """What mixing the streams keeps, per token, for each sublayer: the input streams (read by the collapse and the
    n x n mix), post and comb at the model's dtype, and the sublayer's output the expand product multiplies."""
    n = streams
    return (
        Saved("input streams (read by the collapse and the mix)", sublayers * n * d, split=False),
        Saved("post and comb at the model's dtype", sublayers * (n + n * n), split=False),
        Saved("the sublayer's output (the expand product's operand)", sublayers * d, split=False),
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
