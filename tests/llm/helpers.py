"""Shared helpers of the LLM tests: run calls through the real retry loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2
import trio

from agcore_actors.llm import (
    ChatRequest,
    ChatResponse,
    HookExecutor,
    OpenAICompatibleProvider,
    OpenAIConfig,
    Provider,
    RetryConfig,
    StreamEvent,
    Timeouts,
    user,
)
from agcore_actors.llm.wire import Caller, default_client
from tests.peers.fault_server import chunk

FAST_RETRY = RetryConfig(max_retries=3, base_delay=0.01, max_delay=0.05, jitter=0.1)
SHORT = Timeouts(attempt=5.0, idle=5.0, connect=2.0, call=20.0)


def openai(base_url: str, **kw: Any) -> OpenAICompatibleProvider:
    kw.setdefault("api_key", "sk-test-secret-key-123")
    kw.setdefault("model", "test-model")
    return OpenAICompatibleProvider(OpenAIConfig(name="fault", base_url=base_url, **kw))


def http_client() -> httpx2.AsyncClient:
    """The client a ProviderActor makes: httpx2's when it is installed, else httpx's."""
    return default_client(2.0, 16)


def hello(**kw: Any) -> ChatRequest:
    return ChatRequest([user("Hello")], **kw)


def caller(
    retry: RetryConfig = FAST_RETRY,
    timeouts: Timeouts = SHORT,
    hooks: HookExecutor | None = None,
) -> Caller:
    return Caller(retry, timeouts, hooks or HookExecutor())


async def chat(provider: Provider, request: ChatRequest | None = None, **kw: Any) -> ChatResponse:
    async with http_client() as client:
        return await caller(**kw).chat(provider.name, provider, client, request or hello())


async def stream(
    provider: Provider, request: ChatRequest | None = None, **kw: Any
) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    async with http_client() as client:
        gen = caller(**kw).stream(provider.name, provider, client, request or hello())
        async for event in gen:
            events.append(event)
    return events


async def stream_until_error(
    provider: Provider,
    request: ChatRequest | None = None,
    *,
    stamps: list[float] | None = None,
    **kw: Any,
) -> tuple[list[StreamEvent], BaseException]:
    """The events of a stream that must fail, and its error; ``stamps`` gets the trio
    time at which each event arrived."""
    events: list[StreamEvent] = []
    try:
        async with http_client() as client:
            gen = caller(**kw).stream(provider.name, provider, client, request or hello())
            async for event in gen:
                events.append(event)
                if stamps is not None:
                    stamps.append(trio.current_time())
    except Exception as exc:
        return events, exc
    raise AssertionError(f"no error; events: {events}")


async def eventually(predicate: Callable[[], bool], seconds: float = 2.0) -> None:
    """Poll a condition another thread (the fault server) makes true."""
    for _ in range(int(seconds / 0.02)):
        if predicate():
            return
        await trio.sleep(0.02)
    raise AssertionError("condition not met in time")


def text_stream(*texts: str) -> list[dict[str, Any]]:
    """An OpenAI stream's first chunks: the role, then one chunk per text (no finish)."""
    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": t}) for t in texts]
    return events
