"""TOML data into :class:`Settings` with cattrs, every failure flattened into one line.

The converter is strict where cattrs is lenient: a string is never an int, an int never a
string, ``"false"`` never a bool; unknown keys are refused. A failure raises
:class:`ConfigError` naming the first bad key (``(and N more)`` when there are others):
its path, what was expected and what was found — the value hidden for secret keys.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Literal

import cattrs
from cattrs.errors import IterableValidationNote
from cattrs.gen import make_dict_structure_fn, override

from ._errors import ConfigError
from ._problems import OMITTED, RENAMED, Path, Problem, format_path, problems
from ._schema import (
    AgentSettings,
    AnthropicProviderSettings,
    ClusterSettings,
    HostSettings,
    HttpServerSettings,
    LocalProviderSettings,
    LoggingSettings,
    McpServerSettings,
    OpenAIProviderSettings,
    PriceSettings,
    ProviderSettings,
    RetrySettings,
    Settings,
    StdioServerSettings,
    StoreSettings,
    TelemetrySettings,
    TimeoutSettings,
)

__all__ = ["structure_settings"]

_PROVIDERS: dict[str, type] = {
    "openai": OpenAIProviderSettings,
    "anthropic": AnthropicProviderSettings,
    "local": LocalProviderSettings,
}
#: Every class of the file, each a table (:class:`Settings`, which holds the others,
#: last: a generated hook looks up its fields' hooks when it is made).
_CLASSES: tuple[type, ...] = (
    OpenAIProviderSettings,
    AnthropicProviderSettings,
    LocalProviderSettings,
    PriceSettings,
    AgentSettings,
    StdioServerSettings,
    HttpServerSettings,
    StoreSettings,
    HostSettings,
    ClusterSettings,
    RetrySettings,
    TimeoutSettings,
    LoggingSettings,
    TelemetrySettings,
)


def _mismatch(expected: str, value: object, sub: Path = ()) -> ValueError:
    """A value of the wrong type or outside a fixed set; ``sub`` is a path below it.

    A plain ValueError carrying the details, never an error of its own class: it never
    leaves this module (:func:`problems` turns it into a line).
    """
    error = ValueError(expected)
    error.config_mismatch = (expected, value, sub)  # type: ignore[attr-defined]
    return error


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
    overrides = {name: override(rename=key) for name, key in RENAMED.get(cls, {}).items()}
    overrides.update({name: override(omit=True) for name in OMITTED.get(cls, ())})
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
