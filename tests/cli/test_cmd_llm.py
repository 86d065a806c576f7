"""``agcore-actors llm complete`` as a real process against the fault server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
import trio

from agcore_actors.local.messages import Endpoint
from tests.peers import default_sigint
from tests.peers.fault_server import (
    FaultServer,
    Reply,
    chunk,
    completion,
    error_reply,
    json_reply,
    sse,
    sse_reply,
    usage_chunk,
)

KEY = "sk-cli-secret-789"
COMMAND = [sys.executable, "-m", "agcore_actors.cli", "llm", "complete"]


def env(**values: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    return {**base, **values}


async def run_cli(*argv: str, environ: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    with trio.fail_after(30):
        return await trio.run_process(
            [*COMMAND, *argv], env=environ, capture_stdout=True, capture_stderr=True, check=False
        )


async def read_all(stream: trio.abc.ReceiveStream | None) -> bytes:
    assert stream is not None
    data = b""
    while chunk := await stream.receive_some():
        data += chunk
    return data


def _stream_reply() -> list[bytes | float]:
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    return sse(
        chunk({"role": "assistant", "content": "Hel"}),
        chunk({"content": "lo"}, "stop"),
        usage_chunk(usage),
    )


def _completion(model: str = "m1") -> Reply:
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    return json_reply(completion("Hello", usage=usage, model=model))


async def test_text_is_streamed_to_stdout(fault_server: FaultServer) -> None:
    url, scenario = fault_server.script(sse_reply(*_stream_reply()))
    result = await run_cli("Say hi", environ=env(OPENAI_BASE_URL=url, OPENAI_MODEL="m1"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == "Hello\n"
    assert result.stderr == b""
    (req,) = scenario.requests
    assert req.body["model"] == "m1" and req.body["messages"][-1]["content"] == "Say hi"


async def test_json_makes_one_plain_request_and_reports_its_usage(
    fault_server: FaultServer,
) -> None:
    # A plain (non-streamed) reply carries usage even from servers whose streams do
    # not (llama.cpp ignores stream_options.include_usage).
    url, scenario = fault_server.script(_completion())
    result = await run_cli(
        "Say hi",
        "--json",
        "--system",
        "Be kind",
        environ=env(OPENAI_BASE_URL=url, OPENAI_MODEL="m1"),
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["text"] == "Hello" and data["finish_reason"] == "stop"
    assert data["usage"]["input_tokens"] == 5 and data["usage"]["output_tokens"] == 2
    assert data["tool_calls"] == [] and data["reasoning"] is None and data["model"] == "m1"
    (req,) = scenario.requests
    assert not req.body.get("stream") and req.body["messages"][0]["content"] == "Be kind"


async def test_without_a_model_the_servers_only_model_is_named(
    fault_server: FaultServer,
) -> None:
    # llama.cpp echoes the requested model name: asked for "", it answers "".
    models = json_reply({"object": "list", "data": [{"id": "smollm2", "object": "model"}]})
    url, scenario = fault_server.script(models, _completion(model=""))
    result = await run_cli("Say hi", "--json", "--base-url", url, environ=env())
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["model"] == "smollm2"
    listing, chat = scenario.requests
    assert listing.path.endswith("/v1/models") and chat.body["model"] == "smollm2"


async def test_failure_exits_non_zero_with_one_line_naming_the_kind(
    fault_server: FaultServer,
) -> None:
    url, _ = fault_server.script(error_reply(401, f"Incorrect API key provided: {KEY}"))
    result = await run_cli("hi", environ=env(OPENAI_BASE_URL=url, OPENAI_API_KEY=KEY))
    assert result.returncode == 1
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "authentication" in lines[0] and KEY not in lines[0]
    assert lines[0].startswith("agcore-actors llm complete: ")


async def test_a_retry_is_announced_on_stderr_with_its_cause(fault_server: FaultServer) -> None:
    url, _ = fault_server.script(error_reply(503, "overloaded"), sse_reply(*_stream_reply()))
    result = await run_cli(
        "hi", "--retries", "1", environ=env(OPENAI_BASE_URL=url, OPENAI_MODEL="m1")
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"Hello\n"
    (line,) = result.stderr.decode().splitlines()
    assert line.startswith("agcore-actors llm complete: llm_request: ")
    assert "HTTP 503" in line and "overloaded" in line and "retry 1 of 1 in " in line


async def test_a_404_from_a_base_url_without_v1_hints_at_the_path(
    fault_server: FaultServer,
) -> None:
    url, _ = fault_server.script(json_reply({"detail": "Not Found"}, status=404))
    root = fault_server.root(url)
    result = await run_cli("hi", "--base-url", root, "--model", "m1", environ=env())
    assert result.returncode == 1
    (line,) = result.stderr.decode().splitlines()
    assert "HTTP 404" in line and f"try --base-url {root}/v1" in line


async def test_a_base_url_that_is_not_a_url_is_refused_at_once() -> None:
    with trio.fail_after(10):  # the old code retried a connection error for 9 s
        flag = await run_cli("hi", "--base-url", "not-a-url", environ=env())
        variable = await run_cli("hi", environ=env(OPENAI_BASE_URL="localhost:8080/v1"))
    assert flag.returncode == 2 and variable.returncode == 2
    assert flag.stderr.decode() == (
        "agcore-actors llm complete: usage: argument --base-url: not an http(s) URL: 'not-a-url'\n"
    )
    assert variable.stderr.decode() == (
        "agcore-actors llm complete: usage: OPENAI_BASE_URL: not an http(s) URL: "
        "'localhost:8080/v1'\n"
    )


@pytest.mark.parametrize("key", [KEY + "\n", "sk-clé-secrète"])
async def test_an_unusable_api_key_is_a_usage_error_that_never_shows_it(key: str) -> None:
    result = await run_cli(
        "hi", environ=env(OPENAI_BASE_URL="http://127.0.0.1:9/v1", OPENAI_API_KEY=key)
    )
    assert result.returncode == 2
    (line,) = result.stderr.decode().splitlines()
    assert "OPENAI_API_KEY" in line and key.strip() not in line and "sk-" not in line


async def test_no_provider_configured_is_a_usage_error() -> None:
    result = await run_cli("hi", environ=env())
    assert result.returncode == 2
    assert b"OPENAI_API_KEY" in result.stderr


@pytest.mark.parametrize("mode", [[], ["--json"]], ids=["stream", "json"])
async def test_ctrl_c_exits_130_with_one_line(fault_server: FaultServer, mode: list[str]) -> None:
    url, scenario = fault_server.script(Reply(delay=60))  # a server that never answers
    argv = [*COMMAND, "hi", "--model", "m1", "--base-url", url, *mode]
    process = await trio.lowlevel.open_process(
        argv,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )
    try:
        with trio.fail_after(30):
            # The server records the request from its own thread: poll.
            while not scenario.requests:  # noqa: ASYNC110
                await trio.sleep(0.05)
        process.send_signal(signal.SIGINT)
        with trio.fail_after(10):
            await process.wait()
        err, out = await read_all(process.stderr), await read_all(process.stdout)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                await pipe.aclose()
    assert process.returncode == 130
    assert err == b"agcore-actors llm complete: interrupted\n"
    assert out in (b"", b"\n")


@pytest.mark.slow
async def test_json_against_the_local_server_reports_usage_and_the_served_model(
    local_model: Endpoint,
) -> None:
    # No model configured: the server's only model is named (and asked for); --json asks
    # for a plain reply, which carries usage.
    argv = ["Say hi.", "--max-tokens", "8", "--json", "--timeout", "60"]
    key = local_model.api_key
    result = await run_cli(
        *argv, environ=env(OPENAI_BASE_URL=local_model.base_url, OPENAI_API_KEY=key)
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["model"] == local_model.model and data["text"]
    # (not <= 8: the server re-counts the text, and a split emoji counts more than once)
    assert data["usage"]["input_tokens"] > 0 and data["usage"]["output_tokens"] > 0
    # llama.cpp also serves the API at its root (the missing-/v1 hint is for servers that
    # answer 404 there: tested against the fault server above).
    root = local_model.base_url.removesuffix("/v1")
    at_root = await run_cli(
        "Say hi.", "--max-tokens", "8", "--base-url", root, environ=env(OPENAI_API_KEY=key)
    )
    assert at_root.returncode == 0, at_root.stderr
    assert at_root.stdout.strip() and at_root.stderr == b""
