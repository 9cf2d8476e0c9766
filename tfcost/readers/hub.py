"""Model configs by Hugging Face Hub id (`Qwen/Qwen3-8B`): read from the user's Hub cache, else fetched with a
bounded request of tfcost's own making.

The user's HF cache is looked in first (HF_HOME, HF_HUB_CACHE, as huggingface_hub reads them); otherwise only
config.json is downloaded, and model.safetensors.index.json where the repository has one (its total size is the
checkpoint's bytes, a cross-check of the count). HF_HUB_OFFLINE=1, HF_TOKEN and HF_ENDPOINT are honoured, as
huggingface_hub honours them; huggingface_hub builds the URLs and the headers, tfcost makes the request itself:

- one overall deadline for everything a command fetches (a silent or a trickling server ends within it);
- every body capped (the size the headers announce, then the bytes as they arrive), before anything is written;
- redirects bounded, http and https only, the token never sent to another host;
- the cache entry written by tfcost, in the Hub's layout (blobs/<etag>, snapshots/<commit>/<file>,
  refs/<revision>), with the etag and commit from the response accepted only as hex, so that no response header
  ever chooses a path; a cached ref is read only if it names a commit, and a cached file only if it lies in the
  cache;
- every failure one line, with any `user:password@` of HF_ENDPOINT redacted (docs/security.md).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from tfcost.errors import TfcostError, redact_credentials
from tfcost.readers.files import atomic_write

if TYPE_CHECKING:
    from tfcost.readers.safetensors import StoredFiles

# owner/name as the Hub spells repository ids: letters, digits, '-', '_', '.'; no '--' or '..' (huggingface_hub's
# validate_repo_id says the rest).
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")
CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
MAX_CONFIG_BYTES = 1 << 20  # as for a local config.json (readers.files.MAX_PRESET_BYTES): no config comes near it
DEADLINE_S = 30.0  # everything one command fetches from the Hub; TFCOST_HUB_TIMEOUT changes it
CONNECT_TIMEOUT_S = 3.0  # a host that does not accept the connection in this time is unreachable: one short try
MAX_REDIRECTS = 5
COMMIT = re.compile(r"^[0-9a-f]{40}$")
ETAG = re.compile(r"^[0-9a-fA-F]{8,128}$")  # git's sha1 or LFS's sha256 on the real Hub: hex, nothing else
REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # a branch or tag name written as refs/<name>


def looks_like_hub_id(reference: str) -> bool:
    """`owner/name`: one slash, no file extension that tfcost reads, no path syntax."""
    return (
        bool(HUB_ID.match(reference))
        and not reference.endswith((".yaml", ".yml", ".json"))
        and ".." not in reference
        and "--" not in reference
    )


def redact(text: str) -> str:
    """Text with the `user:password@` of every URL in it written as `***@`: HF_ENDPOINT may carry credentials."""
    return redact_credentials(text)


def hub_error(message: str) -> TfcostError:
    """The one error type every failure here becomes, its message redacted."""
    return TfcostError(redact(message))


class HubUnreachable(TfcostError):
    """The Hub cannot be reached (offline, or HF_HUB_OFFLINE=1) and the file is not cached: what happened, then
    what to do, to which the reader adds the preset of the same model, where there is one (with_preset)."""

    REMEDY = "give a local config.json with --config PATH, or fetch it once online (HF_HUB_OFFLINE=1 skips the wait)"

    def __init__(self, problem: str) -> None:
        self.problem = redact(problem)
        super().__init__(f"{self.problem}; {self.REMEDY}")

    def with_preset(self, preset: str) -> str:
        return f"{self.problem}; the preset '{preset}' is the same model and needs no network; or {self.REMEDY}"


def cache_state(repo_id: str, filename: str) -> str:
    """What the cache holds of this model, and where it is, for the offline line."""
    cache = hub_settings().HF_HUB_CACHE
    folder = Path(cache) / f"models--{repo_id.replace('/', '--')}"
    held = "it holds other files of this model" if folder.is_dir() else "it holds nothing of this model"
    return f"{filename} is not in the Hugging Face cache ({cache}: {held})"


def offline_error(repo_id: str, filename: str, at: str, why: str) -> HubUnreachable:
    return HubUnreachable(f"{repo_id}{at}: {why}, and {cache_state(repo_id, filename)}")


@dataclass
class HubConfig:
    """A config.json fetched for a Hub id: its content, the commit it came from, and the checkpoint's total
    bytes from its safetensors index, where it has one."""

    repo_id: str
    config: dict[str, Any]
    commit: str | None
    checkpoint_bytes: int | None

    def described(self, revision: str | None) -> str:
        """ "Hugging Face Hub owner/name @ commit", the commit it came from (or the revision asked for)."""
        at = f" @ {self.commit[:12]}" if self.commit else (f" @ {revision}" if revision else "")
        return f"Hugging Face Hub {self.repo_id}{at}"


@dataclass
class Deadline:
    """One deadline for every request a command makes: the seconds left, or a one-line error once none are."""

    seconds: float
    ends: float = field(init=False)

    def __post_init__(self) -> None:
        self.ends = time.monotonic() + self.seconds

    def left(self, endpoint: str) -> float:
        remaining = self.ends - time.monotonic()
        if remaining <= 0:
            raise hub_error(f"the Hugging Face Hub ({endpoint}) did not answer within {self.seconds:g} s")
        return remaining


def deadline_seconds() -> float:
    """DEADLINE_S, or TFCOST_HUB_TIMEOUT's seconds (0.1 to 600) where it is set."""
    text = os.environ.get("TFCOST_HUB_TIMEOUT")
    if text is None:
        return DEADLINE_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0.1 <= seconds <= 600:
        raise TfcostError("TFCOST_HUB_TIMEOUT: expected seconds from 0.1 to 600")
    return seconds


