"""`plan`'s search budget and caps (issue 37, docs/security.md): a GPU count with thousands of divisors, a huge
global batch, targets that are no numbers and repeated list values are refused or folded before the search starts,
so no `plan` runs for minutes on what a command line claims."""

from __future__ import annotations

import json

import pytest

from tfcost.reports.plan import MAX_PLAN_CANDIDATES, MAX_PLAN_GPUS, divisor_count


def ordered_factorizations(n: int, factors: int) -> int:
    """By brute force: the tuples of `factors` positive integers whose product is n."""
    if factors == 1:
        return 1
    return sum(ordered_factorizations(n // d, factors - 1) for d in range(1, n + 1) if n % d == 0)


@pytest.mark.parametrize("n", [1, 8, 12, 360, 1024, 5040])
def test_divisor_count_is_the_number_of_ordered_factorizations(n):
    assert divisor_count(n) == ordered_factorizations(n, 2)
    assert divisor_count(n, 4) == ordered_factorizations(n, 4)


def one_line(run, code: int = 2) -> str:
    assert run.code == code and run.stdout == "" and run.stderr.count("\n") == 1, run.stderr
    return run.stderr


@pytest.mark.parametrize("kind", ["train", "serve"])
def test_a_gpu_count_past_the_cap_is_refused(tfcost, kind):
    message = one_line(tfcost("plan", kind, "llama-3-8b", "--gpus", str(MAX_PLAN_GPUS + 1)))
    assert f"--gpus: {MAX_PLAN_GPUS + 1:,} is outside the range a plan searches (1 to {MAX_PLAN_GPUS:,})" in message


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        # 110,880 = 2^5 3^2 5 7 11: tau_4 = C(8,3) C(5,3) 4^3 = 35,840 splits; B = 4M tokens / 4,096 = 1,024 (11
        # divisors) for training, 4 weight x 2 KV formats for serving.
        ("train", "110,880 GPUs x 1,024 sequences a step make 394,240 candidate layouts"),
        ("serve", "110,880 GPUs x 8 weight and KV formats make 286,720 candidate layouts"),
    ],
)
def test_a_gpu_count_with_many_divisors_is_refused_before_the_search(tfcost, kind, expected):
    assert divisor_count(110_880, 4) == 35_840
    message = one_line(tfcost("plan", kind, "llama-3-8b", "--gpus", "110880"))
    assert expected in message and f"past the search budget of {MAX_PLAN_CANDIDATES:,}" in message


def test_every_power_of_two_gpu_count_is_inside_the_budget_for_a_dense_model():
    """4,096 sequences a step (13 divisors) at 2^17 GPUs: C(20,3) = 1,140 splits x 13 = 14,820; serving's 8
    formats: 9,120."""
    assert divisor_count(MAX_PLAN_GPUS, 4) * divisor_count(4096) == 14_820 <= MAX_PLAN_CANDIDATES


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["train", "--global-batch", str(2**40)], "--global-batch: 1,099,511,627,776 is outside the range"),
        (["train", "--top", str(10**9)], "--top: 1,000,000,000 is outside the range"),
        (["serve", "--ttft-ms", "inf"], "--ttft-ms: inf is outside the range a plan searches"),
        (["serve", "--tpot-ms", "1e300"], "--tpot-ms: 1e+300 is outside the range"),
        (["serve", "--prompt", str(2**40)], "--prompt: 1,099,511,627,776 is outside the range"),
        (["serve", "--generate", str(2**40)], "--generate: 1,099,511,627,776 is outside the range"),
        (["serve", "--ttft-ms", "nan"], "--ttft-ms"),
        (["serve", "--weights-dtype", "bf16,nope"], "--weights-dtype: Input should be"),
    ],
)
def test_every_number_option_of_plan_is_capped(tfcost, argv, expected):
    kind, *options = argv
    assert expected in one_line(tfcost("plan", kind, "llama-3-8b", *options))


def test_a_repeated_list_value_is_searched_once(tfcost):
    once = json.loads(tfcost("plan", "serve", "llama-3-8b", "--weights-dtype", "bf16", "--kv-dtype", "fp8",
                             "-f", "json").stdout)  # fmt: skip
    repeated = tfcost("plan", "serve", "llama-3-8b", "--weights-dtype", ",".join(["bf16"] * 5000),
                      "--kv-dtype", "fp8,fp8, fp8", "-f", "json")  # fmt: skip
    assert repeated.code == 0, repeated.stderr
    assert json.loads(repeated.stdout) == once
    assert once["searched"] > 0
