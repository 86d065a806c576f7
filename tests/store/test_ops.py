"""The protocol's behaviour on each backend, request by request (no actor)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from agcore_actors.llm import AssistantMessage, Message, ToolMessage, Usage, assistant
from agcore_actors.store import (
    Conflict,
    InvalidRequest,
    InvalidTranscript,
    SessionNotFound,
    SessionRecord,
)
from agcore_actors.store import _ops as ops
from agcore_actors.store import messages as sm
from agcore_actors.store.lowlevel import Backend
from tests.store.backends import BACKENDS, open_backend
from tests.store.helpers import calls, problems, result, user


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    b = open_backend(request, tmp_path)
    yield b
    b.close()


def run(b: Backend, op: Any, msg: Any, now: float = 1.0) -> Any:
    """One request in its own batch, as the actor runs it."""
    (found,) = b.run_batch([lambda: op(b, msg, now)], write=True)
    return found.unwrap()


def turn(
    b: Backend, session: str, turn: str, first: list[Message], rest: list[Message], now: float = 1.0
) -> SessionRecord:
    record = b.record(session)
    version = 0 if record is None else record.version
    begun = run(
        b,
        ops.begin,
        sm.BeginTurn(session=session, turn=turn, expected_version=version, messages=first),
        now,
    )
    return run(  # type: ignore[no-any-return]
        b,
        ops.commit,
        sm.CommitTurn(session=session, turn=turn, expected_version=begun.version, messages=rest),
        now,
    )


def test_a_tail_is_extended_back_to_the_assistant_message_of_its_results(
    backend: Backend,
) -> None:
    rest: list[Message] = [calls("a", "b"), result("a"), result("b"), assistant("done")]
    turn(backend, "s", "t1", [user()], rest)
    loaded = run(backend, ops.load, sm.LoadSession("s", tail=2))  # would start at result("b")
    assert loaded.first_index == 1
    assert loaded.messages == rest
    assert not problems(loaded.history)
    assert run(backend, ops.load, sm.LoadSession("s", tail=0)).messages == []
    assert run(backend, ops.load, sm.LoadSession("s", tail=1)).messages == [assistant("done")]


def test_a_compaction_replaces_the_history_prefix_and_keeps_the_raw_log(
    backend: Backend,
) -> None:
    turn(backend, "s", "t1", [user("one")], [assistant("1")])
    record = run(
        backend,
        ops.begin,
        sm.BeginTurn(session="s", turn="t2", expected_version=2, messages=[user("two")]),
    )
    summary: list[Message] = [user("summary of one")]
    run(
        backend,
        ops.commit,
        sm.CommitTurn(
            session="s",
            turn="t2",
            expected_version=record.version,
            messages=[assistant("2")],
            compaction=sm.Compaction(2, summary),
        ),
    )
    loaded = run(backend, ops.load, sm.LoadSession("s"))
    assert loaded.record.compacted_upto == 2
    assert loaded.history == [user("summary of one"), user("two"), assistant("2")]
    raw = run(backend, ops.export, sm.ExportSession("s"))
    assert [e.message for e in raw.entries] == [
        user("one"),
        assistant("1"),
        user("two"),
        assistant("2"),
    ]
    assert raw.summary == summary


def test_a_compaction_never_cuts_a_result_from_its_call_nor_goes_back(backend: Backend) -> None:
    turn(backend, "s", "t1", [user()], [calls("a"), result("a"), assistant("x")])
    rec = run(
        backend, ops.begin, sm.BeginTurn(session="s", turn="t2", expected_version=2, messages=[])
    )

    def commit(upto: int, summary: list[Message]) -> Any:
        msg = sm.CommitTurn(
            session="s",
            turn="t2",
            expected_version=rec.version,
            compaction=sm.Compaction(upto, summary),
        )
        return run(backend, ops.commit, msg)

    with pytest.raises(InvalidTranscript):
        commit(2, [])  # message 2 is the result of call "a"
    with pytest.raises(InvalidTranscript):
        commit(1, [calls("z")])  # a summary with an open call
    with pytest.raises(InvalidRequest):
        commit(5, [])  # past the end
    assert commit(4, []).compacted_upto == 4
    assert run(backend, ops.load, sm.LoadSession("s")).history == []


def test_repair_answers_every_open_call_with_a_synthetic_result(backend: Backend) -> None:
    rec = run(
        backend,
        ops.begin,
        sm.BeginTurn(session="s", turn="t", expected_version=0, messages=[user()]),
    )
    rec = run(
        backend,
        ops.append_turn,
        sm.AppendTurn(
            session="s",
            turn="t",
            expected_version=rec.version,
            messages=[calls("a", "b", "c"), result("b")],
        ),
    )
    assert rec.pending_calls == ("a", "c")
    loaded = run(backend, ops.load, sm.LoadSession("s"))
    assert loaded.interrupted and problems(loaded.history)
    rec = run(backend, ops.repair, sm.RepairInterrupted("s", "t"))
    assert (rec.status, rec.open_turn, rec.pending_calls) == ("interrupted", None, ())
    loaded = run(backend, ops.load, sm.LoadSession("s"))
    assert not loaded.interrupted and not problems(loaded.history)
    assert loaded.messages[-2:] == [
        ToolMessage("Error: tool call interrupted", "a"),
        ToolMessage("Error: tool call interrupted", "c"),
    ]
    # The next turn starts from there.
    turn(backend, "s", "t2", [user()], [assistant("ok")])


def test_conflicts_say_why_and_carry_both_versions(backend: Backend) -> None:
    turn(backend, "s", "t1", [user()], [assistant("x")])
    with pytest.raises(Conflict) as caught:
        run(
            backend, ops.begin, sm.BeginTurn(session="s", turn="t", expected_version=1, messages=[])
        )
    assert (caught.value.reason, caught.value.expected, caught.value.actual) == ("version", 1, 2)
    assert not caught.value.is_retryable()
    with pytest.raises(Conflict) as caught:
        run(backend, ops.commit, sm.CommitTurn(session="s", turn="t1", expected_version=2))
    assert caught.value.reason == "no_open_turn"
    with pytest.raises(SessionNotFound):
        run(backend, ops.commit, sm.CommitTurn(session="x", turn="t", expected_version=1))


@pytest.mark.parametrize(
    "messages",
    [
        [result("nope")],
        [calls("a"), user()],
        [calls("a", "a")],
        [calls("a"), result("a"), result("a")],
    ],
    ids=["result-without-call", "call-unanswered", "call-id-twice", "answered-twice"],
)
def test_a_write_that_would_break_the_transcript_is_refused_whole(
    backend: Backend, messages: list[Message]
) -> None:
    with pytest.raises(InvalidTranscript):
        run(
            backend,
            ops.begin,
            sm.BeginTurn(session="s", turn="t", expected_version=0, messages=[user(), *messages]),
        )
    assert backend.record("s") is None


def test_a_turn_cannot_be_committed_with_calls_unanswered(backend: Backend) -> None:
    rec = run(
        backend,
        ops.begin,
        sm.BeginTurn(session="s", turn="t", expected_version=0, messages=[user()]),
    )
    with pytest.raises(InvalidTranscript):
        run(
            backend,
            ops.commit,
            sm.CommitTurn(session="s", turn="t", expected_version=1, messages=[calls("a")]),
        )
    after = backend.record("s")
    assert after == rec


def test_bad_arguments_are_refused(backend: Backend) -> None:
    for op, msg in [
        (ops.load, sm.LoadSession("s", tail=-1)),
        (ops.list_sessions, sm.ListSessions(limit=0)),
        (ops.list_sessions, sm.ListSessions(cursor="garbage")),
        (ops.expire, sm.ExpireSessions(1.0, limit=0)),
        (ops.begin, sm.BeginTurn(session="", turn="t", expected_version=0, messages=[])),
        (ops.begin, sm.BeginTurn(session="s", turn="", expected_version=0, messages=[])),
        (ops.update, sm.UpdateSession(session="s", expected_version=0, facts_set={"": "x"})),
    ]:
        with pytest.raises(InvalidRequest):
            run(backend, op, msg)
    rec = run(
        backend,
        ops.begin,
        sm.BeginTurn(session="s", turn="t", expected_version=0, messages=[user()]),
    )
    with pytest.raises(InvalidRequest):
        run(
            backend,
            ops.commit,
            sm.CommitTurn(
                session="s", turn="t", expected_version=rec.version, usage_delta=Usage(-1)
            ),
        )


def test_facts_are_set_after_removal_and_loaded_in_key_order(backend: Backend) -> None:
    run(
        backend,
        ops.update,
        sm.UpdateSession(session="s", expected_version=0, facts_set={"b": "1", "a": "2"}),
    )
    run(
        backend,
        ops.update,
        sm.UpdateSession(
            session="s", expected_version=1, facts_set={"a": "3"}, facts_removed=["a", "b"]
        ),
    )
    assert run(backend, ops.load, sm.LoadSession("s")).facts == {"a": "3"}


def test_a_snapshot_restores_only_if_it_is_a_valid_session(backend: Backend) -> None:
    turn(backend, "s", "t", [user()], [calls("a"), result("a"), assistant("x")])
    snap = run(backend, ops.export, sm.ExportSession("s"))
    broken = sm.SessionSnapshot(record=snap.record, entries=snap.entries[:2])  # call unanswered
    with pytest.raises(InvalidRequest):  # last_index no longer matches
        run(backend, ops.restore, sm.RestoreSession(broken))
    record = msgspec.structs.replace(snap.record, id="t", last_index=1)
    with pytest.raises(InvalidTranscript):
        run(backend, ops.restore, sm.RestoreSession(msgspec.structs.replace(broken, record=record)))
    with pytest.raises(Conflict):
        run(backend, ops.restore, sm.RestoreSession(snap))
    again = run(backend, ops.restore, sm.RestoreSession(snap, replace=True))
    assert again.version == snap.record.version + 1
    assert run(backend, ops.export, sm.ExportSession("s")).entries == snap.entries


def test_an_assistant_message_without_calls_closes_nothing_open(backend: Backend) -> None:
    # A reply that is only reasoning is still a non-tool message.
    msg = AssistantMessage(reasoning_content="hmm")
    rec = turn(backend, "s", "t", [user()], [msg, assistant("x")])
    assert rec.last_index == 2
