"""A `layers:` stack with many distinct sliding windows keeps the curves near-linear in the number of windows. The
work is counted, not timed (a count holds on any machine): Python line events inside ops.form_polynomial, and the
evaluations of a cost function a curve makes."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from tfcost.core import curves, memory, ops
from tfcost.readers.presets import load_model
from tfcost.schema import ModelShape


def windows_stack(count: int) -> ModelShape:
    """gpt2-small's shape with `count` layers, each with its own sliding window (100, 101, ...)."""
    base = load_model("gpt2-small")
    data = base.model_dump(exclude_defaults=True)
    data["n_layers"] = count
    data["layers"] = [{"pattern": [{"window": 100 + index} for index in range(count)]}]
    return ModelShape.model_validate(data)


def lines_run(function: Callable[[], object], code: object) -> int:
    """Line events executed in frames of `code` while `function` runs."""
    events = 0

    def local(frame, event, arg):
        nonlocal events
        if event == "line":
            events += 1
        return local

    def global_(frame, event, arg):
        return local if frame.f_code is code else None

    sys.settrace(global_)
    try:
        function()
    finally:
        sys.settrace(None)
    return events


@pytest.mark.parametrize("quantity", ["attention", "forward", "kv_cache"])
def test_the_closed_form_of_a_stack_is_linear_in_its_windows(quantity):
    """Doubling the distinct windows (200 -> 400) doubles form_polynomial's work (a ratio near 2; summing every
    group at every start, as before, made it near 4), and the curve has a piece per window edge."""

    def build(count: int) -> Callable[[], curves.Curve]:
        shape = windows_stack(count)
        return {
            "attention": lambda: curves.attention_term_curve(shape),
            "forward": lambda: curves.forward_curve(shape, True),
            "kv_cache": lambda: curves.kv_cache_curve(shape, 1, "bf16"),
        }[quantity]

    small, large = build(200), build(400)
    assert small().is_closed_form and len(large().pieces) > 400
    work = [lines_run(make, ops.form_polynomial.__code__) for make in (small, large)]
    assert work[1] / work[0] < 2.5, work


def test_the_closed_form_still_agrees_with_the_core():
    """The linear fold gives the same values as the core's own evaluation, at and around the windows' edges."""
    from tfcost.core import flops

    shape = windows_stack(60)
    curve = curves.attention_term_curve(shape)
    points = [1, 2, 99, 100, 101, 102, 130, 158, 159, 160, 161, 500, 10**6]
    assert curve.values(points) == [flops.attention_score_flops_per_token(shape, t) for t in points]


def test_a_composed_cost_is_evaluated_directly_past_the_fitting_limit():
    """A quantity fitted from its function (a GPU's share, a prefill) would evaluate it a dozen times per piece:
    past MAX_FITTED_PIECES pieces, it is evaluated at the points asked only, as many calls as points, whatever the
    number of windows."""
    for count in (200, 400):
        shape = windows_stack(count)
        calls: list[int] = []

        def cost(t: int, shape: ModelShape = shape, calls: list[int] = calls) -> int:
            calls.append(t)

            return memory.kv_cache_bytes(shape, t, 1, "bf16")

        made = curves.curve(shape, cost)
        points = [512, 1024, 4096]
        values = made.values(points)
        assert len(calls) == len(points)
        assert values == [memory.kv_cache_bytes(shape, t, 1, "bf16") for t in points]
    few = windows_stack(3)
    assert curves.curve(few, lambda t: memory.kv_cache_bytes(few, t, 1, "bf16")).is_closed_form
