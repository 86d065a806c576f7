"""TOML data into :class:`Settings` with cattrs, every failure flattened into one line.

The converter is strict where cattrs is lenient: a string is never an int, an int never a
string, ``"false"`` never a bool; unknown keys are refused. A failure raises
:class:`ConfigError` naming the first bad key (``(and N more)`` when there are others):
its path, what was expected and what was found — the value hidden for secret keys.
"""

from __future__ import annotations

import datetime
import difflib
import json
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Literal

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    BaseValidationError,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn, override

from ._errors import ConfigError
from ._schema import (
    AgentSettings,
    AnthropicProviderSettings,
    HostSettings,
    HttpServerSettings,
    LocalProviderSettings,
    LoggingSettings,
    McpServerSettings,
    OpenAIProviderSettings,
    ProviderSettings,
    RetrySettings,
    Settings,
    StdioServerSettings,
    StoreSettings,
    TimeoutSettings,
)

__all__ = ["describe", "structure_settings", "toml_keys"]

Path = tuple[str | int, ...]

#: TOML keys that differ from the attribute's name.
_RENAMED: dict[type, dict[str, str]] = {Settings: {"mcp_servers": "mcpServers"}}
#: Attributes that are not keys of the file.
_OMITTED: dict[type, frozenset[str]] = {Settings: frozenset({"source"})}
_PROVIDERS: dict[str, type] = {
    "openai": OpenAIProviderSettings,
    "anthropic": AnthropicProviderSettings,
    "local": LocalProviderSettings,
}
_SECRET_KEYS = frozenset({"api_key", "headers", "env"})
#: Every class of the file, each a table (:class:`Settings`, which holds the others,
#: last: a generated hook looks up its fields' hooks when it is made).
_CLASSES: tuple[type, ...] = (
    OpenAIProviderSettings,
    AnthropicProviderSettings,
    LocalProviderSettings,
    AgentSettings,
    StdioServerSettings,
    HttpServerSettings,
    StoreSettings,
    HostSettings,
    RetrySettings,
    TimeoutSettings,
    LoggingSettings,
)


def _mismatch(expected: str, value: object, sub: Path = ()) -> ValueError:
    """A value of the wrong type or outside a fixed set; ``sub`` is a path below it.

    A plain ValueError carrying the details, never an error of its own class: it never
    leaves this module (:func:`problems` turns it into a line).
    """
    error = ValueError(expected)
    error.config_mismatch = (expected, value, sub)  # type: ignore[attr-defined]
    return error


def toml_keys(cls: type) -> dict[str, str]:
    """The file's keys of attrs class ``cls``: TOML key -> attribute name."""
    renamed = _RENAMED.get(cls, {})
    omitted = _OMITTED.get(cls, frozenset())
    return {renamed.get(a.name, a.name): a.name for a in attrs.fields(cls) if a.name not in omitted}


# -- strict hooks -------------------------------------------------------------------------------


def _strict_str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise _mismatch("str", value)
    return value


def _strict_int(value: Any, _: type) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _mismatch("int", value)
    return value


def _strict_float(value: Any, _: type) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise _mismatch("float", value)
    return float(value)


def _strict_bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise _mismatch("bool", value)
    return value


def _is_literal(t: Any) -> bool:
    return typing.get_origin(t) is Literal


def _literal_hook(t: Any) -> Callable[[Any, Any], Any]:
    choices = typing.get_args(t)
    expected = "one of " + ", ".join(json.dumps(c) for c in choices)

    def structure(value: Any, _: Any) -> Any:
        if isinstance(value, bool) or value not in choices:
            raise _mismatch(expected, value)
        return value

    return structure


def _is_mapping(t: Any) -> bool:
    return typing.get_origin(t) in (dict, Mapping)


def _is_tuple(t: Any) -> bool:
    args = typing.get_args(t)
    return typing.get_origin(t) is tuple and len(args) == 2 and args[1] is Ellipsis


