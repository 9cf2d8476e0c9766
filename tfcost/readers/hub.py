"""Model configs by Hugging Face Hub id (`Qwen/Qwen3-8B`), through huggingface_hub, imported here only.

The user's HF cache is looked in first (HF_HOME, HF_HUB_CACHE, as huggingface_hub reads them); otherwise only
config.json is downloaded, and model.safetensors.index.json where the repository has one (its total size is the
checkpoint's bytes, a cross-check of the count). HF_HUB_OFFLINE=1, HF_TOKEN and HF_ENDPOINT are honoured, as
huggingface_hub honours them. Every failure is one line: not found, gated, offline and not cached.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfcost.errors import TfcostError

if TYPE_CHECKING:
    from tfcost.readers.safetensors import StoredFiles

# owner/name as the Hub spells repository ids: letters, digits, '-', '_', '.'; no '--' or '..' (huggingface_hub's
# validate_repo_id says the rest).
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")
CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
MAX_CONFIG_BYTES = 1 << 20  # as for a local config.json: no config comes near it


def looks_like_hub_id(reference: str) -> bool:
    """`owner/name`: one slash, no file extension that tfcost reads, no path syntax."""
    return (
        bool(HUB_ID.match(reference))
        and not reference.endswith((".yaml", ".yml", ".json"))
        and ".." not in reference
        and "--" not in reference
    )


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


def quiet() -> None:
    """No progress bars on stderr for a file of a few KiB (set before huggingface_hub reads its settings)."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def cached_path(repo_id: str, filename: str, revision: str | None) -> str | None:
    quiet()
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, filename, revision=revision)
    return found if isinstance(found, str) else None


def download(repo_id: str, filename: str, revision: str | None) -> str:
    """The cached copy, else a download; one-line errors for every way it fails."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    found = cached_path(repo_id, filename, revision)
    if found is not None:
        return found
    at = f" at revision '{revision}'" if revision else ""
    try:
        return str(hf_hub_download(repo_id, filename, revision=revision))
    except GatedRepoError:
        raise TfcostError(
            f"{repo_id} is gated on the Hugging Face Hub: accept its terms on the model page and set HF_TOKEN "
            "to a token of that account"
        ) from None
    except RepositoryNotFoundError:
        raise TfcostError(
            f"{repo_id}: no such model on the Hugging Face Hub (or it is private: set HF_TOKEN), and no such file"
        ) from None
    except RevisionNotFoundError:
        raise TfcostError(f"{repo_id}: no revision '{revision}' on the Hugging Face Hub") from None
    except (LocalEntryNotFoundError, OfflineModeIsEnabled):  # before EntryNotFoundError, its base class
        raise TfcostError(
            f"{repo_id}{at}: {filename} is not in the Hugging Face cache and the Hub cannot be reached "
            "(offline: HF_HUB_OFFLINE=1, or no network); download it once online"
        ) from None
    except EntryNotFoundError:
        raise TfcostError(f"{repo_id}{at}: the repository has no {filename}") from None
    except HfHubHTTPError as error:
        status = error.response.status_code if error.response is not None else "?"
        raise TfcostError(f"{repo_id}: the Hugging Face Hub answered HTTP {status}") from None
    except OSError as error:  # a cache folder that cannot be written, a broken connection
        raise TfcostError(f"{repo_id}: cannot fetch {filename}: {error.strerror or type(error).__name__}") from None


def read_json(path: str, repo_id: str, filename: str) -> dict[str, Any]:
    from tfcost.readers.files import read_json_mapping

    try:
        return read_json_mapping(Path(path))
    except TfcostError as error:
        raise TfcostError(f"{repo_id} {filename}: {str(error).split(': ', 1)[-1]}") from None


def checkpoint_bytes(repo_id: str, revision: str | None) -> int | None:
    """metadata.total_size of model.safetensors.index.json: every tensor's bytes, as the checkpoint stores them."""
    try:  # absent (EntryNotFound), offline and not cached, or any other failure: the cross-check is skipped
        index = read_json(download(repo_id, INDEX, revision), repo_id, INDEX)
    except TfcostError:
        return None
    metadata = index.get("metadata")
    size = metadata.get("total_size") if isinstance(metadata, dict) else None
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None


