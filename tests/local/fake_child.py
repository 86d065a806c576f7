"""A stand-in for ``agcore_actors/local/_child.py`` with no model, for fast actor tests.

Run as ``python fake_child.py <ignored child path> '<options JSON>'`` (the command line the
actor builds, with this script put first by :func:`fake_python`). It speaks the child's
protocol: one ``{"url": ...}`` line on stdout, then serves until stdin closes. Its
behaviour comes from the environment variable ``FAKE_CHILD`` (a JSON object):

- ``"exit": N``: exit with status N at once (before the URL line);
- ``"unhealthy": S``: ``GET /health`` answers 503 for S seconds first;
- ``"silent": true``: never print the URL line (hang);
- ``"ignore_term": true``: ignore SIGTERM (a stop must SIGKILL it);
- ``"record": PATH``: append one line ``pid port`` to PATH when serving;
- ``"noise": true``: print a line that is not the URL line first (as a library might).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

STARTED = time.monotonic()
BEHAVIOUR: dict[str, Any] = json.loads(os.environ.get("FAKE_CHILD", "{}"))


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        healthy = time.monotonic() - STARTED >= float(BEHAVIOUR.get("unhealthy", 0))
        body = b'{"status":"ok"}' if healthy else b'{"error":"loading"}'
        self.send_response(200 if healthy else 503)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main(argv: list[str]) -> int:
    options = json.loads(argv[-1])
    if "exit" in BEHAVIOUR:
        print("fake child: exiting as told", file=sys.stderr, flush=True)
        return int(BEHAVIOUR["exit"])
    if BEHAVIOUR.get("ignore_term"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    port = int(options.get("port", 0))
    try:
        server = ThreadingHTTPServer((options["host"], port), Handler)
    except OSError:
        server = ThreadingHTTPServer((options["host"], 0), Handler)
    server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    if "record" in BEHAVIOUR:
        with Path(BEHAVIOUR["record"]).open("a") as record:
            record.write(f"{os.getpid()} {port}\n")
    if BEHAVIOUR.get("noise"):
        print("{'version': '0+unknown'}", flush=True)
    if not BEHAVIOUR.get("silent"):
        print(json.dumps({"url": f"http://{options['host']}:{port}"}), flush=True)
    while sys.stdin.buffer.read(65536):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
