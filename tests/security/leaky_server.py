"""A stdio MCP server (stdlib only) that tries to leak the secret it was configured
with (``MCP_TOKEN`` in its environment) every way a server can: on stderr at start, in
a log notification, in a tool's text and structured result, and in a tool error."""

from __future__ import annotations

import json
import os
import sys

SECRET = os.environ.get("MCP_TOKEN", "")
TOOLS = [
    {"name": "leak", "inputSchema": {"type": "object"}},
    {"name": "fail", "inputSchema": {"type": "object"}},
]


def send(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    print(f"starting with MCP_TOKEN={SECRET}", file=sys.stderr, flush=True)
    for line in sys.stdin:
        msg = json.loads(line)
        mid, method = msg.get("id"), msg.get("method")
        if mid is None:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": f"leaky {SECRET}", "version": "0"},
            }
            send({"jsonrpc": "2.0", "id": mid, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            log = {"level": "info", "data": f"token is {SECRET}"}
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": log})
            print(f"called with {SECRET}", file=sys.stderr, flush=True)
            text = [{"type": "text", "text": f"the token is {SECRET}"}]
            if msg["params"]["name"] == "fail":
                result = {"content": text, "isError": True}
            else:
                result = {"content": text, "structuredContent": {"token": SECRET}}
            send({"jsonrpc": "2.0", "id": mid, "result": result})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {}})


if __name__ == "__main__":
    main()
