"""Load on ``agcore-actors serve --http``: turns/s and latency at 32 to 2,048 clients.

Three processes: the fast fake OpenAI server (benchmarks/fake_openai.py, zero latency),
``agcore-actors serve --http`` against it (SQLite store in a temporary directory), and
this load generator. At each level C clients run for ``--seconds``; each keeps one
HTTP/1.1 connection and POSTs one turn after another (``Accept: application/json``, a
fresh session each time, so no transcript grows). A refused turn must be 429 or 503 with
``Retry-After``; its client waits that long, as a well-behaved client does. Anything
else — another status, a refusal without ``Retry-After``, a connection error or reset —
counts as an error.

Each level first runs unmeasured (every client connects and sends its first request at
once: the burst of connection setups and refusals) until every client has had its first
answer, and ``--warmup`` seconds at least (30 at most; the table gives how long), then
``--seconds`` measured: on a loaded machine the generator itself may need several seconds
to get through a burst of 2,048 connections, and a turn measured while it does so measures
the generator. Reported per level: turns completed per second and p50/p99 of the
completed turns' latency in the measured part, the p99 of all turns including the burst,
refusals and errors over the whole level (errors must be 0), and the measured p99 over
the first level's (the target: within 2x); the p99 less the time spent connecting (the
kernel's accept queue); and the CPU each process used during the level, in percent of one
core (this generator's own share shows whether it, not the server, is the bottleneck), and
the server's CPU per completed turn (warm-up included), which a loaded machine moves far
less than it moves latency; what an admitted turn's latency is made of: the clients' mean
latency beside the mean of the server's own turn durations (``agcore_turn_seconds`` from
/metrics, measured part; the difference is HTTP, connections and queueing outside the
turn), and the p99 of how late this generator's 5 ms timer woke (its own event-loop lag,
which every latency it measures includes). Under the table, each level's server CPU per
refusal: its CPU less its turns at the first level's CPU per turn, over its refusals. A
request that takes longer than 60 s counts as an error. ``--repeat N`` runs the levels N
times interleaved (32, 128, 512, 2048, 32, ...) and pools them: on a shared machine a
noisy minute then hits every level rather than one.

    PYTHONPATH=. .venv/bin/python benchmarks/serve_load.py                 # 32..2048
    PYTHONPATH=. .venv/bin/python benchmarks/serve_load.py --quick         # smoke
    PYTHONPATH=. .venv/bin/python benchmarks/serve_load.py --max-admitted 256
    PYTHONPATH=. .venv/bin/python benchmarks/serve_load.py --max-admitted 32 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import attrs
import trio

HERE = Path(__file__).resolve().parent
TOKEN = "load-token-0123456789abcdef"
#: Seconds a connection may sit idle before a request reuses it (hypercorn closes at 5).
KEEP_ALIVE = 4.0
#: Seconds a request may take, connecting included, before it counts as an error.
REQUEST_TIMEOUT = 60.0
#: Longest warm-up: the measured part begins then even if some client still waits for
#: its first answer.
BURST_CAP = 30.0


@attrs.define
class Level:
    clients: int
    seconds: float = 0.0
    latencies: list[float] = attrs.field(factory=list)
    #: Of each measured latency, the seconds spent connecting.
    connects: list[float] = attrs.field(factory=list)
    #: Latencies of the turns started during the warm-up (the burst).
    burst: list[float] = attrs.field(factory=list)
    refused: int = 0
    #: Seconds of Retry-After handed out, summed.
    told: float = 0.0
    reasons: dict[str, int] = attrs.field(factory=dict)
    errors: int = 0
    kinds: dict[str, int] = attrs.field(factory=dict)
    #: CPU seconds used during the level by this generator, the server, the fake model.
    cpu: list[float] = attrs.field(factory=lambda: [0.0, 0.0, 0.0])
    #: Wall seconds of the level (warm-up included).
    wall: float = 0.0
    #: Seconds the server's turns took (its ``agcore_turn_seconds``), summed, and how
    #: many ended, over the measured part.
    inside: float = 0.0
    ends: int = 0
    #: How late this generator's 5 ms timer woke, over the measured part (its own lag).
    lags: list[float] = attrs.field(factory=list)
    #: Seconds each run of the level took to warm up (the burst answered).
    warm: list[float] = attrs.field(factory=list)
    #: When the measured part begins and ends (trio's clock; unknown while warming up).
    measured: float = math.inf
    until: float = math.inf
    #: Clients that have had their first answer; set once all have.
    answered: int = 0
    settled: trio.Event = attrs.field(factory=trio.Event)
    ended: trio.Event = attrs.field(factory=trio.Event)

    def merge(self, other: Level) -> None:
        self.seconds += other.seconds
        self.latencies += other.latencies
        self.connects += other.connects
        self.burst += other.burst
        self.refused += other.refused
        self.told += other.told
        self.wall += other.wall
        self.inside += other.inside
        self.ends += other.ends
        self.lags += other.lags
        self.warm += other.warm
        for into, more in ((self.reasons, other.reasons), (self.kinds, other.kinds)):
            for key, count in more.items():
                into[key] = into.get(key, 0) + count
        self.errors += other.errors
        self.cpu = [a + b for a, b in zip(self.cpu, other.cpu, strict=True)]

    def first_answer(self, count: int) -> None:
        """A client's request number ``count`` (from 1) was answered, or failed."""
        if count == 1:
            self.answered += 1
            if self.answered == self.clients:
                self.settled.set()

    def error(self, kind: str) -> None:
        self.errors += 1
        self.kinds[kind] = self.kinds.get(kind, 0) + 1


