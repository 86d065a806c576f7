"""A hand-written stdio MCP server for protocol corner cases (no SDK, stdlib only).

``python raw_server.py MODE``:
- ``paged``: 5 tools served 2 per ``tools/list`` page; before answering a
  ``tools/call`` it pings the client and writes a malformed line;
- ``stubborn``: like ``paged`` but ignores stdin EOF and SIGTERM (only SIGKILL ends it);
- ``old``: answers ``initialize`` with an unsupported protocol version;
- ``faults``: three tools, ``echo`` (answers), ``crash`` (the server SIGKILLs itself
  mid-call) and ``deaf`` (never answered), for the soak (benchmarks/soak.py);
- ``media``: one tool, ``shot``, whose result has every MCP content type (text, image,
  audio, an embedded text and blob resource, a resource link): :data:`MEDIA_CONTENT`.
- ``typed``: one tool, ``point``, whose ``outputSchema`` asks for ``{"x": integer}``;
  it answers ``structuredContent`` ``{"x": X}`` for its argument ``x``, whatever its
  type, or none when ``x`` is absent.

``python raw_server.py http MODE PORT`` serves streamable HTTP on 127.0.0.1:PORT at
``/mcp`` (a GET answers 405, so a readiness probe sees it up):
- ``echo-auth``: every POST answers 401 with a body that quotes the request's
  Authorization header, as some gateways do;
- ``deaf``: answers ``initialize``, then never answers anything else (the POST of
  ``notifications/initialized`` hangs).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "paged"
TOOLS = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(5)]
FAULT_TOOLS = [
    {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "crash", "inputSchema": {"type": "object"}},
    {"name": "deaf", "inputSchema": {"type": "object"}},
]


#: The ``shot`` tool's result content in ``media`` mode.
MEDIA_CONTENT: list[dict[str, Any]] = [
    {"type": "text", "text": "the screen"},
    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
    {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
    {"type": "resource", "resource": {"uri": "file:///notes.txt", "text": "a note"}},
    {
        "type": "resource",
        "resource": {"uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": "JVBERg=="},
    },
    {"type": "resource_link", "uri": "file:///big.log", "name": "big.log"},
]
POINT = {
    "name": "point",
    "inputSchema": {"type": "object"},
    "outputSchema": {
        "type": "object",
        "properties": {"x": {"type": "integer"}},
        "required": ["x"],
    },
}


def typed_call(mid: object, params: dict[str, object]) -> None:
    """A ``tools/call`` in ``typed`` mode."""
    args = params.get("arguments") or {}
    result: dict[str, object] = {"content": [], "isError": False}
    if isinstance(args, dict) and "x" in args:
        result["structuredContent"] = {"x": args["x"]}
    send({"jsonrpc": "2.0", "id": mid, "result": result})


def faulty_call(mid: object, params: dict[str, object]) -> None:
    """A ``tools/call`` in ``faults`` mode."""
    name = params.get("name")
    if name == "crash":
        os.kill(os.getpid(), signal.SIGKILL)  # mid-call: the request is never answered
    if name == "deaf":
        return
    args = params.get("arguments") or {}
    text = str(args.get("text", "")) if isinstance(args, dict) else ""
    content = [{"type": "text", "text": f"echo {text}"}]
    send({"jsonrpc": "2.0", "id": mid, "result": {"content": content, "isError": False}})


def send(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    if MODE == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for line in sys.stdin:
        msg = json.loads(line)
        mid, method = msg.get("id"), msg.get("method")
        if mid is None:
            continue
        if method == "initialize":
            version = "1999-01-01" if MODE == "old" else msg["params"]["protocolVersion"]
            send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "result": {
                        "protocolVersion": version,
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "raw", "version": "0"},
                    },
                }
            )
        elif method == "tools/list" and MODE == "typed":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [POINT]}})
        elif method == "tools/call" and MODE == "typed":
            typed_call(mid, msg.get("params") or {})
        elif method == "tools/list" and MODE == "faults":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": FAULT_TOOLS}})
        elif method == "tools/list" and MODE == "media":
            shot = {"name": "shot", "inputSchema": {"type": "object"}}
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [shot]}})
        elif method == "tools/call" and MODE == "media":
            answer = {"content": MEDIA_CONTENT, "isError": False}
            send({"jsonrpc": "2.0", "id": mid, "result": answer})
        elif method == "tools/call" and MODE == "faults":
            faulty_call(mid, msg.get("params") or {})
        elif method == "tools/list":
            start = int((msg.get("params") or {}).get("cursor") or 0)
            result: dict[str, object] = {"tools": TOOLS[start : start + 2]}
            if start + 2 < len(TOOLS):
                result["nextCursor"] = str(start + 2)
            send({"jsonrpc": "2.0", "id": mid, "result": result})
        elif method == "tools/call":
            send({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
            sys.stdout.write("this is not json\n")
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/resources/updated",
                    "params": {"uri": "file:///x"},
                }
            )
            send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "result": {
                        "content": [
                            {"type": "text", "text": "a"},
                            {"type": "image", "data": ""},
                            {"type": "text", "text": "b"},
                        ],
                        "isError": False,
                    },
                }
            )
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "nope"}})
    if MODE == "stubborn":
        while True:
            time.sleep(1)
    os._exit(0)


def serve_http(mode: str, port: int) -> None:
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return None

        def do_GET(self) -> None:
            self.send_response(405)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_DELETE(self) -> None:
            self.do_GET()

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            if mode == "echo-auth":
                text = f"invalid credentials: {self.headers.get('Authorization')}".encode()
                self.send_response(401)
                self.send_header("content-type", "text/plain")
                self.send_header("content-length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)
                return
            msg = json.loads(body)
            if msg.get("method") != "initialize":
                time.sleep(3600)  # deaf: hold the request open
            version = msg["params"]["protocolVersion"]
            answer = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": msg["id"],
                    "result": {
                        "protocolVersion": version,
                        "capabilities": {},
                        "serverInfo": {"name": "raw", "version": "0"},
                    },
                }
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    if MODE == "http":
        serve_http(sys.argv[2], int(sys.argv[3]))
    else:
        main()
