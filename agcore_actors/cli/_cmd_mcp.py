"""``agcore-actors mcp``: talk to one MCP server from the command line.

The server is named by an ``mcpServers`` config file plus a server name, by
``--url`` (streamable HTTP, ``--header K=V`` repeatable), or by a stdio
command after ``--`` (``--env K=V`` repeatable). A bad server configuration is a
usage error (exit 2); a server that fails, or a tool that reports an error, exits 1
(the tool's own output still goes to stdout).
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable

import trio

from ..config import ConfigError
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
from ._common import FAILURE, OK, add_command, add_group, examples, print_json, warn
from ._convert import http_url, json_object, key_value, positive_float

Action = Callable[[str, ServerConfig, ClientOptions], Awaitable[int]]


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub = add_group(
        commands,
        "mcp",
        help="list or call the tools of an MCP server",
        epilog=examples(
            "agcore-actors mcp tools --config claude_desktop_config.json --server time",
            "agcore-actors mcp tools --json -- mcp-server-time --local-timezone UTC",
            'agcore-actors mcp call get_current_time \'{"timezone": "UTC"}\' -- mcp-server-time',
            'agcore-actors mcp call echo \'{"text": "hi"}\' --url http://127.0.0.1:8000/mcp',
            "agcore-actors mcp login github",
        ),
    )
    tools = add_command(
        sub,
        "tools",
        _run_tools,
        help="list a server's tools",
        usage_errors=(McpConfigError,),
        trailing="server_command",
    )
    _server_options(tools)
    tools.add_argument("--json", action="store_true", help="print the raw tool list as JSON")
    call = add_command(
        sub,
        "call",
        _run_call,
        help="call one tool with JSON arguments",
        usage_errors=(McpConfigError,),
        trailing="server_command",
    )
    call.add_argument("tool", help="the tool's name on the server")
    call.add_argument(
        "arguments", nargs="?", type=json_object, default={}, help="a JSON object (default {})"
    )
    _server_options(call)
    call.add_argument("--json", action="store_true", help="print the whole result as JSON")
    login = add_command(
        sub,
        "login",
        _run_login,
        help="authorize this client with an OAuth server (its entry has an 'oauth' object)",
        usage_errors=(McpConfigError, ConfigError),
    )
    login.add_argument("server", help="the server's name in the configuration")
    login.add_argument(
        "--config",
        help="a JSON file with an 'mcpServers' object (default: the agcore-actors config)",
    )
    login.add_argument("--browser", action="store_true", help="open the URL in a browser")
    login.add_argument(
        "--timeout", type=positive_float, default=300.0, help="seconds to wait for the person"
    )


def _server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="a JSON file with an 'mcpServers' object")
    parser.add_argument("--server", help="the server's name in --config")
    parser.add_argument("--url", type=http_url, help="a streamable HTTP endpoint")
    parser.add_argument(
        "--header", type=key_value, action="append", default=[], help="K=V for --url"
    )
    parser.add_argument(
        "--env", type=key_value, action="append", default=[], help="K=V for a stdio command"
    )
    parser.add_argument("--timeout", type=positive_float, default=30.0, help="seconds per request")
    parser.add_argument(
        "server_command", nargs="*", metavar="COMMAND", help="a stdio server command (after --)"
    )


def _server(args: argparse.Namespace) -> tuple[str, ServerConfig]:
    chosen = [bool(args.config), bool(args.url), bool(args.server_command)]
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
        return "http", HttpServer(args.url, dict(args.header))
    command, *rest = args.server_command
    return command, StdioServer(command, rest, dict(args.env))


def _run(args: argparse.Namespace, action: Action) -> int:
    name, config = _server(args)
    options = ClientOptions(request_timeout=args.timeout, connect_timeout=args.timeout)
    return int(trio.run(action, name, config, options))


def _run_tools(args: argparse.Namespace) -> int:
    async def action(name: str, config: ServerConfig, options: ClientOptions) -> int:
        async with open_client(name, config, options=options) as client:
            tools = await client.list_tools()
        if args.json:
            print_json(tools)
            return OK
        for tool in tools:
            summary = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
            print(f"{tool.name}\t{summary}")
        return OK

    return _run(args, action)


def _run_login(args: argparse.Namespace) -> int:
    from ..mcp._login import login

    if args.config:
        servers = load_config(args.config)
    else:
        from ..config import load_settings, mcp_servers

        servers = mcp_servers(load_settings())
    server = servers.get(args.server)
    if server is None:
        raise McpConfigError(f"no MCP server {args.server!r} configured: {sorted(servers)}")
    if not isinstance(server, HttpServer) or server.oauth is None:
        raise McpConfigError(f"mcpServers.{args.server}: only an HTTP server with 'oauth' logs in")

    def show(text: str) -> None:
        print(text, flush=True)

    async def main() -> int:
        try:
            tools = await login(
                args.server, server, show=show, browser=args.browser, timeout=args.timeout
            )
        except McpError as exc:
            warn(args.prog, exc.kind, str(exc))
            return FAILURE
        print(f"authorized: {args.server} ({tools} tools)", flush=True)
        return OK

    return int(trio.run(main))


def _run_call(args: argparse.Namespace) -> int:
    async def action(name: str, config: ServerConfig, options: ClientOptions) -> int:
        async with open_client(name, config, options=options) as client:
            result = await client.call_tool(args.tool, args.arguments)
        if args.json:
            print_json(result)
        elif result.text:
            print(result.text)
        elif result.structured is not None:
            print_json(result.structured)
        if result.is_error:
            warn(args.prog, "tool_error", f"tool {args.tool!r} reported an error")
            return FAILURE
        return OK

    return _run(args, action)
