"""The library's modules, imported once, for the tests that check the whole tree."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import agcore_actors

# Public packages whose top-level names users import (the CLI is a program, not an API).
PACKAGES = (
    "actor", "llm", "tools", "mcp", "memory", "context", "prompt", "store", "agent", "local",
    "testing", "asyncio", "blocking",
)  # fmt: skip


def all_modules() -> list[ModuleType]:
    """Every module of the package, private ones included."""
    modules = [agcore_actors]
    for info in pkgutil.walk_packages(agcore_actors.__path__, "agcore_actors."):
        if info.name.endswith(".__main__"):  # running it is its import
            continue
        modules.append(importlib.import_module(info.name))
    return modules


def is_public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def public_modules() -> list[ModuleType]:
    """Modules a user may import: no ``_`` component, and not the CLI."""
    return [
        m
        for m in all_modules()
        if is_public(m.__name__) and not m.__name__.startswith("agcore_actors.cli")
    ]


def package_of(module: ModuleType) -> str:
    parts = module.__name__.split(".")
    return parts[1] if len(parts) > 1 else ""
