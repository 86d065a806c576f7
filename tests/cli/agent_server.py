"""Streamed OpenAI replies for the agent commands (``run``, ``chat``) on the fault server,
and a way to run the command as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from tests.peers.fault_server import Reply, chunk, sse, sse_reply, usage_chunk

USAGE = {"prompt_tokens": 30, "completion_tokens": 6, "total_tokens": 36}
CLI = [sys.executable, "-m", "agcore_actors.cli"]
#: What llama.cpp streams when the model's tool call does not parse (HTTP status 200).
PEG_ERROR = {
    "error": {
        "code": 500,
        "message": "The model produced output that does not match the expected peg-native format",
        "type": "server_error",
    }
}


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> Reply:
    """A streamed assistant message that calls ``name`` (arguments in two pieces)."""
    text = json.dumps(arguments)
    function = {"name": name, "arguments": text[: len(text) // 2]}
    head = {"index": 0, "id": call_id, "type": "function", "function": function}
    tail = {"index": 0, "function": {"arguments": text[len(text) // 2 :]}}
    return sse_reply(
        *sse(
            chunk({"role": "assistant", "tool_calls": [head]}),
            chunk({"tool_calls": [tail]}, "tool_calls"),
            usage_chunk(USAGE),
        )
    )


def text(*pieces: str, stall: float = 0.0) -> Reply:
    """A streamed text answer in ``pieces``; ``stall`` seconds of silence after the first
    (the stream then never ends in time: a turn to cancel)."""
    events = [chunk({"role": "assistant", "content": pieces[0]})]
    events += [chunk({"content": piece}) for piece in pieces[1:]]
    body = sse(*events, done=False)
    if stall:  # chunked: the client cannot know the body is not complete
        return sse_reply(*body, stall, framing="chunked")
    return sse_reply(*body, *sse(chunk({}, "stop"), usage_chunk(USAGE)))


def malformed_tool_call() -> Reply:
    """llama.cpp's answer to a call of a tool the model was not given (see docs/local-model.md)."""
    return sse_reply(*sse(chunk({"role": "assistant"}), PEG_ERROR, done=False))


def clean_env(**values: str) -> dict[str, str]:
    """This environment without provider settings, plus ``values``; the child imports
    this checkout's package (not an installed one: a worktree tests its own code)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    base.pop("AGCORE_ACTORS_DATA", None)
    base["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(Path(__file__).resolve().parents[2]), base.get("PYTHONPATH")) if p
    )
    return {**base, **values}


def model_env(url: str, **values: str) -> dict[str, str]:
    return clean_env(OPENAI_BASE_URL=url, OPENAI_API_KEY="sk-test", OPENAI_MODEL="m", **values)


async def cli(
    *argv: str, env: dict[str, str], cwd: Path, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``agcore-actors ARGV`` as a real process; stdout and stderr as text."""
    with trio.fail_after(timeout):
        done = await trio.run_process(
            [*CLI, *argv],
            env=env,
            cwd=cwd,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def sent_messages(body: Any) -> list[dict[str, Any]]:
    """The messages of a recorded request."""
    assert isinstance(body, dict)
    messages = body["messages"]
    assert isinstance(messages, list)
    return messages


async def read_all(stream: trio.abc.ReceiveStream | None) -> str:
    """Everything ``stream`` sends until it closes, as text."""
    assert stream is not None
    data = b""
    while piece := await stream.receive_some():
        data += piece
    return data.decode()
