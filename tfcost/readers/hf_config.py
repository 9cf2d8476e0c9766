"""A Hugging Face config.json, mapped onto tfcost's model schema. Pure: a dict in, a reading out, no I/O.

Every key of a config falls in one of three tiers, kept per family as data (FAMILIES, at the end):
- read: the fields that change costs, type-checked, with transformers' own defaults for those a config leaves out;
- refused: values that would change costs in a way tfcost does not model (a `Refusal` row names the reason);
- ignored: everything else. Keys known to change no count (dropouts, token ids, rotary base, the generic keys of
  transformers' PretrainedConfig in every version) are ignored silently; any other key is ignored and *reported*,
  so the user sees what was not understood (`--strict` makes that an error). A key that looks structural (an
  integer `num_*`, `n_*`, `*_size`, `*_dim`, or a `*layers*`/`*experts*` count) might change costs, so it is an
  error unless the user says `--lenient`. Every offending key is named at once, not just the first.
Multimodal wrappers (`text_config` beside a vision or audio tower) are read for their language model, and their
towers by tfcost.readers.families.towers where it has a reader for the wrapper; any other tower is named as not
priced. Reading the file is tfcost.readers.presets' job; fetching it from the Hub,
tfcost.readers.hub's. The family readers themselves live in tfcost.readers.families.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tfcost.errors import TfcostError
from tfcost.readers.families import attention_variants, base, classic, deepseek_v4, flags, linear, mla, ssm
from tfcost.readers.families.base import (
    BASE_IGNORED,
    GENERIC_DEFAULTS,
    Family,
    Fields,
    looks_structural,
    quantization,
    refusal_check,
)
from tfcost.readers.families.towers import TOWER_READERS, whole_model_tie

if TYPE_CHECKING:
    from tfcost.readers.safetensors import StoredFiles

# Every model_type tfcost reads, each family module's rows joined.
FAMILIES: dict[str, Family] = {
    **base.FAMILIES,
    **flags.FAMILIES,
    **mla.FAMILIES,
    **ssm.FAMILIES,
    **attention_variants.FAMILIES,
    **linear.FAMILIES,
    **deepseek_v4.FAMILIES,
    **classic.FAMILIES,
}

# Multimodal wrappers: the language model sits in `text_config`; these sub-configs hold towers tfcost does not price.
TOWER_CONFIGS = ("vision_config", "audio_config", "speech_config", "vision_tower_config")


@dataclass
class ConfigReading:
    """What a config.json says, as tfcost reads it: the preset mapping, the keys ignored and reported (dotted
    inside text_config), and the parts of a multimodal model that are not priced."""

    mapping: dict[str, Any]
    model_type: str
    ignored: list[str] = field(default_factory=list)
    not_priced: list[str] = field(default_factory=list)
    checkpoint_bytes: int | None = None  # a Hub checkpoint's stored bytes (tfcost.readers.hub), for a cross-check
    notes: list[str] = field(default_factory=list)  # what quantization_config's module lists left unpriced
    stored: StoredFiles | None = None  # a local model's files, read from their headers (tfcost.readers.safetensors)


def leftovers(fields: Fields, family: Family, lenient: bool) -> tuple[list[str], list[str]]:
    """(ignored and reported, structural unknowns) among the keys no reader took."""
    reported, structural = [], []
    for key in sorted(set(fields.config) - fields.read):
        value = fields.config[key]
        if key in BASE_IGNORED or key in family.harmless:
            continue
        if key in GENERIC_DEFAULTS:
            if value != GENERIC_DEFAULTS[key] and not (key == "pruned_heads" and value in ({}, None)):
                fields.problems.append(f"field '{key}' = {value!r} is not supported (changes the model built)")
            continue
        if key in family.unused or lenient or not looks_structural(key, value):
            reported.append(key)
        else:
            structural.append(key)
    return reported, structural


def model_type_of(config: dict[str, Any], where: str = "") -> str:
    model_type = config.get("model_type")
    if model_type is None:
        raise TfcostError(f"missing field '{where}model_type'; is this a Hugging Face config.json?")
    if not isinstance(model_type, str) or model_type not in FAMILIES:  # a list or a mapping cannot even be looked up
        raise TfcostError(
            f"unsupported model_type {model_type!r}: tfcost has no reader for it (estimate, compare, train and serve "
            "price what transformers builds, with --engine auto and pip install 'tfcost[hf]'); its readers: "
            f"{', '.join(sorted(FAMILIES))}"
        )
    return model_type


def towers(config: dict[str, Any]) -> list[str]:
    """The not-priced parts of a multimodal wrapper: each tower by its model_type, and the projector between."""
    parts = []
    for key in TOWER_CONFIGS:
        sub = config.get(key)
        if isinstance(sub, dict):
            kind = sub.get("model_type")
            parts.append(f"{key.removesuffix('_config')} tower" + (f" ({kind})" if isinstance(kind, str) else ""))
    return [*parts, "multimodal projector"] if parts else parts


def language_model_config(config: dict[str, Any]) -> dict[str, Any]:
    """The part of a config that read_config prices: the config itself, or a multimodal wrapper's text_config."""
    text, wrapper = config.get("text_config"), config.get("model_type")
    if isinstance(text, dict) and isinstance(wrapper, str) and wrapper not in FAMILIES:
        return language_model_config(text)
    return config


