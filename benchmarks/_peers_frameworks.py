"""The four clients of benchmarks/peers.py, each used the way its docs recommend.

Every client gets the same model name (``fake``), the same instructions, the same tool
(``add(a, b)``, async, counted), the same history behaviour (the whole conversation is
sent again on the next turn) and an HTTP pool of the same size (``POOL`` kept-alive
connections on ``httpx2``, which all four use). Each framework's own imports happen in
its adapter, so one venv needs only its own framework.

- ``raw``: a bare ``httpx2.AsyncClient`` on trio (the loop and HTTP stack agcore-actors
  runs on), ``json`` for bodies, ``httpx2.EventSource`` for streams: the floor.
- ``raw-asyncio``: the same loop on asyncio, the loop the two peers run on.
- ``agcore``: one ``SessionHost`` over an in-memory session store, a ProviderActor
  and a ToolExecutor; a session id per session; ``host.run`` (plain) or
  ``host.submit`` with every event read (streamed). A ``RunTurn`` (plain) calls the
  model without streaming, since nobody reads its deltas; a submitted turn streams.
- ``openai-agents``: one ``Agent`` over ``OpenAIChatCompletionsModel`` and an
  ``AsyncOpenAI`` client, tracing disabled globally and per run; history through
  ``result.to_input_list()``; ``Runner.run`` or ``Runner.run_streamed`` with every
  event read.
- ``pydantic-ai``: one ``Agent`` over ``OpenAIChatModel`` with the same kind of
  ``AsyncOpenAI`` client, not instrumented; history through ``result.all_messages()``;
  ``agent.run`` or ``agent.run_stream_events`` with every event read.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from typing import Any, ClassVar

QUESTION = "What is 2 + 3?"
EXPECTED = "The answer is 5."
INSTRUCTIONS = "Be brief."
MODEL = "fake"
TURNS = 3
#: Kept-alive HTTP connections of every client (and the ProviderActor's concurrency).
POOL = 64

_calls = [0]


def tool_calls() -> int:
    """Times any client's ``add`` tool has run in this process."""
    return _calls[0]


async def add(a: int, b: int) -> int:
    """Add two integers."""
    _calls[0] += 1
    return a + b


TOOL_DEF = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}


class Adapter:
    """One framework: ``setup`` once, then sessions and turns, then ``close``."""

    name: ClassVar[str]
    loop: ClassVar[str] = "asyncio"

    def __init__(self, base: str) -> None:
        self.base = base

    async def setup(self, max_sessions: int) -> None:
        """Build the one agent (and client) every session shares."""

    async def new_session(self, index: int) -> Any:
        """The state a caller keeps for a new session."""
        return []

    async def turn(self, state: Any, text: str, streamed: bool) -> tuple[Any, str]:
        """Run one turn; the session's next state and the final answer's text."""
        raise NotImplementedError

    async def forget(self, indices: Iterable[int]) -> None:
        """Let the sessions go (for the ones the framework itself keeps)."""

    def live(self) -> int | None:
        """Sessions the framework keeps live itself (None: the caller keeps them)."""
        return None

    async def settle(self) -> None:
        """Let the sessions just made become idle ones (for most: nothing to wait for)."""

    async def close(self) -> None:
        """Release clients and the runtime."""


def _limits(http: Any) -> Any:
    return http.Limits(max_connections=POOL, max_keepalive_connections=POOL)


