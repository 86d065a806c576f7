"""Transcripts kept as memory items become sessions on the store's first open.

The memory file is written as the previous version's memory store left it (its
``ConversationMemory`` and ``FactMemory`` are gone now): one ``conv:{session}:{index}``
item per chat message (JSON, index order; ``:`` in a session id escaped as ``%3A``), one
``_session_{session}:{key}`` item per fact, and what else memory kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agcore_actors.llm import AssistantMessage, FunctionCall, ToolCall, ToolMessage, UserMessage
from agcore_actors.memory.lowlevel import SqliteBackend
from agcore_actors.store import SqliteSessions
from agcore_actors.store import messages as sm
from agcore_actors.store.lowlevel import (
    MIGRATED_KEY,
    SqliteSessionBackend,
    migrate_memory_transcripts,
)
from tests.store.helpers import problems, running_store

CALL = {"id": "k1", "type": "function", "function": {"name": "clock", "arguments": "{}"}}


TRANSCRIPTS: dict[str, list[dict[str, Any]]] = {
    "chat:1": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "time?"},
        {"role": "assistant", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "k1", "content": "noon"},
        {"role": "assistant", "content": "It is noon."},
    ],
    "b": [{"role": "user", "content": "hello"}],
}


def write_memory(path: Path, window: int | None = None) -> None:
    """The old file; ``window``: the old sliding window kept each session's last N."""
    store = SqliteBackend(path)
    try:
        for session, messages in TRANSCRIPTS.items():
            escaped = session.replace("%", "%25").replace(":", "%3A")
            for index, message in list(enumerate(messages))[-(window or len(messages)) :]:
                store.put(
                    f"conv:{escaped}:{index:010d}",
                    json.dumps(message),
                    {"session_id": session, "index": index},
                    pinned=False,
                )
        store.put("_session_chat%3A1:name", "Ada", pinned=False)
        store.put("_session_facts-only:lang", "fr", pinned=False)
        store.put("knowledge_x", "not a transcript")
    finally:
        store.close()


@pytest.mark.parametrize("shared", [False, True], ids=["own-file", "memory-file"])
async def test_memory_transcripts_become_valid_sessions_once(tmp_path: Path, shared: bool) -> None:
    memory_db = tmp_path / "memory.db"
    write_memory(memory_db)
    path = memory_db if shared else tmp_path / "sessions.db"
    backend = SqliteSessions(str(path), migrate_from=str(memory_db))
    async with running_store(backend) as store:
        chat = await store.ask(sm.LoadSession("chat:1"))
        other = await store.ask(sm.LoadSession("b"))
        facts_only = await store.ask(sm.LoadSession("facts-only"))
        listed = await store.ask(sm.ListSessions())
    assert chat.messages[1:] == [
        UserMessage("time?"),
        AssistantMessage(tool_calls=[ToolCall("k1", FunctionCall("clock", "{}"))]),
        ToolMessage("noon", "k1"),
        AssistantMessage("It is noon."),
    ]
    assert (chat.record.status, chat.record.turns, chat.record.version) == ("idle", 1, 1)
    assert chat.facts == {"name": "Ada"}
    assert other.messages == [UserMessage("hello")]
    assert facts_only.messages == [] and facts_only.facts == {"lang": "fr"}
    assert sorted(r.id for r in listed.sessions) == ["b", "chat:1", "facts-only"]
    assert not problems(chat.history)
    # Reopening does not copy again, even after the sessions changed.
    async with running_store(backend) as store:
        await store.ask(sm.DeleteSessions(["b"]))
    async with running_store(backend) as store:
        with pytest.raises(LookupError):
            await store.ask(sm.LoadSession("b"))


async def test_a_transcript_cut_by_the_sliding_window_is_repaired(tmp_path: Path) -> None:
    memory_db = tmp_path / "memory.db"
    write_memory(memory_db, window=2)  # keeps only the tool result and the answer
    backend = SqliteSessionBackend(tmp_path / "sessions.db")
    try:
        report = migrate_memory_transcripts(backend, str(memory_db))
        assert report is not None
        assert (report.sessions, report.dropped) == (3, 1)
        loaded: Any = backend.messages("chat:1", 0, 10)
        assert loaded == [AssistantMessage("It is noon.")]
        assert migrate_memory_transcripts(backend, str(memory_db)) is None
        assert MIGRATED_KEY in dict(backend.connection.execute("SELECT * FROM store_meta"))
    finally:
        backend.close()


def test_no_memory_file_means_no_migration(tmp_path: Path) -> None:
    backend = SqliteSessionBackend(tmp_path / "sessions.db")
    try:
        assert migrate_memory_transcripts(backend, str(tmp_path / "absent.db")) is None
        assert migrate_memory_transcripts(backend, str(tmp_path / "sessions.db")) is None
    finally:
        backend.close()
