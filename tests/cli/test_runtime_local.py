"""The CLI's default runtime on the real embedded model (the 0.5B): a tool turn through
the supervised server actor and the SessionHost, the server killed mid-turn (a typed
error, a restart, the next turn works), and no server process left after shutdown."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import trio

from agcore_actors.agent import messages as am
from agcore_actors.cli._runtime import Runtime, RuntimeOptions, open_runtime
from agcore_actors.local import GetEndpoint
from agcore_actors.local.messages import Endpoint
from tests.peers import PEERS, installed
from tests.peers.local_model import INSTALLER, MODEL_FILE, N_CTX, python

pytestmark = pytest.mark.slow


def options(tmp_path: Path) -> RuntimeOptions:
    installed("models", MODEL_FILE, installer=INSTALLER)
    return RuntimeOptions(
        small=True,
        model_cache=PEERS / "models",
        local_python=python(),
        local_ctx=N_CTX,
        store=tmp_path / "sessions.db",
        tools_root=tmp_path,
    )


async def endpoint(runtime: Runtime) -> Endpoint:
    found: Endpoint = await runtime.system.lookup("local-model:local").ask(
        GetEndpoint(), timeout=120
    )
    return found


async def turn(runtime: Runtime, session: str, text: str, kill: int = 0) -> am.TurnResult:
    """Run a turn; with ``kill``, SIGKILL that server at the turn's first piece of text."""
    async with runtime.host.submit(session, text) as events:
        async for event in events:
            if kill and isinstance(event, am.TextDelta):
                os.kill(kill, signal.SIGKILL)
                kill = 0
            if isinstance(event, am.TurnCompleted | am.TurnFailed | am.TurnCancelled):
                return event.result
    raise AssertionError("the turn ended without its last event")


def group_is_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_a_killed_server_fails_its_turn_is_restarted_and_no_process_outlives_the_runtime(
    tmp_path: Path,
) -> None:
    with trio.fail_after(600):
        async with open_runtime(options(tmp_path), {}) as runtime:
            assert runtime.model == "local qwen2.5-coder-0.5b"
            first = await endpoint(runtime)
            done = await turn(runtime, "s", "What is 1234 * 5678 + 90? Use the calculate tool.")
            assert done.status == "completed" and done.tool_calls == 1, done

            story = "Count from 1 to 200, one number per line."
            failed = await turn(runtime, "s", story, kill=first.pid)
            assert failed.status == "failed"
            assert failed.error_kind in ("llm_stream", "llm_connection"), failed

            second = await endpoint(runtime)
            for _ in range(600):  # the supervisor restarts it after its backoff
                if second.pid != first.pid:
                    break
                await trio.sleep(0.1)
                second = await endpoint(runtime)
            assert second.restarts == 1 and second.base_url == first.base_url
            again = await turn(runtime, "s", "What is 12 * 12? Use the calculate tool.")
            assert again.status == "completed", again
            assert not group_is_gone(second.pid)
    assert group_is_gone(first.pid) and group_is_gone(second.pid)
