"""End to end: the real local model (llama.cpp with Qwen2.5-Coder-0.5B, our tool
template) calls a function tool and the real mcp-server-time; the transcript reloads in a
new process and the next turn continues it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agcore_actors.local.messages import Endpoint
from tests.peers.mcp import time_server_command

ROOT = Path(__file__).resolve().parents[2]


def turn(db: Path, endpoint: Endpoint, prompt: str) -> dict[str, Any]:
    argv = [
        sys.executable, "-m", "tests.agent.e2e_worker", str(db), endpoint.base_url,
        endpoint.api_key, endpoint.model, time_server_command(), prompt,
    ]  # fmt: skip
    done = subprocess.run(
        argv,
        capture_output=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return result


@pytest.mark.slow
def test_tool_turns_on_the_local_model_survive_a_new_process(
    local_model: Endpoint, tmp_path: Path
) -> None:
    db = tmp_path / "e2e.db"
    first = turn(db, local_model, "Use the add tool to add 17 and 25.")
    assert first["status"] == "completed", first
    assert [(c["name"], c["status"], c["content"]) for c in first["tool_calls"]] == [
        ("add", "ok", "42")
    ], first
    assert "42" in first["text"]
    second = turn(
        db, local_model, "What is the current time in UTC? Use the time-get_current_time tool."
    )
    assert second["status"] == "completed", second
    assert [(c["name"], c["status"]) for c in second["tool_calls"]] == [
        ("time-get_current_time", "ok")
    ], second
    assert '"timezone"' in second["tool_calls"][0]["content"]
    # The second process loaded the first turn: two turns, and the first turn's four
    # messages (user, call, result, answer) before this turn's four.
    assert second["turns"] == 2 and second["messages"] == 8, second
