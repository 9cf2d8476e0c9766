"""A hostile server behind HF_ENDPOINT (a loopback server on 127.0.0.1) and hostile Hub caches: nothing is written
outside the cache, no body is read past its cap, no request outlives the deadline, no redirect loop spins, no
credential is printed, and every failure is one line (docs/security.md)."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from conftest import CHILD_LIMIT_S, run_tfcost

pytest.importorskip("huggingface_hub", reason="hub ids need huggingface_hub, a core dependency")

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
QWEN3 = (CONFIGS / "qwen3-8b.json").read_text()
QWEN3_8B = 8_190_735_360  # Qwen3-8B's published total (model card: 8.2B), as tests/test_hub.py
COMMIT = "0123456789abcdef0123456789abcdef01234567"


class Hostile(BaseHTTPRequestHandler):
    """Answers every GET with what `behave` does; records each request's path and headers."""

    behave: ClassVar[Callable[[Hostile], None]]
    seen: ClassVar[list[tuple[str, dict[str, str]]]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        try:
            type(self).behave(self)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up, as it should
            pass

    def send(self, status: int, body: bytes, **headers: str) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False


@pytest.fixture
def hub() -> Iterator[Callable[[Callable[[Hostile], None]], str]]:
    """Start the loopback server with a behaviour; returns its URL. Stopped after the test."""
    servers: list[Server] = []

    def start(behave: Callable[[Hostile], None]) -> str:
        Hostile.behave = staticmethod(behave)  # type: ignore[assignment]
        Hostile.seen = []
        server = Server(("127.0.0.1", 0), Hostile)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def env_for(home: Path, endpoint: str, **extra: str) -> dict[str, str]:
    return {"HF_HOME": str(home / "hf"), "HOME": str(home / "home"), "HF_ENDPOINT": endpoint, **extra}


def files_under(root: Path) -> set[Path]:
    return {path for path in root.rglob("*") if path.is_file() or path.is_symlink()}


def one_line_failure(run: object) -> str:
    assert run.code == 1, run.stderr  # type: ignore[attr-defined]
    assert run.stdout == "" and run.stderr.count("\n") == 1, run.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr  # type: ignore[attr-defined]
    return run.stderr  # type: ignore[attr-defined]


def test_response_headers_never_choose_a_path(tmp_path, hub):
    """An ETag and a commit naming paths outside the cache: the config is read, and every file written lies in the
    cache, named by hex only (the blob by the content's sha256, as the etag is no hex)."""

    def answer(handler: Hostile) -> None:
        if handler.path.endswith("/config.json"):
            handler.send(200, QWEN3.encode(), ETag='"../../../../../escaped"', X_Repo_Commit="../../../escaped")
        else:
            handler.send(404, b"", X_Error_Code="EntryNotFound")

    url = hub(answer)
    run = run_tfcost("estimate", "Qwen/Qwen3-8B", "-f", "json", env=env_for(tmp_path, url))
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)["params"]["total"] == QWEN3_8B
    assert not any("escaped" in str(path) for path in tmp_path.rglob("*"))
    # No valid commit: nothing is cached at all (a snapshot needs a commit to be named by).
    assert files_under(tmp_path) == set()


def test_a_fetched_config_is_cached_in_the_hub_layout(tmp_path, hub):
    etag = "a" * 40

    def answer(handler: Hostile) -> None:
        if handler.path.endswith("/config.json"):
            handler.send(200, QWEN3.encode(), ETag=f'"{etag}"', X_Repo_Commit=COMMIT)
        else:
            handler.send(404, b"", X_Error_Code="EntryNotFound")

    url = hub(answer)
    assert run_tfcost("estimate", "Qwen/Qwen3-8B", env=env_for(tmp_path, url)).code == 0
    repo = tmp_path / "hf" / "hub" / "models--Qwen--Qwen3-8B"
    assert (repo / "refs" / "main").read_text() == COMMIT
    link = repo / "snapshots" / COMMIT / "config.json"
    assert link.is_symlink() and link.resolve() == (repo / "blobs" / etag).resolve()
    assert (repo / "blobs" / etag).read_text() == QWEN3
    assert {p.relative_to(tmp_path) for p in files_under(tmp_path)} == {
        p.relative_to(tmp_path) for p in (repo / "refs" / "main", link, repo / "blobs" / etag)
    }
    # huggingface_hub itself reads the entry tfcost wrote.
    code = (
        "from huggingface_hub import try_to_load_from_cache as t; import sys;print(t('Qwen/Qwen3-8B', 'config.json'))"
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "HF_HOME": str(tmp_path / "hf")},
                          capture_output=True, text=True, timeout=CHILD_LIMIT_S, check=True)  # fmt: skip
    assert Path(done.stdout.strip()).resolve() == (repo / "blobs" / etag).resolve()


