"""A stdio MCP server (stdlib only) that answers ``tools/call`` of ``hostile`` with a
corpus file: ``python mcp_server.py CORPUS_DIR``.

``initialize``, ``tools/list`` and ``tools/call`` of ``echo`` are answered correctly.
``tools/call`` of ``hostile`` with ``{"case": NAME}`` writes the bytes of
``CORPUS_DIR/NAME`` as they are, with every ``{{ID}}`` replaced by the request's id (a
case may hold several lines, or none), and answers nothing else. ``environ`` answers
the server's own environment as a JSON object.
"""

from __future__ import annotations

import json
import os
import sys

TOOLS = [
    {"name": "echo", "inputSchema": {"type": "object"}},
    {"name": "hostile", "inputSchema": {"type": "object"}},
    {"name": "environ", "inputSchema": {"type": "object"}},
]


def send(obj: object) -> None:
    sys.stdout.buffer.write(json.dumps(obj).encode() + b"\n")
    sys.stdout.buffer.flush()


def main() -> None:
    corpus = sys.argv[1]
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        mid, method = msg.get("id"), msg.get("method")
        if mid is None:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "0"},
            }
            send({"jsonrpc": "2.0", "id": mid, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
        elif method == "tools/call" and msg["params"]["name"] == "hostile":
            case = os.path.join(corpus, os.path.basename(msg["params"]["arguments"]["case"]))
            with open(case, "rb") as f:
                data = f.read().replace(b"{{ID}}", json.dumps(mid).encode())
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        elif method == "tools/call" and msg["params"]["name"] == "environ":
            content = [{"type": "text", "text": json.dumps(dict(os.environ))}]
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": content}})
        elif method == "tools/call":
            text = json.dumps(msg["params"]["arguments"])
            content = [{"type": "text", "text": text}]
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": content}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {}})


if __name__ == "__main__":
    main()
