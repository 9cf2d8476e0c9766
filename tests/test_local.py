"""`tfcost fit` (issue 36): GGUF bytes, llama.cpp's placement, buffers and context, against llama.cpp's own logs and
llama-bench's printed model sizes."""

from __future__ import annotations

import json

import pytest

from tfcost import api
from tfcost.cli.main import main
from tfcost.core.model import model_of
from tfcost.costs import local
from tfcost.errors import TfcostError
from tfcost.readers.presets import load_gpu, load_model
from tfcost.schema import LocalSetup
from tfcost.units import GIB

MIB = 2**20


def test_type_sizes_are_the_gguf_package_s():
    """Each (block, bytes) pair is gguf-py's GGML_QUANT_SIZES entry for the type of that name."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    for name, sizes in local.GGML_TYPE_SIZES.items():
        assert GGML_QUANT_SIZES[GGMLQuantizationType[name]] == sizes, name


def llama_3_8b_bytes(file_type: str) -> local.FileBytes:
    return local.file_bytes(model_of(load_model("llama-3-8b")), file_type)


def test_llama_3_8b_q4_k_m_as_llama_cpp_loads_it():
    """A public llama-cpp-python run's log of mradermacher's llama-3-Korean-Bllossom-8B-Q4_K_M.gguf (a Llama 3 8B
    fine-tune, file_type 15) on an RTX 3070, all layers offloaded, n_ctx 512, flash_attn 0:
        llama_model_loader: - type  f32:   65 tensors / - type q4_K:  193 tensors / - type q6_K:   33 tensors
        llm_load_print_meta: model size       = 4.58 GiB (4.89 BPW)
        llm_load_tensors:        CPU buffer size =   281.81 MiB
        llm_load_tensors:      CUDA0 buffer size =  4403.49 MiB
        llama_kv_cache_init:      CUDA0 KV buffer size =    64.00 MiB
        llama_new_context_with_model:      CUDA0 compute buffer size =   258.50 MiB"""
    model = model_of(load_model("llama-3-8b"))
    weights = local.file_bytes(model, "Q4_K_M")
    traits = local.traits_of(model)
    q6_k = sum(
        local.tensor_type("Q4_K_M", local.category(op), index, traits, op.fan_in, False) == "Q6_K"
        for index in range(32)
        for op in model.layers[0].rows
        if op.kind == "linear"
    ) + (local.tensor_type("Q4_K_M", "output", 0, traits, 4096, False) == "Q6_K")
    assert q6_k == 33
    assert round(weights.total / GIB, 2) == 4.58
    assert round(weights.total * 8 / 8.03e9, 2) == 4.89
    setup = LocalSetup(ctx=512, flash_attn=False)
    placement = local.place(model, weights, load_gpu("rtx-4090"), setup, 33, 512)
    (gpu,) = placement.gpus
    assert round(placement.host.weights / MIB, 2) == 281.81
    assert round(gpu.weights / MIB, 2) == 4403.49
    assert gpu.kv_cache == 64 * MIB
    assert round(gpu.compute / MIB, 2) == 258.50


@pytest.mark.parametrize(
    ("file_type", "gib"),
    # llama.cpp PR #3084 (ggerganov, M2 Ultra llama-bench): "LLaMA 7B mostly Q4_0 | 3.56 GiB", "mostly Q8_0 |
    # 6.67 GiB", "mostly Q6_K | 5.15 GiB", "mostly Q4_K - Medium | 3.80 GiB", "mostly F16 | 12.55 GiB"
    [("Q4_0", 3.56), ("Q8_0", 6.67), ("Q6_K", 5.15), ("Q4_K_M", 3.80), ("F16", 12.55)],
)
def test_llama_2_7b_file_sizes_as_llama_bench_prints_them(file_type, gib):
    assert round(local.file_bytes(model_of(load_model("llama-2-7b")), file_type).total / GIB, 2) == gib


def test_llama_2_13b_q4_k_m_size():
    """geerlingguy/ai-benchmarks#46 (RTX 2080 Ti, llama-bench): "llama 13B Q4_K - Medium | 7.33 GiB | 13.02 B"."""
    assert round(local.file_bytes(model_of(load_model("llama-2-13b")), "Q4_K_M").total / GIB, 2) == 7.33


