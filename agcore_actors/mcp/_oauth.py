"""OAuth 2.1 for streamable-HTTP servers, on the official ``mcp`` SDK's auth providers.

A server whose entry has an ``oauth`` object (:class:`~agcore_actors.mcp.OAuthConfig`)
gets an ``httpx2.Auth`` in its transport: the SDK's provider, which discovers the
protected-resource and authorization-server metadata (with the 2025-03-26 fallbacks),
registers the client (dynamic registration, a client-id metadata document, or the
configured ``client_id``), runs the PKCE authorization-code flow or the
client-credentials grant (``client_secret`` or a ``private_key`` JWT), sends the
``resource`` parameter, picks scopes from ``WWW-Authenticate`` or the metadata, steps
up on a 403 ``insufficient_scope``, refreshes, and re-authorizes on a 401.

Tokens and the registered client live in a :class:`TokenStore`: one JSON file per
server under ``$XDG_STATE_HOME/agcore-actors/mcp-oauth`` (``~/.local/state`` when
unset), the directory 0700 and every file 0600, written atomically. Nothing here logs a
token or a secret.

Where a person is needed: an actor connecting a server has nobody to ask, so an
authorization-code flow that needs a browser fails with :class:`McpAuthRequired`
("run ``agcore-actors mcp login NAME``"); ``mcp login`` passes an
:class:`Authorizer` that prints the URL (or opens a browser) and takes the redirect
on a loopback port (:mod:`agcore_actors.mcp._login`).

The SDK is imported only here, and only when a server has ``oauth``: a missing SDK is
:class:`McpConfigError` naming the extra (``agcore-actors[mcp-oauth]``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import httpx2

from ._config import HttpServer
from ._errors import McpAuthRequired, McpConfigError

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

EXTRA = "mcp-oauth"
CLIENT_NAME = "agcore-actors"


def token_directory(env: dict[str, str] | None = None) -> Path:
    """``$AGCORE_ACTORS_MCP_TOKENS``, else ``$XDG_STATE_HOME/agcore-actors/mcp-oauth``."""
    env = dict(os.environ) if env is None else env
    if env.get("AGCORE_ACTORS_MCP_TOKENS"):
        return Path(env["AGCORE_ACTORS_MCP_TOKENS"])
    base = Path(env["XDG_STATE_HOME"]) if env.get("XDG_STATE_HOME") else None
    return (base or Path.home() / ".local" / "state") / "agcore-actors" / "mcp-oauth"


class TokenStore:
    """The tokens and client registration of one server, in one 0600 JSON file.

    The file is named by a hash of the server's name and URL, so a server moved to
    another URL starts a fresh login. Implements the SDK's ``TokenStorage`` protocol.
    """

    def __init__(self, name: str, url: str, directory: Path | None = None) -> None:
        self.directory = directory or token_directory()
        digest = hashlib.sha256(f"{name}\n{url}".encode()).hexdigest()[:16]
        self.path = self.directory / f"{digest}.json"

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # an unreadable store is an empty one: log in again
        return data if isinstance(data, dict) else {}

    def _write(self, key: str, value: Any) -> None:
        data = self._read()
        data[key] = value
        self._write_all(data)

    def _write_all(self, data: dict[str, Any]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.directory, 0o700)
        fd, temp = tempfile.mkstemp(dir=self.directory, prefix=".tokens-")  # 0600
        try:
            with os.fdopen(fd, "w") as out:
                json.dump(data, out)
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

    def forget_client(self) -> None:
        data = self._read()
        if "client" in data:
            del data["client"]
            self._write_all(data)

    def forget_tokens(self) -> None:
        data = self._read()
        if "tokens" in data:
            del data["tokens"]
            self._write_all(data)

    def clear(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def has_tokens(self) -> bool:
        return "tokens" in self._read()

    def client_info(self) -> Any:
        return self._read().get("client")

    def set_client_raw(self, client: dict[str, Any]) -> None:
        self._write("client", client)

    async def get_tokens(self) -> OAuthToken | None:
        """The stored tokens; ``expires_in`` is what is left of the lifetime (0 once
        expired, so the provider refreshes before using them)."""
        from mcp.shared.auth import OAuthToken

        raw = self._read().get("tokens")
        if raw is None:
            return None
        expires_at = raw.pop("expires_at", None)
        if isinstance(expires_at, int | float):
            raw["expires_in"] = max(0, int(expires_at - time.time()))
        return OAuthToken.model_validate(raw)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        raw = tokens.model_dump(mode="json", exclude_none=True)
        if tokens.expires_in is not None:  # wall time: it must hold across processes
            raw["expires_at"] = time.time() + int(tokens.expires_in)
        self._write("tokens", raw)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._read().get("client")
        return None if raw is None else OAuthClientInformationFull.model_validate(raw)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._write("client", client_info.model_dump(mode="json", exclude_none=True))


class Authorizer(Protocol):
    """The person's side of the authorization-code flow."""

    #: Where the authorization server sends the browser back.
    redirect_uri: str

    async def redirect(self, authorization_url: str) -> None:
        """Show the person ``authorization_url`` (print it, open a browser)."""

    async def callback(self) -> tuple[str, str | None, str | None]:
        """Wait for the redirect; its ``code``, ``state`` and ``iss``."""


