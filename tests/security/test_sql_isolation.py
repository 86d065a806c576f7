"""Hostile session ids and keys cannot escape their session in SQL: quotes, LIKE
wildcards (``%``, ``_``), NUL, very long and non-ASCII ids (and ids that are prefixes of
one another, or carry the separators our keys use) each read, write, clear and delete
only their own rows — in the session store and in the memory store, on SQLite.

Every id gets data of its own; afterwards each id's data must be exactly what it was
given, and clearing or deleting one id leaves every other id's data intact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.llm import AssistantMessage, UserMessage
from agcore_actors.memory import MemoryStoreConfig, StoredMessage, memory_store_spec
from agcore_actors.memory import messages as mm
from agcore_actors.store import SqliteSessions, session_store_spec
from agcore_actors.store import messages as sm

HOSTILE_IDS = [
    "victim",
    "v",
    "v%",
    "%",
    "_",
    "vic_im",
    "victim%",
    "'",
    "victim'--",
    "x' OR '1'='1",
    "'); DROP TABLE sessions; --",
    '"; DELETE FROM items; --',
    "victim\x00",
    "\x00",
    "victim:",
    "victim/child",
    "session:victim",
    "conv:victim",
    "\\",
    "victim\\",
    "a" * 10_000,
    "é中😀",
    "\U0010ffff",
    "victim\U0010ffff",
    "\n\r\t",
    " victim",
]


async def test_session_store_keeps_each_hostile_id_to_itself(tmp_path: Path) -> None:
    async with ActorSystem(strict=True) as system:
        store = await system.root.start_child(
            session_store_spec("store", backend=SqliteSessions(str(tmp_path / "s.db")))
        )
        for index, session in enumerate(HOSTILE_IDS):
            begun = await store.ask(
                sm.BeginTurn(session=session, turn="t", expected_version=0,
                             messages=[UserMessage(f"question {index}")])
            )  # fmt: skip
            await store.ask(
                sm.CommitTurn(
                    session=session,
                    turn="t",
                    expected_version=begun.version,
                    messages=[AssistantMessage(f"answer {index}")],
                    facts_set={"owner": str(index), session: "own key"},
                )
            )
        for index, session in enumerate(HOSTILE_IDS):
            snapshot = await store.ask(sm.ExportSession(session))
            assert snapshot.record.id == session
            texts = [e.message.content for e in snapshot.entries]
            assert texts == [f"question {index}", f"answer {index}"], (session[:20], texts)
            assert snapshot.facts == {"owner": str(index), session: "own key"}
        page = await store.ask(sm.ListSessions(limit=1000))
        assert sorted(r.id for r in page.sessions) == sorted(HOSTILE_IDS)
        # Deleting the wildcard-looking ids deletes only them.
        wild = ["%", "_", "v%", "victim%", "x' OR '1'='1", "\x00"]
        deleted = await store.ask(sm.DeleteSessions(wild))
        assert sorted(deleted.ids) == sorted(wild)
        survivor = await store.ask(sm.ExportSession("victim"))
        assert len(survivor.entries) == 2 and survivor.facts["owner"] == "0"
        page = await store.ask(sm.ListSessions(limit=1000))
        assert sorted(r.id for r in page.sessions) == sorted(set(HOSTILE_IDS) - set(wild))


def _message(text: str) -> StoredMessage:
    return StoredMessage(role="user", content=text)


async def _fill_memory(memory: ActorRef[Any], ids: list[str]) -> None:
    for index, session in enumerate(ids):
        await memory.ask(mm.Append(session, [_message(f"m{index}"), _message(f"n{index}")]))
        await memory.ask(mm.FactSet(session_id=session, key="owner", value=str(index)))
        await memory.ask(mm.FactSet(session_id=session, key=session, value="own key"))
        await memory.ask(mm.FactSet(session_id=session, key="wild%_", value="wild"))


async def _check_memory(memory: ActorRef[Any], ids: list[str], cleared: set[str]) -> None:
    for index, session in enumerate(ids):
        history = await memory.ask(mm.History(session))
        owner = await memory.ask(mm.FactGet(session, "owner"))
        if session in cleared:
            assert history.messages == [] and owner is None, session[:20]
            continue
        assert [m.content for m in history.messages] == [f"m{index}", f"n{index}"], session[:20]
        assert owner == str(index), session[:20]
        assert await memory.ask(mm.FactGet(session, session)) == "own key"


async def test_memory_store_keeps_each_hostile_id_and_key_to_itself(tmp_path: Path) -> None:
    config = MemoryStoreConfig(path=str(tmp_path / "m.db"))
    async with ActorSystem(strict=True) as system:
        memory = await system.root.start_child(memory_store_spec("memory", config=config))
        await _fill_memory(memory, HOSTILE_IDS)
        await _check_memory(memory, HOSTILE_IDS, set())
        wild = {"%", "_", "v", "v%", "victim%", "\x00", "victim:", "\\"}
        for session in wild:
            assert await memory.ask(mm.ClearHistory(session)) == 2
            assert await memory.ask(mm.FactClear(session)) == 3
        await _check_memory(memory, HOSTILE_IDS, wild)


_ids = st.text(min_size=1, max_size=6, alphabet=st.sampled_from("v%_'\\:\x00/é\U0010ffff"))


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ids=st.lists(_ids, min_size=2, max_size=6, unique=True), data=st.data())
def test_any_ids_clear_only_themselves(
    tmp_path_factory: pytest.TempPathFactory, ids: list[str], data: st.DataObject
) -> None:  # fmt: skip
    cleared = set(data.draw(st.lists(st.sampled_from(ids), unique=True)))
    path = tmp_path_factory.mktemp("memory") / "m.db"

    async def run() -> None:
        async with ActorSystem(strict=True) as system:
            config = MemoryStoreConfig(path=str(path))
            memory = await system.root.start_child(memory_store_spec("memory", config=config))
            await _fill_memory(memory, ids)
            for session in cleared:
                await memory.ask(mm.ClearHistory(session))
                await memory.ask(mm.FactClear(session))
            await _check_memory(memory, ids, cleared)

    trio.run(run)
