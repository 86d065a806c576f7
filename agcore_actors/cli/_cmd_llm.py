"""``agcore-actors llm complete "prompt"``: one chat request through the ProviderActor.

The provider comes from the flags, else from the environment:
``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` / ``OPENAI_MODEL`` (an OpenAI-compatible
endpoint; a base URL alone is enough for a local server), else
``ANTHROPIC_API_KEY`` (``ANTHROPIC_BASE_URL``, ``ANTHROPIC_MODEL``). The answer is
streamed to stdout as it arrives; ``--json`` prints one JSON object at the end
instead (text, reasoning, tool calls, finish reason, usage). A failed call
exits with status 1 and one line on stderr naming the error kind.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from typing import Any

import msgspec
import trio

from ..actor import ActorSystem
from ..llm import (
    AnthropicConfig,
    AnthropicProvider,
    ChatRequest,
    ChatResponse,
    ChatStream,
    Content,
    ContentFirst,
    Finish,
    LlmError,
    OpenAICompatibleProvider,
    OpenAIConfig,
    Provider,
    ProviderRegistry,
    RetryConfig,
    Thinking,
    Timeouts,
    preset,
    provider_actor,
    system,
    user,
)

_KINDS = ("openai", "deepseek", "qwen", "anthropic")
_OPENAI_BASE_URL = OpenAIConfig().base_url


class UsageError(Exception):
    """Bad flags or environment: exit status 2."""


def build_provider(args: argparse.Namespace, env: Mapping[str, str]) -> Provider:
    kind = args.provider
    if kind is None:
        if args.base_url or env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_KEY"):
            kind = "openai"
        elif env.get("ANTHROPIC_API_KEY"):
            kind = "anthropic"
        else:
            raise UsageError(
                "no provider: pass --provider/--base-url, or set OPENAI_API_KEY, "
                "OPENAI_BASE_URL or ANTHROPIC_API_KEY"
            )
    if kind == "anthropic":
        key = args.api_key or env.get("ANTHROPIC_API_KEY", "")
        base = args.base_url or env.get("ANTHROPIC_BASE_URL")
        model = args.model or env.get("ANTHROPIC_MODEL")
        default = AnthropicConfig()
        return AnthropicProvider(
            AnthropicConfig(
                api_key=key, base_url=base or default.base_url, model=model or default.model
            )
        )
    key = args.api_key or env.get("OPENAI_API_KEY", "")
    base = args.base_url or env.get("OPENAI_BASE_URL")
    model = args.model or env.get("OPENAI_MODEL")
    if kind == "openai":
        if not key and (not base or base.rstrip("/") == _OPENAI_BASE_URL):
            raise UsageError("the OpenAI API needs a key: set OPENAI_API_KEY or --api-key")
        return OpenAICompatibleProvider(
            OpenAIConfig(
                name="openai", base_url=base or _OPENAI_BASE_URL, api_key=key, model=model or ""
            )
        )
    vendor = preset(kind, key, model)
    if base:
        vendor = OpenAIConfig(name=vendor.name, base_url=base, api_key=key, model=vendor.model)
    return OpenAICompatibleProvider(vendor)


def _request(args: argparse.Namespace) -> ChatRequest:
    messages: list[Any] = []
    if args.system:
        messages.append(system(args.system))
    messages.append(user(args.prompt))
    return ChatRequest(messages, max_tokens=args.max_tokens, temperature=args.temperature)


async def complete(args: argparse.Namespace, provider: Provider) -> dict[str, Any]:
    registry = ProviderRegistry().register(provider)
    registry.set_default(provider.name)
    timeouts = Timeouts(attempt=args.timeout, idle=args.timeout, call=args.deadline)
    factory = provider_actor(
        registry, retry=RetryConfig(max_retries=args.retries), timeouts=timeouts
    )
    response: ChatResponse | None = None
    async with ActorSystem() as actors:
        llm = await actors.spawn(factory, name="llm")
        async with llm.stream(ChatStream(_request(args))) as events:
            async for event in events:
                if isinstance(event, Finish):
                    response = event.response
                elif args.json:
                    pass
                elif isinstance(event, Thinking) and args.show_reasoning:
                    print(event.text, end="", file=sys.stderr, flush=True)
                elif isinstance(event, Content | ContentFirst):
                    print(event.text, end="", flush=True)
        if not args.json:
            print(flush=True)
    assert response is not None  # a stream that ends without error ends with Finish
    message = response.message
    return {
        "provider": response.provider,
        "model": response.model,
        "text": message.text,
        "reasoning": message.reasoning_content,
        "tool_calls": msgspec.to_builtins(message.tool_calls or []),
        "finish_reason": response.finish_reason,
        "usage": msgspec.to_builtins(response.usage),
        "attempts": response.attempts,
    }


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    llm = commands.add_parser("llm", help="talk to an LLM provider")
    sub = llm.add_subparsers(dest="llm_command", required=True)
    run = sub.add_parser("complete", help="one chat request, streamed to stdout")
    run.add_argument("prompt", help="the user message")
    run.add_argument("--provider", choices=_KINDS, help="provider kind (default: from the env)")
    run.add_argument("--base-url", help="endpoint base URL (e.g. http://127.0.0.1:8080/v1)")
    run.add_argument("--api-key", help="API key (default: from the environment)")
    run.add_argument("--model", help="model name")
    run.add_argument("--system", help="a system prompt")
    run.add_argument("--max-tokens", type=int, help="cap on generated tokens")
    run.add_argument("--temperature", type=float)
    run.add_argument("--retries", type=int, default=3, help="retries (default 3)")
    run.add_argument("--timeout", type=float, default=120.0, help="per attempt / idle, seconds")
    run.add_argument("--deadline", type=float, default=600.0, help="whole call, seconds")
    run.add_argument("--json", action="store_true", help="print one JSON object at the end")
    run.add_argument("--show-reasoning", action="store_true", help="stream reasoning to stderr")
    run.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        provider = build_provider(args, os.environ)
        if args.retries < 0 or args.timeout <= 0 or args.deadline <= 0:
            raise UsageError("--retries must be >= 0, --timeout and --deadline > 0")
    except (UsageError, ValueError) as exc:
        print(f"agcore-actors llm: {exc}", file=sys.stderr)
        return 2
    try:
        result = trio.run(complete, args, provider)
    except LlmError as exc:
        print(f"agcore-actors llm: {exc.kind} error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("agcore-actors llm: interrupted", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    return 0
