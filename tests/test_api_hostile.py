"""The Python API given what a caller might pass (issue 37): a pathlib.Path model is a model, every wrong type or
value raises one of the documented errors (tfcost.errors.TfcostError, UsageError for an option) with a one-line
message, and what the command refuses the API refuses too."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import tfcost as tfc
from tfcost.errors import TfcostError, UsageError

PRESETS = Path(__file__).parent.parent / "presets" / "models"
WRONG = [0, 1.5, math.nan, "", [], ["x"], {"a": 1}, object(), b"x", True]
ARGUMENTS = {
    "estimate": ["model", "config", "overrides", "seq", "batch", "dtype", "gpu", "engine", "strict", "lenient",
                 "revision", "images", "image_size", "audio_seconds", "explain", "crossovers"],
    "train": ["model", "config", "overrides", "tokens", "seq", "gpu", "profile", "engine", "strict", "revision",
              "gpus", "zero", "micro_batch", "lora_targets", "no_such_option"],
    "serve": ["model", "overrides", "gpu", "profile", "engine", "gpus", "batch", "prompt", "weights_dtype"],
    "plan_train": ["model", "overrides", "gpu", "gpus", "seq", "tokens", "global_batch", "precision", "top", "price",
                   "no_such_option"],
    "plan_serve": ["model", "gpu", "gpus", "prompt", "generate", "ttft_ms", "tpot_ms", "weights_dtype", "kv_dtype",
                   "reserve", "top", "no_such_option"],
}  # fmt: skip


@pytest.mark.parametrize(("call", "argument"), [(call, name) for call, names in ARGUMENTS.items() for name in names])
def test_a_wrong_argument_raises_only_the_documented_errors(call, argument):
    """Each argument given each wrong type: the call runs (a value the schema takes, such as 0 images) or raises
    a TfcostError of one line; never an AttributeError, TypeError or RecursionError from inside."""
    model = "llama-3-8b" if call.startswith("plan") else "gpt2-small"
    for value in WRONG:
        arguments = {"model": model, argument: value}
        try:
            getattr(tfc, call)(**arguments)
        except TfcostError as error:
            assert "\n" not in str(error) and str(error), (call, argument, value)


def test_a_path_object_is_a_model_as_its_text_is():
    path = PRESETS / "gpt2-small.yaml"
    assert tfc.estimate(path) == tfc.estimate(str(path))
    assert tfc.serve(path) == tfc.serve(str(path))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: tfc.estimate("gpt2-small", engine="bogus"), "engine: expected one of auto, analytic, transformers"),
        (lambda: tfc.serve("gpt2-small", engine="bogus"), "engine: expected one of"),
        (lambda: tfc.plan_serve("llama-3-8b", top=0), "--top: 0 is outside the range a plan searches (1 to"),
        (lambda: tfc.plan_train("llama-3-8b", top=0), "--top: 0 is outside the range"),
        (lambda: tfc.plan_serve("llama-3-8b", ttft_ms=math.nan), "--ttft-ms: nan is outside the range"),
        (lambda: tfc.plan_serve("llama-3-8b", tpot_ms=math.inf), "--tpot-ms: inf is outside the range"),
        (lambda: tfc.plan_serve("llama-3-8b", gpus=None), "--gpus: expected a whole number, not NoneType"),
        (lambda: tfc.plan_serve("llama-3-8b", weights_dtype=8), "--weights-dtype: expected names"),
        (lambda: tfc.plan_train("llama-3-8b", no_such_option=1), "plan_train: no option 'no_such_option'"),
        (lambda: tfc.estimate(42), "model: expected a preset name, a path or a Hub id"),
        (lambda: tfc.estimate("gpt2-small", overrides=7), "overrides: expected KEY=VALUE texts or a mapping"),
        (lambda: tfc.estimate("gpt2-small", strict="yes"), "strict: expected True or False"),
        (lambda: tfc.estimate("gpt2-small", explain="no"), "explain: expected True or False"),
        (lambda: tfc.estimate("gpt2-small", crossovers=0), "crossovers: expected True or False"),
        (lambda: tfc.serve("gpt2-small", explain=1), "explain: expected True or False"),
        (lambda: tfc.serve("gpt2-small", gpu=None), "gpu: expected a GPU's name"),
        (lambda: tfc.train("gpt2-small", profile=3), "profile: expected a saved profile's name"),
        (lambda: tfc.estimate("gpt2-small", image_size=448), "--image-size sizes the images --images puts"),
    ],
)
def test_the_api_refuses_what_the_command_refuses(call, message):
    with pytest.raises(UsageError) as raised:
        call()
    assert message in str(raised.value), str(raised.value)


def test_a_self_containing_override_is_one_line():
    nested: list[object] = []
    nested.append(nested)
    with pytest.raises(UsageError, match="overrides"):
        tfc.estimate("gpt2-small", overrides={"sliding_window": nested})


@pytest.mark.parametrize("command", ["estimate", "train", "serve"])
def test_image_size_without_images_is_refused_by_the_command(tfcost, command):
    run = tfcost(command, "gpt2-small", "--image-size", "448")
    assert run.code == 2 and run.stderr.count("\n") == 1, run.stderr
    assert "--image-size sizes the images --images puts in the prompt: give --images N too" in run.stderr
