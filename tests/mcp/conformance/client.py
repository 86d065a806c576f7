"""Our MCP client under the official conformance framework's client scenarios.

The framework runs ``python -m tests.mcp.conformance.client URL`` with the scenario in
``MCP_CONFORMANCE_SCENARIO`` (and, for some auth scenarios, a JSON context in
``MCP_CONFORMANCE_CONTEXT``). Each scenario is driven through :func:`open_client`, the
same client the ``McpConnection`` actor owns: connect and initialize, list the tools,
call the scenario's tool. OAuth scenarios configure the server's ``oauth`` entry as a
user would and use :func:`oauth_auth`, with tokens in a fresh store and, where a person
would log in, :class:`Headless`: the framework's authorization server approves at once,
so "the person" follows the authorization URL and takes the code from the redirect.
Exit status 0 when the client finished without an error.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import urllib.parse
from pathlib import Path
from typing import Any

import httpx2
import trio

from agcore_actors.mcp import ClientOptions, HttpServer, OAuthConfig, open_client
from agcore_actors.mcp._oauth import TokenStore, oauth_auth

#: The tool each scenario's server expects to be called (none: list the tools only).
TOOLS = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
}
#: A client-id metadata document URL (the framework's scenarios accept this one).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


class Headless:
    """The person of an authorization-code flow, for an authorization server that
    approves without asking: follow the URL, take ``code``/``state``/``iss`` from the
    redirect."""

    redirect_uri = "http://localhost:3000/callback"

    def __init__(self) -> None:
        self.result: tuple[str, str | None, str | None] | None = None

    async def redirect(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient() as http:
            response = await http.get(authorization_url, follow_redirects=False)
        location = response.headers.get("location")
        if location is None:
            raise RuntimeError(
                f"no redirect from the authorization server ({response.status_code})"
            )
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)
        if "code" not in query:
            raise RuntimeError(f"no code in the redirect: {location}")
        self.result = (query["code"][0], query.get("state", [None])[0], query.get("iss", [None])[0])

    async def callback(self) -> tuple[str, str | None, str | None]:
        assert self.result is not None, "callback before redirect"
        result, self.result = self.result, None
        return result


def oauth_config(scenario: str, context: dict[str, Any]) -> OAuthConfig:
    if scenario == "auth/client-credentials-basic":
        return OAuthConfig(
            grant="client_credentials",
            client_id=context["client_id"],
            client_secret=context["client_secret"],
            token_auth="client_secret_basic",
        )
    if scenario == "auth/client-credentials-jwt":
        return OAuthConfig(
            grant="client_credentials",
            client_id=context["client_id"],
            private_key=context["private_key_pem"],
            signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
    return OAuthConfig(
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        client_metadata_url=CLIENT_METADATA_URL,
    )


async def accept_defaults(server: str, params: Any) -> Any:
    """Accept an elicitation with the defaults its schema gives (SEP-1034)."""
    properties = (params.get("requestedSchema") or {}).get("properties") or {}
    content = {k: v["default"] for k, v in properties.items() if "default" in v}
    return {"action": "accept", "content": content}


async def run(url: str, scenario: str, tokens: Path) -> None:
    options = ClientOptions(request_timeout=20.0, connect_timeout=20.0)
    requests = {"elicitation/create": accept_defaults}
    server = HttpServer(url)
    auth = None
    if scenario.startswith("auth/"):
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
        server = HttpServer(url, oauth=oauth_config(scenario, context))
        store = TokenStore("conformance", url, tokens)
        auth = oauth_auth("conformance", server, store=store, authorizer=Headless())
    async with open_client(
        "conformance", server, options=options, requests=requests, auth=auth
    ) as client:
        tools = await client.list_tools()
        names = {tool.name for tool in tools}
        call = TOOLS.get(scenario)
        if call is None and names:  # auth scenarios: one authorized call as well
            call = (sorted(names)[0], {})
        if call is not None:
            await client.call_tool(*call)


def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    with tempfile.TemporaryDirectory() as tokens:
        trio.run(run, url, scenario, Path(tokens))


if __name__ == "__main__":
    main()
