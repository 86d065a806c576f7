"""ScriptedProvider: a model provider whose attempts follow a script, on trio's clock.

A double of the real :class:`~agcore_actors.llm.Provider` interface (as httpx's
``MockTransport`` is of a transport, or pydantic-ai's ``FunctionModel`` of a model):
put it in a :class:`~agcore_actors.llm.ProviderRegistry` behind the real
:class:`~agcore_actors.llm.ProviderActor`, and the retry loop, timeouts, hooks,
stream assembly and usage accounting all run for real, deterministically, in
virtual time::

    provider = ScriptedProvider([
        RateLimitError("scripted", retry_after=2.0),       # attempt 1: HTTP 429
        ScriptedReply(text=["Hel", "lo"], gap=0.5),        # attempt 2: two pieces
        ScriptedReply(tool_calls=[ScriptedToolCall("f", '{"a": ')]),  # bad JSON
        ScriptedReply(text="slow", stall_after=1),         # one piece, then silence
    ])
    registry = ProviderRegistry().register(provider)
    llm = await system.root.start_child(provider_spec("llm", registry=registry))

Each attempt (a ``Chat`` or one streamed try) takes the next item of the script; the
last item repeats. An item is a :class:`ScriptedReply`, a plain string (its text),
an :class:`~agcore_actors.llm.AssistantMessage`, an
:class:`~agcore_actors.llm.LlmError` (the attempt fails with it), or the script is
a function ``(request, attempt) -> item`` instead of a list.

Time is trio's: ``latency`` and ``gap`` sleep, a stall waits for ever. Streamed
attempts honour the :class:`~agcore_actors.llm.wire.ReadLimits` the retry loop gives
them exactly as the HTTP providers do: a silence longer than ``idle`` raises an
idle :class:`~agcore_actors.llm.LlmTimeoutError`, the call deadline a call one.
Cancellation stops an attempt at once, wherever it waits.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import msgspec
import trio

from ..llm import (
    AssistantMessage,
    AssistantToolCall,
    ChatRequest,
    ChatResponse,
    FunctionCall,
    LlmError,
    LlmTimeoutError,
    OutputMode,
    Usage,
    content_text,
)
from ..llm.wire import NO_READ_LIMITS, ChatDelta, DeltaToolCall, ReadLimits, finish_reason

if TYPE_CHECKING:
    import httpx2


@attrs.frozen
class ScriptedToolCall:
    """A tool call the scripted model makes; ``arguments`` may be any text, valid
    JSON or not (a mapping is encoded as JSON); ``id`` defaults to
    ``call_<attempt>_<n>`` (``""`` is sent as it is, as servers that leave a call's id
    out or empty do)."""

    name: str
    arguments: str | Mapping[str, Any] = "{}"
    id: str | None = None

    def argument_text(self) -> str:
        """The arguments as the model writes them."""
        if isinstance(self.arguments, str):
            return self.arguments
        return msgspec.json.encode(dict(self.arguments)).decode()


def _pieces(text: str | Sequence[str] | None) -> list[str]:
    if text is None:
        return []
    return [text] if isinstance(text, str) else list(text)


@attrs.frozen(kw_only=True)
class ScriptedReply:
    """One scripted attempt: what the model answers, how fast, and how it fails.

    A stream sends, in order: the ``reasoning`` pieces, the ``text`` pieces, one piece
    per tool call, then (with the last piece) the finish reason and ``usage``. It
    waits ``latency`` before the first piece and ``gap`` before each next one. With
    ``fail_after=n`` it raises ``error`` instead of piece ``n`` (0: before any
    output); with ``stall_after=n`` it goes silent there for ever. A non-streamed
    attempt waits as long as the stream would take, then answers, raises ``error``
    (when ``fail_after`` is set) or stalls (when ``stall_after`` is set).
    """

    #: The answer: one string, or the pieces a stream sends.
    text: str | Sequence[str] | None = None
    #: The model's reasoning, likewise.
    reasoning: str | Sequence[str] | None = None
    #: Tool calls, each sent as one piece.
    tool_calls: Sequence[ScriptedToolCall] = ()
    #: Token usage of the reply.
    usage: Usage = attrs.field(factory=Usage)
    #: The raw finish reason (default: ``tool_calls`` with tool calls, else ``stop``).
    finish_reason: str | None = None
    #: Seconds before the first piece (or before a non-streamed answer).
    latency: float = 0.0
    #: Seconds before each next piece.
    gap: float = 0.0
    #: Raise ``error`` instead of piece number ``fail_after`` (0-based).
    fail_after: int | None = None
    #: The error of ``fail_after``.
    error: LlmError | None = None
    #: Go silent for ever instead of piece number ``stall_after`` (0-based).
    stall_after: int | None = None

    def __attrs_post_init__(self) -> None:
        if (self.fail_after is None) != (self.error is None):
            raise ValueError("fail_after and error go together")


ScriptItem = ScriptedReply | str | AssistantMessage | LlmError
Script = Sequence[ScriptItem] | Callable[[ChatRequest, int], ScriptItem]


def _reply(item: ScriptItem) -> ScriptedReply:
    if isinstance(item, ScriptedReply):
        return item
    if isinstance(item, str):
        return ScriptedReply(text=item)
    if isinstance(item, LlmError):
        return ScriptedReply(fail_after=0, error=item)
    calls = [
        ScriptedToolCall(c.function.name, c.function.arguments, c.id) for c in item.tool_calls or ()
    ]
    return ScriptedReply(
        text=None if item.content is None else content_text(item.content),
        reasoning=item.reasoning_content,
        tool_calls=calls,
    )


class ScriptedProvider:
    """A :class:`~agcore_actors.llm.Provider` that plays a script (see the module doc).

    ``requests`` records every request in order; ``attempts`` counts them.
    """

    def __init__(
        self,
        script: Script,
        *,
        name: str = "scripted",
        model: str = "scripted",
        structured_output: OutputMode = "json_schema",
    ) -> None:
        self._script = script
        self._name = name
        self.model = model
        #: How the agent layer asks this provider for structured output (``auto``).
        self.structured_output: OutputMode = structured_output
        self.requests: list[ChatRequest] = []

    @property
    def name(self) -> str:
        """The name the provider registers under."""
        return self._name

    @property
    def attempts(self) -> int:
        """How many attempts were made so far (chat and streamed)."""
        return len(self.requests)

    def _next(self, request: ChatRequest) -> tuple[int, ScriptedReply]:
        attempt = len(self.requests) + 1
        self.requests.append(request)
        if callable(self._script):
            return attempt, _reply(self._script(request, attempt))
        if not self._script:
            raise ValueError("the script is empty")
        return attempt, _reply(self._script[min(attempt, len(self._script)) - 1])

    def _deltas(self, attempt: int, reply: ScriptedReply) -> list[ChatDelta]:
        deltas = [ChatDelta(reasoning=r) for r in _pieces(reply.reasoning)]
        deltas += [ChatDelta(content=t) for t in _pieces(reply.text)]
        for n, call in enumerate(reply.tool_calls):
            piece = DeltaToolCall(
                n,
                f"call_{attempt}_{n}" if call.id is None else call.id,
                call.name,
                call.argument_text(),
            )
            deltas.append(ChatDelta(tool_calls=[piece]))
        if deltas:
            deltas[0] = msgspec.structs.replace(
                deltas[0], model=self.model, id=f"{self._name}-{attempt}"
            )
        return deltas

    def _finish(self, reply: ScriptedReply) -> str:
        if reply.finish_reason is not None:
            return reply.finish_reason
        return "tool_calls" if reply.tool_calls else "stop"

    async def chat(self, client: httpx2.AsyncClient | None, request: ChatRequest) -> ChatResponse:
        """One non-streamed attempt."""
        attempt, reply = self._next(request)
        deltas = self._deltas(attempt, reply)
        await trio.sleep(reply.latency + reply.gap * max(len(deltas) - 1, 0))
        if reply.stall_after is not None:
            await trio.sleep_forever()
        if reply.error is not None:
            raise reply.error
        calls = [
            AssistantToolCall(
                f"call_{attempt}_{n}" if c.id is None else c.id,
                FunctionCall(c.name, c.argument_text()),
            )
            for n, c in enumerate(reply.tool_calls)
        ]
        text, reasoning = _pieces(reply.text), _pieces(reply.reasoning)
        message = AssistantMessage(
            content="".join(text) if reply.text is not None else None,
            reasoning_content="".join(reasoning) if reply.reasoning is not None else None,
            tool_calls=calls or None,
        )
        return ChatResponse(
            message=message,
            finish_reason=finish_reason(self._finish(reply)),
            usage=reply.usage,
            model=self.model,
            id=f"{self._name}-{attempt}",
        )

    async def stream(
        self,
        client: httpx2.AsyncClient | None,
        request: ChatRequest,
        limits: ReadLimits = NO_READ_LIMITS,
    ) -> AsyncGenerator[ChatDelta, None]:
        """One streamed attempt, honouring ``limits`` like an HTTP provider."""
        attempt, reply = self._next(request)
        deltas = self._deltas(attempt, reply)
        last = trio.current_time()
        for n in range(len(deltas) + 1):
            fails = (
                reply.error is not None and reply.fail_after is not None and n >= reply.fail_after
            )
            stalls = reply.stall_after is not None and n >= reply.stall_after
            wait = reply.latency if n == 0 else reply.gap
            if wait and (n < len(deltas) or n == 0 or fails or stalls):
                await self._wait(trio.current_time() + wait, last, limits)
            if fails and reply.error is not None:
                raise reply.error
            if stalls:
                await self._wait(math.inf, last, limits)
            if n == len(deltas):
                break
            yield deltas[n]
            last = trio.current_time()
        usage = None if reply.usage.is_empty else reply.usage
        yield ChatDelta(finish_reason=self._finish(reply), usage=usage)

    async def _wait(self, until: float, last: float, limits: ReadLimits) -> None:
        """Sleep until ``until``, unless the idle limit or the call deadline comes first."""
        idle_at = math.inf if limits.idle is None else last + limits.idle
        limit = min(idle_at, limits.deadline)
        await trio.sleep_until(min(until, limit))
        if until > limit:
            if limits.deadline <= idle_at:
                raise LlmTimeoutError(self._name, limits.call_seconds, "call")
            raise LlmTimeoutError(self._name, limits.idle or math.inf, "idle")
