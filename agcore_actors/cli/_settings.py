"""What ``run`` and ``chat`` take from the configuration file, under their flags.

Precedence, highest first: the command's flags, the environment (``OPENAI_*`` /
``ANTHROPIC_*`` pick a provider as ``agcore-actors llm`` reads them; ``AGCORE_*`` set
keys of the file), the file (``--config FILE``, else
:func:`~agcore_actors.config.find_config`'s ``./agcore.toml`` or the user's file), the
built-in defaults. Pure functions of frozen data: nothing here starts anything.

- The model: a provider named by flags or environment becomes the default provider;
  else the file's ``default_provider``; ``--small`` / ``--model`` force the embedded
  model, whose settings are the file's ``local`` provider's (``model``, ``gguf``,
  ``n_ctx``, ``threads``, ``start_timeout``, ``cache_dir``, ``download``, ``python``)
  under those flags and ``AGCORE_ACTORS_LOCAL_PYTHON``.
- The agents: the file's ``[agents.*]``, each with its own limits; a file without agents
  gets the commands' own two, :data:`BUILTIN_AGENTS`.
- The store: ``--store``, else the file's ``[store] path``, else the per-user file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ..config import (
    LOCAL_NAME,
    AgentSettings,
    AnthropicProviderSettings,
    LocalProviderSettings,
    OpenAIProviderSettings,
    ProviderSettings,
    Settings,
    local_model_config,
)
from ..llm import AnthropicProvider, OpenAICompatibleProvider, Provider
from ..local import CatalogModel, GgufFile, LocalModelConfig, Progress
from ._errors import UsageError

if TYPE_CHECKING:
    from ._runtime import RuntimeOptions

__all__ = [
    "BUILTIN_AGENTS",
    "DEFAULT_INSTRUCTIONS",
    "CliSettings",
    "cli_settings",
    "default_store_path",
    "local_from",
    "pick_agent",
]

DEFAULT_INSTRUCTIONS = (
    "You are a helpful assistant in a terminal. When a tool can answer exactly (the time, "
    "arithmetic, the files of the working directory), call it; then answer briefly in "
    "plain text using its result."
)

#: The agents of a configuration without ``[agents]``: ``assistant`` (every tool) and
#: ``plain`` (no tools: answers from the model alone), with the commands' limits.
BUILTIN_AGENTS: Mapping[str, AgentSettings] = {
    "assistant": AgentSettings(
        instructions=DEFAULT_INSTRUCTIONS, max_tool_turns=6, max_repeated_calls=2
    ),
    "plain": AgentSettings(
        description="Answers from the model alone, without tools.",
        instructions="You are a helpful assistant. Answer briefly in plain text.",
        tools=(),
        max_tool_turns=6,
        max_repeated_calls=2,
    ),
}


def default_store_path(env: Mapping[str, str] | None = None) -> Path:
    """``$AGCORE_ACTORS_DATA/sessions.db``, else ``$XDG_DATA_HOME/agcore-actors/...``,
    else ``~/.local/share/agcore-actors/sessions.db``."""
    env = os.environ if env is None else env
    if env.get("AGCORE_ACTORS_DATA"):
        return Path(env["AGCORE_ACTORS_DATA"]) / "sessions.db"
    base = Path(env.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "agcore-actors" / "sessions.db"


@attrs.frozen(kw_only=True)
class CliSettings:
    """The settings a command runs, and what it adds to them."""

    #: The configuration with the flags and the environment over it.
    settings: Settings
    #: The embedded model's configuration (None: a remote provider answers).
    local: LocalModelConfig | None
    #: A ready provider by name, instead of its table (the flags' or environment's).
    providers: Mapping[str, Provider]
    #: The agent new sessions start as.
    first: str
    #: What answers, for people (a local model's name is known once it runs).
    label: str
    #: The SQLite file of the sessions.
    store_path: Path


def pick_agent(names: tuple[str, ...], wanted: str | None, default: str) -> str:
    """``wanted`` if it is one of ``names`` (None: ``default``); else :class:`UsageError`."""
    name = default if wanted is None else wanted
    if name not in names:
        raise UsageError(f"--agent {name!r}: expected one of {', '.join(names)}")
    return name


def _file_defines_agents(settings: Settings) -> bool:
    # The loader fills in one plain ``assistant`` when the file has no [agents].
    return dict(settings.agents) != {"assistant": AgentSettings()}


def _as_settings(provider: Provider) -> ProviderSettings:
    """The table that describes ``provider`` (for the settings; the provider itself runs)."""
    config: Any = getattr(provider, "config", None)
    if isinstance(provider, AnthropicProvider):
        return AnthropicProviderSettings(
            base_url=config.base_url,
            api_key=config.api_key,
            model=config.model,
            max_tokens=config.max_tokens,
        )
    assert isinstance(provider, OpenAICompatibleProvider)
    return OpenAIProviderSettings(
        base_url=config.base_url, api_key=config.api_key, model=config.model
    )


def cli_settings(
    settings: Settings,
    options: RuntimeOptions,
    configured: Provider | None,
    *,
    template: str | None,
    progress: Progress | None,
    env: Mapping[str, str],
) -> CliSettings:
    """``settings`` (as loaded) under the flags in ``options`` and the provider the flags
    or environment configured (see the module doc)."""
    if not _file_defines_agents(settings):
        settings = attrs.evolve(settings, agents=BUILTIN_AGENTS, default_agent="assistant")
    first = pick_agent(tuple(settings.agents), options.agent, settings.default_agent)
    providers: dict[str, Provider] = {}
    local = None
    if configured is not None:
        name = configured.name
        table = _as_settings(configured)
        settings = _with_default(settings, name, table)
        providers[name] = configured
        label = f"{name} {table.model or '(server default)'}"
    else:
        name = settings.default_provider
        current = settings.providers[name]
        if options.forces_local and not isinstance(current, LocalProviderSettings):
            name, current = LOCAL_NAME, LocalProviderSettings()
            settings = _with_default(settings, name, current)
        if isinstance(current, LocalProviderSettings):
            local = local_from(
                settings,
                small=options.small,
                gguf=options.gguf,
                python=options.local_python,
                cache=options.model_cache,
                n_ctx=options.local_ctx,
                template=template,
                progress=progress,
            )
            label = "local"
        else:
            label = f"{name} {current.model or '(server default)'}"
    path = options.store or (
        Path(settings.store.path) if settings.store.path else default_store_path(env)
    )
    settings = attrs.evolve(settings, store=attrs.evolve(settings.store, path=str(path)))
    return CliSettings(
        settings=settings,
        local=local,
        providers=providers,
        first=first,
        label=label,
        store_path=path,
    )


def _with_default(settings: Settings, name: str, table: ProviderSettings) -> Settings:
    return attrs.evolve(
        settings, providers={**settings.providers, name: table}, default_provider=name
    )


def local_from(
    settings: Settings,
    *,
    small: bool,
    gguf: Path | None,
    python: str | None,
    cache: Path | None,
    n_ctx: int | None,
    template: str | None,
    progress: Progress | None,
) -> LocalModelConfig:
    """The embedded model's configuration: the default provider's table (when it is a
    ``local`` one) under the flags."""
    p = settings.providers[settings.default_provider]
    base = p if isinstance(p, LocalProviderSettings) else LocalProviderSettings()
    config: LocalModelConfig = local_model_config(base)
    source = config.source
    if gguf is not None:
        if not gguf.is_file():
            raise UsageError(f"--model {gguf}: no such file")
        source = GgufFile(path=gguf, chat_template=template)
    elif small:
        source = CatalogModel(name="small", cache_dir=cache or _cache(base), download=base.download)
    elif cache is not None and isinstance(source, CatalogModel):
        source = attrs.evolve(source, cache_dir=cache)
    return attrs.evolve(
        config,
        source=source,
        python=python or config.python,
        n_ctx=n_ctx or config.n_ctx,
        progress=progress,
    )


def _cache(p: LocalProviderSettings) -> Path | None:
    return None if p.cache_dir is None else Path(p.cache_dir)
