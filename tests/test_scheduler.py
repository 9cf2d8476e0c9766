"""Serving under load (issue 39): the simulated scheduler, its percentiles, speculative decoding, prefix caching,
money and energy, each checked against a figure from outside the simulation."""

from __future__ import annotations

import json

import pytest
from test_cli import one_line_error

from tfcost.costs import energy, scheduler
from tfcost.errors import UsageError
from tfcost.readers.presets import load_gpu, load_model
from tfcost.reports.serve import serve
from tfcost.schema import ServingSetup


@pytest.fixture(scope="module")
def llama3():
    return load_model("llama-3-8b")


@pytest.fixture(scope="module")
def h100():
    return load_gpu("h100-sxm")


def test_percentile_is_numpys_linear_interpolation():
    # numpy.percentile's docstring: a = np.array([[10, 7, 4], [3, 2, 1]]); np.percentile(a, 50) -> 3.5
    assert scheduler.percentile([10, 7, 4, 3, 2, 1], 0.5) == 3.5
    # ... and its default 'linear' method: position (n - 1) x q, so the 90th of 1..11 is 10 and of 1..10 is 9.1
    assert scheduler.percentile(list(range(1, 12)), 0.9) == pytest.approx(10)
    assert scheduler.percentile(list(range(1, 11)), 0.9) == pytest.approx(9.1)
    assert scheduler.percentile([], 0.5) == 0.0


def test_expected_tokens_per_verify_step_is_leviathans():
    # Leviathan et al. 2023, eq. 1: E[tokens] = (1 - a^(K+1)) / (1 - a); their Table/figure example a = 0.8, K = 3:
    # 1 + 0.8 + 0.64 + 0.512 = 2.952
    assert scheduler.tokens_per_step(3, 0.8) == pytest.approx(2.952)
    # DeepSeek-V3's MTP: one drafted token accepted 85-90% of the time (report §5.4.3): 1.875 tokens at 0.875
    assert scheduler.tokens_per_step(*scheduler.MTP_DEFAULT) == pytest.approx(1.875)


def test_one_request_at_a_time_is_the_static_batch_of_one(llama3, h100):
    # At concurrency 1 with fixed lengths, nothing queues and every step carries the one request: its TTFT is the
    # batch-1 prefill and its TPOT the batch-1 mean decode step that serve_expected works out on its own path.
    setup = ServingSetup(prompt=1024, generate=256, concurrency=1, requests=5)
    report = serve(llama3, h100, setup)
    load, static = report.load, report.expected
    assert load is not None
    assert load.queueing_p99_ms == 0
    assert load.ttft_p50_ms == pytest.approx(static.ttft_ms, rel=0.01)
    assert load.tpot_p50_ms == pytest.approx(static.decode_mean_ms_per_token, rel=0.01)
    assert load.mean_batch == 1
    assert load.output_tokens_per_s_per_gpu == pytest.approx(256 / (load.e2e_p50_ms / 1000), rel=1e-6)


def test_closed_loop_obeys_littles_law(llama3, h100):
    # Little's law, L = lambda W: a closed loop holds N requests in flight, so the request rate times the mean
    # end-to-end latency is N, less the ramp-down at the end of a finite run (the last N requests leave alone,
    # about N / 2 x their latency of the run's 400 x latency / N: 2%).
    setup = ServingSetup(prompt=512, generate=128, concurrency=16, requests=400, length_spread=0.5)
    load = serve(llama3, h100, setup).load
    assert load is not None
    in_flight = load.request_throughput_per_s * load.e2e_mean_ms / 1000
    assert in_flight <= 16
    assert in_flight == pytest.approx(16, rel=0.03)


def test_poisson_arrivals_far_below_capacity_do_not_queue(llama3, h100):
    # A request every second to an engine that takes tens of milliseconds each: almost none waits, and the median
    # TTFT is the batch-1 prefill.
    setup = ServingSetup(prompt=1024, generate=64, rate=1, requests=50)
    report = serve(llama3, h100, setup)
    assert report.load is not None
    assert report.load.queueing_p50_ms == 0
    assert report.load.ttft_p50_ms == pytest.approx(report.expected.ttft_ms, rel=0.02)
    assert report.load.busy_share < 0.5


