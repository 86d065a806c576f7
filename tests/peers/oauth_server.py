"""An MCP server behind OAuth 2.1, and its authorization server, in one process (stdlib
only): ``python oauth_server.py PORT [LIFETIME]``.

- ``/.well-known/oauth-protected-resource/mcp`` and
  ``/.well-known/oauth-authorization-server``: the metadata (RFC 9728, RFC 8414);
- ``POST /register``: dynamic client registration (public clients);
- ``GET /authorize``: approves at once (no login page) and redirects to the client's
  ``redirect_uri`` with a code, if the request is a PKCE S256 one for a registered client;
- ``POST /token``: ``authorization_code`` (the PKCE verifier checked) and
  ``refresh_token`` grants; access tokens are announced to live ``LIFETIME`` seconds
  (default 3600; accepted a minute longer, by the monotonic clock), and every refresh
  token is single-use. No test waits for an expiry: a client's expiry is its stored
  ``expires_at`` (a test moves it back), a server-side end is the ``revoke`` tool;
- ``POST /mcp``: MCP over streamable HTTP (JSON answers) for a valid access token, else
  401 with ``WWW-Authenticate``. Tools: ``whoami`` (the grant counts), ``revoke`` (every
  access token stops working at once: the next request gets a 401).
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import itertools
import json
import sys
import threading
import time
import urllib.parse

PORT = int(sys.argv[1])
LIFETIME = int(sys.argv[2]) if len(sys.argv) > 2 else 3600
BASE = f"http://127.0.0.1:{PORT}"
LOCK = threading.Lock()
COUNTER = itertools.count(1)
CLIENTS: dict[str, list[str]] = {}  # client_id -> redirect URIs
CODES: dict[str, str] = {}  # code -> PKCE challenge
ACCESS: dict[str, float] = {}  # access token -> expiry
REFRESH: set[str] = set()
GRANTS = {"authorization_code": 0, "refresh_token": 0, "unauthorized": 0}
TOOLS = [
    {"name": "whoami", "inputSchema": {"type": "object"}},
    {"name": "revoke", "inputSchema": {"type": "object"}},
]


def issue() -> dict[str, object]:
    n = next(COUNTER)
    access, refresh = f"at-{n}", f"rt-{n}"
    # Accepted a minute longer than announced (clock-skew allowance), so that a client
    # told ``expires_in: 0`` must refresh before its next request but can still use it.
    # The monotonic clock: a wall-clock step (NTP, a suspended VM) never expires a token.
    ACCESS[access] = time.monotonic() + LIFETIME + 60
    REFRESH.add(refresh)
    return {
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": LIFETIME,
        "refresh_token": refresh,
    }


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return None

    def reply(self, status: int, body: object = b"", **headers: str) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        if body != b"":
            self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/.well-known/oauth-protected-resource/mcp":
            self.reply(200, {"resource": f"{BASE}/mcp", "authorization_servers": [BASE]})
        elif url.path == "/.well-known/oauth-authorization-server":
            self.reply(
                200,
                {
                    "issuer": BASE,
                    "authorization_endpoint": f"{BASE}/authorize",
                    "token_endpoint": f"{BASE}/token",
                    "registration_endpoint": f"{BASE}/register",
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none"],
                },
            )
        elif url.path == "/authorize":
            redirect = query.get("redirect_uri", "")
            with LOCK:
                known = redirect in CLIENTS.get(query.get("client_id", ""), [])
                if not known or query.get("code_challenge_method") != "S256":
                    self.reply(400, {"error": "invalid_request"})
                    return
                code = f"code-{next(COUNTER)}"
                CODES[code] = query["code_challenge"]
            back = {"code": code, "state": query.get("state", "")}
            self.reply(302, location=f"{redirect}?{urllib.parse.urlencode(back)}")
        else:  # /mcp: no listening stream
            self.reply(405)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        path = urllib.parse.urlsplit(self.path).path
        with LOCK:
            if path == "/register":
                request = json.loads(body)
                client_id = f"client-{next(COUNTER)}"
                CLIENTS[client_id] = list(request.get("redirect_uris") or [])
                self.reply(
                    201,
                    request | {"client_id": client_id, "token_endpoint_auth_method": "none"},
                )
            elif path == "/token":
                self.token(dict(urllib.parse.parse_qsl(body.decode())))
            else:
                self.mcp(body)

    def token(self, form: dict[str, str]) -> None:
        grant = form.get("grant_type", "")
        if grant == "authorization_code":
            challenge = CODES.pop(form.get("code", ""), None)
            digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
            verifier = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            if challenge is None or verifier != challenge:
                self.reply(400, {"error": "invalid_grant"})
                return
        elif grant == "refresh_token":
            if form.get("refresh_token") not in REFRESH:
                self.reply(400, {"error": "invalid_grant"})
                return
            REFRESH.discard(form["refresh_token"])
        else:
            self.reply(400, {"error": "unsupported_grant_type"})
            return
        GRANTS[grant] += 1
        self.reply(200, issue())

    def mcp(self, body: bytes) -> None:
        token = self.headers.get("authorization", "").removeprefix("Bearer ")
        if token not in ACCESS or ACCESS[token] < time.monotonic():
            GRANTS["unauthorized"] += 1
            metadata = f"{BASE}/.well-known/oauth-protected-resource/mcp"
            self.reply(
                401,
                {"error": "invalid_token"},
                www_authenticate=f'Bearer resource_metadata="{metadata}"',
            )
            return
        message = json.loads(body)
        method, mid = message.get("method"), message.get("id")
        if mid is None:
            self.reply(202)
            return
        if method == "initialize":
            result: object = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "oauth-test", "version": "0"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call" and message["params"]["name"] == "revoke":
            ACCESS.clear()
            result = {"content": [{"type": "text", "text": "revoked"}]}
        elif method == "tools/call":
            text = json.dumps({"token": token, **GRANTS})
            result = {"content": [{"type": "text", "text": text}]}
        else:
            result = {}
        self.reply(200, {"jsonrpc": "2.0", "id": mid, "result": result})


server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
server.daemon_threads = True
server.serve_forever()
