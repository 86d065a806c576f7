"""The optional dependencies (pyproject's extras) the commands may need, and their errors.

A command that needs an extra checks for it before any work (:func:`require`): a missing
one is :class:`~agcore_actors.cli.MissingExtra`, one line naming the extra to install,
exit 2. A missing module of an extra that is imported later anyway (a path not checked
up front) becomes the same line through :func:`missing_extra`, which the top-level
handler (:mod:`agcore_actors.cli._common`) applies to every ModuleNotFoundError, so no
command ends in an import traceback for an extra. docs/extras.md lists the extras.
"""

from __future__ import annotations

import importlib

from ._errors import MissingExtra

__all__ = ["EXTRAS", "missing_extra", "require"]

#: Top-level module → the extra that installs it (pyproject.toml's optional dependencies).
EXTRAS: dict[str, str] = {
    "hypercorn": "serve",
    "mcp": "mcp-oauth",
    "prometheus_client": "serve",
    "opentelemetry": "otel",
    "xllamacpp": "local",
    "psycopg": "postgres",
    "wordllama": "embeddings",
}


def require(what: str, *modules: str) -> None:
    """Import each of ``modules`` (top-level names of :data:`EXTRAS`), or raise
    :class:`MissingExtra` naming ``what`` needs and the extra to install."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            raise MissingExtra(what, EXTRAS[module], module) from None


def missing_extra(exc: BaseException, what: str) -> MissingExtra | None:
    """The :class:`MissingExtra` a ModuleNotFoundError of an extra's module means, else
    None (a module of no extra is a bug, and keeps its traceback)."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.partition(".")[0]
    extra = EXTRAS.get(top)
    return None if extra is None else MissingExtra(what, extra, top)
