"""The options shared by the commands: the model source, the workload, the output format; and turning options
into a validated setup schema. Choices and defaults are the schema's own (its Literal types and its fields' defaults),
so they are written once; typer shows them in --help.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from tfcost.api import validated as validated  # options -> setup is the Python API's step, shared with it
from tfcost.engines.dispatch import Engine
from tfcost.units import Dtype

if TYPE_CHECKING:
    from pydantic import BaseModel

    from tfcost.readers.presets import ModelSource

OutputFormat = Literal["table", "json", "markdown", "csv"]
TableFormat = Literal["table", "markdown", "csv"]


def default(schema: "type[BaseModel]", field: str) -> Any:
    """A setup field's default, for the option that sets it."""
    return schema.model_fields[field].default


def parse_length_option(text: str | int) -> int:
    """A length option's text (4096, 4k, 1M); click also passes the option's default through, already an int."""
    from tfcost.units import parse_length

    return text if isinstance(text, int) else parse_length(text)


LENGTH_HELP = "4096, 4k (= 4,096) or 1M (= 1,048,576)"
Seq = Annotated[
    int,
    typer.Option(
        "--seq", "-T", parser=parse_length_option, metavar="TOKENS", help=f"T: tokens per sequence: {LENGTH_HELP}."
    ),
]
Batch = Annotated[int, typer.Option("--batch", "-B", min=1, help="B: sequences in the batch.")]
Images = Annotated[
    int, typer.Option("--images", min=0, help="Images per sequence: their tokens join it, their vision tower runs.")
]
ImageSize = Annotated[
    int | None,
    typer.Option(
        "--image-size", min=1, help="Pixels on a side of each image [default: the tower's own].", show_default=False
    ),
]
AudioSeconds = Annotated[
    float,
    typer.Option(
        "--audio-seconds",
        min=0,
        max=86400,
        help="Seconds of audio per sequence: their tokens join it, the audio tower runs.",
        show_default=False,
    ),
]
DtypeOption = Annotated[Dtype, typer.Option("--dtype", help="Storage dtype of the KV cache and score matrix.")]
Causal = Annotated[
    bool,
    typer.Option(
        "--causal/--full",
        help="Count only the score entries the mask keeps in FLOPs: T(T+1)/2, fewer under a sliding window.",
    ),
]
FormatOption = Annotated[
    OutputFormat,
    typer.Option(
        "--format", "-f", help="table for people, json or csv for scripts (exact values), markdown for documents."
    ),
]
ExplainOption = Annotated[
    bool,
    typer.Option(
        "--explain",
        help="Show each quantity's formula with the model's numbers put in, and its source (JSON: 'explain').",
    ),
]


EngineOption = Annotated[
    Engine,
    typer.Option(
        "--engine",
        help="analytic: tfcost's own formulas; transformers: the model built by transformers on the meta device "
        "(needs tfcost[hf]); auto: analytic where tfcost reads the model_type, else transformers.",
    ),
]

# The model options, shared by every command that takes a model: pass all three to presets.resolve_model.
ModelArgument = Annotated[
    str | None,
    typer.Argument(
        help="A preset name (see `tfcost list`), a YAML preset file, a Hugging Face config.json path, or a Hub id "
        "(Qwen/Qwen3-8B: its config.json, from the HF cache or the Hub).",
        show_default=False,
    ),
]
ConfigOption = Annotated[
    str | None,
    typer.Option("--config", metavar="PATH", help="A local Hugging Face config.json to read instead of MODEL."),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Override a model field, validated like a preset: n_kv_heads=16, bias.qkv=true, "
        "moe.experts_per_token=4 (repeatable).",
    ),
]


StrictOption = Annotated[
    bool, typer.Option("--strict", help="Refuse a config.json with any field tfcost ignores (they are listed).")
]
LenientOption = Annotated[
    bool,
    typer.Option("--lenient", help="Ignore (and list) unknown config fields that look structural, such as num_*."),
]
RevisionOption = Annotated[
    str | None,
    typer.Option("--revision", metavar="REV", help="Branch, tag or commit of a Hub id's repository [default: main]."),
]


def load_source(
    model: str | None,
    config: str | None,
    overrides: list[str] | None,
    strict: bool,
    lenient: bool,
    revision: str | None,
) -> "ModelSource":
    """presets.resolve_source with the options every model-taking command has; what the source said that was not
    used goes to stderr as notes."""
    from tfcost.readers.presets import resolve_source
    from tfcost.render.notes import print_source_notes

    source = resolve_source(model, config, overrides or (), strict=strict, lenient=lenient, revision=revision)
    print_source_notes(source)
    return source


def parse_tokens(text: str) -> int:
    from tfcost.units import parse_count

    return parse_count(text)


GpuOption = Annotated[str, typer.Option("--gpu", help="GPU name from `tfcost gpus`.")]
ProfileOption = Annotated[
    str | None,
    typer.Option("--profile", help="A saved measured profile (`tfcost profiles`) in place of the GPU table."),
]


def load_profile_option(name: str | None) -> Any:
    """The named profile, or None (profiles are read only when asked for)."""
    if name is None:
        return None
    from tfcost.costs import profiles

    return profiles.load(name)


# A run is a model, a framework and a machine: the framework (a trainer or an engine, at a release) sets the
# conventions a user cannot be expected to know (tfcost.readers.frameworks); `train`, `serve` and `plan` take it.
FrameworkOption = Annotated[
    str | None,
    typer.Option(
        "--framework",
        metavar="NAME[@VERSION]",
        help="The trainer or engine that runs it (`tfcost frameworks`): its conventions, each sourced "
        "[default: none, tfcost's defaults, listed in the output].",
        show_default=False,
    ),
]
FrameworkSetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--framework-set",
        metavar="KEY=VALUE",
        help="Override one of the framework's conventions, validated: loss=full (repeatable; `tfcost frameworks "
        "NAME` lists them).",
    ),
]
