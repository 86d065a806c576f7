"""First-token time of the embedded model: a first run, a second run, a chat follow-up.

Each *run* starts a fresh server the way ``agcore-actors run`` does (``start_local``:
the provider wrapped in the prefix cache and the tool-call recovery), sends one streamed
request with a system prompt and the benchmark's 10 tool schemas, and measures from the
request to the first delta that carries text or a tool call. The second run then answers
a short follow-up in the same conversation (``chat``). Two configurations, in the same
process one after the other: **cached** (prefix cache on, in a fresh directory; threads
from the free cores) and **baseline** (prefix cache off, one thread: the old behaviour).
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from contextlib import aclosing
from pathlib import Path
from typing import Any

import attrs
import httpx2

from agcore_actors import ActorSystem
from agcore_actors.config._local import start_local
from agcore_actors.llm import (
    ChatRequest,
    FunctionDefinition,
    Provider,
    ToolDefinition,
    assistant,
    system,
    user,
)
from agcore_actors.llm.wire import NO_READ_LIMITS
from agcore_actors.local import LocalModelConfig, free_cpu_threads

SYSTEM = (
    "You are a helpful assistant on the user's machine. Answer briefly. Use a tool when "
    "the question needs data you do not have; otherwise answer in plain text."
)
QUESTION = "What is the weather in Paris?"
FOLLOW_UP = "Thanks. And in one word, is that warm?"


def tool_definitions(tools: list[dict[str, Any]]) -> list[ToolDefinition]:
    return [
        ToolDefinition(FunctionDefinition(f["name"], f["description"], f["parameters"]))
        for f in (t["function"] for t in tools)
    ]


async def first_token(provider: Provider, request: ChatRequest) -> tuple[float, str]:
    """Seconds to the first text or tool call, and the whole reply's text (or calls)."""
    started = time.monotonic()
    seconds = math.nan
    parts: list[str] = []
    async with httpx2.AsyncClient(timeout=900, trust_env=False) as client:
        stream = provider.stream(client, request, NO_READ_LIMITS)
        async with aclosing(stream) as deltas:
            async for delta in deltas:
                if (delta.content or delta.tool_calls) and math.isnan(seconds):
                    seconds = time.monotonic() - started
                parts.append(delta.content or "")
                for call in delta.tool_calls or []:
                    parts.append(f"{call.name or ''}{call.arguments or ''}")
    return seconds, "".join(parts)


async def one_run(
    config: LocalModelConfig, tools: list[ToolDefinition], follow_up: bool
) -> list[float]:
    async with ActorSystem() as actors:
        _, provider = await start_local(actors, "local", config)
        request = ChatRequest(
            messages=[system(SYSTEM), user(QUESTION)], tools=tools, temperature=0.0, max_tokens=64
        )
        seconds, reply = await first_token(provider, request)
        out = [seconds]
        if follow_up:
            messages = [*request.messages, assistant(reply or "It is 18°C."), user(FOLLOW_UP)]
            follow = ChatRequest(messages=messages, tools=tools, temperature=0.0, max_tokens=16)
            out.append((await first_token(provider, follow))[0])
        return out


async def measure(base: LocalModelConfig, tools: list[dict[str, Any]]) -> str:
    """The report (a markdown table and notes)."""
    definitions = tool_definitions(tools)
    rows: dict[str, list[float]] = {}
    threads, load = free_cpu_threads(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="agcore-prefix-") as directory:
        cached = attrs.evolve(base, progress=None, prefix_dir=Path(directory), threads=None)
        baseline = attrs.evolve(base, progress=None, prefix_cache=False, threads=1)
        for name, config in (("cached", cached), ("baseline", baseline)):
            first = await one_run(config, definitions, follow_up=False)
            second = await one_run(config, definitions, follow_up=True)
            rows[name] = [first[0], *second]
    lines = [
        f"threads picked for the cached runs: {threads} "
        f"(load {load:.1f} on {len(os.sched_getaffinity(0))} cores)",
        "",
        "| first token (s) | first run | second run | chat follow-up |",
        "|---|---|---|---|",
    ]
    for name, values in rows.items():
        label = "prefix cache, free-core threads" if name == "cached" else "no cache, 1 thread"
        lines.append(f"| {label} | " + " | ".join(f"{v:.1f}" for v in values) + " |")
    pairs = zip(rows["baseline"], rows["cached"], strict=True)
    ratios = [b / c if c > 0 else math.inf for b, c in pairs]
    lines.append("| baseline / cached | " + " | ".join(f"{r:.1f} x" for r in ratios) + " |")
    return "\n".join(lines)
