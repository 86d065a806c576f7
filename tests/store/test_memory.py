"""The in-memory backend's own mechanics, through its primitives: what it derives rather
than stores (whether a message is a tool message, each entry's turn and time) reads back
exactly as written, its index orders sessions that share a time by id, and a session
after one tool turn stays small. (Its behaviour under the protocol, the same as
SQLite's, is ``test_stateful.py``'s.)"""

from __future__ import annotations

import gc
import math
import tracemalloc
import typing

import hypothesis.strategies as st
from hypothesis import given, settings

from agcore_actors.llm import (
    AssistantMessage,
    DeveloperMessage,
    FunctionCall,
    FunctionMessage,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from agcore_actors.store import LogEntry, SessionRecord, _ops
from agcore_actors.store import messages as sm
from agcore_actors.store.lowlevel import InMemorySessionBackend

ONE_OF_EACH: list[Message] = [
    SystemMessage("be brief"),
    DeveloperMessage("be briefer", name="dev"),
    UserMessage("tool?"),
    AssistantMessage(tool_calls=[ToolCall("c1", FunctionCall("tool", "{}"))]),
    ToolMessage("tool", "c1"),
    FunctionMessage(None, "tool"),
    AssistantMessage("tool"),
]


text = st.text(max_size=6)
names = st.none() | text
contents = text | st.lists(st.builds(TextPart, text), max_size=2)
tool_calls = st.lists(st.builds(ToolCall, text, st.builds(FunctionCall, text, text)), max_size=2)
#: Every kind of message, with the fields that change how it encodes.
messages = st.one_of(
    st.builds(SystemMessage, contents, names),
    st.builds(DeveloperMessage, contents, names),
    st.builds(UserMessage, contents, names),
    st.builds(
        AssistantMessage,
        content=st.none() | contents,
        reasoning_content=names,
        refusal=names,
        name=names,
        tool_calls=st.none() | tool_calls,
    ),
    st.builds(ToolMessage, contents, text),
    st.builds(FunctionMessage, st.none() | contents, text),
)


def new_session(backend: InMemorySessionBackend, session: str, now: float = 1.0) -> None:
    record = SessionRecord(id=session, created_at=now, updated_at=now, version=1)
    backend.put_record(record, new=True, summary=[])


def write(backend: InMemorySessionBackend, session: str, messages: list[Message]) -> None:
    """Append ``messages`` in one write, as a turn does (one turn, one time)."""
    at = len(backend.messages(session, 0, 10**9))
    backend.append(
        session,
        [
            LogEntry(index=at + i, turn="t", created_at=2.0, message=m)
            for i, m in enumerate(messages)
        ],
    )


def test_the_samples_cover_every_message_kind() -> None:
    assert {type(m) for m in ONE_OF_EACH} == set(typing.get_args(Message))


@settings(max_examples=200, deadline=None)
@given(st.lists(messages, max_size=8), st.lists(messages, max_size=4))
def test_is_tool_and_group_start_agree_with_the_message_kind_for_every_message(
    first: list[Message], second: list[Message]
) -> None:
    backend = InMemorySessionBackend()
    new_session(backend, "s")
    log = [*ONE_OF_EACH, *first, *second]
    write(backend, "s", [*ONE_OF_EACH, *first])
    write(backend, "s", second)
    assert backend.messages("s", 0, len(log)) == log
    for index, message in enumerate(log):
        assert backend.is_tool("s", index) == isinstance(message, ToolMessage)
        start = index
        while start > 0 and isinstance(log[start], ToolMessage):
            start -= 1
        assert backend.group_start("s", index) == start


TIMES = [0.0, -0.0, 1, 1.0, 2.5, math.nan, math.inf]
batches = st.lists(
    st.lists(
        st.tuples(st.sampled_from(["t1", "t2"]), st.sampled_from(TIMES)), min_size=1, max_size=4
    ),
    max_size=5,
)


def shown(entries: list[LogEntry]) -> list[tuple[int, str, str, str, Message]]:
    """Entries compared as they read back: -0.0 is not 0.0, 1 is not 1.0, nan is nan."""
    return [
        (e.index, e.turn, type(e.created_at).__name__, repr(e.created_at), e.message)
        for e in entries
    ]


@settings(max_examples=200, deadline=None)
@given(batches, st.booleans())
def test_entries_read_back_each_turn_and_time_as_written_in_every_range(
    writes: list[list[tuple[str, float]]], same_time_object: bool
) -> None:
    backend = InMemorySessionBackend()
    new_session(backend, "s")
    written: list[LogEntry] = []
    for batch in writes:
        shared = batch[0][1]  # a turn's entries share one time object, as _ops writes them
        entries = [
            LogEntry(
                index=len(written) + i,
                turn=turn,
                created_at=shared if same_time_object and at == shared else at,
                message=UserMessage(f"m{len(written) + i}"),
            )
            for i, (turn, at) in enumerate(batch)
        ]
        backend.append("s", entries)
        written += entries
    for start in range(len(written) + 1):
        for stop in range(start, len(written) + 1):
            assert shown(backend.entries("s", start, stop)) == shown(written[start:stop])


def test_facts_read_back_after_every_kind_of_write() -> None:
    backend = InMemorySessionBackend()
    new_session(backend, "s")
    assert backend.facts("s") == {}
    backend.update_facts("s", ["missing"], {})
    assert backend.facts("s") == {}
    given_values = {"b": "2", "a": "1"}
    backend.update_facts("s", [], given_values)
    given_values["c"] = "3"  # the caller's dict is not the store's
    assert list(backend.facts("s").items()) == [("a", "1"), ("b", "2")]
    backend.update_facts("s", ["a", "b"], {})
    assert backend.facts("s") == {}
    backend.update_facts("s", ["a"], {"a": "again"})
    assert backend.facts("s") == {"a": "again"}


def test_a_summary_reads_back_and_an_empty_one_replaces_it() -> None:
    backend = InMemorySessionBackend()
    new_session(backend, "s")
    assert backend.summary("s") == []
    record = backend.record("s")
    assert record is not None
    backend.put_record(record, new=False, summary=[UserMessage("so far")])
    assert backend.summary("s") == [UserMessage("so far")]
    backend.put_record(record, new=False)
    assert backend.summary("s") == [UserMessage("so far")]
    backend.put_record(record, new=False, summary=[])
    assert backend.summary("s") == []


index_ops = st.lists(
    st.tuples(st.sampled_from("abcdef"), st.sampled_from([1.0, 2.0, 3.0]), st.booleans()),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(index_ops)
def test_pages_follow_updated_at_then_id_when_sessions_share_a_time(
    ops: list[tuple[str, float, bool]],
) -> None:
    backend = InMemorySessionBackend()
    model: dict[str, float] = {}
    for session, at, delete in ops:
        if delete:
            assert backend.delete([session]) == ([session] if session in model else [])
            model.pop(session, None)
            continue
        record = SessionRecord(id=session, created_at=0.0, updated_at=at, version=1)
        backend.put_record(record, new=session not in model)
        model[session] = at
    keys = sorted((at, session) for session, at in model.items())

    def ids(records: list[SessionRecord]) -> list[tuple[float, str]]:
        return [(r.updated_at, r.id) for r in records]

    assert ids(backend.page(None, None, None, 100)) == keys
    for i, key in enumerate(keys):
        assert ids(backend.page(None, None, key, 100)) == keys[i + 1 :]
        assert ids(backend.page(None, None, key, 2)) == keys[i + 1 : i + 3]
    for before in (1.0, 2.0, 3.0, 4.0):
        assert ids(backend.page(before, None, None, 100)) == [k for k in keys if k[0] < before]


def one_tool_turn(backend: InMemorySessionBackend, i: int, now: float) -> None:
    """What the agent's StoreTurns writes for one turn calling one tool, through _ops."""
    session, turn, call = f"session-{i:05d}", f"turn-{i:05d}", f"call-{i:05d}"
    begun = _ops.begin(
        backend,
        sm.BeginTurn(
            session=session,
            turn=turn,
            expected_version=0,
            messages=[UserMessage("What is 2 + 3?")],
            agent="calc",
        ),
        now,
    )
    answer: list[Message] = [
        AssistantMessage(tool_calls=[ToolCall(call, FunctionCall("add", '{"a":2,"b":3}'))]),
        ToolMessage("5", call),
        AssistantMessage("5"),
    ]
    commit = sm.CommitTurn(
        session=session,
        turn=turn,
        expected_version=begun.version,
        messages=answer,
        usage_delta=Usage(10, 5),
        agent="calc",
    )
    _ops.commit(backend, commit, now + 1.0)


def test_a_session_after_one_tool_turn_keeps_under_1250_bytes() -> None:
    # Everything the store keeps of it (its record, id and turn strings included): 1,158
    # bytes on CPython 3.11; 1,575 when each message had its own row tuple.
    backend = InMemorySessionBackend()
    for i in range(100):  # the index and the dict past their first growth
        one_tool_turn(backend, 100_000 + i, float(i))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(1_000):
            one_tool_turn(backend, i, 1_000.0 + 2 * i)
        gc.collect()
        per_session = (tracemalloc.get_traced_memory()[0] - before) / 1_000
    finally:
        tracemalloc.stop()
    assert per_session < 1_250


def test_a_log_of_many_writes_reads_back_every_entry() -> None:
    backend = InMemorySessionBackend()
    new_session(backend, "s")
    written: list[LogEntry] = []
    for w in range(60):  # past the runs kept in a tuple
        turn: list[Message] = [UserMessage(f"q{w}"), AssistantMessage(f"a{w}")]
        entries = [
            LogEntry(index=len(written) + i, turn=f"t{w // 2}", created_at=float(w), message=m)
            for i, m in enumerate(turn[: 1 + w % 2])
        ]
        backend.append("s", entries)
        written += entries
    assert shown(backend.entries("s", 0, len(written))) == shown(written)
    assert shown(backend.entries("s", 40, 70)) == shown(written[40:70])