def _mapping_hook(converter: cattrs.Converter, t: Any) -> Callable[[Any, Any], Any]:
    _, item = typing.get_args(t)

    def structure(value: Any, _: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _mismatch("table", value)
        result, errors = {}, []
        for key, element in value.items():
            try:
                result[key] = converter.structure(element, item)
            except Exception as exc:
                exc.add_note(IterableValidationNote(f"@ key {key!r}", key, item))
                errors.append(exc)
        if errors:
            raise cattrs.IterableValidationError(f"While structuring {t}", errors, t)
        return result

    return structure


def _tuple_hook(converter: cattrs.Converter, t: Any) -> Callable[[Any, Any], Any]:
    item, _ = typing.get_args(t)

    def structure(value: Any, _: Any) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise _mismatch("array", value)
        result, errors = [], []
        for index, element in enumerate(value):
            try:
                result.append(converter.structure(element, item))
            except Exception as exc:
                exc.add_note(IterableValidationNote(f"@ index {index}", index, item))
                errors.append(exc)
        if errors:
            raise cattrs.IterableValidationError(f"While structuring {t}", errors, t)
        return tuple(result)

    return structure


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    converter.register_structure_hook(str, _strict_str)
    converter.register_structure_hook(int, _strict_int)
    converter.register_structure_hook(float, _strict_float)
    converter.register_structure_hook(bool, _strict_bool)
    converter.register_structure_hook(Any, _anything)
    converter.register_structure_hook_factory(_is_literal, _literal_hook)
    converter.register_structure_hook_factory(_is_mapping, partial(_mapping_hook, converter))
    converter.register_structure_hook_factory(_is_tuple, partial(_tuple_hook, converter))
    for cls in _CLASSES:
        _register_class(converter, cls)
    converter.register_structure_hook(ProviderSettings, _provider_hook(converter))
    converter.register_structure_hook(McpServerSettings, _server_hook(converter))
    _register_class(converter, Settings)
    return converter


def _anything(value: Any, _: Any) -> Any:
    return value


def _tables(base: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def structure(value: Any, t: Any) -> Any:
        if not isinstance(value, dict):
            raise _mismatch("table", value)
        return base(value, t)

    return structure


def _register_class(converter: cattrs.Converter, cls: type) -> None:
    overrides = {name: override(rename=key) for name, key in _RENAMED.get(cls, {}).items()}
    overrides.update({name: override(omit=True) for name in _OMITTED.get(cls, ())})
    base: Callable[[Any, Any], Any] = make_dict_structure_fn(
        cls,
        converter,
        **overrides,  # type: ignore[arg-type]
    )
    converter.register_structure_hook(cls, _tables(base))


def _provider_hook(converter: cattrs.Converter) -> Callable[[Any, Any], Any]:
    expected = "one of " + ", ".join(json.dumps(k) for k in _PROVIDERS)

    def structure(value: Any, _: Any) -> Any:
        if not isinstance(value, dict):
            raise _mismatch("table", value)
        if "kind" not in value:
            raise _mismatch(expected, None, ("kind",))
        cls = _PROVIDERS.get(value["kind"]) if isinstance(value["kind"], str) else None
        if cls is None:
            raise _mismatch(expected, value["kind"], ("kind",))
        return converter.structure(value, cls)

    return structure


def _server_hook(converter: cattrs.Converter) -> Callable[[Any, Any], Any]:
    def structure(value: Any, _: Any) -> Any:
        if not isinstance(value, dict):
            raise _mismatch("table", value)
        if ("command" in value) == ("url" in value):
            raise _mismatch("exactly one of command (stdio) or url (HTTP)", None, ())
        cls = StdioServerSettings if "command" in value else HttpServerSettings
        return converter.structure(value, cls)

    return structure


_CONVERTER = _make_converter()


# -- errors in one line -----------------------------------------------------------------------


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


def problems(
    exc: BaseException, path: Path, data: object, cls: type | None = None
) -> list[Problem]:
    """Every problem under a cattrs error, in the order cattrs found them."""
    mismatch = getattr(exc, "config_mismatch", None)
    if mismatch is not None:
        expected, value, sub = mismatch
        where = (*path, *sub)
        found = value if not sub else _value_at(data, where)
        if value is None and sub and found is None:
            return [Problem(where, f"missing key, expected {expected}")]
        if value is None and not sub:
            return [Problem(where, f"expected {expected}")]
        shown = describe(found, secret=is_secret(where))
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
                found += problems(inner, (*path, segment), data, None)
            elif owner is not None and isinstance(inner, ValueError | TypeError):
                found.append(_validator_problem(inner, owner, path, data))
            else:
                found += problems(inner, path, data, None)
        return found
    if isinstance(exc, KeyError):
        return [Problem(path, "missing required key")]
    return [Problem(path, f"invalid value: {exc}")]


def structure_settings(data: dict[str, Any], source_of: Callable[[Path], str]) -> Settings:
    """``data`` (a parsed TOML document) as :class:`Settings`; :class:`ConfigError` if bad.

    ``source_of(path)`` names where the value at ``path`` came from (the file or an
    environment variable), for the error line.
    """
    try:
        settings: Settings = _CONVERTER.structure(data, Settings)
    except Exception as exc:
        found = problems(exc, (), data) or [Problem((), f"invalid: {exc}")]
        first = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise ConfigError(
            source_of(first.path), format_path(first.path), first.text + more
        ) from None
    return settings
