"""The root of every error agcore-actors raises.

This module imports nothing of ours, so every package can derive from it. Each
package defines its leaves in its own ``_errors.py``; the whole tree, as built, is
drawn in ``docs/errors.md`` (kept in step with the code by
``tests/test_errors.py``)::

    AgcoreError
    ├── ActorError            agcore_actors.actor    the runtime: mailboxes, asks, supervision
    ├── LlmError              agcore_actors.llm      model calls: HTTP, streams, retries
    ├── ToolError             agcore_actors.tools    tool calls: lookup, arguments, permission
    │   └── McpError          agcore_actors.mcp      MCP servers: transport and protocol
    ├── McpConfigError        agcore_actors.mcp      a bad ``mcpServers`` entry
    ├── MemoryStoreError      agcore_actors.memory   storage and retrieval
    ├── CompactError          agcore_actors.context  context compaction and token counts
    ├── PromptError           agcore_actors.prompt   templates and composition
    ├── SessionStoreError     agcore_actors.store    sessions, messages, facts; turn commits
    ├── ClusterError          agcore_actors.cluster  several hosts: leases, ownership, config
    ├── AgentError            agcore_actors.agent    turns, limits, plans, the session host
    ├── LocalModelError       agcore_actors.local    the embedded model server
    ├── ServeError            agcore_actors.serve    the stdio and HTTP bot host
    ├── CliError              agcore_actors.cli      command-line usage and input
    ├── ConfigError           agcore_actors.config   the configuration file and environment
    └── KitError              agcore_actors.testing  the test kit's driver and probes

Conventions every class follows:

- ``kind`` is a stable short name (``"rate_limit"``, ``"ask_timeout"``): log it,
  match on it in other languages, put it in metrics. It never changes for a class.
- Builtin mixins where they fit: every timeout is also a :class:`TimeoutError`
  and carries ``seconds``; every "not found" is also a :class:`LookupError`;
  every bad input is also a :class:`ValueError`. ``except TimeoutError`` works
  across the whole library.
- One vocabulary for "can the caller go on":

  * :meth:`AgcoreError.is_retryable` — sending the *same* request again, unchanged,
    may succeed (a rate limit, a 5xx, a dropped connection, one attempt's timeout);
  * :meth:`AgcoreError.is_recoverable` — the work that raised it can go on: in a
    turn, the model is shown the error and may correct itself (bad tool arguments,
    a failed tool, a missed memory lookup), as opposed to ending the turn.

  Both are False unless a class says otherwise.
- Messages never contain secrets (API keys, bearer tokens, configured environment
  values): providers and MCP transports redact them before an error is built.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = ["AgcoreError"]


class AgcoreError(Exception):
    """Base class of every error agcore-actors raises.

    Errors raised by *your* code (a handler, a tool, a hook) are not wrapped in
    it: they reach you as they were raised, with a note naming the actor.
    """

    kind: ClassVar[str] = "agcore"

    def is_retryable(self) -> bool:
        """True if sending the same request again, unchanged, may succeed."""
        return False

    def is_recoverable(self) -> bool:
        """True if the work that raised this can go on (a turn shows it to the model)."""
        return False
