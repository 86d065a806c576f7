"""Environment variables over the file's data, before it is structured.

Applied in this order, each over what came before:

1. ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` (either one) configure the provider
   ``openai`` (kind ``openai``), creating it if the file has none; ``OPENAI_MODEL`` sets
   its model. ``ANTHROPIC_API_KEY`` configures ``anthropic`` (kind ``anthropic``) the same
   way, with ``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_MODEL``.
2. ``AGCORE_INSTRUCTIONS`` sets the default agent's ``instructions``.
3. ``AGCORE_<KEY>__<KEY>...`` sets one key, the path's parts joined by double
   underscores and matched without regard to case: ``AGCORE_HOST__MAX_SESSIONS=100``,
   ``AGCORE_AGENTS__HELPER__MODEL=gpt-4o``, ``AGCORE_MCPSERVERS__FS__ENV__TOKEN=...``.
   A value for a string key is taken as it is; any other value is read as a TOML value
   (``100``, ``true``, ``["a", "b"]``, ``inf``). Top-level keys work without a double
   underscore (``AGCORE_DEFAULT_AGENT=helper``); other ``AGCORE_`` variables without one
   (``AGCORE_SERVE_TOKEN``) are not configuration and are left alone.

Every key set is recorded with its variable, so an error names the variable, not the file.
"""

from __future__ import annotations

import tomllib
import typing
from collections.abc import Mapping
from typing import Any

import attrs

from ._errors import ConfigError
from ._problems import Path, closest, format_path, toml_keys
from ._schema import Settings

__all__ = ["ENV_PREFIX", "apply_env"]

ENV_PREFIX = "AGCORE_"
_TOP_SCALARS = ("default_agent", "default_provider")
_PROVIDER_VARS = {
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL"),
}


def apply_env(data: dict[str, Any], env: Mapping[str, str]) -> dict[Path, str]:
    """Apply ``env`` to ``data`` in place; the paths set, each with its variable."""
    origin: dict[Path, str] = {}
    _providers(data, env, origin)
    instructions = env.get(f"{ENV_PREFIX}INSTRUCTIONS")
    if instructions:
        agent = _default_agent(data)
        _set(data, ("agents", agent, "instructions"), instructions, origin, "AGCORE_INSTRUCTIONS")
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX):
            continue
        parts = name[len(ENV_PREFIX) :].split("__")
        if len(parts) == 1 and parts[0].lower() not in _TOP_SCALARS:
            continue
        path, kind = _resolve(data, parts, name)
        _set(data, path, _value(env[name], kind), origin, name)
    return origin


def _providers(data: dict[str, Any], env: Mapping[str, str], origin: dict[Path, str]) -> None:
    for kind, (key_var, url_var, model_var) in _PROVIDER_VARS.items():
        key, url, model = env.get(key_var), env.get(url_var), env.get(model_var)
        creates = bool(key) or (kind == "openai" and bool(url))
        providers = data.get("providers")
        existing = providers.get(kind) if isinstance(providers, dict) else None
        if not creates and existing is None:
            continue
        given = [
            (v, f, x)
            for v, f, x in (
                (key_var, "api_key", key),
                (url_var, "base_url", url),
                (model_var, "model", model),
            )
            if x
        ]
        if not given:
            continue
        if existing is not None and not (
            isinstance(existing, dict) and existing.get("kind") == kind
        ):
            raise ConfigError(
                given[0][0], f"providers.{kind}.kind", f"expected {kind!r} to apply {given[0][0]}"
            )
        for var, field, value in given:
            _set(data, ("providers", kind, field), value, origin, var)
        if existing is None:
            _set(data, ("providers", kind, "kind"), kind, origin, given[0][0])


def _default_agent(data: dict[str, Any]) -> str:
    named = data.get("default_agent")
    if isinstance(named, str) and named:
        return named
    agents = data.get("agents")
    if isinstance(agents, dict) and agents:
        return str(next(iter(agents)))
    return "assistant"


def _set(
    data: dict[str, Any], path: Path, value: object, origin: dict[Path, str], var: str
) -> None:
    node = data
    for segment in path[:-1]:
        child = node.get(str(segment))
        if not isinstance(child, dict):
            child = node[str(segment)] = {}
        node = child
    node[str(path[-1])] = value
    origin[path] = var


def _fields(t: Any) -> dict[str, Any]:
    """TOML key -> type, for an attrs class or a union of them (else empty)."""
    members = typing.get_args(t) if typing.get_origin(t) in (typing.Union, _UnionType) else (t,)
    keys: dict[str, Any] = {}
    for member in members:
        if isinstance(member, type) and attrs.has(member):
            hints = typing.get_type_hints(member)
            for key, name in toml_keys(member).items():
                keys.setdefault(key, hints[name])
    return keys


_UnionType = type(int | str)


def _mapping_item(t: Any) -> Any | None:
    origin = typing.get_origin(t)
    if origin is not None and getattr(origin, "__name__", "") in ("dict", "Mapping"):
        return typing.get_args(t)[1]
    return None


def _resolve(data: dict[str, Any], parts: list[str], var: str) -> tuple[Path, Any]:
    """The path ``parts`` name, matched without case, and the type of its value."""
    path: Path = ()
    t: Any = Settings
    node: Any = data
    for part in parts:
        if not part:
            raise ConfigError(var, format_path(path), "expected a key between double underscores")
        item = _mapping_item(t)
        fields = _fields(t)
        if item is not None:
            existing = (
                [k for k in node if k.lower() == part.lower()] if isinstance(node, dict) else []
            )
            named = bool(_fields(item))
            key = existing[0] if existing else part.lower() if named else part
            t = item
        elif fields:
            matches = [k for k in fields if k.lower() == part.lower()]
            if not matches:
                where = format_path((*path, part.lower()))
                raise ConfigError(var, where, closest(part.lower(), list(fields)))
            key = matches[0]
            t = fields[key]
        else:
            raise ConfigError(var, format_path(path), "expected no key below it")
        path = (*path, key)
        node = node.get(key) if isinstance(node, dict) else None
    return path, t


def _value(raw: str, t: Any) -> object:
    if t is str or t == (str | None):
        return raw
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        return raw
