"""An MCP server's elicitation answered at the terminal, field by field.

:func:`prompting_elicitor` shows ``SERVER asks: MESSAGE``, asks ``answer? [Y/n]`` (``n``
declines), then asks each property of the requested schema in order, reading one line
each. :func:`parse_field` turns a line into the property's JSON type (string, integer,
number, boolean, or one of an ``enum``); a line that does not parse is asked again, at
most :data:`ATTEMPTS` times, then the elicitation is cancelled. An empty line skips an
optional field. End of input (or Ctrl-C, which cancels the asking task) cancels.

Guarantees: an accepted answer holds only the schema's properties, each of its declared
type, and every required one; anything else is ``decline`` or ``cancel`` with no content.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from ..agent import messages as am

__all__ = ["ATTEMPTS", "Elicitor", "fields_of", "parse_field", "prompting_elicitor"]

#: Tries per field before the elicitation is cancelled.
ATTEMPTS = 3

#: Answers an elicitation: (action, content).
Elicitor = Callable[
    [am.ElicitationRequested], Awaitable[tuple[am.ElicitationAction, "dict[str, object] | None"]]
]

_TRUE = ("y", "yes", "true", "1")
_FALSE = ("n", "no", "false", "0")


def fields_of(schema: str) -> list[tuple[str, dict[str, Any], bool]]:
    """``(name, property schema, required)`` of each property of a JSON schema text, in
    the schema's order; [] for a schema that is not an object with properties."""
    try:
        decoded = json.loads(schema or "{}")
    except ValueError:
        return []
    if not isinstance(decoded, dict) or not isinstance(decoded.get("properties"), dict):
        return []
    required = decoded.get("required")
    needed = set(required) if isinstance(required, list) else set()
    return [
        (name, prop if isinstance(prop, dict) else {}, name in needed)
        for name, prop in decoded["properties"].items()
    ]


def parse_field(prop: dict[str, Any], line: str) -> object:
    """The value of ``line`` for a property of schema ``prop``; ValueError when it is
    not one (its message says what is expected)."""
    text = line.strip()
    enum = prop.get("enum")
    if isinstance(enum, list) and enum:
        if text not in [str(option) for option in enum]:
            raise ValueError(f"one of: {', '.join(str(option) for option in enum)}")
        return next(option for option in enum if str(option) == text)
    kind = prop.get("type", "string")
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError("a whole number") from None
    if kind == "number":
        try:
            return float(text)
        except ValueError:
            raise ValueError("a number") from None
    if kind == "boolean":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError("y or n")
    return line


def _label(name: str, prop: dict[str, Any], required: bool) -> str:
    title = prop.get("title") or prop.get("description") or name
    hint = prop.get("type", "string")
    if isinstance(prop.get("enum"), list):
        hint = "/".join(str(option) for option in prop["enum"])
    return f"  {title} ({hint}{'' if required else ', optional'}): "


def prompting_elicitor(
    readline: Callable[[], Awaitable[str | None]],
    ask: Callable[[str], None],
    say: Callable[[str], None],
) -> Elicitor:
    """An elicitor that asks on the terminal (``ask`` shows a question without a newline,
    ``say`` a line) and reads answers with ``readline`` (None: end of input)."""

    async def elicit(
        event: am.ElicitationRequested,
    ) -> tuple[am.ElicitationAction, dict[str, object] | None]:
        say(f"{event.server} asks: {event.message}")
        ask("answer? [Y/n] ")
        line = await readline()
        if line is None:
            return "cancel", None
        if line.strip().lower() in ("n", "no"):
            return "decline", None
        content: dict[str, object] = {}
        for name, prop, required in fields_of(event.schema):
            for _ in range(ATTEMPTS):
                ask(_label(name, prop, required))
                line = await readline()
                if line is None:
                    return "cancel", None
                if not line.strip() and not required:
                    break
                try:
                    content[name] = parse_field(prop, line)
                    break
                except ValueError as exc:
                    say(f"  expected {exc}")
            else:
                say("  no valid answer: cancelled")
                return "cancel", None
        return "accept", content

    return elicit
