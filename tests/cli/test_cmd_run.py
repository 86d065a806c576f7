"""``agcore-actors run`` as a real process against the fault server over real HTTP: the
streamed answer, tool calls shown, ``--json``, ``--session``, exit codes, Ctrl-C, the
recovery from a malformed tool call and the bound on repeated calls."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import trio

from tests.cli.agent_server import (
    CLI,
    clean_env,
    cli,
    malformed_tool_call,
    model_env,
    read_all,
    sent_messages,
    text,
    tool_call,
)
from tests.peers import ROOT
from tests.peers.fault_server import FaultServer, error_reply


def store_args(tmp_path: Path) -> list[str]:
    return ["--store", str(tmp_path / "sessions.db")]


async def test_a_turn_streams_the_answer_and_shows_the_tool_call_as_it_runs(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, scenario = fault_server.script(
        tool_call("calculate", {"expression": "6 * 7"}), text("It is ", "42.")
    )
    done = await cli(
        "run", "What is 6 * 7?", *store_args(tmp_path), env=model_env(url), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "It is 42.\n"
    lines = done.stderr.splitlines()
    assert '[tool] calculate({"expression": "6 * 7"})' in lines
    assert "[tool] calculate -> ok: 6 * 7 = 42" in lines
    assert lines[-1].startswith("session ")
    first, second = (sent_messages(r.body) for r in scenario.requests)
    assert first[-1] == {"role": "user", "content": "What is 6 * 7?"}
    assert second[-1]["role"] == "tool" and second[-1]["content"] == "6 * 7 = 42"
    offered = {t["function"]["name"] for t in scenario.requests[0].body["tools"]}
    assert {"calculate", "current_time", "read_file", "list_files", "write_file"} == offered


async def test_json_prints_one_object_with_session_text_tool_calls_usage_and_status(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, _ = fault_server.script(tool_call("current_time", {}), text("Noon."))
    done = await cli(
        "run", "Time?", "--json", *store_args(tmp_path), env=model_env(url), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    out = json.loads(line)
    assert set(out) == {"session", "text", "tool_calls", "usage", "status"}
    assert out["text"] == "Noon." and out["status"] == "completed"
    (call,) = out["tool_calls"]
    assert call["name"] == "current_time" and call["status"] == "ok"
    assert "UTC" in call["result"]
    assert out["usage"]["input_tokens"] == 60 and out["usage"]["output_tokens"] == 12


async def test_session_continues_a_stored_session_with_its_history(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, scenario = fault_server.script(text("Hello Ada."))
    first = await cli(
        "run", "I am Ada.", "--json", *store_args(tmp_path), env=model_env(url), cwd=tmp_path
    )
    session = json.loads(first.stdout)["session"]
    second = await cli(
        "run",
        "Who am I?",
        "--session",
        session,
        "--json",
        *store_args(tmp_path),
        env=model_env(url),
        cwd=tmp_path,
    )
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["session"] == session
    history = [(m["role"], m["content"]) for m in sent_messages(scenario.requests[-1].body)]
    assert history[-3:] == [
        ("user", "I am Ada."),
        ("assistant", "Hello Ada."),
        ("user", "Who am I?"),
    ]


async def test_an_unknown_session_fails_with_one_line_and_status_1(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, scenario = fault_server.script(text("never"))
    done = await cli(
        "run", "hi", "--session", "nope", *store_args(tmp_path), env=model_env(url), cwd=tmp_path
    )
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith("agcore-actors run: store_session_not_found: ")
    assert scenario.requests == []


async def test_an_unknown_session_fails_before_the_embedded_model_starts(tmp_path: Path) -> None:
    # The "Python" that would run the model server only leaves a mark: it must never run.
    mark = tmp_path / "model-started"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\ntouch '{mark}'\nexit 1\n")
    python.chmod(0o755)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    env = clean_env(AGCORE_ACTORS_LOCAL_PYTHON=str(python), PYTHONPATH=str(ROOT))
    for command in (["run", "hi"], ["chat"]):
        done = await cli(
            *command,
            "--session",
            "nope",
            "--model",
            str(gguf),
            *store_args(tmp_path),
            env=env,
            cwd=tmp_path,
        )
        assert done.returncode == 1, done.stderr
        last = done.stderr.splitlines()[-1]
        assert last.startswith(f"agcore-actors {command[0]}: store_session_not_found: "), last
        assert "nope" in last
        assert not mark.exists()


async def test_without_the_local_runtime_run_says_so_in_one_line_before_any_download(
    tmp_path: Path,
) -> None:
    # Without the `local` extra and with no provider, `run hi` used to fetch and join the
    # 1 GB default model, then say xllamacpp was missing. The serving Python here is this
    # one without site-packages; pip is offline, so a download, were one started, would
    # fail with another message and leave its mark in the cache.
    python = tmp_path / "python-without-xllamacpp"
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -S "$@"\n')
    python.chmod(0o755)
    (tmp_path / "no-wheels").mkdir()
    cache = tmp_path / "cache"
    env = clean_env(
        AGCORE_ACTORS_LOCAL_PYTHON=str(python),
        AGCORE_ACTORS_CACHE=str(cache),
        AGCORE_ACTORS_DATA=str(tmp_path / "data"),
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(tmp_path / "no-wheels"),
        PIP_CONFIG_FILE=os.devnull,
    )
    done = await cli("run", "hi", env=env, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("agcore-actors run: local_runtime_missing: "), line
    assert "pip install 'agcore-actors[local]'" in line
    assert not cache.exists() or [p for p in cache.rglob("*") if p.is_file()] == []


async def test_a_failed_turn_exits_1_with_its_typed_error(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, _ = fault_server.script(error_reply(400, "bad request here"))
    done = await cli("run", "hi", "--json", *store_args(tmp_path), env=model_env(url), cwd=tmp_path)
    assert done.returncode == 1
    out = json.loads(done.stdout)
    assert out["status"] == "failed" and out["error"]["kind"] == "llm_request"
    assert "agcore-actors run: llm_request: " in done.stderr


async def test_bad_options_are_usage_errors_before_any_request(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, scenario = fault_server.script(text("never"))
    for argv in (
        ["run", "hi", "--small", "--base-url", url],
        ["run", "hi", "--model", str(tmp_path / "missing.gguf")],
        ["run", "   "],
        ["run", "hi", "--small", "--model", "x.gguf"],
    ):
        done = await cli(*argv, *store_args(tmp_path), env=model_env(url), cwd=tmp_path)
        assert done.returncode == 2, (argv, done.stderr)
        assert len(done.stderr.splitlines()) == 1, done.stderr
    assert scenario.requests == []


async def test_ctrl_c_cancels_the_turn_stores_it_and_exits_130(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, scenario = fault_server.script(text("Once upon", stall=60))
    argv = [*CLI, "run", "Tell a story", "--json", *store_args(tmp_path)]
    process = await trio.lowlevel.open_process(
        argv, env=model_env(url), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        with trio.fail_after(30):
            # The server records the request from its own thread: poll.
            while not scenario.requests:  # noqa: ASYNC110
                await trio.sleep(0.05)
            await trio.sleep(0.5)  # the first piece is out: the turn is mid-stream
        process.send_signal(signal.SIGINT)
        with trio.fail_after(30):
            await process.wait()
        stderr, stdout = await read_all(process.stderr), await read_all(process.stdout)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                await pipe.aclose()
    assert process.returncode == 130, stderr
    out = json.loads(stdout)
    assert out["status"] == "cancelled"
    shown = await cli(
        "sessions", "show", out["session"], *store_args(tmp_path), env=model_env(url), cwd=tmp_path
    )
    assert "you> Tell a story" in shown.stdout


async def test_a_malformed_tool_call_is_asked_again_once_without_tools(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, scenario = fault_server.script(malformed_tool_call(), text("Hi there."))
    done = await cli(
        "run", "Say hi", "--json", *store_args(tmp_path), env=model_env(url), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["text"] == "Hi there."
    first, second = (r.body for r in scenario.requests)
    assert first["tools"] and "tools" not in second
    assert sent_messages(second) == sent_messages(first)


async def test_a_malformed_tool_call_twice_ends_the_turn_with_a_final_typed_error(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, scenario = fault_server.script(malformed_tool_call())
    done = await cli(
        "run", "Say hi", "--json", *store_args(tmp_path), env=model_env(url), cwd=tmp_path
    )
    assert done.returncode == 1
    out = json.loads(done.stdout)
    assert out["status"] == "failed" and out["error"]["kind"] == "llm_invalid_response"
    assert len(scenario.requests) == 2  # no retries of a request that cannot succeed
    # The session goes on: the next turn of it works.
    url2, _ = fault_server.script(text("Fine."))
    again = await cli(
        "run", "hi", "--session", out["session"], "--json", *store_args(tmp_path),
        env=model_env(url2), cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 0 and json.loads(again.stdout)["text"] == "Fine."


async def test_repeated_identical_tool_calls_are_bounded(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    # The model calls the same tool with the same arguments forever (the last reply repeats).
    url, scenario = fault_server.script(tool_call("calculate", {"expression": "1 + 1"}))
    done = await cli(
        "run", "Loop", "--json", *store_args(tmp_path), env=model_env(url), cwd=tmp_path
    )
    assert done.returncode == 1
    out = json.loads(done.stdout)
    assert out["status"] == "failed" and out["error"]["kind"] == "limit_exceeded"
    statuses = [c["status"] for c in out["tool_calls"]]
    assert statuses[:2] == ["ok", "ok"]  # max_repeated_calls = 2
    assert set(statuses[2:]) == {"error"}
    assert all("do not repeat" in c["result"] for c in out["tool_calls"][2:])
    assert len(scenario.requests) == 7  # max_tool_turns = 6 rounds, then the limit


async def test_a_tool_that_needs_approval_is_denied_without_a_terminal_and_runs_with_yes(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    write = tool_call("write_file", {"path": "note.txt", "content": "hi"})
    url, _ = fault_server.script(write, text("Done."))
    denied = await cli(
        "run", "Write", "--json", *store_args(tmp_path), env=model_env(url), cwd=tmp_path
    )
    (call,) = json.loads(denied.stdout)["tool_calls"]
    assert call["status"] == "denied" and "use --yes" in call["result"]
    assert not (tmp_path / "note.txt").exists()
    url, _ = fault_server.script(write, text("Done."))
    allowed = await cli(
        "run", "Write", "--yes", "--json", *store_args(tmp_path), env=model_env(url), cwd=tmp_path
    )
    (call,) = json.loads(allowed.stdout)["tool_calls"]
    assert call["status"] == "ok" and (tmp_path / "note.txt").read_text() == "hi"


async def test_image_and_file_go_after_the_prompt_in_the_servers_wire_shape(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    (tmp_path / "cat.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "q3.pdf").write_bytes(b"%PDF-1.4")
    url, scenario = fault_server.script(text("A cat and a report."))
    done = await cli(
        "run", "What are these?", "--image", "cat.png", "--file", "q3.pdf",
        *store_args(tmp_path), env=model_env(url), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sent_messages(scenario.requests[0].body)[-1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What are these?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {
                "type": "file",
                "file": {
                    "file_data": "data:application/pdf;base64,JVBERi0xLjQ=",
                    "filename": "q3.pdf",
                },
            },
        ],
    }


async def test_a_missing_or_wrong_image_is_a_usage_error_before_any_request(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("hi")
    url, scenario = fault_server.script(text("never"))
    for image in ("missing.png", "notes.txt"):
        done = await cli(
            "run", "hi", "--image", image, *store_args(tmp_path), env=model_env(url), cwd=tmp_path
        )
        assert done.returncode == 2 and image in done.stderr, done.stderr
    assert scenario.requests == []
