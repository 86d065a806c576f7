"""``agcore-actors serve``: run agent sessions as a long-lived service.

``--stdio`` reads JSON-lines commands on stdin and writes turn events on stdout
(:func:`agcore_actors.serve.serve_stdio`); ``--http HOST:PORT`` serves the HTTP API
(:func:`agcore_actors.serve.serve_http`). The runtime is built from the configuration
(``--config PATH``, else ``./agcore.toml``, else the user's ``config.toml``; see
``docs/configuration.md``) with the environment over it: ``OPENAI_BASE_URL`` /
``OPENAI_API_KEY`` / ``OPENAI_MODEL`` or ``ANTHROPIC_API_KEY`` configure a provider, and
without any the embedded local model serves; ``AGCORE_INSTRUCTIONS`` sets the default
agent's instructions. ``--store``, ``--drain-timeout`` and the log flags win over the
file. A bad configuration is one line and exit 2; so is ``--http`` without the ``serve``
extra (hypercorn, prometheus_client), checked first (``--stdio`` does not need it).
Exit status: 0 after end of input or SIGTERM, 130 after SIGINT.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from ..agent import SessionHost
from ..config import ConfigError, Settings, load_settings, open_runtime
from ._common import INTERRUPTED, add_command, examples
from ._convert import non_negative_float
from ._errors import UsageError
from ._extras import require


@asynccontextmanager
async def settings_host(settings: Settings) -> AsyncIterator[tuple[SessionHost, object]]:
    """A running SessionHost over the runtime ``settings`` describe (see
    :func:`agcore_actors.config.open_runtime`), one of a cluster if ``[cluster]`` is
    enabled; yields the host and the store actor's ref.
    Leaving it drains the host and stops every actor."""
    async with (
        open_runtime(settings) as runtime,
        SessionHost(
            runtime.system, runtime.bundle, runtime.host_config, cluster=runtime.lease_keeper()
        ) as host,
    ):
        yield host, runtime.store


def _settings(args: argparse.Namespace) -> Settings:
    """The configuration (``--config``, else the usual lookup) with the flags over it."""
    settings = load_settings(args.config)
    if args.store and args.store.startswith(("postgresql:", "postgres:")):
        settings = attrs.evolve(settings, store=attrs.evolve(settings.store, url=args.store))
    elif args.store:
        settings = attrs.evolve(settings, store=attrs.evolve(settings.store, path=args.store))
    if args.drain_timeout is not None:
        host = attrs.evolve(settings.host, drain_timeout=args.drain_timeout)
        settings = attrs.evolve(settings, host=host)
    return settings


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


async def _serve_stdio(args: argparse.Namespace) -> int:
    from ..serve import StdioConfig, serve_stdio

    settings: Settings = args.settings
    async with settings_host(settings) as (host, _):
        source = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
        sink = trio.lowlevel.FdStream(os.dup(sys.stdout.fileno()))
        async with source, sink:
            return await serve_stdio(
                host, source, sink, StdioConfig(drain_timeout=settings.host.drain_timeout)
            )


async def _serve_http(args: argparse.Namespace) -> int:
    from ..serve import HttpConfig, serve_http
    from ..serve._logging import serving_line

    bind, port = args.http
    token = os.environ.get("AGCORE_SERVE_TOKEN") or None
    settings: Settings = args.settings
    drain = settings.host.drain_timeout
    try:
        config = HttpConfig(host=bind, port=port, token=token, drain_timeout=drain)
    except ValueError as exc:
        raise UsageError(f"{exc} (set AGCORE_SERVE_TOKEN)") from None
    status = 0
    async with settings_host(settings) as (host, store):
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
                    line = serving_line(url, json_format=args.json_logs)
                    print(line, file=sys.stderr, flush=True)

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
    # One of several hosts: requests for sessions others own are forwarded to them.
    forward = None
    if host.cluster is not None:
        from ..serve._forward import ForwardConfig, Forwarder, host_locate

        forward = Forwarder(host_locate(host), ForwardConfig(host_id=host.cluster.host))
    try:
        await serve_http(host, config, store=store, shutdown=shutdown, forward=forward,
                         task_status=task_status)  # fmt: skip
    finally:
        if forward is not None:
            with trio.CancelScope(shield=True):
                await forward.aclose()


def _run(args: argparse.Namespace) -> int:
    if args.http:
        require("serve --http", "hypercorn", "prometheus_client")
    from ..serve import configure_logging

    args.settings = settings = _settings(args)
    level = args.log_level or settings.logging.level
    log_format = args.log_format or settings.logging.format
    args.json_logs = log_format == "json"
    configure_logging(level, json_format=args.json_logs)
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
            "agcore-actors serve --stdio --config bot.toml",
        ),
        usage_errors=(ConfigError,),
    )
    mode = serve.add_mutually_exclusive_group(required=True)
    mode.add_argument("--stdio", action="store_true", help="JSON lines on stdin/stdout")
    mode.add_argument(
        "--http", type=_host_port, metavar="HOST:PORT", help="serve HTTP (needs the serve extra)"
    )
    serve.add_argument(
        "--config",
        metavar="PATH",
        help="configuration file (default: ./agcore.toml, else the user's config.toml)",
    )
    serve.add_argument(
        "--store",
        metavar="PATH|URL",
        help="SQLite file of the sessions ([store] path), or postgresql://… ([store] url)",
    )
    serve.add_argument(
        "--log-format", choices=["text", "json"], help="stderr log lines ([logging] format)"
    )
    serve.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        help="least severe record logged ([logging] level, default warning)",
    )
    serve.add_argument(
        "--drain-timeout",
        type=non_negative_float,
        help="seconds turns in flight get at shutdown ([host] drain_timeout, default 30)",
    )
