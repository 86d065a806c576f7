"""Server CPU per refused turn POST: ``serve --http``'s accept-time gate against hypercorn.

Two servers in this process, one after the other, on the same accept loop
(:func:`agcore_actors.serve._http_gate.serve_gated`): a gate that always sheds (every turn
POST refused at its request line), and a gate that never sheds in front of a trivial ASGI
application answering every request 503 + ``Retry-After`` + ``Connection: close`` after
reading its body (hypercorn's parsing and answering, none of the real application's
checks: a lower bound of a refusal through hypercorn). A client process sends
``--refusals`` turn POSTs, ``--concurrency`` at a time, each on a new connection. Reported:
this process's CPU (user + system, ``getrusage``) per refusal. Alternated ``--rounds``
times, so a machine whose load changes hits both.

    PYTHONPATH=. .venv/bin/python benchmarks/serve_refusal.py --refusals 3000
"""

from __future__ import annotations

import argparse
import resource
import sys
from typing import Any

import trio

from agcore_actors.serve._http_gate import Gate, serve_gated

CLIENT = r"""
import sys, trio
port, total, concurrency = map(int, sys.argv[1:4])
body = b'{"text":"hi"}'
request = (b"POST /v1/sessions/x/turns HTTP/1.1\r\nhost: 127.0.0.1\r\n"
           b"authorization: Bearer t\r\ncontent-type: application/json\r\n"
           b"content-length: %d\r\n\r\n" % len(body)) + body
async def worker(count):
    for _ in range(count):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            await stream.send_all(request)
            answer = b""
            while chunk := await stream.receive_some(65536):
                answer += chunk
            assert b" 503 " in answer and b"retry-after" in answer.lower(), answer
async def main():
    async with trio.open_nursery() as nursery:
        for _ in range(concurrency):
            nursery.start_soon(worker, total // concurrency)
trio.run(main)
"""


async def refuse_all(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    body = b'{"error_kind":"overloaded","error":"too many turns at once; retry later"}'
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(body)),
        (b"retry-after", b"1"),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def full() -> int:
    return 1


def empty() -> int:
    return 0


def one_second() -> int:
    return 1


async def measure(shed: bool, refusals: int, concurrency: int) -> float:
    """Server CPU seconds per refusal."""
    from hypercorn.config import Config

    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = config.errorlog = None
    config.backlog = 4096
    gate = Gate(1, full if shed else empty, one_second)
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve_gated, refuse_all, config, gate, stop.wait)
        port = binds[0].rsplit(":", 1)[1]
        before = resource.getrusage(resource.RUSAGE_SELF)
        argv = [sys.executable, "-c", CLIENT, port, str(refusals), str(concurrency)]
        await trio.run_process(argv)
        after = resource.getrusage(resource.RUSAGE_SELF)
        stop.set()
    used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return used / refusals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--refusals", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    for _ in range(args.rounds):
        for shed, name in ((True, "gate"), (False, "hypercorn + a trivial 503 app")):
            cost = trio.run(measure, shed, args.refusals, args.concurrency)
            print(f"{name}: {cost * 1e6:.0f} us of server CPU per refusal", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
