"""The GPU spec table: it validates, its units convert, and ridge points match the reference's table."""

from __future__ import annotations

import pytest

from tfcost.errors import TfcostError
from tfcost.hardware.rates import bandwidth_bytes_per_s, memory_bytes, peak_flops_per_s, ridge_point
from tfcost.readers.presets import all_gpus, gpu_for_device_name, load_gpu, load_model
from tfcost.reports.train import train
from tfcost.schema import TrainingSetup

ISSUE_GPUS = {"h100-sxm", "h100-pcie", "h200", "b200", "a100-40gb", "a100-80gb", "a10g", "l4", "l40s",
              "rtx-4090", "rtx-3090", "v100", "mi300x"}  # fmt: skip
# Issue 12's additions (sources on each row; figures a secondary gave are marked UNVERIFIED in the row).
ISSUE_12_GPUS = {"h800", "h20", "b300", "gb200", "rtx-a6000", "rtx-5090", "mi325x", "mi355x", "gaudi3", "tpu-v4",
                 "tpu-v5e", "tpu-v5p", "tpu-v6e"}  # fmt: skip
# Issue 22: torchtitan's Grand Teton H100 (96 GB HBM2e at 2.4 TB/s, 500 W), which its benchmarks ran on.
ISSUE_22_GPUS = {"h100-96gb-500w", "h100-nvl", "h200-nvl"}
# Issue 36 (`tfcost fit`): consumer and workstation cards, unified-memory machines, Apple M1-M4, and GB300.
ISSUE_36_GPUS = {"rtx-4080", "rtx-4070", "rtx-3060", "rtx-3080", "rtx-5080", "rtx-5070", "rtx-6000-ada",
                 "rtx-pro-6000", "rx-7900-xtx", "dgx-spark", "strix-halo", "gb300",
                 *(f"apple-m{n}{tier}" for n in (1, 2, 3) for tier in ("", "-pro", "-max", "-ultra")),
                 "apple-m4", "apple-m4-pro", "apple-m4-max"}  # fmt: skip


def test_table_has_every_gpu_with_a_source():
    gpus = all_gpus()
    assert {gpu.name for gpu in gpus} == ISSUE_GPUS | ISSUE_12_GPUS | ISSUE_22_GPUS | ISSUE_36_GPUS
    assert all(gpu.source for gpu in gpus)


@pytest.mark.parametrize(
    ("name", "ridge"),
    # docs/formulas.md, "Ridge point" (dense BF16 peak / bandwidth, FLOP per byte).
    [("h100-sxm", 295), ("h100-pcie", 378), ("h200", 206), ("b200", 281), ("a100-40gb", 201),
     ("a100-80gb", 153), ("l4", 403), ("l40s", 419), ("rtx-4090", 164), ("rtx-3090", 76), ("v100", 139),
     ("mi300x", 247)],
)  # fmt: skip
def test_ridge_points(name, ridge):
    assert round(ridge_point(load_gpu(name), "bf16")) == ridge


def test_units():
    h100 = load_gpu("H100-SXM")
    assert peak_flops_per_s(h100, "bf16") == pytest.approx(989.4e12)
    assert memory_bytes(h100) == 80 * 2**30
    assert bandwidth_bytes_per_s(h100) == pytest.approx(3.35e12)
    assert peak_flops_per_s(load_gpu("a100-80gb"), "fp8") is None
    # torchtitan's benchmark notes: "96GB HBM2e with 2.4 TB/sec peak memory bandwidth"
    grand_teton = load_gpu("h100-96gb-500w")
    assert (memory_bytes(grand_teton), bandwidth_bytes_per_s(grand_teton)) == (96 * 2**30, pytest.approx(2.4e12))