def test_load_rises_latency_and_throughput(llama3, h100):
    # More in flight: more tokens per second per GPU, each user slower.
    light = serve(llama3, h100, ServingSetup(prompt=1024, generate=256, concurrency=4, requests=64)).load
    heavy = serve(llama3, h100, ServingSetup(prompt=1024, generate=256, concurrency=64, requests=256)).load
    assert light is not None and heavy is not None
    assert heavy.output_tokens_per_s_per_gpu > 4 * light.output_tokens_per_s_per_gpu
    assert heavy.tpot_p50_ms > light.tpot_p50_ms
    assert heavy.ttft_p90_ms > light.ttft_p90_ms


def test_simulation_is_seeded(llama3, h100):
    base = ServingSetup(prompt=512, generate=128, rate=20, requests=200, length_spread=0.5)
    first = serve(llama3, h100, base).load
    again = serve(llama3, h100, base).load
    other = serve(llama3, h100, base.model_copy(update={"seed": 1})).load
    assert first == again
    assert other != first


def test_prefix_cache_leaves_its_share_out_of_the_prefill(llama3, h100):
    # Half of each 4096-token prompt cached: 2048 tokens a request prefilled, so the prefill's share of the busy
    # time falls and each lone request's TTFT with it.
    cold = serve(llama3, h100, ServingSetup(prompt=4096, generate=64, concurrency=1, requests=3)).load
    warm = serve(llama3, h100, ServingSetup(prompt=4096, generate=64, concurrency=1, requests=3, prefix_hit=0.5)).load
    assert cold is not None and warm is not None
    assert warm.ttft_p50_ms < 0.6 * cold.ttft_p50_ms
    assert warm.prefill_share < cold.prefill_share


def test_deepseek_v3_mtp_reports_its_acceptance_and_tokens_per_step():
    shape, h200 = load_model("deepseek-v3"), load_gpu("h200")
    setup = ServingSetup(gpus=8, weights_dtype="fp8", prompt=1024, generate=512, concurrency=16, requests=64)
    plain = serve(shape, h200, setup).load
    mtp = serve(shape, h200, setup.model_copy(update={"speculative": "mtp"})).load
    assert plain is not None and mtp is not None
    assert mtp.acceptance == 0.875  # DeepSeek-V3 report §5.4.3: 85-90%
    assert mtp.expected_tokens_per_step == pytest.approx(1.875)
    assert mtp.tokens_per_step == pytest.approx(1.875, abs=0.02)  # 64 x 512 draws of the seeded generator
    # Each verify step yields 1.875 tokens and costs more than a plain step: TPOT falls, ITL (a chunk) rises.
    assert mtp.tpot_p50_ms < plain.tpot_p50_ms
    assert mtp.itl_p50_ms > plain.itl_p50_ms


def test_speculative_options_need_a_method(llama3, h100):
    with pytest.raises(UsageError, match="--speculative"):
        serve(llama3, h100, ServingSetup(concurrency=1, requests=1, draft_tokens=2))


def test_energy_follows_board_power_and_the_decode_share(h100):
    # H100 SXM: 700 W (datasheet, presets/gpus.yaml); decode at 300 of 700 W (Ma et al. 2026's H200 top figure)
    assert h100.board_power_w == 700
    prefill_j, decode_j = energy.busy_joules(h100, 8, 1.0, 2.0) or (0, 0)
    assert prefill_j == 8 * 700
    assert decode_j == pytest.approx(8 * 300 * 2)
    assert 3.6e6 / energy.J_PER_KWH == 1  # a kWh is 3.6 MJ
    assert energy.dollars(2.0, 8, 3600) == 16  # 8 GPUs an hour at $2


def test_price_per_million_tokens_adds_up(llama3, h100):
    # $2 a GPU-hour: the run's cost split between input and output tokens is the whole run's cost.
    setup = ServingSetup(prompt=1024, generate=256, concurrency=8, requests=64, price_per_gpu_hour=2.0)
    load = serve(llama3, h100, setup).load
    assert load is not None and load.usd_per_million_input_tokens is not None
    assert load.usd_per_million_output_tokens is not None and load.usd_per_million_tokens is not None
    inputs, outputs = 64 * 1024, 64 * 256
    cost = 2.0 * load.duration_s / 3600
    assert load.usd_per_million_input_tokens * inputs / 1e6 + load.usd_per_million_output_tokens * outputs / 1e6 == (
        pytest.approx(cost)
    )
    assert load.usd_per_million_tokens == pytest.approx(cost / (inputs + outputs) * 1e6)


