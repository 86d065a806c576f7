"""Providers for the agent tests: a scripted one and an echo (to give way to the public
``agcore_actors.testing.ScriptedProvider``)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import attrs
import httpx
import trio

from agcore_actors.llm import AssistantMessage, ChatRequest, ChatResponse, Usage, UserMessage
from agcore_actors.llm._stream import ChatDelta, DeltaToolCall

Step = AssistantMessage | Exception | float  # a reply, an error, or a stall (seconds)


@attrs.define
class Scripted:
    """A provider whose replies follow ``script`` (the last one repeats)."""

    script: list[list[Any]]
    name: str = "scripted"
    requests: list[ChatRequest] = attrs.field(factory=list)
    usage: Usage = attrs.field(factory=lambda: Usage(input_tokens=10, output_tokens=5))

    def _next(self, request: ChatRequest) -> list[Any]:
        self.requests.append(request)
        return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    async def chat(self, client: httpx.AsyncClient, request: ChatRequest) -> ChatResponse:
        raise NotImplementedError

    async def stream(
        self, client: httpx.AsyncClient, request: ChatRequest
    ) -> AsyncGenerator[ChatDelta, None]:
        for step in self._next(request):
            if isinstance(step, float):
                await trio.sleep(step)
            elif isinstance(step, Exception):
                raise step
            else:
                if step.content:
                    yield ChatDelta(content=str(step.content))
                for i, call in enumerate(step.tool_calls or []):
                    yield ChatDelta(
                        tool_calls=[
                            DeltaToolCall(
                                index=i, id=call.id, name=call.function.name,
                                arguments=call.function.arguments,
                            )
                        ]
                    )  # fmt: skip
                reason = "tool_calls" if step.tool_calls else "stop"
                yield ChatDelta(finish_reason=reason, usage=self.usage)


@attrs.define
class Echo:
    """A provider that answers ``echo: <the last user message>`` after ``delay`` seconds."""

    name: str = "echo"
    delay: float = 0.5
    usage: Usage = attrs.field(factory=lambda: Usage(input_tokens=3, output_tokens=2))

    async def chat(self, client: httpx.AsyncClient, request: ChatRequest) -> ChatResponse:
        raise NotImplementedError

    async def stream(
        self, client: httpx.AsyncClient, request: ChatRequest
    ) -> AsyncGenerator[ChatDelta, None]:
        await trio.sleep(self.delay)
        last = next(m for m in reversed(request.messages) if isinstance(m, UserMessage))
        yield ChatDelta(content=f"echo: {last.content}")
        yield ChatDelta(finish_reason="stop", usage=self.usage)
