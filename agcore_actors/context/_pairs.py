"""Where a conversation may be cut without separating a tool call from its result.

A conversation is a list of *blocks*: an assistant message that made tool
calls together with the tool messages that answer it (directly after it),
or any other single message. Compaction only ever removes or keeps whole
blocks, and never touches the *system prefix* (the leading system and
developer messages: the system prompt).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..llm import AssistantMessage, DeveloperMessage, Message, SystemMessage, ToolMessage


def system_prefix_len(messages: Sequence[Message]) -> int:
    """How many leading messages are system or developer messages."""
    n = 0
    for msg in messages:
        if not isinstance(msg, SystemMessage | DeveloperMessage):
            break
        n += 1
    return n


def block_starts(messages: Sequence[Message]) -> list[bool]:
    """For each index, whether a block starts there (a cut is safe before it).

    A tool message whose call id belongs to the nearest preceding assistant
    message with tool calls (with only tool messages in between) continues
    that assistant's block. An orphan tool message is a block of its own.
    """
    starts = [True] * len(messages)
    open_ids: set[str] = set()
    for i, msg in enumerate(messages):
        if isinstance(msg, ToolMessage):
            if msg.tool_call_id in open_ids:
                starts[i] = False
            continue
        open_ids = set()
        if isinstance(msg, AssistantMessage) and msg.tool_calls:
            open_ids = {call.id for call in msg.tool_calls}
    return starts


def cut_before(messages: Sequence[Message], index: int) -> int:
    """The largest safe cut ``<= index`` (0 and ``len`` are always safe)."""
    if index >= len(messages):
        return len(messages)
    starts = block_starts(messages)
    i = max(index, 0)
    while i > 0 and not starts[i]:
        i -= 1
    return i


def cut_after(messages: Sequence[Message], index: int) -> int:
    """The smallest safe cut ``>= index``."""
    if index <= 0:
        return 0
    starts = block_starts(messages)
    i = index
    while i < len(messages) and not starts[i]:
        i += 1
    return i
