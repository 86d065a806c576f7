"""The concurrency checker's world: a real SessionHost, store, provider and executor, and
the faults it injects (see test_host_checker).

- The store is the real SessionStore actor on the in-memory or the SQLite backend,
  wrapped in :class:`FaultyBackend`, whose writes fail with the store's own typed errors
  (disk full, read-only, busy, an I/O error) while :attr:`Faults.store` is set.
- The model is the public ScriptedProvider behind the real ProviderActor; it plays each
  turn's :class:`TurnPlan` (found by the turn's unique user text): tool batches with
  unique, empty, duplicate or reused call ids, then the answer, streamed in three pieces
  (so a reader may have part of it when the turn is cut off); or a typed error, a bug
  (an exception in provider code) or a stall at a chosen model call (at the answer:
  after its first piece).
- The tools are real function tools in a real ToolExecutor (one needs approval), and an
  agent used as a tool (a child session). :class:`JammingExecutor` is that executor
  refusing a whole batch with a typed error (``ToolThreadsExhausted``) when the batch
  calls ``jam``: the executor's own failure, where a turn's plan puts it (beside a
  subagent call or not).
- :class:`CrashingTurns` is the session's real store port, which raises a bug (not a
  typed error) at the begin or commit of turns planned to crash the session.
- :func:`still_threads` keeps virtual time from jumping while a worker thread (SQLite)
  runs, so a run is (nearly) reproducible from its seed.
"""

from __future__ import annotations

import functools
import math
import os
import ssl
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import attrs
import httpx2
import outcome
import trio
import trio.lowlevel
import trio.testing

from agcore_actors import ActorSystem
from agcore_actors.actor import ChildSpec
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    AgentConfig,
    RuntimeBundle,
    StoreTurns,
    session_approver,
)
from agcore_actors.llm import (
    AssistantMessage,
    ChatRequest,
    ProviderConfig,
    ProviderRegistry,
    RateLimitError,
    RetryConfig,
    UserMessage,
    provider_spec,
)
from agcore_actors.store import (
    InMemorySessions,
    SessionStore,
    SqliteSessions,
    StoreBusy,
    StoreStorageError,
    StoreUnavailable,
    session_store_spec,
)
from agcore_actors.store.lowlevel import Backend, InMemorySessionBackend, SqliteSessionBackend
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import (
    BatchInProgress,
    ToolExecutor,
    ToolRegistry,
    ToolThreadsExhausted,
    function_tool,
)
from agcore_actors.tools import messages as tm

from .checker_model import StoreFault, TurnPlan, answer

LATENCY = 0.01


class Faults:
    """The switchboard the test flips: read by the backend (maybe in a worker thread)."""

    def __init__(self) -> None:
        self.store: StoreFault | None = None
        self.plans: dict[str, TurnPlan] = {}


def _storage_error(kind: StoreFault) -> StoreStorageError:
    match kind:
        case "full":
            return StoreUnavailable("database or disk is full")
        case "readonly":
            return StoreUnavailable("attempt to write a readonly database")
        case "busy":
            return StoreBusy("database is locked")
        case "io":
            return StoreStorageError("disk I/O error")


class FaultyBackend:
    """A backend whose write transactions fail while ``faults.store`` is set."""

    def __init__(self, inner: Backend, faults: Faults) -> None:
        self._inner = inner
        self._faults = faults

    def run_batch(self, operations: Sequence[Any], write: bool) -> list[outcome.Outcome[Any]]:
        kind = self._faults.store
        if write and kind is not None:
            raise _storage_error(kind)
        return self._inner.run_batch(operations, write)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def store_spec(kind: str, path: str, faults: Faults) -> ChildSpec[Any]:
    """The SessionStore actor on ``kind`` ("memory" or "sqlite" at ``path``), faulty: the
    library's own spec (its supervision and isolation defaults), with the backend wrapped."""
    if kind == "memory":
        shared = InMemorySessionBackend()
        opener: Callable[[], Any] = functools.partial(FaultyBackend, shared, faults)
        factory = functools.partial(SessionStore, opener, threaded=False, clock=trio.current_time)
        backend: Any = InMemorySessions()
    else:

        def opener() -> Any:
            return FaultyBackend(SqliteSessionBackend(path, synchronous="NORMAL"), faults)

        factory = functools.partial(SessionStore, opener, threaded=True, clock=trio.current_time)
        backend = SqliteSessions(path)
    return attrs.evolve(session_store_spec("store", backend=backend), factory=factory)