def quiet() -> None:
    """No progress bars on stderr (set before huggingface_hub reads its settings), no telemetry."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def hub_settings() -> Any:
    """huggingface_hub's constants (ENDPOINT, HF_HUB_CACHE, HF_HUB_OFFLINE), read from the environment as it reads
    them."""
    quiet()
    check_endpoint(os.environ.get("HF_ENDPOINT"))
    from huggingface_hub import constants

    return constants


def check_endpoint(endpoint: str | None) -> None:
    """HF_ENDPOINT, where it is set, as an http(s) URL with a host and a port in range, else one line: checked
    before huggingface_hub is imported, which parses it then and prints its own message on a bad one."""
    if endpoint is None:
        return
    shown = redact(endpoint)[:100]
    problem = None
    try:
        parts = urlsplit(endpoint)
        _ = parts.port  # a port out of range or not a number raises here
        if not endpoint.isascii() or not endpoint.isprintable() or any(c.isspace() for c in endpoint):
            problem = "it holds spaces or characters a URL cannot"
        elif parts.scheme not in ("http", "https"):
            problem = "it is not http:// or https://"
        elif not parts.hostname:
            problem = "it names no host"
    except ValueError as error:
        problem = str(error).split(" as ")[0]
    if problem is not None:
        raise TfcostError(f"HF_ENDPOINT {shown!r} is not a Hub URL: {problem}")


# The cache ------------------------------------------------------------------------------------------------------


def repo_folder(repo_id: str) -> Path:
    """models--owner--name in the Hub cache; the id is checked first, so that it cannot name another folder."""
    if not looks_like_hub_id(repo_id):
        raise hub_error(f"'{repo_id}' is not a Hugging Face Hub id (owner/name)")
    return Path(hub_settings().HF_HUB_CACHE) / f"models--{repo_id.replace('/', '--')}"


def inside(path: Path, folder: Path) -> bool:
    """Whether `path`, every link followed, lies in `folder`."""
    try:
        path.resolve().relative_to(folder.resolve())
    except (OSError, ValueError, RuntimeError):  # a loop of links, or outside
        return False
    return True


def cached_commit(folder: Path, revision: str | None) -> str | None:
    """The commit a revision names in the cache: itself if it is one, else what refs/<revision> holds, if that is a
    commit (a ref holding a path is not followed)."""
    wanted = revision or "main"
    if COMMIT.match(wanted):
        return wanted
    if not REF.match(wanted):
        return None
    ref = folder / "refs" / wanted
    try:
        if not ref.is_file() or ref.stat().st_size > 256:
            return None
        text = ref.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    return text if COMMIT.match(text) else None


def cached_file(repo_id: str, filename: str, revision: str | None) -> tuple[Path, str] | None:
    """(path, commit) of a file in the user's Hub cache, where it is there and lies in the cache."""
    folder = repo_folder(repo_id)
    commit = cached_commit(folder, revision)
    if commit is None:
        return None
    path = folder / "snapshots" / commit / filename
    try:
        if not path.is_file():
            return None
    except OSError:
        return None
    return (path, commit) if inside(path, folder) else None


