"""A fake Telegram Bot API server on 127.0.0.1: real HTTP, the real wire shapes.

It speaks what a polling bot uses — ``getMe``, ``getUpdates`` (long polling with
``offset``/``timeout``, as the real API: an update is confirmed by asking for a later
``offset``), ``sendMessage`` — at ``/bot<token>/<method>``, with form-encoded or JSON
parameters, and answers ``{"ok": true, "result": ...}`` as Telegram does (any other
method answers ``true``). The test puts users' messages in with :meth:`say` and reads
what the bot sent with :meth:`sent`.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = "123456789:AAFakeTokenForTheFakeTelegramServer00"
BOT = {"id": 123456789, "is_bot": True, "first_name": "Agent", "username": "agent_bot"}


class TelegramApi:
    """The server's state: pending updates, and the messages the bot sent."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._updates: list[dict[str, Any]] = []
        self._next_update = 1
        self._next_message = 1
        self._sent: list[dict[str, Any]] = []
        self.url = ""

    def say(self, chat: int, text: str) -> None:
        """A user of chat ``chat`` (a private chat) sends ``text`` to the bot."""
        with self._lock:
            user = {"id": chat, "is_bot": False, "first_name": f"user{chat}"}
            message = {
                "message_id": self._take_message_id(),
                "date": int(time.time()),
                "chat": {"id": chat, "type": "private", "first_name": f"user{chat}"},
                "from": user,
                "text": text,
            }
            self._updates.append({"update_id": self._next_update, "message": message})
            self._next_update += 1
            self._lock.notify_all()

    def sent(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._sent)

    def wait_sent(self, count: int, timeout: float) -> list[dict[str, Any]]:
        """What the bot sent, once it has sent ``count`` messages (or the time is up)."""
        with self._lock:
            self._lock.wait_for(lambda: len(self._sent) >= count, timeout)
            return list(self._sent)

    # -- the API -------------------------------------------------------------------------

    def call(self, method: str, params: dict[str, Any]) -> Any:
        if method == "getMe":
            return BOT
        if method == "getUpdates":
            return self._get_updates(params)
        if method == "sendMessage":
            return self._send_message(params)
        return True

    def _get_updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        offset = int(params.get("offset", 0))
        limit = int(params.get("limit", 100))
        timeout = float(params.get("timeout", 0))
        with self._lock:
            # Asking from ``offset`` confirms every update before it.
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
            self._lock.wait_for(lambda: bool(self._updates), min(timeout, 1.0))
            return self._updates[:limit]

    def _send_message(self, params: dict[str, Any]) -> dict[str, Any]:
        chat = int(params["chat_id"])
        with self._lock:
            message = {
                "message_id": self._take_message_id(),
                "date": int(time.time()),
                "chat": {"id": chat, "type": "private", "first_name": f"user{chat}"},
                "from": BOT,
                "text": str(params["text"]),
            }
            self._sent.append(message)
            self._lock.notify_all()
            return message

    def _take_message_id(self) -> int:
        self._next_message += 1
        return self._next_message


def _params(handler: BaseHTTPRequestHandler, body: bytes) -> dict[str, Any]:
    kind = handler.headers.get("Content-Type", "")
    if kind.startswith("application/json"):
        found: dict[str, Any] = json.loads(body or b"{}")
        return found
    if kind.startswith("multipart/form-data"):
        head = f"Content-Type: {kind}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
        return {
            str(part.get_param("name", header="content-disposition")): part.get_content()
            for part in message.iter_parts()
        }
    return {k: v[0] for k, v in urllib.parse.parse_qs(body.decode()).items()}


class _Handler(BaseHTTPRequestHandler):
    api: TelegramApi

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer(_params(self, body))

    def do_GET(self) -> None:
        query = urllib.parse.urlsplit(self.path).query
        self._answer({k: v[0] for k, v in urllib.parse.parse_qs(query).items()})

    def _answer(self, params: dict[str, Any]) -> None:
        path = urllib.parse.urlsplit(self.path).path
        prefix, _, method = path.rpartition("/")
        if prefix != f"/bot{TOKEN}":
            status, reply = 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
        else:
            status, reply = 200, {"ok": True, "result": self.api.call(method, params)}
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def telegram_api() -> Iterator[TelegramApi]:
    """A fake Bot API server on a free port of 127.0.0.1 (``api.url`` is its base)."""
    api = TelegramApi()
    handler = type("Handler", (_Handler,), {"api": api})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="telegram-api")
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