def test_serve_under_load_json_keys(tfcost):
    run = tfcost("serve", "llama-3-8b", "--concurrency", "8", "--requests", "16", "-P", "512", "-G", "64",
                 "--price-per-gpu-hour", "2", "--format", "json")  # fmt: skip
    assert run.code == 0, run.stderr
    load = json.loads(run.stdout)["load"]
    for key in ("ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p90_ms", "tpot_p99_ms",
                "itl_p50_ms", "itl_p99_ms", "e2e_p50_ms", "e2e_p99_ms", "queueing_p99_ms",
                "output_tokens_per_s_per_gpu", "output_tokens_per_s_per_user", "usd_per_million_input_tokens",
                "usd_per_million_output_tokens", "joules_per_output_token",
                "kwh_per_million_output_tokens"):  # fmt: skip
        assert isinstance(load[key], float), key
    assert load["requests"] == 16


def test_bad_load_gets_one_line(tfcost):
    assert "not both" in one_line_error(tfcost("serve", "llama-3-8b", "--concurrency", "2", "--rate", "1"), 2)
    assert "--prefix-hit" in one_line_error(tfcost("serve", "llama-3-8b", "--concurrency", "2", "--prefix-hit", "1"), 2)
    assert "--rate" in one_line_error(tfcost("serve", "llama-3-8b", "--rate", "0"), 2)
    assert "does not fit the KV cache" in one_line_error(
        tfcost("serve", "llama-3-8b", "--concurrency", "1", "-P", "600k", "-G", "1"), 2
    )
    assert "--pp" in one_line_error(tfcost("serve", "llama-3-8b", "--concurrency", "1", "--pp", "2"), 2)


def test_multi_step_scheduling_streams_a_pass_at_a_time(llama3, h100):
    # vLLM V0's --num-scheduler-steps N: N decode steps a scheduling pass, its tokens streamed when the pass ends, so
    # the time between streamed chunks is N decode steps, and a new prompt waits for the pass to end.
    base = ServingSetup(prompt=256, generate=256, rate=2, requests=100, chunked_prefill=False)
    one = serve(llama3, h100, base).load
    ten = serve(llama3, h100, base.model_copy(update={"scheduler_steps": 10})).load
    assert one is not None and ten is not None
    assert ten.itl_p50_ms == pytest.approx(10 * one.itl_p50_ms, rel=0.1)
    assert ten.tpot_p50_ms == pytest.approx(one.tpot_p50_ms, rel=0.1)  # the same steps, streamed later
    assert ten.ttft_p50_ms > one.ttft_p50_ms


def test_plan_serve_under_load_ranks_by_the_simulated_benchmark(tfcost):
    run = tfcost("plan", "serve", "llama-3-8b", "--gpus", "2", "-P", "512", "-G", "64", "--concurrency", "8",
                 "--requests", "16", "--weights-dtype", "bf16", "--kv-dtype", "bf16", "--format", "json")  # fmt: skip
    assert run.code == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["load"] == "closed loop, 8 requests in flight a replica"
    # 2 GPUs: tp 1 x 2 replicas, tp 2 x 1, and pp 2 (not modelled under load, refused with its reason)
    assert [(layout["tp"], layout["replicas"]) for layout in report["layouts"]] == [(1, 2), (2, 1)]
    assert report["rejected"] == {"not modelled under load (pipeline or attention data parallelism)": 1}
    # The replicas' throughput per GPU is the simulated benchmark's, as `serve --concurrency 8` prints it.
    single = json.loads(tfcost("serve", "llama-3-8b", "-P", "512", "-G", "64", "--concurrency", "8", "--requests",
                               "16", "--format", "json").stdout)["load"]  # fmt: skip
    assert report["layouts"][0]["tokens_per_s_per_gpu"] == pytest.approx(single["output_tokens_per_s_per_gpu"])
    assert report["layouts"][0]["ttft_ms"] == pytest.approx(single["ttft_mean_ms"])
    assert report["layouts"][0]["joules_per_output_token"] == pytest.approx(single["joules_per_output_token"])
    priced = json.loads(tfcost("plan", "serve", "llama-3-8b", "--gpus", "1", "-P", "512", "-G", "64", "--concurrency",
                               "8", "--requests", "16", "--weights-dtype", "bf16", "--kv-dtype", "bf16",
                               "--price-per-gpu-hour", "2", "--format", "json").stdout)  # fmt: skip
    with_price = json.loads(tfcost("serve", "llama-3-8b", "-P", "512", "-G", "64", "--concurrency", "8", "--requests",
                                   "16", "--price-per-gpu-hour", "2", "--format", "json").stdout)["load"]  # fmt: skip
    assert priced["layouts"][0]["usd_per_million_output_tokens"] == pytest.approx(
        with_price["usd_per_million_output_tokens"]
    )


