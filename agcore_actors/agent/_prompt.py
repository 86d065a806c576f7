"""The system prompt of a turn, recomputed every turn from the agent's layers."""

from __future__ import annotations

from collections.abc import Mapping

from ._config import Agent, PromptContext

__all__ = ["facts_block", "system_prompt"]


def facts_block(facts: Mapping[str, str]) -> str:
    """``<session-context>`` with one ``key: value`` line per fact, in key order.

    Line breaks inside keys and values are written as ``\\n`` so that one fact is always
    one line (a raw newline would let a value forge other facts).
    """
    lines = [f"{_one_line(key)}: {_one_line(value)}" for key, value in sorted(facts.items())]
    return "\n".join(["<session-context>", *lines, "</session-context>"])


def _one_line(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n")


def system_prompt(agent: Agent, context: PromptContext) -> str:
    """``base``, the agent's instructions, its environment for ``context`` and the
    session facts (when there are any), joined by blank lines, empty layers skipped."""
    layers = [agent.base, agent.instructions, agent.environment(context)]
    if context.facts:
        layers.append(facts_block(context.facts))
    return "\n\n".join(layer for layer in layers if layer)
