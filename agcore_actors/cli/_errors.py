"""Errors of the ``agcore-actors`` command (the program, not the library API).

::

    CliError            "cli"            base of the command's own errors
    ├── UsageError      "usage"          bad flags, environment or configuration: exit 2
    │   └── MissingExtra "missing_extra" an optional dependency (an extra) is not installed
    └── BadInput        "bad_input"      an input file or stream that cannot be read as asked

They never leave :func:`agcore_actors.cli.main`: its top-level handler turns each into
one line on stderr and an exit status (see :mod:`agcore_actors.cli._common`).
"""

from __future__ import annotations

from typing import ClassVar

from .._errors import AgcoreError

__all__ = ["BadInput", "CliError", "MissingExtra", "UsageError"]


class CliError(AgcoreError):
    """Base of the errors the command raises itself."""

    kind: ClassVar[str] = "cli"


class UsageError(CliError, ValueError):
    """The command line, the environment or a configuration file is wrong: exit 2.

    ``prog`` is the command it concerns (``"agcore-actors llm complete"``), when the
    parser that found it knows better than the command that runs.
    """

    kind: ClassVar[str] = "usage"

    def __init__(self, message: str, *, prog: str | None = None) -> None:
        super().__init__(message)
        self.prog = prog


class MissingExtra(UsageError):
    """What was asked needs an optional dependency this install lacks: exit 2.

    The message names the extra to install (``pip install 'agcore-actors[serve]'``);
    ``extra`` is its name, ``module`` the module that could not be imported.
    """

    kind: ClassVar[str] = "missing_extra"

    def __init__(self, what: str, extra: str, module: str) -> None:
        super().__init__(
            f"{what} needs the {extra!r} extra ({module} is not installed):"
            f" pip install 'agcore-actors[{extra}]'"
        )
        self.extra = extra
        self.module = module


class BadInput(CliError, ValueError):
    """An input (file or stdin) is not what the command reads: exit 1."""

    kind: ClassVar[str] = "bad_input"
