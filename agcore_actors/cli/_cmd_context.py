"""``agcore-actors context``: estimate and compact a saved conversation.

A conversation file is a JSON array of OpenAI-style messages, or JSON lines
(one message per line, seed 004's persistence format); ``-`` reads stdin.

- ``context estimate FILE``: the heuristic token estimate, total and per role
  (``--tokenizer-url URL``: count with a server's tokenizer instead).
- ``context compact FILE --budget N``: the compacted conversation (JSON) on
  stdout and the report on stderr; ``--summarize-url URL`` lets a model at an
  OpenAI-compatible endpoint summarise, ``--scratch TEXT`` adds the scratch
  message to what is printed.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

import httpx
import msgspec
import trio

from ..actor import ActorSystem
from ..context import (
    CompactConfig,
    Compactor,
    HttpSummarizer,
    ServerTokenizer,
    Summarizer,
    TokenEstimator,
)
from ..context.messages import Compact
from ..context.policy import estimate_message_tokens
from ..llm import Message


def read_messages(path: str) -> list[Message]:
    """Messages from a JSON array or JSON lines file (``-``: stdin)."""
    data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()  # noqa: SIM115
    text = data.strip()
    if text.startswith(b"["):
        return msgspec.json.decode(text, type=list[Message])
    return [msgspec.json.decode(line, type=Message) for line in text.splitlines() if line.strip()]


def _estimate(args: argparse.Namespace) -> int:
    messages = read_messages(args.file)
    if args.tokenizer_url:

        async def count() -> int:
            async with httpx.AsyncClient() as client:
                return await ServerTokenizer(client, args.tokenizer_url).count(messages)

        print(f"{trio.run(count)} tokens ({len(messages)} messages, server tokenizer)")
        return 0
    by_role: Counter[str] = Counter()
    for msg in messages:
        by_role[str(msg.__struct_config__.tag)] += estimate_message_tokens(msg)
    total = sum(by_role.values())
    print(f"{total} tokens ({len(messages)} messages, heuristic estimate)")
    for role, n in by_role.most_common():
        print(f"  {role}: {n}")
    return 0


def _compact(args: argparse.Namespace) -> int:
    messages = read_messages(args.file)
    config = CompactConfig(keep_recent=args.keep_recent, keep_tool_result=args.keep_tool_result)

    async def run() -> int:
        async with httpx.AsyncClient(timeout=httpx.Timeout(None, connect=10)) as client:
            summarizer: Summarizer | None = None
            if args.summarize_url:
                summarizer = HttpSummarizer(client, args.summarize_url, model=args.model)
            estimator: TokenEstimator | None = None
            if args.tokenizer_url:
                estimator = ServerTokenizer(client, args.tokenizer_url)
            async with ActorSystem() as system:
                ref = await system.spawn(
                    lambda: Compactor(config, summarizer=summarizer, estimator=estimator),
                    name="compactor",
                )
                request = Compact(messages=messages, budget=args.budget, scratch=args.scratch)
                result = await ref.ask(request)
        sys.stdout.write(msgspec.json.encode(result.messages).decode() + "\n")
        report = result.report
        steps = ", ".join(f"{s.name} {s.tokens_before}->{s.tokens_after}" for s in report.steps)
        print(
            f"{report.tokens_before} -> {report.tokens_after} tokens (budget {report.budget}, "
            f"{'fits' if report.fits else 'does not fit'}); steps: {steps or 'none'}",
            file=sys.stderr,
        )
        for step in report.steps:
            if step.error:
                print(f"  {step.name} failed: {step.error}", file=sys.stderr)
        return 0 if report.fits else 1

    return trio.run(run)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("context", help="estimate and compact a saved conversation")
    commands = parser.add_subparsers(dest="context_command", required=True)
    est = commands.add_parser("estimate", help="token estimate of a conversation file")
    est.add_argument("file", help="JSON array or JSON lines of messages; - for stdin")
    est.add_argument("--tokenizer-url", help="count with this server's /extras/tokenize/count")
    est.set_defaults(func=_estimate)
    comp = commands.add_parser("compact", help="compact a conversation to a budget")
    comp.add_argument("file", help="JSON array or JSON lines of messages; - for stdin")
    comp.add_argument("--budget", type=int, required=True, help="prompt-token budget")
    comp.add_argument("--keep-recent", type=int, default=6)
    comp.add_argument("--keep-tool-result", type=int, default=-1, help="-1 keeps all")
    comp.add_argument("--scratch", help="per-turn system note appended to the output")
    comp.add_argument("--summarize-url", help="OpenAI-compatible base URL for summaries")
    comp.add_argument("--model", default="", help="model name for --summarize-url")
    comp.add_argument("--tokenizer-url", help="count with this server's tokenizer")
    comp.set_defaults(func=_compact)
