"""Transcript rules, as pure functions on lists of chat messages.

A transcript is *valid* — every provider accepts it as history — when the calls of each
assistant message have distinct ids, every one of them is answered by exactly one tool
message, and those answers come right after that assistant message (in any order among
themselves), before the next user, system or assistant message. An id may come back in a
later assistant message (results bind to the message right before them, and some servers
number calls per response). The store checks the same rule on every write
(:func:`agcore_actors.store.policy.pending_after`); a test holds the two to one model.

A turn makes the ids of each reply unique (:func:`unique_call_ids`) before any tool runs.
A turn that ends early (cancelled, timed out, failed, interrupted by a crash) is closed
with :func:`synthetic_results`, so the transcript the next turn sees is always valid; the
text it had streamed is kept as an :func:`interrupted` assistant message.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from .._ids import new_id
from ..llm import AssistantMessage, ToolMessage, UserMessage
from ..llm import Message as ChatMessage

__all__ = [
    "INTERRUPTED",
    "interrupted",
    "synthetic_results",
    "transcript_errors",
    "unanswered_calls",
    "unique_call_ids",
]

#: The note that ends the text of an answer cut short (the model and readers see it).
INTERRUPTED = "[interrupted]"


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
                if call.id in open_calls:
                    errors.append(f"message {index}: call id {call.id!r} used twice")
                open_calls[call.id] = call.function.name
    close(len(messages))
    return errors


def unique_call_ids(message: AssistantMessage) -> AssistantMessage:
    """``message`` with the ids of its calls distinct and non-empty: an empty id, or one
    an earlier call of the message already has, becomes a fresh ``call_<32 hex>``; the
    others are kept. The same object when nothing needed changing (the usual case)."""
    calls = message.tool_calls
    if not calls:
        return message
    seen: set[str] = set()
    fixed = None
    for position, call in enumerate(calls):
        if call.id and call.id not in seen:
            seen.add(call.id)
            continue
        if fixed is None:
            fixed = list(calls)
        # 128 random bits: no other id of the message is the same. Letters, digits and
        # "_" only, as every provider accepts (Anthropic's tool_use ids are restricted).
        fresh = f"call_{new_id()}"
        seen.add(fresh)
        fixed[position] = msgspec.structs.replace(call, id=fresh)
    return message if fixed is None else msgspec.structs.replace(message, tool_calls=fixed)


def interrupted(text: str) -> AssistantMessage:
    """The answer a turn had streamed when it ended early, marked as cut short."""
    return AssistantMessage(f"{text}\n\n{INTERRUPTED}" if text else INTERRUPTED)


def valid_tail(history: list[ChatMessage], keep: int) -> list[ChatMessage]:
    """The last ``keep`` messages or a few more, starting at a user message so that no
    tool result is cut from its call."""
    start = max(0, len(history) - keep)
    while start > 0 and not isinstance(history[start], UserMessage):
        start -= 1
    return history[start:]
