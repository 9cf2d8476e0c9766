"""The dense feed-forward block: up and down (d -> F -> d), plus a gate when gated (GLU variants, Shazeer 2020).
A plain MLP keeps a gate row with no copies, so its breakdown still lists "mlp/gate": 0."""

from __future__ import annotations

from tfcost.blocks import Block
from tfcost.ops import Op
from tfcost.schema import ModelShape


def mlp_rows(shape: ModelShape, prefix: str, d_ff: int, copies: int, uses: int, flops_part: str) -> list[Op]:
    """One MLP of width d_ff held `copies` times, `uses` of them per token (an MoE's experts), as gate, up, down."""
    d, bias = shape.d_model, shape.bias.mlp
    gated = shape.mlp == "gated"
    part = prefix if prefix.startswith("moe/") else ""
    return [
        Op(f"{prefix}/gate", "linear", d, d_ff, "token", bias, copies * gated, uses * gated, part, flops_part),
        Op(f"{prefix}/up", "linear", d, d_ff, "token", bias, copies, uses, part, flops_part),
        Op(f"{prefix}/down", "linear", d_ff, d, "token", bias, copies, uses, part, flops_part),
    ]


def mlp_ops(shape: ModelShape, block: Block) -> list[Op]:
    """The dense MLP of width d_ff (the layer's own width, where it has one), and its activation's learned scalars
    (Apertus's xIELU)."""
    rows = mlp_rows(shape, "mlp", block.d_ff or shape.d_ff, 1, 1, "mlp")
    if shape.activation_params:
        rows.append(Op("mlp/activation", "table", shape.activation_params, 1, "weights"))
    return rows
