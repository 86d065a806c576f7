"""LLM layer benchmark: stream assembly, client CPU per request, connection reuse.

Every figure comes from one run, against the same servers, on every HTTP stack that is
installed (``httpx`` 0.28, the older line, and ``httpx2``, the maintained one):

1. Stream assembly, in-process: the same recorded-shape SSE bytes (an OpenAI chat
   stream of N content chunks, then finish, usage and ``[DONE]``, in 1,460-byte
   reads) through a ``MockTransport`` (no socket), consumed by
   - the plain loop: the stack's SSE reader (httpx-sse for httpx, ``EventSource`` for
     httpx2) + ``json.loads`` + text concatenation, and
   - agcore_actors' full stream path (``OpenAICompatibleProvider.stream`` ->
     ``StreamAssembler`` -> ``Caller.stream`` events -> ``Finish``), timeouts on and off.
2. Stream assembly over real local TCP: the same two loops against a server process
   on 127.0.0.1 that writes one event per chunk.
3. Client CPU per request (``time.process_time`` of this process; the server is another
   process) at 1, 100 and 1,000 concurrent requests, streamed and not: the
   ``ProviderActor`` on each stack, and a raw client on the newest stack.
4. New TCP connections per streamed request after warm-up (the server counts them).
5. Sequential non-streamed latency, ProviderActor vs a bare client (µs per request).

Run from the repository root::

    python benchmarks/llm.py                 # full run, about four minutes on 2 cores
    python benchmarks/llm.py --old-at-1000   # httpx 0.28 at 1,000 too (20+ minutes)
    python benchmarks/llm.py --quick         # smoke test
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from types import ModuleType
from typing import Any

import trio

from agcore_actors import ActorSystem
from agcore_actors.llm import (
    Chat,
    ChatRequest,
    ChatStream,
    Finish,
    OpenAICompatibleProvider,
    OpenAIConfig,
    ProviderConfig,
    ProviderRegistry,
    RetryConfig,
    Timeouts,
    provider_spec,
    user,
)
from agcore_actors.llm.wire import Caller

READ_SIZE = 1460
NO_TIMEOUTS = Timeouts(attempt=None, idle=None, connect=None, call=None)


def _stacks() -> dict[str, ModuleType]:
    found: dict[str, ModuleType] = {}
    for name in ("httpx", "httpx2"):
        try:
            found[name] = __import__(name)
        except ImportError:
            continue
    return found


STACKS = _stacks()
NEWEST = "httpx2" if "httpx2" in STACKS else "httpx"


def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1,
            "model": "bench", "choices": [choice]}  # fmt: skip
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def sse_events(chunks: int) -> list[bytes]:
    parts = [event({"role": "assistant", "content": ""})]
    parts += [event({"content": f" word{i}"}) for i in range(chunks)]
    parts.append(event({}, "stop"))
    usage = {"prompt_tokens": 10, "completion_tokens": chunks, "total_tokens": chunks + 10}
    tail = {"id": "x", "model": "bench", "choices": [], "usage": usage}
    return [*parts, b"data: " + json.dumps(tail).encode() + b"\n\n", b"data: [DONE]\n\n"]


COMPLETION = json.dumps(
    {"id": "chatcmpl-bench", "object": "chat.completion", "created": 1, "model": "bench",
     "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                  "finish_reason": "stop"}],
     "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}
).encode()  # fmt: skip


# -- the server process ----------------------------------------------------------------------


async def _serve_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stats: dict[str, int]
) -> None:
    stats["connections"] += 1
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
            body = await reader.readexactly(int(headers.get("content-length") or 0))
            if lines[0].startswith("GET /stats"):
                data = json.dumps(stats).encode()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             b"content-length: %d\r\n\r\n%s" % (len(data), data))  # fmt: skip
            elif body and json.loads(body).get("stream"):
                chunks = int(headers.get("x-chunks") or 20)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                             b"transfer-encoding: chunked\r\n\r\n")  # fmt: skip
                for piece in sse_events(chunks):
                    writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    await writer.drain()
                writer.write(b"0\r\n\r\n")
            else:
                head = b"content-length: %d\r\n\r\n" % len(COMPLETION)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n" + head)
                writer.write(COMPLETION)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _server_main() -> None:
    stats = {"connections": 0}
    server = await asyncio.start_server(
        lambda r, w: _serve_connection(r, w, stats), "127.0.0.1", 0, backlog=4096
    )
    print(server.sockets[0].getsockname()[1], flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin
    os._exit(0)  # open keep-alive connections would otherwise be cancelled noisily


# -- clients ---------------------------------------------------------------------------------


def client(stack: str, connections: int = 100, transport: Any = None) -> Any:
    http = STACKS[stack]
    limits = http.Limits(
        max_connections=connections, max_keepalive_connections=connections, keepalive_expiry=600
    )
    return http.AsyncClient(timeout=http.Timeout(None), limits=limits, transport=transport)


async def plain_stream(http_client: Any, stack: str, url: str, chunks: int) -> str:
    """The plain loop a user would write: the stack's SSE reader and json.loads."""
    text: list[str] = []
    headers = {"x-chunks": str(chunks)}
    async with http_client.stream("POST", url, json={"stream": True}, headers=headers) as r:
        if stack == "httpx2":
            events = STACKS["httpx2"].EventSource(r)
        else:
            from httpx_sse import EventSource

            events = EventSource(r).aiter_sse()
        async for sse in events:
            if sse.data == "[DONE]":
                continue
            for choice in json.loads(sse.data)["choices"]:
                content = choice["delta"].get("content")
                if content:
                    text.append(content)
    return "".join(text)


