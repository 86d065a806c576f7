"""Key names and the one line of a configuration problem (no cattrs converter here).

:func:`problems` walks a cattrs error tree (class, mapping and array errors, each
inner error carrying a note naming its attribute, key or index) down to its leaves and
turns each into a :class:`Problem`: the key path and ``expected ..., got ...`` — the
value hidden when the path is a secret's.
"""

from __future__ import annotations

import datetime
import difflib
import json
import re
from collections.abc import Sequence

import attrs
from cattrs.errors import (
    AttributeValidationNote,
    BaseValidationError,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationNote,
)

from ._schema import Settings

__all__ = [
    "Path",
    "Problem",
    "closest",
    "describe",
    "format_path",
    "is_secret",
    "problems",
    "toml_keys",
]

Path = tuple[str | int, ...]

#: TOML keys that differ from the attribute's name.
RENAMED: dict[type, dict[str, str]] = {Settings: {"mcp_servers": "mcpServers"}}
#: Attributes that are not keys of the file.
OMITTED: dict[type, frozenset[str]] = {Settings: frozenset({"source"})}
_SECRET_KEYS = frozenset({"api_key", "headers", "env", "oauth"})


def toml_keys(cls: type) -> dict[str, str]:
    """The file's keys of attrs class ``cls``: TOML key -> attribute name."""
    renamed = RENAMED.get(cls, {})
    omitted = OMITTED.get(cls, frozenset())
    return {renamed.get(a.name, a.name): a.name for a in attrs.fields(cls) if a.name not in omitted}


def describe(value: object, *, secret: bool = False) -> str:
    """``str "ten"``: the TOML type of ``value`` and, unless secret, a short rendering."""
    if isinstance(value, bool):
        kind = "bool"
    elif isinstance(value, int):
        kind = "int"
    elif isinstance(value, float):
        kind = "float"
    elif isinstance(value, str):
        kind = "str"
    elif isinstance(value, list):
        kind = "array"
    elif isinstance(value, dict):
        kind = "table"
    elif isinstance(value, datetime.datetime | datetime.date | datetime.time):
        kind = "datetime"
    else:
        kind = type(value).__name__
    if secret:
        return f"{kind} (value hidden)"
    if isinstance(value, dict | list):
        return kind
    if isinstance(value, str):
        shown = json.dumps(value if len(value) <= 40 else value[:40] + "…", ensure_ascii=False)
    elif isinstance(value, bool):
        shown = "true" if value else "false"
    else:
        shown = str(value)
    return f"{kind} {shown}"


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def format_path(path: Path) -> str:
    """``agents.helper.tools[2]``; keys that are not bare TOML keys are quoted."""
    out = ""
    for segment in path:
        if isinstance(segment, int):
            out += f"[{segment}]"
        else:
            key = segment if _BARE_KEY.fullmatch(segment) else json.dumps(segment)
            out += f".{key}" if out else key
    return out


def is_secret(path: Path) -> bool:
    """Whether the value at ``path`` (or below it) is a secret."""
    return len(path) >= 3 and path[0] in ("providers", "mcpServers") and path[2] in _SECRET_KEYS


@attrs.frozen
class Problem:
    """One thing wrong: where, and what (the line's text after the path)."""

    path: Path
    text: str


def _value_at(data: object, path: Path) -> object:
    for segment in path:
        if isinstance(data, dict) and isinstance(segment, str):
            data = data.get(segment)
        elif isinstance(data, list) and isinstance(segment, int) and 0 <= segment < len(data):
            data = data[segment]
        else:
            return None
    return data


def _segment(note: str, cls: type | None) -> str | int | None:
    if isinstance(note, AttributeValidationNote):
        keys = {v: k for k, v in toml_keys(cls).items()} if cls and attrs.has(cls) else {}
        return keys.get(note.name, note.name)
    if isinstance(note, IterableValidationNote):
        index = note.index
        return index if isinstance(index, int | str) else str(index)
    return None


def closest(word: str, choices: Sequence[str]) -> str:
    """The text of an unknown key's problem, with a did-you-mean when one is close."""
    match = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if match:
        return f"unknown key; did you mean {match[0]}?"
    return "unknown key; expected one of " + ", ".join(sorted(choices))


_MUST_BE = re.compile(r"^(\w+) must be (.*?)(?:, not .*)?$", re.DOTALL)


def _validator_problem(exc: Exception, cls: type, path: Path, data: object) -> Problem:
    match = _MUST_BE.match(str(exc))
    names = toml_keys(cls)
    by_name = {v: k for k, v in names.items()}
    if match and match.group(1) in by_name:
        where = (*path, by_name[match.group(1)])
        value = _value_at(data, where)
        return Problem(
            where, f"expected {match.group(2)}, got {describe(value, secret=is_secret(where))}"
        )
    return Problem(path, f"invalid value: {exc}")


def problems(exc: BaseException, path: Path, data: object) -> list[Problem]:
    """Every problem under a cattrs error, in the order cattrs found them."""
    mismatch = getattr(exc, "config_mismatch", None)
    if mismatch is not None:
        expected, value, sub = mismatch
        where = (*path, *sub)
        actual = value if not sub else _value_at(data, where)
        if value is None and sub and actual is None:
            return [Problem(where, f"missing key, expected {expected}")]
        if value is None and not sub:
            return [Problem(where, f"expected {expected}")]
        shown = describe(actual, secret=is_secret(where))
        return [Problem(where, f"expected {expected}, got {shown}")]
    if isinstance(exc, ForbiddenExtraKeysError):
        keys = list(toml_keys(exc.cl)) if attrs.has(exc.cl) else []
        return [Problem((*path, key), closest(key, keys)) for key in sorted(exc.extra_fields)]
    if isinstance(exc, BaseValidationError):
        owner = exc.cl if isinstance(exc, ClassValidationError) else None
        found: list[Problem] = []
        for inner in exc.exceptions:
            notes = [n for n in getattr(inner, "__notes__", []) if _segment(n, owner) is not None]
            if notes:
                segment = _segment(notes[-1], owner)
                assert segment is not None
                found += problems(inner, (*path, segment), data)
            elif owner is not None and isinstance(inner, ValueError | TypeError):
                found.append(_validator_problem(inner, owner, path, data))
            else:
                found += problems(inner, path, data)
        return found
    if isinstance(exc, KeyError):
        return [Problem(path, "missing required key")]
    return [Problem(path, f"invalid value: {exc}")]
