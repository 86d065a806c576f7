"""``agcore-actors sessions import`` and ``sessions migrate-memory``: the session store is
the one home of conversations, and an older memory file's transcripts move into it.

The memory file is written the way older versions wrote it (``conv:{session}:{index}``
items holding chat messages as JSON, ``_session_{session}:{key}`` facts, ``:`` in a
session id escaped as ``%3A``), including a transcript the old sliding window cut between
a tool call and its result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agcore_actors.cli import main
from agcore_actors.llm import assistant
from agcore_actors.memory.lowlevel import SqliteBackend
from agcore_actors.store import snapshot_from_jsonl

CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.fixture
def memory_file(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    store = SqliteBackend(path)
    whole = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]
    for i, message in enumerate(whole):
        store.put(f"conv:a%3Ab:{i:010d}", json.dumps(message), pinned=False)
    store.put("_session_a%3Ab:lang", "fr", pinned=False)
    # The window kept only the result of a call it had dropped, then one answer.
    store.put("conv:cut:0000000007", json.dumps(whole[2]), pinned=False)
    store.put("conv:cut:0000000008", json.dumps(whole[3]), pinned=False)
    store.put("conv:bad:0000000000", "not a message", pinned=False)
    store.close()
    return path


def run(*argv: str) -> int:
    return main(list(argv))


def test_migrate_memory_copies_every_session_once(
    memory_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "sessions.db")
    assert run("sessions", "migrate-memory", str(memory_file), "--store", store, "--json") == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts == {"sessions": 2, "messages": 5, "dropped": 2, "skipped_existing": 0}
    assert run("sessions", "export", "a:b", "--store", store) == 0
    snapshot = snapshot_from_jsonl(capsys.readouterr().out)
    assert snapshot.facts == {"lang": "fr"} and len(snapshot.entries) == 4
    assert run("sessions", "export", "cut", "--store", store) == 0
    cut = snapshot_from_jsonl(capsys.readouterr().out)
    assert [e.message for e in cut.entries] == [assistant("done")]  # the orphan result dropped
    # A second run changes nothing and says so.
    assert run("sessions", "migrate-memory", str(memory_file), "--store", store) == 0
    assert "0 session(s)" in capsys.readouterr().out
    assert run("sessions", "list", "--store", store, "--json") == 0
    assert sorted(r["id"] for r in json.loads(capsys.readouterr().out)) == ["a:b", "cut"]


def test_migrate_memory_without_the_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "sessions.db")
    assert run("sessions", "migrate-memory", str(tmp_path / "no.db"), "--store", store) == 2
    assert "no memory file" in capsys.readouterr().err


def test_import_an_export_under_a_new_id_then_refuse_it_twice(
    memory_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "sessions.db")
    assert run("sessions", "migrate-memory", str(memory_file), "--store", store) == 0
    assert run("sessions", "export", "a:b", "--store", store, "-o", str(tmp_path / "e.jsonl")) == 0
    capsys.readouterr()
    imported = ["sessions", "import", str(tmp_path / "e.jsonl"), "--session", "copy"]
    assert run(*imported, "--store", store) == 0
    assert capsys.readouterr().out == "imported session copy: 4 message(s)\n"
    assert run(*imported, "--store", store) == 1
    assert "store_conflict" in capsys.readouterr().err
    assert run(*imported, "--replace", "--store", store, "--json") == 0
    assert json.loads(capsys.readouterr().out)["id"] == "copy"


def test_a_bad_or_empty_file_is_refused_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "sessions.db")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "x"}\n{"role": "wizard"}\n', "utf-8")
    assert run("sessions", "import", str(bad), "--session", "s", "--store", store) == 1
    assert "line 2" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", "utf-8")
    assert run("sessions", "import", str(empty), "--session", "s", "--store", store) == 1
    assert "nothing to import" in capsys.readouterr().err
    assert run("sessions", "list", "--store", store, "--json") == 0
    assert json.loads(capsys.readouterr().out) == []
