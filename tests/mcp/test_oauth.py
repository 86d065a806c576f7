"""OAuth plumbing of our own: the token store, the configuration, errors without secrets.
The flows themselves run against the conformance framework's authorization servers
(tests/mcp/test_conformance.py)."""

from __future__ import annotations

import logging
import stat
import sys
from pathlib import Path

import pytest
import trio
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken  # the mcp-oauth extra

from agcore_actors.mcp import (
    ClientOptions,
    HttpServer,
    McpAuthRequired,
    McpConfigError,
    OAuthConfig,
    open_client,
    parse_config,
)
from agcore_actors.mcp._oauth import TokenStore, oauth_auth, token_directory
from agcore_actors.mcp._policy import secret_values
from tests.peers.mcp import oauth_server

SECRET = "s3cr3t-client-secret-value"


async def test_the_store_is_private_and_round_trips(tmp_path: Path) -> None:
    store = TokenStore("gh", "https://mcp.example/mcp", tmp_path / "tokens")
    assert await store.get_tokens() is None and not store.has_tokens()
    token = OAuthToken(access_token="at-123", refresh_token="rt-456", expires_in=60)
    await store.set_tokens(token)
    info = OAuthClientInformationFull(client_id="c1", client_secret=SECRET, redirect_uris=None)
    await store.set_client_info(info)
    loaded = await store.get_tokens()
    assert loaded is not None and loaded.access_token == "at-123"
    assert loaded.refresh_token == "rt-456"
    assert loaded.expires_in is not None and 0 < loaded.expires_in <= 60  # what is left
    assert (await store.get_client_info()).client_secret == SECRET  # type: ignore[union-attr]
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700
    assert [p.name for p in store.directory.iterdir()] == [store.path.name]  # no temp left
    # Another URL for the same name is another login.
    assert await TokenStore("gh", "https://other/mcp", tmp_path / "tokens").get_tokens() is None
    store.clear()
    assert await store.get_tokens() is None


async def test_concurrent_writes_leave_a_whole_file(tmp_path: Path) -> None:
    store = TokenStore("gh", "https://mcp.example/mcp", tmp_path)

    async def write(i: int) -> None:
        await trio.lowlevel.checkpoint()
        await store.set_tokens(OAuthToken(access_token=f"at-{i}"))

    async with trio.open_nursery() as nursery:
        for i in range(50):
            nursery.start_soon(write, i)
    assert (await store.get_tokens()).access_token.startswith("at-")  # type: ignore[union-attr]


def test_the_store_directory_follows_the_environment(tmp_path: Path) -> None:
    assert token_directory({"AGCORE_ACTORS_MCP_TOKENS": str(tmp_path)}) == tmp_path
    assert token_directory({"XDG_STATE_HOME": str(tmp_path), "HOME": "/nowhere"}) == (
        tmp_path / "agcore-actors" / "mcp-oauth"
    )


def test_oauth_config_is_parsed_and_its_secrets_redacted() -> None:
    servers = parse_config(
        {"mcpServers": {"gh": {"url": "https://x/mcp", "oauth": {"client_secret": SECRET}}}}
    )
    server = servers["gh"]
    assert isinstance(server, HttpServer) and server.oauth is not None
    assert SECRET not in repr(server)
    assert SECRET in secret_values(server)
    with pytest.raises(McpConfigError, match="oauth"):
        parse_config({"gh": {"url": "https://x/mcp", "oauth": {"grant": "implicit"}}})
    with pytest.raises(McpConfigError, match="client_id"):
        oauth_auth("gh", HttpServer("https://x/mcp", oauth=OAuthConfig(grant="client_credentials")))


async def test_an_actor_cannot_log_in_and_says_how(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with oauth_server() as url:
        server = HttpServer(url, oauth=OAuthConfig(client_id="pre", client_secret=SECRET))
        auth = oauth_auth("remote", server, store=TokenStore("remote", url, tmp_path))
        with pytest.raises(McpAuthRequired, match="agcore-actors mcp login remote"):
            async with open_client(
                "remote", server, options=ClientOptions(connect_timeout=10), auth=auth
            ):
                pass
    assert SECRET not in caplog.text


def test_without_the_sdk_oauth_is_one_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("mcp", "mcp.client", "mcp.client.auth"):
        monkeypatch.setitem(sys.modules, module, None)
    server = HttpServer("https://x/mcp", oauth=OAuthConfig())
    with pytest.raises(McpConfigError, match=r"pip install 'agcore-actors\[mcp-oauth\]'"):
        oauth_auth("gh", server)
