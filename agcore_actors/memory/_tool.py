"""The ``retrieve`` tool: lets the model search the knowledge pages itself.

A runtime with a retriever registers a tool named exactly ``"retrieve"``. The
tools layer is built beside this one, so the memory layer ships the two halves
a registration needs and nothing that imports the tools layer:

- :data:`RETRIEVE_TOOL` — the definition: ``name``, ``description`` and a
  JSON-schema ``parameters`` object (``query`` required, ``max_results``
  optional), the shape an OpenAI-style function tool takes;
- :func:`run_retrieve_tool` — validates the model's arguments, asks the
  MemoryStore actor (:class:`Retrieve`, with a deadline) and returns the
  result as JSON text for the tool message.

The agent layer, when its runtime is configured with a MemoryStore and a
retriever, wraps these in a function tool, e.g.::

    registry.register(FunctionTool(
        name=RETRIEVE_TOOL["name"],
        description=RETRIEVE_TOOL["description"],
        parameters=RETRIEVE_TOOL["parameters"],
        call=lambda args: run_retrieve_tool(memory_ref, args),
    ))

Bad arguments raise :class:`InvalidInput` (a tool error to report to the
model, not a crash).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ..actor import ActorRef
from ._errors import InvalidInput
from .messages import MemoryMsg, Retrieve

RETRIEVE_TOOL_NAME = "retrieve"
MAX_TOOL_RESULTS = 50
#: Page content beyond this many characters is cut in the tool result.
MAX_CONTENT_CHARS = 2000

RETRIEVE_TOOL: dict[str, Any] = {
    "name": RETRIEVE_TOOL_NAME,
    "description": (
        "Search the knowledge base for pages relevant to a query. Returns the best "
        "matching pages (title, summary, tags, content) with a relevance score in [0, 1]."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What to look for, in natural language or keywords.",
                "minLength": 1,
            },
            "max_results": {
                "type": "integer",
                "description": "How many pages to return at most.",
                "minimum": 1,
                "maximum": MAX_TOOL_RESULTS,
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}


def parse_retrieve_arguments(arguments: Mapping[str, Any]) -> Retrieve:
    """Validate the model's arguments against :data:`RETRIEVE_TOOL`."""
    if not isinstance(arguments, Mapping):
        raise InvalidInput("retrieve: arguments must be a JSON object")
    extra = set(arguments) - {"query", "max_results"}
    if extra:
        raise InvalidInput(f"retrieve: unexpected argument(s) {sorted(extra)}")
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("retrieve: 'query' must be a non-empty string")
    n = arguments.get("max_results")
    if n is not None and (
        isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_TOOL_RESULTS
    ):
        raise InvalidInput(f"retrieve: 'max_results' must be an integer in 1..{MAX_TOOL_RESULTS}")
    return Retrieve(query=query, max_results=n)


async def run_retrieve_tool(
    memory: ActorRef[MemoryMsg], arguments: Mapping[str, Any], *, timeout: float = 10.0
) -> str:
    """Run the tool: ask the MemoryStore and format the pages as JSON text."""
    result = await memory.ask(parse_retrieve_arguments(arguments), timeout=timeout)
    pages = [
        {
            "id": item.page.id,
            "title": item.page.title,
            "summary": item.page.summary,
            "tags": item.page.tags,
            "content": item.page.content[:MAX_CONTENT_CHARS],
            "score": round(item.score, 4),
        }
        for item in result.items
    ]
    return msgspec.json.encode({"query": result.query, "results": pages}).decode()