def provider(base: str) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(OpenAIConfig(name="bench", base_url=base, model="m"))


async def our_stream(http_client: Any, caller: Caller, base: str, chunks: int) -> str:
    request = ChatRequest([user("q")], extra_headers={"x-chunks": str(chunks)})
    text = ""
    async for item in caller.stream("bench", provider(base), http_client, request):
        if isinstance(item, Finish):
            text = item.response.text
    return text


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self.data), READ_SIZE):
            yield self.data[start : start + READ_SIZE]

    async def aclose(self) -> None:
        pass


def mock_client(stack: str, data: bytes) -> Any:
    http = STACKS[stack]

    class Body(_Body, http.AsyncByteStream):  # type: ignore[name-defined, misc]
        pass

    def handler(request: Any) -> Any:
        return http.Response(200, headers={"content-type": "text/event-stream"}, stream=Body(data))

    return client(stack, transport=http.MockTransport(handler))


async def rate(
    rounds: int, runs: dict[str, Callable[[], Awaitable[object]]], per: int
) -> dict[str, float]:
    """Median items/s of each run, rounds interleaved so drifts hit all alike."""
    samples: dict[str, list[float]] = {key: [] for key in runs}
    for _ in range(rounds):
        for key, run in runs.items():
            start = time.perf_counter()
            await run()
            samples[key].append(per / (time.perf_counter() - start))
    return {key: statistics.median(values) for key, values in samples.items()}


async def measure_streams(args: argparse.Namespace, base: str) -> list[str]:
    rows = []
    chunks, url = args.chunks, base + "/chat/completions"
    data = b"".join(sse_events(chunks))
    timed, untimed = Caller(), Caller(timeouts=NO_TIMEOUTS)
    for stack in STACKS:
        makers: list[tuple[str, Callable[[], Any]]] = [
            ("MockTransport", functools.partial(mock_client, stack, data)),
            ("local TCP", functools.partial(client, stack)),
        ]
        for where, make in makers:
            async with make() as c:
                expected = await plain_stream(c, stack, url, chunks)
                assert await our_stream(c, timed, base, chunks) == expected
                runs: dict[str, Callable[[], Awaitable[object]]] = {
                    "plain": functools.partial(plain_stream, c, stack, url, chunks),
                    "ours": functools.partial(our_stream, c, timed, base, chunks),
                    "untimed": functools.partial(our_stream, c, untimed, base, chunks),
                }
                got = await rate(args.rounds, runs, chunks)
            rows.append(
                f"| stream assembly, chunks/s | {stack}, {where} | {got['plain']:,.0f} "
                f"| {got['ours']:,.0f} | {got['ours'] / got['plain']:.2f} "
                f"| {got['untimed'] / got['plain']:.2f} |"
            )
    return rows