def test_quantized_kv_cache_is_its_blocks():
    """q8_0 keeps 32 values in 34 bytes, q4_0 in 18 (gguf's GGML_QUANT_SIZES), f16 in 64."""
    model = model_of(load_model("llama-3.1-8b"))
    f16 = sum(local.kv_bytes_per_layer(model, 8192, "F16"))
    assert f16 == 2 * 8192 * 1024 * 2 * 32  # K and V, 8192 cells, 8 heads x 128, 2 bytes, 32 layers: 1 GiB
    assert sum(local.kv_bytes_per_layer(model, 8192, "Q8_0")) * 64 == f16 * 34
    assert sum(local.kv_bytes_per_layer(model, 8192, "Q4_0")) * 64 == f16 * 18


def test_metal_working_set_share():
    """A 64 GB M2 Max: "ggml_metal_init: recommendedMaxWorkingSetSize  = 51539.61 MB" (llama.cpp's log, MB = 10^6
    bytes): 48 GiB of 64. With --ram 64G the GPU's budget is that, less --fit's 1024 MiB."""
    gpu = load_gpu("apple-m2-max")
    assert round(64 * GIB * gpu.gpu_memory_share / 1e6, 2) == 51539.61
    assert local.gpu_budget(gpu, LocalSetup(ram_gib=64.0)) == 48 * GIB - 1024 * MIB


def test_8b_on_a_4090_all_on_the_gpu():
    report = api.fit("llama-3.1-8b", gpu="rtx-4090", quant="Q4_K_M")
    assert report.gpu_layers == report.layers == 33
    assert report.fits and report.context == report.max_context == 131072
    assert report.memory[0].total_bytes <= report.memory[0].budget_bytes


def test_70b_on_a_4090_with_64_gib_is_split_with_the_host():
    report = api.fit("llama-3.1-70b", gpu="rtx-4090", ram="64G", quant="Q4_K_M", ctx=8192)
    gpu, host = report.memory
    assert 0 < report.gpu_layers < 80 and gpu.layers == report.gpu_layers and host.layers == 80 - gpu.layers
    assert gpu.fits and host.fits and host.budget_bytes == 64 * GIB
    # one more layer would not fit the card
    more = api.fit("llama-3.1-70b", gpu="rtx-4090", ram="64G", ctx=8192, gpu_layers=report.gpu_layers + 1)
    assert not more.fits
    # the host's share is read at the host's bandwidth: generation far below the all-GPU 8B's
    assert report.tokens_per_s.generation < 10


def test_quantized_kv_cache_gives_a_longer_context():
    """With 40 layers of a 70B on the card, q4_0 keys and values (18 bytes per 32) hold more context than f16."""
    f16 = api.fit("llama-3.1-70b", gpu="rtx-4090", gpu_layers=40, kv_dtype="f16")
    q4 = api.fit("llama-3.1-70b", gpu="rtx-4090", gpu_layers=40, kv_dtype="q4_0")
    assert f16.max_context is not None and q4.max_context is not None
    assert q4.max_context > 3 * f16.max_context


def test_two_gpus_split_the_layers_and_the_last_holds_the_output():
    """llama-model.cpp's split of act_gpu_layers = 81 (80 layers and the output) at [0.5, 1]: layer il goes to the
    first GPU while il / 81 < 0.5, so layers 0-40 (41) to the first, 41-79 and the output to the second."""
    report = api.fit("llama-3.1-70b", gpu="rtx-4090", gpus=2, quant="IQ4_XS", ctx=2048, gpu_layers=81)
    assert report.layers_per_gpu == [41, 39]
    first, last, _host = report.memory
    # the output layer is on the last GPU: its compute buffer is the logits (128,256 x 512 f32) and the last hidden
    # state (512 x 8,192 f32); the first's, the larger FFN intermediate (2 x 512 x 28,672 f32 and two hidden states)
    assert last.compute_bytes == 128256 * 512 * 4 + 512 * 8192 * 4
    assert first.compute_bytes == 2 * 512 * 28672 * 4 + 2 * 512 * 8192 * 4