class CrashingTurns(StoreTurns):
    """The real store port, raising a bug where a turn's plan says the session crashes."""

    def __init__(self, store: Any, faults: Faults) -> None:
        super().__init__(store)
        self.faults = faults
        self._texts: dict[str, str] = {}  # turn id -> its user text

    def _crash(self, turn: str, messages: Sequence[Any] | None, where: str) -> None:
        if messages is not None:
            texts = [m.content for m in messages if isinstance(m, UserMessage)]
            if texts:
                self._texts[turn] = str(texts[-1])
        text = self._texts.pop(turn, "") if where == "commit" else self._texts.get(turn, "")
        plan = self.faults.plans.get(text)
        if plan is not None and plan.crash == where:
            raise RuntimeError(f"planted session crash at {where}")

    async def begin(self, session: str, turn: str, version: int, messages: Any, agent: str) -> int:
        self._crash(turn, messages, "begin")
        return await super().begin(session, turn, version, messages, agent)

    async def begin_and_load(
        self, session: str, turn: str, version: int, messages: Any, agent: str, tail: int | None
    ) -> Any:
        self._crash(turn, messages, "begin")
        return await super().begin_and_load(session, turn, version, messages, agent, tail)

    async def commit(self, session: str, turn: str, version: int, **kwargs: Any) -> int:
        self._crash(turn, None, "commit")
        return await super().commit(session, turn, version, **kwargs)


# -- the model ---------------------------------------------------------------------------


def _call_id(plan: TurnPlan, text: str, step: int, n: int) -> str:
    match plan.ids:
        case "unique":
            return f"{text}-{step}-{n}"
        case "empty":
            return ""
        case "dup":
            return "dup"
        case "reused":
            return f"r{n}"


def _pieces(text: str) -> tuple[str, ...]:
    """``text`` as the three pieces a stream sends: ``"answer ", "to ", "u7"``."""
    first, second, rest = text.split(" ", 2)
    return f"{first} ", f"{second} ", rest


def _arguments(kind: str, step: int, n: int) -> str:
    key = "task" if kind == "helper" else "x"
    return f'{{"{key}": "{step}-{n}"}}'


def play(faults: Faults) -> Callable[[ChatRequest, int], ScriptedReply | Any]:
    """The model: each turn's plan, found by the turn's user text."""

    def reply(request: ChatRequest, attempt: int) -> ScriptedReply | Any:
        users = [i for i, m in enumerate(request.messages) if isinstance(m, UserMessage)]
        text = str(request.messages[users[-1]].content) if users else ""
        plan = faults.plans.get(text)
        if plan is None:  # a child session (the helper agent) or an unknown turn
            return ScriptedReply(text="helper done", latency=LATENCY)
        after = request.messages[users[-1] + 1 :]
        step = sum(1 for m in after if isinstance(m, AssistantMessage) and m.tool_calls)
        pieces = _pieces(answer(text))
        if plan.provider != "none" and step == plan.fail_at:
            match plan.provider:
                case "error":
                    return RateLimitError("scripted", retry_after=None)
                case "bug":
                    raise RuntimeError("planted provider bug")
                case "stall" if step >= len(plan.batches):
                    return ScriptedReply(text=pieces, latency=LATENCY, stall_after=1)
                case "stall":
                    return ScriptedReply(stall_after=0)
        if step < len(plan.batches):
            kinds = plan.batches[step] + (("jam",) if step == plan.jam else ())
            calls = [
                ScriptedToolCall(kind, _arguments(kind, step, n), _call_id(plan, text, step, n))
                for n, kind in enumerate(kinds)
            ]
            return ScriptedReply(tool_calls=calls, latency=LATENCY)
        return ScriptedReply(text=pieces, latency=LATENCY, gap=LATENCY)

    return reply


@functools.cache
def _tls() -> ssl.SSLContext:
    return ssl.create_default_context()


def _client() -> httpx2.AsyncClient:
    """An unused client (the model is scripted) without loading the CA store each run."""
    return httpx2.AsyncClient(verify=_tls())


# -- tools -------------------------------------------------------------------------------


@function_tool(name="ok")
async def ok_tool(x: str) -> str:
    """Answer quickly."""
    await trio.sleep(LATENCY)
    return f"ok {x}"


@function_tool(name="slow")
async def slow_tool(x: str) -> str:
    """Take longer than the tool timeout."""
    await trio.sleep(1000.0)
    return f"slow {x}"


