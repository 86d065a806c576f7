"""``serve --mcp`` beyond tools: stored sessions as resources, completion of session
ids, and the log level a client asks for.

Semantics:
    Resources (when the server is given the session store): each stored session is
    ``agcore://sessions/{id}`` (``text/markdown``: its transcript, one line per message),
    listed in the store's pages (the MCP cursor is the store's), and the template
    ``agcore://sessions/{session}``, whose ``session`` argument ``completion/complete``
    completes from the stored ids. Reading a session that is not stored is -32002
    (resource not found); a URI outside ``agcore://sessions/`` is -32602. A client may
    subscribe to a session's URI (stored yet or not); when a turn of that session run
    through this server ends, every subscribed client gets
    ``notifications/resources/updated``.

    Prompts (with the store too): one, ``session``, whose ``session`` argument names a
    stored session; getting it gives that session's conversation as prompt messages (each
    user message and each assistant text, in order; tool calls and results left out), so
    a client can carry a conversation held here into its own. ``completion/complete``
    completes its ``session`` argument from the stored ids as for the template. An
    unknown prompt or argument, or a session not stored, is -32602.

    Logging: after ``logging/setLevel``, the client gets a ``notifications/message``
    (logger ``agcore``) for each turn of its tool calls: ``info`` when it completed,
    ``warning`` when it was cancelled or blocked, ``error`` when it failed; only those at
    or above the level it set. A client that set no level gets none.

Cancellation: the notifications are sent after the turn, each bounded by the client's
stream; a client gone meanwhile is dropped from the subscriptions, never an error of the
call.
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any, Literal

from ..actor import ActorRef
from ..agent import messages as am
from ..llm import AssistantMessage, ToolMessage, UserMessage
from ..store import messages as sm

__all__ = ["LEVELS", "SCHEME", "McpMore", "transcript"]

#: The log levels of MCP (RFC 5424's), least severe first.
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
SCHEME = "agcore://sessions/"
TEMPLATE = SCHEME + "{session}"
PROMPT = "session"
#: Ids offered by one completion at most (MCP's limit).
MAX_COMPLETIONS = 100
RESOURCE_NOT_FOUND = -32002
INVALID_PARAMS = -32602


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    return " ".join(getattr(part, "text", "") or "" for part in content)


def transcript(snapshot: sm.SessionSnapshot) -> str:
    """A session's transcript as markdown: a heading, then one line per message."""
    record = snapshot.record
    lines = [f"# session {record.id}", f"agent {record.agent or '-'}, {record.turns} turns", ""]
    for entry in snapshot.entries:
        message = entry.message
        if isinstance(message, UserMessage):
            lines.append(f"**user:** {_text(message.content)}")
        elif isinstance(message, AssistantMessage):
            text = _text(message.content)
            calls = [call.function.name for call in message.tool_calls or []]
            if text:
                lines.append(f"**assistant:** {text}")
            if calls:
                lines.append(f"**assistant** calls {', '.join(calls)}")
        elif isinstance(message, ToolMessage):
            lines.append(f"**tool:** {' '.join(_text(message.content).split())[:500]}")
    return "\n".join(lines) + "\n"


def _client(ctx: Any) -> Any:
    """What stays the same across one client's requests: the SDK makes a session object
    per request, over one connection per client."""
    return getattr(ctx.session, "_connection", ctx.session)


def _level_of(status: str) -> str:
    return {"completed": "info", "failed": "error"}.get(status, "warning")


