"""Energy and money of serving (issue 39): each GPU's board power by phase, and the GPU-hours a token takes.

Power model: a step that is compute-bound (prefill) draws the board's power limit, its TDP (presets/gpus.yaml's
board_power_w, each row with its source); a memory-bound decode step draws DECODE_POWER_SHARE of it. A step that
mixes the two draws each share for the part of its time its prefill and decode work take (priced alone,
tfcost.costs.scheduler). Time the GPUs wait for requests is not counted in the energy (their idle draw has no
source here), and is counted in the money (the GPUs are paid for by the hour).
"""

from __future__ import annotations

from tfcost.schema import GpuSpec

# A compute-bound step runs at the board's power limit: the limit (TDP) is what the GPU's power management holds it
# to under full tensor load. An upper bound, stated as such.
PREFILL_POWER_SHARE = 1.0
# Decode, memory-bound, draws far less: Ma, Afzal, Eitzinger and Wellein 2026, "The Illusion of Power Capping in LLM
# Decode" (arXiv 2605.11999), abstract: "on NVIDIA H200, decode draws only 137-300 W on a 700 W GPU; no cap ever
# triggers, because memory-bound decode saturates HBM bandwidth rather than compute". The top of that range (at
# production batch sizes), 300 / 700, is taken for every GPU.
DECODE_POWER_SHARE = 300 / 700
POWER_SOURCE = (
    "board power (TDP, presets/gpus.yaml) while prefilling; 300/700 of it while decoding (Ma et al. 2026, arXiv "
    "2605.11999: 'on NVIDIA H200, decode draws only 137-300 W on a 700 W GPU'); idle time not counted"
)
J_PER_KWH = 3.6e6
SECONDS_PER_HOUR = 3600


def busy_joules(gpu: GpuSpec, gpus: int, prefill_seconds: float, decode_seconds: float) -> tuple[float, float] | None:
    """(prefill joules, decode joules) of `gpus` GPUs busy that long in each phase; None without a board power."""
    if gpu.board_power_w is None:
        return None
    watts = gpu.board_power_w * gpus
    return watts * PREFILL_POWER_SHARE * prefill_seconds, watts * DECODE_POWER_SHARE * decode_seconds


def dollars(price_per_gpu_hour: float, gpus: int, seconds: float) -> float:
    """What `gpus` GPUs cost for `seconds` at a price an hour each."""
    return price_per_gpu_hour * gpus * seconds / SECONDS_PER_HOUR


def per_million(amount: float, tokens: int) -> float:
    """`amount` over `tokens`, per million tokens; 0 for no tokens."""
    return amount / tokens * 1e6 if tokens else 0.0


def gpu_hours_kwh(gpu: GpuSpec, gpu_hours: float) -> float | None:
    """A training run's energy: its GPU-hours at the board's power, as Meta reports Llama 2's ("Power Consumption:
    Peak power capacity per GPU device for the GPUs used adjusted for power usage efficiency", the model card's
    CO2 table; PUE is left out here, GPUs only); None without a board power."""
    if gpu.board_power_w is None:
        return None
    return gpu_hours * gpu.board_power_w / 1000