def commit_of(path: str) -> str | None:
    """The snapshot folder a cached file sits in is named after its commit."""
    parent = Path(path).parent.name
    return parent if re.fullmatch(r"[0-9a-f]{40}", parent) else None


def fetch_config(repo_id: str, revision: str | None = None) -> HubConfig:
    """config.json of a Hub model, and its checkpoint size where the repository has a safetensors index."""
    path = download(repo_id, CONFIG, revision)
    config = read_json(path, repo_id, CONFIG)
    return HubConfig(repo_id, config, commit_of(path), checkpoint_bytes(repo_id, revision))


# Stored bytes by HTTP range requests (as hf-mem reads them): the first 8 bytes of each safetensors file, then its
# JSON header, never its tensors. Each request is bounded in time; a header in size (safetensors' own limit).
RANGE_TIMEOUT_S = 20.0
RANGE_DEADLINE_S = 120.0  # all the shards of one model together


def range_get(url: str, start: int, stop: int, token: str | None, repo_id: str) -> bytes:
    """Bytes start..stop-1 of a Hub file by one HTTP Range request, read no further than asked (a server that
    ignores the range and sends the whole file is cut off there)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers={"Range": f"bytes={start}-{stop - 1}", "User-Agent": "tfcost"})
    if token:  # not sent on to the CDN a resolve URL redirects to: the redirect carries its own signature
        request.add_unredirected_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=RANGE_TIMEOUT_S) as response:
            data: bytes = response.read(stop - start)
    except urllib.error.HTTPError as error:
        if error.code in (401, 403):
            raise TfcostError(
                f"{repo_id} is gated on the Hugging Face Hub: accept its terms on the model page and set HF_TOKEN "
                "to a token of that account"
            ) from None
        name = url.rsplit("/", 1)[-1]
        raise TfcostError(f"{repo_id}: the Hugging Face Hub answered HTTP {error.code} for {name}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", None) or getattr(error, "strerror", None) or type(error).__name__
        raise TfcostError(f"{repo_id}: cannot reach the Hugging Face Hub ({reason})") from None
    if len(data) != stop - start:
        raise TfcostError(f"{repo_id}: {url.rsplit('/', 1)[-1]} ends inside its safetensors header")
    return data


def fetch_stored(repo_id: str, revision: str | None = None) -> StoredFiles:
    """The tensors of a Hub model's safetensors files, from their headers alone: the shards its index names (or
    model.safetensors), two range requests each."""
    import time
    import urllib.parse

    from tfcost.readers.safetensors import StoredFiles, header_length, parse_header

    quiet()
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        raise TfcostError(f"{repo_id}: HF_HUB_OFFLINE is set; the files' headers are read from the Hub")
    from huggingface_hub import get_token

    index_path = None
    try:
        index_path = download(repo_id, INDEX, revision)
    except TfcostError as error:
        if "has no" not in str(error):  # a repository without an index holds one model.safetensors
            raise
    names = ["model.safetensors"]
    if index_path is not None:
        weight_map = read_json(index_path, repo_id, INDEX).get("weight_map")
        if not isinstance(weight_map, dict) or not all(isinstance(name, str) for name in weight_map.values()):
            raise TfcostError(f"{repo_id} {INDEX}: weight_map should map tensor names to file names")
        names = sorted(set(weight_map.values()))
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    at = urllib.parse.quote(revision or "main", safe="")
    token = get_token()
    deadline = time.monotonic() + RANGE_DEADLINE_S
    tensors = []
    for name in names:
        if time.monotonic() > deadline:
            raise TfcostError(f"{repo_id}: reading {len(names)} headers took over {RANGE_DEADLINE_S:.0f} s")
        url = f"{endpoint}/{repo_id}/resolve/{at}/{urllib.parse.quote(name)}"
        length = header_length(range_get(url, 0, 8, token, repo_id), f"{repo_id} {name}")
        tensors += parse_header(range_get(url, 8, 8 + length, token, repo_id), name)
    return StoredFiles(tensors, names)