class Connection:
    """One keep-alive HTTP/1.1 connection (reconnects when the server closes it)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.stream: trio.SocketStream | None = None
        self.buffer = b""
        self.used = 0.0
        #: Seconds the last request spent connecting (0 on a reused connection).
        self.connecting = 0.0

    async def request(self, raw: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
        if self.stream is not None and trio.current_time() - self.used > KEEP_ALIVE:
            await self.aclose()  # the server may be closing it: a fresh one, as clients do
        self.connecting = 0.0
        if self.stream is None:
            began = time.perf_counter()
            self.stream = await trio.open_tcp_stream(self.host, self.port)
            self.connecting = time.perf_counter() - began
            self.buffer = b""
        await self.stream.send_all(raw)
        while b"\r\n\r\n" not in self.buffer:
            await self._more()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get(b"content-length", b"0"))
        while len(self.buffer) < length:
            await self._more()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        self.used = trio.current_time()
        if headers.get(b"connection", b"").lower() == b"close":
            await self.aclose()
        return status, headers, body

    async def _more(self) -> None:
        assert self.stream is not None
        chunk = await self.stream.receive_some(65536)
        if not chunk:
            raise ConnectionResetError("the server closed the connection")
        self.buffer += chunk

    async def aclose(self) -> None:
        if self.stream is not None:
            await self.stream.aclose()
            self.stream = None


def turn_request(netloc: str, session: str) -> bytes:
    body = json.dumps({"text": "what is 2 + 3?"}).encode()
    return (
        f"POST /v1/sessions/{session}/turns HTTP/1.1\r\nhost: {netloc}\r\n"
        f"authorization: Bearer {TOKEN}\r\naccept: application/json\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode() + body


async def client(url: str, index: int, level: Level) -> None:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    connection = Connection(parts.hostname, parts.port)
    count = 0
    try:
        while trio.current_time() < level.until:
            session = f"l{level.clients}-c{index}-{count}"
            count += 1
            started, begun = time.perf_counter(), trio.current_time()
            try:
                with trio.fail_after(REQUEST_TIMEOUT):
                    status, headers, body = await connection.request(
                        turn_request(parts.netloc, session)
                    )
            except (OSError, trio.BrokenResourceError, trio.TooSlowError) as exc:
                level.first_answer(count)
                level.error(type(exc).__name__)
                await connection.aclose()
                await trio.sleep(0.1)
                continue
            level.first_answer(count)
            if status == 200 and json.loads(body).get("status") == "completed":
                if begun >= level.measured:
                    level.latencies.append(time.perf_counter() - started)
                    level.connects.append(connection.connecting)
                else:
                    level.burst.append(time.perf_counter() - started)
            elif status in (429, 503) and b"retry-after" in headers:
                level.refused += 1
                reason = json.loads(body).get("error_kind", "?")
                level.reasons[reason] = level.reasons.get(reason, 0) + 1
                level.told += float(headers[b"retry-after"])
                with trio.move_on_after(float(headers[b"retry-after"])):
                    await level.ended.wait()
            else:
                level.error(f"{status}")
    finally:
        await connection.aclose()


async def turn_seconds(url: str) -> tuple[float, int]:
    """The server's ``agcore_turn_seconds`` sum and count (from /metrics)."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    connection = Connection(parts.hostname, parts.port)
    raw = (f"GET /metrics HTTP/1.1\r\nhost: {parts.netloc}\r\n"
           f"authorization: Bearer {TOKEN}\r\n\r\n").encode()  # fmt: skip
    try:
        _, _, body = await connection.request(raw)
    finally:
        await connection.aclose()
    found = {}
    for line in body.decode().splitlines():
        name, _, value = line.partition(" ")
        if name in ("agcore_turn_seconds_sum", "agcore_turn_seconds_count"):
            found[name] = float(value)
    return found["agcore_turn_seconds_sum"], int(found["agcore_turn_seconds_count"])


