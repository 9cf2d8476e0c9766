"""Training compute, time and memory against the published figures they come from."""

from __future__ import annotations

import json

import pytest

from tfcost.core import flops, params
from tfcost.costs import throughput, training
from tfcost.costs.training import activation_bytes_per_layer, model_state_bytes_per_gpu
from tfcost.errors import UsageError
from tfcost.hardware.rates import peak_flops_per_s
from tfcost.readers.presets import load_gpu, load_model
from tfcost.schema import Biases, ModelShape, TrainingSetup


@pytest.fixture
def gpt3() -> ModelShape:
    """GPT-3 175B (Brown et al. 2020, Table 2.1): the model of Korthikanti et al. 2022's 5as/h = 80."""
    return ModelShape(
        name="gpt3-175b", vocab_size=50257, d_model=12288, n_layers=96, n_heads=96, d_ff=4 * 12288, mlp="plain",
        norm="layernorm", bias=Biases(qkv=True, attn_out=True, mlp=True), tied_embeddings=True, position="learned",
        max_seq_len=2048,
    )  # fmt: skip


def setup(**fields: object) -> TrainingSetup:
    return TrainingSetup.model_validate({"tokens": 10**9, "seq_len": 1024, **fields})


# ZeRO (Rajbhandari et al. 2020), Figure 1: Psi = 7.5B, N_d = 64, mixed-precision Adam (K = 12).
@pytest.mark.parametrize(
    ("stage", "decimal_gb", "exact"),
    [(0, 120.0, 120_000_000_000), (1, 31.4, 31_406_250_000), (2, 16.6, 16_640_625_000), (3, 1.9, 1_875_000_000)],
)
def test_zero_figure_1(stage, decimal_gb, exact):
    per_gpu = model_state_bytes_per_gpu(7_500_000_000, "bf16-mixed", "adamw", stage, data_parallel=64)
    assert sum(per_gpu.values()) == exact
    assert round(sum(per_gpu.values()) / 1e9, 1) == decimal_gb


