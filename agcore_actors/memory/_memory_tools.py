"""The ``remember`` and ``recall`` tools: the model keeps and finds long-term memories.

As with :mod:`~agcore_actors.memory._tool` (``retrieve``), the memory layer ships the
definitions and runners and the agent layer wraps them into tools; the scope (whose
memories: a user's, an agent's) is decided by the application, never by the model, so it
is an argument of the runners and not a parameter the model sees.

Bad arguments raise :class:`InvalidInput` (a tool error shown to the model).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ..actor import ActorRef
from ._errors import InvalidInput
from ._memories import MAX_MEMORY_CHARS
from .messages import MemoryMsg, Recall, Remember

REMEMBER_TOOL_NAME, RECALL_TOOL_NAME = "remember", "recall"
MAX_RECALL_RESULTS = 20

REMEMBER_TOOL: dict[str, Any] = {
    "name": REMEMBER_TOOL_NAME,
    "description": (
        "Save a fact worth knowing in later conversations (a preference, a decision, a "
        "detail about the user or the task). Write one self-contained sentence."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "text": {
                "type": "string",
                "description": "The fact to keep, as one self-contained sentence.",
                "minLength": 1,
                "maxLength": MAX_MEMORY_CHARS,
            },
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Optional keywords that help find it later.",
            },
        },
        "required": ["text"],
        "additionalProperties": False,
    },
}

RECALL_TOOL: dict[str, Any] = {
    "name": RECALL_TOOL_NAME,
    "description": (
        "Search the facts saved in earlier conversations. Returns the best matches with "
        "a relevance score in [0, 1]."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What to look for, in keywords or a short question.",
                "minLength": 1,
            },
            "max_results": {
                "type": "integer",
                "description": "How many facts to return at most.",
                "minimum": 1,
                "maximum": MAX_RECALL_RESULTS,
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}


def _object(arguments: object, tool: str, allowed: set[str]) -> Mapping[str, Any]:
    if not isinstance(arguments, Mapping):
        raise InvalidInput(f"{tool}: arguments must be a JSON object")
    extra = set(arguments) - allowed
    if extra:
        raise InvalidInput(f"{tool}: unexpected argument(s) {sorted(extra)}")
    return arguments


def parse_remember_arguments(scope: str, arguments: object) -> Remember:
    """Validate the model's arguments against :data:`REMEMBER_TOOL`."""
    args = _object(arguments, REMEMBER_TOOL_NAME, {"text", "tags"})
    text = args.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("remember: 'text' must be a non-empty string")
    if len(text) > MAX_MEMORY_CHARS:
        raise InvalidInput(f"remember: 'text' holds at most {MAX_MEMORY_CHARS} characters")
    tags = args.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidInput("remember: 'tags' must be a list of strings")
    return Remember(scope=scope, text=text, tags=tags)


def parse_recall_arguments(scope: str, arguments: object) -> Recall:
    """Validate the model's arguments against :data:`RECALL_TOOL`."""
    args = _object(arguments, RECALL_TOOL_NAME, {"query", "max_results"})
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("recall: 'query' must be a non-empty string")
    n = args.get("max_results", 5)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_RECALL_RESULTS:
        raise InvalidInput(f"recall: 'max_results' must be an integer in 1..{MAX_RECALL_RESULTS}")
    return Recall(scope=scope, query=query, max_results=n)


async def run_remember_tool(
    memory: ActorRef[MemoryMsg], scope: str, arguments: object, *, timeout: float = 10.0
) -> str:
    """Keep the memory; the tool's result names it."""
    item = await memory.ask(parse_remember_arguments(scope, arguments), timeout=timeout)
    return msgspec.json.encode({"remembered": item.id}).decode()


async def run_recall_tool(
    memory: ActorRef[MemoryMsg], scope: str, arguments: object, *, timeout: float = 10.0
) -> str:
    """Recall; the matches as JSON text (text, tags, score)."""
    request = parse_recall_arguments(scope, arguments)
    found = await memory.ask(request, timeout=timeout)
    results = [{"text": m.text, "tags": m.tags, "score": m.score} for m in found.memories]
    return msgspec.json.encode({"query": request.query, "results": results}).decode()
