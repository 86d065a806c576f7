"""The wiring of the soak (benchmarks/soak.py): one SessionHost on a SQLite store, its
provider pointed at the fault-injecting fake OpenAI server (tests/peers/fault_openai.py,
its own process), function tools that misbehave, and a fault-injecting MCP server (a
real stdio subprocess: mcp_raw_server.py in ``faults`` mode) under supervision.

With ``StoreFaults`` the store's writes fail now and then, for a moment, with the store's
own typed errors (disk full, read-only, busy) and then heal (``--store-faults``).

Also the probes the soak counts leaks with: trio tasks, threads, open file descriptors,
child processes (zombies included) and RSS, all read from this process.
"""

from __future__ import annotations

import functools
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio
import trio.lowlevel

from agcore_actors import ActorSystem
from agcore_actors.actor import Backoff, ChildSpec
from agcore_actors.actor.policy import CircuitBreaker
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    AgentConfig,
    HostConfig,
    SessionHost,
    StoreTurns,
)
from agcore_actors.llm import (
    OpenAICompatibleProvider,
    OpenAIConfig,
    ProviderRegistry,
    RetryConfig,
    Timeouts,
    provider_actor,
)
from agcore_actors.mcp import ClientOptions, ConnectionConfig, StdioServer, servers_spec, wait_ready
from agcore_actors.store import (
    SessionStore,
    SqliteSessions,
    StoreBusy,
    StoreStorageError,
    StoreUnavailable,
    session_store_spec,
)
from agcore_actors.store.lowlevel import Backend, SqliteSessionBackend
from agcore_actors.tools import ExecutorConfig, Tool, ToolExecutor, ToolRegistry, function_tool

ROOT = Path(__file__).resolve().parents[1]
MCP_SERVER = ROOT / "tests" / "peers" / "mcp_raw_server.py"
PAGE = os.sysconf("SC_PAGE_SIZE")


@attrs.frozen(kw_only=True)
class RigConfig:
    """Sizes and deadlines of one soak run (small enough to make every fault cheap)."""

    #: Live sessions at most: far fewer than the sessions, so they are evicted and restored.
    max_sessions: int = 16
    #: Seconds a session may stay idle before it is evicted.
    idle_ttl: float = 0.2
    #: Turns running at once across all sessions.
    in_flight: int = 48
    #: Seconds a tool call may take unless it sets its own (the hanging tools set 0.3 s
    #: and outlast it; an MCP call meets the client's 1 s request timeout first).
    tool_timeout: float = 3.0
    #: Seconds a whole turn may take.
    turn_timeout: float = 20.0
    #: Seed of the provider's backoff jitter.
    seed: int = 0
    #: The SQLite page cache of the session store, in MiB (the library's default).
    cache_mib: int = 32
    #: An extra argument of the MCP server's command line, to find its processes by.
    mcp_tag: str = "soak"


# -- function tools: one healthy, the others misbehave ----------------------------------


@function_tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@function_tool(timeout=0.3)
async def hang() -> str:
    """Never returns (an async tool, cancelled at its timeout)."""
    await trio.sleep_forever()


@function_tool(timeout=0.3)
def hang_sync() -> str:
    """Blocks its worker thread past the timeout, then returns (the thread is abandoned)."""
    time.sleep(0.6)
    return "late"


@function_tool
async def boom() -> str:
    """Raises."""
    raise ValueError("injected tool failure")


@function_tool
async def quit() -> str:
    """Calls sys.exit."""
    sys.exit(3)


@function_tool
def quit_sync() -> str:
    """Calls sys.exit on its worker thread."""
    sys.exit(4)


TOOLS: list[Tool] = [add, hang, hang_sync, boom, quit, quit_sync]


def mcp_config() -> ConnectionConfig:
    """Short deadlines and quick reconnects: a dead server is back within a second."""
    return ConnectionConfig(
        client=ClientOptions(request_timeout=1.0, connect_timeout=10.0, shutdown_grace=0.5),
        backoff=Backoff(initial=0.05, cap=0.5),
        breaker=CircuitBreaker(threshold=5, backoff=Backoff(initial=0.2, cap=1.0)),
    )


# -- a store whose writes fail for a moment now and then ----------------------------------


class StoreFaults:
    """While :attr:`kind` is set, every write transaction fails with that typed storage
    error (read in the store's worker thread); :meth:`schedule` sets it on a seeded
    schedule, about ``lasting`` seconds in every ``every``, until cancelled."""

    def __init__(self, seed: int) -> None:
        self.kind: str | None = None
        self.injected: dict[str, int] = {}
        self._rng = random.Random(f"{seed}:store-faults")

    async def schedule(self, every: float = 1.0, lasting: float = 0.1) -> None:
        try:
            while True:
                await trio.sleep(self._rng.uniform(0, 2 * every))
                kind = self._rng.choice(["full", "readonly", "busy"])
                self.injected[kind] = self.injected.get(kind, 0) + 1
                self.kind = kind
                await trio.sleep(self._rng.uniform(0, 2 * lasting))
                self.kind = None
        finally:
            self.kind = None

    def error(self) -> StoreStorageError | None:
        match self.kind:
            case "full":
                return StoreUnavailable("database or disk is full")
            case "readonly":
                return StoreUnavailable("attempt to write a readonly database")
            case "busy":
                return StoreBusy("database is locked")
        return None


