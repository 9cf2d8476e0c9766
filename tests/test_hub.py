"""Hub ids (`owner/name`): read from a cache laid out as the Hub's, or through a loopback server standing in for
the Hub (HF_ENDPOINT), with one-line errors for a missing, a gated and an offline-and-not-cached model. No
command without a hub id imports huggingface_hub."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from conftest import CHILD_LIMIT_S, run_tfcost

pytest.importorskip("huggingface_hub", reason="hub ids need huggingface_hub, a core dependency")

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
QWEN3_8B = 8_190_735_360  # Qwen3-8B's published total (model card: 8.2B; safetensors metadata)
LLAMA_3_8B = 8_030_261_248  # Meta-Llama-3-8B's published total


def hub_cache(root: Path, repo_id: str, files: dict[str, str], revision: str = COMMIT) -> None:
    """A cache as huggingface_hub lays it out: models--org--name/{blobs,snapshots/<commit>,refs/main}."""
    repo = root / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True)
    for name, text in files.items():
        (snapshot / name).write_text(text)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)


def env_for(home: Path, **extra: str) -> dict[str, str]:
    return {"HF_HOME": str(home), "HF_HUB_DISABLE_TELEMETRY": "1", **extra}


def test_a_hub_id_reads_from_the_cache_offline(tmp_path, tfcost):
    hub_cache(tmp_path / "hub", "Qwen/Qwen3-8B", {"config.json": (CONFIGS / "qwen3-8b.json").read_text()})
    run = tfcost("estimate", "Qwen/Qwen3-8B", "--format", "json", env=env_for(tmp_path, HF_HUB_OFFLINE="1"))
    assert run.code == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["params"]["total"] == QWEN3_8B and result["model"] == "Qwen3-8B"
    assert f"Qwen/Qwen3-8B @ {COMMIT[:12]}" in result["source"]
    # HF_HUB_CACHE names the hub folder itself.
    moved = tmp_path / "elsewhere"
    (tmp_path / "hub").rename(moved)
    env = {"HF_HUB_CACHE": str(moved), "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "empty")}
    assert tfcost("serve", "Qwen/Qwen3-8B", env=env).code == 0


# MPT: a model_type tfcost has no reader for (GPT-J, this test's model until issue 38 gave it a reader, now reads)
MPT = {"model_type": "mpt", "vocab_size": 1000, "d_model": 64, "n_layers": 2, "n_heads": 4, "max_seq_len": 8192}


@pytest.mark.parametrize("command", ["estimate", "train", "serve"])
def test_a_hub_id_tfcost_has_no_reader_for_goes_to_the_transformers_engine(tmp_path, tfcost, command):
    """`auto` sends a Hub model whose model_type tfcost does not read to transformers, as it does a local file."""
    pytest.importorskip("transformers", reason="the transformers engine needs tfcost[hf]")
    hub_cache(tmp_path / "hub", "mosaicml/tiny-mpt", {"config.json": json.dumps(MPT)})
    run = tfcost(command, "mosaicml/tiny-mpt", "--format", "json", env=env_for(tmp_path, HF_HUB_OFFLINE="1"))
    assert run.code == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["engine"] == "transformers" and result["model"] == "tiny-mpt"
    assert f"mosaicml/tiny-mpt @ {COMMIT[:12]}" in result["source"]


def test_check_builds_a_hub_id_from_its_own_config(tmp_path, tfcost):
    """`tfcost check owner/name` gives transformers the config.json the Hub holds (not one rebuilt from tfcost's
    shape, which exists only for a few families): Qwen3 agrees on every quantity."""
    pytest.importorskip("transformers", reason="tfcost check needs tfcost[hf]")
    hub_cache(tmp_path / "hub", "Qwen/Qwen3-8B", {"config.json": (CONFIGS / "qwen3-8b.json").read_text()})
    run = tfcost("check", "Qwen/Qwen3-8B", "--seq", "16", "--format", "json", env=env_for(tmp_path, HF_HUB_OFFLINE="1"))
    assert run.code == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["agree"] and result["rows"][0]["transformers"] == QWEN3_8B


def test_offline_and_not_cached_is_one_line(tmp_path, tfcost):
    run = tfcost("estimate", "Qwen/Qwen3-8B", env=env_for(tmp_path, HF_HUB_OFFLINE="1"))
    assert run.code == 1 and run.stdout == "" and run.stderr.count("\n") == 1
    assert "offline (HF_HUB_OFFLINE=1 is set)" in run.stderr
    assert f"config.json is not in the Hugging Face cache ({tmp_path / 'hub'}: it holds nothing of this model)" in (
        run.stderr
    )
    assert "the preset 'qwen3-8b' is the same model" in run.stderr and "--config PATH" in run.stderr


def closed_port() -> int:
    """A loopback port nothing listens on: a connection to it is refused at once, as with no network."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("command", ["estimate", "serve", "check"])