def test_co2_is_the_grids_grams_times_the_energy(llama3, h100):
    setup = ServingSetup(prompt=512, generate=64, concurrency=4, requests=16, grid_gco2_per_kwh=400)
    load = serve(llama3, h100, setup).load
    assert load is not None and load.kwh_per_million_output_tokens is not None
    assert load.gco2_per_million_output_tokens == pytest.approx(400 * load.kwh_per_million_output_tokens)
    assert load.gco2_per_million_input_tokens == pytest.approx(400 * (load.kwh_per_million_input_tokens or 0))


def test_a_load_too_large_to_simulate_is_one_line(tfcost):
    # 100,000 requests of 512 tokens: 51.2M tokens, past the simulation's bound (scheduler.MAX_TOKENS).
    assert "fewer --requests" in one_line_error(
        tfcost("serve", "llama-3-8b", "--concurrency", "8", "--requests", "100000", "-G", "512"), 2
    )


def test_a_state_space_model_is_served_from_its_states(h100):
    # Mamba-Codestral keeps no KV cache (no blocks to page): its sequences are bounded by their states, and one at a
    # time its TTFT and TPOT are the static batch of one's.
    shape = load_model("mamba-codestral-7b")
    report = serve(shape, h100, ServingSetup(prompt=512, generate=64, concurrency=1, requests=3))
    assert report.load is not None and report.load.kv_capacity_tokens == 0
    assert report.load.ttft_p50_ms == pytest.approx(report.expected.ttft_ms, rel=0.01)
    assert report.load.tpot_p50_ms == pytest.approx(report.expected.decode_mean_ms_per_token, rel=0.01)


def test_weights_that_leave_no_cache_are_one_line(tfcost):
    assert "leave no KV cache" in one_line_error(tfcost("serve", "deepseek-v3", "--concurrency", "1"), 2)


def test_disaggregated_pools_send_the_prompts_kv_between_them(llama3, h100):
    # One request a second to 1 prefill + 1 decode replica: nothing queues, so the TTFT is the batch-1 prefill plus
    # the prompt's KV cache (1024 positions x 131,072 bytes, 32 layers x 8 KV heads x 128 x 2 x 2 bytes, llama-3-8b)
    # at the H100 row's 50 GB/s a GPU between nodes plus its 0.6 us hop, and each token a batch-1 decode step.
    setup = ServingSetup(prompt=1024, generate=64, rate=1, requests=20, disaggregated="1:1")
    report = serve(llama3, h100, setup)
    load = report.load
    assert load is not None and "1 prefill + 1 decode" in load.load
    transfer_ms = (1024 * 131_072 / 50e9 + 0.6e-6) * 1000
    assert load.ttft_p50_ms == pytest.approx(report.expected.ttft_ms + transfer_ms, rel=0.02)
    assert load.tpot_p50_ms == pytest.approx(report.expected.decode_mean_ms_per_token, rel=0.02)
    assert load.output_tokens_per_s_per_gpu == pytest.approx(load.output_tokens_per_s / 2)


def test_disaggregated_needs_an_open_load(llama3, h100):
    with pytest.raises(UsageError, match="--rate"):
        serve(llama3, h100, ServingSetup(concurrency=2, requests=4, disaggregated="1:1"))


def test_a_training_runs_energy_is_its_gpu_hours_at_board_power(tfcost):
    # Llama 2's model card counts a run's energy as GPU-hours x 'peak power capacity per GPU device' (its 7B:
    # 184,320 A100 hours at 400 W, 73.7 MWh, 31.22 tCO2eq: 423 g/kWh). Here 8 H100s at 700 W a GPU.
    run = tfcost("train", "llama-3-8b", "--gpus", "8", "--grid-gco2-per-kwh", "423", "--format", "json")
    assert run.code == 0, run.stderr
    time = json.loads(run.stdout)["time"]
    assert time["energy_kwh"] == pytest.approx(time["gpu_hours"] * 0.7)
    assert time["co2_kg"] == pytest.approx(time["energy_kwh"] * 0.423)
