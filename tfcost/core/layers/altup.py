"""Gemma 3n's additions to every layer: AltUp and LAuReL (Gemma3nTextAltUp, Gemma3nTextLaurelBlock in transformers).

AltUp (Baykal et al. 2023, "Alternating Updates for Efficient Transformers", NeurIPS): the residual stream is n
copies of width d (`altup_num_inputs`); each layer runs on one of them. Before the layer, a router (RMSNorm, then a
d -> n projection) gives n mixing weights per token, a n -> n^2 projection turns them into an n x n matrix, and the
n streams are mixed by it (a [d, n] x [n, n] matmul per token); after the layer the router runs again on the output,
a n -> n projection gives n correction weights, and a d-wide scale is kept. Outside the layers, n - 1 d x d
projections make the extra streams from the embeddings and n - 1 more fold them back before the final norm.
LAuReL (Menghani et al. 2024, "Learned Augmented Residual Layer"): a low-rank d -> r -> d branch and a norm.
Symbols: d d_model, n streams, r laurel_rank.
Saved for the backward pass (each op keeps what its backward reads): the router's normed inputs and its norm's
inputs (d each, twice a layer), the prediction and correction projections' inputs (n each), the n streams and the
n x n mixing weights of the mix (n*d + n^2); LAuReL's right projection's input (r) and its norm's input (d), its
left projection reading the layer's normed input that the attention keeps.
"""

from __future__ import annotations

from tfcost.core.layers.norms import norm_op
from tfcost.core.ops import Op, Saved
from tfcost.schema import ModelShape


def altup_layer_ops(shape: ModelShape) -> tuple[Op, ...]:
    """AltUp's and LAuReL's rows inside one layer."""
    rows: list[Op] = []
    d, streams, rank = shape.d_model, shape.altup_streams, shape.laurel_rank
    if streams:
        rows += [
            # The router runs twice a layer, on the stream before (predict) and on the output after (correct).
            Op(
                "altup/router",
                "linear",
                d,
                streams,
                "token",
                uses=2,
                flops_part="altup",
                saves=(Saved("inputs", 2 * d, split=False),),
            ),
            Op(
                "altup/prediction_coefs",
                "linear",
                streams,
                streams * streams,
                "token",
                flops_part="altup",
                saves=(Saved("input", streams, split=False),),
            ),
            # The n x n mix of the n streams, for each of the d channels: computed weights, no parameters.
            Op(
                "altup/mix",
                "linear",
                streams,
                streams,
                "token",
                copies=0,
                uses=d,
                flops_part="altup",
                saves=(Saved("streams and mixing weights", streams * d + streams * streams, split=False),),
            ),
            Op(
                "altup/correction_coefs",
                "linear",
                streams,
                streams,
                "token",
                flops_part="altup",
                saves=(Saved("input", streams, split=False),),
            ),
            Op("altup/output_scale", "table", d, 1, "weights"),
            norm_op(shape, "altup/router_norm", saves_input=2),
        ]
    if rank:
        rows += [
            Op("laurel/left", "linear", d, rank, "token", flops_part="laurel"),
            Op(
                "laurel/right",
                "linear",
                rank,
                d,
                "token",
                flops_part="laurel",
                saves=(Saved("input", rank, split=False),),
            ),
            norm_op(shape, "laurel/norm", saves_input=1),
        ]
    return tuple(rows)


def altup_embedding_ops(shape: ModelShape) -> tuple[Op, ...]:
    """The n - 1 d x d projections that make the extra streams from the token embeddings."""
    extra = shape.altup_streams - 1
    if extra < 1:
        return ()
    return (Op("embedding/altup_projections", "linear", shape.d_model, shape.d_model, "token", copies=extra,
               uses=extra, flops_part="altup"),)  # fmt: skip


def altup_head_ops(shape: ModelShape) -> tuple[Op, ...]:
    """The n - 1 d x d projections that fold the extra streams back before the final norm."""
    extra = shape.altup_streams - 1
    if extra < 1:
        return ()
    return (Op("altup_unembed_projections", "linear", shape.d_model, shape.d_model, "token", copies=extra,
               uses=extra, flops_part="altup"),)  # fmt: skip
