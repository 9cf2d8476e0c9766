"""The errors tfcost reports to a user as one line, never as a traceback."""

from __future__ import annotations

import re
from collections.abc import Callable


class TfcostError(Exception):
    """A problem with what the user gave us (a file, a preset, a shape): exit code 1."""

    exit_code = 1


class UsageError(TfcostError):
    """A command line that cannot be run as written: exit code 2, as for any usage error."""

    exit_code = 2


def describe_validation_error(error: Exception, name: Callable[[str], str] = str) -> str:
    """One line naming every field a pydantic ValidationError complains about; `name` turns a field's dotted
    location into what the user wrote (a preset key as is, a setup field as its command-line option)."""
    from pydantic import ValidationError

    if not isinstance(error, ValidationError):
        return str(error)
    problems = []
    for item in error.errors():
        where = name(".".join(str(part) for part in item["loc"])) if item["loc"] else ""
        if item["type"] == "extra_forbidden":
            problems.append(f"unknown key '{where}'")
        elif item["type"] == "missing":
            problems.append(f"missing key '{where}'")
        else:
            message = item["msg"].removeprefix("Value error, ")
            problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)


# `user:password@` after a URL's scheme: HF_ENDPOINT, a proxy or a mirror may carry credentials.
URL_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]*@")


def redact_credentials(text: str) -> str:
    """Text with the `user:password@` of every URL in it written as `***@`, so that no message prints them."""
    return URL_CREDENTIALS.sub("***@", text) if "@" in text else text
