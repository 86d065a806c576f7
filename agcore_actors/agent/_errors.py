"""The agent layer's leaves of the error tree.

Errors of the layers below (:class:`~agcore_actors.llm.LlmError`,
:class:`~agcore_actors.tools.ToolError`, ...) reach the caller of a turn as they were
raised: the agent layer does not wrap them. These are the errors of its own:

- :class:`AgentConfigError` — a bundle or agent that cannot run (missing provider, ...);
- :class:`PlanParseError` — a plan text that does not have the accepted shape;
- :class:`LimitExceeded` — a turn hit ``max_tool_turns`` or ``max_turns`` (both per
  turn), a limit of its :class:`~._budget.Budget` (tokens, cost, tool calls; per turn
  or per session), or the turn's deadline (:class:`TurnTimeout`);
- :class:`HookBlocked` — a turn-start hook refused the turn;
- :class:`GuardrailBlocked` — an input guardrail refused the turn, or an output
  guardrail blocked its answer (the turn's status is ``blocked``);
- :class:`HookFailed` — a guardrail or tool hook raised (a bug of the agent's code);
- :class:`OutputValidationError` — the final answer never matched the declared output
  type within the allowed re-asks;
- :class:`SessionBusy` — a session's queue of turns is full;
- :class:`SessionSuspended` — a new turn while the session's turn waits for answers;
- :class:`StaleAnswer` — an answer for a turn that no longer waits for it (cancelled,
  finished, unknown; also ``LookupError``);
- :class:`PeerFailed` — an actor the turn asked (provider, tool executor, compactor,
  store) failed with an error that is not one of ours: a bug there, which its own
  supervisor handles; the turn fails, the session goes on.
"""

from __future__ import annotations

from .._errors import AgcoreError

__all__ = [
    "AgentConfigError",
    "AgentError",
    "GuardrailBlocked",
    "HookBlocked",
    "HookFailed",
    "LimitExceeded",
    "OutputValidationError",
    "PeerFailed",
    "PlanParseError",
    "SessionBusy",
    "SessionParked",
    "SessionSuspended",
    "StaleAnswer",
    "TurnTimeout",
]


class AgentError(AgcoreError):
    """Base class of the agent layer's own errors."""

    kind = "agent"


class AgentConfigError(AgentError, ValueError):
    """The bundle or the agent cannot run as configured (e.g. ``missing provider``)."""

    kind = "agent_config"


class PlanParseError(AgentError, ValueError):
    """A plan text does not have the accepted shape; ``reason`` says what is wrong."""

    kind = "plan_parse"

    def __init__(self, reason: str) -> None:
        super().__init__(f"cannot parse plan: {reason}")
        self.reason = reason


class LimitExceeded(AgentError):
    """A configured limit ended the turn: ``limit`` names it, ``value`` is its setting,
    ``used`` what was spent when it was found exceeded (None when not counted)."""

    kind = "limit_exceeded"

    def __init__(
        self, limit: str, value: float, detail: str = "", *, used: float | None = None
    ) -> None:
        extra = f": {detail}" if detail else ""
        if used is not None and not detail:
            extra = f": {used:g} used"
        super().__init__(f"limit {limit} ({value:g}) exceeded{extra}")
        self.limit = limit
        self.value = value
        self.used = used


class TurnTimeout(LimitExceeded, TimeoutError):
    """The turn ran past its deadline; everything it started was cancelled."""

    kind = "turn_timeout"

    def __init__(self, seconds: float) -> None:
        super().__init__("turn_timeout", seconds, f"the turn took longer than {seconds:g} s")
        self.seconds = seconds


class HookBlocked(AgentError):
    """A turn-start hook refused the turn; nothing was sent to the model."""

    kind = "hook_blocked"

    def __init__(self, reason: str) -> None:
        super().__init__(f"turn blocked by a hook: {reason}")
        self.reason = reason


class GuardrailBlocked(AgentError):
    """A guardrail refused the turn's input (nothing was stored or sent) or blocked its
    answer (the turn was committed as ``blocked``); ``stage`` says which."""

    kind = "guardrail_blocked"

    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(f"{stage} blocked by a guardrail: {reason}")
        self.stage = stage
        self.reason = reason


class HookFailed(AgentError):
    """A guardrail or tool hook of the agent raised ``cause`` (a bug of that code): the
    turn fails, the session goes on."""

    kind = "hook_failed"

    def __init__(self, hook: str, cause: BaseException) -> None:
        super().__init__(f"{hook} hook failed: {type(cause).__name__}: {cause}")
        self.hook = hook
        self.cause = cause


class OutputValidationError(AgentError, ValueError):
    """The model's final answer did not match the agent's output type after
    ``attempts`` tries; ``detail`` is the last validation error."""

    kind = "output_validation"

    def __init__(self, output_type: str, attempts: int, detail: str) -> None:
        super().__init__(
            f"the answer is not a valid {output_type} after {attempts} attempt(s): {detail}"
        )
        self.output_type = output_type
        self.attempts = attempts
        self.detail = detail


class SessionBusy(AgentError):
    """The session already has as many turns queued as it accepts."""

    kind = "session_busy"

    def __init__(self, session: str, queued: int) -> None:
        super().__init__(f"session {session!r} is busy ({queued} turn(s) queued)")
        self.session = session
        self.queued = queued

    def is_retryable(self) -> bool:
        return True


class PeerFailed(AgentError):
    """An actor the turn asked failed with ``cause``: a bug of that actor, or the actor
    crashing or stopping while it handled the ask."""

    kind = "peer_failed"

    def __init__(self, actor: str, cause: BaseException) -> None:
        super().__init__(f"actor {actor!r} failed: {type(cause).__name__}: {cause}")
        self.actor = actor
        self.cause = cause


class SessionParked(AgentError):
    """The session crashed too often and is parked until it is closed or deleted."""

    kind = "session_parked"

    def __init__(self, session: str, crashes: int) -> None:
        super().__init__(f"session {session!r} is parked after {crashes} crashes")
        self.session = session
        self.crashes = crashes


class SessionSuspended(AgentError):
    """The session's turn ``turn`` is suspended, waiting for answers to ``calls``: answer
    (``AnswerTurn``) or cancel it before the next turn."""

    kind = "session_suspended"

    def __init__(self, session: str, turn: str, calls: list[str]) -> None:
        super().__init__(
            f"session {session!r}: turn {turn!r} is suspended, waiting for answers to {calls}"
        )
        self.session = session
        self.turn = turn
        self.calls = calls


class StaleAnswer(AgentError, LookupError):
    """An answer for call ``call_id`` of turn ``turn`` that no turn waits for: the turn
    was ``cancelled``, is ``finished``, or is ``unknown`` (``why``). Nothing changed."""

    kind = "stale_answer"

    def __init__(self, turn: str, call_id: str, why: str) -> None:
        super().__init__(f"no suspended turn {turn!r} waits for call {call_id!r} ({why})")
        self.turn = turn
        self.call_id = call_id
        self.why = why
