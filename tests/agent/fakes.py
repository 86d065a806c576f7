"""Scripts for the agent tests, played by the public ``testing.ScriptedProvider``.

A script is a list of attempts (the last one repeats); an attempt is a list of steps:
seconds to wait (a float), then an :class:`AssistantMessage` to answer with, an
``LlmError`` to fail with, or any other exception — a bug in the provider.
"""

from __future__ import annotations

from typing import Any

from agcore_actors.llm import AssistantMessage, ChatRequest, LlmError, Usage, UserMessage
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall

UNIT = Usage(input_tokens=10, output_tokens=5)
ECHO_USAGE = Usage(input_tokens=3, output_tokens=2)


def _attempt(steps: list[Any], usage: Usage) -> ScriptedReply | LlmError:
    latency = sum(step for step in steps if isinstance(step, float))
    for step in steps:
        if isinstance(step, LlmError):
            return ScriptedReply(latency=latency, fail_after=0, error=step)
        if isinstance(step, Exception):
            raise step
        if isinstance(step, AssistantMessage):
            calls = [
                ScriptedToolCall(c.function.name, c.function.arguments, c.id)
                for c in step.tool_calls or ()
            ]
            text = step.content if isinstance(step.content, str) else None
            return ScriptedReply(text=text, tool_calls=calls, usage=usage, latency=latency)
    return ScriptedReply(stall_after=0)


def scripted(script: list[list[Any]], usage: Usage = UNIT) -> ScriptedProvider:
    """A provider playing ``script`` (a list the test may change later)."""

    def play(request: ChatRequest, attempt: int) -> ScriptedReply | LlmError:
        return _attempt(script[min(attempt, len(script)) - 1], usage)

    return ScriptedProvider(play)


def echo(delay: float = 0.5, usage: Usage = ECHO_USAGE) -> ScriptedProvider:
    """A provider that answers ``echo: <the last user message>`` after ``delay`` seconds."""

    def play(request: ChatRequest, attempt: int) -> ScriptedReply:
        last = next(m for m in reversed(request.messages) if isinstance(m, UserMessage))
        return ScriptedReply(text=f"echo: {last.content}", latency=delay, usage=usage)

    return ScriptedProvider(play, name="echo")
