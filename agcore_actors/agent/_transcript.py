"""Transcript rules, as pure functions on lists of chat messages.

A transcript is *valid* — every provider accepts it as history — when every tool call
an assistant message makes is answered by exactly one tool message, and those answers
come right after that assistant message (in any order among themselves), before the next
user, system or assistant message. A turn that ends early (cancelled, timed out, failed,
interrupted by a crash) is closed with :func:`synthetic_results`, so the transcript the
next turn sees is always valid.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..llm import AssistantMessage, ToolMessage, UserMessage
from ..llm import Message as ChatMessage

__all__ = ["synthetic_results", "transcript_errors", "unanswered_calls"]


def unanswered_calls(messages: Sequence[ChatMessage]) -> list[tuple[str, str]]:
    """``(call id, tool name)`` of the calls in the last assistant message that made
    calls and has no answer yet, in the order the model made them."""
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            answered.add(message.tool_call_id)
        elif isinstance(message, AssistantMessage):
            calls = message.tool_calls or []
            return [(c.id, c.function.name) for c in calls if c.id not in answered]
        else:
            return []
    return []


def synthetic_results(
    messages: Sequence[ChatMessage], status: str, detail: str = ""
) -> list[ToolMessage]:
    """A tool message for every unanswered call of the last assistant message:
    ``"Error: tool call <status>"`` (plus ``detail``), keyed by the call's id."""
    why = f": {detail}" if detail else ""
    return [
        ToolMessage(f"Error: tool call {status}{why}", call_id)
        for call_id, _ in unanswered_calls(messages)
    ]


def transcript_errors(messages: Sequence[ChatMessage]) -> list[str]:
    """Why ``messages`` is not a valid transcript; empty when it is."""
    errors: list[str] = []
    open_calls: dict[str, str] = {}  # id -> name, calls of the current assistant message
    answered: set[str] = set()
    seen_ids: set[str] = set()

    def close(at: int) -> None:
        for call_id, name in open_calls.items():
            if call_id not in answered:
                errors.append(f"call {call_id!r} ({name}) has no result before message {at}")
        open_calls.clear()
        answered.clear()

    for index, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            call_id = message.tool_call_id
            if call_id not in open_calls:
                errors.append(f"message {index}: result for unknown or closed call {call_id!r}")
            elif call_id in answered:
                errors.append(f"message {index}: second result for call {call_id!r}")
            else:
                answered.add(call_id)
            continue
        close(index)
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls or []:
                if call.id in seen_ids:
                    errors.append(f"message {index}: call id {call.id!r} used twice")
                seen_ids.add(call.id)
                open_calls[call.id] = call.function.name
    close(len(messages))
    return errors


def valid_tail(history: list[ChatMessage], keep: int) -> list[ChatMessage]:
    """The last ``keep`` messages or a few more, starting at a user message so that no
    tool result is cut from its call."""
    start = max(0, len(history) - keep)
    while start > 0 and not isinstance(history[start], UserMessage):
        start -= 1
    return history[start:]
