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
from typing import Any

from tfcost.errors import TfcostError

# owner/name as the Hub spells repository ids: letters, digits, '-', '_', '.'; no '--' or '..' (huggingface_hub's
# validate_repo_id says the rest).
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")
CONFIG = "config.json"
INDEX = "model.safetensors.index.json"
MAX_CONFIG_BYTES = 1 << 20  # as for a local config.json: no config comes near it
# One HEAD request decides whether the Hub can be reached before hf_hub_download, which on a network error retries
# five times with backoff (23-47 s of 'Retrying in 8s' lines before it fails). httpx applies the timeout to each
# phase of the request, and a server that accepts and never answers costs two of them here (4 s in all).
PROBE_SECONDS = 2.0


class HubUnreachable(TfcostError):
    """The Hub cannot be reached (offline, or HF_HUB_OFFLINE=1) and the file is not cached: what happened, then
    what to do, to which the reader adds the preset of the same model, where there is one (with_preset)."""

    REMEDY = "give a local config.json with --config PATH, or fetch it once online (HF_HUB_OFFLINE=1 skips the wait)"

    def __init__(self, problem: str) -> None:
        super().__init__(f"{problem}; {self.REMEDY}")
        self.problem = problem

    def with_preset(self, preset: str) -> str:
        return f"{self.problem}; the preset '{preset}' is the same model and needs no network; or {self.REMEDY}"


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


unreachable: set[str] = set()  # endpoints a probe failed to reach in this run: the next file is not tried again


def cache_state(repo_id: str, filename: str) -> str:
    """What the cache holds of this model, and where it is, for the offline line."""
    from huggingface_hub import constants

    folder = Path(constants.HF_HUB_CACHE) / f"models--{repo_id.replace('/', '--')}"
    held = "it holds other files of this model" if folder.is_dir() else "it holds nothing of this model"
    return f"{filename} is not in the Hugging Face cache ({constants.HF_HUB_CACHE}: {held})"


def offline_error(repo_id: str, filename: str, at: str, why: str) -> HubUnreachable:
    return HubUnreachable(f"{repo_id}{at}: {why}, and {cache_state(repo_id, filename)}")


def probe(repo_id: str, filename: str, revision: str | None) -> None:
    """One HEAD request, no retries, a few seconds at most: a network error here is 'offline' in one line. The
    Hub's own answers (not found, gated) go on to hf_hub_download, which turns them into its errors."""
    from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import HfHubHTTPError

    if constants.HF_HUB_OFFLINE:  # hf_hub_download says so at once, without a connection
        return
    at = f" at revision '{revision}'" if revision else ""
    endpoint = constants.ENDPOINT
    if endpoint in unreachable:
        raise offline_error(repo_id, filename, at, f"the Hub ({endpoint}) could not be reached")
    try:
        get_hf_file_metadata(hf_hub_url(repo_id, filename, revision=revision), timeout=PROBE_SECONDS)
    except HfHubHTTPError:  # the Hub answered: hf_hub_download says what
        return
    except Exception as error:  # noqa: BLE001 - httpx's connection and timeout errors: no network to the Hub
        unreachable.add(endpoint)
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise offline_error(repo_id, filename, at, f"the Hub ({endpoint}) cannot be reached ({reason[:80]})") from None


def download(repo_id: str, filename: str, revision: str | None) -> str:
    """The cached copy, else a download; one-line errors for every way it fails."""
    from huggingface_hub import constants, hf_hub_download
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
    probe(repo_id, filename, revision)
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
        why = "offline (HF_HUB_OFFLINE=1 is set)" if constants.HF_HUB_OFFLINE else "the Hub cannot be reached"
        raise offline_error(repo_id, filename, at, why) from None
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
