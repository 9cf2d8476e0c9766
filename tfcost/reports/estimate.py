"""The result objects the CLI renders: every number of an estimate, computed by the core, in one place.

Each field's description is its label and its `unit` says how to print it, so the table, the JSON and the
comparison all fall out of the same object. `tfcost train`'s and `tfcost serve`'s reports are in train.py and
serve.py, and what every report shares in base.py, so that a command builds only the report classes (and imports
only the core) it prints.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from tfcost.core import flops, memory, params
from tfcost.costs import crossover, images
from tfcost.reports.base import Section, SourceNotes, quantity, stepped_cache_note
from tfcost.schema import GpuSpec, ModelShape, Workload


class ParamsReport(Section):
    total: int = quantity("total parameters", "count")
    active: int = quantity("active per token (MoE: k of E experts)", "count")
    active_non_embedding: int = quantity("active less input embeddings (cards)", "count")
    embedding: int = quantity("embedding (incl. untied head)", "count")
    non_embedding: int = quantity("non-embedding N", "count")
    per_layer: int = quantity("per block", "count")
    breakdown: dict[str, int] = quantity("by part", "count")
    by_layer_kind: dict[str, int] = quantity("by layer kind (count x one layer)", "count")
    mtp: int | None = quantity("multi-token prediction modules (not in the total)", "count")
    towers: int | None = quantity("vision and audio towers (in the total; not per text token)", "count")

    @model_serializer(mode="wrap")
    def _mtp_where_present(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in ("mtp", "towers"):  # a model without MTP modules or towers has no such key
            if data.get(key) is None:
                data.pop(key, None)
        return data


class FlopsReport(Section):
    six_n_per_token: int = quantity(f"training per token, 6N ({flops.SIX_N_MEANING})", "flops")
    attention_scores_per_token: int = quantity("attention scores per token, 6*L*T*d", "flops")
    forward_per_sequence: int = quantity("forward, one sequence (exact matmuls)", "flops")
    training_per_sequence: int = quantity("training, one sequence (3x forward)", "flops")
    forward_breakdown: dict[str, int] = quantity("forward by part", "flops")
    by_layer_kind: dict[str, int] = quantity("forward by layer kind", "flops")


class ImagesReport(Section):
    """Images in each sequence's prompt (--images): what they add to it, and their vision tower's forward pass."""

    images: int = quantity("images per sequence", "count")
    image_size: int = quantity("pixels on a side of each image (as fed to the tower)", "count")
    tokens: int = quantity("image tokens added to T", "whole")
    seq_len: int = quantity("T with the image tokens (every figure below)", "whole")
    tower_forward: int = quantity("vision tower forward, the images", "flops")


class AudioReport(Section):
    """Audio in each sequence's prompt (--audio-seconds): the tokens it adds and its audio tower's forward pass."""

    seconds: float = quantity("seconds of audio per sequence", "count")
    tokens: int = quantity("audio tokens added to T", "whole")
    seq_len: int = quantity("T with the image and audio tokens (every figure below)", "whole")
    tower_forward: int = quantity("audio tower forward, the audio", "flops")


def audio_report(shape: ModelShape, workload: Workload) -> AudioReport | None:
    if not workload.audio_seconds:
        return None
    return AudioReport(
        seconds=workload.audio_seconds,
        tokens=images.audio_prompt_tokens(shape, workload.audio_seconds),
        seq_len=images.with_image_tokens(shape, workload).seq_len,
        tower_forward=images.audio_forward_flops(shape, workload.audio_seconds),
    )


def images_report(shape: ModelShape, workload: Workload) -> ImagesReport | None:
    if not workload.images:
        return None
    tokens = images.images_tokens(shape, workload.images, workload.image_size)
    return ImagesReport(
        images=workload.images,
        image_size=workload.image_size or shape.towers[0].image_size,
        tokens=tokens,
        seq_len=images.with_image_tokens(shape, workload).seq_len,
        tower_forward=images.images_forward_flops(shape, workload.images, workload.image_size),
    )


class KvCacheReport(Section):
    bytes_per_token: int | None = quantity("KV cache per token", "bytes")  # None: the cache steps (note says so)
    bytes: int = quantity("KV cache, batch x T tokens", "bytes")
    state_bytes: int = quantity("recurrent state, batch (independent of T)", "bytes")
    note: str | None = Field(
        default=None,
        description="why there is no per-token figure: a cache that steps every m positions (stepped_cache_note)",
        exclude_if=lambda note: note is None,
    )


class ScoreMatrixReport(Section):
    entries_per_head: int = quantity("score entries per head (T^2)", "count")
    bytes_per_layer: int = quantity("score matrices, one layer", "bytes")
    bytes: int = quantity("score matrices, all layers", "bytes")


class CrossoverReport(Section):
    """A crossover (tfcost.costs.crossover.Crossover) with exact numbers only: T rounded down, the crossing as a
    fraction
    "p/q" where it is rational, the fixed cost it crosses, or the reason there is none."""

    model: str
    name: str
    label: str
    batch: int
    seq_len: int | None
    exact: str | None
    level: int
    reason: str | None


def crossover_reports(found: list[crossover.Crossover]) -> list[CrossoverReport]:
    return [
        CrossoverReport(
            model=c.model,
            name=c.name,
            label=c.label,
            batch=c.batch,
            seq_len=c.seq_len,
            exact=c.exact,
            level=c.level,
            reason=c.reason,
        )
        for c in found
    ]


class Estimate(SourceNotes):
    """Everything `tfcost estimate` reports for one model under one workload."""

    model: str
    source: str | None
    engine: str = "analytic"  # which engine answered; the transformers engine's report says "transformers"
    workload: Workload
    params: ParamsReport
    images: ImagesReport | None = Field(default=None, exclude_if=lambda images: images is None)
    audio: AudioReport | None = Field(default=None, exclude_if=lambda audio: audio is None)
    flops: FlopsReport
    kv_cache: KvCacheReport
    score_matrix: ScoreMatrixReport
    # The lesson's crossovers in T (tfcost.costs.crossover), rounded down; None where the caller left them out
    # (compare's table and CSV print none, and they were a third of pricing a preset): no key in the JSON then.
    crossovers: list[CrossoverReport] | None = Field(exclude_if=lambda found: found is None)


SECTIONS: dict[str, str] = {
    "params": "Parameters",
    "images": "Images",
    "audio": "Audio",
    "flops": "FLOPs",
    "kv_cache": "KV cache",
    "score_matrix": "Score matrix",
    "stored": "Stored bytes (the files' headers)",
}


def estimate(
    shape: ModelShape,
    workload: Workload,
    gpu: GpuSpec | None = None,
    explained: bool = False,
    with_crossovers: bool = True,
) -> Estimate:
    """Run the core over one model and workload; with a GPU, also the T at which a score matrix outgrows it;
    `explained`: with every quantity's working (tfcost.reports.explain); `with_crossovers` false: crossovers None."""
    # Images (--images) lengthen each sequence by their tokens; every figure is then the longer sequence's.
    t, b, dtype, causal = (
        images.with_image_tokens(shape, workload).seq_len,
        workload.batch,
        workload.dtype,
        workload.causal,
    )
    lines = None
    if explained:
        from tfcost.reports.explain import estimate_lines  # the working's module: only for --explain

        lines = estimate_lines(shape, t, b, dtype, causal)
    return Estimate(
        explain=lines,
        model=shape.name,
        source=shape.source,
        workload=workload,
        params=ParamsReport(
            total=params.total_params(shape),
            active=params.active_params(shape),
            active_non_embedding=params.active_params_less_input_embeddings(shape),
            embedding=params.embedding_params(shape),
            non_embedding=params.non_embedding_params(shape),
            per_layer=params.params_per_layer(shape),
            breakdown=params.parameter_breakdown(shape),
            by_layer_kind=params.params_by_layer_kind(shape),
            mtp=params.mtp_params(shape) if shape.mtp_layers else None,
            towers=params.towers_params(shape) if shape.towers else None,
        ),
        images=images_report(shape, workload),
        audio=audio_report(shape, workload),
        flops=FlopsReport(
            six_n_per_token=flops.six_n_flops_per_token(shape),
            attention_scores_per_token=flops.attention_score_flops_per_token(shape, t),
            forward_per_sequence=images.forward_flops(shape, workload),
            training_per_sequence=images.training_flops(shape, workload),
            forward_breakdown=images.forward_flops_breakdown(shape, workload),
            by_layer_kind=flops.flops_by_layer_kind(shape, t, causal),
        ),
        kv_cache=KvCacheReport(
            bytes_per_token=None if memory.cache_steps(shape) else memory.kv_cache_bytes_per_token(shape, dtype),
            bytes=memory.kv_cache_bytes(shape, t, b, dtype),
            state_bytes=memory.state_bytes(shape, b, dtype),
            note=stepped_cache_note(shape, t),
        ),
        score_matrix=ScoreMatrixReport(
            entries_per_head=memory.score_matrix_entries_per_head(t),
            bytes_per_layer=memory.score_matrix_bytes_per_layer(shape, t, b, dtype),
            bytes=memory.score_matrix_bytes(shape, t, b, dtype),
        ),
        crossovers=crossover_reports(crossover.crossovers(shape, b, dtype, gpu)) if with_crossovers else None,
    )