def blob_name(etag: str | None, data: bytes) -> str:
    """The blob's file name: the response's etag where it is hex (the Hub's git sha1 or sha256), else the sha256 of
    the content; nothing else a server sends can name a file."""
    tag = (etag or "").removeprefix("W/").strip('"')
    return tag if ETAG.match(tag) else hashlib.sha256(data).hexdigest()


def write_cache_entry(
    repo_id: str, filename: str, revision: str | None, commit: str, etag: str | None, data: bytes
) -> Path:
    """The file written in the Hub cache's layout, as huggingface_hub would read it: blobs/<etag>,
    snapshots/<commit>/<filename> linking to it, and refs/<revision> naming the commit (for a branch or tag)."""
    folder = repo_folder(repo_id)
    if not COMMIT.match(commit) or filename not in (CONFIG, INDEX):
        raise hub_error(f"{repo_id}: refusing to cache {filename} at '{commit}'")
    blobs, snapshot, refs = folder / "blobs", folder / "snapshots" / commit, folder / "refs"
    for made in (blobs, snapshot, refs):
        made.mkdir(parents=True, exist_ok=True)
    root = Path(hub_settings().HF_HUB_CACHE)
    if not all(inside(made, root) and inside(made, folder) for made in (blobs, snapshot, refs)):
        raise hub_error(f"{repo_id}: the cache folder {folder} leads outside {root}")
    blob = blobs / blob_name(etag, data)
    atomic_write(blob, data)
    link = snapshot / filename
    temporary = snapshot / f".tfcost-{os.getpid()}-{filename}"
    temporary.unlink(missing_ok=True)
    try:
        temporary.symlink_to(Path("..") / ".." / "blobs" / blob.name)
        os.replace(temporary, link)
    except OSError:  # no symbolic links here (some Windows set-ups): a copy, as huggingface_hub then makes
        temporary.unlink(missing_ok=True)
        atomic_write(link, data)
    name = revision or "main"
    if name != commit and REF.match(name):
        atomic_write(refs / name, commit.encode())
    return link


# The request ------------------------------------------------------------------------------------------------------


@dataclass
class Response:
    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes
    url: str


def connection(url: str, timeout: float) -> Any:
    """An HTTP(S) connection to the URL's host; nothing but http and https."""
    import http.client

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise hub_error(f"the Hugging Face Hub endpoint '{parts.scheme}://{parts.hostname or ''}' is not http(s)")
    if parts.scheme == "https":
        return http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)


def hub_headers() -> dict[str, str]:
    """A user agent and the user's Hub token (HF_TOKEN, or the one `hf auth login` saved), as huggingface_hub finds
    it. Not huggingface_hub's build_hf_headers: since 1.x it also fetches a registry of AI agents from the endpoint,
    a request outside the deadline that writes a file."""
    from huggingface_hub import __version__ as hub_version
    from huggingface_hub import get_token

    from tfcost import __version__

    sent = {"user-agent": f"tfcost/{__version__}; hf_hub/{hub_version}"}
    token = None if getattr(hub_settings(), "HF_HUB_DISABLE_IMPLICIT_TOKEN", False) else get_token()
    if token:
        sent["authorization"] = f"Bearer {token}"
    return sent


