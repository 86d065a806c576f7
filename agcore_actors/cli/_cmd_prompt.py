"""``agcore-actors prompt render``: render a template file in the sandbox.

``--var k=v`` (repeatable) and ``--vars-json FILE`` give the context; partials are
the ``*.j2`` / ``*.tpl`` / ``*.txt`` files of ``--partials DIR`` (by file stem);
``--handlebars`` (also ``--seed-syntax``) reads templates written in the
handlebars-style syntax (``{{#if}}``, ``{{> partial}}``). The rendered text goes to stdout as it is
(``--json``: ``{"template", "text"}``); a template error is one line naming the
template and line, exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..prompt import TemplateRegistry, context_from_json
from ._common import OK, add_command, add_group, examples, print_json
from ._convert import existing_dir, existing_file, key_value

_PARTIAL_SUFFIXES = (".j2", ".tpl", ".txt")


def _register(registry: TemplateRegistry, name: str, source: str, seed_syntax: bool) -> None:
    if seed_syntax:
        registry.register_seed(name, source)
    else:
        registry.register(name, source)


def _render(args: argparse.Namespace) -> int:
    registry = TemplateRegistry()
    if args.partials:
        for path in sorted(args.partials.iterdir()):
            if path.suffix in _PARTIAL_SUFFIXES:
                _register(registry, path.stem, path.read_text("utf-8"), args.seed_syntax)
    main: Path = args.template
    _register(registry, main.name, main.read_text("utf-8"), args.seed_syntax)
    context: dict[str, Any] = {}
    if args.vars_json:
        context.update(context_from_json(args.vars_json.read_text("utf-8")))
    context.update(args.var or [])
    text = registry.render(main.name, context)
    if args.json:
        print_json({"template": main.name, "text": text})
    else:
        sys.stdout.write(text)
    return OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    commands = add_group(
        subparsers,
        "prompt",
        help="render prompt templates",
        epilog=examples(
            "agcore-actors prompt render mail.j2 --var name=Ann",
            "agcore-actors prompt render mail.j2 --vars-json vars.json --partials partials/",
            "agcore-actors prompt render mail.tpl --handlebars --json",
        ),
    )
    render = add_command(commands, "render", _render, help="render a template file")
    render.add_argument("template", type=existing_file, help="the template file")
    render.add_argument(
        "--var", type=key_value, action="append", metavar="KEY=VALUE", help="a variable"
    )
    render.add_argument(
        "--vars-json", type=existing_file, metavar="FILE", help="variables from a JSON object"
    )
    render.add_argument(
        "--partials", type=existing_dir, metavar="DIR", help="partials: *.j2/*.tpl/*.txt by stem"
    )
    render.add_argument(
        "--handlebars",
        "--seed-syntax",
        dest="seed_syntax",
        action="store_true",
        help="handlebars-style syntax ({{#if}}, {{> p}})",
    )
    render.add_argument("--json", action="store_true", help="print template and text as JSON")