def test_model_states_shard_over_tensor_and_pipeline_parallel_too():
    alone = model_state_bytes_per_gpu(8_000_000_000, "bf16-mixed", "adamw", 1, data_parallel=8)
    split = model_state_bytes_per_gpu(8_000_000_000, "bf16-mixed", "adamw", 1, data_parallel=8, model_parallel=4)
    assert {key: value // 4 for key, value in alone.items()} == split
    assert alone == {"weights": 16_000_000_000, "gradients": 16_000_000_000, "optimizer": 12_000_000_000}


@pytest.mark.parametrize(
    ("precision", "optimizer", "total_per_param"),
    # Transformer Math 101: 2 + 2 + 12 (AdamW), 2 + 2 + 6 (8-bit), 2 + 2 + 8 (SGD, momentum); fp32 has no master copy.
    [("bf16-mixed", "adamw", 16), ("bf16-mixed", "adamw-8bit", 10), ("bf16-mixed", "sgd", 12),
     ("fp32", "adamw", 16), ("fp32", "adamw-8bit", 10), ("fp32", "sgd", 12)],
)  # fmt: skip
def test_bytes_per_parameter(precision, optimizer, total_per_param):
    assert sum(model_state_bytes_per_gpu(1000, precision, optimizer, 0, 1).values()) == 1000 * total_per_param


def test_korthikanti_gpt3_score_term_is_80(gpt3):
    s, b, h = 2048, 1, 12288
    stored = activation_bytes_per_layer(gpt3, s, b)
    without_scores = activation_bytes_per_layer(gpt3, s, b, recompute="selective")
    assert (stored - without_scores) / (s * b * h) == 80  # 5as/h = 5 * 96 * 2048 / 12288
    assert stored == s * b * h * (34 + 80)  # sbh(34 + 5as/h), Eq. 1
    assert without_scores == 34 * s * b * h


@pytest.mark.parametrize("micro_batch", [1, 4])
def test_korthikanti_table_2(gpt3, micro_batch):
    s, b, h, t = 2048, micro_batch, 12288, 8
    sbh = s * b * h

    def per_layer(**options: object) -> int:
        return activation_bytes_per_layer(gpt3, s, b, tp=t, **options)  # type: ignore[arg-type]

    assert per_layer() == sbh * (10 + 24 // t + 80 // t)  # tensor parallel: sbh(10 + 24/t + 5as/(ht))
    assert per_layer(sequence_parallel=True) == sbh * (34 + 80) // t  # + sequence parallel
    assert per_layer(recompute="selective") == sbh * (10 + 24 // t)  # + selective recompute
    assert per_layer(sequence_parallel=True, recompute="selective") == 34 * sbh // t
    assert per_layer(recompute="full") == 2 * sbh  # only the layer input
    assert per_layer(recompute="full", sequence_parallel=True) == 2 * sbh // t


def test_flash_keeps_a_log_sum_exp_instead_of_the_scores(gpt3):
    s, b = 2048, 2
    flash = activation_bytes_per_layer(gpt3, s, b, flash=True)
    selective = activation_bytes_per_layer(gpt3, s, b, recompute="selective")
    assert flash - selective == 4 * gpt3.n_heads * s * b  # one fp32 number per query row per head


def test_activation_generalisation_to_gated_mlps_and_gqa():
    llama = load_model("llama-3-8b")  # h 4096, H 32, K 8, Q 128, F 14336, gated
    s, b = 4096, 1
    # unsplittable 10sbh; Q and attention output 2 * 2 * 4096, K and V 2 * 2 * 1024; gated MLP 3F at 2 bytes;
    # flash: 4 bytes per query row per head.
    expected = s * b * (10 * 4096 + 2 * (2 * 4096 + 2 * 1024) + 2 * 3 * 14336) + 4 * 32 * s * b
    assert activation_bytes_per_layer(llama, s, b, flash=True) == expected == 604_504_064
    # A gated MLP of width 8h/3 stores what a 4h GeLU MLP stores (3 x 8h/3 = 2 x 4h).
    plain = load_model("gpt2-small")
    gated = plain.model_copy(update={"mlp": "gated", "d_ff": 2048})
    assert activation_bytes_per_layer(plain, 1024, 1) == activation_bytes_per_layer(gated, 1024, 1)


def test_fp32_doubles_the_16_bit_activations_but_not_the_masks(gpt3):
    s, b, h = 2048, 1, 12288
    bf16 = activation_bytes_per_layer(gpt3, s, b)
    fp32 = activation_bytes_per_layer(gpt3, s, b, precision="fp32")
    masks = 2 * s * b * h + gpt3.n_heads * s * s * b  # two sbh dropout masks and the as^2b attention mask
    assert fp32 == 2 * (bf16 - masks) + masks


def test_first_pipeline_stage_holds_l_layers_and_the_last_the_logits():
    llama = load_model("llama-3-8b")
    one_stage = setup(gpus=8, tp=8)
    four_stages = setup(gpus=32, tp=8, pp=4)
    per_layer = training.activation_bytes_per_layer_of(llama, one_stage)
    logits = 4 * 1024 * 128256 // 8
    # a layer's backward holds its gated MLP's three hidden-wide gradients (s x F/t, bf16) beside the saved tensors:
    # below the last stage's logits, alone on the first
    gradients = 3 * 1024 * (14336 // 8) * 2
    assert training.activation_bytes_per_gpu(llama, one_stage) == 32 * per_layer + max(logits, gradients)
    assert training.activation_bytes_per_gpu(llama, four_stages) == 32 * per_layer + gradients


def test_nanogpt_notebook_300b_tokens_on_8_a100s():
    # transformer_sizing.ipynb: model_size = params()['total'] = 124,337,664 (nanoGPT, bias=False: no linear
    # biases, LayerNorm without shift), 6ND / (312e12 * 8 * 0.3) -> "3.46 days". The notebook's N is every
    # parameter; tfcost's 6N is Kaplan's (flops.six_nd_flops), so the notebook's 6ND is written out here.
    nanogpt = load_model("gpt2-small").model_copy(update={"bias": Biases(), "norm": "rmsnorm"})
    assert params.total_params(nanogpt) == 124_337_664
    peak = peak_flops_per_s(load_gpu("a100-80gb"), "bf16")
    assert peak == 312e12
    seconds = throughput.seconds_at_mfu(6 * 124_337_664 * 300 * 10**9, 8, peak, 0.3)
    assert round(seconds / training.SECONDS_PER_DAY, 2) == 3.46


def test_chinchilla_optimal_tokens():
    assert training.chinchilla_optimal_tokens(load_model("llama-3-8b")) == 20 * 8_030_261_248


def test_exact_training_flops_are_three_forward_passes_per_sequence(gpt2):
    sequences = 1000
    # nanoGPT notebook: 874,944,921,600 FLOPs to train on one 1,024-token sequence.
    assert training.model_training_flops(gpt2, 1024, 1024 * sequences) == 874_944_921_600 * sequences


def test_recompute_flops(gpt2):
    parts = flops.forward_flops_breakdown(gpt2, 1024)
    assert training.recompute_flops(gpt2, 1024, 2048, "none") == 0
    assert training.recompute_flops(gpt2, 1024, 2048, "selective") == 2 * 2 * 19_327_352_832
    # Full recompute runs the 12 blocks again, not the head: the notebook's "Transformer" 212,600,881,152.
    assert training.recompute_flops(gpt2, 1024, 2048, "full") == 2 * 212_600_881_152
    assert sum(parts.values()) - parts["output_head"] == 212_600_881_152


def test_time_hours_cost_and_hfu():
    seconds = throughput.seconds_at_mfu(8 * 10**18, 10, 1e15, 0.5)
    assert seconds == pytest.approx(1.6e3)
    assert training.gpu_hours(seconds, 10) == pytest.approx(1.6e4 / 3600)
    assert training.training_cost(100.0, 2.5) == 250.0


def test_layout_rules():
    llama = load_model("llama-3-8b")  # 32 heads, 8 KV heads, 32 layers
    training.check_parallel_layout(llama, setup(gpus=8, tp=8))
    with pytest.raises(UsageError, match="must divide the query heads"):
        training.check_parallel_layout(llama, setup(gpus=3, tp=3))
    with pytest.raises(UsageError, match=r"key-value heads \(8\)"):
        training.check_parallel_layout(llama, setup(gpus=16, tp=16))
    with pytest.raises(UsageError, match="must divide the 32 layers"):
        training.check_parallel_layout(llama, setup(gpus=5, pp=5))
    with pytest.raises(ValueError, match="not a multiple of tp x pp"):
        setup(gpus=10, tp=4)


def test_op_level_recompute_runs_the_matmuls_it_does_not_save():
    """torchtitan's op-level policy saves every other aten.mm output (wq, wv, w1, w2 of wq wk wv wo w1 w3 w2) and
    SDPA's: the backward runs wk, wo and w3 again, 2 x T x (4096 x 1024 + 4096 x 4096 + 4096 x 14336) per layer of
    Llama 3.1 8B; the same under FP8, whose torchao linears reach the policy as aten.mm (torch.mm on Float8Tensor
    arguments, _scaled_mm inside)."""
    llama = load_model("llama-3.1-8b")
    t = 8192
    per_layer = 2 * t * (4096 * 1024 + 4096 * 4096 + 4096 * 14336)
    assert training.recompute_flops(llama, t, t, "selective-op") == 32 * per_layer
    assert training.recompute_flops(llama, t, t, "selective-op", "fp8") == 32 * per_layer
    every_linear = 2 * t * (4096 * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336)
    assert training.op_sac_recompute_share(llama, "bf16-mixed") == pytest.approx(per_layer / every_linear)
    assert training.op_sac_recompute_share(llama, "fp8") == pytest.approx(per_layer / every_linear)


def test_a_full_cross_entropy_holds_three_fp32_logit_tensors_at_its_peak():
    """torchtitan's loss, cross_entropy(pred.flatten(0, 1).float(), ...): log_softmax's saved fp32 output, its
    gradient from nll_loss and the logits' gradient, 4sbV each, alive at once in the backward."""
    llama = load_model("llama-3.1-8b")
    chunked = training.memory_per_gpu(llama, setup(seq_len=8192, micro_batch=2, flash=True))
    full = training.memory_per_gpu(llama, setup(seq_len=8192, micro_batch=2, flash=True, loss="full"))
    logits = 4 * 8192 * 2 * 128_256
    assert full["activations"] - chunked["activations"] == 2 * logits
    assert training.last_stage_logits_bytes(llama, setup(seq_len=8192, micro_batch=2, loss="full")) == 3 * logits
    assert training.last_stage_logits_bytes(llama, setup(seq_len=8192, micro_batch=2, loss="full", pp=2, gpus=2)) == 0
    # the upcast compiled with the loss (torchtune's compile_loss): its fp32 copy released, the bf16 logits kept
    assert training.last_stage_logits_bytes(llama, setup(seq_len=8192, micro_batch=2, loss="compiled")) == logits // 2
    compiled = training.memory_per_gpu(llama, setup(seq_len=8192, micro_batch=2, flash=True, loss="compiled"))
    assert chunked["activations"] - compiled["activations"] == 2 * 8192 * 2 * 128_256


def test_offload_moves_gradients_but_not_the_gathered_layers():
    """ZeRO-Offload keeps only the 16-bit weights on the GPU (DeepSpeed's estimator: `gpu_mem = 2 * total_params`
    under cpu_offload); FSDP's CPU offload moves parameters and gradients; the layers ZeRO-3 gathers stay."""
    llama = load_model("llama-2-7b")
    n, layer = 6_738_415_616, 202_383_360
    moved = training.memory_per_gpu(llama, setup(offload="optimizer"))
    assert (moved["weights"], moved["gradients"], moved["optimizer"]) == (2 * n, 0, 0)
    assert moved["host"] == 2 * n + 12 * n
    sharded = training.memory_per_gpu(llama, setup(offload="params", zero=3, gpus=8))
    root = 2 * 32_000 * 4096 + 4096  # FSDP's root unit (embedding, head, final norm), gathered through the step
    assert (sharded["weights"], sharded["gradients"], sharded["optimizer"]) == (2 * 2 * layer + 2 * root, 0, 0)
    assert sharded["host"] == 16 * n // 8


def test_train_takes_the_op_level_policy_and_the_full_loss(tfcost):
    args = ("train", "llama-3.1-8b", "--gpus", "8", "-T", "8192", "-b", "2", "--zero", "3", "--tokens", "1e9")
    korthikanti = tfcost(*args, "--recompute", "selective", "-f", "json")
    op_level = tfcost(*args, "--recompute", "selective-op", "--framework-set", "loss=full", "-f", "json")
    assert korthikanti.code == op_level.code == 0, op_level.stderr
    setup = json.loads(op_level.stdout)["setup"]
    assert (setup["recompute"], setup["loss"]) == ("selective-op", "full")
    held = json.loads(op_level.stdout)["memory_per_gpu"]
    assert held["logits_bytes"] == 3 * 4 * 8192 * 2 * 128_256
    korthikanti_layer = json.loads(korthikanti.stdout)["memory_per_gpu"]["activations_per_layer_bytes"]
    assert held["activations_per_layer_bytes"] < korthikanti_layer
    refused = tfcost(*args, "--framework-set", "loss=sum")
    assert refused.code != 0 and "Traceback" not in refused.stderr and refused.stdout == ""


LLAMA_2_7B_PARAMS = 6_738_415_616  # Touvron et al. 2023 / the checkpoint's parameter count
LLAMA_2_7B_LAYER = 202_383_360  # one decoder layer: 4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096


def test_fsdp_under_pipeline_parallelism_keeps_the_stage_gathered_and_its_gradients_unsharded():
    """torchtitan under PP: reshard_after_forward=False ("For PP, do not reshard after forward to avoid
    per-microbatch all-gathers"), and torch.distributed.pipelining reduce-scatters only at the last micro-batch's
    backward (set_requires_gradient_sync(last_backward)), FSDP2 accumulating the rest in fp32 (reduce_dtype)."""
    llama = load_model("llama-2-7b")
    n, layer = LLAMA_2_7B_PARAMS, LLAMA_2_7B_LAYER
    assert params.total_params(llama) == n and params.params_per_layer(llama) == layer
    # 16 GPUs: pp 2, 8 data-parallel ranks; global batch 16 of micro-batch 1: 2 micro-batches per step
    pipelined = setup(gpus=16, pp=2, zero=3, global_batch=16)
    held = training.memory_per_gpu(llama, pipelined)
    stage = n // 2  # each of the 2 stages holds half the parameters (n is even)
    assert held["weights"] == 2 * stage // 8 + 2 * stage  # the bf16 shard, and the whole stage gathered
    assert held["gradients"] == 4 * stage  # fp32, unsharded, until the last backward's reduce-scatter
    assert held["optimizer"] == 12 * stage // 8
    # --reshard-after-forward always: the two live layers (one in use, one prefetched) instead of the stage
    freed = training.memory_per_gpu(
        llama, setup(gpus=16, pp=2, zero=3, global_batch=16, reshard_after_forward="always")
    )
    assert freed["weights"] == 2 * stage // 8 + 2 * 2 * layer
    assert freed["gradients"] == held["gradients"]  # the pipeline's gradient sync does not depend on the flag
    # one micro-batch per step: its backward is the last, so the gradients are reduce-scattered at once
    one = training.memory_per_gpu(llama, setup(gpus=16, pp=2, zero=3, global_batch=8))
    assert one["gradients"] == 2 * stage // 8 and one["weights"] == held["weights"]
    # without pipeline parallelism: the live layers and FSDP's root unit (embedding, head, final norm), unless never
    # resharded (every layer gathered at the forward's end)
    flat = training.memory_per_gpu(llama, setup(gpus=8, zero=3, global_batch=16))
    root = 2 * 32_000 * 4096 + 4096
    assert (flat["weights"], flat["gradients"]) == (2 * n // 8 + 2 * 2 * layer + 2 * root, 2 * n // 8)
    kept = training.memory_per_gpu(llama, setup(gpus=8, zero=3, reshard_after_forward="never"))
    assert kept["weights"] == 2 * n // 8 + 2 * n
    # ZeRO-1 under PP (Megatron's, DeepSpeed's pipeline engine): no FSDP, nothing added
    zero1 = training.memory_per_gpu(llama, setup(gpus=16, pp=2, zero=1, global_batch=16))
    assert (zero1["weights"], zero1["gradients"]) == (2 * stage, 2 * stage)


def test_train_takes_reshard_after_forward(tfcost):
    args = (
        "train",
        "llama-2-7b",
        "--gpus",
        "16",
        "--pp",
        "2",
        "--zero",
        "3",
        "--global-batch",
        "16",
        "--tokens",
        "1e9",
    )
    default = tfcost(*args, "-f", "json")
    always = tfcost(*args, "--framework-set", "reshard_after_forward=always", "-f", "json")
    assert default.code == always.code == 0, always.stderr
    assert json.loads(default.stdout)["setup"]["reshard_after_forward"] == "default"
    assert json.loads(always.stdout)["setup"]["reshard_after_forward"] == "always"
    kept = json.loads(default.stdout)["memory_per_gpu"]["weights_bytes"]
    freed = json.loads(always.stdout)["memory_per_gpu"]["weights_bytes"]
    assert kept - freed == 2 * LLAMA_2_7B_PARAMS // 2 - 2 * 2 * LLAMA_2_7B_LAYER
    refused = tfcost(*args, "--framework-set", "reshard_after_forward=sometimes")
    assert refused.code != 0 and "Traceback" not in refused.stderr and refused.stdout == ""


def test_litgpt_lora_under_fsdp_keeps_whole_layer_gradients_unsharded():
    """LitGPT 8641822's lora.py on 2 GPUs: FSDPStrategy(auto_wrap_policy={Block}, ...) puts each layer's adapters and
    frozen weights in one FSDP1 unit (use_orig_params=True): gradients "equivalent to not freezing those parameters";
    and 128 micro-batches under no_sync: FSDP "will accumulate the full model gradients (instead of gradient
    shards)"."""
    llama = load_model("llama-2-7b")
    layers = 32 * LLAMA_2_7B_LAYER
    adapters = 32 * 2 * 8 * (4096 + 4096)  # rank 8 on q and v: 4,194,304, as LitGPT's table prints
    base = dict(gpus=2, zero=3, seq_len=1304, precision="bf16", lora_rank=8, lora_targets=("q", "v"))
    assert training.trainable_params(llama, setup(**base)) == adapters == 4_194_304
    plain = training.memory_per_gpu(llama, setup(**base, global_batch=256))
    assert plain["gradients"] == 2 * adapters // 2  # bf16 adapters' gradients, sharded over the 2 GPUs
    frozen = training.memory_per_gpu(llama, setup(**base, global_batch=256, frozen_gradients=True))
    assert frozen["gradients"] == 2 * (layers + adapters) // 2
    kept = training.memory_per_gpu(
        llama, setup(**base, global_batch=256, frozen_gradients=True, accumulate_unsharded=True)
    )
    assert kept["gradients"] == 2 * (layers + adapters)  # bf16-true: no upcast, unsharded
    assert kept["weights"] == frozen["weights"] == plain["weights"]
    # one micro-batch per step: nothing to accumulate
    once = training.memory_per_gpu(llama, setup(**base, frozen_gradients=True, accumulate_unsharded=True))
    assert once["gradients"] == frozen["gradients"]
    # full training under no_sync with bf16-mixed: FSDP2's fp32 reduce dtype
    full = training.memory_per_gpu(llama, setup(gpus=8, zero=3, global_batch=16, accumulate_unsharded=True))
    assert full["gradients"] == 4 * LLAMA_2_7B_PARAMS


def test_fsdp_conventions_change_nothing_without_zero_3(tfcost):
    # A framework's FSDP conventions (set by its file, here by --framework-set) describe sharded weights: a run
    # under ZeRO-0 to 2, or without LoRA for frozen_gradients, is priced as without them, not refused.
    args = ("train", "llama-2-7b", "--gpus", "2", "--tokens", "1e9", "--lora", "8", "-f", "json")
    plain = json.loads(tfcost(*args).stdout)
    for setting in ("accumulate_unsharded=true", "frozen_gradients=true", "fsdp2=true"):
        run = tfcost(*args, "--framework-set", setting)
        assert run.code == 0, run.stderr
        priced = json.loads(run.stdout)
        assert priced["memory_per_gpu"] == plain["memory_per_gpu"] and priced["step"] == plain["step"]
    args = ("train", "llama-2-7b", "--gpus", "2", "--zero", "3", "--tokens", "1e9", "-f", "json")
    no_lora = tfcost(*args, "--framework-set", "frozen_gradients=true")
    assert json.loads(no_lora.stdout)["memory_per_gpu"] == json.loads(tfcost(*args).stdout)["memory_per_gpu"]


def test_offloaded_activations_leave_one_layer_and_the_logits_on_the_gpu():
    """torchtune's activation offloading wraps the model's forward ("All but the last output Linear in every step will
    be offloaded"); the loss runs outside it, so its logits stay; the backward brings one layer's back at a time."""
    llama = load_model("llama-2-7b")
    kept = setup(seq_len=2048, micro_batch=2, recompute="full")
    on_gpu = training.memory_per_gpu(llama, kept)
    offloaded = training.memory_per_gpu(llama, kept.model_copy(update={"offload_activations": True}))
    layer = 2 * 2048 * 2 * 4096  # full recomputation keeps each layer's bf16 input: 2sbh (Korthikanti et al. 2022)
    logits = 4 * 2048 * 2 * 32_000  # the loss's fp32 log-probabilities, 4sbV
    # after the loss, the backward recomputes one layer at a time: its saved tensors as without recomputation,
    # beyond the input it kept, are held with the other layers' inputs; the larger of that and the logits counts
    whole = training.activation_bytes_per_layer_of(llama, kept.model_copy(update={"recompute": "none"}))
    gradients = 3 * 2048 * 2 * 11008 * 2  # its gated MLP's backward: three s b F bf16 gradients
    at_peak = max(logits, whole - layer + gradients)
    assert on_gpu["activations"] == 32 * layer + at_peak
    assert offloaded["activations"] == layer + at_peak
    assert offloaded["host"] - on_gpu["host"] == 31 * layer
    assert {k: offloaded[k] for k in ("weights", "gradients", "optimizer")} == {
        k: on_gpu[k] for k in ("weights", "gradients", "optimizer")
    }


@pytest.mark.parametrize("zero", [0, 1])
def test_megatron_convention_is_megatrons_own_estimate(zero):
    # Megatron-LM's theoretical_memory_usage.py: "num_bytes_per_parameter = (18 if not args.use_distributed_optimizer
    # else 6 + (12 / args.data_parallel_size))": 16-bit weights, fp32 main gradients (arguments.py: "bfloat16
    # requires gradient accumulation and all-reduce to be done in fp32"), fp32 master and two moments; the
    # distributed optimizer (ZeRO-1) shards the last 12 bytes over N_d. GPT-3 175B on t 8, p 8, N_d 4.
    shape = load_model("gpt3-175b")
    held = setup(gpus=256, tp=8, pp=8, zero=zero, memory_convention="megatron")
    per_gpu = training.memory_per_gpu(shape, held)
    n = params.total_params(shape) / 64
    megatron = n * (6 + 12 / 4) if zero == 1 else n * 18
    assert per_gpu["weights"] + per_gpu["gradients"] + per_gpu["optimizer"] == pytest.approx(megatron, rel=1e-9)
    zero_paper = training.memory_per_gpu(shape, held.model_copy(update={"memory_convention": "zero"}))
    assert per_gpu["gradients"] == 2 * zero_paper["gradients"]  # 4 bytes a parameter, not 2
    assert per_gpu["total"] - zero_paper["total"] == zero_paper["gradients"]
    fp32 = held.model_copy(update={"precision": "fp32"})  # no master copy: the gradients are fp32 already
    assert (
        training.memory_per_gpu(shape, fp32)["gradients"]
        == training.memory_per_gpu(shape, fp32.model_copy(update={"memory_convention": "zero"}))["gradients"]
    )


def test_fsdp_keeps_its_root_units_weights_gathered_from_forward_to_backward():
    """FSDP's root unit (every parameter outside the layers when each layer is a unit: Llama 3.1 8B's embedding and
    head, 128,256 x 4,096 each, and the final norm's 4,096) is not resharded after its forward (FSDP2's fully_shard:
    'The root FSDP state has its value specially set to False'; FSDP1's _post_forward_reshard): each GPU holds its
    1/t of it gathered, at the weights' 2 bytes (the bf16 base under LoRA), beside the layers ZeRO-3 gathers."""
    llama = load_model("llama-3.1-8b")
    root = 2 * 128_256 * 4096 + 4096
    assert training.root_unit_params(llama) == root
    fsdp = setup(gpus=8, zero=3, seq_len=8192, micro_batch=2)
    assert training.root_gathered_bytes(llama, fsdp) == 2 * root
    assert training.root_gathered_bytes(llama, setup(gpus=8, zero=3, tp=2)) == 2 * (root // 2)
    assert training.root_gathered_bytes(llama, setup(gpus=8, zero=3, precision="fp32")) == 4 * root
    assert training.root_gathered_bytes(llama, setup(gpus=8, zero=3, lora_rank=8, precision="fp32")) == 2 * root
    # none below ZeRO-3 (the weights are whole), under pipeline parallelism, or with every layer kept gathered
    assert training.root_gathered_bytes(llama, setup(gpus=8, zero=2)) == 0
    assert training.root_gathered_bytes(llama, setup(gpus=8, zero=3, pp=2)) == 0
    assert training.root_gathered_bytes(llama, setup(gpus=8, zero=3, reshard_after_forward="never")) == 0
    sharded = training.model_state_bytes_per_gpu(params.total_params(llama), "bf16-mixed", "adamw", 3, 8)["weights"]
    layers = training.zero3_gathered_bytes(params.params_per_layer(llama), fsdp)
    assert training.memory_per_gpu(llama, fsdp)["weights"] == sharded + layers + 2 * root


def test_fp8_under_the_op_level_policy_keeps_what_bf16_keeps():
    """torchao's float8 linears call torch.mm on Float8Tensor arguments, so torchtitan's op-level policy sees aten.mm
    and saves every other output, as under bf16: Llama 3.1 8B at b 2 x 8,192 keeps per layer the input and wq, wv,
    w1, w2's outputs (4,096 + 4,096 + 1,024 + 14,336 + 4,096 wide), SDPA's output (4,096) and fp32 log-sum-exp (32
    heads)."""
    llama = load_model("llama-3.1-8b")
    tokens = 2 * 8192
    per_layer = tokens * (2 * (4096 + 4096 + 1024 + 14_336 + 4096 + 4096) + 4 * 32)
    for precision in ("bf16-mixed", "fp8"):
        run = setup(gpus=64, zero=3, seq_len=8192, micro_batch=2, recompute="selective-op", precision=precision)
        assert training.activation_bytes_per_layer_of(llama, run) == per_layer


# Llama 3.1 405B (d 16,384, F 53,248, 128 query and 8 key-value heads of 128) at Table 4's 8K stage on 16,384 H100s
# (Dubey et al. 2024): t 8 with sequence parallelism, p 16 as 7 + 14 x 8 + 7, d 128, 16 sequences per DP group.
LLAMA_405B_8K = dict(tokens=16_777_216, seq_len=8192, gpus=16_384, global_batch=2048, tp=8, pp=16,
                     pp_first_layers=7, pp_last_layers=7, sequence_parallel=True, zero=2,
                     memory_convention="megatron")  # fmt: skip


def test_a_model_without_dropout_keeps_no_dropout_masks():
    # Llama's code has no dropout (meta-llama/llama3 llama/model.py: "h = x + self.attention(self.attention_norm(x),
    # ...)", "out = h + self.feed_forward(self.ffn_norm(h))"). By hand, per token, in bf16 unless said: the two norms'
    # inputs, the q/k/v and the w1/w3 inputs (d each); Q and K after RoPE (128 x 128 + 8 x 128), V (8 x 128), the
    # fp32 log-sum-exp (128 heads, 4 bytes), wo's input (128 x 128); the gate and up outputs and w2's input (F each);
    # every one split over t = 8 (sequence parallelism for the d-wide ones). Dropout would add two 1-byte d-wide masks.
    shape = load_model("llama-3.1-405b")
    d, f, s, t = 16_384, 53_248, 8192, 8
    per_token = 2 * (4 * d + (128 * 128 + 8 * 128) + 8 * 128 + 128 * 128 + 3 * f) + 4 * 128
    layer = per_token * s // t
    assert layer == 533_200_896  # 508.5 MiB
    without = setup(**{**LLAMA_405B_8K, "dropout": False})
    assert training.activation_bytes_per_layer_of(shape, without) == layer
    masks = 2 * d * s // t  # 32 MiB
    assert training.activation_bytes_per_layer_of(shape, setup(**LLAMA_405B_8K)) == layer + masks
    # 1F1B: the second stage, 8 layers with 15 micro-batches in flight, is the busiest (the first holds 16 x 7);
    # a layer's backward adds its gated MLP's three hidden-wide gradients, 3 x s x F/t bf16
    assert training.activation_bytes_per_gpu(shape, without) == 120 * layer + 3 * s * (f // t) * 2


def test_fsdp_syncing_every_micro_batch_accumulates_the_gradients_sharded():
    # fairscale's FSDP.no_sync: "This likely results in higher memory usage because FSDP will accumulate the full
    # model gradients (instead of gradient shards) until the eventual sync. ... Gradient accumulation can be done
    # without this context, avoiding the extra GPU memory overhead, but with the extra networking overhead." Llama 3:
    # "Our use of FSDP for Llama 3 shards optimizer states and gradients". Under p 16 and 16 micro-batches a step,
    # ZeRO-2's fp32 gradients are 4 bytes a parameter over t p (unsharded, held as ZeRO-1) or over t p d (synced).
    shape = load_model("llama-3.1-405b")
    n = params.total_params(shape)
    held = training.memory_per_gpu(shape, setup(**LLAMA_405B_8K))
    synced = training.memory_per_gpu(shape, setup(**LLAMA_405B_8K, reduce_every_micro_batch=True))
    assert held["gradients"] == pytest.approx(4 * n / 128, rel=1e-9)  # 11.81 GiB
    assert synced["gradients"] == pytest.approx(4 * n / 128 / 128, rel=1e-6)  # 0.09 GiB
    assert (synced["weights"], synced["optimizer"]) == (held["weights"], held["optimizer"])
    # Without dropout (Llama's code) and v = 8, the published 8K layout without recomputation: 2N/(t p) bf16 weights,
    # 12N/(t p d) optimizer states, the sharded gradients and (1 + 15/128) x 120 layers of activations (Korthikanti
    # et al. 2022 §4.2.3's interleaving factor), 72.85 GiB, within 80 GiB less the context and the 5% reserve.
    run = setup(**LLAMA_405B_8K, reduce_every_micro_batch=True, dropout=False, virtual_stages=8)
    total = training.memory_per_gpu(shape, run)["total"]
    gradients = 3 * 8192 * (53_248 // 8) * 2  # a layer's backward: its gated MLP's three hidden-wide gradients
    by_hand = 2 * n / 128 + 4 * n / 128**2 + 12 * n / 128**2 + round(120 * 533_200_896 * (1 + 15 / 128)) + gradients
    assert total == pytest.approx(by_hand, rel=1e-6)
    assert total / 2**30 == pytest.approx(73.15, abs=0.005)
    assert total + 0.5 * 2**30 + 0.05 * 80 * 2**30 <= 80 * 2**30
    # ZeRO-3 / FSDP under pipeline parallelism the same: synced, its gradients are sharded (the stage stays gathered)
    llama = load_model("llama-2-7b")
    stage = LLAMA_2_7B_PARAMS // 2
    fsdp = training.memory_per_gpu(llama, setup(gpus=16, pp=2, zero=3, global_batch=16, reduce_every_micro_batch=True))
    assert fsdp["gradients"] == 2 * stage // 8 and fsdp["weights"] == 2 * stage // 8 + 2 * stage
    with pytest.raises(ValueError, match="contradict"):
        setup(gpus=16, pp=2, zero=3, accumulate_unsharded=True, reduce_every_micro_batch=True)
