"""``agcore-actors mcp login``: a person authorizes this client once, in a browser.

:func:`loopback_authorizer` listens on ``127.0.0.1`` (``port``, 0 for any free one) for
the authorization server's redirect to ``/callback``; its ``redirect`` prints the
authorization URL (and opens a browser when asked). :func:`login` then connects with it:
the SDK's provider discovers, registers, runs PKCE, and the tokens land in the server's
:class:`~agcore_actors.mcp._oauth.TokenStore`, where every later connection (an actor's
too) finds and refreshes them. The wait for the redirect is bounded (``timeout``).
"""

from __future__ import annotations

import urllib.parse
import webbrowser
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import trio

from ._client import ClientOptions, open_client
from ._config import HttpServer
from ._errors import McpAuthError
from ._oauth import TokenStore, oauth_auth

MAX_REQUEST_BYTES = 16 * 1024
PAGE = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n\r\n"
    b"agcore-actors is authorized. You can close this window.\n"
)
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class LoopbackAuthorizer:
    """See the module docstring."""

    def __init__(
        self,
        name: str,
        listener: trio.SocketListener,
        show: Callable[[str], None],
        browser: bool,
        timeout: float,
    ) -> None:
        self.name = name
        self.listener = listener
        port = listener.socket.getsockname()[1]
        self.redirect_uri = f"http://127.0.0.1:{port}/callback"
        self.show = show
        self.browser = browser
        self.timeout = timeout

    async def redirect(self, authorization_url: str) -> None:
        self.show(
            f"Open this URL to authorize agcore-actors for '{self.name}':\n{authorization_url}"
        )
        if self.browser:
            await trio.to_thread.run_sync(webbrowser.open, authorization_url)

    async def callback(self) -> tuple[str, str | None, str | None]:
        with trio.move_on_after(self.timeout):
            while True:
                stream = await self.listener.accept()
                async with stream:
                    found = await self._read(stream)
                    await stream.send_all(PAGE if found is not None else NOT_FOUND)
                if found is not None:
                    return found
        raise McpAuthError(self.name, f"no authorization within {self.timeout:g} s")

    async def _read(self, stream: trio.SocketStream) -> tuple[str, str | None, str | None] | None:
        head = b""
        with trio.move_on_after(10):
            while b"\r\n" not in head and len(head) < MAX_REQUEST_BYTES:
                chunk = await stream.receive_some(4096)
                if not chunk:
                    break
                head += chunk
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) < 2 or parts[0] != "GET":
            return None
        target = urllib.parse.urlsplit(parts[1])
        query = urllib.parse.parse_qs(target.query)
        if target.path != "/callback":
            return None
        if "error" in query:
            raise McpAuthError(self.name, f"the authorization server said {query['error'][0]!r}")
        if "code" not in query:
            return None
        return query["code"][0], query.get("state", [None])[0], query.get("iss", [None])[0]


@asynccontextmanager
async def loopback_authorizer(
    name: str,
    *,
    port: int = 0,
    show: Callable[[str], None] = print,
    browser: bool = False,
    timeout: float = 300.0,
) -> AsyncIterator[LoopbackAuthorizer]:
    """A :class:`LoopbackAuthorizer` listening on 127.0.0.1:``port`` until the block ends."""
    (listener,) = await trio.open_tcp_listeners(port, host="127.0.0.1")
    async with listener:
        yield LoopbackAuthorizer(name, listener, show, browser, timeout)


async def login(
    name: str,
    server: HttpServer,
    *,
    store: TokenStore | None = None,
    show: Callable[[str], None] = print,
    browser: bool = False,
    timeout: float = 300.0,
    options: ClientOptions | None = None,
) -> int:
    """Authorize this client for server ``name``; return how many tools it then lists.

    Forgets the server's stored tokens first (a fresh login), keeps its registration.
    Raises :class:`McpAuthError` (or another ``McpError``) when it fails."""
    if server.oauth is None:
        raise McpAuthError(name, "its configuration has no 'oauth' entry")
    store = store or TokenStore(name, server.url)
    store.forget_tokens()
    port = server.oauth.redirect_port
    async with loopback_authorizer(
        name, port=port, show=show, browser=browser, timeout=timeout
    ) as person:
        auth = oauth_auth(name, server, store=store, authorizer=person)
        options = options or ClientOptions(connect_timeout=timeout + 30)
        async with open_client(name, server, options=options, auth=auth) as client:
            return len(await client.list_tools())
