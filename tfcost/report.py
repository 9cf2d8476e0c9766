"""The result objects the CLI renders: every number of an estimate, computed by the core, in one place.

Each field's description is its label and its `unit` says how to print it, so the table, the JSON and the
comparison all fall out of the same object.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tfcost import flops, memory, params
from tfcost.schema import ModelShape, Workload
from tfcost.units import Unit


def quantity(label: str, unit: Unit) -> Any:
    """A reported number: its label and unit travel with it."""
    return Field(description=label, json_schema_extra={"unit": unit})


class Section(BaseModel):
    model_config = ConfigDict(frozen=True)


class ParamsReport(Section):
    total: int = quantity("total parameters", "count")
    active: int = quantity("active per token (MoE: k of E experts)", "count")
    embedding: int = quantity("embedding (incl. untied head)", "count")
    non_embedding: int = quantity("non-embedding N", "count")
    per_layer: int = quantity("per block", "count")
    breakdown: dict[str, int] = quantity("by part", "count")


class FlopsReport(Section):
    six_n_per_token: int = quantity("training per token, 6N", "flops")
    attention_scores_per_token: int = quantity("attention scores per token, 6*L*T*d", "flops")
    forward_per_sequence: int = quantity("forward, one sequence (exact matmuls)", "flops")
    training_per_sequence: int = quantity("training, one sequence (3x forward)", "flops")
    forward_breakdown: dict[str, int] = quantity("forward by part", "flops")


class KvCacheReport(Section):
    bytes_per_token: int = quantity("KV cache per token", "bytes")
    bytes: int = quantity("KV cache, batch x T tokens", "bytes")


class ScoreMatrixReport(Section):
    entries_per_head: int = quantity("score entries per head (T^2)", "count")
    bytes_per_layer: int = quantity("score matrices, one layer", "bytes")
    bytes: int = quantity("score matrices, all layers", "bytes")


class Estimate(Section):
    """Everything `tfcost estimate` reports for one model under one workload."""

    model: str
    source: str | None
    workload: Workload
    params: ParamsReport
    flops: FlopsReport
    kv_cache: KvCacheReport
    score_matrix: ScoreMatrixReport


SECTIONS: dict[str, str] = {
    "params": "Parameters",
    "flops": "FLOPs",
    "kv_cache": "KV cache",
    "score_matrix": "Score matrix",
}


def estimate(shape: ModelShape, workload: Workload) -> Estimate:
    """Run the core over one model and workload."""
    t, b, dtype, causal = workload.seq_len, workload.batch, workload.dtype, workload.causal
    return Estimate(
        model=shape.name,
        source=shape.source,
        workload=workload,
        params=ParamsReport(
            total=params.total_params(shape),
            active=params.active_params(shape),
            embedding=params.embedding_params(shape),
            non_embedding=params.non_embedding_params(shape),
            per_layer=params.params_per_layer(shape),
            breakdown=params.parameter_breakdown(shape),
        ),
        flops=FlopsReport(
            six_n_per_token=flops.six_n_flops_per_token(shape),
            attention_scores_per_token=flops.attention_score_flops_per_token(shape, t),
            forward_per_sequence=flops.forward_flops(shape, t, causal),
            training_per_sequence=flops.training_flops(shape, t, causal),
            forward_breakdown=flops.forward_flops_breakdown(shape, t, causal),
        ),
        kv_cache=KvCacheReport(
            bytes_per_token=memory.kv_cache_bytes_per_token(shape, dtype),
            bytes=memory.kv_cache_bytes(shape, t, b, dtype),
        ),
        score_matrix=ScoreMatrixReport(
            entries_per_head=memory.score_matrix_entries_per_head(t),
            bytes_per_layer=memory.score_matrix_bytes_per_layer(shape, t, b, dtype),
            bytes=memory.score_matrix_bytes(shape, t, b, dtype),
        ),
    )