@function_tool(name="fail")
async def fail_tool(x: str) -> str:
    """Fail."""
    await trio.sleep(LATENCY)
    raise ValueError(f"tool failed on {x}")


@function_tool(name="guarded", requires_approval=True)
async def guarded_tool(x: str) -> str:
    """Needs a human's approval."""
    return f"guarded {x}"


@function_tool(name="jam")
async def jam_tool(x: str) -> str:
    """Never runs: :class:`JammingExecutor` refuses a batch that calls it."""
    return f"jam {x}"


TOOLS = ToolRegistry([ok_tool, slow_tool, fail_tool, guarded_tool, jam_tool])


class JammingExecutor(ToolExecutor):
    """The real executor, except that a batch calling ``jam`` is refused as a whole with
    :class:`ToolThreadsExhausted` (a typed error of the executor, to the asker only, as a
    real executor out of worker threads would answer)."""

    # (ToolExecutor's own tuple has no annotation: mypy takes its exact type as the type.)
    expected_errors = (BatchInProgress, ToolThreadsExhausted)  # type: ignore[assignment]

    async def handle(self, msg: tm.ToolExecutorMsg) -> tm.ToolExecutorReply:
        if isinstance(msg, tm.ExecuteTools) and any(c.name == "jam" for c in msg.calls):
            await trio.sleep(LATENCY)
            raise ToolThreadsExhausted("jam", 99)
        return await super().handle(msg)


async def build_runtime(
    system: ActorSystem, store_kind: str, path: str, faults: Faults
) -> tuple[Any, RuntimeBundle, ScriptedProvider]:
    """The store (its ref), the bundle every host of the run shares, the model."""
    store = await system.root.start_child(store_spec(store_kind, path, faults))
    provider = ScriptedProvider(play(faults))
    registry = ProviderRegistry().register(provider)
    calls = ProviderConfig(retry=RetryConfig(max_retries=0))
    spec = provider_spec(
        "llm", registry=registry, config=calls, client_factory=_client, max_concurrency=256
    )
    llm = await system.root.start_child(spec)
    executor = await system.spawn(
        lambda: JammingExecutor(TOOLS, approver=session_approver(system)), name="tools"
    )
    config = AgentConfig(
        max_turns=6,  # model calls per turn; no scripted turn makes more than 3
        turn_timeout=20.0,
        tool_timeout=2.0,
        approval_timeout=2.0,
    )
    bundle = (
        AgentBuilder()
        .provider(llm)
        .store(CrashingTurns(store, faults))
        .tools(executor, TOOLS)
        .agents([Agent(name="main", subagents={"helper"}), Agent(name="helper", tools=())])
        .config(config)
        .build()
    )
    return store, bundle, provider


# -- probes ------------------------------------------------------------------------------


def task_count() -> int:
    def count(task: Any) -> int:
        return 1 + sum(count(t) for n in task.child_nurseries for t in n.child_tasks)

    return count(trio.lowlevel.current_root_task())


def open_fds() -> set[str]:
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        with suppress(OSError):
            found.add(f"{fd}:{os.readlink(f'/proc/self/fd/{fd}')}")
    return found


def our_threads() -> set[str]:
    """Threads other than trio's idle worker cache (which trio keeps for ten seconds)."""
    return {t.name for t in threading.enumerate() if not t.name.startswith("Trio thread")}


def child_processes() -> set[str]:
    found: set[str] = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                found |= set(f.read().split())
        except OSError:
            pass
    return found


@contextmanager
def still_threads(clock: trio.testing.MockClock) -> Iterator[None]:
    """While a worker thread runs (``trio.to_thread.run_sync``: the SQLite store), the
    clock does not autojump: an autojump fires whenever every task waits, and would move
    virtual time under a write that takes real time. (The loop then waits for the
    thread's wake-up as trio.run does on a real clock.)"""
    real = trio.to_thread.run_sync
    threshold = clock.autojump_threshold
    busy = [0]

    async def run_sync(*args: Any, **kwargs: Any) -> Any:
        busy[0] += 1
        clock.autojump_threshold = math.inf
        try:
            return await real(*args, **kwargs)
        finally:
            busy[0] -= 1
            if not busy[0]:
                clock.autojump_threshold = threshold

    trio.to_thread.run_sync = run_sync  # type: ignore[assignment]
    try:
        yield
    finally:
        trio.to_thread.run_sync = real
