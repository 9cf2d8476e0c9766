"""The "Llama plus a few flags" families (tfcost/readers/families/flags.py) against transformers 5.24 on the meta
device.

For every model_type the default config (`AutoConfig.for_model(model_type)`) is written out in the two forms a
config.json holds it (the saved `to_diff_dict()` and the full `to_dict()`), read by tfcost as `--config` reads it,
and compared with the model transformers builds from that default: parameters, FlopCounterMode's forward FLOPs
at T = 100 and the cache bytes per token, exactly. Four defaults transformers itself cannot build (head_dim or
the expert counts default to None): tfcost refuses them naming the field, and the default with that one field
set (docs/family-truth.md, "patched") is checked instead. The published fixtures of these types are checked by
tests/test_truth.py like every reference config.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

WHY = "the truth tests need torch and transformers: pip install -e '.[test]'"
torch = pytest.importorskip("torch", reason=WHY)
pytest.importorskip("transformers", reason=WHY)

from truth_harness import Truth, build, config_from_dict, measure, parameter_count, saved_forms  # noqa: E402
from truth_harness import forward_flops as counted_flops  # noqa: E402

from tfcost.core.flops import forward_flops  # noqa: E402
from tfcost.core.memory import kv_cache_bytes_per_token  # noqa: E402
from tfcost.core.params import total_params  # noqa: E402
from tfcost.errors import TfcostError  # noqa: E402
from tfcost.readers.hf_config import FAMILIES, read_config  # noqa: E402
from tfcost.schema import ModelShape  # noqa: E402

T = 100  # the harness's forward length (truth_harness.T_LONG)
# The one field each unbuildable default lacks, as scripts/family_truth.py patches it.
PATCHES: dict[str, dict[str, Any]] = {
    "ministral": {"head_dim": 128},
    "hunyuan_v1_dense": {"head_dim": 128},
    "hunyuan_v1_moe": {"head_dim": 128},
    "dots1": {"n_routed_experts": 128, "num_experts_per_tok": 6, "n_shared_experts": 2, "first_k_dense_replace": 1},
}
# Defaults transformers cannot build that tfcost still reads as a config says (Nemotron's num_key_value_heads
# defaults to None, which its attention divides by; tfcost reads None as one key-value head per query head, as the
# Llama family's configs mean it): checked with the field set, as tests/data/hf_configs/nemotron-default.json sets it.
BUILD_PATCHES: dict[str, dict[str, Any]] = {"nemotron": {"num_key_value_heads": 48}}
# The types read through tfcost/readers/families/flags.py's rows.
TYPES = sorted(t for t, family in FAMILIES.items() if family.read.__module__ == "tfcost.readers.families.flags")


@cache
def forms(model_type: str) -> dict[str, dict[str, Any]]:
    """The default's saved and full forms, through JSON as a file holds them, with the patch if it needs one."""
    out = {}
    for form, data in saved_forms(model_type).items():
        data = json.loads(json.dumps(data))
        data.update(PATCHES.get(model_type, {}) | BUILD_PATCHES.get(model_type, {}))
        out[form] = data
    return out


@cache
def truth(model_type: str) -> Truth:
    """What transformers builds from the (patched) default: one build per type, shared by both forms."""
    return measure(config_from_dict(forms(model_type)["full"]), T, whole=False)


def priced(data: dict[str, Any]) -> tuple[int, int, int]:
    reading = read_config(data)
    shape = ModelShape.model_validate({"name": reading.model_type, **reading.mapping})
    return total_params(shape), forward_flops(shape, T), kv_cache_bytes_per_token(shape, "bf16")


@pytest.mark.thorough  # ~1-12 s a type on the meta device; tests/test_truth.py checks each type's fixture by default
@pytest.mark.parametrize("model_type", TYPES)
def test_default_config_prices_exactly_in_both_forms(model_type):
    measured = truth(model_type)
    assert measured.notes == []
    expected = (measured.params, measured.forward_flops, measured.kv_bytes_per_token)
    assert measured.state_bytes == 0  # attention only: nothing per sequence
    for form, data in forms(model_type).items():
        assert priced(data) == expected, form


@pytest.mark.parametrize("model_type", sorted(PATCHES))
def test_a_default_transformers_cannot_build_is_refused_naming_the_field(model_type):
    field = next(iter(PATCHES[model_type]))
    for data in saved_forms(model_type).values():
        with pytest.raises(TfcostError, match=f"missing field '{field}'"):
            read_config(json.loads(json.dumps(data)))


def test_every_family_reads_with_nothing_left_over():
    """Every key of both default forms is read or known to change no count: none is ignored and reported."""
    left = {
        (t, form): set(read_config(data).ignored) - FAMILIES[t].unused for t in TYPES for form, data in forms(t).items()
    }
    assert {key: keys for key, keys in left.items() if keys} == {}


@pytest.mark.parametrize("is_decoder", [True, False])
def test_bert_lm_head_model_prices_exactly(is_decoder):
    """A BERT config saved for BertLMHeadModel (transformers' causal-LM class for bert): the masked-LM head without
    the pooler, and with is_decoder a causal decoder that keeps keys and values (without it, no cache)."""
    from pathlib import Path

    data = json.loads((Path(__file__).parent / "data" / "hf_configs" / "bert-base.json").read_text())
    data.update(architectures=["BertLMHeadModel"], is_decoder=is_decoder)
    measured = measure(config_from_dict(data), T, whole=False)
    assert measured.architecture == "BertLMHeadModel"
    assert measured.kv_bytes_per_token == (36_864 if is_decoder else 0)  # 2 x 768 x 12 layers x 2 bytes
    assert priced(data) == (measured.params, measured.forward_flops, measured.kv_bytes_per_token)


def tiny(model_type: str) -> dict[str, Any]:
    """A small copy of a (patched) default MoE config: the same keys, widths cut so CPU routing is quick."""
    from tfcost.readers.families.flags import Flags

    cells = [cell.cell_contents for cell in FAMILIES[model_type].read.__closure__ or ()]
    moe = next(cell for cell in cells if isinstance(cell, Flags)).moe  # the row the reader was made from
    assert moe is not None
    data = dict(forms(model_type)["full"])
    data.update(vocab_size=512, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16)
    data.update(intermediate_size=96, num_hidden_layers=3, max_position_embeddings=256, layer_types=None)
    data.update({moe.experts[0].split("|")[0]: 6, moe.top_k[0].split("|")[0]: 2})
    if moe.width[0] != "intermediate_size":
        data[moe.width[0]] = 32
    for key in ("first_k_dense_replace", "moe_layer_start_index"):
        if key in data:
            data[key] = 1
    for key in ("moe_layer_end_index", "mlp_layer_types", "no_rope_layers"):
        data.pop(key, None)
    return {key: value for key, value in data.items() if value is not None}


MOE_TYPES = [t for t in TYPES if '"moe"' in json.dumps(read_config(forms(t)["full"]).mapping)]


@pytest.mark.parametrize("model_type", MOE_TYPES)
def test_moe_flops_with_real_routing(model_type):
    """transformers' eager experts loop over the experts the router picked, on CPU tensors: still k experts' worth
    of MLP per token, as tfcost counts (the meta-device builds above run batched_mm, without routing)."""
    torch.manual_seed(0)
    data = tiny(model_type)
    assert read_config(data).mapping["moe"]["experts_per_token"] == 2
    model = build(config_from_dict(data), device="cpu")
    params, flops, _ = priced(data)
    assert params == parameter_count(model)
    assert flops == counted_flops(model, T, device="cpu")[0]
