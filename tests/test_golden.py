"""Every preset gives the numbers it gave before the layer-stack core (tests/data/golden/outputs.json, written by
tests/golden.py from the code as it was): `estimate` at T = 1,024 and 32,768, full and causal, `train` and
`serve` for five presets. Keys added since are listed in ADDED; every pinned key must be present and equal."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tests.golden import GOLDEN, commands, run

# Keys the layer-stack core added to the JSON contract (present in today's output, absent from the pin).
ADDED = {"params.by_layer_kind", "params.mtp", "flops.by_layer_kind", "kv_cache.state_bytes"}
ADDED |= {"params.active_non_embedding"}  # issue 24: the active count as model cards give it
# Keys issues 10 and 13 added: the crossovers; what a source ignored or did not price, a checkpoint's bytes.
ADDED |= {
    "crossovers",
    "ignored_fields",
    "not_priced",
    "checkpoint_bytes",
    "checkpoint_bytes_estimate",
    "weights_format",
}

# Keys issue 12 added to train (layouts, fine-tuning, throughput inputs, the predicted step, the memory overheads).
ADDED |= {"step"} | {f"inputs.{key}" for key in ("trainable_parameters", "global_batch", "micro_batches")}
ADDED |= {"inputs.stage_layers", "inputs.pipeline_bubble"}
ADDED |= {f"time.{key}" for key in ("throughput_from", "model_utilization", "achieved_flops_per_s")}
ADDED |= {f"memory_per_gpu.{key}" for key in ("cuda_context_bytes", "allocator_reserve_bytes", "host_bytes")}
ADDED |= {
    f"setup.{key}"
    for key in (
        "hfu",
        "tflops_per_gpu",
        "global_batch",
        "pp_first_layers",
        "pp_last_layers",
        "virtual_stages",
        "cp",
        "ep",
        "optimizer_in_backward",
        "offload",
        "lora_rank",
        "lora_targets",
        "qlora",
        "memory_convention",
        "cuda_context_gib",
        "allocator_reserve",
        "dp_overlap",
    )
}

# Keys issue 15 added to serve: the expected times beside the bound, the bound's per-sequence rates, the profile.
# issue 35: Megatron-Core's expert layout and pipeline layout string, and the MoE routing conventions
ADDED |= {f"setup.{key}" for key in ("etp", "pp_layout", "moe_node_limit", "moe_capacity_factor", "moe_load_imbalance")}
ADDED |= {"intervals"}  # issue 34: each predicted figure's error bar from the validation suite
ADDED |= {"framework"}  # issue 34: the framework whose conventions priced the run (tfcost's defaults when none)
ADDED |= {"engine"}  # issue 14: which engine answered ("analytic" here)
ADDED |= {"expected", "profile", "setup.group_size", "setup.kv_block"}
ADDED |= {f"latency.{key}" for key in ("ttft_ms", "tpot_ms", "tokens_per_s_per_sequence", "tokens_per_s")}

# Serving's recurrent state (issue 14): 0 for the attention-only presets pinned here.
ADDED |= {"memory.state_bytes", "memory.state_bytes_per_gpu"}

# Issue 23: a layout that does not fit names the nearest one that does (`tfcost plan`).
ADDED |= {"suggestion"}
# Issue 22: attention in BF16 under FP8 matmuls unless --fp8-attention; norms fused unless --kernels eager.
ADDED |= {"setup.fp8_attention", "setup.kernels"}  # --kernels: fused (the default) or eager norms
ADDED |= {"setup.loss"}  # issue 22: --loss chunked (the default, the pinned 4sbV/t) or full (torchtitan's 3x)
ADDED |= {"setup.ep_overlap"}  # issue 22: expert all-to-alls overlapped with compute (DualPipe, Megatron-Core)
ADDED |= {
    "setup.accumulate_unsharded",
    "setup.frozen_gradients",
    "setup.offload_activations",
}  # issue 22: FSDP's no_sync, FSDP1 mixed units
ADDED |= {"setup.reshard_after_forward"}  # issue 22: FSDP keeps gathered weights under PP (torchtitan's default)
ADDED |= {"setup.flash_kernel"}  # issue 22: --flash-kernel fa2 (the default) or fa1 (flash-attn 1.x, Triton)
# Issue 23: FSDP's gradients synced every micro-batch (Llama 3's), dropout masks left out (Llama's code has none)
ADDED |= {"setup.reduce_every_micro_batch", "setup.dropout"}
ADDED |= {"setup.logit_metrics"}  # issue 22: Composer's train metrics over the logits (llm-foundry's MPT: 2)
ADDED |= {"setup.fsdp2"}  # issue 22: --fsdp2 prices FSDP2's copy-out of its all-gathers and copy-in of its reduces
ADDED |= {"setup.fsdp_float8_all_gather"}  # issue 22: FSDP2 gathers FP8 linear weights in float8 (torchao)
ADDED |= {"setup.async_tp"}  # issue 22: async TP hides part of the TP collectives (torchtitan)
ADDED |= {"setup.tp_keeps_gathered_input"}  # issue 22: DTensor TP keeps gathered inputs (torchtitan)
ADDED |= {"time.energy_kwh"}  # issue 39: a run's energy at the board's power (presets/gpus.yaml board_power_w)

PINNED: dict[str, Any] = json.loads(GOLDEN.read_text())


def differences(pinned: Any, now: Any, path: str = "") -> list[str]:
    """Where `now` differs from `pinned`: a changed value, a missing key, or a new key not in ADDED."""
    if isinstance(pinned, dict) and isinstance(now, dict):
        found = [f"{path}{key}: missing" for key in pinned if key not in now]
        found += [f"{path}{key}: new" for key in now if key not in pinned and f"{path}{key}" not in ADDED]
        for key in pinned.keys() & now.keys():
            found += differences(pinned[key], now[key], f"{path}{key}.")
        return found
    if isinstance(pinned, float) and isinstance(now, float) and math.isclose(pinned, now, rel_tol=1e-12):
        return []  # a time computed in another order may differ in its last bit; every count is an exact integer
    return [] if pinned == now else [f"{path.rstrip('.')}: {pinned!r} -> {now!r}"]


def test_the_pin_covers_every_preset_and_command() -> None:
    assert sorted(PINNED) == sorted(commands())


@pytest.mark.parametrize("name", sorted(commands()))
def test_output_is_unchanged(name: str) -> None:
    assert differences(PINNED[name], run(commands()[name])) == []


def test_a_changed_number_is_caught() -> None:
    name = "estimate llama-3-8b -T 1024 -B 4"
    changed = json.loads(json.dumps(PINNED[name]))
    changed["params"]["total"] += 1
    assert differences(changed, run(commands()[name])) == ["params.total: 8030261249 -> 8030261248"]