@pytest.mark.parametrize("declared", [True, False])
def test_a_body_past_the_cap_is_refused_while_reading(tmp_path, hub, declared):
    """2 MiB for a config (the cap is 1 MiB): refused from the announced size, or while reading an unannounced one,
    and nothing written."""
    body = b'{"a": "' + b"x" * (2 << 20) + b'"}'

    def answer(handler: Hostile) -> None:
        handler.send_response(200)
        handler.send_header("X-Repo-Commit", COMMIT)
        if declared:
            handler.send_header("Content-Length", str(len(body)))
        else:
            handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(body)

    url = hub(answer)
    message = one_line_failure(run_tfcost("estimate", "Qwen/Qwen3-8B", env=env_for(tmp_path, url)))
    assert "1,048,576 bytes" in message
    assert files_under(tmp_path) == set()


@pytest.mark.parametrize("kind", ["silent", "trickle"])
def test_a_silent_or_trickling_server_ends_within_the_deadline(tmp_path, hub, kind):
    """A server that never answers, and one that sends a byte every 50 ms forever (14 hours for the cap): both end
    at the one deadline (TFCOST_HUB_TIMEOUT=1), in one line. A client without the deadline would wait out the
    server (30 s) and fail on something else: the message, not a clock, tells."""

    def answer(handler: Hostile) -> None:
        if kind == "silent":
            time.sleep(30)
            return
        handler.send_response(200)
        handler.send_header("X-Repo-Commit", COMMIT)
        handler.end_headers()
        for _ in range(600):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.05)

    url = hub(answer)
    message = one_line_failure(
        run_tfcost("estimate", "Qwen/Qwen3-8B", env=env_for(tmp_path, url, TFCOST_HUB_TIMEOUT="1"))
    )
    assert "did not answer within 1 s" in message
    assert files_under(tmp_path) == set()


def test_a_redirect_loop_ends(tmp_path, hub):
    def answer(handler: Hostile) -> None:
        handler.send(302, b"", Location=handler.path + "x")

    url = hub(answer)
    message = one_line_failure(run_tfcost("estimate", "Qwen/Qwen3-8B", env=env_for(tmp_path, url)))
    assert "redirected more than 5 times" in message
    assert len(Hostile.seen) == 6


def test_the_token_is_not_sent_to_another_host(tmp_path, hub):
    """A redirect from 127.0.0.1 to localhost (another host by name): the token goes to the endpoint only."""

    def answer(handler: Hostile) -> None:
        if handler.headers["Host"].startswith("127.0.0.1"):
            port = handler.server.server_address[1]
            handler.send(302, b"", Location=f"http://localhost:{port}{handler.path}")
        elif handler.path.endswith("/config.json"):
            handler.send(200, QWEN3.encode(), X_Repo_Commit=COMMIT)
        else:
            handler.send(404, b"", X_Error_Code="EntryNotFound")

    url = hub(answer)
    run = run_tfcost("estimate", "Qwen/Qwen3-8B", env=env_for(tmp_path, url, HF_TOKEN="hf_secret_token"))
    if run.code != 0 and "cannot be reached" in run.stderr:
        pytest.skip("localhost does not resolve to 127.0.0.1 here")
    assert run.code == 0, run.stderr
    first, second = Hostile.seen[0][1], Hostile.seen[1][1]
    assert first["authorization"] == "Bearer hf_secret_token" and "authorization" not in second


