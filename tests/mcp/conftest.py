"""Fixtures for tests against real MCP servers (installed by tests/peers/install_mcp.sh)."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / ".peers"
SERVER_APP = Path(__file__).with_name("server_app.py")


def peer_python(peer: str) -> str:
    path = PEERS / peer / "bin" / "python"
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run tests/peers/install_mcp.sh")
    return str(path)


def time_server_command() -> str:
    path = PEERS / "mcp-time" / "bin" / "mcp-server-time"
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run tests/peers/install_mcp.sh")
    return str(path)


def stdio_argv(peer: str) -> list[str]:
    return [peer_python(peer), str(SERVER_APP), "stdio"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_http_server(peer: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [peer_python(peer), str(SERVER_APP), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"MCP HTTP server ({peer}) exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=0.5)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"MCP HTTP server ({peer}) did not start within 30 s")


@pytest.fixture(scope="session", params=["mcp2", "mcp1"])
def http_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    proc, url = start_http_server(request.param)
    try:
        yield request.param, url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(params=["mcp2", "mcp1"])
def stdio_peer(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Peers:
    python = staticmethod(peer_python)
    stdio_argv = staticmethod(stdio_argv)
    time_server = staticmethod(time_server_command)
    root = ROOT


@pytest.fixture
def peers() -> type[Peers]:
    return Peers
