"""Entry point of the ``agcore-actors`` command.

Each command group lives in a module ``_cmd_<group>.py`` of this package with a
``register(subparsers)`` function that adds its parsers and sets ``func`` (taking the
parsed namespace, returning the exit status). Modules are found by name, so adding a
group touches no other file.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agcore-actors", description="LLM agents as supervised trio actors."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    package = Path(__file__).parent
    for module in sorted(m.name for m in pkgutil.iter_modules([str(package)])):
        if module.startswith("_cmd_"):
            importlib.import_module(f"{__package__}.{module}").register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
