"""The console entry point: the app with every command registered, each failure turned into one line.

No `from __future__ import annotations` here: typer would then eval and compile every option's annotation
string twice on each run, where real annotations cost nothing.
"""

import gc
import importlib

# The imports below build some 100,000 objects that live as long as the process (typer's, click's, pydantic's and
# tfcost's classes and functions). While they load, the collector walks them again and again and frees nothing:
# about 5% of a command's CPU here. It is paused while they load, and they are frozen after (left out of every
# later collection, as `run` does for the exit); the collector then runs as usual. The command modules are loaded
# the same way, by load_commands, when main() knows which are wanted.
COLLECTING = gc.isenabled()
gc.disable()
try:
    import copy
    import errno
    import io
    import os
    import sys
    import types
    from collections.abc import Sequence
    from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

    import typer

    from tfcost.cli.app import app
    from tfcost.errors import TfcostError
finally:
    gc.freeze()
    if COLLECTING:
        gc.enable()

if TYPE_CHECKING:
    from pydantic import BaseModel


BaseModelT = TypeVar("BaseModelT", bound="BaseModel")

# Each command module registers its commands on the app when imported; this is the order --help lists them in.
COMMAND_MODULES = ("listing", "estimate", "check", "train", "serve", "fit", "sweep", "measure", "plan", "inspect")
# The module that registers each command (or group) by the name a user types. A run of one command imports its
# module alone: the others' imports and option declarations cost ~3 ms of every start-up. tests/test_cli.py checks
# this against what the modules register.
MODULE_OF = {
    "list": "listing",
    "gpus": "listing",
    "frameworks": "listing",
    "estimate": "estimate",
    "compare": "estimate",
    "check": "check",
    "import": "check",
    "train": "train",
    "serve": "serve",
    "fit": "fit",
    "sweep": "sweep",
    "measure": "measure",
    "profiles": "measure",
    "plan": "plan",
    "inspect": "inspect",
}


def load_commands(modules: Sequence[str]) -> None:
    """Import these command modules (registering their commands on the app), the collector paused as above. Those
    imported already are skipped without a freeze: a test's thousandth main() must not freeze its garbage."""
    missing = [f"tfcost.cli.{module}" for module in modules if f"tfcost.cli.{module}" not in sys.modules]
    if not missing:
        return
    collecting = gc.isenabled()
    gc.disable()
    try:
        for module in missing:
            importlib.import_module(module)
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


def whole_app() -> typer.Typer:
    """The app with every command registered, in --help's order whatever order their modules were imported in (a
    process that ran `compare` and then asks for --help imported estimate.py first)."""
    load_commands(COMMAND_MODULES)

    def place(info: Any) -> tuple[int, int]:
        callback = info.callback
        return COMMAND_MODULES.index(callback.__module__.rsplit(".", 1)[-1]), callback.__code__.co_firstlineno

    app.registered_commands.sort(key=place)
    return app


# pydantic's own test for "every plugin disabled" (pydantic/plugin/_loader.py, get_plugins, as of pydantic 2.14:
# `elif disabled_plugins in ('__all__', '1', 'true'): return ()`).
PLUGINS_DISABLED = ("__all__", "1", "true")
PLUGIN_LOADER = "pydantic.plugin._loader"


def skip_plugin_loader() -> None:
    """Stand in for pydantic's plugin loader while plugins are disabled, so that it is never imported.

    pydantic imports its loader when it builds its first validator (typer builds one for the first option it
    parses), and the loader imports importlib.metadata, with email, zipfile and csv under it: ~14 ms of every
    command's start-up here, all to look for plugins that PYDANTIC_DISABLE_PLUGINS has turned off, when the loader's
    get_plugins would return () at once. The stand-in returns the same (); should plugins be enabled later in the
    process (a test changing the variable), it hands over to pydantic's own loader, imported then."""
    if PLUGIN_LOADER in sys.modules or os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in PLUGINS_DISABLED:
        return
    stand_in = types.ModuleType(PLUGIN_LOADER, "tfcost's stand-in while plugins are disabled (tfcost.cli.main)")

    def get_plugins() -> Any:
        if os.environ.get("PYDANTIC_DISABLE_PLUGINS") in PLUGINS_DISABLED:
            return ()
        if sys.modules.get(PLUGIN_LOADER) is stand_in:
            del sys.modules[PLUGIN_LOADER]
        return importlib.import_module(PLUGIN_LOADER).get_plugins()

    stand_in.get_plugins = get_plugins  # type: ignore[attr-defined]
    sys.modules[PLUGIN_LOADER] = stand_in


