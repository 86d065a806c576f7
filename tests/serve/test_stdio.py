"""``agcore-actors serve --stdio`` driven by a test process over pipes, against the fast
fake OpenAI server (or a model that never answers, to hold turns in flight)."""

from __future__ import annotations

import json
import select
import signal
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.serve.helpers import commands, fake_openai, lines, silent_model, start_serve, stored

FINAL = {"turn_completed", "turn_cancelled", "turn_failed"}


def by_turn(out: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    turns: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in out:
        if "turn" in line:
            turns[line["turn"]].append(line)
    return turns


def read_until(process: Any, count: int, event: str, timeout: float = 30.0) -> list[bytes]:
    """Lines of stdout until ``count`` of them have ``"event": event``."""
    seen: list[bytes] = []
    buffer = b""
    deadline = time.monotonic() + timeout
    while sum(f'"event":"{event}"'.encode() in line for line in seen) < count:
        assert time.monotonic() < deadline, seen
        ready, _, _ = select.select([process.stdout], [], [], 0.5)
        if ready:
            chunk = process.stdout.read1(65536)
            assert chunk, seen
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            seen.extend(complete)
    return seen


def test_interleaved_sessions_each_turn_has_one_final_line_and_is_stored(tmp_path: Path) -> None:
    sessions = [f"s{i}" for i in range(100)]
    script: list[dict[str, Any]] = [
        {"session": s, "text": f"turn {t} of {s}", "turn": f"{s}-t{t}"}
        for t in range(5)
        for s in sessions
    ]
    script.insert(250, {"session": "s7", "frobnicate": True})
    script.insert(10, {"oops": 1})
    payload = commands(*script) + b"this is not json\n"
    with fake_openai() as base:
        process = start_serve(base, "--stdio", "--store", str(tmp_path / "s.db"))
        out, err = process.communicate(payload, timeout=120)
    assert process.returncode == 0, err.decode()
    parsed = lines(out)
    errors = [line for line in parsed if line["event"] == "error"]
    assert len(errors) == 3
    assert all(e["error_kind"] == "bad_command" for e in errors)
    assert any("not JSON" in e["error"] for e in errors)
    assert sum("unknown command" in e["error"] for e in errors) == 2
    turns = by_turn(parsed)
    assert len(turns) == 500
    for turn, events in turns.items():
        finals = [e for e in events if e["event"] in FINAL]
        assert len(finals) == 1 and events[-1] is finals[0], turn
        assert finals[0]["event"] == "turn_completed", finals[0]
        assert events[0]["event"] == "turn_started"
    # One session's turns run in input order.
    starts: dict[str, list[str]] = defaultdict(list)
    for line in parsed:
        if line["event"] == "turn_started":
            starts[line["session"]].append(line["turn"])
    assert all(starts[s] == [f"{s}-t{t}" for t in range(5)] for s in sessions)
    exported = stored(tmp_path / "s.db", sessions)
    for session, snapshot in exported.items():
        assert snapshot.record.turns == 5 and snapshot.record.status == "idle"
        assert {e.turn for e in snapshot.entries} == {f"{session}-t{t}" for t in range(5)}


def test_cancel_and_approve_get_one_answer_line_each() -> None:
    with fake_openai() as base:
        process = start_serve(base, "--stdio")
        out, err = process.communicate(
            commands(
                {"session": "a", "cancel": "after_turn"},
                {"session": "a", "approve": "call_1", "allow": False},
                {"session": "a", "cancel": "later"},
                {"session": "a", "approve": "call_1", "allow": "yes"},
            ),
            timeout=60,
        )
    assert process.returncode == 0, err.decode()
    parsed = lines(out)
    assert parsed[0] == {
        "session": "a",
        "event": "cancel",
        "mode": "after_turn",
        "cancelled": False,
    }
    assert parsed[1]["event"] == "approve" and parsed[1]["answered"] is False
    assert [p["event"] for p in parsed[2:]] == ["error", "error"]
    assert "'cancel' must be" in parsed[2]["error"] and "'allow'" in parsed[3]["error"]


def test_sigint_cancels_turns_in_flight_commits_them_and_exits_130(tmp_path: Path) -> None:
    with silent_model() as base:
        process = start_serve(base, "--stdio", "--store", str(tmp_path / "s.db"))
        assert process.stdin is not None
        process.stdin.write(commands(*({"session": f"s{i}", "text": "hi"} for i in range(3))))
        process.stdin.write(commands({"session": "s0", "text": "queued", "turn": "q"}))
        process.stdin.flush()
        seen = read_until(process, 3, "turn_started")
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err.decode()
    parsed = lines(b"\n".join(seen) + b"\n" + out)
    finals = {p["turn"]: p for p in parsed if p["event"] in FINAL}
    assert len(finals) == 4 and all(f["event"] == "turn_cancelled" for f in finals.values())
    exported = stored(tmp_path / "s.db", ["s0", "s1", "s2"])
    assert all(s.record.turns == 1 and s.record.status == "idle" for s in exported.values())


def test_sigterm_drains_within_the_deadline_then_cancels_and_exits_0(tmp_path: Path) -> None:
    with silent_model() as base:
        process = start_serve(
            base, "--stdio", "--store", str(tmp_path / "s.db"), "--drain-timeout", "0.5"
        )
        assert process.stdin is not None
        process.stdin.write(commands({"session": "a", "text": "hi", "turn": "t1"}))
        process.stdin.flush()
        seen = read_until(process, 1, "turn_started")
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err.decode()
    assert time.monotonic() - started < 10
    parsed = lines(b"\n".join(seen) + b"\n" + out)
    assert parsed[-1]["event"] == "turn_cancelled" and parsed[-1]["turn"] == "t1"
    assert stored(tmp_path / "s.db", ["a"])["a"].record.status == "idle"


def test_sigterm_lets_fast_turns_finish(tmp_path: Path) -> None:
    with fake_openai() as base:
        process = start_serve(base, "--stdio", "--store", str(tmp_path / "s.db"))
        assert process.stdin is not None
        process.stdin.write(commands(*({"session": f"s{i}", "text": "hi"} for i in range(20))))
        process.stdin.flush()
        seen = read_until(process, 1, "turn_started")
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err.decode()
    parsed = lines(b"\n".join(seen) + b"\n" + out)
    finals = [p for p in parsed if p["event"] in FINAL]
    assert len(finals) == 20 and all(f["event"] == "turn_completed" for f in finals)


BAD_IDS = ["FORGED\nINFO x", "a\rb", "\x1b[31m", "a\x00b", "\u202eevil", "a" * 129, "\udcff",
           "a b", ".hidden", "a/b", "été", ""]  # fmt: skip


def test_an_id_outside_the_rule_gets_an_error_line_and_runs_nothing(tmp_path: Path) -> None:
    """Fails on df941de: LF, CR, ESC, NUL, bidi and long ids were taken over stdio."""
    bad: list[dict[str, Any]] = []
    for value in BAD_IDS:
        bad += [{"session": value, "text": "hi"}, {"session": "ok", "text": "hi", "turn": value},
                {"session": value, "cancel": "immediate"},
                {"session": "ok", "approve": value, "allow": True}]  # fmt: skip
    script = [json.dumps(b, ensure_ascii=True).encode() + b"\n" for b in bad]
    with fake_openai() as base:
        process = start_serve(base, "--stdio", "--store", str(tmp_path / "s.db"))
        out, err = process.communicate(b"".join(script), timeout=60)
    assert process.returncode == 0, err.decode()
    answers = lines(out)
    errors = [a for a in answers if a["event"] == "error"]
    # every turn and cancel with a bad id is refused; an empty turn id is "choose one"
    assert len(errors) == len(bad) - 1, [a for a in answers if a["event"] != "error"]
    assert all("must be an id" in e["error"] or "not JSON" in e["error"] for e in errors)
    assert not any(a.get("event") == "turn_started" and a["session"] != "ok" for a in answers)


def test_a_tenant_over_stdio_reaches_only_its_own_sessions(tmp_path: Path) -> None:
    """Fails on df941de: there were no tenants; every stdio client shared every id."""
    db = str(tmp_path / "s.db")
    with fake_openai() as base:
        bob = start_serve(base, "--stdio", "--store", db, "--tenant", "bob")
        out, err = bob.communicate(commands({"session": "s1", "text": "secret of bob"}), 60)
        assert bob.returncode == 0, err.decode()
        alice = start_serve(base, "--stdio", "--store", db, "--tenant", "alice")
        script = commands(
            {"session": "s1", "cancel": "immediate"},
            {"session": "s1", "approve": "c1", "allow": True},
            {"session": "s1", "text": "hi"},
            {"session": "bob/s1", "text": "hi"},
        )
        out, err = alice.communicate(script, 60)
        assert alice.returncode == 0, err.decode()
    answers = lines(out)
    assert answers[0]["cancelled"] is False and answers[1]["answered"] is False
    finals = [a for a in answers if a["event"] in FINAL]
    assert len(finals) == 1 and finals[0]["session"] == "s1"
    assert finals[0]["result"]["session"] == "s1"  # the tenant's own id
    assert [a["event"] for a in answers].count("error") == 1  # "bob/s1" is no id
    both = stored(tmp_path / "s.db", ["bob/s1", "alice/s1"])
    assert both["bob/s1"].record.turns == 1 and both["alice/s1"].record.turns == 1
    assert "secret of bob" not in str(both["alice/s1"].entries)


def test_a_repeated_turn_id_runs_once(tmp_path: Path) -> None:
    """Fails on integ 2c33e3a: a repeated (session, turn) over stdio ran the turn again
    and stored its entries twice under one id, queued or after a restart."""
    db = str(tmp_path / "s.db")
    again = {"session": "s1", "text": "again", "turn": "t1"}
    with fake_openai() as base:
        first = start_serve(base, "--stdio", "--store", db)
        script = commands({"session": "s1", "text": "once", "turn": "t1"}, again, again,
                          {"session": "s2", "text": "other session", "turn": "t1"})  # fmt: skip
        out, err = first.communicate(script, 60)
        assert first.returncode == 0, err.decode()
        answers = lines(out)
        second = start_serve(base, "--stdio", "--store", db)
        out, err = second.communicate(commands(again), 60)
        assert second.returncode == 0, err.decode()
        answers += lines(out)
    errors = [a for a in answers if a["event"] == "error"]
    assert [(e["session"], e["turn"], e["error_kind"]) for e in errors] == [
        ("s1", "t1", "turn_exists")
    ] * 3
    starts = [(a["session"], a["turn"]) for a in answers if a["event"] == "turn_started"]
    assert starts == [("s1", "t1"), ("s2", "t1")]
    both = stored(tmp_path / "s.db", ["s1", "s2"])
    assert both["s1"].record.turns == 1 and both["s2"].record.turns == 1
    assert "again" not in str(both["s1"].entries)
