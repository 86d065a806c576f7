"""``agcore-actors serve``: run agent sessions as a long-lived service.

``--stdio`` reads JSON-lines commands on stdin and writes turn events on stdout
(:func:`agcore_actors.serve.serve_stdio`); ``--http HOST:PORT`` serves the HTTP API
(:func:`agcore_actors.serve.serve_http`). The runtime is built from the environment:
the model from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``OPENAI_MODEL`` (as ``llm``
reads them), the agent's instructions from ``AGCORE_INSTRUCTIONS``, the sessions in the
SQLite file ``--store`` (in memory without it). Exit status: 0 after end of input or
SIGTERM, 130 after SIGINT.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import trio

from ..actor import ActorSystem
from ..agent import Agent, AgentBuilder, HostConfig, SessionHost, StoreTurns
from ..llm import ProviderRegistry, provider_spec
from ..store import InMemorySessions, SqliteSessions, session_store_spec
from ._common import INTERRUPTED, add_command, examples
from ._convert import non_negative_float
from ._errors import UsageError
from ._llm_config import build_provider

DEFAULT_INSTRUCTIONS = "You are a helpful assistant."


@asynccontextmanager
async def env_host(
    env: Mapping[str, str], *, store: str | None, drain_timeout: float
) -> AsyncIterator[tuple[SessionHost, object]]:
    """A running SessionHost over the model the environment names; yields the host and
    the store actor's ref. Leaving it drains the host and stops every actor."""
    no_flags = argparse.Namespace(provider=None, base_url=None, api_key=None, model=None)
    provider = build_provider(no_flags, env)
    backend = SqliteSessions(store) if store else InMemorySessions()
    async with ActorSystem() as system:
        root = system.root
        llm = await root.start_child(
            provider_spec("llm", registry=ProviderRegistry().register(provider))
        )
        store_ref = await root.start_child(session_store_spec("store", backend=backend))
        agent = Agent(
            name="assistant", instructions=env.get("AGCORE_INSTRUCTIONS", DEFAULT_INSTRUCTIONS)
        )
        bundle = AgentBuilder().provider(llm).store(StoreTurns(store_ref)).agent(agent).build()
        config = HostConfig(drain_timeout=drain_timeout)
        async with SessionHost(system, bundle, config) as host:
            yield host, store_ref


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


async def _serve_stdio(args: argparse.Namespace) -> int:
    from ..serve import StdioConfig, serve_stdio

    async with env_host(os.environ, store=args.store, drain_timeout=args.drain_timeout) as (
        host,
        _,
    ):
        source = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
        sink = trio.lowlevel.FdStream(os.dup(sys.stdout.fileno()))
        async with source, sink:
            return await serve_stdio(
                host, source, sink, StdioConfig(drain_timeout=args.drain_timeout)
            )


async def _serve_http(args: argparse.Namespace) -> int:
    from ..serve import HttpConfig, serve_http

    bind, port = args.http
    token = os.environ.get("AGCORE_SERVE_TOKEN") or None
    try:
        config = HttpConfig(host=bind, port=port, token=token, drain_timeout=args.drain_timeout)
    except ValueError as exc:
        raise UsageError(f"{exc} (set AGCORE_SERVE_TOKEN)") from None
    status = 0
    async with env_host(os.environ, store=args.store, drain_timeout=args.drain_timeout) as (
        host,
        store,
    ):
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async with trio.open_nursery() as nursery:

                async def shutdown() -> None:
                    nonlocal status
                    async for signum in signals:
                        if signum == signal.SIGINT:
                            status = INTERRUPTED
                            nursery.cancel_scope.cancel()
                        return

                async def announce(url: str) -> None:
                    print(f"serving on {url}", file=sys.stderr, flush=True)

                url = await nursery.start(_serve, serve_http, host, config, store, shutdown)
                await announce(url)
    return status


async def _serve(
    serve_http: Any,
    host: SessionHost,
    config: Any,
    store: Any,
    shutdown: Any,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    await serve_http(host, config, store=store, shutdown=shutdown, task_status=task_status)


def _run(args: argparse.Namespace) -> int:
    from ..serve import configure_logging

    configure_logging(args.log_level, json_format=args.log_format == "json")
    if args.stdio:
        status: int = trio.run(_serve_stdio, args)
        return status
    http_status: int = trio.run(_serve_http, args)
    return http_status


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = add_command(
        commands,
        "serve",
        _run,
        help="serve agent sessions over stdin/stdout or HTTP",
        epilog=examples(
            'echo \'{"session": "s1", "text": "hi"}\' | agcore-actors serve --stdio',
            "agcore-actors serve --http 127.0.0.1:8000 --store bot.db",
        ),
    )
    mode = serve.add_mutually_exclusive_group(required=True)
    mode.add_argument("--stdio", action="store_true", help="JSON lines on stdin/stdout")
    mode.add_argument("--http", type=_host_port, metavar="HOST:PORT", help="serve HTTP")
    serve.add_argument("--store", metavar="PATH", help="SQLite file of the sessions")
    serve.add_argument(
        "--log-format", choices=["text", "json"], default="text", help="stderr log lines"
    )
    serve.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        default="warning",
        help="least severe record logged (default warning)",
    )
    serve.add_argument(
        "--drain-timeout",
        type=non_negative_float,
        default=30.0,
        help="seconds turns in flight get at shutdown (default 30)",
    )