def credentials_header(url: str) -> dict[str, str]:
    """Basic authentication from a `user:password@` in the URL (a mirror behind a password), never printed."""
    parts = urlsplit(url)
    if parts.username is None:
        return {}
    pair = f"{parts.username}:{parts.password or ''}".encode()
    return {"authorization": "Basic " + base64.b64encode(pair).decode("ascii")}


def read_capped(answer: Any, limit: int, deadline: Deadline, sock: Any, endpoint: str, what: str) -> bytes:
    """The body, refused as soon as it passes `limit` bytes or the deadline (each read waits no longer than the
    time left, so a server that trickles a byte at a time is cut off too)."""
    declared = answer.getheader("Content-Length")
    if declared is not None and declared.strip().isascii() and declared.strip().isdigit() and int(declared) > limit:
        raise hub_error(
            f"{what}: the Hub announces {int(declared):,} bytes, more than the {limit:,} bytes tfcost reads for it"
        )
    chunks, size = [], 0
    while True:
        if sock is not None:
            sock.settimeout(deadline.left(endpoint))
        chunk = answer.read1(min(65536, limit + 1 - size)) if size <= limit else b""
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise hub_error(f"{what}: the Hub sent more than the {limit:,} bytes tfcost reads for it")
        deadline.left(endpoint)
    return b"".join(chunks)


def bounded_get(url: str, limit: int, deadline: Deadline, what: str, headers: dict[str, str] | None = None) -> Response:
    """GET `url` with the Hub's headers (user agent, HF_TOKEN) and any `headers` (a Range), following at most
    MAX_REDIRECTS redirects, the body capped at `limit` bytes, all within `deadline`. Every failure is one line."""
    import ssl
    from http.client import HTTPException

    endpoint = redact(hub_settings().ENDPOINT)
    origin = urlsplit(url).netloc
    sent = {**credentials_header(url), **hub_headers(), **(headers or {})}  # a token wins
    for _ in range(MAX_REDIRECTS + 1):
        parts = urlsplit(url)
        if parts.netloc != origin:  # the token and any password are for the endpoint only
            sent = {k: v for k, v in sent.items() if k.lower() != "authorization"}
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        client = connection(url, min(CONNECT_TIMEOUT_S, deadline.left(endpoint)))
        try:
            client.request("GET", target or "/", headers=sent)
            sock = client.sock  # the response keeps it after the connection lets go of it (Connection: close)
            waited = min(CONNECT_TIMEOUT_S, deadline.left(endpoint))
            sock.settimeout(waited)
            try:
                answer = client.getresponse()
            except TimeoutError:  # accepted and silent: a broken proxy or no route past it, not a slow body
                if waited < CONNECT_TIMEOUT_S:
                    raise
                raise HubUnreachable(f"the Hub ({endpoint}) cannot be reached (no answer in {waited:g} s)") from None
            found = {name.lower(): value for name, value in answer.getheaders()}
            if answer.status in (301, 302, 303, 307, 308) and "location" in found:
                url = urljoin(url, found["location"])
                continue
            body = read_capped(answer, limit, deadline, sock, endpoint, what) if answer.status < 300 else b""
            return Response(answer.status, found, body, url)
        except TfcostError:
            raise
        except TimeoutError:
            raise hub_error(f"the Hugging Face Hub ({endpoint}) did not answer within {deadline.seconds:g} s") from None
        except ssl.SSLError as error:
            raise hub_error(f"the Hugging Face Hub ({endpoint}): TLS failed: {error.reason or 'handshake'}") from None
        except (OSError, HTTPException) as error:
            raise unreachable(endpoint, error) from None
        finally:
            client.close()
    raise hub_error(f"{what}: the Hub ({endpoint}) redirected more than {MAX_REDIRECTS} times")


def unreachable(endpoint: str, error: BaseException) -> HubUnreachable:
    """A connection that failed (refused, no route, no name, reset, not accepted in CONNECT_TIMEOUT_S): the Hub
    cannot be reached; fetch_file adds what the cache holds."""
    reason = getattr(error, "strerror", None) or type(error).__name__
    return HubUnreachable(f"the Hub ({endpoint}) cannot be reached ({reason})")


