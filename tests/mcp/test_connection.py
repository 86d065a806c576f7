"""McpConnection actors against real MCP servers: the official SDK on both
lines (2.x MCPServer, 1.x FastMCP) over stdio and streamable HTTP, and the
third-party ``mcp-server-time`` package."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs
import msgspec
import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.actor import ActorError, Backoff
from agcore_actors.actor.policy import CircuitBreaker
from agcore_actors.mcp import (
    CallTool,
    GetStatus,
    HttpServer,
    ListTools,
    McpConnectionClosed,
    McpUnavailable,
    ServerConfig,
    StdioServer,
    server_spec,
)
from agcore_actors.tools import (
    ExecutorConfig,
    ToolExecutor,
    ToolStatus,
)
from tests.mcp.servers import CONFIG, run_tools, running, wait_for

pytestmark = pytest.mark.slow


async def exercise(config: ServerConfig) -> None:
    async with running({"srv": config}) as (system, registry, executor, seen):
        assert {"srv-echo", "srv-add", "srv-slow", "srv-fail"} <= set(registry.names())
        adapter = registry.get("srv-add")
        assert adapter is not None and getattr(adapter, "remote_name", None) == "add"
        ok, fail, missing = await run_tools(
            executor, ("srv-add", {"a": 2, "b": 3}), ("srv-fail", {"message": "bad"}), ("add", {})
        )
        assert (ok.status, ok.content) == (ToolStatus.OK, "5")
        assert fail.status is ToolStatus.ERROR and fail.recoverable
        assert "Error executing tool fail" in fail.content
        assert missing.status is ToolStatus.UNKNOWN_TOOL
        # server notifications surface as events
        (chatty,) = await run_tools(executor, ("srv-chatty", {"message": "hello"}))
        assert chatty.content == "logged hello"
        await wait_for(lambda: any(e.method == "notifications/message" for e in seen))
        log = next(e for e in seen if e.method == "notifications/message")
        assert log.server == "srv" and log.params["data"] == "hello"
        # a call that times out is withdrawn; the connection stays usable
        conn = system.lookup("mcp:srv")
        with pytest.raises(Exception) as info:
            await conn.ask(CallTool(name="slow", arguments={"seconds": 30}, timeout=0.3))
        assert type(info.value).__name__ == "McpTimeout"
        (again,) = await run_tools(executor, ("srv-echo", {"text": "still here"}))
        assert again.content == "still here"
        # the executor's per-call timeout cancels the call through both actors
        short = await system.spawn(
            lambda: ToolExecutor(registry, config=ExecutorConfig(default_timeout=0.3)),
            name="short",
        )
        slow, echo = await run_tools(
            short, ("srv-slow", {"seconds": 30}), ("srv-echo", {"text": "quick"})
        )
        assert (slow.status, echo.content) == (ToolStatus.TIMEOUT, "quick")
        (after,) = await run_tools(executor, ("srv-add", {"a": 1, "b": 1}))
        assert after.content == "2"
        status = await conn.ask(GetStatus())
        assert status.state == "connected" and status.protocol_version == "2025-11-25"


async def test_stdio_server(stdio_peer: str, peers: Any) -> None:
    python, *args = peers.stdio_argv(stdio_peer)
    await exercise(StdioServer(python, args))


async def test_http_server(http_server: tuple[str, str]) -> None:
    _, url = http_server
    await exercise(HttpServer(url))


async def test_kill_mid_call_restarts(stdio_peer: str, peers: Any) -> None:
    python, *args = peers.stdio_argv(stdio_peer)
    async with running({"srv": StdioServer(python, args)}) as (system, registry, executor, _):
        conn = system.lookup("mcp:srv")
        first_pid = (await conn.ask(CallTool(name="pid"))).structured["result"]
        errors: list[BaseException] = []

        async def slow_call() -> None:
            try:
                await conn.ask(CallTool(name="slow", arguments={"seconds": 30}))
            except Exception as exc:
                errors.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow_call)
            await trio.sleep(0.3)
            with pytest.raises(McpConnectionClosed):
                await conn.ask(CallTool(name="crash"))
        assert len(errors) == 1 and isinstance(errors[0], McpConnectionClosed)
        assert "exit status 3" in str(errors[0])
        # the supervisor restarts the connection; the tools come back
        with trio.fail_after(30):
            while True:
                try:
                    new_pid = (await conn.ask(CallTool(name="pid"))).structured["result"]
                    break
                except (McpConnectionClosed, McpUnavailable, ActorError):
                    # ActorError: a request caught by the restart itself.
                    await trio.sleep(0.05)
        assert new_pid != first_pid
        (ok,) = await run_tools(executor, ("srv-echo", {"text": "back"}))
        assert ok.content == "back"
        assert "srv-echo" in registry.names()
    with pytest.raises(ProcessLookupError):  # reaped: not even a zombie is left
        os.kill(new_pid, 0)


async def test_environment_allow_list(peers: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGCORE_SECRET_TOKEN", "hunter2")
    python, *args = peers.stdio_argv("mcp2")
    config = StdioServer(python, args, env={"GIVEN": "yes"})
    async with running({"srv": config}) as (_, _, executor, _):
        secret, given, path = await run_tools(
            executor,
            ("srv-getenv", {"name": "AGCORE_SECRET_TOKEN"}),
            ("srv-getenv", {"name": "GIVEN"}),
            ("srv-getenv", {"name": "PATH"}),
        )
        assert secret.content == "<unset>"
        assert given.content == "yes"
        assert path.content == os.environ["PATH"]


async def test_tools_relisted_on_list_changed(peers: Any) -> None:
    python, *args = peers.stdio_argv("mcp2")
    async with running({"srv": StdioServer(python, args)}) as (system, registry, executor, _):
        assert "srv-fresh" not in registry.names()
        (grown,) = await run_tools(executor, ("srv-grow", {"name": "fresh"}))
        assert grown.content == "added fresh"
        await wait_for(lambda: "srv-fresh" in registry.names())
        listed = await system.lookup("mcp:srv").ask(ListTools())
        assert "fresh" in [t.name for t in listed.tools]


async def test_breaker_parks_a_broken_server_only(peers: Any, tmp_path: Path) -> None:
    flag = tmp_path / "ready"
    python, *args = peers.stdio_argv("mcp2")
    gated = StdioServer(
        "/bin/sh", ["-c", f'test -f "{flag}" || exit 7; exec "$0" "$@"', python, *args]
    )
    healthy = StdioServer(python, args)
    breaker = CircuitBreaker(
        threshold=2,
        backoff=Backoff(initial=1.0, multiplier=2.0, cap=300.0, jitter=0.0),
        healthy_after=30.0,
    )
    async with running({"bad": gated, "good": healthy}, attrs.evolve(CONFIG, breaker=breaker)) as (
        system,
        _,
        executor,
        _,
    ):
        bad = system.lookup("mcp:bad")
        with trio.fail_after(20):
            while (await bad.ask(GetStatus())).state != "parked":  # noqa: ASYNC110
                await trio.sleep(0.05)
        with pytest.raises(McpUnavailable):
            await bad.ask(CallTool(name="echo", arguments={"text": "x"}))
        (good,) = await run_tools(executor, ("good-echo", {"text": "fine"}))
        assert good.content == "fine"
        flag.write_text("")
        with trio.fail_after(30):
            while (await bad.ask(GetStatus())).state != "connected":  # noqa: ASYNC110
                await trio.sleep(0.1)
        (ok,) = await run_tools(executor, ("bad-echo", {"text": "recovered"}))
        assert ok.content == "recovered"


async def test_third_party_time_server(peers: Any) -> None:
    config = StdioServer(peers.time_server(), ["--local-timezone", "UTC"])
    async with running({"time": config}) as (_, registry, executor, _):
        assert {"time-get_current_time", "time-convert_time"} <= set(registry.names())
        (now,) = await run_tools(executor, ("time-get_current_time", {"timezone": "UTC"}))
        assert now.status is ToolStatus.OK
        assert msgspec.json.decode(now.content)["timezone"] == "UTC"
        (bad,) = await run_tools(executor, ("time-get_current_time", {"timezone": "Nowhere/X"}))
        assert bad.status is ToolStatus.ERROR


async def test_status_is_connecting_until_the_first_connect_succeeds(
    peers: Any, tmp_path: Path
) -> None:
    flag = tmp_path / "go"
    python, *args = peers.stdio_argv("mcp2")
    waiting = StdioServer(
        "/bin/sh",
        ["-c", f'while ! test -f "{flag}"; do sleep 0.05; done; exec "$0" "$@"', python, *args],
    )
    async with ActorSystem(strict=True, seed=0) as system:
        await system.start_supervisor(server_spec("srv", server=waiting, config=CONFIG))
        conn = system.lookup("mcp:srv")
        assert (await conn.ask(GetStatus())).state == "connecting"
        flag.write_text("")
        listed = await conn.ask(ListTools())  # waits for the connect
        assert "echo" in [t.name for t in listed.tools]
        assert (await conn.ask(GetStatus())).state == "connected"
