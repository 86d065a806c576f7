"""The media of stored messages, kept once by content hash: a 10 MB image is one row of
``blobs`` however many turns and sessions carry it (also written by two stores at once),
message bodies hold a reference, loading a history again reads no blob and allocates no
copy of it, deleting the last session that refers to a blob removes it, and a file from
before the blob tables (schema version 4, data inline) reads back unchanged."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tracemalloc
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.llm import (
    AssistantMessage,
    ImagePart,
    Message,
    TextPart,
    UserMessage,
    file_part_of,
    image_part_of,
)
from agcore_actors.store import PostgresSessions, SqliteSessions, session_store_spec
from agcore_actors.store import _ops as ops
from agcore_actors.store import messages as sm
from agcore_actors.store._postgres import PostgresSessionBackend
from agcore_actors.store._schema import MIGRATIONS
from agcore_actors.store.lowlevel import InMemorySessionBackend, SqliteSessionBackend

TEN_MB = os.urandom(10 * 1024 * 1024)
DIGEST = hashlib.sha256(TEN_MB).hexdigest()


def _image_turn(text: str = "what is this?", data: bytes = TEN_MB) -> UserMessage:
    return UserMessage([TextPart(text), image_part_of(data, "image/png")])


def _url(message: Message) -> str:
    """The URL of the image part of a message of :func:`_image_turn`."""
    assert isinstance(message, UserMessage) and isinstance(message.content, list)
    part = message.content[1]
    assert isinstance(part, ImagePart)
    return part.image_url.url


def _run(backend: Any, op: Callable[..., Any], msg: Any) -> Any:
    (done,) = backend.run_batch([partial(op, backend, msg, 1.0)], True)
    return done.unwrap()


def _turn(backend: Any, session: str, version: int, *messages: Message) -> int:
    record = _run(
        backend,
        ops.begin,
        sm.BeginTurn(
            session=session, turn=f"t{version}", expected_version=version, messages=[messages[0]]
        ),
    )
    record = _run(
        backend,
        ops.commit,
        sm.CommitTurn(
            session=session,
            turn=f"t{version}",
            expected_version=record.version,
            messages=list(messages[1:]),
        ),
    )
    return int(record.version)


def _load(backend: Any, session: str) -> sm.LoadedSession:
    (done,) = backend.run_batch([partial(ops.load, backend, sm.LoadSession(session), 1.0)], False)
    loaded: sm.LoadedSession = done.unwrap()
    return loaded


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySessionBackend()
        return
    if request.param == "sqlite":
        b: Any = SqliteSessionBackend(tmp_path / "s.db")
    else:
        b = PostgresSessionBackend(request.getfixturevalue("postgres_url"))
    yield b
    b.close()


def _stored_bytes(backend: Any) -> tuple[int, int]:
    """(rows of blobs, bytes of message bodies) of a backend."""
    if isinstance(backend, InMemorySessionBackend):
        bodies = sum(len(b) for s in backend._sessions.values() for b in s)
        return len(backend._blob_data), bodies
    conn = backend.connection if isinstance(backend, SqliteSessionBackend) else backend._flush()
    blobs = conn.execute("SELECT count(*) FROM blobs").fetchone()[0]
    bodies = conn.execute("SELECT coalesce(sum(length(body)), 0) FROM messages").fetchone()[0]
    return int(blobs), int(bodies)


def test_a_10_mb_image_is_stored_once_and_loads_read_it_at_most_once(backend: Any) -> None:
    version = _turn(backend, "s", 0, _image_turn(), AssistantMessage("a cat"))
    for i in range(3):  # the same image sent again, in later turns
        version = _turn(backend, "s", version, _image_turn(f"again {i}"), AssistantMessage("ok"))
    blobs, bodies = _stored_bytes(backend)
    assert blobs == 1  # 4 messages carry it, one row keeps it
    assert bodies < 4096  # the bodies hold references, not 4 x 13 MB of base64
    backend.blobs.cache.__init__()  # a cold cache, as after a restart
    tracemalloc.start()
    try:
        first = _load(backend, "s")
        first_peak = tracemalloc.get_traced_memory()[1]
        peaks = []  # what each later load allocated above what was held before it
        for _ in range(20):
            held = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            again = _load(backend, "s")
            peaks.append(tracemalloc.get_traced_memory()[1] - held)
    finally:
        tracemalloc.stop()
    assert backend.blobs.cache.reads == 1  # 21 loads of 4 messages: one blob read
    assert first_peak > 10 * 1024 * 1024  # the one read built the data URL (the check bites)
    assert max(peaks) < 1024 * 1024  # later loads: no copy of the 10 MB
    assert again.messages == first.messages
    url = _url(first.messages[0])
    assert url == _url(_image_turn())
    assert _url(again.messages[2]) is url  # every load shares the one string


def test_small_parts_stay_inline_and_files_are_blobs_too(backend: Any) -> None:
    small = UserMessage([TextPart("tiny"), image_part_of(b"\x89PNG" * 10, "image/png")])
    pdf = UserMessage([file_part_of(TEN_MB[:100_000], "application/pdf", "a.pdf")])
    version = _turn(backend, "s", 0, small, AssistantMessage("ok"))
    _turn(backend, "s", version, pdf, AssistantMessage("ok"))
    assert _stored_bytes(backend)[0] == 1  # the PDF; the tiny image is inline
    backend.blobs.cache.__init__()
    assert _load(backend, "s").messages == [
        small,
        AssistantMessage("ok"),
        pdf,
        AssistantMessage("ok"),
    ]


def test_a_blob_goes_with_the_last_session_that_refers_to_it(backend: Any) -> None:
    _turn(backend, "a", 0, _image_turn(), AssistantMessage("ok"))
    _turn(backend, "b", 0, _image_turn(), AssistantMessage("ok"))
    assert _stored_bytes(backend)[0] == 1
    backend.run_batch([partial(backend.delete, ["a"])], True)
    assert _stored_bytes(backend)[0] == 1
    backend.blobs.cache.__init__()
    assert _load(backend, "b").messages[0] == _image_turn()
    backend.run_batch([partial(backend.delete, ["b"])], True)
    assert _stored_bytes(backend)[0] == 0


def test_a_file_of_schema_version_4_with_inline_images_reads_back_unchanged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    message = _image_turn()
    body = (
        '{"role":"user","content":[{"type":"text","text":"what is this?"},'
        '{"type":"image_url","image_url":{"url":"' + _url(message) + '"}}]}'
    )
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for script in MIGRATIONS[:4]:
        for statement in script.split(";"):
            if statement.strip():
                conn.execute(statement)
    conn.execute("INSERT INTO store_meta VALUES ('sessions_schema_version', '4')")
    conn.execute(
        "INSERT INTO sessions (id, status, turns, last_index, created_at, updated_at, version) "
        "VALUES ('old', 'idle', 1, 0, 1.0, 1.0, 2)"
    )
    conn.execute(
        "INSERT INTO messages (session, idx, turn, role, body, created_at) "
        "VALUES ('old', 0, 't', 'user', ?, 1.0)",
        (body,),
    )
    conn.close()
    backend = SqliteSessionBackend(path)  # migrates to version 5
    try:
        assert _load(backend, "old").messages == [message]
        assert backend.blobs.cache.reads == 0  # inline: no blob involved
        assert backend.connection.execute("SELECT count(*) FROM blobs").fetchone()[0] == 0
    finally:
        backend.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_two_stores_writing_one_image_at_once_keep_one_blob(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Two store actors on one database (two hosts), 12 sessions at once, the same image:
    one blob row, no write refused, every session reads it back."""
    if kind == "sqlite":
        config: Any = SqliteSessions(str(tmp_path / "s.db"))
    else:
        config = PostgresSessions(request.getfixturevalue("postgres_url"))
    image = _image_turn(data=TEN_MB[:200_000])
    async with ActorSystem(strict=True) as system:
        stores = [
            await system.root.start_child(session_store_spec(f"store-{h}", backend=config))
            for h in range(2)
        ]

        async def write(i: int) -> None:
            await stores[i % 2].ask(
                sm.BeginTurn(session=f"s{i}", turn="t", expected_version=0, messages=[image])
            )

        async with trio.open_nursery() as nursery:
            for i in range(12):
                nursery.start_soon(write, i)
        for i in range(12):
            loaded = await stores[(i + 1) % 2].ask(sm.LoadSession(f"s{i}"))
            assert loaded.messages == [image]
    backend: Any = (
        SqliteSessionBackend(tmp_path / "s.db")
        if kind == "sqlite"
        else PostgresSessionBackend(config.url)
    )
    try:
        assert _stored_bytes(backend)[0] == 1
    finally:
        backend.close()