def has_reader(config: dict[str, Any]) -> bool:
    """Whether read_config has a reader for this config's language model (a wrapper's text_config included)."""
    model_type = language_model_config(config).get("model_type")
    return isinstance(model_type, str) and model_type in FAMILIES


def read_config(config: dict[str, Any], *, strict: bool = False, lenient: bool = False) -> ConfigReading:
    """Read a Hugging Face config dict: the preset mapping (without name or source), what was ignored, and what is
    not priced. `strict`: any ignored key is an error; `lenient`: structural-looking unknown keys are only reported.
    """
    text, wrapper = config.get("text_config"), config.get("model_type")
    if isinstance(text, dict) and isinstance(wrapper, str) and wrapper not in FAMILIES:  # a non-string: one error
        inner = read_config(text, strict=strict, lenient=lenient)
        outer = config.get("quantization_config")  # a wrapper's (Llama 4 FP8) covers its language model
        if outer is not None and "quantization" not in inner.mapping:
            inner.mapping["quantization"], inner.notes = quantization(
                inner.model_type, outer, inner.mapping.get("n_layers")
            )
        if wrapper in TOWER_READERS:
            inner.mapping["towers"] = TOWER_READERS[wrapper](config, text, inner.mapping["d_model"])
            inner.mapping["tied_embeddings"] = whole_model_tie(config)
            priced = [tower["name"] for tower in inner.mapping["towers"]]
            inner.not_priced = [part for part in towers(config) if part.split()[0] not in (*priced, "multimodal")]
            return read_wrapper_keys(inner)
        inner.not_priced = towers(config) or [f"the parts of {wrapper!r} around its language model"]
        inner.ignored = [f"text_config.{key}" for key in inner.ignored]
        return inner
    model_type = model_type_of(config)
    family = FAMILIES[model_type]
    fields = Fields(config, model_type)
    mapping = family.read(fields)
    if model_type in TOWER_READERS:  # a flat multimodal config (Phi-4-multimodal): its towers beside its keys
        mapping["towers"] = TOWER_READERS[model_type](fields.config, fields.config, mapping["d_model"])
        fields.read.update(TOWER_CONFIGS)
    notes: list[str] = []
    if fields.config.get("quantization_config") is not None:
        mapping["quantization"], notes = quantization(
            model_type, fields.raw("quantization_config", None), mapping.get("n_layers")
        )
    fields.read.add("quantization_config")
    for refusal in family.refused:
        refusal_check(fields, refusal)
    reported, structural = leftovers(fields, family, lenient)
    problems = list(fields.problems)
    if structural:
        many = len(structural) > 1
        problems.append(
            f"unrecognised field{'s' if many else ''} {', '.join(map(repr, structural))} "
            f"look{'' if many else 's'} structural: tfcost cannot tell whether "
            f"{'they change' if many else 'it changes'} costs (--lenient ignores and lists {'them' if many else 'it'})"
        )
    if strict and reported:
        problems.append(f"--strict: ignored field{'s' if len(reported) > 1 else ''} {', '.join(map(repr, reported))}")
    if problems:
        raise TfcostError(f"{model_type} config: {'; '.join(problems)}")
    return ConfigReading(mapping, model_type, reported, notes=notes)


def read_wrapper_keys(inner: ConfigReading) -> ConfigReading:
    """A wrapper whose towers are priced: the language model's reading, its ignored keys named inside
    text_config."""
    inner.ignored = [f"text_config.{key}" for key in inner.ignored]
    return inner


def shape_mapping(config: dict[str, Any]) -> dict[str, Any]:
    """The preset mapping (without name or source) equivalent to a Hugging Face config dict."""
    return read_config(config).mapping


def supported_types_markdown(width: int = 116) -> str:
    """docs/models.md's list of supported model_types, from the readers themselves (FAMILIES): each `name` in
    backticks, comma-separated, wrapped to `width` and indented two spaces (a continuation of a list item)."""
    import textwrap

    names = ", ".join(f"`{name}`" for name in sorted(FAMILIES)) + "."
    return "\n".join(textwrap.wrap(names, width, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False))
