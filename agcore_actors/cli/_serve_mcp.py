"""``agcore-actors serve --mcp``: the configured default agent as an MCP tool, over stdin
and stdout (``--stdio``, for Claude Desktop, Cursor and other MCP clients that start a
command) or streamable HTTP on a loopback address (``--http HOST:PORT``; the URL of the
endpoint is the ``serving on`` line on stderr). See :mod:`agcore_actors.serve._mcp`.
SIGTERM stops it (exit 0); SIGINT cancels every turn, each committed as cancelled (exit
130)."""

from __future__ import annotations

import argparse
import functools
import signal
import sys

import trio

from ..actor import ActorRef
from ..config import Settings
from ._cmd_serve import settings_host


async def serve_mcp(args: argparse.Namespace) -> int:
    """Serve until end of input (stdio) or SIGTERM (HTTP: the server stops taking
    requests, the turns in flight finish within the host's drain timeout); exit 0."""
    from ..serve._logging import serving_line
    from ..serve._mcp import McpHttpConfig, serve_mcp_http, serve_mcp_stdio

    settings: Settings = args.settings
    async with settings_host(settings) as (host, store):
        agents = {settings.default_agent: host}
        sessions = store if isinstance(store, ActorRef) else None
        if args.stdio:
            return await serve_mcp_stdio(agents, store=sessions)
        bind, port = args.http
        config = McpHttpConfig(host=bind, port=port, allowed_hosts=tuple(args.allowed_host or ()))
        with trio.open_signal_receiver(signal.SIGTERM) as signals:

            async def shutdown() -> None:
                async for _ in signals:
                    return

            async with trio.open_nursery() as nursery:
                url = await nursery.start(
                    functools.partial(
                        serve_mcp_http, agents, config, shutdown=shutdown, store=sessions
                    )
                )
                print(serving_line(url, json_format=args.json_logs), file=sys.stderr, flush=True)
    return 0
