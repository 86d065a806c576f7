"""Client CPU per agent turn: agcore-actors sessions against a raw-httpx loop (the floor).

Each turn is LLM → one function tool → LLM, against the fast fake OpenAI server
(benchmarks/fake_openai.py) in another process, so the figures are the client's own CPU
(``time.process_time``) divided by the turns completed. C sessions (1, 100, 1,000) run
one turn each at once; streamed and not. The floor does the same two HTTP calls per turn
with a bare ``httpx2.AsyncClient`` on trio (JSON parsing and the tool call included).
Rounds interleave the two, and the median of the rounds is reported with the ratio.

    .venv/bin/python benchmarks/turns.py            # full run
    .venv/bin/python benchmarks/turns.py --quick    # smoke (also run by the test suite)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, AgentConfig, StoreTurns, session_spec
from agcore_actors.agent import messages as am
from agcore_actors.llm import (
    OpenAICompatibleProvider,
    OpenAIConfig,
    ProviderRegistry,
    provider_actor,
)
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.tools import ToolExecutor, ToolRegistry, function_tool

HERE = Path(__file__).resolve().parent
IN_FLIGHT = 64


@function_tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOL_DEFS = ToolRegistry([add]).definitions()


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    process = subprocess.Popen(
        [sys.executable, str(HERE / "fake_openai.py")], stdout=subprocess.PIPE
    )
    assert process.stdout is not None
    line = process.stdout.readline().decode()
    if not line.startswith("PORT "):
        process.kill()
        raise RuntimeError(f"the fake server did not start: {line!r}")
    return process, f"http://127.0.0.1:{int(line.split()[1])}/v1"


# -- the floor: the same HTTP calls with a bare client ----------------------------------


async def raw_turn(client: httpx2.AsyncClient, base: str, streamed: bool) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2 + 3?"},
    ]
    for _ in range(2):
        body = {"model": "fake", "messages": messages, "tools": TOOL_DEFS, "stream": streamed}
        if streamed:
            text, calls = "", {}
            async with client.stream("POST", f"{base}/chat/completions", json=body) as r:
                async for event in httpx2.EventSource(r):
                    if event.data == "[DONE]":
                        continue
                    chunk = json.loads(event.data)
                    for choice in chunk.get("choices") or []:
                        delta = choice.get("delta") or {}
                        text += delta.get("content") or ""
                        for call in delta.get("tool_calls") or []:
                            calls[call["index"]] = call
            tool_calls = list(calls.values())
        else:
            reply = (await client.post(f"{base}/chat/completions", json=body)).json()
            message = reply["choices"][0]["message"]
            text, tool_calls = message.get("content") or "", message.get("tool_calls") or []
        if not tool_calls:
            return
        messages.append({"role": "assistant", "content": text, "tool_calls": tool_calls})
        for call in tool_calls:
            args = json.loads(call["function"]["arguments"])
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": str(args["a"] + args["b"])}
            )


async def raw_round(base: str, sessions: int, streamed: bool) -> float:
    limits = httpx2.Limits(max_connections=IN_FLIGHT, max_keepalive_connections=IN_FLIGHT)
    async with httpx2.AsyncClient(limits=limits, timeout=60) as client:
        limiter = trio.CapacityLimiter(IN_FLIGHT)

        async def one() -> None:
            async with limiter:
                await raw_turn(client, base, streamed)

        await raw_turn(client, base, streamed)  # warm the pool
        start = time.process_time()
        async with trio.open_nursery() as nursery:
            for _ in range(sessions):
                nursery.start_soon(one)
        return (time.process_time() - start) / sessions


# -- agcore-actors ----------------------------------------------------------------------


async def agcore_round(base: str, sessions: int, streamed: bool) -> float:
    async with ActorSystem() as system:
        store = await system.root.start_child(
            session_store_spec("store", backend=InMemorySessions())
        )
        config = OpenAIConfig(name="fake", base_url=base, api_key="sk-bench", model="fake")
        registry = ProviderRegistry().register(OpenAICompatibleProvider(config))
        llm = await system.spawn(provider_actor(registry, max_in_flight=IN_FLIGHT), name="llm")
        tools = ToolRegistry([add])
        executor = await system.spawn(lambda: ToolExecutor(tools), name="tools")
        bundle = (
            AgentBuilder()
            .provider(llm)
            .store(StoreTurns(store))
            .tools(executor, tools)
            .agent(Agent(name="calc", instructions="Be brief."))
            .config(AgentConfig())
            .build()
        )
        refs = [
            await system.root.start_child(session_spec(f"s{i}", bundle)) for i in range(sessions)
        ]
        limiter = trio.CapacityLimiter(IN_FLIGHT)

        async def one(ref: Any) -> None:
            async with limiter:
                if streamed:
                    async with ref.stream(am.SubmitTurn(text="What is 2 + 3?")) as events:
                        async for event in events:
                            last = event
                    assert isinstance(last, am.TurnCompleted), last
                else:
                    result = await ref.ask(am.RunTurn(text="What is 2 + 3?"))
                    assert result.status == "completed", result

        warm = await system.root.start_child(session_spec("warm", bundle))
        await one(warm)
        start = time.process_time()
        async with trio.open_nursery() as nursery:
            for ref in refs:
                nursery.start_soon(one, ref)
        return (time.process_time() - start) / sessions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="CPU per agent turn vs a raw-httpx floor")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    sizes = [1, 10] if args.quick else [1, 100, 1000]
    rounds = 1 if args.quick else args.rounds
    server, base = start_server()
    try:
        print("## Agent turns (benchmarks/turns.py)\n")
        print("CPU per turn (LLM → tool → LLM) in the client, median of", rounds, "rounds.\n")
        print("| sessions | mode | raw httpx, ms | agcore-actors, ms | ratio |")
        print("|---:|---|---:|---:|---:|")
        for sessions in sizes:
            for streamed in (False, True):
                raw: list[float] = []
                ours: list[float] = []
                for _ in range(rounds):
                    raw.append(trio.run(raw_round, base, sessions, streamed))
                    ours.append(trio.run(agcore_round, base, sessions, streamed))
                r, o = statistics.median(raw) * 1000, statistics.median(ours) * 1000
                mode = "streamed" if streamed else "plain"
                print(f"| {sessions} | {mode} | {r:.2f} | {o:.2f} | {o / r:.2f}x |")
    finally:
        server.kill()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
