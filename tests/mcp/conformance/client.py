"""Our MCP client under the official conformance framework's client scenarios.

The framework runs ``python -m tests.mcp.conformance.client URL`` with the scenario in
``MCP_CONFORMANCE_SCENARIO`` (and, for some auth scenarios, a JSON context in
``MCP_CONFORMANCE_CONTEXT``). Each scenario is driven through :func:`open_client`, the
same client the ``McpConnection`` actor owns: connect and initialize, list the tools,
call the scenario's tool. Exit status 0 when the client finished without an error.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import trio

from agcore_actors.mcp import ClientOptions, HttpServer, open_client

#: The tool each scenario's server expects to be called (none: list the tools only).
TOOLS = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
}


async def accept_defaults(server: str, params: Any) -> Any:
    """Accept an elicitation with the defaults its schema gives (SEP-1034)."""
    properties = (params.get("requestedSchema") or {}).get("properties") or {}
    content = {k: v["default"] for k, v in properties.items() if "default" in v}
    return {"action": "accept", "content": content}


async def run(url: str, scenario: str) -> None:
    options = ClientOptions(request_timeout=20.0, connect_timeout=20.0)
    requests = {"elicitation/create": accept_defaults}
    server = HttpServer(url)
    async with open_client("conformance", server, options=options, requests=requests) as client:
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
    trio.run(run, url, scenario)


if __name__ == "__main__":
    main()