def test_ngl_counts_the_output_layer_as_llama_cpp_does():
    """llama-model.cpp: the output layer goes to a GPU only when n_gpu_layers > n_layer."""
    model = model_of(load_model("llama-3-8b"))
    weights = local.file_bytes(model, "Q4_K_M")
    setup = LocalSetup(ctx=512)
    at_32 = local.place(model, weights, load_gpu("rtx-4090"), setup, 32, 512)
    at_33 = local.place(model, weights, load_gpu("rtx-4090"), setup, 33, 512)
    assert at_33.gpus[0].weights - at_32.gpus[0].weights == weights.output_layer
    assert at_32.gpus[0].layers == at_33.gpus[0].layers == 32


def test_json_keys(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["fit", "llama-3-8b", "--gpu", "rtx-4090", "--kv-dtype", "q8_0", "--format", "json"])
    assert exited.value.code == 0
    document = json.loads(capsys.readouterr().out)
    assert document["gpu_layers"] == 33 and document["max_context"] == 8192
    assert set(document["tokens_per_s"]) == {"prompt", "generation"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fit", "llama-3-8b", "--quant", "Q4_K_XX"], "unknown GGUF file type"),
        (["fit", "llama-3-8b", "--ram", "lots"], "not a memory size"),
        (["fit", "llama-3-8b", "--gpu", "rtx-9999"], "unknown GPU"),
    ],
)
def test_bad_input_is_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code != 0
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1


def test_table_prints(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "llama-3.1-70b", "--gpu", "rtx-4090", "--ram", "64G", "-c", "8k"])
    out = capsys.readouterr().out
    assert "-ngl" in out and "host" in out and "tokens/s" in out


def test_memory_sizes_parse():
    assert local.parse_memory_gib("64G") == local.parse_memory_gib("64GiB") == local.parse_memory_gib("64") == 64
    assert local.parse_memory_gib("512M") == 0.5
    with pytest.raises(ValueError):
        local.parse_memory_gib("-3G")


def test_api_refuses_a_bad_ram():
    with pytest.raises(TfcostError):
        api.fit("llama-3-8b", ram="sixty")


def test_a_gguf_file_is_priced_from_its_own_tensors(tmp_path):
    """A .gguf file: its tensors' bytes as stored, not a file type's mixture; token_embd on the host (the input
    layer), blk.N with layer N, output and output_norm with the output layer."""
    from test_stored import gguf_bytes, write_gguf

    path = tmp_path / "tiny.gguf"
    tensors = write_gguf(path)
    report = api.fit(str(path), gpu="rtx-4090", ctx=256)
    sizes = {name: gguf_bytes(kind, shape) for name, (kind, shape) in tensors.items()}
    assert report.file_bytes == sum(sizes.values())
    gpu, host = report.memory
    assert host.weights_bytes == sizes["token_embd.weight"]
    assert gpu.weights_bytes == sum(size for name, size in sizes.items() if name != "token_embd.weight")
    assert report.gpu_layers == 3 and report.layers_per_gpu == [2]


@pytest.mark.parametrize(
    ("model", "file_type", "gib"),
    [
        # llama-bench rows of published runs: "gpt-oss 20B MXFP4 MoE | 11.27 GiB | 20.91 B" (ggml-org's
        # gpt-oss-20b GGUF, several stored benchmark notes); "Llama-3.1-8B Q8_0 | 7.95 GiB"; geerlingguy/
        # beowulf-ai-cluster#17: "llama 70B Q4_K - Medium        |  39.59 GiB |    70.55 B" (Llama 3.3 70B).
        ("gpt-oss-20b", "MXFP4_MOE", 11.27),
        ("llama-3.1-8b", "Q8_0", 7.95),
        ("llama-3.1-70b", "Q4_K_M", 39.59),
    ],
)
def test_more_file_sizes_as_llama_bench_prints_them(model, file_type, gib):
    assert round(local.file_bytes(model_of(load_model(model)), file_type).total / GIB, 2) == gib


