"""Real MCP peers: the official SDK's servers (2.x and 1.x) and mcp-server-time.

Installed by tests/peers/install_mcp.sh into ``.peers/mcp2``, ``.peers/mcp1`` and
``.peers/mcp-time``. The scripts they run live beside this module.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.peers import ROOT, free_port, http_ready, installed, running

HERE = Path(__file__).resolve().parent
SERVER_APP = HERE / "mcp_server_app.py"
RAW_SERVER = HERE / "mcp_raw_server.py"
OAUTH_SERVER = HERE / "oauth_server.py"


def peer_python(peer: str) -> str:
    """The interpreter of the ``mcp2`` or ``mcp1`` peer."""
    return str(installed(peer, "bin", "python", installer="install_mcp.sh"))


def time_server_command() -> str:
    """The ``mcp-server-time`` executable (a third-party server from PyPI)."""
    return str(installed("mcp-time", "bin", "mcp-server-time", installer="install_mcp.sh"))


def stdio_argv(peer: str) -> list[str]:
    """The argv of the SDK test server over stdio."""
    return [peer_python(peer), str(SERVER_APP), "stdio"]


@contextmanager
def http_server(peer: str, mode: str = "http") -> Iterator[str]:
    """Run the SDK test server over streamable HTTP (``mode`` ``http``, or
    ``http-resumable`` with an event store); yields its ``/mcp`` URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    argv = [peer_python(peer), str(SERVER_APP), mode, str(port)]
    with running(argv, ready=http_ready(url), name=f"MCP HTTP server ({peer})", timeout=30):
        yield url


@contextmanager
def sse_server(peer: str) -> Iterator[str]:
    """Run the SDK test server over the legacy HTTP+SSE transport; yields its ``/sse``
    URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/sse"
    argv = [peer_python(peer), str(SERVER_APP), "sse", str(port)]
    ready = http_ready(f"http://127.0.0.1:{port}/messages/")
    with running(argv, ready=ready, name=f"MCP SSE server ({peer})", timeout=30):
        yield url


@contextmanager
def raw_http_server(mode: str) -> Iterator[str]:
    """Run the hand-written HTTP server in ``mode``; yields its ``/mcp`` URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    argv = [sys.executable, str(RAW_SERVER), "http", mode, str(port)]
    with running(argv, ready=http_ready(url), name=f"raw MCP HTTP server ({mode})", timeout=30):
        yield url


@contextmanager
def oauth_server(lifetime: int = 3600) -> Iterator[str]:
    """Run the MCP server behind OAuth (``oauth_server.py``: access tokens live
    ``lifetime`` seconds); yields its ``/mcp`` URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    argv = [sys.executable, str(OAUTH_SERVER), str(port), str(lifetime)]
    with running(argv, ready=http_ready(url), name="OAuth MCP server", timeout=30):
        yield url


class Peers:
    """What a test needs to start MCP peers itself (the ``peers`` fixture)."""

    python = staticmethod(peer_python)
    stdio_argv = staticmethod(stdio_argv)
    time_server = staticmethod(time_server_command)
    root = ROOT
