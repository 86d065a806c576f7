"""The summary step: summarise the middle of a conversation, keep both ends.

Pure parts (:func:`plan_summary`, :func:`render_transcript`,
:func:`apply_summary`) decide what is summarised and how the result is put
together; :func:`summarize` asks a :class:`Summarizer` under a timeout.

Layout after the step::

    system prefix | head (protect_head messages, whole blocks) | summary | tail

The tail is at least the last ``keep_recent`` messages, widened backwards to
a block start so that no tool result loses its call; the head is widened
forwards for the same reason. The summary message replaces everything in
between, so pairs inside the middle disappear together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol

import msgspec
import trio

from ..llm import (
    AssistantMessage,
    FunctionMessage,
    Message,
    SystemMessage,
    ToolMessage,
    UserMessage,
    content_text,
)
from ._errors import SummaryFailed, SummaryTimeout
from ._pairs import cut_after, cut_before, system_prefix_len
from ._steps import StepOutcome
from ._tokens import estimate_text_tokens, estimate_tokens, prefix_within

SUMMARY_PREFIX = "Summary of the earlier conversation"

SUMMARY_INSTRUCTIONS = """\
You compress a conversation between a user and an AI assistant that uses tools, so that the \
assistant can continue the task without the original messages. Write a concise summary in \
these sections:
Goal: what the user wants.
Progress: what was done and decided, and the results of tool calls that matter.
Facts: names, numbers, file paths, identifiers and values needed later, copied exactly.
Open: what is still to do.
Use the language of the conversation. Do not invent anything that is not in it."""


class SummaryPlan(msgspec.Struct, frozen=True):
    """``messages[head_end:tail_start]`` is summarised (a non-empty range)."""

    head_end: int
    tail_start: int


def plan_summary(
    messages: Sequence[Message], keep_recent: int, protect_head: int = 1
) -> SummaryPlan | None:
    """The range to summarise, or None when nothing lies between head and tail."""
    head_end = cut_after(messages, system_prefix_len(messages) + protect_head)
    tail_start = cut_before(messages, len(messages) - keep_recent)
    if tail_start <= head_end:
        return None
    return SummaryPlan(head_end, tail_start)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    return f"{text[:half]} [... {len(text) - 2 * half} characters cut ...] {text[-half:]}"


def _line(msg: Message, limit: int) -> str:
    text = _clip(content_text(msg.content), limit)
    match msg:
        case AssistantMessage(tool_calls=calls) if calls:
            called = "; ".join(
                f"{c.function.name}({_clip(c.function.arguments, limit // 4)}) [id {c.id}]"
                for c in calls
            )
            return (
                f"assistant: {text}\nassistant called: {called}"
                if text
                else (f"assistant called: {called}")
            )
        case ToolMessage(tool_call_id=call_id):
            return f"tool result [id {call_id}]: {text}"
        case FunctionMessage(name=name):
            return f"function {name} result: {text}"
    role = type(msg).__name__.removesuffix("Message").lower()
    return f"{role}: {text}"


def render_transcript(messages: Sequence[Message], max_tokens: int, message_chars: int) -> str:
    """The messages as plain text for the summariser, bounded.

    Each message is clipped to ``message_chars`` characters (its middle is
    cut). If the whole is still over ``max_tokens`` (heuristic estimate),
    messages are dropped from the middle outwards, replaced by one line that
    says how many: the start (the task's context) and the end (the latest
    state) are what a summary needs most.
    """
    lines = [_line(m, message_chars) for m in messages]
    costs = [estimate_text_tokens(line) + 1 for line in lines]
    total = sum(costs)
    if total <= max_tokens:
        return "\n\n".join(lines)
    # Keep alternately from the front and the back while within the bound.
    front: list[str] = []
    back: list[str] = []
    budget = max_tokens - 16  # the omission line
    i, j = 0, len(lines) - 1
    take_front = True
    while i <= j:
        k = i if take_front else j
        if costs[k] > budget:
            break
        budget -= costs[k]
        if take_front:
            front.append(lines[i])
            i += 1
        else:
            back.append(lines[j])
            j -= 1
        take_front = not take_front
    omitted = j - i + 1
    middle = [f"[... {omitted} messages omitted ...]"] if omitted else []
    return "\n\n".join([*front, *middle, *reversed(back)])


def summary_request(transcript: str, instructions: str = SUMMARY_INSTRUCTIONS) -> list[Message]:
    """The messages a summariser is asked with."""
    return [
        SystemMessage(instructions),
        UserMessage(f"Conversation to summarise:\n\n{transcript}\n\nWrite the summary now."),
    ]


def summary_message(summary: str, compacted: int, role: Literal["user", "system"]) -> Message:
    text = f"{SUMMARY_PREFIX} ({compacted} messages compacted):\n{summary.strip()}"
    return SystemMessage(text) if role == "system" else UserMessage(text)


def apply_summary(
    messages: Sequence[Message],
    plan: SummaryPlan,
    summary: str,
    role: Literal["user", "system"] = "user",
) -> list[Message]:
    """Head, then the summary message, then the tail."""
    compacted = plan.tail_start - plan.head_end
    return [
        *messages[: plan.head_end],
        summary_message(summary, compacted, role),
        *messages[plan.tail_start :],
    ]


def summary_step(
    messages: Sequence[Message],
    summary: str,
    *,
    keep_recent: int,
    protect_head: int = 1,
    role: Literal["user", "system"] = "user",
    estimate: Callable[[Sequence[Message]], int] = estimate_tokens,
) -> StepOutcome:
    """The summary step with a given summary, as a pure function.

    Unchanged (``changed == 0``) when there is nothing to summarise or when
    the result would not be smaller by ``estimate``.
    """
    before = estimate(messages)
    plan = plan_summary(messages, keep_recent, protect_head)
    if plan is None:
        return StepOutcome(list(messages), 0, before, before)
    compacted = apply_summary(messages, plan, summary, role)
    after = estimate(compacted)
    if after >= before:
        return StepOutcome(list(messages), 0, before, before)
    return StepOutcome(compacted, plan.tail_start - plan.head_end, before, after)


def clip_summary(summary: str, max_tokens: int) -> str:
    """``summary`` cut to at most ``max_tokens`` (heuristic), at a line end if possible.

    One pass over the kept part: the cost is the summary's first ``max_tokens``
    tokens, not its length (a model that ignores ``max_tokens`` may answer
    megabytes).
    """
    end = prefix_within(summary, max_tokens)
    if end == len(summary):
        return summary
    cut = summary[:end]
    newline = cut.rfind("\n")
    return cut[:newline] if newline > end // 2 else cut


class Summarizer(Protocol):
    """Turns a summary request (:func:`summary_request`) into summary text.

    Implementations call a model; they may take as long as they like: the
    compactor bounds each call with its ``summary_timeout`` and cancels it
    when the time is up, so they must be cancellable (any trio I/O is).
    """

    async def __call__(self, messages: list[Message], *, max_tokens: int) -> str: ...


async def summarize(
    summarizer: Summarizer,
    region: Sequence[Message],
    *,
    timeout: float,
    max_input_tokens: int,
    message_chars: int,
    max_tokens: int,
) -> str:
    """Ask ``summarizer`` for a summary of ``region`` within ``timeout`` seconds.

    Raises :class:`SummaryFailed` on timeout (:class:`SummaryTimeout`), on any
    error of the summarizer (kept as ``__cause__``) and on an answer that is
    not text or is empty. Cancellation of the
    caller cancels the summarizer.
    """
    transcript = render_transcript(region, max_input_tokens, message_chars)
    request = summary_request(transcript)
    try:
        with trio.fail_after(timeout):
            text = await summarizer(request, max_tokens=max_tokens)
    except trio.TooSlowError:
        raise SummaryTimeout(timeout) from None
    except Exception as exc:
        raise SummaryFailed(f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(text, str):
        raise SummaryFailed(f"the summarizer returned {type(text).__name__}, not text")
    if not text.strip():
        raise SummaryFailed("the summarizer returned an empty summary")
    return clip_summary(text.strip(), max_tokens)