def test_an_unreachable_hub_is_one_attempt_and_one_line(tmp_path, tfcost, command):
    """No network: one connection attempt, no 'Retrying in 8s' lines (huggingface_hub retries five times with
    backoff on its own), then one line: the cache state, the preset of the same model, --config, HF_HUB_OFFLINE."""
    endpoint = f"http://127.0.0.1:{closed_port()}"
    hub_cache(tmp_path / "hub", "Qwen/Qwen3-8B", {"README.md": "other files only"})
    run = tfcost(command, "Qwen/Qwen3-8B", env=env_for(tmp_path, HF_ENDPOINT=endpoint))
    assert run.code == 1 and run.stdout == "" and run.stderr.count("\n") == 1, run.stderr
    assert "Retry" not in run.stderr and "thrown while requesting" not in run.stderr
    assert f"the Hub ({endpoint}) cannot be reached" in run.stderr
    assert "it holds other files of this model" in run.stderr
    assert "the preset 'qwen3-8b' is the same model" in run.stderr
    assert "--config PATH" in run.stderr and "HF_HUB_OFFLINE=1" in run.stderr
    # A model with no preset of its own gets the same line without one.
    other = tfcost(command, "nobody/no-such-model", env=env_for(tmp_path, HF_ENDPOINT=endpoint))
    assert other.code == 1 and other.stderr.count("\n") == 1 and "preset" not in other.stderr


def test_a_hub_that_never_answers_is_given_up_after_one_short_wait(tmp_path, tfcost):
    """A server that accepts the connection and never answers: one request of hub.PROBE_SECONDS, not hf_hub_download's
    10 s timeout times six attempts (the run is not timed here: the output says it made one attempt)."""
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        run = tfcost("estimate", "Qwen/Qwen3-8B", env=env_for(tmp_path, HF_ENDPOINT=endpoint))
    assert run.code == 1 and run.stderr.count("\n") == 1 and "Retry" not in run.stderr, run.stderr
    assert "cannot be reached" in run.stderr and "the preset 'qwen3-8b'" in run.stderr


def test_a_hub_id_finds_the_preset_of_the_same_model():
    from tfcost.readers.presets import preset_for_hub_id

    # By the `Hugging Face owner/name` each preset's source names, or by the name itself.
    assert preset_for_hub_id("Qwen/Qwen3-8B") == "qwen3-8b"
    assert preset_for_hub_id("openai-community/gpt2") == "gpt2-small"
    assert preset_for_hub_id("google/gemma-3-12b-pt") == "gemma-3-12b"
    assert preset_for_hub_id("openai/gpt-oss-20b") == "gpt-oss-20b"
    assert preset_for_hub_id("Qwen/Qwen3-8B-Base") is None and preset_for_hub_id("nobody/model") is None


class FakeHub(BaseHTTPRequestHandler):
    """The Hub's resolve endpoint for three repositories: one public, one gated (401), and none else (404)."""

    files: ClassVar[dict[str, dict[str, str]]] = {}
    requests: ClassVar[list[str]] = []

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def answer(self, body: bool) -> None:
        self.requests.append(f"{self.command} {self.path}")
        parts = self.path.split("?")[0].strip("/").split("/")
        # /{org}/{name}/resolve/{revision}/{filename}
        repo_id, filename = "/".join(parts[:2]), "/".join(parts[4:])
        if repo_id == "meta-llama/Meta-Llama-3-8B" and "authorization" not in {k.lower() for k in self.headers}:
            return self.error(401, "GatedRepo", "Access to model meta-llama/Meta-Llama-3-8B is restricted.")
        if repo_id not in self.files:
            return self.error(401, "RepoNotFound", "Repository not found")
        if filename not in self.files[repo_id]:
            return self.error(404, "EntryNotFound", "Entry not found")
        data = self.files[repo_id][filename].encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", f'"{abs(hash(data))}"')
        self.send_header("X-Repo-Commit", COMMIT)
        self.end_headers()
        if body:
            self.wfile.write(data)

    def error(self, status: int, code: str, message: str) -> None:
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self) -> None:
        self.answer(body=False)

    def do_GET(self) -> None:
        self.answer(body=True)


