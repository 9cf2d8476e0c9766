"""The GPU spec table: it validates, its units convert, and ridge points match the reference's table."""

from __future__ import annotations

import pytest

from tfcost.errors import TfcostError
from tfcost.hardware.rates import bandwidth_bytes_per_s, memory_bytes, peak_flops_per_s, ridge_point
from tfcost.readers.presets import all_gpus, gpu_for_device_name, load_gpu

ISSUE_GPUS = {"h100-sxm", "h100-pcie", "h200", "b200", "a100-40gb", "a100-80gb", "a10g", "l4", "l40s",
              "rtx-4090", "rtx-3090", "v100", "mi300x"}  # fmt: skip
# Issue 12's additions (sources on each row; figures a secondary gave are marked UNVERIFIED in the row).
ISSUE_12_GPUS = {"h800", "h20", "b300", "gb200", "rtx-a6000", "rtx-5090", "mi325x", "mi355x", "gaudi3", "tpu-v4",
                 "tpu-v5e", "tpu-v5p", "tpu-v6e"}  # fmt: skip
# Issue 22: torchtitan's Grand Teton H100 (96 GB HBM2e at 2.4 TB/s, 500 W), which its benchmarks ran on.
ISSUE_22_GPUS = {"h100-96gb-500w", "h100-nvl", "h200-nvl"}


def test_table_has_every_gpu_with_a_source():
    gpus = all_gpus()
    assert {gpu.name for gpu in gpus} == ISSUE_GPUS | ISSUE_12_GPUS | ISSUE_22_GPUS
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
     ("NVIDIA A10G", "a10g"), ("AMD Instinct MI300X", "mi300x"), ("NVIDIA GeForce GTX 1080", None)],
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