# -- client CPU per request at a concurrency ---------------------------------------------------


_STATS: list[Any] = []  # one client for the server's counters, kept open (one connection)


async def _stats(base: str) -> int:
    if not _STATS:
        _STATS.append(client(NEWEST, 1))
    response = await _STATS[0].get(base.removesuffix("/v1") + "/stats")
    return int(response.json()["connections"])


async def _waves(concurrency: int, per_task: int, one: Callable[[], Awaitable[object]]) -> None:
    async def task() -> None:
        for _ in range(per_task):
            await one()

    async with trio.open_nursery() as nursery:
        for _ in range(concurrency):
            nursery.start_soon(task)


async def cpu_per_request(
    base: str, kind: str, stack: str, concurrency: int, total: int, streamed: bool
) -> tuple[float, float]:
    """(client CPU µs per request, new TCP connections per request after warm-up)."""
    per_task = max(1, total // concurrency)
    count = per_task * concurrency
    request = ChatRequest([user("q")], extra_headers={"x-chunks": "20"})
    url = base + "/chat/completions"
    if kind == "raw":
        async with client(stack, concurrency) as c:

            async def one() -> object:
                if streamed:
                    return await plain_stream(c, stack, url, 20)
                return (await c.post(url, json={"model": "m", "messages": []})).json()

            await _waves(concurrency, 1, one)
            before, cpu = await _stats(base), time.process_time()
            await _waves(concurrency, per_task, one)
            cpu, after = time.process_time() - cpu, await _stats(base)
        return cpu / count * 1e6, (after - before) / count
    registry = ProviderRegistry().register(provider(base))
    config = ProviderConfig(retry=RetryConfig(max_retries=0), timeouts=NO_TIMEOUTS)
    spec = provider_spec(
        "llm", registry=registry, config=config, max_concurrency=max(concurrency, 2),
        client_factory=lambda: client(stack, concurrency), mailbox_size=max(concurrency, 16),
    )  # fmt: skip
    async with ActorSystem() as system:
        llm = await system.root.start_child(spec)

        async def ask() -> object:
            if not streamed:
                return await llm.ask(Chat(request))
            async with llm.stream(ChatStream(request)) as events:
                return [e async for e in events][-1]

        await _waves(concurrency, 1, ask)
        before, cpu = await _stats(base), time.process_time()
        await _waves(concurrency, per_task, ask)
        cpu, after = time.process_time() - cpu, await _stats(base)
    return cpu / count * 1e6, (after - before) / count


async def measure_cpu(args: argparse.Namespace, base: str) -> list[str]:
    rows = []
    runs = [("ProviderActor", stack) for stack in STACKS] + [("raw", NEWEST)]
    for streamed in (False, True):
        for concurrency in args.concurrency:
            cells, reuse = [], []
            for kind, stack in runs:
                if stack == "httpx" and concurrency > 100 and not args.old_at_1000:
                    cells.append("(--old-at-1000)")
                    reuse.append("-")
                    continue
                started = time.perf_counter()
                cpu, new = await cpu_per_request(
                    base, kind, stack, concurrency, args.total, streamed
                )
                print(f"  {kind} {stack} {concurrency} streamed={streamed}: {cpu:,.0f} µs,"
                      f" {time.perf_counter() - started:.1f} s", file=sys.stderr)  # fmt: skip
                cells.append(f"{cpu:,.0f}")
                reuse.append(f"{new:.2f}")
            mode = "streamed" if streamed else "plain"
            rows.append(f"| {mode} | {concurrency:,} | " + " | ".join(cells) + " | "
                        + " / ".join(reuse) + " |")  # fmt: skip
    return rows


async def measure_sequential(args: argparse.Namespace, base: str) -> tuple[float, float]:
    """µs per sequential non-streamed request: ProviderActor vs the bare newest client."""
    request, url = ChatRequest([user("q")]), base + "/chat/completions"
    registry = ProviderRegistry().register(provider(base))
    async with client(NEWEST) as c, ActorSystem() as system:
        llm = await system.root.start_child(
            provider_spec("llm", registry=registry, client_factory=lambda: client(NEWEST))
        )

        async def ours() -> None:
            for _ in range(args.requests):
                await llm.ask(Chat(request))

        async def bare() -> None:
            for _ in range(args.requests):
                (await c.post(url, json={"model": "m", "messages": []})).json()

        got = await rate(args.rounds, {"ours": ours, "bare": bare}, args.requests)
    return 1e6 / got["ours"], 1e6 / got["bare"]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--old-at-1000",
        action="store_true",
        help="also run httpx 0.28 above 100 concurrent requests (takes 10 minutes and more)",
    )
    parser.add_argument(
        "--only", choices=["streams", "cpu", "sequential"], help="run one section only"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.chunks, args.requests, args.total = 2, 200, 20, 40
        args.concurrency = [1, 10]
    else:
        args.chunks, args.requests, args.total = 2000, 300, 2000
        args.concurrency = [1, 100, 1000]
    return args


async def run(args: argparse.Namespace, base: str) -> list[str]:
    streams = await measure_streams(args, base) if args.only in (None, "streams") else []
    cpu = await measure_cpu(args, base) if args.only in (None, "cpu") else []
    ours = bare = math.nan
    if args.only in (None, "sequential"):
        ours, bare = await measure_sequential(args, base)
    if _STATS:
        await _STATS.pop().aclose()
    versions = ", ".join(f"{name} {m.__version__}" for name, m in STACKS.items())
    heads = [f"ProviderActor ({s})" for s in STACKS] + [f"raw {NEWEST}"]
    return [
        "## LLM layer (benchmarks/llm.py)",
        "",
        f"- machine: {platform.python_implementation()} {platform.python_version()},"
        f" trio {trio.__version__}, {versions}; {args.rounds} rounds, medians",
        f"- streams: {args.chunks:,} content chunks; client CPU: {args.total:,} requests per"
        " cell after one warm-up wave; the servers run in another process",
        "",
        "| measure | stack, transport | plain loop | agcore_actors | ratio | ratio, timeouts off |",
        "|---|---|---:|---:|---:|---:|",
        *streams,
        "",
        "Client CPU per request, µs (new TCP connections per request after warm-up, same order):",
        "",
        "| mode | concurrent | " + " | ".join(heads) + " | new connections |",
        "|---|---:|" + "---:|" * len(heads) + "---|",
        *cpu,
        "",
        "| measure | bare client | agcore_actors | ratio |",
        "|---|---:|---:|---:|",
        f"| non-streamed request, µs | {bare:,.0f} | {ours:,.0f} | {bare / ours:.2f} |",
        "",
        "Ratios above 1 favour agcore_actors. The idle limit is applied at the network"
        " read, not per event, so timeouts on and off cost the same.",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve:
        asyncio.run(_server_main())
        return 0
    started = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert server.stdout is not None
        base = f"http://127.0.0.1:{int(server.stdout.readline())}/v1"
        lines = trio.run(run, args, base)
    finally:
        if server.stdin is not None:
            server.stdin.close()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if server.stdout is not None:
            server.stdout.close()
    print("\n".join([*lines, "", f"Total wall time: {time.perf_counter() - started:.1f} s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
