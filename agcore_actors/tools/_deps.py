"""The run context: typed per-run state a tool can reach, never serialised.

A :class:`RunContext` carries what a tool of an agent's turn may need beyond its
arguments: the session, the turn, the agent, the cancel scope of the turn, and
``deps`` — whatever the application gives each session (the user, a database handle,
a client). A function tool gets it by declaring a parameter annotated ``RunContext``
(or ``RunContext[MyDeps]``); that parameter is left out of the tool's JSON Schema, so
the model never sees it, and nothing of it goes into a message: the turn registers its
context in this process (:func:`providing`) for as long as it runs, and the executor's
call looks it up by the batch's session and trace (the turn) ids.

Guarantees: a context is reachable only while its turn runs (the registration is
removed when the ``with`` block ends, on cancellation too); a tool that declares one
but runs outside an agent's turn of this process (another process's executor, an MCP
server) fails with a clear ``ExecutionFailed``, never with another turn's context.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

import attrs
import trio

__all__ = ["RunContext", "providing", "run_context_for"]

D = TypeVar("D")


@attrs.frozen(kw_only=True, eq=False)
class RunContext(Generic[D]):
    """Per-run state of one turn (see the module docstring)."""

    session: str
    turn: str
    agent: str
    #: The application's dependencies for this session (None when it gives none).
    deps: D
    #: The running turn's cancel scope (cancel it to end the turn); None outside a turn.
    cancel_scope: trio.CancelScope | None = None


_LIVE: dict[tuple[str, str], RunContext[Any]] = {}


@contextmanager
def providing(context: RunContext[Any]) -> Iterator[None]:
    """Make ``context`` reachable by the tool calls of its session and turn meanwhile."""
    key = (context.session, context.turn)
    _LIVE[key] = context
    try:
        yield
    finally:
        if _LIVE.get(key) is context:
            del _LIVE[key]


def run_context_for(session: str, turn: str) -> RunContext[Any] | None:
    """The context registered for ``session``'s ``turn``, if it runs now."""
    return _LIVE.get((session, turn))
