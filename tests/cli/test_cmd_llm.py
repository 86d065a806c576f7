"""``agcore-actors llm complete`` as a real process against the fault server."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import trio

from tests.peers.fault_server import FaultServer, chunk, error_reply, sse, sse_reply, usage_chunk

KEY = "sk-cli-secret-789"


def env(**values: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    return {**base, **values}


async def run_cli(*argv: str, environ: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "agcore_actors.cli", "llm", "complete", *argv]
    with trio.fail_after(30):
        return await trio.run_process(
            command, env=environ, capture_stdout=True, capture_stderr=True, check=False
        )


def _stream_reply() -> list[bytes | float]:
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    return sse(
        chunk({"role": "assistant", "content": "Hel"}),
        chunk({"content": "lo"}, "stop"),
        usage_chunk(usage),
    )


async def test_text_is_streamed_to_stdout(fault_server: FaultServer) -> None:
    url, scenario = fault_server.script(sse_reply(*_stream_reply()))
    result = await run_cli("Say hi", environ=env(OPENAI_BASE_URL=url, OPENAI_MODEL="m1"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == "Hello\n"
    (req,) = scenario.requests
    assert req.body["model"] == "m1" and req.body["messages"][-1]["content"] == "Say hi"


async def test_json_output(fault_server: FaultServer) -> None:
    url, _ = fault_server.script(sse_reply(*_stream_reply()))
    result = await run_cli(
        "Say hi", "--json", "--base-url", url, "--system", "Be kind", environ=env()
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["text"] == "Hello" and data["finish_reason"] == "stop"
    assert data["usage"]["input_tokens"] == 5 and data["usage"]["output_tokens"] == 2
    assert data["tool_calls"] == [] and data["reasoning"] is None


async def test_failure_exits_non_zero_with_one_line_naming_the_kind(
    fault_server: FaultServer,
) -> None:
    url, _ = fault_server.script(error_reply(401, f"Incorrect API key provided: {KEY}"))
    result = await run_cli("hi", environ=env(OPENAI_BASE_URL=url, OPENAI_API_KEY=KEY))
    assert result.returncode == 1
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "authentication" in lines[0] and KEY not in lines[0]


async def test_no_provider_configured_is_a_usage_error() -> None:
    result = await run_cli("hi", environ=env())
    assert result.returncode == 2
    assert b"OPENAI_API_KEY" in result.stderr
