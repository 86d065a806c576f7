"""The concurrency checker's plans, its history of what callers were told, and the
model it checks the host and the store against.

Nothing here imports the runtime's logic: the transcript rule, what "stored exactly
once" means and what a caller may be told are written out again from the promises of
README.md and docs/architecture.md, so a bug shared by the runtime and its own checks
(``transcript_errors``) cannot hide here. Only the chat message *types* are read.

A scenario is plain frozen data (hypothesis draws and shrinks it):
``Scenario(rounds=[Round(callers=[[Op, ...], ...], store_fault, restart_after)])``.
Every op's user text is unique (``u<n>``) and the scripted model answers it with
``answer(text)``, so a stored transcript says which turn each message belongs to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agcore_actors.llm import AssistantMessage, ToolMessage, UserMessage

#: Function tools of the rig (see checker_rig) and the subagent, by what they do.
ToolKind = Literal["ok", "slow", "fail", "guarded", "helper"]
#: How the model numbers the calls of one reply.
IdStyle = Literal["unique", "empty", "dup", "reused"]
#: What the model does at model call ``fail_at`` of the turn.
ProviderFault = Literal["none", "error", "bug", "stall"]
#: Where the session's store port raises a bug (not a typed error): the session crashes.
CrashAt = Literal["none", "begin", "commit"]
StoreFault = Literal["full", "readonly", "busy", "io"]

#: Error kinds a session's own serial writes must never produce: a conflict or an invalid
#: transcript told to a caller means the session's view of its store went stale or it
#: tried to write what no provider accepts (a wedged session).
NEVER_TOLD = frozenset({"store_conflict", "store_invalid_transcript", "limit_exceeded"})

#: The kind of the typed error the rig's executor refuses a jammed batch with
#: (``ToolThreadsExhausted``): only a turn whose plan jams a batch may be told it.
EXECUTOR_ERROR = "tool_threads_exhausted"
#: Every error kind a caller may be told (failed, or raised), each explained by a fault
#: the checker injects: anything else is a violation (P2).
TOLD_KINDS = frozenset(
    {
        "rate_limit",  # the provider's typed error
        "turn_timeout",  # a stalled model (or a slow tool: the deadline comes first)
        "peer_failed",  # a bug in provider code
        "actor_crashed",  # an actor the caller waited on crashed (the provider, a session)
        "actor_parked",  # the provider crashed again and again: parked for a while
        "actor_stopped",  # a session crashed with turns queued on it
        "store_storage",  # the store's writes failing (an I/O error, busy, full, read-only)
        "store_storage_busy",
        "store_storage_unavailable",
        EXECUTOR_ERROR,  # the executor refused a batch
    }
)
#: What a caller is told when its session's actor crashed under its turn (the error
#: names ``session:<id>``; the store's actor may crash too, under the ``io`` fault): only
#: a crash planted on that session (a bug at its begin or commit) may cause it (P12).
SESSION_GONE = frozenset({"typed:actor_crashed", "typed:actor_stopped"})
#: Kinds that a bug in provider code, anywhere in the scenario so far, explains.
PROVIDER_BUG_KINDS = frozenset({"peer_failed", "actor_crashed", "actor_parked"})
#: The note that ends a streamed answer cut short (agent/_transcript.py ``INTERRUPTED``,
#: written out again: the model and ``sessions show`` rely on the exact form).
INTERRUPTED = "[interrupted]"


@dataclass(frozen=True)
class TurnPlan:
    #: Tool batches the model asks for, one per model call, before it answers.
    batches: tuple[tuple[ToolKind, ...], ...] = ()
    ids: IdStyle = "unique"
    provider: ProviderFault = "none"
    fail_at: int = 0
    crash: CrashAt = "none"
    #: The executor refuses batch ``jam`` (0-based) as a whole with a typed error
    #: (:data:`EXECUTOR_ERROR`); None, or past the last batch: it never does.
    jam: int | None = None

    @property
    def jammed(self) -> bool:
        """Whether the turn reaches its jammed batch unless something ends it first."""
        return self.jam is not None and self.jam < len(self.batches)


@dataclass(frozen=True)
class Op:
    """One turn a caller runs, and how the caller (or a peer) interferes with it."""

    session: int
    via: Literal["run", "submit"] = "run"
    turn: TurnPlan = TurnPlan()
    #: Virtual seconds the caller waits before it starts the turn.
    pause: float = 0.0
    #: The caller gives up (is cancelled) after this many virtual seconds...
    cancel_after: float | None = None
    #: ... or after this many of its own checkpoints (activation, begin: the first few).
    cancel_ticks: int | None = None
    #: A ``submit`` reader leaves the stream after this many events.
    leave_after: int | None = None
    #: A peer sends ``CancelTurn`` to the session this many seconds after the start.
    cancel_turn_at: float | None = None
    approve: Literal["allow", "deny", "ignore"] = "allow"


@dataclass(frozen=True)
class Round:
    callers: tuple[tuple[Op, ...], ...]
    #: Writes fail with this typed storage error from ``start`` for ``seconds``.
    store_fault: tuple[StoreFault, float, float] | None = None
    restart_after: bool = False


@dataclass(frozen=True)
class Scenario:
    seed: int
    sessions: int
    idle_ttl: float
    max_sessions: int
    rounds: tuple[Round, ...]


def answer(text: str) -> str:
    """The model's final answer to the user text ``text``."""
    return f"answer to {text}"


