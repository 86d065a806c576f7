"""A fault-injecting fake OpenAI Chat Completions server, driven by a seeded schedule.

``python -m tests.peers.fault_openai --seed S [--rate R] [--tool-rate T] [--port N]``
serves ``POST /<scenario>/v1/chat/completions`` on 127.0.0.1 in a process of its own
(the :class:`~tests.peers.fault_server.FaultServer` with a responder) and prints
``PORT <n>`` and ``BASE <url>`` when it listens; ``GET <url>/stats`` answers the
requests served per fault so far.

The model it plays: when the last message is the user's and tools are offered, it calls
one or two of them; otherwise it answers with text. Which tools, and which fault (if any)
each request meets, is a pure function of the seed, the request's messages and how many
times the same messages were sent before (the attempt), so a run is reproducible however
the requests interleave, and a retry may meet a different fault than its first attempt:

- ``rate_limited``: 429 with ``Retry-After: 0.05``;
- ``server_error`` / ``unavailable``: 500 / 503 with an error body;
- ``slow``: the answer after 0.3 s;
- ``stall_headers``: no status line for 60 s (the client's attempt timeout ends it);
- ``stall_stream``: a first event, then 60 s of silence (the idle timeout ends it);
- ``cut_stream``: an event cut in half, then the connection breaks;
- ``malformed_body``: a 200 whose body (or first SSE event) is not JSON;
- ``error_event``: a first delta, then an ``{"error": ...}`` event mid-stream;
- ``bad_tool_args``: a tool call whose arguments are not valid JSON.

Each request meets a fault with probability ``rate``; each tool call names a faulting
tool (``TOOL_FAULTS``: the tools of benchmarks/soak_tools.py and the ``faults`` mode of
mcp_raw_server.py) with probability ``tool_rate``, else a healthy one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import threading
import time
from typing import Any

from tests.peers.fault_server import (
    FaultServer,
    Reply,
    dumps,
    error_reply,
    json_reply,
    sse,
    sse_reply,
)

PROVIDER_FAULTS = (
    "rate_limited",
    "server_error",
    "unavailable",
    "slow",
    "stall_headers",
    "stall_stream",
    "cut_stream",
    "malformed_body",
    "error_event",
    "bad_tool_args",
)
#: Tools that misbehave, by the suffix of their registry name.
TOOL_FAULTS = ("hang", "hang_sync", "boom", "quit", "quit_sync", "crash", "deaf")
#: Tools that answer.
TOOL_OK = ("add", "echo")
STALL = 60.0
USAGE = {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}


def request_key(body: Any) -> str:
    """What identifies a request across its retries: a digest of its messages."""
    messages = body.get("messages") if isinstance(body, dict) else None
    raw = json.dumps(messages, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(raw).hexdigest()[:16]


def choose_fault(
    seed: int, rate: float, key: str, attempt: int, faults: tuple[str, ...] = PROVIDER_FAULTS
) -> str:
    """The fault the ``attempt``-th sending (0-based) of request ``key`` meets (one of
    ``faults``), or "ok"."""
    rng = random.Random(f"{seed}:{key}:{attempt}")
    if rng.random() >= rate:
        return "ok"
    return rng.choice(faults)


def choose_tools(seed: int, tool_rate: float, key: str, offered: list[str]) -> list[str]:
    """The registry names the model calls for request ``key`` (one or two of ``offered``)."""
    rng = random.Random(f"{seed}:{key}:tools")
    picked: list[str] = []
    for _ in range(2 if rng.random() < 0.2 else 1):
        pool = TOOL_FAULTS if rng.random() < tool_rate else TOOL_OK
        want = rng.choice(pool)
        # MCP tools are registered as "<server>-<tool>"; function tools by their name.
        match = [n for n in offered if n == want or n.endswith(f"-{want}")]
        picked.append(match[0] if match else offered[0])
    return picked


class FaultyModel:
    """The responder: see the module docstring."""

    def __init__(
        self, seed: int, rate: float, tool_rate: float, faults: tuple[str, ...] = PROVIDER_FAULTS
    ) -> None:
        self.seed, self.rate, self.tool_rate, self.faults = seed, rate, tool_rate, faults
        self._lock = threading.Lock()
        self._attempts: dict[str, int] = {}
        #: Requests per fault, for the soak's report.
        self.counts: dict[str, int] = {}

    def __call__(self, body: Any) -> Reply:
        if body is None:  # a GET: the requests per fault so far
            with self._lock:
                return json_reply(dict(self.counts))
        if not isinstance(body, dict):
            return error_reply(400, "the body is not a JSON object")
        key = request_key(body)
        with self._lock:
            attempt = self._attempts.get(key, 0)
            self._attempts[key] = attempt + 1
        fault = choose_fault(self.seed, self.rate, key, attempt, self.faults)
        with self._lock:
            self.counts[fault] = self.counts.get(fault, 0) + 1
        return self._reply(body, key, fault)

    def _answer(self, body: dict[str, Any], key: str, fault: str) -> tuple[str, list[Any]]:
        messages = body.get("messages") or [{}]
        offered = [t["function"]["name"] for t in body.get("tools") or []]
        if not offered or messages[-1].get("role") != "user":
            return f"Done ({key[:6]}).", []
        calls = []
        for i, name in enumerate(choose_tools(self.seed, self.tool_rate, key, offered)):
            args = '{"a": 2,' if fault == "bad_tool_args" else _arguments(name)
            fn = {"name": name, "arguments": args}
            calls.append({"index": i, "id": f"call_{key}_{i}", "type": "function", "function": fn})
        return "", calls

    def _reply(self, body: dict[str, Any], key: str, fault: str) -> Reply:
        if fault == "rate_limited":
            return error_reply(429, "slow down", headers={"retry-after": "0.05"})
        if fault in ("server_error", "unavailable"):
            return error_reply(500 if fault == "server_error" else 503, f"injected {fault}")
        if fault == "stall_headers":
            return Reply(delay=STALL)
        streamed = bool(body.get("stream"))
        if fault == "malformed_body":
            if streamed:
                return sse_reply(*sse('{"choices": [{"delta": '))
            return Reply(body=[b'{"id": "chatcmpl-x", "choices": ['])
        text, calls = self._answer(body, key, fault)
        delay = 0.3 if fault == "slow" else 0.0
        if not streamed:
            return Reply(body=[dumps(_completion(text, calls))], delay=delay)
        events = _chunks(text, calls)
        pieces: list[bytes | float] = [b"data: " + dumps(e) + b"\n\n" for e in events]
        pieces.append(b"data: [DONE]\n\n")
        if fault == "stall_stream":
            pieces.insert(1, STALL)
        elif fault == "cut_stream":
            half = pieces[1]
            assert isinstance(half, bytes)
            return sse_reply(pieces[0], half[: len(half) // 2], framing="chunked", cut=True)
        elif fault == "error_event":
            error = {"error": {"message": "injected overload", "type": "server_error"}}
            pieces[1:] = [b"data: " + dumps(error) + b"\n\n"]
        return sse_reply(*pieces, delay=delay, framing="chunked")


def _arguments(name: str) -> str:
    if name.endswith("add"):
        return '{"a": 2, "b": 3}'
    if name.endswith("echo"):
        return '{"text": "hi"}'
    return "{}"


def _completion(text: str, calls: list[Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
    finish = "tool_calls" if calls else "stop"
    return {
        "id": "chatcmpl-f",
        "object": "chat.completion",
        "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": USAGE,
    }


def _chunks(text: str, calls: list[Any]) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-f", "object": "chat.completion.chunk", "model": "fake"}
    events: list[dict[str, Any]] = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}
    ]
    if calls:
        events.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": calls}}]})
    else:
        for word in text.split(" "):
            events.append({**base, "choices": [{"index": 0, "delta": {"content": word + " "}}]})
    reason = "tool_calls" if calls else "stop"
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    events.append({**base, "choices": [], "usage": USAGE})
    return events


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rate", type=float, default=0.2)
    parser.add_argument("--tool-rate", type=float, default=0.3)
    args = parser.parse_args(argv)
    server = FaultServer().start()
    model = FaultyModel(args.seed, args.rate, args.tool_rate)
    base, _ = server.respond(model)
    print(f"PORT {server.port}", flush=True)
    print(f"BASE {base}", flush=True)
    try:
        while True:  # until killed; SIGTERM ends the process
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
