"""MkDocs hook: the CLI reference is the command's own ``--help`` text, generated at build
time from its argparse parsers, so the page cannot fall behind the code.

A page containing the line ``<!-- cli-reference -->`` gets, in its place, one section per
command (``agcore-actors``, each group, each command of a group) with its help text.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from typing import Any

MARKER = "<!-- cli-reference -->"


def _parser() -> argparse.ArgumentParser:
    from agcore_actors.cli import _main

    build = getattr(_main, "build_parser", None) or getattr(_main, "_build_parser", None)
    if build is None:
        raise RuntimeError("docs/hooks/cli_reference.py: agcore_actors.cli._main has no parser")
    parser: argparse.ArgumentParser = build()
    return parser


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _commands(child, (*path, name))


def reference() -> str:
    """Every command's help, as Markdown sections."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "96"  # argparse wraps to the terminal's width
    try:
        sections = []
        for path, parser in _commands(_parser(), ("agcore-actors",)):
            level = "#" * min(len(path) + 1, 4)
            text = parser.format_help().rstrip()
            sections.append(f"{level} `{' '.join(path)}`\n\n```text\n{text}\n```\n")
        return "\n".join(sections)
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def on_page_markdown(markdown: str, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, reference())
