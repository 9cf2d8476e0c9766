"""The predicted step time against Korthikanti et al. 2022's measured Megatron-LM runs on A100s.

Table 3 (models and layouts) and Table 5 (seconds per iteration with selective recomputation and sequence
parallelism) of arXiv:2205.05198, as transcribed in NVIDIA Calculon's validation (calculon/megatron/validation.py,
validation/*_seqsel.json, which also give the interleaving: 3 virtual stages for 175B and 530B). All use T = 2048, a
51,200-token vocabulary, tensor parallelism 8 inside a DGX A100 and one data-parallel replica. No constant of the
prediction is fitted to these times; the ratios are what the measured GEMM, NCCL and FlashAttention efficiencies give.
"""

from __future__ import annotations

import pytest

from tfcost import step_time
from tfcost.presets import load_gpu, load_model
from tfcost.report import train
from tfcost.schema import ModelShape, TrainingSetup

# name: (d_model, heads, layers, tp, pp, global batch, micro-batch, virtual stages, published seconds per step)
KORTHIKANTI = {
    "22B": (6144, 64, 48, 8, 1, 4, 4, 1, 1.10),
    "175B": (12288, 96, 96, 8, 8, 64, 1, 3, 13.75),
    "530B": (20480, 128, 105, 8, 35, 280, 1, 3, 37.83),
    "1T": (25600, 160, 128, 8, 64, 512, 1, 1, 71.49),
}
# What the prediction gives today, predicted / published: a change to the model shows up here.
RATIOS = {"22B": 0.936, "175B": 0.942, "530B": 0.906, "1T": 0.959}


def run(name: str) -> tuple[ModelShape, TrainingSetup]:
    d, heads, layers, tp, pp, batch, micro, virtual, _ = KORTHIKANTI[name]
    gpt = load_model("gpt3-175b").model_dump()
    shape = ModelShape(**{**gpt, "name": name, "vocab_size": 51200, "d_model": d, "n_heads": heads,
                          "n_kv_heads": heads, "head_dim": d // heads, "n_layers": layers, "d_ff": 4 * d})  # fmt: skip
    setup = TrainingSetup(tokens=batch * 2048, seq_len=2048, micro_batch=micro, gpus=tp * pp, tp=tp, pp=pp,
                          global_batch=batch, virtual_stages=virtual, sequence_parallel=True,
                          recompute="selective", flash=False)  # fmt: skip
    return shape, setup


@pytest.mark.parametrize("name", sorted(KORTHIKANTI))
def test_korthikanti_step_time_within_15_percent(name):
    shape, setup = run(name)
    report = train(shape, load_gpu("a100-80gb"), setup)
    assert report.step is not None and report.time.throughput_from == "predicted step time"
    predicted = report.step.seconds["total"]
    published = KORTHIKANTI[name][-1]
    assert predicted / published == pytest.approx(1, abs=0.15)
    assert predicted / published == pytest.approx(RATIOS[name], abs=0.005)
    assert report.step.steps == 1  # --tokens = global batch x T: one step
    assert report.time.days * 86_400 == pytest.approx(predicted)


def test_22b_layer_matches_table_4():
    # Korthikanti et al. 2022 Table 4: one 22B layer, selective recompute + sequence parallelism, 7.2 ms forward
    # and 13.1 ms backward: a measurement apart from the step times above.
    shape, setup = run("22B")
    layer = step_time.layer_seconds(shape, load_gpu("a100-80gb"), setup)
    assert sum(layer.values()) * 1e3 == pytest.approx(7.2 + 13.1, rel=0.05)


def test_mfu_implied_beside_the_published():
    # Table 5's MFU with selective recompute + sequence parallelism: 41.5%, 51.4%, 56.0%, 56.3%.
    published = {"22B": 0.415, "175B": 0.514, "530B": 0.560, "1T": 0.563}
    for name, mfu in published.items():
        shape, setup = run(name)
        implied = train(shape, load_gpu("a100-80gb"), setup).time.model_utilization
        assert implied == pytest.approx(mfu, rel=0.15), name


def test_wave_quantization():
    # NVIDIA's guide §3.2: 108 SMs; 108 tiles fill one wave, 109 need two of which the second is nearly empty.
    assert step_time.wave_efficiency(256 * 108, 128, 108) == 1
    assert step_time.wave_efficiency(256 * 109, 128, 108) == pytest.approx(109 / 216)


def test_a_throughput_given_skips_the_prediction():
    shape, setup = run("22B")
    report = train(shape, load_gpu("a100-80gb"), setup.model_copy(update={"mfu": 0.4}))
    assert report.step is None and report.time.model_utilization == pytest.approx(0.4)


def test_a_gpu_without_link_figures_falls_back_to_the_default_mfu():
    shape, setup = run("175B")
    report = train(shape, load_gpu("rtx-4090"), setup)
    assert report.step is None and "the GPU table cannot predict" in report.time.throughput_from
