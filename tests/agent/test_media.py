"""Images in a session's turns through SessionHost: the user's image is in the prompt of
every later turn, also after the session was closed and loaded again from the store,
while the SQLite store keeps its 10 MB once and reads it once for all those loads."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, SessionHost, StoreTurns
from agcore_actors.llm import (
    ChatRequest,
    ImagePart,
    ProviderRegistry,
    UserMessage,
    image_part_of,
    provider_spec,
)
from agcore_actors.store import SqliteSessions, session_store_spec
from agcore_actors.store.lowlevel import SqliteSessionBackend
from agcore_actors.testing import ScriptedProvider, ScriptedReply

TEN_MB = os.urandom(10 * 1024 * 1024)


def _images(request: ChatRequest) -> list[str]:
    return [
        part.image_url.url
        for m in request.messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for part in m.content
        if isinstance(part, ImagePart)
    ]


async def test_a_10_mb_image_is_stored_once_and_read_once_across_reloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    read = SqliteSessionBackend._blob

    def counted(self: SqliteSessionBackend, digest: str) -> bytes | None:
        reads.append(digest)
        return read(self, digest)

    monkeypatch.setattr(SqliteSessionBackend, "_blob", counted)
    provider = ScriptedProvider([ScriptedReply(text="ok")])
    db = tmp_path / "s.db"
    async with ActorSystem(strict=True) as system:
        llm = await system.root.start_child(
            provider_spec("llm", registry=ProviderRegistry().register(provider))
        )
        store = await system.root.start_child(
            session_store_spec("store", backend=SqliteSessions(str(db)))
        )
        bundle = (
            AgentBuilder().provider(llm).store(StoreTurns(store)).agent(Agent(name="a")).build()
        )
        async with SessionHost(system, bundle) as host:
            image = image_part_of(TEN_MB, "image/png")
            first = await host.run("s", "what is this?", parts=[image])
            assert first.status == "completed"
            for i in range(4):
                await host.close("s")  # the next turn loads the history from the store
                assert (await host.run("s", f"and now {i}?")).status == "completed"
    expected = image.image_url.url
    assert [_images(r) for r in provider.requests] == [[expected]] * 5
    assert len(reads) == 1  # 4 loads of the history, one read of the blob
    backend: Any = SqliteSessionBackend(db)
    try:
        conn = backend.connection
        assert conn.execute("SELECT count(*), sum(size) FROM blobs").fetchone() == (1, len(TEN_MB))
        bodies = conn.execute("SELECT sum(length(body)) FROM messages").fetchone()[0]
        assert bodies < 8192  # 10 messages; the image's base64 (14 MB) is not among them
    finally:
        backend.close()
