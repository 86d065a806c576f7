"""Structured output in three modes, and how a turn picks one.

An agent with an ``output_type`` gets its answer as JSON decoded into that msgspec type,
asked for in one of three ways (``Agent.output_mode``; ``auto`` picks the mode the
provider of each call declares, :func:`~agcore_actors.llm.wire.output_mode_of`):

- ``json_schema``: the server's ``response_format`` (OpenAI and compatible servers);
- ``tool``: a ``final_result`` tool whose parameters are the schema, the model forced to
  call a tool; the call's arguments are the answer (Anthropic, which has no
  ``response_format``). The call is answered in the transcript like any other, and the
  other calls of that reply are answered "not run";
- ``prompted``: the schema in the system prompt, the answer's JSON taken from its text
  (a fenced block or the outermost ``{...}``) — for servers without either (the embedded
  llama.cpp model).

Every mode validates into the type; an answer that does not is re-asked up to
``output_retries`` times. Pure functions here; the turn applies them.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final, Literal

import msgspec

from ..llm import (
    FunctionDefinition,
    Message,
    OutputMode,
    SystemMessage,
    Tool,
    content_text,
)

__all__ = [
    "FINAL_TOOL",
    "AgentOutputMode",
    "extract_json",
    "final_tool",
    "prompted_messages",
    "schema_of",
]

AgentOutputMode = Literal["auto", "json_schema", "tool", "prompted"]

#: The tool a ``tool``-mode turn offers for its answer.
FINAL_TOOL: Final = "final_result"

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def schema_of(output_type: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON Schema of ``output_type``, inlined (no ``$ref``s: small models and the
    prompt read it better)."""
    schema: dict[str, Any] = msgspec.json.schema(output_type)
    defs = schema.pop("$defs", {})
    ref = schema.pop("$ref", None)
    if ref is not None:
        schema = {**defs[ref.rsplit("/", 1)[1]], **schema}
    schema.pop("title", None)
    return schema


def final_tool(output_type: type[msgspec.Struct]) -> Tool:
    """The ``final_result`` tool of ``tool`` mode."""
    return Tool(
        FunctionDefinition(
            FINAL_TOOL,
            f"Give your final answer ({output_type.__name__}) by calling this tool.",
            schema_of(output_type),
        )
    )


def prompted_messages(messages: list[Message], output_type: type[msgspec.Struct]) -> list[Message]:
    """``messages`` with the instruction of ``prompted`` mode at the end of the system
    prompt (a system prompt of its own when there is none)."""
    instruction = (
        "Answer with one JSON object only, no other text, that matches this JSON Schema:\n"
        + json.dumps(schema_of(output_type), separators=(",", ":"))
    )
    if messages and isinstance(messages[0], SystemMessage):
        first = content_text(messages[0].content)
        return [SystemMessage(f"{first}\n\n{instruction}"), *messages[1:]]
    return [SystemMessage(instruction), *messages]


def extract_json(text: str) -> str:
    """The JSON of a ``prompted`` answer: a fenced block's body, else the outermost
    ``{...}``, else the text as it is."""
    fenced = _FENCE.search(text)
    if fenced:
        return fenced.group(1).strip()
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        return text[start : end + 1]
    return text.strip()


def as_mode(value: str) -> OutputMode:
    """A declared mode as one of the three (anything else: ``json_schema``)."""
    if value == "tool":
        return "tool"
    return "prompted" if value == "prompted" else "json_schema"


def resolved(agent_mode: AgentOutputMode, provider_mode: OutputMode) -> OutputMode:
    """The mode of one call: the agent's, or the provider's when the agent says ``auto``."""
    return provider_mode if agent_mode == "auto" else agent_mode
