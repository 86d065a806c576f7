"""Request-level hooks: async callables run around each provider call.

- ``PRE_REQUEST`` runs before every attempt (retries included) and may block
  the request: the call then fails with :class:`BlockedByHook` carrying the
  first blocking reason (default ``"Blocked by pre-request hook"``), the
  provider is not called and ``ON_ERROR`` is not fired.
- ``POST_REQUEST`` (after a successful response, or after a stream ended),
  ``ON_RETRY`` (before each backoff sleep; ``attempt`` is 1-based) and
  ``ON_ERROR`` (before an error is raised to the caller) only observe: their
  results are ignored.
- Hooks of one event run one after another in registration order; all of
  them run (no short-circuit). A hook that raises is a bug of the hook: the
  exception propagates and fails the call.
- ``ON_TURN_START``, ``ON_TURN_END`` and ``ON_PLAN_STEP_COMPLETE`` are fired by the
  agent layer, not the provider: a session fires the turn events through the executor
  given as ``agcore_actors.agent.TurnHooks(events=...)`` (``turn_index``, ``session``,
  and ``usage`` at the end), ``agcore_actors.agent.execute_plan(..., hooks=...)`` the
  plan-step event after each step (``plan_step_index``). They only observe.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable

import attrs

from ._request import ChatRequest
from ._usage import Usage


class HookEvent(enum.Enum):
    """When a hook runs."""

    PRE_REQUEST = "pre_request"
    POST_REQUEST = "post_request"
    ON_RETRY = "on_retry"
    ON_ERROR = "on_error"
    ON_TURN_START = "on_turn_start"
    ON_TURN_END = "on_turn_end"
    ON_PLAN_STEP_COMPLETE = "on_plan_step_complete"


@attrs.frozen
class HookContext:
    """What a hook is told about the call it runs for."""

    event: HookEvent
    provider: str = ""
    request: ChatRequest | None = None
    error: BaseException | None = None
    #: 0 except for ON_RETRY, where it is the retry number (1-based).
    attempt: int = 0
    #: Seconds the call waits before the retry (ON_RETRY only).
    delay: float | None = None
    usage: Usage | None = None
    #: The turn's 0-based number in its session (turn events only).
    turn_index: int | None = None
    #: The step's 0-based index in its plan (ON_PLAN_STEP_COMPLETE only).
    plan_step_index: int | None = None
    #: The session of the turn (turn events only).
    session: str = ""


@attrs.frozen
class HookResult:
    """A hook's answer; only PRE_REQUEST hooks can block."""

    should_block: bool = False
    reason: str | None = None


#: Let the request go ahead.
ALLOW = HookResult()


def block(reason: str | None = None) -> HookResult:
    """Refuse the request for ``reason``."""
    return HookResult(True, reason)


Hook = Callable[[HookContext], Awaitable[HookResult | None]]

DEFAULT_BLOCK_REASON = "Blocked by pre-request hook"


class HookExecutor:
    """An ordered list of (event, hook); :meth:`execute` runs those of one event."""

    __slots__ = ("_hooks",)

    def __init__(self) -> None:
        self._hooks: list[tuple[HookEvent, Hook]] = []

    def register(self, event: HookEvent, hook: Hook) -> HookExecutor:
        """Run ``hook`` on ``event``, after those registered before; returns self."""
        self._hooks.append((event, hook))
        return self

    def __bool__(self) -> bool:
        return bool(self._hooks)

    def has(self, event: HookEvent) -> bool:
        """Whether any hook runs on ``event``."""
        return any(e is event for e, _ in self._hooks)

    async def execute(self, ctx: HookContext) -> list[HookResult]:
        """Run the hooks of ``ctx.event`` in order; their results (None counts as ALLOW)."""
        results: list[HookResult] = []
        for event, hook in self._hooks:
            if event is ctx.event:
                result = await hook(ctx)
                results.append(ALLOW if result is None else result)
        return results

    async def block_reason(self, ctx: HookContext) -> str | None:
        """Run the PRE_REQUEST hooks; the first blocking reason, or None to go ahead."""
        for result in await self.execute(ctx):
            if result.should_block:
                return result.reason or DEFAULT_BLOCK_REASON
        return None