# -- the history -------------------------------------------------------------------------

Told = Literal["completed", "failed", "cancelled", "raised", "gave_up", "left"]


@dataclass
class Record:
    text: str
    caller: int
    session: str
    op: Op | None
    told: Told | None = None
    detail: str = ""
    #: The round of the scenario the turn ran in (counted over hosts).
    round: int = 0
    #: Its round made the store's writes fail for a while.
    store_fault: bool = False
    #: The answer text a ``submit`` reader received (TextDelta, ContentStarted), in order.
    received: list[str] = field(default_factory=list)


@dataclass
class History:
    """What each caller asked and was told, in the order callers were told it."""

    records: dict[str, Record] = field(default_factory=dict)
    by_caller: dict[int, list[str]] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    counter: int = 0
    #: The round running now, and whether its store faults.
    round: int = 0
    store_fault: bool = False

    def start(self, caller: int, session: str, op: Op | None) -> str:
        text = f"u{self.counter}"
        self.counter += 1
        self.records[text] = Record(
            text, caller, session, op, round=self.round, store_fault=self.store_fault
        )
        self.by_caller.setdefault(caller, []).append(text)
        return text

    def tell(self, text: str, told: Told, detail: str = "", actor: str = "") -> None:
        """Record what the caller of ``text`` was told; ``actor``: the actor a raised
        ``ActorCrashed``/``ActorStopped`` names."""
        record = self.records[text]
        assert record.told is None, (text, record.told, told)
        record.told, record.detail = told, detail
        if told == "failed" and detail in NEVER_TOLD:
            self.violations.append(f"{text} on {record.session}: told failed with {detail}")
        if told == "raised" and not detail.startswith(("typed:", "planted:")):
            self.violations.append(f"{text} on {record.session}: raised an untyped {detail}")
        kind = ""
        if told == "failed" and detail not in NEVER_TOLD:  # those: reported above
            kind = detail
        elif told == "raised" and detail.startswith("typed:"):
            kind = detail.removeprefix("typed:")
        if kind and kind not in TOLD_KINDS:
            self.violations.append(f"{text} on {record.session}: told {told} with {kind}")
        own = actor == f"session:{record.session}"
        if detail in SESSION_GONE and own and not self.crash_planted(record.session):
            self.violations.append(
                f"{text} on {record.session}: told {told} {detail}, no crash was planted there"
            )
        jammed = record.op is not None and record.op.turn.jammed
        if detail.removeprefix("typed:") == EXECUTOR_ERROR and not jammed:
            self.violations.append(f"{text} on {record.session}: told {kind}, jammed no batch")
        if told == "completed" and jammed:
            self.violations.append(
                f"{text} on {record.session}: told completed, the executor refused a batch"
            )

    def crash_planted(self, session: str) -> bool:
        """Whether a turn on ``session`` so far was planned to crash it."""
        return any(
            r.session == session and r.op is not None and r.op.turn.crash != "none"
            for r in self.records.values()
        )

    def executor_problems(self, round: int) -> list[str]:
        """P10: a turn of ``round`` whose plan jams a batch, and that nothing else could
        end first (its caller stays, its model does not fail and no slow tool runs before
        that batch, no store fault, crash or CancelTurn of its session in the round), is
        told ``failed`` with the executor's error: a clean failed turn, whether or not a
        subagent ran beside the batch. (After a bug in provider code, the provider may be
        crashed or parked at the turn's model call: those kinds are allowed then.)"""
        records = list(self.records.values())
        bugs = any(r.op is not None and r.op.turn.provider == "bug" for r in records)
        # Sessions whose running turn something else may end in this round: a crash, or
        # a CancelTurn (which cancels whichever turn the session is running).
        hit = {
            r.session
            for r in records
            if r.round == round
            and r.op is not None
            and (r.op.turn.crash != "none" or r.op.cancel_turn_at is not None)
        }
        problems = []
        for record in records:
            op = record.op
            if record.round != round or op is None or not op.turn.jammed:
                continue
            plan = op.turn
            assert plan.jam is not None
            interfered = (
                record.store_fault
                or record.session in hit
                or (plan.provider != "none" and plan.fail_at <= plan.jam)
                # A slow tool runs into the turn's deadline first (the executor's default
                # timeout is longer than the rig's turn_timeout).
                or any("slow" in batch for batch in plan.batches[: plan.jam])
                or op.cancel_after is not None
                or op.cancel_ticks is not None
                or op.leave_after is not None
                or op.cancel_turn_at is not None
            )
            if interfered:
                continue
            if record.told == "failed" and record.detail == EXECUTOR_ERROR:
                continue
            if bugs and record.detail.removeprefix("typed:") in PROVIDER_BUG_KINDS:
                continue
            problems.append(
                f"{record.text} on {record.session}: the executor refused its batch "
                f"{plan.jam}, told {record.told} {record.detail}".rstrip()
            )
        return problems


