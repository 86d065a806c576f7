"""Committing a turn, and running a subagent as a child session of the calling turn.

:func:`commit_turn` is the one way a session ends a turn in its store: the turn's open
calls are closed (synthetic results), then the commit runs shielded from cancellation
under its own deadline, so a cancelled turn is still committed whole or the commit
raises :class:`~agcore_actors.actor.AskTimeout` (the outcome is then unknown, as after
any error of the store: the caller reloads the session before writing again).

:func:`run_child_session` runs an agent on a task as session ``<parent>/<call id>``,
inside the calling turn's task tree: its transcript is stored like any session's, its
failure — the store's included — is the tool call's error (never the parent turn's),
and a cancellation of the parent commits the child as ``cancelled`` (or, when it cuts
the child's begin short, closes the child's turn if the begin was applied) before it
completes. A child turn the store leaves open (a failed commit) is repaired when that
child session is next loaded.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Awaitable, Callable

import trio

from .._errors import AgcoreError
from ..actor import AskTimeout
from ..llm import Usage, UserMessage
from ..tools import RunContext
from ..tools._deps import providing
from . import messages as am
from ._config import Agent, AgentConfig, PromptContext
from ._prompt import system_prompt
from ._store_port import TurnStore
from ._suspend import usage_minus
from ._turn import Turn, TurnPorts

#: ``(turn, expected version, status, facts set, facts removed) -> new version``.
Commit = Callable[[Turn, int, am.TurnStatus, dict[str, str], list[str]], Awaitable[int]]


async def commit_turn(
    store: TurnStore,
    timeout: float,
    turn: Turn,
    version: int,
    status: am.TurnStatus,
    facts_set: dict[str, str],
    facts_removed: list[str],
) -> int:
    """Close ``turn``'s open calls and commit it, shielded from cancellation, within
    ``timeout`` seconds (else :class:`AskTimeout`); the session's new version."""
    turn.close(status)
    # One scope, shielded and with the commit's own deadline (as fail_after in a shield).
    with trio.CancelScope(shield=True, deadline=trio.current_time() + timeout) as scope:
        version = await store.commit(
            turn.session,
            turn.turn_id,
            version,
            # The user's message is stored by begin, a durable turn's steps as they came.
            messages=turn.messages[turn.stored :],
            usage=usage_minus(turn.usage, turn.stored_usage),
            agent=turn.agent.name,
            status=status,
            facts_set=facts_set,
            facts_removed=facts_removed,
        )
    if scope.cancelled_caught:
        raise AskTimeout(f"store (commit of {turn.session!r})", timeout)
    return version


async def drop_events(_: am.TurnEvent) -> None:
    """A turn's event sink that nobody reads (a child session, a ``RunTurn``)."""
    return None


async def run_child_session(
    parent: str,
    agent: Agent,
    call_id: str,
    task: str,
    *,
    store: TurnStore,
    config: AgentConfig,
    ports: TurnPorts,
    commit: Commit,
    commit_timeout: float = 30.0,
    deps: object = None,
) -> tuple[am.ToolCallStatus, str, Usage, float]:
    """Run ``agent`` on ``task`` as session ``<parent>/<call_id>`` (see the module doc):
    the call's status, its content, the child's usage and cost. Its run context has the
    parent's ``deps``."""
    child = f"{parent}/{call_id}"
    context = PromptContext(session=child, agent=agent.name, turn=0, facts={})
    turn_id = uuid.uuid4().hex
    run = RunContext(session=child, turn=turn_id, agent=agent.name, deps=deps)
    turn = Turn(
        session=child,
        turn_id=turn_id,
        agent=agent,
        config=config,
        ports=ports,
        history=[],
        system_prompt=system_prompt(agent, context),
        emit=drop_events,
        streamed=False,
        run_context=run,
    )
    try:
        snapshot = await store.load(child, 0)
        version = await store.begin(
            child, turn.turn_id, snapshot.version, [UserMessage(task)], agent.name
        )
    except AgcoreError as exc:
        return "error", _error(exc), Usage(), 0.0
    except trio.Cancelled:
        # Cut short in flight, the begin may have been applied: load the child now (the
        # load closes a turn left open), shielded and bounded like a commit.
        deadline = trio.current_time() + commit_timeout
        with trio.CancelScope(shield=True, deadline=deadline), contextlib.suppress(AgcoreError):
            await store.load(child, 0)
        raise
    status: am.ToolCallStatus = "ok"
    try:
        with providing(run):
            await turn.run(task)
        content = turn.text
    except AgcoreError as exc:
        status, content = "error", _error(exc)
    except BaseException:
        # Left open if this fails: repaired when the child is next loaded.
        with contextlib.suppress(AgcoreError):
            await commit(turn, version, "cancelled", {}, [])
        raise
    try:
        await commit(turn, version, "completed" if status == "ok" else "failed", {}, [])
    except AgcoreError as exc:
        status, content = "error", _error(exc)
    return status, content, turn.usage, turn.cost


def _error(exc: AgcoreError) -> str:
    """A child's failure as its tool call's content."""
    return f"Error: {exc.kind}: {exc}"
