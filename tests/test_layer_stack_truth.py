"""A non-uniform stack against transformers 5.24 on the meta device: a tiny gpt-oss (alternating 8-token windows,
attention sinks, biases everywhere, a router with a bias, gated experts with biases), written as a `layers:` stack.
Parameters are what the model allocates; forward FLOPs what FlopCounterMode counts (full T x T scores)."""

from __future__ import annotations

import pytest

WHY = "the truth tests need torch and transformers: pip install -e '.[test]'"
torch = pytest.importorskip("torch", reason=WHY)
pytest.importorskip("transformers", reason=WHY)
FlopCounterMode = pytest.importorskip("torch.utils.flop_counter", reason=WHY).FlopCounterMode

from transformers import AutoConfig, AutoModelForCausalLM  # noqa: E402

from tfcost.core.flops import forward_flops  # noqa: E402
from tfcost.core.params import active_params, total_params  # noqa: E402
from tfcost.schema import ModelShape  # noqa: E402

SIZES = {"hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2}
TOKENS = 20


def tiny_gpt_oss() -> tuple[ModelShape, object]:
    config = AutoConfig.for_model(
        "gpt_oss", **SIZES, head_dim=16, intermediate_size=48, num_local_experts=4, num_experts_per_tok=2,
        vocab_size=1000, sliding_window=8, max_position_embeddings=512,
    )  # fmt: skip
    assert config.layer_types == ["sliding_attention", "full_attention"] * 2
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(
            config, attn_implementation="eager", dtype=torch.bfloat16, experts_implementation="batched_mm"
        )
    shape = ModelShape.model_validate(
        {
            "name": "tiny-gpt-oss", "vocab_size": 1000, "d_model": 64, "n_layers": 4, "n_heads": 8, "n_kv_heads": 2,
            "head_dim": 16, "d_ff": 48, "mlp": "gated", "norm": "rmsnorm", "tied_embeddings": False,
            "position": "rotary", "max_seq_len": 512, "attention_sinks": True,
            "bias": {"qkv": True, "attn_out": True, "mlp": True},
            "moe": {"n_experts": 4, "experts_per_token": 2, "expert_d_ff": 48, "router_bias": True},
            "layers": [{"pattern": [{"window": 8, "ffn": "moe"}, {"ffn": "moe"}], "repeat": 2}],
        }
    )  # fmt: skip
    return shape, model.eval()


def test_gpt_oss_parameters_and_forward_flops_match_transformers() -> None:
    shape, model = tiny_gpt_oss()
    assert total_params(shape) == sum(p.numel() for p in model.parameters())  # type: ignore[attr-defined]
    ids = torch.zeros((1, TOKENS), dtype=torch.long, device="meta")
    mask = torch.ones((1, TOKENS), dtype=torch.long, device="meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(input_ids=ids, attention_mask=mask, use_cache=False)  # type: ignore[operator]
    assert forward_flops(shape, TOKENS) == counter.get_total_flops()
    # two of four experts idle per layer: 4 layers x 2 x (64*96 + 96 + 48*64 + 64) parameters
    assert total_params(shape) - active_params(shape) == 4 * 2 * (64 * 96 + 96 + 48 * 64 + 64)