# -- the transcript rule, written out again ----------------------------------------------


def _text(content: Any) -> str:
    return content if isinstance(content, str) else repr(content)


def transcript_problems(messages: Sequence[Any], open_turn: bool) -> list[str]:
    """Why ``messages`` is not a transcript every provider accepts; ``open_turn``: the
    stored record says a turn is open, so the last assistant message may still wait for
    its results. Rule: each call id of an assistant message is non-empty and unique in
    its message (servers that number calls per response reuse ids across messages and
    turns, which Chat Completions allows); each is answered by exactly one tool message,
    right after it (among its siblings), before any other message."""
    problems: list[str] = []
    waiting: dict[str, int] = {}  # call id -> how many results it still needs (1)
    for at, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            if waiting.get(message.tool_call_id, 0) != 1:
                problems.append(f"#{at}: result for {message.tool_call_id!r}, not awaited")
            else:
                waiting[message.tool_call_id] = 0
            continue
        if any(waiting.values()):
            problems.append(f"#{at}: calls unanswered before it: {sorted(waiting)}")
        waiting = {}
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls or ():
                if not call.id:
                    problems.append(f"#{at}: empty call id")
                if call.id in waiting:
                    problems.append(f"#{at}: call id {call.id!r} twice in one message")
                waiting[call.id] = 1
    if any(waiting.values()) and not open_turn:
        problems.append(f"end: calls unanswered in a closed transcript: {sorted(waiting)}")
    return problems


