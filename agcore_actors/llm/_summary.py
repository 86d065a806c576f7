"""A log-friendly summary of a reply (clipped text and arguments, counts, usage)."""

from __future__ import annotations

from typing import Any

from .messages import ChatResponse

TEXT_LIMIT = 500
ARGUMENTS_LIMIT = 200


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def response_summary(response: ChatResponse) -> dict[str, Any]:
    """Text cut to 500 characters, tool arguments to 200, plus the finish reason,
    the tool call count and the usage; for logs, never for logic."""
    calls = response.message.tool_calls or []
    return {
        "provider": response.provider,
        "model": response.model,
        "text": _clip(response.text, TEXT_LIMIT),
        "finish_reason": response.finish_reason,
        "tool_calls_count": len(calls),
        "tool_calls": [
            {
                "id": c.id,
                "name": c.function.name,
                "arguments": _clip(c.function.arguments, ARGUMENTS_LIMIT),
            }
            for c in calls
        ],
        "usage": {
            "input": response.usage.input_tokens,
            "output": response.usage.output_tokens,
            "cache_read": response.usage.cache_read_tokens,
            "cache_write": response.usage.cache_write_tokens,
            "reasoning": response.usage.reasoning_tokens,
        },
        "attempts": response.attempts,
    }