class _FaultyBackend:
    def __init__(self, inner: Backend, faults: StoreFaults) -> None:
        self._inner, self._faults = inner, faults

    def run_batch(self, operations: Any, write: bool) -> Any:
        error = self._faults.error() if write else None
        if error is not None:
            raise error
        return self._inner.run_batch(operations, write)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _store_spec(db: str, rig: RigConfig, faults: StoreFaults | None) -> ChildSpec[Any]:
    config = SqliteSessions(db, synchronous="NORMAL", cache_mib=rig.cache_mib)
    if faults is None:
        return session_store_spec("store", backend=config)

    def writer() -> Backend:
        inner = SqliteSessionBackend(db, synchronous="NORMAL", cache_mib=rig.cache_mib)
        return _FaultyBackend(inner, faults)

    def reader() -> Backend:
        return SqliteSessionBackend(db, synchronous="NORMAL", record_cache=0)

    return ChildSpec(
        "store", functools.partial(SessionStore, writer, open_reader=reader, threaded=True)
    )


@asynccontextmanager
async def soak_host(
    system: ActorSystem,
    base_url: str,
    db: str,
    rig: RigConfig,
    store_faults: StoreFaults | None = None,
) -> AsyncIterator[SessionHost]:
    """Start the store, provider, tools and MCP server in ``system``; yield the host."""
    store = await system.root.start_child(_store_spec(db, rig, store_faults))
    registry = ProviderRegistry().register(
        OpenAICompatibleProvider(
            OpenAIConfig(name="faulty", base_url=base_url, api_key="sk-soak", model="fake")
        )
    )
    llm = await system.spawn(
        provider_actor(
            registry,
            max_in_flight=rig.in_flight,
            retry=RetryConfig(max_retries=3, base_delay=0.02, max_delay=0.2),
            timeouts=Timeouts(attempt=1.0, idle=0.5, connect=2.0, call=10.0),
            seed=rig.seed,
        ),
        name="llm",
    )
    tools = ToolRegistry(TOOLS)
    server = StdioServer(command=sys.executable, args=[str(MCP_SERVER), "faults", rig.mcp_tag])
    await system.start_supervisor(
        servers_spec({"flaky": server}, registry=tools, config=mcp_config())
    )
    await wait_ready(system.lookup("mcp:flaky"), timeout=30)
    executor_config = ExecutorConfig(default_timeout=rig.tool_timeout)
    executor = await system.spawn(lambda: ToolExecutor(tools, config=executor_config), name="tools")
    bundle = (
        AgentBuilder()
        .provider(llm)
        .store(StoreTurns(store))
        .tools(executor, tools)
        .agent(Agent(name="soak", instructions="Be brief."))
        .config(
            AgentConfig(
                turn_timeout=rig.turn_timeout, tool_timeout=rig.tool_timeout, max_turns=10_000
            )
        )
        .build()
    )
    config = HostConfig(
        max_sessions=rig.max_sessions,
        idle_ttl=rig.idle_ttl,
        max_turns_in_flight=rig.in_flight,
        drain_timeout=5.0,
    )
    async with SessionHost(system, bundle, config) as host:
        yield host


# -- the fake provider's process ---------------------------------------------------------


def start_provider(seed: int, rate: float, tool_rate: float) -> tuple[subprocess.Popen[bytes], str]:
    """Start tests/peers/fault_openai.py; its process and base URL."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "tests.peers.fault_openai", "--seed", str(seed)]
    argv += ["--rate", str(rate), "--tool-rate", str(tool_rate)]
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, env=env, cwd=ROOT, start_new_session=True
    )
    assert process.stdout is not None
    lines = [process.stdout.readline().decode() for _ in range(2)]
    if not lines[1].startswith("BASE "):
        process.kill()
        process.wait()
        raise RuntimeError(f"the fault provider did not start: {lines!r}")
    process.stdout.close()
    process.stdout = None
    return process, lines[1].split()[1]


def stop_provider(process: subprocess.Popen[bytes]) -> None:
    process.kill()
    process.wait()


def fault_counts(base_url: str) -> dict[str, int]:
    """Requests the fake provider served per fault."""
    import json
    import urllib.request

    with urllib.request.urlopen(f"{base_url}/stats", timeout=5) as response:
        counts: dict[str, int] = json.loads(response.read())
    return counts


# -- probes ------------------------------------------------------------------------------


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def fd_targets() -> dict[int, str]:
    """What each open file descriptor points at."""
    found = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            found[int(fd)] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
    return found


def threads() -> int:
    return threading.active_count()


def children(exclude: frozenset[int] = frozenset()) -> list[int]:
    """Pids whose parent is this process (zombies included), but ``exclude``."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in exclude:
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command may hold spaces and parentheses: the fields follow the last ")".
        if int(stat.rsplit(")", 1)[1].split()[1]) == me:
            found.append(int(entry))
    return found


def tagged(tag: str) -> list[int]:
    """Pids of live processes (not zombies) with ``tag`` as an argument: the MCP servers of
    a run, wherever they were reparented."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if tag.encode() in argv and state != "Z":
            found.append(int(entry))
    return found


def tasks() -> int:
    """Trio tasks alive in this run, the root included."""

    def count(task: Any) -> int:
        return 1 + sum(count(t) for n in task.child_nurseries for t in n.child_tasks)

    return count(trio.lowlevel.current_root_task())