class _Unattended:
    """An actor's authorizer: there is no person, so a flow that needs one fails."""

    redirect_uri = "http://127.0.0.1/callback"

    def __init__(self, name: str) -> None:
        self.name = name

    async def redirect(self, authorization_url: str) -> None:
        raise McpAuthRequired(self.name)

    async def callback(self) -> tuple[str, str | None, str | None]:
        raise McpAuthRequired(self.name)


def _sdk_auth() -> Any:
    try:
        import mcp.client.auth as sdk_auth
    except ImportError:
        raise McpConfigError(
            f"OAuth needs the official MCP SDK: pip install 'agcore-actors[{EXTRA}]'"
        ) from None
    return sdk_auth


def _provider_class() -> Any:
    """The SDK's authorization-code provider, which also takes the expiry of tokens
    loaded from the store (the SDK's own takes a loaded token as valid until a 401, and
    then needs a person again although it could have refreshed)."""
    base = _sdk_auth().OAuthClientProvider

    class StoredExpiryProvider(base):  # type: ignore[misc,valid-type]
        async def _initialize(self) -> None:
            await super()._initialize()
            tokens = self.context.current_tokens
            if tokens is not None and tokens.expires_in is not None:
                self.context.update_token_expiry(tokens)

    return StoredExpiryProvider


def oauth_auth(
    name: str,
    server: HttpServer,
    *,
    store: TokenStore | None = None,
    authorizer: Authorizer | None = None,
) -> httpx2.Auth:
    """The ``httpx2.Auth`` of server ``name``'s ``oauth`` entry (see the module docstring)."""
    config = server.oauth
    if config is None:
        raise McpConfigError(f"mcpServers.{name}: no 'oauth' entry")
    _sdk_auth()
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    store = store or TokenStore(name, server.url)
    if config.grant == "client_credentials":
        if config.client_id is None:
            raise McpConfigError(f"mcpServers.{name}.oauth: client_credentials needs client_id")
        if config.private_key is not None:
            signer = SignedJWTParameters(
                issuer=config.client_id,
                subject=config.client_id,
                signing_key=config.private_key,
                signing_algorithm=config.signing_algorithm,
            )
            provider: httpx2.Auth = PrivateKeyJWTOAuthProvider(
                server_url=server.url,
                storage=store,
                client_id=config.client_id,
                assertion_provider=signer.create_assertion_provider(),
                scope=config.scope,
            )
            return provider
        if config.client_secret is None:
            raise McpConfigError(
                f"mcpServers.{name}.oauth: client_credentials needs client_secret or private_key"
            )
        method = config.token_auth if config.token_auth != "none" else None
        return ClientCredentialsOAuthProvider(
            server_url=server.url,
            storage=store,
            client_id=config.client_id,
            client_secret=config.client_secret,
            token_endpoint_auth_method=method or "client_secret_basic",
            scope=config.scope,
        )
    person = authorizer or _Unattended(name)

    async def callback() -> AuthorizationCodeResult:
        code, state, issuer = await person.callback()
        return AuthorizationCodeResult(code=code, state=state, iss=issuer)

    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[person.redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=config.scope,
    )
    registered = store.client_info()
    if (
        authorizer is not None
        and config.client_id is None
        and isinstance(registered, dict)
        and person.redirect_uri not in (registered.get("redirect_uris") or [])
    ):
        # Registered for another loopback port (each login may get a new one): register
        # again, or the authorization server refuses the redirect.
        store.forget_client()
        registered = None
    if config.client_id is not None and registered is None:
        # A pre-registered client: the provider then skips registration.
        store.set_client_raw(
            {
                "client_id": config.client_id,
                "redirect_uris": [person.redirect_uri],
                "token_endpoint_auth_method": config.token_auth
                or ("client_secret_basic" if config.client_secret else "none"),
            }
            | ({"client_secret": config.client_secret} if config.client_secret else {})
        )
    provider = _provider_class()(
        server_url=server.url,
        client_metadata=metadata,
        storage=store,
        redirect_handler=person.redirect,
        callback_handler=callback,
        client_metadata_url=config.client_metadata_url,
    )
    return provider
