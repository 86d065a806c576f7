"""OAuth over real HTTP against an MCP server behind its own authorization server
(tests/peers/oauth_server.py: registration, PKCE, refresh, revocation): ``mcp login``,
refresh of stored tokens, and a 401 that needs a new authorization."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from agcore_actors.mcp import (
    ClientOptions,
    HttpServer,
    McpAuthRequired,
    OAuthConfig,
    open_client,
)
from agcore_actors.mcp._login import login, loopback_authorizer
from agcore_actors.mcp._oauth import TokenStore, oauth_auth
from tests.peers import ROOT
from tests.peers.mcp import oauth_server

pytestmark = pytest.mark.slow

OPTIONS = ClientOptions(request_timeout=30, connect_timeout=30)


def browse(url: str) -> str:
    """The person's browser: open the URL, follow the redirect to the loopback port."""
    with urllib.request.urlopen(url, timeout=30) as page:
        return str(page.read().decode())


def person(nursery: trio.Nursery) -> Callable[[str], None]:
    """A ``show`` that hands the printed authorization URL to a browser."""

    def show(text: str) -> None:
        url = text.splitlines()[-1]
        nursery.start_soon(trio.to_thread.run_sync, browse, url)

    return show


async def whoami(client: Any) -> dict[str, Any]:
    result = await client.call_tool("whoami", {})
    answer: dict[str, Any] = json.loads(result.text)
    return answer


def test_login_through_the_cli_then_a_connection_uses_the_stored_tokens(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    with oauth_server() as url:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"srv": {"url": url, "oauth": {}}}}))
        env = {**os.environ, "AGCORE_ACTORS_MCP_TOKENS": str(tokens), "PYTHONPATH": str(ROOT)}
        argv = [sys.executable, "-m", "agcore_actors.cli", "mcp", "login", "srv"]
        process = subprocess.Popen(
            [*argv, "--config", str(config), "--timeout", "60"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        try:
            assert process.stdout is not None
            assert "Open this URL" in process.stdout.readline()
            assert "authorized" in browse(process.stdout.readline().strip())
            out, err = process.communicate(timeout=60)
        finally:
            process.kill()
            process.wait()
        assert process.returncode == 0, err
        assert "authorized: srv (2 tools)" in out
        assert "at-" not in out + err and "rt-" not in out + err  # no token printed
        store = TokenStore("srv", url, tokens)
        assert stat.S_IMODE(store.path.stat().st_mode) == 0o600

        async def connect() -> dict[str, Any]:
            server = HttpServer(url, oauth=OAuthConfig())
            auth = oauth_auth("srv", server, store=store)  # unattended, as an actor's
            async with open_client("srv", server, options=OPTIONS, auth=auth) as client:
                return await whoami(client)

        seen = trio.run(connect)
        assert seen["authorization_code"] == 1 and seen["refresh_token"] == 0


async def test_expired_tokens_are_refreshed_without_a_person(tmp_path: Path) -> None:
    store_dir = tmp_path / "tokens"
    with oauth_server() as url:
        server = HttpServer(url, oauth=OAuthConfig())
        async with trio.open_nursery() as nursery:
            store = TokenStore("srv", url, store_dir)
            assert await login("srv", server, store=store, show=person(nursery), timeout=60) == 2
        for _ in range(3):  # later connections, each from the store, after the expiry
            saved = json.loads(store.path.read_text())
            saved["tokens"]["expires_at"] -= 7200  # as if two hours had passed
            store.path.write_text(json.dumps(saved))
            auth = oauth_auth("srv", server, store=TokenStore("srv", url, store_dir))
            async with open_client("srv", server, options=OPTIONS, auth=auth) as client:
                seen = await whoami(client)
        assert seen["authorization_code"] == 1  # the person logged in once
        assert seen["refresh_token"] == 3  # single-use refresh tokens, each one stored
        assert seen["unauthorized"] == 1  # the login's first request only


async def test_a_401_needs_a_new_authorization(tmp_path: Path) -> None:
    store_dir = tmp_path / "tokens"
    with oauth_server() as url:
        server = HttpServer(url, oauth=OAuthConfig())
        async with trio.open_nursery() as nursery:
            await login(
                "srv", server, store=TokenStore("srv", url, store_dir), show=person(nursery)
            )
        # Unattended (an actor): the server revokes the token mid-session; the next call
        # gets a 401 and the error says what to run.
        auth = oauth_auth("srv", server, store=TokenStore("srv", url, store_dir))
        async with open_client("srv", server, options=OPTIONS, auth=auth) as client:
            await client.call_tool("revoke", {})
            with pytest.raises(McpAuthRequired, match="agcore-actors mcp login srv"):
                await client.call_tool("whoami", {})
        # With a person at hand, the same 401 is a new authorization and the call goes on.
        async with (
            trio.open_nursery() as nursery,
            loopback_authorizer("srv", show=person(nursery), timeout=60) as someone,
        ):
            store = TokenStore("srv", url, store_dir)
            auth = oauth_auth("srv", server, store=store, authorizer=someone)
            async with open_client("srv", server, options=OPTIONS, auth=auth) as client:
                await client.call_tool("revoke", {})
                seen = await whoami(client)
        # login, then one per 401: the first revocation outlived its session (initialize
        # is answered 401), the second is the one inside this session.
        assert seen["authorization_code"] == 3 and seen["unauthorized"] >= 3
