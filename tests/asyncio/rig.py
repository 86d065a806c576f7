"""What the embedding tests (asyncio and blocking faces) run: a model that plays by the
user's message, three tools (slow, broken, needing approval) and a host over them.

The model (the public ``testing.ScriptedProvider``, behind the real ProviderActor)
answers a user message by its first word:

    "tools N"       N calls of ``slow`` (call i sleeps i * TOOL_STEP s), then "done"
    "hang"          one call of ``slow`` for an hour (it ends by cancellation)
    "broken"        one call of ``broken`` (it raises), then "done"
    "pay"           one call of ``pay`` (needs approval), then "done"
    "auth"          fails with AuthenticationError (a typed provider error)
    "bug"           raises RuntimeError in the provider (a bug, no LlmError)
    "stream"        "echo" in three pieces
    "many N"        N pieces of text, at once
    text and parts  "parts: " and the parts' kinds (TextPart ImagePart ...)
    anything else   "echo: <message>"

Every request the model got is kept (``Model.requests``): the last one of a session
is its whole transcript, which the tests check with ``transcript_errors``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import trio
import trio._core._thread_cache

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, StoreTurns, session_approver
from agcore_actors.llm import (
    AuthenticationError,
    ChatRequest,
    LlmError,
    ProviderRegistry,
    ToolMessage,
    UserMessage,
    provider_spec,
)
from agcore_actors.store import InMemorySessions, SessionBackendConfig, session_store_spec
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import ToolRegistry, function_tool, tool_executor_spec

TOOL_STEP = 0.02


@function_tool
async def slow(seconds: float) -> str:
    """Wait, then say so."""
    await trio.sleep(seconds)
    return f"slept {seconds}"


@function_tool
async def broken() -> str:
    """Always fails."""
    raise ValueError("the tool broke")


@function_tool(requires_approval=True)
async def pay(amount: int) -> str:
    """Pay someone."""
    return f"paid {amount}"


class Model:
    """The scripted model; ``requests`` holds what it was sent (any thread may read)."""

    def __init__(self, latency: float = 0.005) -> None:
        self.latency = latency
        self.requests: list[ChatRequest] = []
        self.provider = ScriptedProvider(self._play, name="scripted")

    def _play(self, request: ChatRequest, attempt: int) -> ScriptedReply | LlmError:
        self.requests.append(request)
        last = request.messages[-1]
        if isinstance(last, ToolMessage):
            return ScriptedReply(text="done", latency=self.latency)
        assert isinstance(last, UserMessage)
        if isinstance(last.content, list):  # a turn with images: say what came
            kinds = [type(part).__name__ for part in last.content]
            return ScriptedReply(text=f"parts: {' '.join(kinds)}", latency=self.latency)
        word, _, rest = last.content.partition(" ")
        if word == "tools":
            calls = [
                ScriptedToolCall("slow", f'{{"seconds": {i * TOOL_STEP}}}', f"c{i}")
                for i in range(1, int(rest) + 1)
            ]
            return ScriptedReply(tool_calls=calls, latency=self.latency)
        if word == "hang":
            return ScriptedReply(tool_calls=[ScriptedToolCall("slow", '{"seconds": 3600}', "h1")])
        if word == "broken":
            return ScriptedReply(tool_calls=[ScriptedToolCall("broken", "{}", "b1")])
        if word == "pay":
            return ScriptedReply(tool_calls=[ScriptedToolCall("pay", '{"amount": 30}', "p1")])
        if word == "auth":
            return AuthenticationError("scripted", 401, "bad key")
        if word == "bug":
            raise RuntimeError("a bug in the provider")
        if word == "many":
            return ScriptedReply(text=[f"{i} " for i in range(int(rest))])
        if word == "stream":
            return ScriptedReply(text=["ec", "h", "o"], gap=self.latency)
        return ScriptedReply(text=f"echo: {last.content}", latency=self.latency)

    def transcript_before(self, text: str) -> list[Any]:
        """The messages of the last request that ends with the user message ``text``:
        the whole history of its session, as the model was shown it."""
        for request in reversed(self.requests):
            last = request.messages[-1]
            if isinstance(last, UserMessage) and last.content == text:
                return list(request.messages)
        raise LookupError(text)


def builder(model: Model, backend: SessionBackendConfig | None = None) -> Any:
    """A bundle builder (what both faces take) over ``model`` and the three tools."""

    async def build(system: ActorSystem) -> AgentBuilder:
        root = system.root
        registry = ProviderRegistry().register(model.provider)
        llm = await root.start_child(provider_spec("llm", registry=registry))
        tools = ToolRegistry([slow, broken, pay])
        executor = await root.start_child(
            tool_executor_spec("tools", registry=tools, approver=session_approver(system))
        )
        store = await root.start_child(
            session_store_spec("store", backend=backend or InMemorySessions())
        )
        return (
            AgentBuilder()
            .provider(llm)
            .tools(executor, tools)
            .store(StoreTurns(store))
            .agent(Agent(name="a"))
        )

    return build


def tool_results(messages: list[Any]) -> dict[str, Any]:
    """call id -> the tool result's content, of every tool message."""
    return {m.tool_call_id: m.content for m in messages if isinstance(m, ToolMessage)}


def threads_left(before: set[threading.Thread]) -> list[threading.Thread]:
    """Threads started since ``before`` that are still alive, once trio's idle worker
    threads (its process-wide cache, see ``fast_idle_workers``) have had time to end."""
    extra = [t for t in threading.enumerate() if t not in before]
    for thread in extra:
        thread.join(timeout=5.0)
    return [t for t in extra if t.is_alive()]


@contextmanager
def fast_idle_workers() -> Iterator[None]:
    """Let trio's idle worker threads end after 0.05 s instead of 10 s, so that a test
    can wait for them (they are trio's shared cache, reused by every run in the process)."""
    module = trio._core._thread_cache
    saved = module.IDLE_TIMEOUT
    module.IDLE_TIMEOUT = 0.05  # type: ignore[assignment]
    try:
        yield
    finally:
        module.IDLE_TIMEOUT = saved


@contextmanager
def no_threads_left() -> Iterator[None]:
    """Check that the block leaves no thread it started alive (trio's idle workers end)."""
    before = set(threading.enumerate())
    with fast_idle_workers():
        yield
        assert threads_left(before) == []
