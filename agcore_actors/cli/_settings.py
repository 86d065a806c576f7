"""What ``run`` and ``chat`` take from the configuration file, under their flags.

Precedence, highest first: the command's flags, the environment (``OPENAI_*`` /
``ANTHROPIC_*`` pick a provider as ``agcore-actors llm`` reads them; ``AGCORE_*`` set
keys of the file), the file (``--config FILE``, else :func:`~agcore_actors.config.find_config`'s
``./agcore.toml`` or the user's file), the built-in defaults. Pure functions of frozen
data: nothing here starts anything.

- The model: the file's ``default_provider`` when neither flags nor environment name
  one; a ``local`` provider there gives the embedded model its ``model``, ``gguf``,
  ``n_ctx``, ``threads``, ``start_timeout``, ``cache_dir`` and ``python`` (``--small``,
  ``--model``, ``AGCORE_ACTORS_LOCAL_PYTHON`` override them).
- The agents: the file's ``[agents.*]``, each with its own limits
  (:func:`~agcore_actors.config.agent_config`); a file without agents keeps the
  commands' own two (``assistant``, ``plain``) with the commands' limits.
- The store: ``--store``, else the file's ``[store] path``, else the per-user file.
- The host: the file's ``[host]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs

from ..agent import Agent, AgentConfig, HostConfig
from ..config import (
    AgentSettings,
    LocalProviderSettings,
    Settings,
    agent_config,
    agents_of,
    host_config,
    local_model_config,
    remote_provider,
)
from ..llm import Provider
from ..local import CatalogModel, GgufFile, LocalModelConfig, Progress
from ._errors import UsageError

__all__ = ["AgentChoice", "agents_from", "file_provider", "local_from", "pick_agent"]


@attrs.frozen(kw_only=True)
class AgentChoice:
    """The agents a runtime offers, each with its limits, and the one to start with."""

    #: The agents, in the file's order.
    agents: tuple[Agent, ...]
    #: Each agent's limits, by name.
    limits: Mapping[str, AgentConfig]
    #: The agent new sessions start with.
    first: str


def pick_agent(names: tuple[str, ...], wanted: str | None, default: str) -> str:
    """``wanted`` if it is one of ``names`` (None: ``default``); else :class:`UsageError`."""
    name = default if wanted is None else wanted
    if name not in names:
        raise UsageError(f"--agent {name!r}: expected one of {', '.join(names)}")
    return name


def _file_defines_agents(settings: Settings) -> bool:
    # The loader fills in one plain ``assistant`` when the file has no [agents].
    return dict(settings.agents) != {"assistant": AgentSettings()}


def agents_from(
    settings: Settings,
    wanted: str | None,
    *,
    defaults: tuple[Agent, ...],
    default_limits: AgentConfig,
) -> AgentChoice:
    """The file's agents with their own limits, or ``defaults`` with ``default_limits``.

    An agent that names the file's ``default_provider`` (or none) asks the runtime's
    default provider, whichever flags or environment made it.
    """
    if not _file_defines_agents(settings):
        names = tuple(a.name for a in defaults)
        first = pick_agent(names, wanted, names[0])
        return AgentChoice(
            agents=defaults, limits=dict.fromkeys(names, default_limits), first=first
        )
    names = tuple(settings.agents)
    first = pick_agent(names, wanted, settings.default_agent)
    agents = []
    for agent in agents_of(settings, first=names[0]):
        if agent.model.provider == settings.default_provider:
            agent = attrs.evolve(agent, model=attrs.evolve(agent.model, provider=None))
        agents.append(agent)
    limits = {name: agent_config(settings.agents[name]) for name in names}
    return AgentChoice(agents=tuple(agents), limits=limits, first=first)


def file_provider(settings: Settings) -> Provider | None:
    """The file's default provider when it is a remote one; None for the local model."""
    name = settings.default_provider
    if isinstance(settings.providers[name], LocalProviderSettings):
        return None
    return remote_provider(settings, name)


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
    """The embedded model's configuration: the file's ``local`` provider (when it is the
    default one) under the flags."""
    p = settings.providers[settings.default_provider]
    base = p if isinstance(p, LocalProviderSettings) else LocalProviderSettings()
    config: LocalModelConfig = local_model_config(base)
    source = config.source
    if gguf is not None:
        if not gguf.is_file():
            raise UsageError(f"--model {gguf}: no such file")
        source = GgufFile(path=gguf, chat_template=template)
    elif small:
        source = CatalogModel(name="small", cache_dir=cache, download=base.download)
    elif cache is not None and isinstance(source, CatalogModel):
        source = attrs.evolve(source, cache_dir=cache)
    return attrs.evolve(
        config,
        source=source,
        python=python or config.python,
        n_ctx=n_ctx or config.n_ctx,
        progress=progress,
    )


def cli_host_config(settings: Settings, drain_timeout: float | None) -> HostConfig:
    """The file's ``[host]``; ``drain_timeout`` (when given) over it."""
    config = host_config(settings)
    return config if drain_timeout is None else attrs.evolve(config, drain_timeout=drain_timeout)