def test_a_context_past_the_model_s_own_is_noted():
    report = api.fit("llama-3-8b", gpu="rtx-4090", ctx=16384)
    assert any("passes the model's own context of 8,192" in note for note in report.notes)


def test_moe_overflow_as_llama_fit_params_prints_it():
    """llama.cpp's tools/fit-params/README.md (build 6895): Qwen3-30B-A3B F16 on an RTX 4090,
        llama_params_fit_impl: context size reduced from 40960 to 4096 -> need 3456 MiB less memory in total
        llama_params_fit_impl:   - CUDA0 (NVIDIA GeForce RTX 4090): 48 layers (34 overflowing),  19187 MiB used
        -c 4096 -ngl 48 -ot blk\\.14\\.ffn_(up|down|gate)_(ch|)exps=CPU,...,blk\\.47\\.ffn_(up|down|gate)_(ch|)exps=CPU
        llama_memory_breakdown_print: |   - CUDA0 (RTX 4090)   | 24077 =  945 + (19187 = 17904 +     384 +     898)
    At those layers (every layer on the GPU, the routed experts of layers 14-47 on the host) the GPU holds 17,904
    MiB of weights and a 384 MiB KV cache, as tfcost counts them. tfcost's own fill keeps 17 layers' experts on the
    GPU where llama.cpp's keeps 14: its compute buffer (898 MiB) is not what llama.cpp's fit projected while
    choosing, which tfcost does not follow step by step."""
    model = model_of(load_model("qwen3-30b-a3b"))
    weights = local.file_bytes(model, "F16")
    placement = local.place(model, weights, load_gpu("rtx-4090"), LocalSetup(quant="F16"), 48, 4096, 14)
    (gpu,) = placement.gpus
    assert placement.experts_on_host == 34 and gpu.layers == 48
    assert gpu.weights // MIB == 17904 and gpu.kv_cache == 384 * MIB  # the breakdown's whole MiB, rounded down
    report = api.fit("qwen3-30b-a3b", gpu="rtx-4090", quant="F16")
    assert (report.context, report.gpu_layers) == (4096, 48) and 0 < report.expert_layers_on_host < 48


def test_a_token_reads_only_its_experts():
    """A generated token reads k of E routed experts (Qwen3-30B-A3B: 8 of 128) of each layer."""
    model = model_of(load_model("qwen3-30b-a3b"))
    weights = local.file_bytes(model, "Q4_K_M")
    placement = local.place(model, weights, load_gpu("rtx-4090"), LocalSetup(), 48, 4096, 0)
    experts = sum(weights.experts)
    assert placement.host.weights == weights.input_layer + experts + weights.output_layer
    assert placement.host.read_per_token == round(experts * 8 / 128 / 48) * 48 + weights.output_layer


def test_csv_rows(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "llama-3-8b", "--gpu", "rtx-4090", "--format", "csv"])
    rows = {line.split(",")[1]: line.rsplit(",", 1)[1] for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows["gpu_layers"] == "33" and rows["max_context"] == "8192"
    assert {"tokens_per_s.prompt", "tokens_per_s.generation", "file_bytes"} <= set(rows)


def test_tokens_per_s_carry_the_validation_range():
    """Each tokens/s with its local_inference range (presets/validation-errors.json): measured / predicted from the
    10th to the 90th percentile of the category's runs, applied to this prediction."""
    from tfcost.readers.validation_errors import validation_errors

    report = api.fit("llama-3-8b", gpu="rtx-4090")
    entry = validation_errors()["local_inference"]
    bar = report.intervals["tokens_per_s.generation"]
    assert bar.low == pytest.approx(report.tokens_per_s.generation * entry["ratio_p10"])
    assert bar.high == pytest.approx(report.tokens_per_s.generation * entry["ratio_p90"])
    assert bar.runs == entry["runs"] >= 10
