"""``agcore-actors prompt render``: render a template file in the sandbox.

``--var k=v`` (repeatable) and ``--json FILE`` give the context; partials are
the other ``*.j2`` / ``*.tpl`` files of ``--partials DIR`` (by file stem);
``--seed-syntax`` reads templates written in the seed's handlebars syntax.
Errors print with the template name and line, exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..prompt import PromptError, TemplateRegistry, context_from_json


def _render(args: argparse.Namespace) -> int:
    registry = TemplateRegistry()
    try:
        if args.partials:
            for path in sorted(Path(args.partials).iterdir()):
                if path.suffix in (".j2", ".tpl", ".txt"):
                    source = path.read_text(encoding="utf-8")
                    if args.seed_syntax:
                        registry.register_seed(path.stem, source)
                    else:
                        registry.register(path.stem, source)
        main = Path(args.template)
        source = main.read_text(encoding="utf-8")
        if args.seed_syntax:
            registry.register_seed(main.name, source)
        else:
            registry.register(main.name, source)
        context: dict[str, Any] = {}
        if args.json:
            context.update(context_from_json(Path(args.json).read_text(encoding="utf-8")))
        for item in args.var or []:
            key, sep, value = item.partition("=")
            if not sep:
                print(f"--var {item!r}: expected KEY=VALUE", file=sys.stderr)
                return 2
            context[key] = value
        sys.stdout.write(registry.render(main.name, context))
    except PromptError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("prompt", help="render prompt templates")
    commands = parser.add_subparsers(dest="prompt_command", required=True)
    render = commands.add_parser("render", help="render a template file")
    render.add_argument("template", help="the template file")
    render.add_argument("--var", action="append", metavar="KEY=VALUE", help="a variable")
    render.add_argument("--json", metavar="FILE", help="variables from a JSON object")
    render.add_argument("--partials", metavar="DIR", help="partials: *.j2/*.tpl/*.txt by stem")
    render.add_argument("--seed-syntax", action="store_true", help="seed handlebars syntax")
    render.set_defaults(func=_render)
