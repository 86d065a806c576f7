"""``agcore-actors mcp``: talk to one MCP server from the command line.

::

    agcore-actors mcp tools --config claude_desktop_config.json --server time
    agcore-actors mcp tools -- mcp-server-time --local-timezone UTC
    agcore-actors mcp call get_current_time '{"timezone": "UTC"}' -- mcp-server-time
    agcore-actors mcp call echo '{"text": "hi"}' --url http://127.0.0.1:8000/mcp

The server is named by an ``mcpServers`` config file plus a server name, by
``--url`` (streamable HTTP, ``--header K=V`` repeatable), or by a stdio
command after ``--`` (``--env K=V`` repeatable). Exit status: 0 ok, 1 the
tool reported an error or the server failed, 2 bad usage or configuration.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import msgspec
import trio

from ..mcp import (
    ClientOptions,
    HttpServer,
    McpConfigError,
    McpError,
    ServerConfig,
    StdioServer,
    load_config,
    open_client,
)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = commands.add_parser("mcp", help="list or call the tools of an MCP server")
    sub = mcp.add_subparsers(dest="mcp_command", required=True)
    tools = sub.add_parser("tools", help="list a server's tools")
    _server_options(tools)
    tools.add_argument("--json", action="store_true", help="print the raw tool list as JSON")
    tools.set_defaults(func=_run_tools)
    call = sub.add_parser("call", help="call one tool with JSON arguments")
    call.add_argument("tool", help="the tool's name on the server")
    call.add_argument("arguments", nargs="?", default="{}", help="a JSON object (default {})")
    _server_options(call)
    call.set_defaults(func=_run_call)


def _server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="a JSON file with an 'mcpServers' object")
    parser.add_argument("--server", help="the server's name in --config")
    parser.add_argument("--url", help="a streamable HTTP endpoint")
    parser.add_argument("--header", action="append", default=[], help="K=V for --url")
    parser.add_argument("--env", action="append", default=[], help="K=V for a stdio command")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    parser.add_argument("command", nargs="*", help="a stdio server command (after --)")


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise McpConfigError(f"{what} must be KEY=VALUE, not {item!r}")
        out[key] = value
    return out


def _server(args: argparse.Namespace) -> tuple[str, ServerConfig]:
    chosen = [bool(args.config), bool(args.url), bool(args.command)]
    if sum(chosen) != 1:
        raise McpConfigError("name the server with one of --config/--server, --url or -- COMMAND")
    if args.config:
        servers = load_config(args.config)
        if args.server is None:
            if len(servers) != 1:
                raise McpConfigError(f"--server is needed; {args.config} has {sorted(servers)}")
            return next(iter(servers.items()))
        if args.server not in servers:
            raise McpConfigError(f"no server {args.server!r} in {args.config}: {sorted(servers)}")
        return args.server, servers[args.server]
    if args.url:
        return "http", HttpServer(args.url, _pairs(args.header, "--header"))
    command, *rest = args.command
    return command, StdioServer(command, rest, _pairs(args.env, "--env"))


def _run(args: argparse.Namespace, action: Any) -> int:
    try:
        name, config = _server(args)
        options = ClientOptions(request_timeout=args.timeout, connect_timeout=args.timeout)
        return int(trio.run(action, name, config, options))
    except McpConfigError as exc:
        print(f"agcore-actors mcp: {exc}", file=sys.stderr)
        return 2
    except McpError as exc:
        print(f"agcore-actors mcp: {exc}", file=sys.stderr)
        return 1


def _run_tools(args: argparse.Namespace) -> int:
    async def action(name: str, config: ServerConfig, options: ClientOptions) -> int:
        async with open_client(name, config, options=options) as client:
            tools = await client.list_tools()
        if args.json:
            print(msgspec.json.encode(tools).decode())
            return 0
        for tool in tools:
            summary = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
            print(f"{tool.name}\t{summary}")
        return 0

    return _run(args, action)


def _run_call(args: argparse.Namespace) -> int:
    try:
        arguments = msgspec.json.decode(args.arguments)
    except msgspec.DecodeError as exc:
        print(f"agcore-actors mcp: arguments are not valid JSON: {exc}", file=sys.stderr)
        return 2
    if not isinstance(arguments, dict):
        print("agcore-actors mcp: arguments must be a JSON object", file=sys.stderr)
        return 2

    async def action(name: str, config: ServerConfig, options: ClientOptions) -> int:
        async with open_client(name, config, options=options) as client:
            result = await client.call_tool(args.tool, arguments)
        if result.text:
            print(result.text)
        elif result.structured is not None:
            print(msgspec.json.encode(result.structured).decode())
        if result.is_error:
            print(f"agcore-actors mcp: tool {args.tool!r} reported an error", file=sys.stderr)
            return 1
        return 0

    return _run(args, action)
