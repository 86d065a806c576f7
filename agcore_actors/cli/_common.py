"""The one convention every ``agcore-actors`` command follows.

Exit status, defined here and nowhere else:

====  =====================================================================
 0    the command did what was asked
 1    it ran and failed: a server, a tool, the store, an input it could not use
 2    usage or configuration: a bad flag value, a missing file named on the
      command line, a missing or malformed setting — found before any work
130   interrupted (Ctrl-C)
====  =====================================================================

Output: results on stdout; diagnostics (progress, retries, reports) on stderr; an
error is exactly one line on stderr, ``agcore-actors <command>: <kind>: <message>``,
never a traceback, for any :class:`~agcore_actors.AgcoreError`, any :class:`OSError`,
any bad input (:class:`ValueError`, which decoding errors are) and a missing module of an
optional extra (``<command> needs the 'serve' extra ...: pip install
'agcore-actors[serve]'``, exit 2; see :mod:`agcore_actors.cli._extras`). A
:class:`~agcore_actors.config.ConfigError` is a usage error (2) in every command.
``--json`` always means: the result as JSON on stdout. Anything else escaping a command
is a bug of the command and keeps its traceback.

Interruption: a KeyboardInterrupt — raised alone, or inside an exception group as
trio may deliver it — ends the command with one line (``<command>: interrupted``) and
status 130. The handler runs only after the command's ``trio.run`` has returned or
raised, so every actor system the command opened has been shut down by then; a
closed stdout (``| head``) ends the command quietly with status 1.

Values are checked by argparse with the typed converters of
:mod:`agcore_actors.cli._convert`, so a negative budget or a URL that is not http(s)
is a usage error before anything runs; the parser (:class:`Parser`) reports its
errors through the same one-line handler.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import msgspec

from .._errors import AgcoreError
from ..config import ConfigError
from ._errors import UsageError
from ._extras import missing_extra

__all__ = [
    "FAILURE",
    "INTERRUPTED",
    "OK",
    "USAGE",
    "Parser",
    "add_command",
    "add_group",
    "error_line",
    "examples",
    "parse",
    "print_json",
    "report",
    "run",
    "warn",
    "with_hint",
]

OK = 0
FAILURE = 1
USAGE = 2
INTERRUPTED = 130

Command = Callable[[argparse.Namespace], int]


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are :class:`UsageError` (one line, exit 2)
    instead of a usage dump and ``sys.exit(2)`` from inside the parser."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, prog=self.prog)


# -- building the parsers ------------------------------------------------------------------


def examples(*lines: str) -> str:
    """An epilog listing example command lines."""
    return "examples:\n" + "".join(f"  {line}\n" for line in lines)


def add_group(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    help: str,
    epilog: str,
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """A command group (``agcore-actors <name> <command>``); returns its subparsers."""
    group = commands.add_parser(
        name,
        help=help,
        description=help,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return group.add_subparsers(dest=f"{name}_command", required=True, metavar="COMMAND")


def add_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    func: Command,
    *,
    help: str,
    epilog: str | None = None,
    usage_errors: tuple[type[BaseException], ...] = (),
    trailing: str | None = None,
) -> argparse.ArgumentParser:
    """A command that runs ``func(args)``; ``usage_errors`` are the library errors that
    mean bad configuration for this command (exit 2 rather than 1); ``trailing`` is the
    dest of a ``nargs="*"`` positional that takes everything after ``--``."""
    parser = commands.add_parser(
        name,
        help=help,
        description=help,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=func, prog=parser.prog, usage_errors=usage_errors, trailing=trailing)
    return parser


# -- output ---------------------------------------------------------------------------------


def print_json(value: Any) -> None:
    """``value`` (builtins or msgspec Structs) as one line of JSON on stdout."""
    sys.stdout.write(msgspec.json.encode(value).decode() + "\n")
    sys.stdout.flush()


def warn(prog: str, kind: str, message: str) -> None:
    """A diagnostic line on stderr, in the shape of an error line."""
    print(f"{prog}: {kind}: {_one_line(message)}", file=sys.stderr, flush=True)


_HINT = "hint: "


def with_hint(exc: BaseException, hint: str) -> BaseException:
    """Attach a hint that the error line shows after the message."""
    exc.add_note(_HINT + hint)
    return exc


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _is_library_error(exc: BaseException) -> bool:
    # Until every package's root derives from AgcoreError, an error class defined in
    # the library counts too (tests/test_errors.py makes the two the same).
    return isinstance(exc, AgcoreError) or type(exc).__module__.startswith("agcore_actors.")


def _kind(exc: BaseException) -> str:
    kind = getattr(type(exc), "kind", None)
    if _is_library_error(exc) and isinstance(kind, str) and kind:
        return kind
    return type(exc).__name__


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
        return ": ".join([*names, exc.strerror])
    return str(exc) or type(exc).__name__


def error_line(prog: str, exc: BaseException) -> str:
    """``<prog>: <kind>: <message>`` on one line, hints appended."""
    line = f"{prog}: {_kind(exc)}: {_one_line(_message(exc))}"
    hints = [n[len(_HINT) :] for n in getattr(exc, "__notes__", []) if n.startswith(_HINT)]
    return line + "".join(f" (hint: {_one_line(h)})" for h in hints)


# -- the top-level handler ------------------------------------------------------------------


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _status(exc: BaseException, usage_errors: tuple[type[BaseException], ...]) -> int | None:
    # A bad configuration is a usage error in every command (run, chat, sessions as
    # much as config check and serve): the exit status table above promises 2.
    if isinstance(exc, (UsageError, ConfigError, *usage_errors)):
        return USAGE
    if _is_library_error(exc) or isinstance(exc, OSError | ValueError):
        return FAILURE
    return None


def _stdout_gone() -> None:
    # The reader went away (``| head``): say nothing more, and keep Python's
    # flush at exit from failing on the closed pipe.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def report(
    prog: str, exc: BaseException, usage_errors: tuple[type[BaseException], ...] = ()
) -> int | None:
    """Print the error line(s) for ``exc`` and return the exit status, or None if
    ``exc`` is not an error the convention covers (the caller re-raises it).

    A KeyboardInterrupt anywhere in ``exc`` (trio may deliver it in a group) wins: one
    line, status 130. A group of covered errors prints one line per error.
    """
    leaves = _leaves(exc)
    if any(isinstance(leaf, KeyboardInterrupt) for leaf in leaves):
        print(f"{prog}: interrupted", file=sys.stderr, flush=True)
        return INTERRUPTED
    if any(isinstance(leaf, BrokenPipeError) for leaf in leaves):
        _stdout_gone()
        return FAILURE
    # An extra's module missing on a path no command checked up front: the same one line
    # as the up-front check (agcore_actors.cli._extras), not an import traceback.
    what = prog.removeprefix("agcore-actors ")
    leaves = [missing_extra(leaf, what) or leaf for leaf in leaves]
    statuses = [_status(leaf, usage_errors) for leaf in leaves]
    if any(status is None for status in statuses):
        return None
    for leaf in leaves:
        prefix = leaf.prog if isinstance(leaf, UsageError) and leaf.prog else prog
        print(error_line(prefix, leaf), file=sys.stderr, flush=True)
    return max(s for s in statuses if s is not None)


def run(args: argparse.Namespace) -> int:
    """Run the parsed command under the handler."""
    prog: str = args.prog
    func: Command = args.func
    usage_errors: tuple[type[BaseException], ...] = args.usage_errors
    try:
        status = func(args)
        sys.stdout.flush()
        return status
    except BaseException as exc:
        handled = report(prog, exc, usage_errors)
        if handled is None:
            raise
        return handled


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace | int:
    """The parsed arguments, or the exit status when parsing ended the run
    (``--help``/``--version``: 0; a usage error: its line, 2)."""
    try:
        args, extras = parser.parse_known_args(argv)
        # argparse cannot give a trailing ``-- COMMAND ...`` to a positional once an
        # option came between the positionals (``call tool --json -- server``); a
        # command that takes one names its dest in ``trailing``.
        dest = getattr(args, "trailing", None)
        if extras and dest and extras[0] == "--" and not getattr(args, dest):
            setattr(args, dest, extras[1:])
            extras = []
        if extras:
            prog = getattr(args, "prog", parser.prog)
            raise UsageError(f"unrecognized arguments: {' '.join(extras)}", prog=prog)
        return args
    except UsageError as exc:
        print(error_line(exc.prog or parser.prog, exc), file=sys.stderr, flush=True)
        return USAGE
    except SystemExit as exc:  # argparse's own exit: --help, --version
        return exc.code if isinstance(exc.code, int) else OK
