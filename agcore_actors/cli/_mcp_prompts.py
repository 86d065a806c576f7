"""MCP prompts as ``chat`` slash commands: ``/SERVER:PROMPT [arguments]``.

:func:`load_prompts` asks each configured MCP server for its prompts (a server that is
down or has none offers nothing, bounded by :data:`LIST_TIMEOUT`). Arguments
(:func:`prompt_arguments`): ``name=value`` pairs (shell quoting), or, for a prompt of
exactly one argument, the rest of the line as its value. A required argument left out
is a usage error naming the command's form (:func:`usage`). The filled-in prompt's
messages become the turn's text (:func:`prompt_text`): the text of each message, in
order, a part of another kind named in one line instead of shown.
"""

from __future__ import annotations

import shlex
from typing import Any

import attrs
import trio

from ..actor import ActorError
from ..mcp import McpError
from ..mcp import messages as mm

__all__ = [
    "LIST_TIMEOUT",
    "McpPromptCommand",
    "load_prompts",
    "prompt_arguments",
    "prompt_text",
    "usage",
]

#: Seconds each server may take to list its prompts when chat starts.
LIST_TIMEOUT = 10.0


@attrs.frozen
class McpPromptCommand:
    """One server's prompt, as the slash command ``/{server}:{prompt.name}``."""

    server: str
    prompt: Any  # agcore_actors.mcp.McpPrompt

    @property
    def command(self) -> str:
        return f"/{self.server}:{self.prompt.name}"


def usage(entry: McpPromptCommand) -> str:
    """``/srv:review code=...`` and the prompt's description."""
    args = " ".join(
        f"{a.name}=..." if a.required else f"[{a.name}=...]" for a in entry.prompt.arguments
    )
    head = f"{entry.command} {args}".rstrip()
    return f"{head}  {entry.prompt.description}".rstrip()


def prompt_arguments(entry: McpPromptCommand, rest: str) -> dict[str, str]:
    """The arguments of ``/command rest`` (see the module docstring); ValueError with the
    command's usage when they do not fit the prompt."""
    declared = [a.name for a in entry.prompt.arguments]
    rest = rest.strip()
    given: dict[str, str] = {}
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        raise ValueError(f"{exc}; usage: {usage(entry)}") from None
    if words and all("=" in w and w.split("=", 1)[0] in declared for w in words):
        given = dict(w.split("=", 1) for w in words)
    elif rest and len(declared) == 1:
        given = {declared[0]: rest}
    elif rest:
        raise ValueError(f"arguments as name=value; usage: {usage(entry)}")
    missing = [a.name for a in entry.prompt.arguments if a.required and a.name not in given]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}; usage: {usage(entry)}")
    return given


def prompt_text(rendered: mm.McpPromptRendered) -> str:
    """The turn's text made of a filled-in prompt's messages."""
    parts: list[str] = []
    for message in rendered.messages:
        content = message.content
        if content.get("type") == "text":
            parts.append(str(content.get("text", "")))
        else:
            parts.append(f"[{content.get('type', 'unknown')} content of the prompt not shown]")
    return "\n\n".join(parts)


async def load_prompts(system: Any, servers: list[str]) -> dict[str, McpPromptCommand]:
    """Each prompt of ``servers`` (their connection actors in ``system``) by command."""
    found: dict[str, McpPromptCommand] = {}
    for server in servers:
        try:
            connection = system.lookup(f"mcp:{server}")
        except LookupError:
            continue
        listed: mm.McpPromptList | None = None
        with trio.move_on_after(LIST_TIMEOUT):
            try:
                listed = await connection.ask(mm.ListPrompts())
            except (McpError, ActorError):  # down, or no prompts (method not found)
                listed = None
        for prompt in listed.prompts if listed is not None else []:
            entry = McpPromptCommand(server, prompt)
            found[entry.command] = entry
    return found
