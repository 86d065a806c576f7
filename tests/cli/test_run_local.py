"""``agcore-actors run`` with no provider configured: the embedded model (the real 0.5B,
``--small``) starts under its supervisor and the turn makes a real tool call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.agent_server import clean_env, cli
from tests.peers import PEERS, installed
from tests.peers.local_model import INSTALLER, MODEL_FILE, python

pytestmark = pytest.mark.slow


async def test_run_without_a_provider_makes_a_real_tool_call_on_the_embedded_model(
    tmp_path: Path,
) -> None:
    installed("models", MODEL_FILE, installer=INSTALLER)
    env = clean_env(
        AGCORE_ACTORS_CACHE=str(PEERS),  # the peer's joined 0.5B: nothing is downloaded
        AGCORE_ACTORS_LOCAL_PYTHON=python(),
        AGCORE_ACTORS_DATA=str(tmp_path / "data"),
    )
    prompt = "What is 1234 * 5678 + 90? Use the calculate tool."
    done = await cli("run", prompt, "--small", "--json", env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "completed" and out["text"].strip()
    call = out["tool_calls"][0]
    assert call["name"] == "calculate" and call["status"] == "ok"
    assert call["result"].endswith("= 7006742")
    assert "starting the local model server (qwen2.5-coder-0.5b)" in done.stderr
    assert "first token after" in done.stderr
    assert (tmp_path / "data" / "sessions.db").is_file()
