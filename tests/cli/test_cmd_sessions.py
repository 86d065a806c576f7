"""``agcore-actors sessions list|show|export|delete`` on a store that ``run`` filled, as
real processes (the turns themselves against the fault server over real HTTP)."""

from __future__ import annotations

import json
from pathlib import Path

from agcore_actors import ActorSystem
from agcore_actors.llm import assistant
from agcore_actors.store import PostgresSessions, session_store_spec, snapshot_from_jsonl
from agcore_actors.store import messages as sm
from tests.cli.agent_server import cli, model_env, text, tool_call
from tests.peers.fault_server import FaultServer
from tests.store.helpers import user

#: The code under test, wherever the subprocess starts (a worktree's, not an install's).
REPO = str(Path(__file__).resolve().parents[2])


async def stored_session(fault_server: FaultServer, tmp_path: Path) -> str:
    url, _ = fault_server.script(tool_call("calculate", {"expression": "2 + 3"}), text("Five."))
    done = await cli(
        "run", "Add 2 and 3", "--json", "--store", str(tmp_path / "s.db"),
        env=model_env(url), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    session: str = json.loads(done.stdout)["session"]
    return session


async def sessions(tmp_path: Path, *argv: str) -> tuple[int, str, str]:
    done = await cli(
        "sessions", *argv, "--store", str(tmp_path / "s.db"), env=model_env(""), cwd=tmp_path
    )
    return done.returncode, done.stdout, done.stderr


async def test_list_show_export_and_delete_a_stored_session(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    session = await stored_session(fault_server, tmp_path)

    status, out, _ = await sessions(tmp_path, "list", "--json")
    assert status == 0
    (record,) = json.loads(out)
    assert record["id"] == session and record["turns"] == 1 and record["agent"] == "assistant"
    status, out, _ = await sessions(tmp_path, "list")
    assert status == 0 and session in out.splitlines()[1]

    status, out, _ = await sessions(tmp_path, "show", session)
    assert status == 0
    assert "you> Add 2 and 3" in out
    assert '[tool] calculate({"expression": "2 + 3"})' in out
    assert "[tool] -> 2 + 3 = 5" in out and "Five." in out

    status, out, _ = await sessions(tmp_path, "export", session)
    assert status == 0
    snapshot = snapshot_from_jsonl(out)
    assert snapshot.record.id == session and len(snapshot.entries) == 4

    status, out, _ = await sessions(tmp_path, "delete", session)
    assert status == 0 and out == f"deleted {session}\n"
    status, out, _ = await sessions(tmp_path, "list", "--json")
    assert json.loads(out) == []


async def test_an_unknown_session_is_one_line_and_status_1(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    await stored_session(fault_server, tmp_path)
    for argv in (["show", "nope"], ["export", "nope"], ["delete", "nope"]):
        status, _, err = await sessions(tmp_path, *argv)
        assert status == 1, argv
        (line,) = err.splitlines()
        assert line.startswith(f"agcore-actors sessions {argv[0]}: store_session_not_found: ")


async def test_a_missing_store_is_a_usage_error(tmp_path: Path) -> None:
    status, _, err = await sessions(tmp_path, "list")
    assert status == 2
    assert "no session store at" in err and len(err.splitlines()) == 1


async def test_sessions_list_show_and_delete_work_against_postgresql(
    postgres_url: str, tmp_path: Path
) -> None:
    """``--store postgresql://…``: the same commands on the real PostgreSQL server."""
    async with ActorSystem(strict=True) as system:
        spec = session_store_spec("s", backend=PostgresSessions(postgres_url))
        store = await system.root.start_child(spec)
        begun = await store.ask(
            sm.BeginTurn(session="pg-1", turn="t", expected_version=0, messages=[user("hi")])
        )
        await store.ask(
            sm.CommitTurn(
                session="pg-1", turn="t", expected_version=begun.version,
                messages=[assistant("hello")],
            )
        )  # fmt: skip

    async def run(*argv: str) -> tuple[int, str, str]:
        done = await cli(
            "sessions",
            *argv,
            "--store",
            postgres_url,
            env=model_env("", PYTHONPATH=REPO),
            cwd=tmp_path,
        )
        return done.returncode, done.stdout, done.stderr

    status, out, err = await run("list", "--json")
    assert status == 0, err
    (record,) = json.loads(out)
    assert record["id"] == "pg-1" and record["turns"] == 1
    status, out, _ = await run("show", "pg-1")
    assert status == 0 and "you> hi" in out and "hello" in out
    status, out, _ = await run("delete", "pg-1")
    assert status == 0 and out == "deleted pg-1\n"
    status, out, _ = await run("list", "--json")
    assert json.loads(out) == []


async def test_an_unreachable_postgresql_store_is_one_line_without_its_password(
    tmp_path: Path,
) -> None:
    done = await cli(
        "sessions", "list", "--store", "postgresql://bot:s3cret-pw@127.0.0.1:1/nowhere",
        env=model_env("", PYTHONPATH=REPO), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode != 0
    (line,) = done.stderr.splitlines()
    assert "s3cret-pw" not in done.stderr and "store_storage_unavailable" in line, line
