"""Fine-tuning with LoRA (Hu et al. 2021) and QLoRA (Dettmers et al. 2023): the adapters, the frozen base's
storage, and the compute of training only the adapters.

LoRA adds to a frozen d_in x d_out weight two trainable matrices, A (d_in x r) and B (r x d_out): r (d_in + d_out)
parameters per adapted matrix per layer. QLoRA stores the frozen base's linear layers in 4-bit NormalFloat with one
quantisation constant per block of 64 weights; double quantisation stores those constants in 8 bits with one fp32
constant per 256 of them, so 8/64 + 32/(64 x 256) = 0.127 bits per weight instead of 32/64 = 0.5 (QLoRA §3). The
embedding and the output head stay in 16 bits (bitsandbytes quantises the linear layers, transformers keeps the
head out).
"""

from __future__ import annotations

from tfcost.core import flops, params
from tfcost.core.model import model_of, peft_name
from tfcost.core.ops import Op
from tfcost.errors import UsageError
from tfcost.schema import ModelShape

# Targets are PEFT's module names (tfcost.core.model.PEFT_NAMES: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj,
# down_proj, experts, MLA's q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj, Mamba's in_proj, x_proj, dt_proj,
# out_proj), or tfcost's short role names, each the modules that play that role: a query, key or value projection is
# MLA's low-rank pair where the model has one, so the default q,k,v,o adapts every attention projection of any kind.
ROLE_TARGETS: dict[str, tuple[str, ...]] = {
    "q": ("q_proj", "q_a_proj", "q_b_proj"),
    "k": ("k_proj", "kv_a_proj_with_mqa", "kv_b_proj"),
    "v": ("v_proj", "kv_a_proj_with_mqa", "kv_b_proj"),
    "o": ("o_proj",),
    "gate": ("gate_proj",),
    "up": ("up_proj",),
    "down": ("down_proj",),
}
LORA_TARGETS = tuple(ROLE_TARGETS)
NF4_BITS = 4  # QLoRA §3: 4-bit NormalFloat
NF4_BLOCK = 64  # weights per first-level quantisation constant
DOUBLE_QUANT_BLOCK = 256  # first-level constants per second-level fp32 constant
DOUBLE_QUANT_CONSTANT_BITS = 8  # first-level constants, double quantised to 8 bits
FP32_BITS = 32
BASE_BYTES = 2  # a LoRA base kept in bf16


def target_rows(shape: ModelShape, targets: tuple[str, ...]) -> list[tuple[int, Op]]:
    """The rows LoRA adapts, with their layer counts: every linear row whose PEFT module name (tfcost.core.model) is a
    target or plays a target's role (ROLE_TARGETS), each once."""
    names = {module for target in targets for module in ROLE_TARGETS.get(target, (target,))}
    return [(count, op) for count, op in model_of(shape).layer_rows() if peft_name(op) in names]


def check_targets(shape: ModelShape, targets: tuple[str, ...]) -> None:
    """Every target must name a module of this model's layers (any layer kind: attention, MLA, MLP, experts, Mamba)."""
    known = sorted(model_of(shape).peft_rows())
    found = {peft_name(op) for _, op in target_rows(shape, targets)}
    unknown = [t for t in targets if not found.intersection(ROLE_TARGETS.get(t, (t,)))]
    if unknown or not targets:
        raise UsageError(
            f"--lora-targets: {', '.join(unknown) or 'none given'} not among {shape.name}'s modules: "
            f"{', '.join(known) or 'none'} (or the roles {', '.join(ROLE_TARGETS)})"
        )


def check_rank(shape: ModelShape, rank: int, targets: tuple[str, ...]) -> None:
    """A rank-r adapter B A of a d_in x d_out matrix has rank at most min(d_in, d_out): a larger r adds parameters
    and no expressiveness (Hu et al. 2021, LoRA, §4.1: W0 + BA with B in R^(d x r), A in R^(r x k), "the rank
    r << min(d, k)"), and is refused."""
    narrowest = min(min(op.fan_in, op.fan_out) for _, op in target_rows(shape, targets))
    if rank > narrowest:
        raise UsageError(
            f"--lora {rank:,}: above the narrowest adapted matrix's width ({narrowest:,}); an adapter's rank is at "
            "most min(d_in, d_out)"
        )


def lora_params(shape: ModelShape, rank: int, targets: tuple[str, ...]) -> int:
    """Trainable parameters: r (d_in + d_out) per adapted matrix, in every layer; a routed expert row has one adapter
    per expert (its copies: Mixtral's experts are E separate w1/w2/w3 modules, each adapted)."""
    return sum(count * op.copies * rank * (op.fan_in + op.fan_out) for count, op in target_rows(shape, targets))


def quantised_linear_params(shape: ModelShape) -> int:
    """The parameters QLoRA stores in NF4: every parameter but the embeddings and head (norms and biases, kept in
    16 bits, are under 0.1% and stored with them)."""
    return params.total_params(shape) - params.embedding_params(shape)


def nf4_bits_per_weight(double_quant: bool = True) -> float:
    """4 bits, plus the block constants: 8/64 + 32/(64 x 256) = 0.127 bits with double quantisation, 32/64 = 0.5
    without (QLoRA §3)."""
    if double_quant:
        constants = DOUBLE_QUANT_CONSTANT_BITS / NF4_BLOCK + FP32_BITS / (NF4_BLOCK * DOUBLE_QUANT_BLOCK)
    else:
        constants = FP32_BITS / NF4_BLOCK
    return NF4_BITS + constants


def frozen_base_bytes(shape: ModelShape, qlora: bool) -> int:
    """The frozen base: bf16 for LoRA; for QLoRA its linear layers in NF4 with double quantisation, the
    embeddings and head in bf16."""
    total = params.total_params(shape)
    if not qlora:
        return BASE_BYTES * total
    linear = quantised_linear_params(shape)
    return round(linear * nf4_bits_per_weight() / 8) + BASE_BYTES * (total - linear)


def lora_training_flops(shape: ModelShape, seq_len: int, tokens: int, adapter_params: int) -> int:
    """Forward of the base, then backward through it for the activation gradients only, no weight gradients:
    2 x forward (4N per token instead of 6N), plus 6 FLOPs per adapter parameter per token."""
    return 2 * flops.forward_flops(shape, seq_len) * tokens // seq_len + 6 * adapter_params * tokens
