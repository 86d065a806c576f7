"""``agcore-actors config check|init``: the configuration file.

``check [PATH]`` loads the file (``PATH``, else ``./agcore.toml``, else the user's
``config.toml``) with the environment over it, exactly as ``serve`` would, and prints a
short summary (exit 0) or the one line naming the file, the key and what was expected
(exit 2). ``--json`` prints the summary as one JSON object. No secret is ever printed.

``init [PATH]`` writes the commented starter file (default ``./agcore.toml``), which
``check`` accepts; an existing file is kept unless ``--force`` (exit 2).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..config import (
    ConfigError,
    HttpServerSettings,
    LocalProviderSettings,
    Settings,
    load_settings,
    starter_text,
)
from ._common import OK, add_command, add_group, examples, print_json
from ._errors import UsageError


def _provider_line(name: str, settings: Settings) -> str:
    p = settings.providers[name]
    if isinstance(p, LocalProviderSettings):
        what = f"local, {p.gguf or p.model}"
    else:
        what = f"{p.kind}, {p.model or 'server default model'}, {p.base_url}"
    default = " [default]" if name == settings.default_provider else ""
    return f"{name} ({what}){default}"


def summary(settings: Settings) -> dict[str, Any]:
    """What ``check`` reports: names, kinds and choices, never a secret."""
    return {
        "source": settings.source,
        "default_provider": settings.default_provider,
        "default_agent": settings.default_agent,
        "providers": {n: p.kind for n, p in settings.providers.items()},
        "agents": {n: a.provider or settings.default_provider for n, a in settings.agents.items()},
        "mcpServers": {
            n: ("http" if isinstance(s, HttpServerSettings) else "stdio")
            + (" (disabled)" if s.disabled else "")
            for n, s in settings.mcp_servers.items()
        },
        "store": settings.store.path or "memory",
    }


def _check(args: argparse.Namespace) -> int:
    settings = load_settings(args.path)
    if args.json:
        print_json(summary(settings))
        return OK
    print(f"{settings.source or 'no configuration file (defaults and environment)'}: ok")
    providers = ", ".join(_provider_line(n, settings) for n in settings.providers)
    print(f"providers: {providers}")
    agents = ", ".join(
        f"{n} -> {a.provider or settings.default_provider}"
        + (" [default]" if n == settings.default_agent else "")
        for n, a in settings.agents.items()
    )
    print(f"agents: {agents}")
    servers = summary(settings)["mcpServers"]
    print("mcpServers: " + (", ".join(f"{n} ({k})" for n, k in servers.items()) or "none"))
    print(f"store: {settings.store.path or 'memory (lost at exit)'}")
    return OK


def _init(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if path.exists() and not args.force:
        raise UsageError(f"{path} exists; pass --force to overwrite it")
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        temporary.write_text(starter_text(), encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    print(path)
    print(f"wrote {path}; check it with: agcore-actors config check {path}", file=sys.stderr)
    return OK


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = add_group(
        commands,
        "config",
        help="check or create the configuration file",
        epilog=examples(
            "agcore-actors config init",
            "agcore-actors config check",
            "agcore-actors config check bot.toml --json",
        ),
    )
    check = add_command(
        group,
        "check",
        _check,
        help="load the configuration and summarise it (exit 2 and one line if it is wrong)",
        usage_errors=(ConfigError,),
    )
    check.add_argument(
        "path", nargs="?", help="the file (default: ./agcore.toml, else the user's config.toml)"
    )
    check.add_argument("--json", action="store_true", help="the summary as one JSON object")
    init = add_command(
        group,
        "init",
        _init,
        help="write a commented starter file",
        epilog=examples("agcore-actors config init", "agcore-actors config init bot.toml"),
    )
    init.add_argument("path", nargs="?", default="agcore.toml", help="where (default agcore.toml)")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
