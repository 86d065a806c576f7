"""Doubles for the agent tests: a session store in plain dicts (to be replaced by the
store package's in-memory backend) and a scripted provider."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Any

import attrs
import httpx
import trio

from agcore_actors.agent._store_port import SessionSnapshot
from agcore_actors.llm import AssistantMessage, ChatRequest, ChatResponse, Usage, UserMessage
from agcore_actors.llm import Message as ChatMessage
from agcore_actors.llm._stream import ChatDelta, DeltaToolCall


@attrs.define
class DictStore:
    sessions: dict[str, dict[str, Any]] = attrs.field(factory=dict)

    def _get(self, session: str) -> dict[str, Any]:
        return self.sessions.setdefault(
            session,
            {
                "version": 0,
                "messages": [],
                "facts": {},
                "usage": Usage(),
                "agent": "",
                "turns": 0,
                "open": None,
            },
        )

    async def load(self, session: str, tail: int | None) -> SessionSnapshot:
        s = self._get(session)
        history = list(s["messages"])
        return SessionSnapshot(
            session=session, version=s["version"], agent=s["agent"], history=history,
            facts=dict(s["facts"]), usage=s["usage"], turns=s["turns"],
        )  # fmt: skip

    async def begin(
        self, session: str, turn: str, version: int, messages: list[ChatMessage], agent: str
    ) -> int:
        await trio.sleep(0.001)  # a real store does I/O here: a point where cancellation lands
        s = self._get(session)
        assert s["version"] == version and s["open"] is None
        s["messages"].extend(messages)
        s["open"] = turn
        s["version"] += 1
        return int(s["version"])

    async def commit(
        self, session: str, turn: str, version: int, *, messages: list[ChatMessage],
        usage: Usage, agent: str, status: str, facts_set: dict[str, str],
        facts_removed: list[str],
    ) -> int:  # fmt: skip
        await trio.sleep(0.001)
        s = self._get(session)
        assert s["version"] == version and s["open"] == turn
        s["messages"].extend(messages)
        s["usage"] = s["usage"] + usage
        s["agent"] = agent
        s["open"] = None
        s["turns"] += 1
        for key in facts_removed:
            s["facts"].pop(key, None)
        s["facts"].update(facts_set)
        s["version"] += 1
        return int(s["version"])

    async def set_facts(
        self, session: str, version: int, facts_set: dict[str, str], facts_removed: list[str]
    ) -> int:
        await trio.sleep(0.001)
        s = self._get(session)
        assert s["version"] == version and s["open"] is None
        for key in facts_removed:
            s["facts"].pop(key, None)
        s["facts"].update(facts_set)
        s["version"] += 1
        return int(s["version"])


Step = AssistantMessage | Exception | float  # a reply, an error, or a stall (seconds)


@attrs.define
class Scripted:
    """A provider whose replies follow ``script`` (the last one repeats)."""

    script: list[Sequence[Step]]
    name: str = "scripted"
    requests: list[ChatRequest] = attrs.field(factory=list)
    usage: Usage = attrs.field(factory=lambda: Usage(input_tokens=10, output_tokens=5))

    def _next(self, request: ChatRequest) -> Sequence[Step]:
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
