"""Fixtures for the real peers, shared by every test package (a plugin of tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agcore_actors.local.messages import Endpoint
from tests.peers import mcp
from tests.peers.fault_server import FaultServer
from tests.peers.local_model import local_model_server


@pytest.fixture(scope="session")
def fault_server() -> Iterator[FaultServer]:
    """The scriptable OpenAI/Anthropic fault server, on a thread of this process."""
    server = FaultServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session", params=["mcp2", "mcp1"])
def http_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(peer, URL) of an SDK MCP server over streamable HTTP, for both SDK lines."""
    with mcp.http_server(request.param) as url:
        yield request.param, url


@pytest.fixture(params=["mcp2", "mcp1"])
def stdio_peer(request: pytest.FixtureRequest) -> str:
    """The name of an SDK peer to run over stdio, for both SDK lines."""
    return str(request.param)


@pytest.fixture
def peers() -> type[mcp.Peers]:
    return mcp.Peers


@pytest.fixture(scope="session")
def local_model() -> Iterator[Endpoint]:
    """The embedded local model server (xllamacpp, Qwen2.5-Coder-0.5B, our template), for
    the whole session; an Endpoint with its ``.../v1`` base URL and API key."""
    with local_model_server() as endpoint:
        yield endpoint