def refuse_status(response: Response, repo_id: str, filename: str, revision: str | None) -> None:
    """One line for an answer other than 200 (or 206), from the Hub's X-Error-Code where it sends one (never its
    text)."""
    status, code = response.status, response.headers.get("x-error-code", "")
    at = f" at revision '{revision}'" if revision else ""
    if status in (200, 206):  # 206: the part a Range header asked for
        return
    if code == "GatedRepo" or (status == 403 and "gated" in response.headers.get("x-error-message", "").lower()):
        raise hub_error(
            f"{repo_id} is gated on the Hugging Face Hub: accept its terms on the model page and set HF_TOKEN "
            "to a token of that account"
        )
    if code == "RepoNotFound" or (status == 401 and not code):
        raise hub_error(
            f"{repo_id}: no such model on the Hugging Face Hub (or it is private: set HF_TOKEN), and no such file"
        )
    if code == "RevisionNotFound":
        raise hub_error(f"{repo_id}: no revision '{revision}' on the Hugging Face Hub")
    if code == "EntryNotFound" or status == 404:
        raise hub_error(f"{repo_id}{at}: the repository has no {filename}")
    if status in (301, 302, 303, 307, 308):
        raise hub_error(f"{repo_id}: the Hugging Face Hub redirected {filename} without saying where")
    raise hub_error(f"{repo_id}: the Hugging Face Hub answered HTTP {status} for {filename}")


# Fetching ---------------------------------------------------------------------------------------------------------


@dataclass
class Fetched:
    data: bytes
    commit: str | None


def fetch_file(repo_id: str, filename: str, revision: str | None, deadline: Deadline) -> Fetched:
    """A small file of a Hub repository: the cached copy, else a bounded download written to the cache."""
    settings = hub_settings()  # first: it checks HF_ENDPOINT, which importing huggingface_hub parses
    from huggingface_hub import hf_hub_url

    found = cached_file(repo_id, filename, revision)
    if found is not None:
        path, commit = found
        return Fetched(read_cached(path, repo_id, filename), commit)
    at = f" at revision '{revision}'" if revision else ""
    if settings.HF_HUB_OFFLINE:
        raise offline_error(repo_id, filename, at, "offline (HF_HUB_OFFLINE=1 is set)")
    url = hf_hub_url(repo_id, filename, revision=revision, endpoint=settings.ENDPOINT)
    try:
        response = bounded_get(url, MAX_CONFIG_BYTES, deadline, f"{repo_id}{at}: {filename}")
    except HubUnreachable as error:
        raise offline_error(repo_id, filename, at, error.problem) from None
    refuse_status(response, repo_id, filename, revision)
    commit = response.headers.get("x-repo-commit", "").strip()
    if not COMMIT.match(commit):
        commit = revision if revision and COMMIT.match(revision) else ""
    if commit:
        etag = response.headers.get("x-linked-etag") or response.headers.get("etag")
        try:
            write_cache_entry(repo_id, filename, revision, commit, etag, response.body)
        except OSError as error:  # a cache that cannot be written: the file is still read, not kept
            import sys

            sys.stderr.write(f"tfcost: note: cannot write the Hugging Face cache: {error.strerror}\n")
    return Fetched(response.body, commit or None)


def read_cached(path: Path, repo_id: str, filename: str) -> bytes:
    from tfcost.readers.files import read_text

    try:
        return read_text(path, f"a {filename}").encode()
    except TfcostError as error:
        raise hub_error(f"{repo_id} {filename}: {str(error).split(': ', 1)[-1]}") from None


def read_json(data: bytes, repo_id: str, filename: str) -> dict[str, Any]:
    from tfcost.readers.files import parse_json_mapping

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise hub_error(f"{repo_id} {filename}: not UTF-8 text (byte {error.start})") from None
    return parse_json_mapping(text, f"{repo_id} {filename}")