async def lag(level: Level) -> None:
    """Record how late a 5 ms sleep of this process wakes in the measured part."""
    while trio.current_time() < level.until:
        asked = trio.current_time() + 0.005
        await trio.sleep_until(asked)
        level.lags.append(trio.current_time() - asked)


async def run_level(url: str, clients: int, warmup: float, seconds: float) -> Level:
    """``clients`` clients; the measured part begins once every client has had its first
    answer (the burst is over), and ``warmup`` seconds at least (at most ``BURST_CAP``)."""
    level = Level(clients, seconds=seconds)
    began = trio.current_time()
    async with trio.open_nursery() as nursery:
        for i in range(clients):
            nursery.start_soon(client, url, i, level)
        await trio.sleep(warmup)
        with trio.move_on_at(began + max(warmup, BURST_CAP)):
            await level.settled.wait()
        level.measured = trio.current_time()
        level.until = level.measured + seconds
        level.warm.append(level.measured - began)
        nursery.start_soon(lag, level)
        inside, ended = await turn_seconds(url)
        await trio.sleep_until(level.until)
        level.ended.set()
        inside_after, ended_after = await turn_seconds(url)
        level.inside, level.ends = inside_after - inside, ended_after - ended
    return level


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(url: str, pids: tuple[int, int], clients: int, warmup: float, seconds: float) -> Level:
    """One level, with the CPU each process used during it."""
    before = [time.process_time(), *map(cpu_seconds, pids)]
    wall = time.perf_counter()
    level = trio.run(run_level, url, clients, warmup, seconds)
    level.wall = time.perf_counter() - wall
    after = [time.process_time(), *map(cpu_seconds, pids)]
    level.cpu = [b - a for a, b in zip(before, after, strict=True)]
    return level


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def start(
    args: argparse.Namespace, store: str
) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes], str]:
    fake = subprocess.Popen([sys.executable, str(HERE / "fake_openai.py")], stdout=subprocess.PIPE)
    assert fake.stdout is not None
    port = int(fake.stdout.readline().split()[1])
    path = os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path, OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1",
               OPENAI_MODEL="fake", OPENAI_API_KEY="sk-fake", AGCORE_SERVE_TOKEN=TOKEN)  # fmt: skip
    command = [sys.executable, "-m", "agcore_actors.cli", "serve", "--http", "127.0.0.1:0",
               "--store", store]  # fmt: skip
    if args.max_admitted:
        command += ["--max-admitted", str(args.max_admitted)]
    serve = subprocess.Popen(command, stderr=subprocess.PIPE, env=env)
    assert serve.stderr is not None
    line = serve.stderr.readline().decode()
    assert line.startswith("serving on "), line
    return fake, serve, line.split()[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="32,128,512,2048")
    parser.add_argument("--seconds", type=float, default=8.0, help="measured, per level")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured, per level")
    parser.add_argument("--max-admitted", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1, help="runs of the levels, interleaved")
    parser.add_argument("--quick", action="store_true", help="two small levels, 1 s each")
    args = parser.parse_args(argv)
    if args.quick:
        args.levels, args.seconds, args.warmup = "8,32", 1.0, 0.5
    levels = [int(x) for x in args.levels.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        fake, serve, url = start(args, str(Path(tmp) / "sessions.db"))
        try:
            trio.run(run_level, url, 8, 0.0, 1.0)  # warm-up: imports, first sessions
            pids = (serve.pid, fake.pid)
            results = [Level(c) for c in levels]
            for _ in range(args.repeat):  # interleaved: a noisy minute hits every level
                for pooled, c in zip(results, levels, strict=True):
                    level = measure(url, pids, c, args.warmup, args.seconds)
                    pooled.merge(level)
                    done = f"{len(level.latencies)} turns, {level.refused} refused"
                    done += f", {level.errors} errors"
                    print(f"{c} clients: {done}", file=sys.stderr, flush=True)
        finally:
            for process in (serve, fake):
                process.terminate()
                process.wait(timeout=60)
                for pipe in (process.stdout, process.stderr):
                    if pipe is not None:
                        pipe.close()
    base = percentile(results[0].latencies, 0.99)
    admitted = args.max_admitted or "default"
    print(f"## serve --http under load (benchmarks/serve_load.py), max_admitted={admitted}\n")
    print("| clients | turns/s | p50 ms | p99 ms | p99 / first level's | p99 ms with the burst "
          "| refused (429/503 + Retry-After) | errors | CPU % load / server / model "
          "| p99 ms after connecting | server CPU ms / turn "
          "| mean ms: client / server's turn | load p99 lag ms | warm-up s |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    per_turn = [level.cpu[1] / max(1, len(level.latencies) + len(level.burst)) for level in results]
    for level in results:
        p50, p99 = percentile(level.latencies, 0.5), percentile(level.latencies, 0.99)
        every = percentile(level.latencies + level.burst, 0.99)
        kinds = f" {level.kinds}" if level.kinds else ""
        pairs = zip(level.latencies, level.connects, strict=True)
        served = percentile([a - b for a, b in pairs], 0.99)
        cpu = " / ".join(f"{100 * c / level.wall:.0f}" for c in level.cpu)
        print(f"| {level.clients} | {len(level.latencies) / level.seconds:,.0f} | {p50 * 1e3:,.0f} "
              f"| {p99 * 1e3:,.0f} | {p99 / base:.2f} | {every * 1e3:,.0f} | {level.refused:,} "
              f"| {level.errors:,}{kinds} | {cpu} | {served * 1e3:,.0f} "
              f"| {per_turn[results.index(level)] * 1e3:.2f} "
              f"| {statistics.fmean(level.latencies or [0]) * 1e3:,.0f} / "
              f"{level.inside / max(1, level.ends) * 1e3:,.0f} "
              f"| {percentile(level.lags, 0.99) * 1e3:,.0f} "
              f"| {statistics.fmean(level.warm):.1f} |")  # fmt: skip
    for level in results:
        if level.refused:
            print(f"\n{level.clients} clients: refusals {level.reasons}, mean Retry-After "
                  f"{level.told / level.refused:.1f} s")  # fmt: skip
            turns = len(level.latencies) + len(level.burst)
            rest = level.cpu[1] - turns * per_turn[0]
            print(f"{level.clients} clients: server CPU per refusal about "
                  f"{rest / level.refused * 1e3:.2f} ms (less the turns at the first level's "
                  f"{per_turn[0] * 1e3:.2f} ms each)")  # fmt: skip
    completed = sum(len(level.latencies) for level in results)
    mean = statistics.fmean(x for level in results for x in level.latencies) if completed else 0
    print(f"\n{completed:,} turns completed, mean {mean * 1e3:,.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