def fail(message: str, exit_code: int) -> NoReturn:
    from tfcost.render.notes import print_error

    if sys.stderr is not None:  # started with standard error closed: the exit code is all there is
        print_error(message)
    sys.exit(exit_code)


# What a failed write of the output raises: a closed pipe or descriptor, a full disk or quota, an I/O error.
OUTPUT_ERRNOS = {errno.EPIPE, errno.EBADF, errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


def discard_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's own flush at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):  # no descriptor: a test's StringIO
        pass


def app_for(argv: list[str] | None) -> typer.Typer:
    """The app with only the command asked for, when the first argument names one exactly.

    Only that command's module is imported, and typer builds only its parameters (it would otherwise inspect every
    command's signature, a validator per option: about 6 ms of CPU per run here for the ten commands not asked
    for). Anything else (no command, an option first, a misspelt name) gets the whole app, and so its usual help and
    errors."""
    words = sys.argv[1:] if argv is None else argv
    module = MODULE_OF.get(words[0]) if words else None
    if module is None:
        return whole_app()
    load_commands([module])
    wanted = [info for info in app.registered_commands if command_name(info) == words[0]]
    groups = [info for info in app.registered_groups if group_name(info) == words[0]]
    if len(wanted) + len(groups) != 1:  # MODULE_OF out of step with the modules: the whole app still answers
        return whole_app()
    narrow = copy.copy(app)
    narrow.registered_commands = wanted
    narrow.registered_groups = groups  # `tfcost plan`: its sub-commands
    return narrow


def command_name(info: Any) -> str:
    """A command's name as typed: its given name, or its function's with dashes for underscores (typer's rule)."""
    return info.name or info.callback.__name__.replace("_", "-")


def group_name(info: Any) -> str | None:
    """A sub-app's name as typed (`plan`)."""
    return info.name or (info.typer_instance.info.name if info.typer_instance else None)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app, turning every expected failure into one line on stderr.

    Set TFCOST_DEBUG=1 to see the traceback instead.
    """
    # tfcost has no use for pydantic plugins, and looking for them reads the entry points of every installed
    # package (4 ms with this venv's 23, growing with each one). A user's own setting wins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    skip_plugin_loader()
    for stream in (sys.stdout, sys.stderr):  # a character the terminal cannot encode prints as an escape
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    if sys.stdout is None:  # started with standard output closed (`tfcost list >&-`)
        fail("cannot write the output: standard output is closed", 1)
    if os.environ.get("TFCOST_DEBUG") == "1":
        app_for(argv)(args=argv)
        return
    try:
        code = app_for(argv)(args=argv, standalone_mode=False)
        sys.stdout.flush()  # a full disk or a closed pipe is found here, while we can still say so
    except OSError as error:
        if error.errno not in OUTPUT_ERRNOS:
            fail(f"internal error (OSError: {error}); rerun with TFCOST_DEBUG=1 for the traceback", 1)
        discard_stdout()
        fail(f"cannot write the output: {error.strerror or error}", 1)
    except typer.Abort:
        fail("aborted", 1)
    except TfcostError as error:
        fail(str(error), error.exit_code)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except RecursionError:
        fail("input nested too deeply", 1)
    except Exception as error:  # noqa: BLE001 - the promise is: never a traceback
        if type(error).__name__ == "NoArgsIsHelpError":  # bare `tfcost` or `tfcost estimate`: show the help
            sys.stderr.write(error.format_message() + "\n")  # type: ignore[attr-defined]
            sys.exit(2)
        if hasattr(error, "format_message"):  # click's UsageError (exit 2) and ClickException (exit 1)
            fail(error.format_message().replace("Value error, ", ""), getattr(error, "exit_code", 1))
        fail(f"internal error ({type(error).__name__}: {error}); rerun with TFCOST_DEBUG=1 for the traceback", 1)
    sys.exit(code if isinstance(code, int) else 0)


def run() -> None:
    """The `tfcost` console script and `python -m tfcost`: main(), then exit without the final garbage collection.

    At exit the interpreter sweeps every object the imports built (typer, pydantic, rich): ~60 ms of a ~300 ms run
    here, for nothing, as the process is ending anyway. Freezing them exempts them from that sweep.
    """
    try:
        main()
    finally:
        gc.freeze()
