"""Every constant tfcost fits to measurements, in one place: its value, what it was fitted on, and the fit's error.

Everything else in tfcost is counted from a model, quoted from a source or measured on the user's machine. These six
are not: no source gives them, so each was fitted to published figures, on validation's fitted half only (ids not a
multiple of 3) or on a published pair that is not a validation case. The module that uses each says at length how it
was fitted and what it moves; the README and docs/formulas.md count them from FITTED.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fitted:
    """One fitted constant."""

    value: float
    used_in: str  # the module whose comment gives the fit in full
    fitted_on: str  # which measurements
    error: str  # the fit's error where it was set, as recorded then


ZERO3_MATMUL_SHARE = Fitted(
    0.78,
    "tfcost/costs/efficiency.py",
    "validation's fitted step-time cases (15): the share of MAMF BF16/FP8 GEMMs reach under ZeRO-3/FSDP",
    "fitted step time 8.27% geo-mean (16.7% without the share); flat from 0.74 to 0.78",
)
FP8_TRAINING_GEMM_FRACTION = Fitted(
    0.59,
    "tfcost/costs/efficiency.py",
    "validation's fitted step-time cases, over tilelang's published FP8 GEMM range 0.59-0.74",
    "fitted step time 8.27% at 0.59 (9.11% at 0.62, 11.13% at 0.70); 0.55 (7.10%) lies below the range, not taken",
)
FP8_MATMUL_FRACTION = Fitted(
    0.5,
    "tfcost/costs/efficiency.py",
    "validation's fitted serving cases with FP8 weights: the share of the FP8 peak a serving GEMM reaches",
    "not recorded when set (issue 22); published FP8 GEMMs reach 0.59-0.74 of peak (tilelang)",
)
ASYNC_TP_EXPOSED_SHARE = Fitted(
    0.78,
    "tfcost/costs/step_time.py",
    "torchtitan docs/performance.md Table 4's 2D (829) and 2D + AsyncTP (876) TPS/GPU pair, not a validation case",
    "exact on its pair by construction (0.775, rounded); moved fitted #17 from 1.002 to 1.042",
)
SESSION_CONTEXT_HOST_S_PER_LAYER = Fitted(
    110e-6,
    "tfcost/costs/expected.py",
    "TensorRT-LLM v0.5 gptSession rows of validation's fitted half: #94, #58, #61, #59",
    "the four rows closest together at 110 us a layer (3.5 ms, 15 ms, 20 ms more and 4.8 ms less than the kernels)",
)
REPEAT_READ_HBM_SHARE = Fitted(
    0.5,
    "tfcost/costs/expected.py",
    "TensorRT-LLM v0.6.1 Llama-2-70B peak-throughput rows of validation's fitted half: #52 and #56",
    "their implied shares 0.60 and 0.47; 0.75 and 0.66 of the published throughput with 1, 1.97 and 1.83 with 0",
)

FITTED: dict[str, Fitted] = {
    "ZERO3_MATMUL_SHARE": ZERO3_MATMUL_SHARE,
    "FP8_TRAINING_GEMM_FRACTION": FP8_TRAINING_GEMM_FRACTION,
    "FP8_MATMUL_FRACTION": FP8_MATMUL_FRACTION,
    "ASYNC_TP_EXPOSED_SHARE": ASYNC_TP_EXPOSED_SHARE,
    "SESSION_CONTEXT_HOST_S_PER_LAYER": SESSION_CONTEXT_HOST_S_PER_LAYER,
    "REPEAT_READ_HBM_SHARE": REPEAT_READ_HBM_SHARE,
}