def test_http_500_is_not_offline(tmp_path, hub):
    url = hub(lambda handler: handler.send(500, b"boom"))
    message = one_line_failure(run_tfcost("estimate", "Qwen/Qwen3-8B", env=env_for(tmp_path, url)))
    assert "answered HTTP 500" in message and "offline" not in message and "boom" not in message


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("case", ["500", "refused", "loop"])
def test_credentials_in_hf_endpoint_are_never_printed(tmp_path, hub, case):
    answers: dict[str, Callable[[Hostile], None]] = {
        "500": lambda handler: handler.send(500, b""),
        "loop": lambda handler: handler.send(302, b"", Location=handler.path + "x"),
    }
    if case == "refused":
        url = f"http://127.0.0.1:{free_port()}"
    else:
        url = hub(answers[case])
    with_password = url.replace("http://", "http://alice:s3cr3t-pw@")
    message = one_line_failure(run_tfcost("estimate", "Qwen/Qwen3-8B", env=env_for(tmp_path, with_password)))
    assert "s3cr3t-pw" not in message and "alice" not in message
    if case == "refused":
        assert "cannot be reached" in message and "***@127.0.0.1" in message
    if case == "500":  # the password did go to the server, as Basic authentication
        assert Hostile.seen[0][1]["authorization"].startswith("Basic ")


def test_a_ref_pointing_outside_the_cache_is_not_followed(tmp_path):
    """refs/main holding a path: the cache is not read through it; offline, the id is simply not cached."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.json").write_text(QWEN3)
    repo = tmp_path / "hf" / "hub" / "models--Qwen--Qwen3-8B"
    (repo / "refs").mkdir(parents=True)
    (repo / "snapshots").mkdir()
    (repo / "refs" / "main").write_text("../../../../outside")
    run = run_tfcost("estimate", "Qwen/Qwen3-8B", env=env_for(tmp_path, "http://127.0.0.1:9", HF_HUB_OFFLINE="1"))
    assert "not in the Hugging Face cache" in one_line_failure(run)


def test_a_snapshot_linking_outside_the_cache_is_not_read(tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text(QWEN3)
    repo = tmp_path / "hf" / "hub" / "models--Qwen--Qwen3-8B"
    (repo / "snapshots" / COMMIT).mkdir(parents=True)
    (repo / "snapshots" / COMMIT / "config.json").symlink_to(outside)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    run = run_tfcost("estimate", "Qwen/Qwen3-8B", env=env_for(tmp_path, "http://127.0.0.1:9", HF_HUB_OFFLINE="1"))
    assert "not in the Hugging Face cache" in one_line_failure(run)


def test_revision_and_repo_id_cannot_name_paths(tmp_path, hub):
    """A revision with a slash or dots is sent quoted and never written as a ref; a bad timeout setting is one
    line."""

    def answer(handler: Hostile) -> None:
        if handler.path.endswith("/config.json"):
            handler.send(200, QWEN3.encode(), X_Repo_Commit=COMMIT)
        else:
            handler.send(404, b"", X_Error_Code="EntryNotFound")

    url = hub(answer)
    run = run_tfcost("estimate", "Qwen/Qwen3-8B", "--revision", "../../../x", env=env_for(tmp_path, url))
    assert run.code == 0, run.stderr
    assert "/resolve/..%2F..%2F..%2Fx/config.json" in Hostile.seen[0][0]
    refs = tmp_path / "hf" / "hub" / "models--Qwen--Qwen3-8B" / "refs"
    assert list(refs.iterdir()) == []
    bad = run_tfcost("estimate", "Qwen/Qwen3-8B", env=env_for(tmp_path, url, TFCOST_HUB_TIMEOUT="nan"))
    assert "TFCOST_HUB_TIMEOUT" in one_line_failure(bad)


def test_redact_hides_every_url_password():
    from tfcost.readers.hub import redact

    assert redact("at https://u:p@host/x and http://token@h2") == "at https://***@host/x and http://***@h2"
    assert redact("no credentials: https://host/a@b") == "no credentials: https://host/a@b"


@pytest.mark.parametrize("total", ["1" + "0" * 400, "-5", "1e400", '"12"', "true"])
def test_an_overlong_or_odd_checkpoint_size_is_ignored(tmp_path, hub, total):
    """The index's total_size is a cross-check only: one past 2^60 bytes (or not a positive integer) is dropped,
    and the command answers as without an index."""

    def answer(handler: Hostile) -> None:
        if handler.path.endswith("/config.json"):
            handler.send(200, QWEN3.encode(), X_Repo_Commit=COMMIT)
        else:
            body = ('{"metadata": {"total_size": ' + total + '}, "weight_map": {}}').encode()
            handler.send(200, body, X_Repo_Commit=COMMIT)

    url = hub(answer)
    run = run_tfcost("estimate", "Qwen/Qwen3-8B", "-f", "json", env=env_for(tmp_path, url))
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)["checkpoint_bytes"] is None and "safetensors index" not in run.stderr


@pytest.mark.parametrize(
    "shard",
    [
        "../../other/repo/model.safetensors",
        "sub/model.safetensors",
        "..\\up.safetensors",
        "model.bin",
        ".hidden.safetensors",
    ],
)
def test_remote_shard_names_are_checked_as_local_ones_are(tmp_path, hub, shard):
    """A remote index naming a shard outside the repository (or no .safetensors file) is refused as a local
    folder's index is, and no request is made for that name, so the token never goes with it."""

    def answer(handler: Hostile) -> None:
        if handler.path.endswith("/model.safetensors.index.json"):
            body = json.dumps({"metadata": {}, "weight_map": {"a.weight": shard}}).encode()
            handler.send(200, body, ETag=f'"{"b" * 40}"', X_Repo_Commit=COMMIT)
        else:
            handler.send(404, b"", X_Error_Code="EntryNotFound")

    url = hub(answer)
    message = one_line_failure(run_tfcost("inspect", "acme/tiny", env=env_for(tmp_path, url, HF_TOKEN="hf_x")))
    assert "not a .safetensors file beside it" in message
    assert [path for path, _ in Hostile.seen if not path.endswith("/model.safetensors.index.json")] == []
    # The same index in a local folder gives the same refusal.
    folder = tmp_path / "local"
    folder.mkdir()
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"a.weight": shard}}))
    (folder / "config.json").write_text(QWEN3)
    assert "not a .safetensors file beside it" in one_line_failure(run_tfcost("inspect", str(folder)))


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("http://[::1", "Invalid IPv6 URL"),
        ("http://127.0.0.1:99999", "Port out of range"),
        ("http://alice:s3cr3t@127.0.0.1:0x50", "Port could not be cast to integer value"),
        ("http://hub example.com", "spaces or characters a URL cannot"),
        ("ftp://example.com", "not http:// or https://"),
        ("https://", "names no host"),
    ],
)
@pytest.mark.parametrize("command", ["inspect", "estimate"])
def test_a_malformed_endpoint_is_one_line(tmp_path, endpoint, expected, command):
    message = one_line_failure(run_tfcost(command, "acme/tiny", env=env_for(tmp_path, endpoint)))
    assert "HF_ENDPOINT" in message and expected in message and "s3cr3t" not in message
    assert "Error importing" not in message


