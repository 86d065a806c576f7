"""``agcore-actors memory``: stats, export / import of transcripts, search."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agcore_actors.cli import main
from agcore_actors.memory import KnowledgePage, StoredMessage
from agcore_actors.memory.lowlevel import ConversationMemory, KnowledgeStore, SqliteBackend


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    store = SqliteBackend(path)
    ConversationMemory(store, "s1").extend(
        [StoredMessage(role="user", content="hi"), StoredMessage(role="assistant", content="hello")]
    )
    KnowledgeStore(store).add_page(
        KnowledgePage(id="rust", title="Rust ownership", content="the borrow checker")
    )
    store.close()
    return path


def test_stats(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "stats", str(db)]) == 0
    out = capsys.readouterr().out
    assert "conversation           2" in out and "knowledge              1" in out
    assert "integrity     ok" in out


def test_export_then_import_into_another_session(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["memory", "export", str(db), "s1"]) == 0
    jsonl = capsys.readouterr().out
    assert jsonl.count("\n") == 2
    file = tmp_path / "t.jsonl"
    file.write_text(jsonl, "utf-8")
    assert main(["memory", "import", str(db), "s2", str(file)]) == 0
    assert "imported 2 message(s)" in capsys.readouterr().out
    assert main(["memory", "export", str(db), "s2"]) == 0
    assert capsys.readouterr().out == jsonl


def test_search_and_errors(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "search", str(db), "borrow checker"]) == 0
    assert "rust  Rust ownership" in capsys.readouterr().out
    # A missing file named on the command line is a usage error (exit 2), as in every group.
    assert main(["memory", "stats", str(tmp_path / "missing.db")]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{nope\n", "utf-8")
    assert main(["memory", "import", str(db), "s3", str(bad)]) == 1
    assert "line 1" in capsys.readouterr().err


def test_export_of_an_unknown_session_fails_with_one_line(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["memory", "export", str(db), "nobody"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"agcore-actors memory export: no_transcript: session 'nobody' has no transcript in {db}\n"
    )


def test_json_results_parse(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "stats", str(db), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["conversation"] == 2 and stats["knowledge"] == 1 and stats["integrity"] == "ok"
    assert stats["total"] == sum(v for k, v in stats.items() if k not in ("total", "integrity"))
    assert main(["memory", "search", str(db), "borrow checker", "--json"]) == 0
    (page,) = json.loads(capsys.readouterr().out)["pages"]
    assert page["id"] == "rust" and page["title"] == "Rust ownership" and page["score"] > 0
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"role": "user", "content": "hey"}\n', "utf-8")
    assert main(["memory", "import", str(db), "s9", str(transcript), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"session": "s9", "imported": 1}
