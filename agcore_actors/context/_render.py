"""A message list as the text a model sees, for tokenizers that count text.

ChatML framing (``<|im_start|>role\\ncontent<|im_end|>\\n``), as SmolLM2,
Qwen and many llama.cpp chat templates use; tool calls are written as the
JSON the API carries; non-text parts are left out (their tokenizer-side
cost is model-specific; :class:`~agcore_actors.context.PartCosts` adds them).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..llm import (
    AssistantMessage,
    FunctionMessage,
    Message,
    TextPart,
    ToolMessage,
)
from ._tokens import PartCosts, estimate_part_tokens


def message_text(msg: Message) -> str:
    """The text a chat template would put in one message's turn."""
    content = msg.content
    if isinstance(content, str):
        body = content
    elif content is None:
        body = ""
    else:
        body = "".join(p.text for p in content if isinstance(p, TextPart))
    if isinstance(msg, AssistantMessage) and msg.tool_calls:
        calls = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in msg.tool_calls
        ]
        body += "\n<tool_call>" + json.dumps(calls, ensure_ascii=False) + "</tool_call>"
    return body


def chatml(messages: Sequence[Message], *, generation_prompt: bool = False) -> str:
    """The messages framed as ChatML; with ``generation_prompt``, followed by the
    opening of the assistant's reply (which a server counts in the prompt)."""
    out = []
    for msg in messages:
        role = type(msg).__name__.removesuffix("Message").lower()
        if isinstance(msg, ToolMessage):
            header = f"tool {msg.tool_call_id}"
        elif isinstance(msg, FunctionMessage) or msg.name:
            header = f"{role} {msg.name}"
        else:
            header = role
        out.append(f"<|im_start|>{header}\n{message_text(msg)}<|im_end|>\n")
    if generation_prompt:
        out.append("<|im_start|>assistant\n")
    return "".join(out)


def non_text_tokens(messages: Sequence[Message], costs: PartCosts) -> int:
    """The flat costs of the non-text parts (which :func:`chatml` leaves out)."""
    total = 0
    for msg in messages:
        if isinstance(msg.content, list):
            total += sum(
                estimate_part_tokens(p, costs) for p in msg.content if not isinstance(p, TextPart)
            )
    return total