async def test_a_blob_deleted_on_one_host_while_another_writes_it_stays_for_the_writer(
    postgres_url: str,
) -> None:
    """Host A deletes the last session of an image while host B stores the same image in
    a new session, at once, 30 times: every session B stored loads, from a cold cache."""
    config = PostgresSessions(postgres_url)
    rounds = 30
    images = [_image_turn(data=os.urandom(20_000)) for _ in range(rounds)]
    async with ActorSystem(strict=True) as system:
        a, b = [
            await system.root.start_child(session_store_spec(f"store-{h}", backend=config))
            for h in "ab"
        ]
        for i, image in enumerate(images):
            await a.ask(
                sm.BeginTurn(session=f"x{i}", turn="t", expected_version=0, messages=[image])
            )
            async with trio.open_nursery() as nursery:
                nursery.start_soon(a.ask, sm.DeleteSessions([f"x{i}"]))
                nursery.start_soon(
                    b.ask,
                    sm.BeginTurn(session=f"y{i}", turn="t", expected_version=0, messages=[image]),
                )
    backend = PostgresSessionBackend(postgres_url)
    try:
        for i, image in enumerate(images):
            assert _load(backend, f"y{i}").messages == [image]
        assert _stored_bytes(backend)[0] == rounds
    finally:
        backend.close()
