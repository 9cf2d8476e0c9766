"""Frameworks as data (issue 34): each shipped file is valid and sourced, a release is picked as documented, and
a framework's conventions reach the costs, below the user's own options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tfcost
from tfcost.errors import TfcostError, UsageError
from tfcost.readers.frameworks import all_frameworks, framework_used, read_framework
from tfcost.schema import SERVING_CONVENTIONS, TRAINING_CONVENTIONS

TITAN = ("train", "llama-3.1-8b", "--gpus", "8", "-T", "8192", "-b", "2", "--zero", "3", "--tokens", "1e9")


def test_every_shipped_framework_is_valid_and_every_field_sourced():
    frameworks = all_frameworks()
    assert {"torchtitan", "llm-foundry", "vllm"} <= {framework.name for framework in frameworks}
    # issue 34's serving engines, each with a file
    engines = {"vllm", "sglang", "tensorrt-llm", "tgi", "llama-cpp", "ollama", "lmdeploy", "gpt-fast", "exllamav2"}
    assert engines <= {framework.name for framework in frameworks if framework.kind == "serving"}
    for framework in frameworks:
        allowed = TRAINING_CONVENTIONS if framework.kind == "training" else SERVING_CONVENTIONS
        for release in framework.versions:
            assert "http" in release.source or "/" in release.source, (framework.name, release.version)
            for key, field in release.fields.items():
                assert key in allowed
                # a source says where it was read (a URL, or a file at a commit) and what it says there
                assert len(field.source) >= 40 and ("http" in field.source or " at " in field.source), (framework, key)


@pytest.mark.parametrize(
    ("asked", "priced"),
    [
        ("vllm", "0.8.5"),
        ("vllm@0.2.7", "0.2.7"),
        ("vllm@0.7", "0.7.0"),
        ("vllm@0.7.3", "0.7.0"),
        ("vllm@0.8.4", "0.8.0"),
        ("vllm@0.10.1", "0.8.5"),
        ("tensorrt-llm@0.6.1", "0.5.0"),
        ("tensorrt-llm@1.0", "1.0.0"),
        ("sglang@0.4.9", "0.4"),
        ("tgi@2.4.1", "2.0.0"),
    ],
)
def test_a_release_number_is_priced_as_the_newest_listed_at_or_before_it(asked, priced):
    assert framework_used(asked, "serving", {}).version == priced


def test_later_releases_keep_what_they_do_not_change():
    # vLLM 0.8.0's entry changes the profile run and max_num_seqs; its KV pool and block size are 0.2.7's
    fields = framework_used("vllm@0.8.0", "serving", {}).fields
    assert fields["vllm_profile"].value == "v1-sampler" and fields["kv_block"].value == 16
    assert "v0.2.7" in fields["kv_block"].source


@pytest.mark.parametrize(
    ("reference", "kind", "said"),
    [
        ("vlm", "serving", "did you mean vllm"),
        ("vllm@0.1", "serving", "no such release"),
        ("torchtitan@abc1234", "training", "no such release"),
        ("torchtitan", "serving", "training framework"),
    ],
)
def test_a_framework_that_is_not_there_is_one_line(reference, kind, said):
    with pytest.raises(UsageError, match=said):
        framework_used(reference, kind, {})


def test_a_file_with_an_unknown_or_bad_field_is_refused(tmp_path: Path):
    good = (Path(tfcost.__file__).parent.parent / "presets" / "frameworks" / "vllm.yaml").read_text()
    for broken, said in (
        (good.replace("kv_block:", "kv_blocks:"), "kv_blocks is not a serving convention"),
        (good.replace("value: 16", "value: 0"), "greater than 0"),
        (good.replace("name: vllm", "name: other"), "is not the file's name"),
    ):
        path = tmp_path / "vllm.yaml"
        path.write_text(broken)
        with pytest.raises(TfcostError, match=said):
            read_framework(path)


def test_no_framework_names_the_defaults_it_assumed(tfcost):
    run = tfcost(*TITAN, "-f", "json")
    used = json.loads(run.stdout)["framework"]
    assert used["name"] is None and set(used["fields"]) == TRAINING_CONVENTIONS
    assert used["fields"]["loss"]["value"] == "chunked"
    assert "tfcost's defaults assumed" in tfcost(*TITAN).stdout


def test_torchtitans_conventions_reach_the_setup_and_the_step(tfcost):
    plain = json.loads(tfcost(*TITAN, "-f", "json").stdout)
    titan = json.loads(tfcost(*TITAN, "--framework", "torchtitan@9dec370", "-f", "json").stdout)
    assert titan["framework"]["name"] == "torchtitan" and titan["framework"]["version"] == "9dec370"
    setup = titan["setup"]
    assert setup["fsdp2"] and setup["loss"] == "full" and setup["kernels"] == "eager" and not setup["dropout"]
    # FSDP2's copies and the eager norms take time the defaults do not price
    assert titan["step"]["seconds"]["total"] > plain["step"]["seconds"]["total"]
    # the same as setting each convention by hand
    by_hand = ["--framework-set", "fsdp2=true", "--framework-set", "loss=full", "--framework-set", "kernels=eager"]
    by_hand += ["--framework-set", "dropout=false", "--framework-set", "sequence_parallel=true"]
    by_hand += ["--framework-set", "tp_keeps_gathered_input=true"]
    assert json.loads(tfcost(*TITAN, *by_hand, "-f", "json").stdout)["step"] == titan["step"]


def test_the_users_options_win_over_the_framework_and_framework_set_over_its_file(tfcost):
    args = (*TITAN, "--framework", "torchtitan", "-f", "json")
    compiled = json.loads(tfcost(*args, "--framework-set", "loss=compiled").stdout)
    assert compiled["setup"]["loss"] == "compiled" and compiled["framework"]["overridden"] == ["loss"]
    assert compiled["framework"]["fields"]["loss"]["switch"] == "training.compile"
    off = json.loads(tfcost(*args, "--no-sequence-parallel", "--tp", "2").stdout)
    assert off["setup"]["sequence_parallel"] is False


def test_bad_framework_set_is_one_line(tfcost):
    for setting, said in (("loss=blockwise", "loss"), ("kv_pool=vllm", "not a training convention"), ("loss", "KEY=")):
        run = tfcost(*TITAN, "--framework-set", setting)
        assert run.code == 2 and not run.stdout and len(run.stderr.strip().splitlines()) == 1
        assert said in run.stderr and "Traceback" not in run.stderr


def test_vllms_release_decides_the_kv_pool_under_tensor_parallelism(tfcost):
    # vLLM 0.2.7's profile run held every all-reduced activation (vllm#2248) where later releases do not: with 4-way
    # tensor parallelism its pool is smaller, exactly as the convention set by hand makes it
    args = (
        "serve",
        "llama-2-70b",
        "--gpu",
        "a100-80gb",
        "--gpus",
        "4",
        "-B",
        "1",
        "-P",
        "4095",
        "-G",
        "1",
        "-f",
        "json",
    )
    old = json.loads(tfcost(*args, "--framework", "vllm@0.2.7").stdout)["expected"]["max_kv_tokens"]
    by_hand = json.loads(tfcost(*args, "--framework-set", "nccl_record_stream=true").stdout)
    assert old == by_hand["expected"]["max_kv_tokens"] < json.loads(tfcost(*args).stdout)["expected"]["max_kv_tokens"]


def test_the_api_takes_the_framework_as_the_command_does(tfcost):
    report = tfcost_api_train()
    printed = json.loads(tfcost(*TITAN, "--framework", "torchtitan@9dec370", "-f", "json").stdout)
    printed.pop("tfcost_version")
    printed.pop("suggestion")  # the command adds the nearest layout that fits; the API leaves that to plan_train
    assert report.model_dump(mode="json") == printed


def tfcost_api_train():
    return tfcost.train(
        "llama-3.1-8b", gpus=8, seq=8192, micro_batch=2, zero=3, tokens=10**9, framework="torchtitan@9dec370"
    )


def test_plan_prices_every_layout_under_the_framework(tfcost):
    args = ("plan", "train", "llama-3-8b", "--gpus", "8", "--top", "1", "-f", "json")
    plain = json.loads(tfcost(*args).stdout)
    titan = json.loads(tfcost(*args, "--framework", "torchtitan").stdout)
    assert titan["framework"]["name"] == "torchtitan" and plain["framework"]["name"] is None
    assert titan["layouts"][0] != plain["layouts"][0]


def test_frameworks_lists_as_data(tfcost):
    listed = json.loads(tfcost("frameworks", "-f", "json").stdout)["results"]
    assert {"torchtitan", "vllm"} <= {row["name"] for row in listed}
    csv = tfcost("frameworks", "--kind", "serving", "-f", "csv").stdout.splitlines()
    assert csv[0].startswith("name,kind") and all(",serving," in row for row in csv[1:])
    one = json.loads(tfcost("frameworks", "vllm@0.2.7", "-f", "json").stdout)
    assert one["version"] == "0.2.7" and one["fields"]["nccl_record_stream"]["value"] is True
    assert "vllm/issues/2248" in tfcost("frameworks", "vllm@0.2.7", env={"COLUMNS": "200"}).stdout


# The training cases of validation/cases.yaml set these conventions by hand before their framework files existed
# (issue 22's translations, each quoted in the case): a file's release prices a run as those flags did.
BY_HAND = [
    (
        "llm-foundry@061f2c7",
        ["train", "validation/models/mpt-7b.yaml", "--gpu", "h100-sxm", "--gpus", "8", "-T", "2048", "-b", "8"],
        ["flash_kernel=fa1", "dropout=false", "logit_metrics=2", "reduce_every_micro_batch=true"],
    ),
    (
        "megatron-core@50a4b5fa02",
        ["train", "gpt3-175b", "--gpu", "a100-80gb", "--gpus", "64", "--tp", "8", "--pp", "8", "-T", "2048"],
        ["flash=false", "dp_overlap=false", "loss=full"],
    ),
    (
        "meta-llama3@2407.21783",
        [
            "train",
            "llama-3.1-405b",
            "--gpus",
            "1024",
            "--tp",
            "8",
            "--pp",
            "16",
            "--pp-first-layers",
            "7",
            "--pp-last-layers",
            "7",
            "-T",
            "8192",
            "--zero",
            "2",
        ],
        ["reduce_every_micro_batch=true", "memory_convention=megatron", "dropout=false", "sequence_parallel=true"],
    ),
    (
        "litgpt@8641822",
        ["train", "llama-2-7b", "--gpu", "a100-40gb", "--gpus", "2", "--zero", "3", "--lora", "8", "-T", "1304"],
        ["kernels=eager", "accumulate_unsharded=true", "frozen_gradients=true", "dropout=false"],
    ),
]


@pytest.mark.parametrize(("reference", "run", "settings"), BY_HAND, ids=[case[0] for case in BY_HAND])
def test_a_frameworks_release_prices_a_run_as_its_conventions_set_by_hand(tfcost, reference, run, settings):
    run = [*run, "--global-batch", "256", "--tokens", "1e9", "-f", "json"]
    framework = json.loads(tfcost(*run, "--framework", reference).stdout)
    by_hand = json.loads(tfcost(*run, *[word for s in settings for word in ("--framework-set", s)]).stdout)
    assert framework["step"] == by_hand["step"] and framework["memory_per_gpu"] == by_hand["memory_per_gpu"]
    plain = json.loads(tfcost(*run).stdout)  # and the conventions change the run: the test could fail
    assert (plain["step"], plain["memory_per_gpu"]) != (framework["step"], framework["memory_per_gpu"])


def test_a_framework_may_set_the_recompute_it_defaults_to_and_the_user_overrides_it(tfcost):
    # Unsloth's get_peft_model defaults to use_gradient_checkpointing="unsloth": every layer checkpointed, its input
    # offloaded to the host; LLaMA-Factory checkpoints every layer unless disable_gradient_checkpointing
    run = ("train", "llama-3.1-8b", "--gpu", "rtx-4090", "-T", "2048", "--lora", "16", "--qlora", "-f", "json")
    unsloth = json.loads(tfcost(*run, "--framework", "unsloth").stdout)["setup"]
    assert unsloth["recompute"] == "full" and unsloth["offload_activations"] and unsloth["loss"] == "compiled"
    factory = json.loads(tfcost(*run, "--framework", "llama-factory").stdout)["setup"]
    assert factory["recompute"] == "full" and factory["loss"] == "full" and factory["kernels"] == "eager"
    assert (
        json.loads(tfcost(*run, "--framework", "llama-factory", "--recompute", "none").stdout)["setup"]["recompute"]
        == "none"
    )


def test_every_issue_34_trainer_has_a_file():
    names = {framework.name for framework in all_frameworks("training")}
    wanted = {"megatron-core", "torchtitan", "deepspeed", "hf-trainer", "axolotl", "unsloth", "llama-factory"}
    assert wanted | {"ms-swift", "torchtune", "litgpt", "llm-foundry", "nemo"} <= names


SERVE_70B = ("serve", "llama-2-70b", "--gpus", "2", "--weights-dtype", "fp8", "--kv-dtype", "fp8", "-B", "64")


def test_tensorrt_llms_gpt_session_release_is_the_conventions_set_by_hand(tfcost):
    # TensorRT-LLM v0.5-v0.6 (docs/source/performance.md at 138f96d: gptSessionBenchmark) ran masked MHA, "a single
    # CUDA thread-block per head", and GptSession's context step: what validation #50-#61 set by hand before the file
    args = (*SERVE_70B, "--gpu", "h100-sxm", "-P", "2048", "-G", "2048", "-f", "json")
    release = json.loads(tfcost(*args, "--framework", "tensorrt-llm@0.6.1").stdout)["expected"]
    by_hand = ("--framework-set", "gqa_decode=per-query-head", "--framework-set", "trt_session=true")
    assert release == json.loads(tfcost(*args, *by_hand).stdout)["expected"]
    # v0.8's XQA reads a key-value head once for its 8 query heads: decode is quicker
    xqa = json.loads(tfcost(*args, "--framework", "tensorrt-llm@0.8.0").stdout)["expected"]
    assert xqa["tpot_ms"] < release["tpot_ms"] and xqa["ttft_ms"] == release["ttft_ms"]


QWEN_ON_4 = ("serve", "qwen3-235b-a22b", "--gpus", "4", "--weights-dtype", "fp8", "-B", "1", "-P", "8191", "-G", "1")


def test_vllms_large_card_default_applies_on_an_h100_and_not_an_a100(tfcost):
    # vllm#16158 (April 2025): "reverts the default `max_num_seqs` from 1024 to 256 for hardware other than H100/200"
    def run(gpu: str, *extra: str) -> dict:
        return json.loads(tfcost(*QWEN_ON_4, "--gpu", gpu, "--framework", "vllm@0.9.2", *extra, "-f", "json").stdout)

    h100, a100 = run("h100-sxm"), run("a100-80gb")
    assert h100["setup"]["max_num_seqs"] == 1024 and "max_num_seqs" not in a100["setup"]  # 256, the default
    # on the H100 it is what validation #48 set by hand before the file had the rule
    by_hand = ("--framework-set", "vllm_profile=v1-sampler", "--framework-set", "max_num_seqs=1024")
    hand = json.loads(tfcost(*QWEN_ON_4, "--gpu", "h100-sxm", *by_hand, "-f", "json").stdout)
    assert h100["expected"]["max_kv_tokens"] == hand["expected"]["max_kv_tokens"]
    # a user's max_num_seqs (vLLM's --max-num-seqs) holds on every card: fewer sampler rows, a larger pool
    fewer = run("h100-sxm", "--framework-set", "max_num_seqs=256")
    assert fewer["setup"].get("max_num_seqs", 256) == 256
    assert fewer["expected"]["max_kv_tokens"] > h100["expected"]["max_kv_tokens"]
