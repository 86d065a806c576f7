"""``agcore-actors serve``: run agent sessions as a long-lived service.

``--stdio`` reads JSON-lines commands on stdin and writes turn events on stdout
(:func:`agcore_actors.serve.serve_stdio`); ``--http HOST:PORT`` serves the HTTP API
(:func:`agcore_actors.serve.serve_http`); every HTTP request but ``/healthz`` needs a bearer
token: ``--token-file``, else ``AGCORE_SERVE_TOKEN``, else (loopback binds only) a fresh
one shown once on stderr after the ``serving on`` line. The runtime is built from the configuration
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
import tomllib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from ..agent import SessionHost
from ..config import ConfigError, Settings, load_settings, open_runtime
from ._common import INTERRUPTED, add_command, examples
from ._convert import int_at_least, non_negative_float
from ._errors import UsageError
from ._extras import require
from ._runtime import is_postgres_url
from ._telemetry import check as check_telemetry
from ._telemetry import route_logs, turn_tracer


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
    if args.store and is_postgres_url(args.store):
        store = attrs.evolve(settings.store, url=args.store, path=None)
        settings = attrs.evolve(settings, store=store)
    elif args.store:
        store = attrs.evolve(settings.store, path=args.store, url=None)
        settings = attrs.evolve(settings, store=store)
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
    with turn_tracer(settings) as tracer:
        async with settings_host(settings) as (host, _):
            source = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
            sink = trio.lowlevel.FdStream(os.dup(sys.stdout.fileno()))
            config = StdioConfig(
                drain_timeout=settings.host.drain_timeout,
                tenant=args.tenant or "",
                max_line=args.max_body or StdioConfig().max_line,
            )
            async with source, sink:
                return await serve_stdio(host, source, sink, config, tracer=tracer)


def _token(args: argparse.Namespace, bind: str) -> tuple[str | None, bool]:
    """The bearer token (``--token-file``, else ``AGCORE_SERVE_TOKEN``, else a fresh one
    for a loopback bind) and whether it was made here (then it is shown once)."""
    from ..serve._auth import fresh_token, is_loopback

    if args.token_file:
        try:
            with open(args.token_file, encoding="utf-8") as file:
                token = file.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read --token-file: {exc.__class__.__name__}") from None
        if not token:
            raise UsageError("--token-file is empty")
        return token, False
    from_env = os.environ.get("AGCORE_SERVE_TOKEN") or None
    if from_env is None and is_loopback(bind):
        return fresh_token(), True
    return from_env, False


def _tenants(path: str | None) -> tuple[Any, ...]:
    """The tenants of ``--tenants PATH``: a TOML file of ``[[tenants]]`` tables with
    ``name``, ``token`` and ``scopes`` (default ``["turns", "read"]``)."""
    from ..serve import Tenant

    if path is None:
        return ()
    try:
        with open(path, "rb") as file:
            data = tomllib.load(file)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read --tenants: {exc.__class__.__name__}: {exc}") from None
    tables = data.get("tenants")
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise UsageError("--tenants: expected [[tenants]] tables with name, token, scopes")
    tenants = []
    for index, table in enumerate(tables):
        extra = sorted(set(table) - {"name", "token", "scopes"})
        if extra:
            raise UsageError(f"--tenants: tenant {index + 1}: unknown key(s) {', '.join(extra)}")
        try:
            tenants.append(Tenant(**table))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"--tenants: tenant {index + 1}: {exc}") from None
    return tuple(tenants)


async def _serve_http(args: argparse.Namespace) -> int:
    from ..serve import HttpConfig, serve_http
    from ..serve._logging import serving_line, token_line

    bind, port = args.http
    token, made = _token(args, bind)
    settings: Settings = args.settings
    drain = settings.host.drain_timeout
    allowed = tuple(args.allowed_host or ())
    try:
        config = HttpConfig(
            host=bind,
            port=port,
            token=token,
            tenants=_tenants(args.tenants),
            drain_timeout=drain,
            allowed_hosts=allowed,
            max_admitted=args.max_admitted,
            **({"max_body": args.max_body} if args.max_body else {}),
        )
    except ValueError as exc:
        raise UsageError(f"{exc} (set AGCORE_SERVE_TOKEN or --token-file)") from None
    status = 0
    with (
        turn_tracer(settings) as tracer,
        trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals,
    ):
        async with settings_host(settings) as (host, store), trio.open_nursery() as nursery:

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
                if made and config.token is not None:
                    line = token_line(url, config.token, json_format=args.json_logs)
                    print(line, file=sys.stderr, flush=True)

            serving = (serve_http, host, config, store, shutdown, tracer)
            url = await nursery.start(_serve, *serving)
            await announce(url)
    return status


async def _serve(
    serve_http: Any,
    host: SessionHost,
    config: Any,
    store: Any,
    shutdown: Any,
    tracer: Any,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    # One of several hosts: requests for sessions others own are forwarded to them.
    forward = None
    if host.cluster is not None:
        from ..serve._forward import ForwardConfig, Forwarder, host_locate

        own = ForwardConfig(host_id=host.cluster.host, address=host.cluster.config.address)
        forward = Forwarder(host_locate(host), own)
    try:
        await serve_http(host, config, store=store, shutdown=shutdown, tracer=tracer,
                         forward=forward, task_status=task_status)  # fmt: skip
    finally:
        if forward is not None:
            with trio.CancelScope(shield=True):
                await forward.aclose()


def _run(args: argparse.Namespace) -> int:
    if args.mcp:
        require("serve --mcp", "mcp", *(("hypercorn",) if args.http else ()))
        if args.tenant or args.tenants or args.token_file:
            raise UsageError("--mcp takes no --tenant, --tenants or --token-file")
        from ..serve._auth import is_loopback

        if args.http and not is_loopback(args.http[0]):
            raise UsageError("serve --mcp --http binds loopback addresses only (no auth yet)")
    elif args.http:
        require("serve --http", "hypercorn", "prometheus_client")
    from ..serve import configure_logging

    if args.tenant:
        if args.http:
            raise UsageError("--tenant is for --stdio (--http takes --tenants)")
        from ..serve._auth import check_id

        try:
            check_id("tenant", args.tenant)
        except ValueError as exc:
            raise UsageError(f"--tenant: {exc}") from None
    args.settings = settings = _settings(args)
    check_telemetry(settings)
    level = args.log_level or settings.logging.level
    log_format = args.log_format or settings.logging.format
    args.json_logs = log_format == "json"
    handler = configure_logging(level, json_format=args.json_logs)
    if settings.telemetry.tracing:
        route_logs(handler)
    if args.mcp:
        try:
            from ._serve_mcp import serve_mcp

            mcp_status: int = trio.run(serve_mcp, args)
        except KeyboardInterrupt:
            return INTERRUPTED
        return mcp_status
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
            "agcore-actors serve --mcp --stdio   # for Claude Desktop, Cursor, ...",
        ),
        usage_errors=(ConfigError,),
    )
    mode = serve.add_mutually_exclusive_group(required=True)
    mode.add_argument("--stdio", action="store_true", help="JSON lines on stdin/stdout")
    mode.add_argument(
        "--http", type=_host_port, metavar="HOST:PORT", help="serve HTTP (needs the serve extra)"
    )
    serve.add_argument(
        "--mcp",
        action="store_true",
        help="speak MCP instead: each agent is an MCP tool (needs the mcp-oauth extra; "
        "with --http, loopback binds only)",
    )
    serve.add_argument(
        "--config",
        metavar="PATH",
        help="configuration file (default: ./agcore.toml, else the user's config.toml)",
    )
    serve.add_argument(
        "--store",
        metavar="PATH|URL",
        help="SQLite file of the sessions, or a postgresql:// database ([store] path / url)",
    )
    serve.add_argument(
        "--token-file",
        metavar="PATH",
        help="read the bearer token from PATH (default: AGCORE_SERVE_TOKEN, else a fresh "
        "one for a loopback bind, shown once on stderr)",
    )
    serve.add_argument(
        "--tenants",
        metavar="PATH",
        help="TOML file of [[tenants]] (name, token, scopes): named tokens, each seeing only "
        "its own sessions (--http)",
    )
    serve.add_argument(
        "--tenant",
        metavar="NAME",
        help="serve the sessions of tenant NAME only (--stdio: ids stored as NAME/id)",
    )
    serve.add_argument(
        "--max-admitted",
        type=int_at_least(1),
        metavar="N",
        help="turns admitted at once, running or waiting (--http; more get 503 with "
        "Retry-After; default: [host] max_turns_in_flight)",
    )
    serve.add_argument(
        "--max-body",
        type=int_at_least(1),
        metavar="BYTES",
        help="largest request body (--http) or line (--stdio), default 1048576: raise it for "
        "turns with images or files (their base64 counts)",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        metavar="NAME",
        help="a name the Host header may give besides the bound address (repeatable)",
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
