"""A tool's ``structuredContent`` checked against its ``outputSchema`` (JSON Schema).

:func:`violation` checks the keywords tools' output schemas use: ``type`` (one or a
list), ``properties``, ``required``, ``additionalProperties`` (false or a schema),
``items`` (one schema), ``prefixItems``, ``enum``, ``const``, ``allOf``, ``anyOf``,
``oneOf``, ``not``, ``minimum``/``maximum`` (and the exclusive ones), ``minLength``/
``maxLength``, ``minItems``/``maxItems``, and local ``$ref``s (``#/$defs/...``,
``#/definitions/...``). Any other keyword (``pattern``, ``format``, ...) is not checked.

Guarantee: a value a full JSON Schema validator (draft 2020-12) accepts is never refused;
within the keywords above the answers agree (``tests/mcp/test_schema.py`` checks both
against the ``jsonschema`` package). Pure: no I/O, no trio; recursion is bounded
(:data:`MAX_DEPTH`, past which a value is accepted as it stands).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["MAX_DEPTH", "violation"]

#: Nesting (of the value and of ``$ref``s) checked at most.
MAX_DEPTH = 64

_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and math.isfinite(v) and v.is_integer())
    ),
}


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but True != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and isinstance(a, int | float) == isinstance(b, int | float)


def _resolve(root: dict[str, Any], ref: str) -> Any:
    if not ref.startswith("#"):
        return None
    node: Any = root
    for part in ref[1:].split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def violation(schema: Any, value: Any) -> str | None:
    """Where and how ``value`` breaks ``schema`` (``"$.a[0]: expected integer"``), or
    None when it fits (see the module docstring for what is checked)."""
    if not isinstance(schema, dict):
        return None
    return _check(schema, schema, value, "$", 0)


def _check(root: dict[str, Any], schema: Any, value: Any, at: str, depth: int) -> str | None:
    if schema is False:
        return f"{at}: no value is allowed here"
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str):
        found = _check(root, _resolve(root, ref), value, at, depth + 1)
        if found is not None:
            return found
    return _keywords(root, schema, value, at, depth)


def _keywords(
    root: dict[str, Any], schema: dict[str, Any], value: Any, at: str, depth: int
) -> str | None:
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else None
    if kinds is not None:
        known = [k for k in kinds if k in _TYPES]
        if len(known) == len(kinds) and not any(_TYPES[k](value) for k in known):
            return f"{at}: expected {' or '.join(known)}"
    enum = schema.get("enum")
    if isinstance(enum, list) and not any(_equal(value, option) for option in enum):
        return f"{at}: not one of the allowed values"
    if "const" in schema and not _equal(value, schema["const"]):
        return f"{at}: not the required value"
    for found in _combinators(root, schema, value, at, depth):
        return found
    if isinstance(value, dict):
        return _object(root, schema, value, at, depth)
    if isinstance(value, list):
        return _array(root, schema, value, at, depth)
    if isinstance(value, str):
        return _bounds(schema, len(value), "minLength", "maxLength", at, "characters")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _number(schema, value, at)
    return None


def _combinators(
    root: dict[str, Any], schema: dict[str, Any], value: Any, at: str, depth: int
) -> list[str]:
    def fits(sub: Any) -> bool:
        return _check(root, sub, value, at, depth + 1) is None

    for sub in schema.get("allOf") or []:
        found = _check(root, sub, value, at, depth + 1)
        if found is not None:
            return [found]
    any_of = schema.get("anyOf")
    if isinstance(any_of, list) and any_of and not any(fits(sub) for sub in any_of):
        return [f"{at}: matches none of anyOf"]
    one_of = schema.get("oneOf")
    if isinstance(one_of, list) and one_of and sum(fits(sub) for sub in one_of) != 1:
        return [f"{at}: does not match exactly one of oneOf"]
    if "not" in schema and fits(schema["not"]):
        return [f"{at}: matches a schema it must not"]
    return []


def _object(
    root: dict[str, Any], schema: dict[str, Any], value: dict[str, Any], at: str, depth: int
) -> str | None:
    required = schema.get("required")
    for name in required if isinstance(required, list) else []:
        if name not in value:
            return f"{at}: missing required property {name!r}"
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        where = f"{at}.{name}"
        if name in props:
            found = _check(root, props[name], item, where, depth + 1)
        elif extra is False:
            found = f"{at}: unexpected property {name!r}"
        else:
            found = _check(root, extra, item, where, depth + 1)
        if found is not None:
            return found
    return None


def _array(
    root: dict[str, Any], schema: dict[str, Any], value: list[Any], at: str, depth: int
) -> str | None:
    found = _bounds(schema, len(value), "minItems", "maxItems", at, "items")
    if found is not None:
        return found
    prefix = schema.get("prefixItems")
    prefix = prefix if isinstance(prefix, list) else []
    items = schema.get("items")
    for i, item in enumerate(value):
        sub = prefix[i] if i < len(prefix) else items
        found = _check(root, sub, item, f"{at}[{i}]", depth + 1)
        if found is not None:
            return found
    return None


def _bounds(
    schema: dict[str, Any], size: int, low: str, high: str, at: str, what: str
) -> str | None:
    least, most = schema.get(low), schema.get(high)
    if isinstance(least, int) and size < least:
        return f"{at}: fewer than {least} {what}"
    if isinstance(most, int) and size > most:
        return f"{at}: more than {most} {what}"
    return None


def _number(schema: dict[str, Any], value: float, at: str) -> str | None:
    def bound(key: str) -> float | None:
        found = schema.get(key)
        return found if isinstance(found, int | float) and not isinstance(found, bool) else None

    low, high = bound("minimum"), bound("maximum")
    above, below = bound("exclusiveMinimum"), bound("exclusiveMaximum")
    if low is not None and value < low:
        return f"{at}: below the minimum {low:g}"
    if high is not None and value > high:
        return f"{at}: above the maximum {high:g}"
    if above is not None and value <= above:
        return f"{at}: not above the exclusive minimum {above:g}"
    if below is not None and value >= below:
        return f"{at}: not below the exclusive maximum {below:g}"
    return None
