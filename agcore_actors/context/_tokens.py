"""Token estimation: a documented heuristic, and the estimator interface.

The heuristic (:func:`estimate_text_tokens`) is what the compactor uses when
nothing better is configured. It errs on the high side, because it decides
when to compact and an under-estimate turns into a context-length error:

- a run of ASCII letters and digits costs ``ceil(len / 4)`` tokens, at least 1
  (BPE vocabularies hold most English words whole; long identifiers split);
- every ASCII punctuation or symbol character costs 1 token (JSON, code and
  markup are mostly single-character tokens);
- ASCII whitespace is free, except that a run of 2+ newlines or 4+ spaces
  (indentation) costs 1;
- every CJK ideograph, kana or hangul syllable costs 1 token (cl100k and
  o200k encode common Chinese characters in about 0.7-1.2 tokens; small
  English-centric vocabularies need more, which the per-estimator
  calibration of the Compactor absorbs);
- any other non-ASCII character (accented letters, Cyrillic, emoji) costs
  1/2 token, rounded up per run.

Messages (:func:`estimate_message_tokens`) add a per-message overhead
(``MESSAGE_OVERHEAD`` = 4: role and separators), the
author ``name``, the reasoning text if present, and for each tool call its
id, name, arguments and ``TOOL_CALL_OVERHEAD``; a tool message adds its
``tool_call_id``. Non-text parts cost a flat amount (:class:`PartCosts`):
images by their ``detail`` (OpenAI: 85 for low, 765 for a 1024x1024 high-detail
image), audio by its data size, files a flat 1,000.

Other estimators (tiktoken, a server's tokenizer) implement
:class:`TokenEstimator`; the compactor awaits them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import msgspec

from ..llm import (
    AssistantMessage,
    AudioPart,
    ContentPart,
    FilePart,
    FunctionMessage,
    ImagePart,
    Message,
    RefusalPart,
    TextPart,
    ToolMessage,
)

MESSAGE_OVERHEAD = 4
TOOL_CALL_OVERHEAD = 8
NAME_OVERHEAD = 1


class PartCosts(msgspec.Struct, frozen=True):
    """Flat token costs of non-text content parts."""

    image_low: int = 85
    image_high: int = 765
    #: ``detail`` "auto" or unset: the provider may pick high.
    image_auto: int = 765
    #: Audio: tokens per KiB of decoded data (16 kHz 16-bit mono is ~32 KiB/s,
    #: and speech models spend ~10-25 tokens a second), at least ``audio_min``.
    audio_per_kib: float = 1.0
    audio_min: int = 50
    file: int = 1000


DEFAULT_PART_COSTS = PartCosts()


_WIDE = (
    "\u3000-\u303f"  # CJK punctuation
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff00-\uffef"  # half/full-width forms
    "\U00020000-\U0003ffff"  # CJK extensions B..
)
# A run of L word characters costs ceil(L / 4): the number of greedy matches of
# up to 4 of them. Likewise ceil(L / 2) for other non-ASCII runs.
_WORD_PIECES = re.compile(r"[A-Za-z0-9]{1,4}")
_BREAKS = re.compile(r"\n\n+|[ \t]{4,}")
_PUNCT = [chr(c) for c in range(0x21, 0x7F) if not chr(c).isalnum()]
_WIDE_CHARS = re.compile(f"[{_WIDE}]")
_OTHER_PIECES = re.compile(f"[^\x00-\x7f{_WIDE}]{{1,2}}")


def estimate_text_tokens(text: str) -> int:
    """Tokens of ``text`` by the heuristic of the module doc (0 for "")."""
    if not text:
        return 0
    # Each cost class is counted by a C-level scan, no Python loop per piece.
    tokens = len(_WORD_PIECES.findall(text))
    tokens += sum(map(text.count, _PUNCT))
    if "\n\n" in text or "    " in text or "\t" in text:
        tokens += len(_BREAKS.findall(text))
    if not text.isascii():
        tokens += len(_WIDE_CHARS.findall(text))
        tokens += len(_OTHER_PIECES.findall(text))
    return tokens


# One cost unit per match, in text order: the pieces estimate_text_tokens counts.
_UNITS = re.compile(
    f"[A-Za-z0-9]{{1,4}}|\n\n+|[ \t]{{4,}}|[{re.escape(''.join(_PUNCT))}]"
    f"|[{_WIDE}]|[^\x00-\x7f{_WIDE}]{{1,2}}"
)


def prefix_within(text: str, max_tokens: int) -> int:
    """The length of the longest prefix of ``text`` (ending after a whole piece)
    whose heuristic estimate is at most ``max_tokens``; ``len(text)`` if all of it
    fits. Reads only as far as the bound: O(kept part)."""
    for units, match in enumerate(_UNITS.finditer(text), start=1):
        if units > max_tokens:
            return match.start()
    return len(text)


def estimate_part_tokens(part: ContentPart, costs: PartCosts = DEFAULT_PART_COSTS) -> int:
    """Tokens of one content part: text by the heuristic, others flat."""
    match part:
        case TextPart(text=text):
            return estimate_text_tokens(text)
        case RefusalPart(refusal=text):
            return estimate_text_tokens(text)
        case ImagePart(image_url=url):
            if url.detail == "low":
                return costs.image_low
            if url.detail == "high":
                return costs.image_high
            return costs.image_auto
        case AudioPart(input_audio=audio):
            kib = len(audio.data) * 3 / 4 / 1024  # base64 → bytes → KiB
            return max(costs.audio_min, math.ceil(kib * costs.audio_per_kib))
        case FilePart():
            return costs.file
    raise TypeError(f"unknown content part {type(part).__name__}")  # pragma: no cover


def estimate_message_tokens(msg: Message, costs: PartCosts = DEFAULT_PART_COSTS) -> int:
    """Tokens of one message: overhead, content, name, tool calls, call id."""
    tokens = MESSAGE_OVERHEAD
    content = msg.content
    if isinstance(content, str):
        tokens += estimate_text_tokens(content)
    elif content is not None:
        tokens += sum(estimate_part_tokens(p, costs) for p in content)
    if not isinstance(msg, ToolMessage) and msg.name is not None:
        tokens += NAME_OVERHEAD + estimate_text_tokens(msg.name)
    if isinstance(msg, ToolMessage):
        tokens += estimate_text_tokens(msg.tool_call_id)
    elif isinstance(msg, AssistantMessage):
        if msg.reasoning_content:
            tokens += estimate_text_tokens(msg.reasoning_content)
        if msg.refusal:
            tokens += estimate_text_tokens(msg.refusal)
        for call in msg.tool_calls or ():
            tokens += TOOL_CALL_OVERHEAD
            tokens += estimate_text_tokens(call.id)
            tokens += estimate_text_tokens(call.function.name)
            tokens += estimate_text_tokens(call.function.arguments)
    elif isinstance(msg, FunctionMessage):
        pass  # name counted above
    return tokens


def estimate_tokens(messages: Sequence[Message], costs: PartCosts = DEFAULT_PART_COSTS) -> int:
    """Tokens of a message list: the sum over its messages."""
    return sum(estimate_message_tokens(m, costs) for m in messages)


@runtime_checkable
class TokenEstimator(Protocol):
    """Counts the prompt tokens of a message list.

    ``count`` may do I/O (a server's tokenizer); it must be cancellable and
    raise :class:`TokenizerUnavailable` when it cannot count. An estimator whose
    count of a list is the sum of its messages' counts may also offer
    ``count_message(message) -> int`` (synchronous, no I/O): the compactor then
    counts each message once per ask instead of whole lists again and again.
    """

    @property
    def name(self) -> str: ...

    async def count(self, messages: Sequence[Message]) -> int: ...


class HeuristicEstimator:
    """The heuristic of this module as a :class:`TokenEstimator` (no I/O)."""

    name = "heuristic"

    def __init__(self, costs: PartCosts = DEFAULT_PART_COSTS) -> None:
        self.costs = costs

    def estimate(self, messages: Sequence[Message]) -> int:
        return estimate_tokens(messages, self.costs)

    def count_message(self, message: Message) -> int:
        """One message's count (lists count as the sum of their messages)."""
        return estimate_message_tokens(message, self.costs)

    async def count(self, messages: Sequence[Message]) -> int:
        return estimate_tokens(messages, self.costs)