class McpMore:
    """The handlers and the per-client state of the module docstring, for one server."""

    def __init__(self, store: ActorRef[Any] | None) -> None:
        self.store = store
        #: The log level each client set, by its connection.
        self.levels: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        #: The clients subscribed to each URI: a session of each, by its connection
        #: (dropped on unsubscribe or when a notification cannot be sent).
        self.subscribers: dict[str, dict[Any, Any]] = {}

    def handlers(self) -> dict[str, Any]:
        """The ``on_*`` keyword arguments of the SDK's low-level ``Server``."""
        found: dict[str, Any] = {"on_set_logging_level": self._set_level}
        if self.store is not None:
            found |= {
                "on_list_resources": self._list,
                "on_list_resource_templates": self._templates,
                "on_read_resource": self._read,
                "on_subscribe_resource": self._subscribe,
                "on_unsubscribe_resource": self._unsubscribe,
                "on_completion": self._complete,
                "on_list_prompts": self._prompts,
                "on_get_prompt": self._get_prompt,
            }
        return found

    async def after_turn(self, ctx: Any, session: str, result: am.TurnResult) -> None:
        """Tell the calling client (at its level) and the URI's subscribers of a turn."""
        level = _level_of(result.status)
        wanted = self.levels.get(_client(ctx))
        if wanted is not None and LEVELS.index(level) >= wanted:
            data = {"session": session, "turn": result.turn, "status": result.status}
            if result.error_kind:
                data["error"] = result.error_kind
            with warnings.catch_warnings():  # only the call, not the await: task-safe
                # The SDK warns that logging is deprecated from the 2026-07-28 spec on;
                # this client, of an earlier version, asked for it.
                warnings.simplefilter("ignore")
                sending = ctx.session.send_log_message(
                    level, data, logger="agcore", related_request_id=ctx.request_id
                )
            await self._quietly(sending)
        subscribed = self.subscribers.get(SCHEME + session, {})
        for client, server_session in list(subscribed.items()):
            if not await self._quietly(server_session.send_resource_updated(SCHEME + session)):
                subscribed.pop(client, None)

    @staticmethod
    async def _quietly(sending: Any) -> bool:
        try:
            await sending
        except Exception:  # the client went away: its loss, not the call's
            return False
        return True

    # -- handlers ------------------------------------------------------------------------

    async def _set_level(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        self.levels[_client(ctx)] = LEVELS.index(params.level)
        return types.EmptyResult()

    async def _list(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        assert self.store is not None
        cursor = getattr(params, "cursor", None)
        page: sm.SessionPage = await self.store.ask(sm.ListSessions(cursor=cursor))
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=SCHEME + record.id,
                    name=record.id,
                    description=f"agent {record.agent or '-'}, {record.turns} turns",
                    mime_type="text/markdown",
                )
                for record in page.sessions
            ],
            next_cursor=page.cursor,
        )

    async def _templates(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        template = types.ResourceTemplate(
            uri_template=TEMPLATE,
            name="session",
            description="A stored session's transcript.",
            mime_type="text/markdown",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    def _session_of(self, uri: object) -> str:
        from mcp.shared.exceptions import MCPError

        text = str(uri)
        if not text.startswith(SCHEME) or not text[len(SCHEME) :]:
            raise MCPError(INVALID_PARAMS, f"not a resource of this server: {text}")
        return text[len(SCHEME) :]

    async def _read(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        from ..store import SessionNotFound

        assert self.store is not None
        session = self._session_of(params.uri)
        try:
            snapshot: sm.SessionSnapshot = await self.store.ask(sm.ExportSession(session))
        except SessionNotFound:
            raise MCPError(RESOURCE_NOT_FOUND, f"no stored session {session!r}") from None
        contents = types.TextResourceContents(
            uri=str(params.uri), mime_type="text/markdown", text=transcript(snapshot)
        )
        return types.ReadResourceResult(contents=[contents])

    async def _subscribe(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        self._session_of(params.uri)
        self.subscribers.setdefault(str(params.uri), {})[_client(ctx)] = ctx.session
        return types.EmptyResult()

    async def _unsubscribe(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        self._session_of(params.uri)
        self.subscribers.get(str(params.uri), {}).pop(_client(ctx), None)
        return types.EmptyResult()

    async def _complete(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        assert self.store is not None
        ref = params.ref
        kind = getattr(ref, "type", "")
        ours = (kind == "ref/resource" and getattr(ref, "uri", None) == TEMPLATE) or (
            kind == "ref/prompt" and getattr(ref, "name", None) == PROMPT
        )
        if not ours:
            what = getattr(ref, "name", None) or getattr(ref, "uri", "?")
            raise MCPError(INVALID_PARAMS, f"nothing to complete for {what!r}")
        if params.argument.name != "session":
            raise MCPError(INVALID_PARAMS, f"no argument {params.argument.name!r}")
        prefix = params.argument.value
        ids: list[str] = []
        cursor: str | None = None
        while True:  # the whole store, a page at a time (ids only)
            page: sm.SessionPage = await self.store.ask(sm.ListSessions(cursor=cursor))
            ids += [r.id for r in page.sessions if r.id.startswith(prefix)]
            cursor = page.cursor
            if cursor is None:
                break
        completion = types.Completion(
            values=ids[:MAX_COMPLETIONS], total=len(ids), has_more=len(ids) > MAX_COMPLETIONS
        )
        return types.CompleteResult(completion=completion)

    async def _prompts(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        argument = types.PromptArgument(
            name="session", description="The stored session's id.", required=True
        )
        prompt = types.Prompt(
            name=PROMPT,
            description="A stored session's conversation, to continue it here.",
            arguments=[argument],
        )
        return types.ListPromptsResult(prompts=[prompt])

    async def _get_prompt(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        from ..store import SessionNotFound

        assert self.store is not None
        if params.name != PROMPT:
            raise MCPError(INVALID_PARAMS, f"no prompt {params.name!r}")
        session = (params.arguments or {}).get("session")
        if not session:
            raise MCPError(INVALID_PARAMS, "the prompt needs its 'session' argument")
        try:
            snapshot: sm.SessionSnapshot = await self.store.ask(sm.ExportSession(session))
        except SessionNotFound:
            raise MCPError(INVALID_PARAMS, f"no stored session {session!r}") from None
        messages = []
        for entry in snapshot.entries:
            message = entry.message
            if isinstance(message, UserMessage | AssistantMessage):
                text = _text(message.content)
                if text:
                    role: Literal["user", "assistant"] = (
                        "user" if isinstance(message, UserMessage) else "assistant"
                    )
                    content = types.TextContent(type="text", text=text)
                    messages.append(types.PromptMessage(role=role, content=content))
        return types.GetPromptResult(
            description=f"session {session}: {snapshot.record.turns} turns", messages=messages
        )
