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


def test_reads_take_no_writer_lock_and_leave_the_file_untouched(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"role": "user", "content": "hey"}\n', "utf-8")
    before = db.read_bytes()
    writer = SqliteBackend(db)  # as a running MemoryStore holds it
    try:
        assert main(["memory", "stats", str(db), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["conversation"] == 2
        assert main(["memory", "export", str(db), "s1"]) == 0
        assert capsys.readouterr().out.count("\n") == 2
        assert main(["memory", "search", str(db), "borrow checker"]) == 0
        assert "rust  Rust ownership" in capsys.readouterr().out
        # A second writer is refused, with one line.
        assert main(["memory", "import", str(db), "s2", str(transcript)]) == 1
        assert "memory_store_in_use" in capsys.readouterr().err
    finally:
        writer.close()
    # Reads noted no statistics into the file (a search records recalls).
    assert db.read_bytes() == before


def test_import_is_all_or_nothing_and_refuses_a_transcript_imported_twice(
    db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    lines = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "done", "tool_call_id": "call_1"},
    ]
    file = tmp_path / "t.jsonl"
    file.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    assert main(["memory", "import", str(db), "s5", str(file)]) == 0
    capsys.readouterr()
    assert main(["memory", "import", str(db), "s5", str(file)]) == 1
    err = capsys.readouterr().err
    assert "memory_serialization" in err and "call_1" in err
    assert main(["memory", "export", str(db), "s5"]) == 0
    assert capsys.readouterr().out.count("\n") == 3  # the refused import wrote nothing
    assert main(["memory", "import", str(db), "s5", str(file), "--replace"]) == 0


def test_a_bad_transcript_creates_no_store_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "wizard", "content": "boo"}\n', "utf-8")
    assert main(["memory", "import", str(tmp_path / "new.db"), "s", str(bad)]) == 1
    assert "line 1" in capsys.readouterr().err
    assert not (tmp_path / "new.db").exists()
