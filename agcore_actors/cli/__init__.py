"""Command line: ``agcore-actors`` (see ``agcore-actors --help``).

:func:`main` runs one command and returns its exit status; it never raises for an
error the CLI convention covers (see ``agcore_actors.cli._common``). The error
classes are those of the command itself; they never leave :func:`main` (each
becomes one line on stderr) and are named here so the error tree shows them at a
public path.
"""

from .._exports import publish
from ._errors import BadInput, CliError, MissingExtra, UsageError
from ._main import main

__all__ = ["BadInput", "CliError", "MissingExtra", "UsageError", "main"]

publish(__name__, __all__)
