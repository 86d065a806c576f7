"""A fast fake OpenAI Chat Completions server, for benchmarks (run it in its own process).

``python benchmarks/fake_openai.py [--port N] [--host A,B]`` prints ``PORT <n>`` when it listens.

It answers ``POST /v1/chat/completions`` (JSON or, with ``"stream": true``, server-sent
events ending in ``[DONE]``) with the shape of one agent turn: when the last message is
the user's and tools are offered, a call of the first tool with ``{"a": 2, "b": 3}``;
otherwise a short text answer. Usage is reported in both forms. HTTP/1.1 keep-alive, no
dependencies beyond the standard library, one asyncio loop: it costs the client side
nothing to wait for it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys

_ids = itertools.count()
USAGE = {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}


def _reply(body: dict[str, object]) -> tuple[str, list[dict[str, object]] | None]:
    messages = body.get("messages") or []
    last = messages[-1] if isinstance(messages, list) and messages else {}
    tools = body.get("tools") or []
    if isinstance(last, dict) and last.get("role") == "user" and tools:
        name = tools[0]["function"]["name"]  # type: ignore[index]
        call = {
            "index": 0,
            "id": f"call_{next(_ids)}",
            "type": "function",
            "function": {"name": name, "arguments": '{"a": 2, "b": 3}'},
        }
        return "", [call]
    return "The answer is 5.", None


def _completion(body: dict[str, object]) -> bytes:
    text, calls = _reply(body)
    message: dict[str, object] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
    data = {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "model": "fake",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": USAGE,
    }
    return json.dumps(data).encode()


def _chunks(body: dict[str, object]) -> bytes:
    text, calls = _reply(body)
    base = {"id": f"chatcmpl-{next(_ids)}", "object": "chat.completion.chunk", "model": "fake"}
    events: list[dict[str, object]] = [
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
    out = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return out + b"data: [DONE]\n\n"


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = json.loads(await reader.readexactly(length)) if length else {}
            if body.get("stream"):
                payload = _chunks(body)
                kind = b"text/event-stream"
            else:
                payload = _completion(body)
                kind = b"application/json"
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: " + kind
                + b"\r\nContent-Length: " + str(len(payload)).encode()
                + b"\r\nConnection: keep-alive\r\n\r\n" + payload
            )  # fmt: skip
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int, hosts: list[str]) -> None:
    server = await asyncio.start_server(_serve, hosts, port, backlog=4096)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1", help="addresses, comma-separated")
    args = parser.parse_args()
    try:
        asyncio.run(main(args.port, args.host.split(",")))
    except KeyboardInterrupt:
        sys.exit(0)
