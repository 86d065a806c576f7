"""McpConnection actors against real MCP servers that fail: secrets in errors, oversized
messages, restarts, names OpenAI refuses, readiness."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.actor import Backoff
from agcore_actors.actor.policy import CircuitBreaker
from agcore_actors.mcp import (
    CallTool,
    ClientOptions,
    GetStatus,
    HttpServer,
    McpConnectionClosed,
    McpError,
    McpMessageTooLarge,
    McpTimeout,
    McpUnavailable,
    StdioServer,
    open_client,
    server_spec,
    servers_spec,
    wait_ready,
)
from agcore_actors.tools import ToolRegistry, ToolStatus
from tests.mcp.servers import CONFIG, run_tools, running, wait_for
from tests.peers.mcp import raw_http_server

pytestmark = pytest.mark.slow


async def test_a_dying_servers_stderr_reaches_the_log_never_a_tool_message(
    peers: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agcore_actors.mcp")
    python, *args = peers.stdio_argv("mcp2")
    async with running({"srv": StdioServer(python, args)}) as (_, _, executor, _):
        (said,) = await run_tools(executor, ("srv-stderr", {"text": "config token=hunter2-xyz"}))
        assert said.content == "ok"
        (crashed,) = await run_tools(executor, ("srv-crash", {}))
    assert crashed.status is ToolStatus.ERROR and "exit status 3" in crashed.content
    assert "hunter2" not in crashed.content
    assert "hunter2-xyz" in caplog.text  # the operator still sees it


async def test_configured_env_values_never_reach_a_tool_message(peers: Any) -> None:
    secret = "tok-secret-987654"
    python, *args = peers.stdio_argv("mcp2")
    config = StdioServer(python, args, env={"UPSTREAM_TOKEN": secret})
    async with running({"srv": config}) as (_, _, executor, _):
        (leaked,) = await run_tools(executor, ("srv-leak", {"name": "UPSTREAM_TOKEN"}))
    assert leaked.status is ToolStatus.ERROR and "rejected credential" in leaked.content
    assert secret not in leaked.content and "[redacted]" in leaked.content


# -- one oversized message fails one request -------------------------------------------


async def test_an_oversized_answer_fails_only_its_own_request(stdio_peer: str, peers: Any) -> None:
    python, *args = peers.stdio_argv(stdio_peer)
    async with running({"srv": StdioServer(python, args)}) as (system, _, executor, _):
        conn = system.lookup("mcp:srv")
        pid = (await conn.ask(CallTool(name="pid"))).text
        outcome: list[BaseException | str] = []

        async def slow() -> None:
            try:
                outcome.append(
                    (await conn.ask(CallTool(name="slow", arguments={"seconds": 1}))).text
                )
            except Exception as exc:
                outcome.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow)
            await trio.sleep(0.2)
            (big,) = await run_tools(executor, ("srv-big", {"size": 17 * 1024 * 1024}))
        assert big.status is ToolStatus.ERROR and "over 16777216 bytes" in big.content
        assert outcome == ["slept 1"] or outcome == ["slept 1.0"]  # the other call lived on
        assert (await conn.ask(CallTool(name="pid"))).text == pid  # the same server
        assert (await conn.ask(GetStatus())).state == "connected"


async def test_the_message_cap_is_an_option(peers: Any) -> None:
    python, *args = peers.stdio_argv("mcp2")
    options = ClientOptions(request_timeout=20.0, max_message_bytes=100_000)
    config = attrs.evolve(CONFIG, client=options)
    async with running({"srv": StdioServer(python, args)}, config) as (system, _, _, _):
        conn = system.lookup("mcp:srv")
        with pytest.raises(McpMessageTooLarge) as info:
            await conn.ask(CallTool(name="big", arguments={"size": 200_000}))
        assert info.value.limit == 100_000
        small = await conn.ask(CallTool(name="big", arguments={"size": 1_000}))
        assert small.text == "x" * 1_000


# -- an ask while the connection fails or restarts answers an MCP error ------------------


async def test_asks_during_failed_connects_and_restarts_get_mcp_errors(peers: Any) -> None:
    python, *args = peers.stdio_argv("mcp2")
    failing = StdioServer("/bin/sh", ["-c", "sleep 0.3; exit 7", python, *args])
    config = attrs.evolve(
        CONFIG,
        breaker=CircuitBreaker(
            threshold=3, backoff=Backoff(initial=30.0, jitter=0.0), healthy_after=30.0
        ),
    )
    async with ActorSystem(strict=True, seed=0) as system:
        await system.start_supervisor(server_spec("srv", server=failing, config=config))
        conn = system.lookup("mcp:srv")
        errors: list[Exception] = []

        async def ask() -> None:
            try:
                await conn.ask(CallTool(name="echo", arguments={"text": "x"}))
            except Exception as exc:
                errors.append(exc)

        with trio.move_on_after(3):
            while True:  # asks at every stage: connecting, crashing, restarting, parked
                async with trio.open_nursery() as nursery:
                    for _ in range(3):
                        nursery.start_soon(ask)
                    await trio.sleep(0.1)
        assert errors and all(isinstance(e, McpError) for e in errors), errors
        assert any(isinstance(e, McpConnectionClosed) for e in errors)
        assert any(isinstance(e, McpUnavailable) for e in errors)


# -- registry names every provider accepts ------------------------------------------------

OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


async def test_tool_names_are_sanitised_and_mapped_back(peers: Any) -> None:
    python, *args = peers.stdio_argv("mcp2")
    async with running({"my.tools v2": StdioServer(python, args)}) as (_, registry, executor, _):
        names = registry.names()
        assert names and all(OPENAI_NAME.fullmatch(n) for n in names), names
        echo = next(n for n in names if n.endswith("echo"))
        (said,) = await run_tools(executor, (echo, {"text": "hi"}))
        assert said.content == "hi"
        long_name = "a_tool_with_a_name_much_longer_than_the_sixty_four_characters_allowed"
        (grown,) = await run_tools(
            executor, (next(n for n in names if n.endswith("grow")), {"name": long_name})
        )
        assert grown.status is ToolStatus.OK
        await wait_for(lambda: len(registry.names()) == len(names) + 1)
        (added,) = set(registry.names()) - set(names)
        assert OPENAI_NAME.fullmatch(added) and len(added) == 64
        (result,) = await run_tools(executor, (added, {}))
        assert result.content == long_name  # the call reached the server's own name


# -- a timed-out handshake is an McpTimeout ---------------------------------------------------


async def test_a_hung_initialized_notification_is_an_mcp_timeout() -> None:
    with raw_http_server("deaf") as url:
        options = ClientOptions(request_timeout=0.5, connect_timeout=0.5, shutdown_grace=0.2)
        with pytest.raises(McpTimeout) as info:
            async with open_client("deaf", HttpServer(url), options=options):
                pass
    assert info.value.seconds == 0.5 and isinstance(info.value, TimeoutError)


# -- waiting until a server's tools are registered ------------------------------------------


async def test_wait_ready_returns_once_the_tools_are_registered(peers: Any, tmp_path: Path) -> None:
    flag = tmp_path / "go"
    python, *args = peers.stdio_argv("mcp2")
    late = StdioServer(
        "/bin/sh",
        ["-c", f'while ! test -f "{flag}"; do sleep 0.05; done; exec "$0" "$@"', python, *args],
    )
    registry = ToolRegistry()
    async with ActorSystem(strict=True, seed=0) as system:
        await system.start_supervisor(
            servers_spec({"late": late}, registry=registry, config=CONFIG)
        )
        conn = system.lookup("mcp:late")
        with pytest.raises(McpTimeout):
            await wait_ready(conn, timeout=0.5)
        assert "late-echo" not in registry
        flag.write_text("")
        status = await wait_ready(conn, timeout=20)
        assert status.state == "connected" and status.tools > 0
        assert "late-echo" in registry


async def test_wait_ready_on_a_parked_server_is_unavailable(peers: Any) -> None:
    python, *args = peers.stdio_argv("mcp2")
    broken = StdioServer("/bin/sh", ["-c", "exit 7", python, *args])
    config = attrs.evolve(
        CONFIG, breaker=CircuitBreaker(threshold=1, backoff=Backoff(initial=60.0, jitter=0.0))
    )
    async with ActorSystem(strict=True, seed=0) as system:
        await system.start_supervisor(server_spec("broken", server=broken, config=config))
        with pytest.raises(McpUnavailable):
            await wait_ready(system.lookup("mcp:broken"), timeout=20)
