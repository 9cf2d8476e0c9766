"""Bytes per parameter of weights, gradients and optimizer states, by training precision and optimizer.

Precisions: bf16-mixed keeps 16-bit weights and gradients and an fp32 master copy (Micikevicius et al. 2018;
ZeRO's K = 12 for AdamW is that copy and two fp32 moments, Rajbhandari et al. 2020 Fig. 1); fp8 trains the matmuls
in FP8 but keeps the same bf16 weights and fp32 master copy (NVIDIA Transformer Engine; DeepSeek-V3 §3.3.2, whose
FP8 copies of the weights are transient); bf16 is pure bf16 with no master copy, its optimizer states bf16 too
(torchtune's full_finetune_single_device with dtype bf16); fp32 keeps everything in fp32 and no master copy.
Optimizers (states per parameter): AdamW two moments (Loshchilov & Hutter 2019); 8-bit AdamW the same two at one
byte each (Dettmers et al. 2022, block-wise quantised; one fp32 absmax per 2,048 values is left out, 0.2%);
paged variants the same bytes, paged to host memory under pressure (bitsandbytes, Dettmers et al. 2023 §3);
Adafactor factors the second moment into a row and a column vector and keeps no first moment by default
(Shazeer & Stern 2018), under 0.1% of a parameter for the matrices that matter, counted as 0; SGD with momentum
one buffer; Muon one momentum buffer (Jordan et al. 2024).
"""

from __future__ import annotations

from tfcost.schema import Optimizer, Precision

WEIGHT_BYTES: dict[Precision, int] = {"bf16-mixed": 2, "fp8": 2, "bf16": 2, "fp32": 4}
MASTER_BYTES: dict[Precision, int] = {"bf16-mixed": 4, "fp8": 4, "bf16": 0, "fp32": 0}
STATE_ELEMENTS: dict[Optimizer, int] = {
    "adamw": 2, "adamw-8bit": 2, "paged-adamw": 2, "paged-adamw-8bit": 2, "adafactor": 0, "sgd": 1, "muon": 1,
}  # fmt: skip
QUANTISED_STATE_BYTES = 1  # 8-bit optimizers


def state_element_bytes(precision: Precision, optimizer: Optimizer) -> int:
    """One optimizer state element: 1 byte for 8-bit optimizers, else the master copy's dtype (fp32), or bf16 when
    the weights themselves are pure bf16."""
    if optimizer.endswith("8bit"):
        return QUANTISED_STATE_BYTES
    return 2 if precision == "bf16" else 4


def bytes_per_param(precision: Precision, optimizer: Optimizer) -> dict[str, int]:
    """Weights, gradients and optimizer states (master copy included) per parameter, before any sharding.
    bf16-mixed AdamW: 2 / 2 / 12 (ZeRO Fig. 1); 8-bit AdamW 2 / 2 / 6; pure bf16 AdamW 2 / 2 / 4."""
    weights = WEIGHT_BYTES[precision]
    states = MASTER_BYTES[precision] + STATE_ELEMENTS[optimizer] * state_element_bytes(precision, optimizer)
    return {"weights": weights, "gradients": weights, "optimizer": states}


def is_paged(optimizer: Optimizer) -> bool:
    """Paged optimizers keep their states in CUDA unified memory, evicted to the host when the GPU is full."""
    return optimizer.startswith("paged-")
