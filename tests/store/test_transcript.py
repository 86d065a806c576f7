"""Export and import of one session as JSON Lines, through the actor."""

from __future__ import annotations

import json

import msgspec
import pytest

from agcore_actors.llm import Message, Usage, assistant, message_to_json
from agcore_actors.store import (
    Conflict,
    InMemorySessions,
    InvalidRequest,
    InvalidTranscript,
    export_session,
    import_session,
    snapshot_from_jsonl,
)
from agcore_actors.store import messages as sm
from tests.store.helpers import calls, problems, result, running_store, user


async def test_an_export_imports_back_as_the_same_session_under_a_new_id() -> None:
    async with running_store(InMemorySessions()) as store:
        rec = await store.ask(
            sm.BeginTurn(session="a", turn="t1", expected_version=0, messages=[user()], agent="bot")
        )
        await store.ask(
            sm.CommitTurn(
                session="a",
                turn="t1",
                expected_version=rec.version,
                messages=[calls("k"), result("k", "42"), assistant("it is 42")],
                usage_delta=Usage(3, 4, 5, 6, 7),
                facts_set={"name": "Ada"},
                compaction=sm.Compaction(0, [user("nothing yet")]),
            )
        )
        text = await export_session(store, "a")
        lines = text.splitlines()
        assert json.loads(lines[0])["type"] == "session"
        assert [json.loads(line)["index"] for line in lines[1:]] == [0, 1, 2, 3]
        copied = await import_session(store, text, session="b")
        original = await store.ask(sm.ExportSession("a"))
        again = await store.ask(sm.ExportSession("b"))
    assert copied.id == "b" and copied.version == 1
    assert again.entries == original.entries
    assert (again.summary, again.facts) == (original.summary, original.facts)
    same = msgspec.structs.replace(again.record, id="a", version=original.record.version)
    assert same == original.record


async def test_an_import_over_an_existing_session_needs_replace() -> None:
    async with running_store(InMemorySessions()) as store:
        await store.ask(sm.UpdateSession(session="a", expected_version=0))
        text = await export_session(store, "a")
        with pytest.raises(Conflict):
            await import_session(store, text)
        record = await import_session(store, text, replace=True)
    assert record.version == 2


async def test_a_plain_transcript_imports_as_one_idle_session() -> None:
    chat: list[Message] = [user("q"), calls("k"), result("k"), assistant("a")]
    plain = "".join(message_to_json(m) + "\n" for m in chat)
    async with running_store(InMemorySessions()) as store:
        with pytest.raises(InvalidRequest):
            await import_session(store, plain)  # no header: the id is needed
        record = await import_session(store, plain, session="p", now=5.0)
        loaded = await store.ask(sm.LoadSession("p"))
    assert (record.status, record.turns, record.last_index, record.created_at) == (
        "idle",
        1,
        3,
        5.0,
    )
    assert loaded.messages == [user("q"), calls("k"), result("k"), assistant("a")]


async def test_a_broken_transcript_is_refused_unless_repair_is_asked() -> None:
    # What the memory store's sliding window left: a result whose call was evicted.
    cut: list[Message] = [result("gone"), user("q"), calls("k")]
    plain = "".join(message_to_json(m) + "\n" for m in cut)
    async with running_store(InMemorySessions()) as store:
        with pytest.raises(InvalidTranscript):
            await import_session(store, plain, session="p")
        await import_session(store, plain, session="p", repair=True)
        loaded = await store.ask(sm.LoadSession("p"))
    assert not problems(loaded.messages)
    assert loaded.messages[0] == user("q")


def test_a_bad_line_is_named() -> None:
    with pytest.raises(InvalidRequest, match="line 2"):
        snapshot_from_jsonl(message_to_json(user()) + "\nnot json\n", session="x")
    header = '{"type":"session","record":{"id":"a","created_at":0,"updated_at":0,"version":1}}'
    with pytest.raises(InvalidRequest, match="line 3"):
        snapshot_from_jsonl(f"{header}\n\n{{}}\n")


SEPARATORS = ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r"]


@pytest.mark.parametrize("separator", SEPARATORS, ids=lambda s: f"U+{ord(s):04X}")
async def test_an_export_imports_back_whatever_line_separators_the_content_holds(
    separator: str,
) -> None:
    """JSON leaves these characters unescaped; only ``\\n`` may end a line of the file."""
    async with running_store(InMemorySessions()) as store:
        rec = await store.ask(
            sm.BeginTurn(
                session="a",
                turn="t1",
                expected_version=0,
                messages=[user(f"one{separator}two")],
            )
        )
        await store.ask(
            sm.CommitTurn(
                session="a",
                turn="t1",
                expected_version=rec.version,
                messages=[assistant(f"a{separator}b")],
                facts_set={f"k{separator}": f"v{separator}"},
            )
        )
        text = await export_session(store, "a")
        await import_session(store, text, session="b")
        original = await store.ask(sm.ExportSession("a"))
        again = await store.ask(sm.ExportSession("b"))
    assert again.entries == original.entries and again.facts == original.facts
    plain = message_to_json(user(f"x{separator}y")) + "\n"
    assert snapshot_from_jsonl(plain, session="p").entries[0].message == user(f"x{separator}y")


def test_an_empty_file_is_refused() -> None:
    for text in ("", "\n\n"):
        with pytest.raises(InvalidRequest, match="nothing to import"):
            snapshot_from_jsonl(text, session="x")
