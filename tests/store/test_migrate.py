"""Transcripts kept as memory items become sessions on the store's first open.

The memory file is written by the memory store itself (its actor and protocol), as a
bot of the previous version would have left it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agcore_actors import ActorSystem
from agcore_actors.llm import AssistantMessage, FunctionCall, ToolCall, ToolMessage, UserMessage
from agcore_actors.memory import (
    ConversationMemoryConfig,
    MemoryStoreConfig,
    MemoryStrategy,
    StoredMessage,
    memory_store_spec,
)
from agcore_actors.memory import messages as mm
from agcore_actors.store import SqliteSessions
from agcore_actors.store import messages as sm
from agcore_actors.store.lowlevel import (
    MIGRATED_KEY,
    SqliteSessionBackend,
    migrate_memory_transcripts,
)
from tests.store.helpers import problems, running_store

CALL = {"id": "k1", "type": "function", "function": {"name": "clock", "arguments": "{}"}}


async def write_memory(path: Path, window: int | None = None) -> None:
    strategy = MemoryStrategy.FULL if window is None else MemoryStrategy.SLIDING_WINDOW
    config = MemoryStoreConfig(
        path=str(path),
        conversation=ConversationMemoryConfig(strategy=strategy, max_turns=window or 50),
    )
    async with ActorSystem(strict=True) as system:
        memory = await system.root.start_child(memory_store_spec("memory", config=config))
        await memory.ask(
            mm.Append(
                "chat:1",
                [
                    StoredMessage(role="system", content="be brief"),
                    StoredMessage(role="user", content="time?"),
                    StoredMessage(role="assistant", tool_calls=[CALL]),
                    StoredMessage(role="tool", tool_call_id="k1", content="noon"),
                    StoredMessage(role="assistant", content="It is noon."),
                ],
            )
        )
        await memory.ask(mm.Append("b", [StoredMessage(role="user", content="hello")]))
        await memory.ask(mm.FactSet(session_id="chat:1", key="name", value="Ada"))
        await memory.ask(mm.FactSet(session_id="facts-only", key="lang", value="fr"))
        await memory.ask(mm.Put(id="knowledge_x", content="not a transcript"))


@pytest.mark.parametrize("shared", [False, True], ids=["own-file", "memory-file"])
async def test_memory_transcripts_become_valid_sessions_once(tmp_path: Path, shared: bool) -> None:
    memory_db = tmp_path / "memory.db"
    await write_memory(memory_db)
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
    await write_memory(memory_db, window=2)  # keeps only the tool result and the answer
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