@pytest.fixture
def tfcost():
    """huggingface_hub reads its HF_* variables once, when it is imported: each run needs a fresh interpreter."""
    return run_tfcost


@pytest.fixture
def fake_hub() -> Iterator[str]:
    """A loopback server (127.0.0.1 only) on a free port, stopped after the test or after 120 s, whichever first."""
    FakeHub.files = {
        "Qwen/Qwen3-8B": {
            "config.json": (CONFIGS / "qwen3-8b.json").read_text(),
            "model.safetensors.index.json": json.dumps({"metadata": {"total_size": 16_381_470_720}, "weight_map": {}}),
        },
        "meta-llama/Meta-Llama-3-8B": {"config.json": (CONFIGS / "llama-3-8b.json").read_text()},
    }
    FakeHub.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeHub)
    server.timeout = 5
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stopper = threading.Timer(CHILD_LIMIT_S, server.shutdown)
    stopper.daemon = True
    stopper.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        stopper.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_hub_id_downloads_only_its_config_and_index(tmp_path, tfcost, fake_hub):
    run = tfcost("estimate", "Qwen/Qwen3-8B", "-f", "json", env=env_for(tmp_path, HF_ENDPOINT=fake_hub))
    assert run.code == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["params"]["total"] == QWEN3_8B
    # The index's total size (bf16: 2 bytes x 8,190,735,360) and tfcost's figure for the weights as stored agree.
    assert result["checkpoint_bytes"] == result["checkpoint_bytes_estimate"] == 16_381_470_720
    assert "safetensors index holds 16,381,470,720 bytes" in run.stderr
    fetched = {request.split()[1].split("/resolve/")[1].split("/", 1)[1] for request in FakeHub.requests}
    assert fetched == {"config.json", "model.safetensors.index.json"}
    cached = list((tmp_path / "hub" / "models--Qwen--Qwen3-8B" / "snapshots").glob("*/config.json"))
    assert len(cached) == 1
    # Now cached: the same id works with the server gone (offline).
    assert tfcost("estimate", "Qwen/Qwen3-8B", env=env_for(tmp_path, HF_HUB_OFFLINE="1")).code == 0


def test_a_missing_repo_and_a_gated_one_are_one_line_each(tmp_path, tfcost, fake_hub):
    missing = tfcost("estimate", "nobody/no-such-model", env=env_for(tmp_path, HF_ENDPOINT=fake_hub))
    assert missing.code == 1 and missing.stderr.count("\n") == 1
    assert "no such model on the Hugging Face Hub" in missing.stderr
    gated = tfcost("estimate", "meta-llama/Meta-Llama-3-8B", env=env_for(tmp_path, HF_ENDPOINT=fake_hub))
    assert gated.code == 1 and gated.stderr.count("\n") == 1
    assert "is gated" in gated.stderr and "HF_TOKEN" in gated.stderr
    # With a token (HF_TOKEN, as huggingface_hub reads it) the server lets it through.
    allowed = tfcost(
        "estimate", "meta-llama/Meta-Llama-3-8B", "-f", "json", env=env_for(tmp_path, HF_ENDPOINT=fake_hub,
                                                                          HF_TOKEN="hf_test")
    )  # fmt: skip
    assert allowed.code == 0, allowed.stderr
    assert json.loads(allowed.stdout)["params"]["total"] == LLAMA_3_8B


def test_revision_applies_to_hub_ids_only(tmp_path, tfcost):
    run = tfcost("estimate", "gpt2-small", "--revision", "v1")
    assert run.code == 2 and "--revision applies to a Hugging Face Hub id" in run.stderr


def test_no_command_without_a_hub_id_imports_huggingface_hub():
    code = (
        "import sys\n"
        "from tfcost.cli.main import main\n"
        "for argv in (['estimate', 'gpt2-small'], ['estimate', 'tests/data/hf_configs/llama-3-8b.json'],"
        " ['import', 'mixtral-8x7b'], ['serve', 'llama-3-8b'], ['train', 'gpt2-small'], ['list']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as done:\n"
        "        assert done.code == 0, argv\n"
        "print('huggingface_hub' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=CHILD_LIMIT_S, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_revision_reaches_the_hub(tmp_path, tfcost, fake_hub):
    run = tfcost("import", "Qwen/Qwen3-8B", "--revision", "v1.0", env=env_for(tmp_path, HF_ENDPOINT=fake_hub))
    assert run.code == 0, run.stderr
    assert any("/resolve/v1.0/config.json" in request for request in FakeHub.requests)
    assert "qk_norm: true" in run.stdout
