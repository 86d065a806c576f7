"""Transcript rules, as pure functions (no trio, no I/O).

The store keeps one piece of state about the end of a log: the *pending calls*, the
ids of the calls of the last assistant message that no tool message has answered yet
(in the order the model made them). :func:`pending_after` checks a run of messages against
it and returns the new state; every write goes through it, so a stored transcript is
always valid (see :mod:`agcore_actors.store.messages`).

The rule is the agent layer's (:func:`agcore_actors.agent.transcript_errors`): the calls
of one assistant message have distinct ids, each answered once by the tool messages right
after it; an id may come back in a later assistant message (Chat Completions binds results
to the message before them, and some servers number calls per response).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..llm import AssistantMessage, Message, ToolMessage
from ._errors import InvalidTranscript

#: The content of a synthetic result; the status is appended (``interrupted``).
SYNTHETIC_RESULT = "Error: tool call "


def pending_after(pending: Sequence[str], messages: Sequence[Message]) -> list[str]:
    """The pending calls after appending ``messages``; :class:`InvalidTranscript` if
    a message answers no pending call, or a non-tool message comes while calls are
    pending, or an assistant message repeats a call id."""
    open_calls = list(pending)
    for position, message in enumerate(messages):
        if isinstance(message, ToolMessage):
            try:
                open_calls.remove(message.tool_call_id)
            except ValueError:
                raise InvalidTranscript(
                    f"message {position}: result for call {message.tool_call_id!r}, which "
                    "is not an unanswered call of the last assistant message"
                ) from None
            continue
        if open_calls:
            raise InvalidTranscript(
                f"message {position}: a {_role(message)} message while calls "
                f"{open_calls} are unanswered"
            )
        if isinstance(message, AssistantMessage) and message.tool_calls:
            ids = [call.id for call in message.tool_calls]
            if len(set(ids)) != len(ids):
                raise InvalidTranscript(f"message {position}: a call id is used twice: {ids}")
            open_calls = ids
    return open_calls


def closed(pending: Sequence[str], what: str) -> None:
    """Raise :class:`InvalidTranscript` unless no call is pending."""
    if pending:
        raise InvalidTranscript(f"{what} leaves calls {list(pending)} unanswered")


def synthetic_results(pending: Sequence[str], status: str) -> list[Message]:
    """One tool message per pending call, in call order: ``Error: tool call <status>``."""
    return [ToolMessage(SYNTHETIC_RESULT + status, call_id) for call_id in pending]


def repaired(messages: Sequence[Message], status: str) -> list[Message]:
    """``messages`` made valid, for transcripts written before these rules held.

    A tool message that answers no pending call is dropped (its call was lost, e.g. to a
    sliding window); calls still unanswered when a non-tool message comes, or at the
    end, get synthetic results right there. A valid transcript is returned unchanged.
    """
    out: list[Message] = []
    open_calls: list[str] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id in open_calls:
                open_calls.remove(message.tool_call_id)
                out.append(message)
            continue
        out.extend(synthetic_results(open_calls, status))
        open_calls = []
        if isinstance(message, AssistantMessage) and message.tool_calls:
            ids = [call.id for call in message.tool_calls]
            if len(set(ids)) != len(ids):  # keep the first call of each id
                first = {call.id: call for call in reversed(message.tool_calls)}
                calls = [call for call in message.tool_calls if first[call.id] is call]
                message = AssistantMessage(
                    content=message.content,
                    reasoning_content=message.reasoning_content,
                    refusal=message.refusal,
                    name=message.name,
                    tool_calls=calls,
                )
                ids = [call.id for call in calls]
            open_calls = ids
        out.append(message)
    out.extend(synthetic_results(open_calls, status))
    return out


def _role(message: Message) -> str:
    return type(message).__name__.removesuffix("Message").lower()
