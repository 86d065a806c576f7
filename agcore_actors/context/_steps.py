"""The cheap compaction steps: pure functions that replace old tool output.

Both steps only replace the *content* of messages (never remove one, never
touch ids), so every tool result stays next to the call it answers; both
leave the system prefix and the last ``keep_recent`` messages unchanged; and
both replace a content only when the placeholder is estimated smaller, so
the estimate never grows.

- :func:`microcompact`: tool results before the last ``keep_recent``
  messages become ``[pruned]``.
- :func:`keep_tool_results`: all but the last ``keep`` tool results become
  ``Tool result is omitted to save tokens.``; ``keep = -1`` keeps all.

:class:`StepOutcome` says how many messages changed and the estimate before and
after.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from ..llm import FunctionMessage, Message, ToolMessage, UserMessage, content_text
from ._pairs import system_prefix_len
from ._tokens import estimate_message_tokens

PRUNED = "[pruned]"
OMITTED = "Tool result is omitted to save tokens."

MessageEstimate = Callable[[Message], int]


class StepOutcome(msgspec.Struct, frozen=True):
    """The messages after a step, and what it did."""

    messages: list[Message]
    changed: int
    tokens_before: int
    tokens_after: int


def _replace_content(
    messages: Sequence[Message],
    indices: Sequence[int],
    placeholder: str,
    estimate: MessageEstimate,
) -> StepOutcome:
    out = list(messages)
    costs = [estimate(m) for m in messages]
    before = sum(costs)
    changed = 0
    freed = 0
    for i in indices:
        old = out[i]
        if isinstance(old.content, str) and old.content == placeholder:
            continue
        new = msgspec.structs.replace(old, content=placeholder)
        saved = costs[i] - estimate(new)
        if saved > 0:
            out[i] = new
            changed += 1
            freed += saved
    return StepOutcome(out, changed, before, before - freed)


def _is_tool_output(msg: Message) -> bool:
    return isinstance(msg, ToolMessage | FunctionMessage)


def microcompact(
    messages: Sequence[Message],
    keep_recent: int = 6,
    *,
    placeholder: str = PRUNED,
    estimate: MessageEstimate = estimate_message_tokens,
) -> StepOutcome:
    """Replace the content of tool results older than the last ``keep_recent``
    messages with ``placeholder`` (MCP tool output included: it arrives as
    tool messages too)."""
    if keep_recent < 0:
        raise ValueError(f"keep_recent must be >= 0, got {keep_recent}")
    end = len(messages) - keep_recent
    start = system_prefix_len(messages)
    indices = [i for i in range(start, end) if _is_tool_output(messages[i])]
    return _replace_content(messages, indices, placeholder, estimate)


def keep_tool_results(
    messages: Sequence[Message],
    keep: int,
    *,
    keep_recent: int = 0,
    include_user: bool = False,
    placeholder: str = OMITTED,
    estimate: MessageEstimate = estimate_message_tokens,
) -> StepOutcome:
    """Keep the last ``keep`` tool results, replace the older ones' content.

    ``keep = -1`` keeps all (nothing changes). With ``include_user`` the
    candidates are user and tool messages and the first one (the task) is
    always kept: for agents whose tool feedback arrives as user messages.
    Messages in the system prefix or among the last ``keep_recent`` are never
    changed.
    """
    if keep < -1:
        raise ValueError(f"keep must be >= -1, got {keep}")
    if keep_recent < 0:
        raise ValueError(f"keep_recent must be >= 0, got {keep_recent}")
    if keep == -1:
        before = sum(estimate(m) for m in messages)
        return StepOutcome(list(messages), 0, before, before)
    start = system_prefix_len(messages)
    candidates = [
        i
        for i in range(start, len(messages))
        if _is_tool_output(messages[i]) or (include_user and isinstance(messages[i], UserMessage))
    ]
    kept = set(candidates[max(0, len(candidates) - keep) :]) if keep else set()
    if include_user and candidates:
        kept.add(candidates[0])
    protected_from = len(messages) - keep_recent
    indices = [i for i in candidates if i not in kept and i < protected_from]
    return _replace_content(messages, indices, placeholder, estimate)


def is_placeholder(msg: Message) -> bool:
    """Whether a message's content is one of the placeholders of this module."""
    return content_text(msg.content) in (PRUNED, OMITTED)
