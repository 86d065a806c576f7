"""Run an example as a script against the fault server, a real HTTP server on 127.0.0.1
that answers OpenAI's Chat Completions from a script and records every request.

An example reads ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``OPENAI_MODEL``; these
helpers point them at a scenario of the session's fault server and run the example as a
child process, exactly as a user would (``python examples/NAME.py``), so what the tests
see is what the script prints and what reached the model over HTTP.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.peers.fault_server import (
    FaultServer,
    Piece,
    Reply,
    Scenario,
    chunk,
    completion,
    json_reply,
    sse,
    sse_reply,
    usage_chunk,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
USAGE = {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}


def answer(*pieces: str, pause: float = 0.0) -> Reply:
    """An answer in ``pieces`` (``pause`` seconds before each after the first) to a
    streamed call; the whole text as one chat completion to a plain one."""
    events: list[Piece] = []
    for index, piece in enumerate(pieces):
        if index and pause:
            events.append(pause)
        events.extend(sse(chunk({"content": piece}), done=False))
    events.extend(sse(chunk({}, finish="stop"), usage_chunk(USAGE)))
    plain = json_reply(completion("".join(pieces), usage=USAGE), delay=pause * (len(pieces) - 1))
    return sse_reply(*events, plain=plain)


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> Reply:
    """A reply that calls one tool, streamed or plain as the call asks."""
    function = {"name": name, "arguments": json.dumps(arguments)}
    call = {"index": 0, "id": call_id, "type": "function", "function": function}
    plain_call = {"id": call_id, "type": "function", "function": function}
    plain = completion(None, tool_calls=[plain_call], finish="tool_calls", usage=USAGE)
    return sse_reply(
        *sse(chunk({"tool_calls": [call]}), chunk({}, finish="tool_calls"), usage_chunk(USAGE)),
        plain=json_reply(plain),
    )


def completed(text: str) -> Reply:
    """A non-streamed answer (for ``Chat`` rather than ``ChatStream``)."""
    return json_reply(completion(text, usage=USAGE))


def run_example(
    name: str,
    base_url: str,
    *args: str,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60.0,
) -> subprocess.CompletedProcess[str]:
    """Run ``examples/<name>.py`` with the model at ``base_url``; its output, as text."""
    child_env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_MODEL": "test-model",
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env,
        check=False,
    )


def import_example(monkeypatch: pytest.MonkeyPatch, name: str, module: str) -> ModuleType:
    """``examples/<name>.py`` imported as ``module`` (examples/ on ``sys.path`` meanwhile)."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(module, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    found = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(found)
    return found


def run_example_alone(name: str) -> subprocess.CompletedProcess[str]:
    """Run ``examples/<name>.py`` as a script with no model and nothing of our environment
    but ``PYTHONPATH`` (a property-test example needs no server); its output, as text."""
    return subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def bodies(scenario: Scenario) -> list[dict[str, Any]]:
    """The JSON bodies of the requests the model got, in order."""
    return [request.body for request in scenario.requests]


def messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = body["messages"]
    return found


def script(server: FaultServer, replies: Sequence[Reply]) -> tuple[str, Scenario]:
    return server.script(*replies)
