"""``agcore-actors context``: estimate and compact a saved conversation.

A conversation file is a JSON array of OpenAI-style messages, or JSON lines
(one message per line); ``-`` reads stdin.

- ``context estimate FILE``: the heuristic token estimate, total and per role
  (``--tokenizer-url URL``: count with a server's tokenizer instead).
- ``context compact FILE --budget N``: the compacted conversation (JSON) on
  stdout and the report on stderr (``--json``: both as one object on stdout);
  exit status 1 when it still does not fit. ``--summarize-url URL`` lets a model
  at an OpenAI-compatible endpoint summarise, ``--scratch TEXT`` adds the scratch
  message to what is printed.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any

import httpx2
import msgspec
import trio

from ..actor import ActorSystem
from ..context import (
    CompactConfig,
    HttpSummarizer,
    ServerTokenizer,
    Summarizer,
    TokenEstimator,
    compactor_spec,
)
from ..context import messages as cm
from ..context.policy import estimate_message_tokens
from ..llm import Message
from ._common import FAILURE, OK, add_command, add_group, examples, print_json
from ._convert import http_url, input_file, int_at_least
from ._errors import BadInput

_array = msgspec.json.Decoder(list[Message])
_one = msgspec.json.Decoder(Message)


def read_messages(path: str) -> list[Message]:
    """Messages from a JSON array or JSON lines file (``-``: stdin).

    Raises :class:`BadInput` naming the file (and line) when it is not a conversation.
    """
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(path, "rb") as file:
            data = file.read()
    text = data.strip()
    if text.startswith(b"["):
        try:
            return _array.decode(text)
        except msgspec.DecodeError as exc:
            raise BadInput(f"{path}: not a conversation: {exc}") from None
    messages = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                messages.append(_one.decode(line))
            except msgspec.DecodeError as exc:
                raise BadInput(f"{path}, line {number}: not a message: {exc}") from None
    return messages


def _estimate(args: argparse.Namespace) -> int:
    messages = read_messages(args.file)
    by_role: Counter[str] | None = None
    if args.tokenizer_url:

        async def count() -> int:
            async with httpx2.AsyncClient() as client:
                return await ServerTokenizer(client, args.tokenizer_url).count(messages)

        total, estimator = trio.run(count), "server tokenizer"
    else:
        by_role = Counter()
        for msg in messages:
            by_role[str(msg.__struct_config__.tag)] += estimate_message_tokens(msg)
        total, estimator = sum(by_role.values()), "heuristic estimate"
    if args.json:
        roles = None if by_role is None else dict(by_role.most_common())
        print_json(
            {"tokens": total, "messages": len(messages), "estimator": estimator, "by_role": roles}
        )
        return OK
    print(f"{total} tokens ({len(messages)} messages, {estimator})")
    for role, n in (by_role or Counter()).most_common():
        print(f"  {role}: {n}")
    return OK


def _compact(args: argparse.Namespace) -> int:
    messages = read_messages(args.file)
    config = CompactConfig(keep_recent=args.keep_recent, keep_tool_result=args.keep_tool_result)

    async def run() -> Any:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(None, connect=10)) as client:
            summarizer: Summarizer | None = None
            if args.summarize_url:
                summarizer = HttpSummarizer(client, args.summarize_url, model=args.model)
            estimator: TokenEstimator | None = None
            if args.tokenizer_url:
                estimator = ServerTokenizer(client, args.tokenizer_url)
            spec = compactor_spec(
                "compactor", config=config, summarizer=summarizer, estimator=estimator
            )
            async with ActorSystem() as system:
                ref = await system.root.start_child(spec)
                return await ref.ask(
                    cm.Compact(messages=messages, budget=args.budget, scratch=args.scratch)
                )

    result = trio.run(run)
    report = result.report
    status = OK if report.fits else FAILURE
    if args.json:
        print_json({"messages": result.messages, "report": report})
        return status
    print_json(result.messages)
    steps = ", ".join(f"{s.name} {s.tokens_before}->{s.tokens_after}" for s in report.steps)
    print(
        f"{report.tokens_before} -> {report.tokens_after} tokens (budget {report.budget}, "
        f"{'fits' if report.fits else 'does not fit'}); steps: {steps or 'none'}",
        file=sys.stderr,
    )
    for step in report.steps:
        if step.error:
            print(f"  {step.name} failed: {step.error}", file=sys.stderr)
    return status


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    commands = add_group(
        subparsers,
        "context",
        help="estimate and compact a saved conversation",
        epilog=examples(
            "agcore-actors context estimate conversation.jsonl",
            "agcore-actors context estimate conversation.json --json",
            "agcore-actors context compact conversation.json --budget 4000 > compacted.json",
            "agcore-actors context compact - --budget 8000 --summarize-url "
            "http://127.0.0.1:8080/v1 < conversation.jsonl",
        ),
    )
    est = add_command(commands, "estimate", _estimate, help="token estimate of a conversation file")
    est.add_argument("file", type=input_file, help="JSON array or JSON lines; - for stdin")
    est.add_argument(
        "--tokenizer-url",
        type=http_url,
        help="count with this server's tokenizer (/tokenize or /extras/tokenize/count)",
    )
    est.add_argument("--json", action="store_true", help="print the result as JSON")

    comp = add_command(commands, "compact", _compact, help="compact a conversation to a budget")
    comp.add_argument("file", type=input_file, help="JSON array or JSON lines; - for stdin")
    comp.add_argument("--budget", type=int_at_least(1), required=True, help="prompt-token budget")
    comp.add_argument("--keep-recent", type=int_at_least(0), default=6)
    comp.add_argument("--keep-tool-result", type=int_at_least(-1), default=-1, help="-1 keeps all")
    comp.add_argument("--scratch", help="per-turn system note appended to the output")
    comp.add_argument("--summarize-url", type=http_url, help="OpenAI-compatible base URL")
    comp.add_argument("--model", default="", help="model name for --summarize-url")
    comp.add_argument("--tokenizer-url", type=http_url, help="count with this server's tokenizer")
    comp.add_argument(
        "--json", action="store_true", help="print messages and report as one JSON object"
    )