def test_remote_tensor_bytes_are_tied_to_the_length_the_server_gives(tmp_path, hub):
    """A remote header claiming 4 KiB of tensor data in a file whose Content-Range says it holds 16 bytes past its
    header is refused, as the same file on disk is."""
    import struct

    raw = json.dumps({"t": {"dtype": "F32", "shape": [1024], "data_offsets": [0, 4096]}}).encode()
    whole = struct.pack("<Q", len(raw)) + raw + bytes(16)

    def answer(handler: Hostile) -> None:
        if handler.path.endswith("/model.safetensors"):
            start, stop = (int(x) for x in handler.headers["Range"].removeprefix("bytes=").split("-"))
            handler.send(206, whole[start : stop + 1], Content_Range=f"bytes {start}-{stop}/{len(whole)}",
                         ETag=f'"{"c" * 40}"', X_Repo_Commit=COMMIT)  # fmt: skip
        else:
            handler.send(404, b"", X_Error_Code="EntryNotFound")

    url = hub(answer)
    message = one_line_failure(run_tfcost("inspect", "acme/tiny", env=env_for(tmp_path, url)))
    assert "tensor 't': its bytes end past the end of the file" in message
    local = tmp_path / "model.safetensors"
    local.write_bytes(whole)
    assert "tensor 't': its bytes end past the end of the file" in one_line_failure(run_tfcost("inspect", str(local)))