@pytest.mark.parametrize(
    ("device_name", "expected"),
    [("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"), ("NVIDIA H200", "h200"),
     ("NVIDIA A100-SXM4-40GB", "a100-40gb"), ("NVIDIA A100-SXM4-80GB", "a100-80gb"), ("NVIDIA L4", "l4"),
     ("NVIDIA L40S", "l40s"), ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("Tesla V100-SXM2-32GB", "v100"),
     ("NVIDIA A10G", "a10g"), ("AMD Instinct MI300X", "mi300x"), ("NVIDIA GeForce GTX 1080", None),
     ("NVIDIA GeForce RTX 4080", "rtx-4080"), ("NVIDIA GeForce RTX 4080 SUPER", None),
     ("NVIDIA GeForce RTX 3060", "rtx-3060"), ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada")],
)  # fmt: skip
def test_device_names_are_recognised(device_name, expected):
    gpu = gpu_for_device_name(device_name)
    assert (gpu.name if gpu else None) == expected


def test_unknown_gpu_lists_close_names():
    with pytest.raises(TfcostError, match="did you mean h100-sxm"):
        load_gpu("h100-sxn")


def test_roofline_takes_the_slower_of_compute_and_memory():
    from tfcost.hardware.rates import is_compute_bound, roofline_seconds

    # 1 TFLOP on a 1 PFLOP/s, 1 TB/s device: compute takes 1 ms; moving 2 GB takes 2 ms, so memory-bound.
    assert roofline_seconds(1e12, 2e9, 1e15, 1e12) == pytest.approx(2e-3)
    assert not is_compute_bound(1e12, 2e9, 1e15, 1e12)
    assert roofline_seconds(1e12, 5e8, 1e15, 1e12) == pytest.approx(1e-3)
    assert is_compute_bound(1e12, 5e8, 1e15, 1e12)


def test_nvl_cards_are_told_apart_from_the_sxm_parts():
    """torch names the PCIe NVL cards 'NVIDIA H100 NVL' / 'NVIDIA H200 NVL' (cloud GPU tables list them so); the
    H200 SXM is 'NVIDIA H200'. Each must find its own row: the NVL cards have less compute and PCIe links."""
    assert gpu_for_device_name("NVIDIA H200").name == "h200"
    assert gpu_for_device_name("NVIDIA H200 NVL").name == "h200-nvl"
    assert gpu_for_device_name("NVIDIA H100 NVL").name == "h100-nvl"
    assert gpu_for_device_name("NVIDIA H100 80GB HBM3").name == "h100-sxm"
    nvl, sxm = load_gpu("h100-nvl"), load_gpu("h100-sxm")
    assert (nvl.memory_gib, nvl.peak_bf16_tflops, nvl.memory_bandwidth_tb_per_s) == (94, 835, 3.9)  # torchtitan
    assert nvl.peak_bf16_tflops < sxm.peak_bf16_tflops


def test_the_a6000_matmul_rate_is_the_measured_one_and_its_step_time_is_predicted():
    """The RTX A6000 row's matmul efficiency is a measured BF16 rate over its dense peak: zzc0721/torch-performance-
    test-data's database.md (0785868) row '| NVIDIA RTX A6000 | 23.92 | 120.49 | 123.34 | N/A | docker |' (bf16 third),
    best torch.mm over square matrices, on the card's 84 SMs. With both, `train` predicts its step instead of
    assuming MFU 0.4 (docs/training.md), as for torchtune's A6000 row (validation case #23)."""
    gpu = load_gpu("rtx-a6000")
    assert gpu.peak_bf16_tflops * gpu.matmul_efficiency == pytest.approx(123.34, abs=0.01)
    assert gpu.sm_count == 84
    setup = TrainingSetup(seq_len=2048, micro_batch=2, precision="bf16", recompute="full", tokens=2**30)
    report = train(load_model("llama-3.1-8b"), gpu, setup)
    assert report.step is not None and report.time.throughput_from == "predicted step time"
    # No faster than the measured matmul rate: model and recompute FLOPs over the run's time stay under 123.34 TFLOP/s.
    assert report.time.achieved_flops_per_s < 123.34e12


def test_the_shipped_rows_built_without_validation_are_the_validated_rows():
    """all_gpus() builds the shipped rows as trusted package data (start-up time); validation must give exactly the
    same models: values, their types (80 GiB is the float 80.0 either way), the fields set, and the JSON."""
    from tfcost.readers.files import safe_load
    from tfcost.readers.presets import presets_dir
    from tfcost.schema import GpuSpec

    rows = safe_load((presets_dir() / "gpus.yaml").read_text(encoding="utf-8"))
    assert len(rows) == len(all_gpus()) > 20
    for row, fast in zip(rows, all_gpus(), strict=True):
        checked = GpuSpec.model_validate(row)
        assert fast == checked
        assert {k: type(v) for k, v in vars(fast).items()} == {k: type(v) for k, v in vars(checked).items()}
        assert fast.model_fields_set == checked.model_fields_set
        assert fast.model_dump_json() == checked.model_dump_json()
    assert type(load_gpu("h100-sxm").memory_gib) is float


def write_table(folder, text):
    (folder / "gpus.yaml").write_text(text, encoding="utf-8")


def test_the_table_is_read_again_when_the_file_changes(tmp_path, monkeypatch):
    """The table is read once per process, keyed on the file's mtime and size: a changed file is never stale."""
    from tfcost.readers import presets

    monkeypatch.setattr(presets, "presets_dir", lambda: tmp_path)
    row = "- {name: one, source: s, device_names: [], peak_bf16_tflops: 1, memory_gib: 1, "
    row += "memory_bandwidth_tb_per_s: 1}\n"
    write_table(tmp_path, row)
    assert [gpu.name for gpu in all_gpus()] == ["one"]
    write_table(tmp_path, row + row.replace("one", "two"))
    assert [gpu.name for gpu in all_gpus()] == ["one", "two"]
    assert load_gpu("two").peak_bf16_tflops == 1.0 and type(load_gpu("two").peak_bf16_tflops) is float


@pytest.mark.parametrize(
    ("text", "complaint"),
    [("- {name: one, source: s, device_names: [], peak_bf16_tflops: 1, memory_gib: 1}\n", "memory_bandwidth"),
     ("- {name: one, source: s, device_names: [], peak_bf16_tflops: -1, memory_gib: 1, "
      "memory_bandwidth_tb_per_s: 1, tflops: 3}\n", "tflops"),
     ("- just text\n", "valid dictionary"), ("name: one\n", "valid dictionary")],
)  # fmt: skip
def test_a_broken_table_is_one_line_naming_the_file(tmp_path, monkeypatch, text, complaint):
    """A table that is not the shipped shape (a row missing a field, an unknown key, not a list of mappings) goes
    through validation, which names the file and the problem."""
    from tfcost.readers import presets

    monkeypatch.setattr(presets, "presets_dir", lambda: tmp_path)
    write_table(tmp_path, text)
    with pytest.raises(TfcostError) as raised:
        all_gpus()
    message = str(raised.value)
    assert str(tmp_path / "gpus.yaml") in message and complaint in message and "\n" not in message


def test_an_nvl72_rack_keeps_expert_traffic_on_nvlink():
    # GB300 NVL72 (its row: issue 36's, with issue 35's matmul figures): "9 NVSwitch trays for full non-blocking
    # P2P connectivity of all 72 Blackwell Ultra GPUs" (NVIDIA's NVL72 reference architecture): an expert-parallel
    # group of 64 fits in one NVLink domain, so DeepSeek-V3's all-to-all (e = 64, t = 1) crosses no network there,
    # where on 8-GPU H100 nodes 56 of 64 ranks are elsewhere.
    from tfcost.costs import parallel

    gb300 = load_gpu("gb300")
    assert gb300.gpus_per_node == 72 and gb300.peak_fp8_tflops == 5000 and gb300.memory_bandwidth_tb_per_s == 8.0
    setup = TrainingSetup(tokens=10**9, seq_len=4096, gpus=256, pp=4, ep=64)
    intra, inter = parallel.all_to_all_split(load_model("deepseek-v3"), setup, gb300.gpus_per_node)
    assert inter == 0 and intra > 0
    assert parallel.all_to_all_split(load_model("deepseek-v3"), setup, 8)[1] == pytest.approx(intra * 56 / 63)
