"""Tools and MCP benchmark.

- ``ExecuteTools`` through the ToolExecutor actor in strict mode, with batches
  of 1, 10 and 100 trivial async function tools (batches/s and calls/s), and the same
  with a sync function tool (each call on a worker thread of the tools' own);
- ``tools/call`` round trips to a real MCP server (the official SDK 2.x,
  stdio, from ``.peers/mcp2``) through the McpConnection actor, one at a
  time and 8 in parallel (calls/s). Skipped when the peer is not installed;
- ``--mcp-cpu``: the client process's CPU time per ``tools/call`` through the
  McpConnection actor, over stdio and streamable HTTP (the same SDK server), so that two
  trees can be compared: ``PYTHONPATH=<tree> python benchmarks/tools.py --mcp-cpu``.
  The "answering elicitation" rows give the connection an elicitation handler and each
  call a session, as ``run``, ``chat`` and ``serve`` do (over stdio that puts the calls
  through the one-session-at-a-time gate).

Each figure is the median of several rounds. Run from the repository root::

    python benchmarks/tools.py            # full run, about 20 s
    python benchmarks/tools.py --quick    # smoke test
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import trio

from agcore_actors import ActorSystem
from agcore_actors.mcp import (
    CallTool,
    ConnectionConfig,
    HttpServer,
    ListTools,
    ServerConfig,
    StdioServer,
    server_spec,
)
from agcore_actors.tools import ExecuteTools, ToolCall, ToolExecutor, ToolRegistry, function_tool

ROOT = Path(__file__).resolve().parent.parent
PEER = ROOT / ".peers" / "mcp2" / "bin" / "python"
SERVER = ROOT / "tests" / "peers" / "mcp_server_app.py"


@function_tool
async def add(a: int, b: int) -> int:
    return a + b


@function_tool
def add_sync(a: int, b: int) -> int:
    return a + b


async def bench_executor(
    batch: int, rounds: int, batches: int, tool: str = "add"
) -> tuple[float, float]:
    calls = [ToolCall(id=f"c{i}", name=tool, arguments='{"a": 1, "b": 2}') for i in range(batch)]
    rates = []
    async with ActorSystem(strict=True) as system:
        registry = ToolRegistry([add, add_sync])
        ref = await system.spawn(lambda: ToolExecutor(registry), name="tools")
        for _ in range(rounds):
            start = time.perf_counter()
            for n in range(batches):
                await ref.ask(ExecuteTools(batch_id=f"b{n}", calls=calls))
            rates.append(batches / (time.perf_counter() - start))
    rate = statistics.median(rates)
    return rate, rate * batch


async def bench_mcp(calls: int, parallel: int, rounds: int) -> float:
    rates = []
    async with ActorSystem(strict=True) as system:
        await system.start_supervisor(
            server_spec("bench", server=StdioServer(str(PEER), [str(SERVER)]))
        )
        conn = system.lookup("mcp:bench")
        await conn.ask(ListTools())
        for _ in range(rounds):
            start = time.perf_counter()

            async def worker(n: int) -> None:
                for _ in range(n):
                    await conn.ask(CallTool(name="add", arguments={"a": 1, "b": 2}))

            async with trio.open_nursery() as nursery:
                for _ in range(parallel):
                    nursery.start_soon(worker, calls // parallel)
            rates.append(calls / (time.perf_counter() - start))
    return statistics.median(rates)


async def decline(server: str, params: object) -> object:
    return {"action": "decline"}


async def bench_mcp_cpu(
    server: ServerConfig, calls: int, rounds: int, asking: bool = False
) -> float:
    """Median client CPU microseconds per ``tools/call`` (one at a time); ``asking``:
    with an elicitation handler, each call of session ``s1``."""
    costs = []
    config = ConnectionConfig(requests={"elicitation/create": decline} if asking else {})
    call = CallTool(name="add", arguments={"a": 1, "b": 2}, session_id="s1" if asking else "")
    async with ActorSystem(strict=True) as system:
        await system.start_supervisor(server_spec("bench", server=server, config=config))
        conn = system.lookup("mcp:bench")
        await conn.ask(ListTools())
        for _ in range(rounds):
            start = time.process_time()
            for _ in range(calls):
                await conn.ask(call)
            costs.append((time.process_time() - start) / calls * 1e6)
    return statistics.median(costs)


def http_peer() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    argv = [str(PEER), str(SERVER), "http", str(port)]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1)
        except urllib.error.HTTPError:
            return process, url
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the MCP HTTP server did not start")


async def run_mcp_cpu(quick: bool) -> None:
    calls, rounds = (20, 1) if quick else (300, 5)
    print("| MCP tools/call, client CPU | µs per call |")
    print("|---|---:|")
    stdio_server = StdioServer(str(PEER), [str(SERVER)])
    stdio = await bench_mcp_cpu(stdio_server, calls, rounds)
    print(f"| stdio | {stdio:,.0f} |")
    asking = await bench_mcp_cpu(stdio_server, calls, rounds, asking=True)
    print(f"| stdio, answering elicitation | {asking:,.0f} |")
    process, url = http_peer()
    try:
        http = await bench_mcp_cpu(HttpServer(url), calls, rounds)
    finally:
        process.kill()
        process.wait()
    print(f"| streamable HTTP | {http:,.0f} |")


async def run(quick: bool) -> None:
    rounds = 1 if quick else 5
    print("| tool | batch size | batches/s | calls/s |")
    print("|---|---:|---:|---:|")
    for tool in ("add", "add_sync"):
        for batch in (1, 10, 100):
            batches = 5 if quick else max(20, 4000 // batch)
            per_batch, per_call = await bench_executor(batch, rounds, batches, tool)
            kind = "async" if tool == "add" else "sync (thread)"
            print(f"| {kind} | {batch} | {per_batch:,.0f} | {per_call:,.0f} |")
    if not PEER.exists():
        print("\n(MCP round trips skipped: run tests/peers/install_mcp.sh)")
        return
    print("\n| MCP tools/call (stdio, mcp 2.3.0) | calls/s |")
    print("|---|---:|")
    for parallel in (1, 8):
        rate = await bench_mcp(16 if quick else 400, parallel, 1 if quick else 3)
        print(f"| {parallel} in parallel | {rate:,.0f} |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short round (smoke test)")
    parser.add_argument(
        "--mcp-cpu", action="store_true", help="client CPU per MCP call, stdio and HTTP"
    )
    args = parser.parse_args(argv)
    trio.run(run_mcp_cpu if args.mcp_cpu else run, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
