"""``agcore-actors memory``: stats and search of a memory file, read-only.

The file here also holds what an older version kept in memory (a transcript as ``conv:``
items, a session fact as a ``_session_`` item): ``stats`` counts it as ``legacy``, for
``sessions migrate-memory`` to move (tests/cli/test_cmd_sessions_import.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agcore_actors.cli import main
from agcore_actors.memory import KnowledgePage, StorageError
from agcore_actors.memory.lowlevel import (
    KnowledgeStore,
    PostgresBackend,
    PostgresReader,
    SqliteBackend,
)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    store = SqliteBackend(path)
    store.put("conv:s1:0000000000", '{"role":"user","content":"hi"}', pinned=False)
    store.put("conv:s1:0000000001", '{"role":"assistant","content":"hello"}', pinned=False)
    store.put("_session_s1:lang", "fr", pinned=False)
    KnowledgeStore(store).add_page(
        KnowledgePage(id="rust", title="Rust ownership", content="the borrow checker")
    )
    store.close()
    return path


def test_stats(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "stats", str(db)]) == 0
    out = capsys.readouterr().out
    assert "knowledge              1" in out and "legacy                 3" in out
    assert "integrity     ok" in out


def test_search_and_errors(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "search", str(db), "borrow checker"]) == 0
    assert "rust  Rust ownership" in capsys.readouterr().out
    # A missing file named on the command line is a usage error (exit 2), as in every group.
    assert main(["memory", "stats", str(tmp_path / "missing.db")]) == 2
    assert "no such file" in capsys.readouterr().err
    # Transcripts moved to the session store: the old commands are gone, with exit 2.
    for gone in ("export", "import"):
        assert main(["memory", gone, str(db), "s1"]) == 2
        assert f"invalid choice: '{gone}'" in capsys.readouterr().err


def test_json_results_parse(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "stats", str(db), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["legacy"] == 3 and stats["knowledge"] == 1 and stats["integrity"] == "ok"
    assert stats["total"] == sum(v for k, v in stats.items() if k not in ("total", "integrity"))
    assert main(["memory", "search", str(db), "borrow checker", "--json"]) == 0
    (page,) = json.loads(capsys.readouterr().out)["pages"]
    assert page["id"] == "rust" and page["title"] == "Rust ownership" and page["score"] > 0


def test_reads_take_no_writer_lock_and_leave_the_file_untouched(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = db.read_bytes()
    writer = SqliteBackend(db)  # as a running MemoryStore holds it
    try:
        assert main(["memory", "stats", str(db), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["knowledge"] == 1
        assert main(["memory", "search", str(db), "borrow checker"]) == 0
        assert "rust  Rust ownership" in capsys.readouterr().out
    finally:
        writer.close()
    # Reads noted no statistics into the file (a search records recalls).
    assert db.read_bytes() == before


def test_stats_and_search_of_a_store_on_postgresql_write_nothing(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = PostgresBackend(postgres_url)
    KnowledgeStore(store).add_page(
        KnowledgePage(id="rust", title="Rust ownership", content="the borrow checker")
    )
    before = store.peek("knowledge_rust")
    assert main(["memory", "stats", postgres_url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["knowledge"] == 1
    assert main(["memory", "search", postgres_url, "borrow checker"]) == 0
    assert "rust  Rust ownership" in capsys.readouterr().out
    assert store.peek("knowledge_rust") == before  # no access, no recall written
    store.close()


def test_a_postgresql_url_without_memory_tables_is_refused(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(StorageError, match="not a memory store"):
        PostgresReader(postgres_url)