def checkpoint_bytes(repo_id: str, revision: str | None, deadline: Deadline) -> int | None:
    """metadata.total_size of model.safetensors.index.json: every tensor's bytes, as the checkpoint stores them."""
    try:  # absent, too large, offline and not cached, or any other failure: the cross-check is skipped
        index = read_json(fetch_file(repo_id, INDEX, revision, deadline).data, repo_id, INDEX)
    except TfcostError:
        return None
    metadata = index.get("metadata")
    size = metadata.get("total_size") if isinstance(metadata, dict) else None
    return size if isinstance(size, int) and not isinstance(size, bool) and 0 < size < 1 << 60 else None


def fetch_config(repo_id: str, revision: str | None = None) -> HubConfig:
    """config.json of a Hub model, and its checkpoint size where the repository has a safetensors index."""
    if revision is not None and (not revision.isprintable() or len(revision) > 256):
        raise hub_error("--revision: expected a branch, tag or commit name")
    deadline = Deadline(deadline_seconds())
    fetched = fetch_file(repo_id, CONFIG, revision, deadline)
    config = read_json(fetched.data, repo_id, CONFIG)
    return HubConfig(repo_id, config, fetched.commit, checkpoint_bytes(repo_id, revision, deadline))


# Stored bytes by HTTP range requests (as hf-mem reads them): the first 8 bytes of each safetensors file, then its
# JSON header, never its tensors, through the same bounded requests as a config (one deadline for the command).
def range_get(url: str, start: int, stop: int, deadline: Deadline, repo_id: str, name: str) -> tuple[bytes, int | None]:
    """Bytes start..stop-1 of a Hub file by one HTTP Range request, and the file's whole length where the answer's
    Content-Range says it (`bytes 0-7/16384`, RFC 9110 section 14.4); a server that ignores the range and announces
    or sends more is refused (bounded_get), as is one that sends less."""
    response = bounded_get(url, stop - start, deadline, f"{repo_id}: {name}", {"Range": f"bytes={start}-{stop - 1}"})
    refuse_status(response, repo_id, name, None)
    if len(response.body) != stop - start:
        raise hub_error(f"{repo_id}: {name} ends inside its safetensors header")
    total = response.headers.get("content-range", "").rpartition("/")[2].strip()
    return response.body, int(total) if total.isascii() and total.isdigit() and len(total) < 20 else None


def fetch_stored(repo_id: str, revision: str | None = None) -> StoredFiles:
    """The tensors of a Hub model's safetensors files, from their headers alone: the shards its index names (or
    model.safetensors), two range requests each."""
    settings = hub_settings()  # first: it checks HF_ENDPOINT, which importing huggingface_hub parses
    from huggingface_hub import hf_hub_url

    from tfcost.readers.safetensors import StoredFiles, checked_shard_names, header_length, parse_header

    if settings.HF_HUB_OFFLINE:
        raise hub_error(f"{repo_id}: HF_HUB_OFFLINE is set; the files' headers are read from the Hub")
    deadline = Deadline(deadline_seconds())
    names = ["model.safetensors"]
    try:
        index = read_json(fetch_file(repo_id, INDEX, revision, deadline).data, repo_id, INDEX)
    except TfcostError as error:
        if "has no" not in str(error):  # a repository without an index holds one model.safetensors
            raise
    else:
        try:  # the same names a local folder's index may give: plain .safetensors files beside it
            names = checked_shard_names(index.get("weight_map"), f"{repo_id} {INDEX}")
        except TfcostError as error:
            raise hub_error(str(error)) from None
    tensors = []
    for name in names:
        url = hf_hub_url(repo_id, name, revision=revision, endpoint=settings.ENDPOINT)
        first, size = range_get(url, 0, 8, deadline, repo_id, name)
        length = header_length(first, f"{repo_id} {name}", size)
        # Where the server said the file's length, the tensors must lie inside it, as in a local file.
        data_bytes = None if size is None else size - 8 - length
        tensors += parse_header(range_get(url, 8, 8 + length, deadline, repo_id, name)[0], name, data_bytes)
    return StoredFiles(tensors, names)