class Raw(Adapter):
    name = "raw"
    loop = "trio"

    async def setup(self, max_sessions: int) -> None:
        import httpx2

        self.http = httpx2
        self.client = httpx2.AsyncClient(timeout=httpx2.Timeout(60.0), limits=_limits(httpx2))
        self.url = f"{self.base}/chat/completions"

    async def new_session(self, index: int) -> Any:
        return [{"role": "system", "content": INSTRUCTIONS}]

    async def turn(self, state: Any, text: str, streamed: bool) -> tuple[Any, str]:
        messages: list[dict[str, Any]] = state
        messages.append({"role": "user", "content": text})
        while True:
            body = {"model": MODEL, "messages": messages, "tools": [TOOL_DEF], "stream": streamed}
            if streamed:
                answer, calls = await self._stream(body)
            else:
                reply = (await self.client.post(self.url, json=body)).json()
                message = reply["choices"][0]["message"]
                answer, calls = message.get("content") or "", message.get("tool_calls") or []
            messages.append({"role": "assistant", "content": answer or None})
            if not calls:
                return messages, answer
            messages[-1]["tool_calls"] = calls
            for call in calls:
                args = json.loads(call["function"]["arguments"])
                result = await add(**args)
                messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": str(result)}
                )

    async def _stream(self, body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        parts: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        async with self.client.stream("POST", self.url, json=body) as response:
            async for sse in self.http.EventSource(response):
                if sse.data == "[DONE]":
                    break
                for choice in json.loads(sse.data).get("choices") or ():
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        parts.append(delta["content"])
                    for call in delta.get("tool_calls") or ():
                        calls[call.pop("index")] = call
        return "".join(parts), list(calls.values())

    async def close(self) -> None:
        await self.client.aclose()


class RawAsyncio(Raw):
    name = "raw-asyncio"
    loop = "asyncio"


class Agcore(Adapter):
    name = "agcore"
    loop = "trio"

    async def setup(self, max_sessions: int) -> None:
        from agcore_actors import ActorSystem
        from agcore_actors.agent import Agent, AgentBuilder, HostConfig, SessionHost, StoreTurns
        from agcore_actors.agent import messages as am
        from agcore_actors.llm import (
            OpenAICompatibleProvider,
            OpenAIConfig,
            ProviderRegistry,
            provider_spec,
        )
        from agcore_actors.store import InMemorySessions, session_store_spec
        from agcore_actors.tools import ToolRegistry, function_tool, tool_executor_spec

        self.am = am
        self.stack = contextlib.AsyncExitStack()
        system = await self.stack.enter_async_context(ActorSystem())
        store = await system.root.start_child(
            session_store_spec("store", backend=InMemorySessions())
        )
        config = OpenAIConfig(name="fake", base_url=self.base, api_key="sk-bench", model=MODEL)
        registry = ProviderRegistry().register(OpenAICompatibleProvider(config))
        llm = await system.root.start_child(
            provider_spec("llm", registry=registry, max_concurrency=POOL)
        )
        tools = ToolRegistry([function_tool(add)])
        executor = await system.root.start_child(tool_executor_spec("tools", registry=tools))
        bundle = (
            AgentBuilder()
            .provider(llm)
            .store(StoreTurns(store))
            .tools(executor, tools)
            .agent(Agent(name="calc", instructions=INSTRUCTIONS))
            .build()
        )
        host = SessionHost(system, bundle, HostConfig(max_sessions=max_sessions))
        self.host = await self.stack.enter_async_context(host)

    async def new_session(self, index: int) -> Any:
        return f"s{index}"

    async def turn(self, state: Any, text: str, streamed: bool) -> tuple[Any, str]:
        if not streamed:
            result = await self.host.run(state, text)
            if result.status != "completed":
                raise AssertionError(result)
            return state, result.text
        last = None
        async with self.host.submit(state, text) as events:
            async for event in events:
                last = event
        if not isinstance(last, self.am.TurnCompleted):
            raise AssertionError(last)
        return state, last.result.text

    async def forget(self, indices: Iterable[int]) -> None:
        for i in indices:
            await self.host.close(f"s{i}")

    def live(self) -> int | None:
        return len(self.host.live_sessions)

    async def settle(self) -> None:
        # A session stays awake ``hibernate_after`` seconds after its last turn (the
        # next turn of a burst pays no wake-up); idle past that, it holds no task.
        import trio

        from agcore_actors.agent import Session

        await trio.sleep(Session.hibernate_after + 0.5)

    async def close(self) -> None:
        await self.stack.aclose()


def _openai_client(base: str) -> Any:
    import httpx2
    import openai

    http = openai.DefaultAsyncHttpxClient(limits=_limits(httpx2))
    return openai.AsyncOpenAI(base_url=base, api_key="sk-bench", http_client=http)


class OpenAIAgents(Adapter):
    name = "openai-agents"

    async def setup(self, max_sessions: int) -> None:
        import agents

        agents.set_tracing_disabled(True)
        self.client = _openai_client(self.base)
        model = agents.OpenAIChatCompletionsModel(model=MODEL, openai_client=self.client)
        self.agent = agents.Agent(
            name="calc", instructions=INSTRUCTIONS, model=model, tools=[agents.function_tool(add)]
        )
        self.run_config = agents.RunConfig(tracing_disabled=True)
        self.runner = agents.Runner

    async def turn(self, state: Any, text: str, streamed: bool) -> tuple[Any, str]:
        prompt = [*state, {"role": "user", "content": text}]
        if streamed:
            result = self.runner.run_streamed(self.agent, prompt, run_config=self.run_config)
            async for _ in result.stream_events():
                pass
        else:
            result = await self.runner.run(self.agent, prompt, run_config=self.run_config)
        return result.to_input_list(), str(result.final_output)

    async def close(self) -> None:
        await self.client.close()


class PydanticAI(Adapter):
    name = "pydantic-ai"

    async def setup(self, max_sessions: int) -> None:
        import pydantic_ai
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        pydantic_ai.Agent.instrument_all(False)
        self.client = _openai_client(self.base)
        model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=self.client))
        self.agent = pydantic_ai.Agent(model, instructions=INSTRUCTIONS, tools=[add])
        self.result_event = pydantic_ai.AgentRunResultEvent

    async def turn(self, state: Any, text: str, streamed: bool) -> tuple[Any, str]:
        if streamed:
            result = None
            async with self.agent.run_stream_events(text, message_history=state) as events:
                async for event in events:
                    if isinstance(event, self.result_event):
                        result = event.result
            assert result is not None
        else:
            result = await self.agent.run(text, message_history=state)
        return result.all_messages(), str(result.output)

    async def close(self) -> None:
        await self.client.close()


ADAPTERS: dict[str, type[Adapter]] = {
    a.name: a for a in (Raw, RawAsyncio, Agcore, OpenAIAgents, PydanticAI)
}
