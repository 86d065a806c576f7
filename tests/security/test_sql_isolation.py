"""Hostile session ids and keys cannot escape their session in SQL: quotes, LIKE
wildcards (``%``, ``_``), NUL, very long and non-ASCII ids (and ids that are prefixes of
one another, or carry the separators our keys use) each read, write, clear and delete
only their own rows — in the session store, and as item ids and id prefixes in the memory
store, on SQLite.

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
from agcore_actors.memory import MemoryFilter, MemoryStoreConfig, memory_store_spec
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


def _namespace(owner: str) -> str:
    """A prefix of ``owner``'s own, as an application scopes its memories per user."""
    return "note:" + owner.replace("%", "%25").replace(":", "%3A") + ":"


async def _fill_memory(memory: ActorRef[Any], ids: list[str]) -> None:
    for index, owner in enumerate(ids):
        await memory.ask(mm.Put(id=owner, content=f"own {index}"))
        await memory.ask(mm.Put(id=_namespace(owner) + "a", content=f"m{index}"))
        await memory.ask(mm.Put(id=_namespace(owner) + "b", content=f"n{index}"))


async def _clear_memory(memory: ActorRef[Any], owner: str) -> int:
    """Delete ``owner``'s item and everything under its prefix; how many."""
    listed = await memory.ask(mm.List(MemoryFilter(prefix=_namespace(owner))))
    removed = [await memory.ask(mm.Delete(item.id)) for item in listed.items]
    removed.append(await memory.ask(mm.Delete(owner)))
    return sum(removed)


async def _check_memory(memory: ActorRef[Any], ids: list[str], cleared: set[str]) -> None:
    for index, owner in enumerate(ids):
        own = await memory.ask(mm.Get(owner))
        listed = await memory.ask(mm.List(MemoryFilter(prefix=_namespace(owner))))
        count = await memory.ask(mm.Count(_namespace(owner)))
        if owner in cleared:
            assert own is None and listed.items == [] and count == 0, owner[:20]
            continue
        assert own is not None and own.content == f"own {index}", owner[:20]
        assert [i.content for i in listed.items] == [f"m{index}", f"n{index}"], owner[:20]
        assert count == 2, owner[:20]


async def test_memory_store_keeps_each_hostile_id_and_key_to_itself(tmp_path: Path) -> None:
    config = MemoryStoreConfig(path=str(tmp_path / "m.db"))
    async with ActorSystem(strict=True) as system:
        memory = await system.root.start_child(memory_store_spec("memory", config=config))
        await _fill_memory(memory, HOSTILE_IDS)
        await _check_memory(memory, HOSTILE_IDS, set())
        wild = {"%", "_", "v", "v%", "victim%", "\x00", "victim:", "\\"}
        for owner in wild:
            assert await _clear_memory(memory, owner) == 3
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
            for owner in cleared:
                await _clear_memory(memory, owner)
            await _check_memory(memory, ids, cleared)

    trio.run(run)
