"""What the soak checks in a store after a run: every acknowledged turn is there, and
every transcript is valid. Pure reading of the SQLite file; shares no code with the
transcript rules it checks (``agcore_actors.agent.transcript_errors`` is asked too, as a
second opinion).

A stored transcript is *valid* when:

1. it is a sequence of turns, each a contiguous run of log entries with one turn id
   (no turn's messages interleave with another's, no turn id comes back later);
2. a turn opens with exactly one user message, its first entry, and has no other;
3. after it come zero or more *steps* — an assistant message with tool calls, then at
   once exactly one tool message per call of it (any order, nothing else between), call
   ids unique in the whole transcript — and at most one *final* assistant message with
   no tool calls, which is the turn's last entry;
4. the session has no open turn (``record.open_turn is None``): nothing partial is
   committed as if it were done.

An acknowledged turn (``{"session", "turn", "k", "status", "text"}``) is *present* when
its turn id is in the log and opens with the user message the driver sent; an
acknowledged ``completed`` turn also ends with a final assistant message whose text is
the one the host returned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agcore_actors.agent import transcript_errors
from agcore_actors.llm import AssistantMessage, ToolMessage, UserMessage
from agcore_actors.store.lowlevel import SqliteSessionBackend
from agcore_actors.store.messages import LogEntry


def turn_text(session: str, k: int) -> str:
    """The user's message of turn ``k`` of ``session``."""
    return f"{session} turn {k}: what is 2 + 3?"


def entry_errors(entries: Sequence[LogEntry]) -> list[str]:
    """Why the log ``entries`` of one session is not valid (rules 1-3); empty if it is."""
    errors: list[str] = []
    seen_turns: set[str] = set()
    seen_calls: set[str] = set()
    i = 0
    while i < len(entries):
        turn = entries[i].turn
        if turn in seen_turns:
            errors.append(f"entry {entries[i].index}: turn {turn!r} comes back")
        seen_turns.add(turn)
        j = i
        while j < len(entries) and entries[j].turn == turn:
            j += 1
        errors += _turn_errors([e.message for e in entries[i:j]], turn, seen_calls)
        i = j
    return errors


def _turn_errors(messages: list[Any], turn: str, seen_calls: set[str]) -> list[str]:
    where = f"turn {turn!r}"
    if not messages or not isinstance(messages[0], UserMessage):
        return [f"{where}: does not open with a user message"]
    errors: list[str] = []
    i = 1
    while i < len(messages):
        message = messages[i]
        if not isinstance(message, AssistantMessage):
            return [
                *errors,
                f"{where}, message {i}: {type(message).__name__} where an assistant's was due",
            ]
        calls = [c.id for c in message.tool_calls or []]
        if not calls:
            if i != len(messages) - 1:
                errors.append(f"{where}, message {i}: a final answer that is not the last")
            return errors
        for call in calls:
            if call in seen_calls:
                errors.append(f"{where}: call id {call!r} used twice")
            seen_calls.add(call)
        answers = messages[i + 1 : i + 1 + len(calls)]
        ids = [m.tool_call_id for m in answers if isinstance(m, ToolMessage)]
        if len(ids) != len(calls) or sorted(ids) != sorted(calls):
            errors.append(f"{where}, message {i}: calls {calls} answered by {ids}")
        i += 1 + len(calls)
    return errors


@dataclass
class Findings:
    """What :func:`check_store` found."""

    sessions: int = 0
    messages: int = 0
    turns_stored: int = 0
    acknowledged: int = 0
    #: Acknowledged turns that are missing or not as acknowledged.
    lost: list[str] = field(default_factory=list)
    #: Turns stored twice: a turn id that comes back after another turn, or an
    #: acknowledged turn whose user message opens more than one stored turn of that id.
    duplicated: list[str] = field(default_factory=list)
    #: Sessions whose transcript is not valid, with why.
    invalid: dict[str, list[str]] = field(default_factory=dict)
    open_turns: list[str] = field(default_factory=list)
    integrity: str = ""
    #: Stored tool results by how they begin (what the tools and faults produced).
    tool_results: dict[str, int] = field(default_factory=dict)


def read_acks(path: Path) -> list[dict[str, Any]]:
    """The acknowledgements in ``path`` (a line cut by a kill promises nothing)."""
    if not path.exists():
        return []
    acks = []
    for line in path.read_text().splitlines(keepends=True):
        if line.endswith("\n"):
            acks.append(json.loads(line))
    return acks


def check_store(db: Path, acks: Iterable[dict[str, Any]], sessions: Iterable[str]) -> Findings:
    """Check ``sessions`` in the store file ``db`` against the acknowledgements."""
    found = Findings()
    by_session: dict[str, list[dict[str, Any]]] = {}
    for ack in acks:
        by_session.setdefault(ack["session"], []).append(ack)
    backend = SqliteSessionBackend(db)
    try:
        found.integrity = backend.integrity_check()
        for session in sessions:
            found.sessions += 1
            record = backend.record(session)
            entries = [] if record is None else backend.entries(session, 0, record.last_index + 1)
            found.messages += len(entries)
            found.turns_stored += len({e.turn for e in entries})
            for entry in entries:
                if isinstance(entry.message, ToolMessage):
                    what = _result_kind(entry.message)
                    found.tool_results[what] = found.tool_results.get(what, 0) + 1
            found.duplicated += _duplicated(session, entries)
            errors = entry_errors(entries)
            errors += transcript_errors([e.message for e in entries])
            if record is not None and record.open_turn is not None:
                found.open_turns.append(session)
                errors.append(f"turn {record.open_turn!r} is still open")
            if errors:
                found.invalid[session] = errors
            for ack in by_session.get(session, []):
                found.acknowledged += 1
                if not _present(ack, entries):
                    found.lost.append(f"{session} {ack['turn']} ({ack['status']})")
    finally:
        backend.close()
    return found


def _duplicated(session: str, entries: Sequence[LogEntry]) -> list[str]:
    runs: dict[str, int] = {}
    users: dict[str, int] = {}
    previous = None
    for entry in entries:
        if entry.turn != previous:
            runs[entry.turn] = runs.get(entry.turn, 0) + 1
            previous = entry.turn
        if isinstance(entry.message, UserMessage):
            users[entry.turn] = users.get(entry.turn, 0) + 1
    return [f"{session} {turn}" for turn in runs if runs[turn] > 1 or users.get(turn, 0) > 1]


def _result_kind(message: ToolMessage) -> str:
    text = message.content if isinstance(message.content, str) else "parts"
    if not text.startswith("Error"):
        return "ok"
    return re.sub(r"[0-9.]+", "N", text.split("\n")[0])[:60]


def _present(ack: dict[str, Any], entries: Sequence[LogEntry]) -> bool:
    mine = [e.message for e in entries if e.turn == ack["turn"]]
    if not mine or mine[0] != UserMessage(turn_text(ack["session"], ack["k"])):
        return False
    if ack["status"] != "completed":
        return True
    last = mine[-1]
    return (
        isinstance(last, AssistantMessage) and not last.tool_calls and last.content == ack["text"]
    )
