"""Entry point of the ``agcore-actors`` command.

Each command group lives in a module ``_cmd_<group>.py`` of this package with a
``register(subparsers)`` function that adds its parsers with
:func:`~agcore_actors.cli._common.add_group` / ``add_command``. Modules are found by
name, so adding a group touches no other file. The convention every command follows
(exit status, one-line errors, ``--json``) is in :mod:`agcore_actors.cli._common`.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import __version__
from ._common import Parser, examples, parse, run


def _build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="agcore-actors",
        description="LLM agents as supervised trio actors.",
        epilog=examples(
            "agcore-actors demo",
            'agcore-actors llm complete "Say hi" --base-url http://127.0.0.1:8080/v1',
            "agcore-actors <group> --help",
        )
        + "\nexit status: 0 ok, 1 failure, 2 usage or configuration, 130 interrupted",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"agcore-actors {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="GROUP")
    package = Path(__file__).parent
    for module in sorted(m.name for m in pkgutil.iter_modules([str(package)])):
        if module.startswith("_cmd_"):
            importlib.import_module(f"{__package__}.{module}").register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit status (never raises for an error the convention covers)."""
    args = parse(_build_parser(), argv)
    if isinstance(args, int):
        return args
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
