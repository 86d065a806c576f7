"""``agcore-actors llm complete "prompt"``: one chat request through the ProviderActor.

The endpoint comes from the flags or the environment (see
:mod:`agcore_actors.cli._llm_config`). The answer is streamed to stdout as it
arrives; ``--json`` makes one non-streamed request instead and prints one JSON object
(provider, model, text, reasoning, tool calls, finish reason, usage, attempts) — a
non-streamed reply carries the usage that some servers leave out of streams
(llama.cpp ignores ``stream_options.include_usage``). Every retry is announced on
stderr with the error that caused it and the wait. A failed call is one line on
stderr naming the error kind, exit status 1; after an HTTP 404 the line hints at a
base URL missing its ``/v1``.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from typing import Any

import msgspec
import trio

from ..actor import ActorRef, ActorSystem
from ..llm import (
    Chat,
    ChatRequest,
    ChatResponse,
    ChatStream,
    Content,
    ContentFirst,
    Finish,
    HookContext,
    HookEvent,
    HookExecutor,
    Message,
    Provider,
    ProviderMsg,
    ProviderRegistry,
    RetryConfig,
    Thinking,
    Timeouts,
    provider_actor,
    system,
    user,
)
from ._common import OK, add_command, add_group, examples, print_json, warn, with_hint
from ._convert import http_url, int_at_least, non_negative_float, positive_float
from ._llm_config import (
    KINDS,
    build_provider,
    configured_model,
    needs_model,
    not_found_hint,
    served_model,
)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub = add_group(
        commands,
        "llm",
        help="talk to an LLM provider",
        epilog=examples(
            'agcore-actors llm complete "Say hi" --base-url http://127.0.0.1:8080/v1',
            'OPENAI_API_KEY=... agcore-actors llm complete "Say hi" --model gpt-4o-mini --json',
            'agcore-actors llm complete "Why?" --provider deepseek --show-reasoning',
        )
        + "\nenvironment: OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL, "
        "ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, ANTHROPIC_MODEL",
    )
    run = add_command(sub, "complete", _run, help="one chat request, streamed to stdout")
    run.add_argument("prompt", help="the user message")
    run.add_argument("--provider", choices=KINDS, help="provider kind (default: from the env)")
    run.add_argument(
        "--base-url", type=http_url, help="endpoint base URL (e.g. http://127.0.0.1:8080/v1)"
    )
    run.add_argument("--api-key", help="API key (default: from the environment)")
    run.add_argument("--model", help="model name (default: the env, or the server's only one)")
    run.add_argument("--system", help="a system prompt")
    run.add_argument("--max-tokens", type=int_at_least(1), help="cap on generated tokens")
    run.add_argument("--temperature", type=non_negative_float)
    run.add_argument("--retries", type=int_at_least(0), default=3, help="retries (default 3)")
    run.add_argument(
        "--timeout", type=positive_float, default=120.0, help="per attempt / idle, seconds"
    )
    run.add_argument("--deadline", type=positive_float, default=600.0, help="whole call, seconds")
    run.add_argument("--json", action="store_true", help="one request; print one JSON object")
    run.add_argument("--show-reasoning", action="store_true", help="stream reasoning to stderr")


def _request(args: argparse.Namespace, model: str) -> ChatRequest:
    messages: list[Message] = []
    if args.system:
        messages.append(system(args.system))
    messages.append(user(args.prompt))
    return ChatRequest(
        messages, model=model, max_tokens=args.max_tokens, temperature=args.temperature
    )


async def _announce_retry(prog: str, retries: int, ctx: HookContext) -> None:
    error = ctx.error
    kind = getattr(error, "kind", type(error).__name__)
    delay = 0.0 if ctx.delay is None else ctx.delay
    warn(prog, str(kind), f"{error}; retry {ctx.attempt} of {retries} in {delay:.1f} s")


async def _streamed(
    llm: ActorRef[ProviderMsg], request: ChatRequest, show_reasoning: bool
) -> ChatResponse:
    response: ChatResponse | None = None
    async with llm.stream(ChatStream(request)) as events:
        async for event in events:
            if isinstance(event, Finish):
                response = event.response
            elif isinstance(event, Thinking) and show_reasoning:
                print(event.text, end="", file=sys.stderr, flush=True)
            elif isinstance(event, Content | ContentFirst):
                print(event.text, end="", flush=True)
    print(flush=True)
    assert response is not None  # a stream that ends without error ends with Finish
    return response


async def complete(args: argparse.Namespace, provider: Provider) -> dict[str, Any]:
    """Run the request; the reply as the ``--json`` object."""
    model = await served_model(provider, args.timeout) if needs_model(provider) else ""
    request = _request(args, model)
    registry = ProviderRegistry().register(provider)
    registry.set_default(provider.name)
    hooks = HookExecutor().register(
        HookEvent.ON_RETRY, functools.partial(_announce_retry, args.prog, args.retries)
    )
    factory = provider_actor(
        registry,
        retry=RetryConfig(max_retries=args.retries),
        timeouts=Timeouts(attempt=args.timeout, idle=args.timeout, call=args.deadline),
        hooks=hooks,
    )
    async with ActorSystem() as actors:
        llm: ActorRef[ProviderMsg] = await actors.spawn(factory, name="llm")
        if args.json:
            response = await llm.ask(Chat(request))
        else:
            response = await _streamed(llm, request, args.show_reasoning)
    message = response.message
    return {
        "provider": response.provider,
        "model": response.model or model or configured_model(provider),
        "text": message.text,
        "reasoning": message.reasoning_content,
        "tool_calls": msgspec.to_builtins(message.tool_calls or []),
        "finish_reason": response.finish_reason,
        "usage": msgspec.to_builtins(response.usage),
        "attempts": response.attempts,
    }


def _run(args: argparse.Namespace) -> int:
    provider = build_provider(args, os.environ)
    try:
        result = trio.run(complete, args, provider)
    except Exception as exc:
        hint = not_found_hint(provider) if getattr(exc, "status", None) == 404 else None
        if hint is not None:
            with_hint(exc, hint)
        raise
    if args.json:
        print_json(result)
    return OK