def interrupted_answer(pieces: Sequence[str]) -> str:
    """The stored form of an answer cut off after the reader received ``pieces``."""
    text = "".join(pieces)
    return f"{text}\n\n{INTERRUPTED}" if text else INTERRUPTED


def partial_answer_problems(record: Record, after: Sequence[Any] | None) -> list[str]:
    """P11: a streamed turn whose reader received answer text and that did not complete
    (cancelled by ``CancelTurn``, its reader gone, its deadline) is stored with one more
    assistant message, last: exactly the text the reader received, then the
    ``[interrupted]`` note. Not required where the store's writes were failing in its
    round (its commit may be lost: that is P4/P8's business) or its plan crashes the
    session at commit; a reader that left a turn that then completed is fine."""
    op = record.op
    if op is None or op.via != "submit" or not record.received or record.told == "completed":
        return []
    if record.store_fault or op.turn.crash != "none":
        return []
    where = f"{record.session}: turn {record.text}"
    if after is None:
        return [f"{where} streamed {''.join(record.received)!r} and is not stored"]
    if record.told in ("left", "gave_up") and looks_completed(record.text, after):
        return []
    expected = interrupted_answer(record.received)
    last = after[-1] if after else None
    if (
        isinstance(last, AssistantMessage)
        and not last.tool_calls
        and _text(last.content) == expected
    ):
        return []
    if last is None:
        stored = "nothing after its user message"
    elif isinstance(last, AssistantMessage):
        stored = f"{_text(last.content)!r}"
    else:
        stored = f"a {type(last).__name__}"
    return [
        f"{where} ({record.told}) is stored ending with {stored}; its reader received "
        f"{''.join(record.received)!r}"
    ]


def segments(messages: Sequence[Any]) -> list[tuple[str, list[Any]]]:
    """The transcript cut at user messages: ``(user text, the messages after it)``."""
    found: list[tuple[str, list[Any]]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            found.append((_text(message.content), []))
        elif found:
            found[-1][1].append(message)
    return found


def looks_completed(text: str, after: Sequence[Any]) -> bool:
    """Whether a turn is stored as completed: its last message is the final answer."""
    if not after:
        return False
    last = after[-1]
    return (
        isinstance(last, AssistantMessage)
        and not last.tool_calls
        and _text(last.content) == answer(text)
    )


def store_problems(
    history: History, session: str, messages: Sequence[Any], open_turn: bool
) -> list[str]:
    """Every property of one stored session against the history (see the module doc)."""
    problems = [f"{session} {p}" for p in transcript_problems(messages, open_turn)]
    cut = segments(messages)
    seen: dict[str, int] = {}
    for position, (text, after) in enumerate(cut):
        record = history.records.get(text)
        if record is None or record.session != session:
            problems.append(f"{session}: user message {text!r} no caller sent here")
            continue
        if text in seen:
            problems.append(f"{session}: turn {text} stored twice")
        seen[text] = position
        told = record.told
        if told in ("failed", "cancelled") and looks_completed(text, after):
            problems.append(f"{session}: turn {text} stored as completed, caller told {told}")
        problems += partial_answer_problems(record, after)
    for text, record in history.records.items():
        if record.session != session:
            continue
        if record.received and text not in seen:
            problems += partial_answer_problems(record, None)
        if record.told != "completed":
            continue
        if text not in seen:
            problems.append(f"{session}: acknowledged turn {text} is not stored (lost)")
        elif not looks_completed(text, cut[seen[text]][1]):
            problems.append(f"{session}: acknowledged turn {text} is not stored as completed")
    for texts in history.by_caller.values():
        acked = [seen[t] for t in texts if t in seen and history.records[t].told == "completed"]
        if acked != sorted(acked):
            problems.append(f"{session}: a caller's acknowledged turns are stored out of order")
    return problems
