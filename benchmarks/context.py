"""Context benchmark: token estimation, the compaction steps, and a Compact ask.

Measures on synthetic conversations (tool rounds with 2 KB results, English and
Chinese text):

- heuristic estimate: MB of text per second, and messages per second;
- microcompact and keep_tool_results over a 600-message conversation (ms per call);
- a ``Compact`` ask through the Compactor actor in strict mode, with an extractive
  summarizer (a trio function, no model), including the summary step (ms per ask).

Each figure is the median of several rounds. Run from the repository root::

    python benchmarks/context.py            # full run, a few seconds
    python benchmarks/context.py --quick    # smoke test
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence

import trio

from agcore_actors import ActorSystem
from agcore_actors.context import CompactConfig, compactor_spec
from agcore_actors.context.messages import Compact
from agcore_actors.context.policy import estimate_tokens, keep_tool_results, microcompact
from agcore_actors.llm import (
    AssistantMessage,
    FunctionCall,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    content_text,
)

ENGLISH = "The committee met on Tuesday to review the quarterly budget and travel costs. "
CHINESE = "委员会于星期二开会审查季度预算和差旅费用。"


def conversation(rounds: int) -> list[Message]:
    msgs: list[Message] = [SystemMessage("You are an assistant."), UserMessage("Task: review.")]
    for n in range(rounds):
        call = ToolCall(f"call_{n}", FunctionCall("search", f'{{"q": "item {n}"}}'))
        msgs.append(AssistantMessage("", tool_calls=[call]))
        text = (ENGLISH if n % 2 else CHINESE) * 25
        msgs.append(ToolMessage(text, f"call_{n}"))
        msgs.append(UserMessage(f"Thanks, next item after {n}."))
    return msgs


async def extractive(messages: list[Message], *, max_tokens: int) -> str:
    await trio.lowlevel.checkpoint()
    lines = content_text(messages[-1].content).splitlines()
    return "\n".join(line[:60] for line in lines if line.startswith("user:"))


def median_seconds(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def compact_asks(conv: list[Message], n: int) -> float:
    config = CompactConfig(keep_recent=6)
    async with ActorSystem(strict=True) as system:
        ref = await system.root.start_child(
            compactor_spec("c", config=config, summarizer=extractive)
        )
        budget = estimate_tokens(conv) // 4
        start = time.perf_counter()
        for _ in range(n):
            result = await ref.ask(Compact(messages=conv, budget=budget))
            assert result.report.fits
        return (time.perf_counter() - start) / n


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke test: few rounds")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else 15
    conv = conversation(40 if args.quick else 200)
    text_bytes = sum(len(content_text(m.content).encode()) for m in conv)

    est = median_seconds(lambda: estimate_tokens(conv), rounds)
    micro = median_seconds(lambda: microcompact(conv, 6), rounds)
    window = median_seconds(lambda: keep_tool_results(conv, 3, keep_recent=6), rounds)
    ask = trio.run(compact_asks, conv, 2 if args.quick else 10)

    print(f"conversation: {len(conv)} messages, {text_bytes / 1e6:.2f} MB of text, "
          f"{estimate_tokens(conv)} estimated tokens")  # fmt: skip
    print("| operation | time | rate |")
    print("|---|---|---|")
    print(f"| heuristic estimate | {est * 1e3:.1f} ms | {text_bytes / est / 1e6:.1f} MB/s, "
          f"{len(conv) / est:,.0f} messages/s |")  # fmt: skip
    print(f"| microcompact | {micro * 1e3:.1f} ms | {len(conv) / micro:,.0f} messages/s |")
    print(f"| keep_tool_results | {window * 1e3:.1f} ms | {len(conv) / window:,.0f} messages/s |")
    print(f"| Compact ask (all steps, strict mode) | {ask * 1e3:.1f} ms | {1 / ask:,.1f} asks/s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
