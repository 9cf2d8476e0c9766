"""Wall-clock time from a throughput the user gives: MFU, HFU or achieved FLOP/s per GPU, and the utilizations
each implies.

MFU counts model FLOPs only; HFU and the achieved TFLOP/s that Megatron-LM, BLOOM and OPT publish count the
recomputed forward work too (PaLM, Chowdhery et al. 2022, App. B; Narayanan et al. 2021 §5.1 Eq. 3 counts four
passes over the layers under full recomputation). Entering a published HFU as an MFU makes a run too fast by
hardware / model FLOPs (about 4/3 under full recomputation).
"""

from __future__ import annotations


def seconds_at_mfu(model_flops: float, gpus: int, peak_flops_per_s: float, mfu: float) -> float:
    """time = model FLOPs / (gpus x peak x MFU)."""
    return model_flops / (gpus * peak_flops_per_s * mfu)


def seconds_at_hfu(hardware_flops: float, gpus: int, peak_flops_per_s: float, hfu: float) -> float:
    """time = hardware FLOPs (model + recomputed) / (gpus x peak x HFU)."""
    return hardware_flops / (gpus * peak_flops_per_s * hfu)


def seconds_at_achieved(hardware_flops: float, gpus: int, achieved_flops_per_s: float) -> float:
    """time = hardware FLOPs / (gpus x achieved FLOP/s per GPU): Narayanan et al. 2021 Eq. 4, 8TP / (nX), is
    this with 8TP for the hardware FLOPs of full recomputation."""
    return hardware_flops / (gpus * achieved_flops_per_s)


def utilization(flops: float, seconds: float, gpus: int, peak_flops_per_s: float) -> float:
    """FLOPs done over what the GPUs' peak could do in that time: MFU of model FLOPs, HFU of hardware FLOPs."""
    return flops / (seconds * gpus * peak_flops_per_s)


def seconds_at_same_utilization(seconds: float, flops: float, run_flops: float) -> float:
    """How long `flops` take at the utilization a run of `run_flops` reached in `seconds` (6ND beside the exact
    count: time scales with the FLOPs at a fixed MFU)."""
    return seconds * flops / run_flops
