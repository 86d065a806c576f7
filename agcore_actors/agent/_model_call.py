"""The model half of a turn: one model call through the agent's fallback chain, with
its usage, cost and budget accounted.

:class:`ModelCalls` is a part of :class:`~._turn.Turn` (a mixin: the state is the turn's).

Guarantees, under cancellation too:

- a call goes to the next model of the chain only as :func:`~._fallback.falls_back`
  says: on an error kind the agent chose, before any piece of the answer (text or
  reasoning) reached the reader, while a model is left; each move is a
  :class:`~agcore_actors.agent.messages.ModelFallback` event, and the next model gets the
  same prompt;
- every reply is recorded once in :attr:`Turn.calls` with the provider and model that
  answered it, its usage and cost (usage also as a ``UsageReported`` event when the
  server reported some); a budget limit found exceeded (:func:`~._budget.exceeded`)
  is a ``LimitReached`` event, then :class:`~._errors.LimitExceeded`;
- a context-length refusal moves to the next model first when the agent chose
  ``context_length`` (a model with a larger context); when the chain's last model
  refuses, a compactor compacts once and the chain starts again from its first model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ..actor import ActorRef
from ..context import messages as cm
from ..llm import (
    ChatRequest,
    ChatResponse,
    ContextLengthError,
    JsonSchema,
    LlmError,
    OutputMode,
    ResponseFormatJsonSchema,
    ToolChoice,
    Usage,
    force_tool,
)
from ..llm import Message as ChatMessage
from ..llm import messages as lm
from . import messages as am
from ._budget import Spend, exceeded, price_of, spend_of
from ._config import Agent, AgentConfig, ModelSettings
from ._errors import AgentConfigError, LimitExceeded
from ._fallback import fallback_kind, falls_back
from ._output import as_mode, final_tool, prompted_messages, resolved
from ._tool_round import Emit, peer

if TYPE_CHECKING:
    from ..llm import Tool as ModelTool
    from ._turn import TurnPorts

__all__ = ["ModelCalls"]


def _tool_choice(value: str | None) -> ToolChoice | None:
    if value is None:
        return None
    if value in ("auto", "none", "required"):
        return value  # type: ignore[return-value]
    return force_tool(value)


def request_of(
    settings: ModelSettings,
    messages: list[ChatMessage],
    tools: list[ModelTool],
    output_type: type[msgspec.Struct] | None,
    mode: OutputMode = "json_schema",
) -> ChatRequest:
    """The request of one call of ``settings``' model (tool settings only with tools),
    asking for ``output_type`` in ``mode`` (see :mod:`~._output`)."""
    response_format = None
    tool_choice = settings.tool_choice
    if output_type is not None and mode == "json_schema":
        schema = msgspec.json.schema(output_type)
        response_format = ResponseFormatJsonSchema(
            JsonSchema(name=output_type.__name__, schema_=schema)
        )
    elif output_type is not None and mode == "tool":
        tools = [*tools, final_tool(output_type)]
        tool_choice = "required"
    elif output_type is not None:
        messages = prompted_messages(messages, output_type)
    return ChatRequest(
        messages=messages,
        model=settings.model,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        top_p=settings.top_p,
        stop=None if settings.stop is None else list(settings.stop),
        seed=settings.seed,
        tools=tools or None,
        tool_choice=_tool_choice(tool_choice) if tools else None,
        parallel_tool_calls=settings.parallel_tool_calls if tools else None,
        reasoning_effort=settings.reasoning_effort,
        thinking_budget=settings.thinking_budget,
        response_format=response_format,
        extra_body=settings.extra_body,
    )


class ModelCalls:
    """The model calls of a :class:`~._turn.Turn` (see the module docstring)."""

    agent: Agent
    config: AgentConfig
    ports: TurnPorts
    emit: Emit
    usage: Usage
    model_calls: int
    streamed: bool
    settings: ModelSettings
    calls: list[am.ModelCall]
    cost: float
    session_spend: Spend
    _shown: list[str]
    _output_seen: bool
    #: The structured-output mode of the last call made.
    output_mode: OutputMode

    if TYPE_CHECKING:  # what Turn provides (declared for the checker, not defined here)

        def _messages(self) -> list[ChatMessage]: ...

        def _offered_tools(self) -> list[ModelTool]: ...

        async def _compacted(
            self, compactor: ActorRef[cm.CompactorMsg], reactive: ContextLengthError | None
        ) -> list[ChatMessage]: ...

    # -- budget --------------------------------------------------------------------------

    def turn_spend(self) -> Spend:
        return Spend(self.usage.total_tokens, self.cost)

    async def check_budget(self) -> None:
        """Raise :class:`LimitExceeded` (after a ``LimitReached`` event) when the turn or
        the session spent more than a limit of the budget allows."""
        turn = self.turn_spend()
        over = exceeded(self.config.budget, turn=turn, session=self.session_spend + turn)
        if over is not None:
            name, value, used = over
            await self.emit(am.LimitReached(limit=name, value=value, used=used))
            raise LimitExceeded(name, value, used=used)

    # -- the chain -----------------------------------------------------------------------

    async def _model_call(self) -> ChatResponse:
        """One reply, through the chain (the budget is checked first: a turn or session
        already over a limit calls no model)."""
        await self.check_budget()
        reactive: ContextLengthError | None = None
        while True:
            compactor = self.ports.compactor
            if compactor is None:
                messages = self._messages()  # no ask to make: no coroutine either
            else:
                messages = await peer("compactor", self._compacted(compactor, reactive))
            try:
                response = await self._through_chain(messages)
            except ContextLengthError as error:
                if reactive is not None or self.ports.compactor is None:
                    raise
                reactive = error
                continue
            return response

    async def _mode_for(self, settings: ModelSettings) -> OutputMode:
        """The structured-output mode of a call of ``settings``' model."""
        agent_mode = self.agent.output_mode
        if self.agent.output_type is None or agent_mode != "auto":
            return resolved(agent_mode, "json_schema")
        known = self.ports.output_modes
        if known is None or (settings.provider and settings.provider not in known[0]):
            # Asked once per bundle, and again for a provider registered since.
            provider = self.ports.provider
            listed = await peer(provider.name, provider.ask(lm.ListProviders()))
            known = self.ports.output_modes = (dict(listed.structured_output), listed.default)
        modes, default = known
        name = settings.provider or default or (next(iter(modes)) if len(modes) == 1 else "")
        return resolved(agent_mode, as_mode(modes.get(name, "json_schema")))

    async def _through_chain(self, messages: list[ChatMessage]) -> ChatResponse:
        chain = self.settings.chain()
        tools = self._offered_tools()
        for index, settings in enumerate(chain):
            mode = await self._mode_for(settings)
            self.output_mode = mode
            request = request_of(settings, messages, tools, self.agent.output_type, mode)
            self._output_seen = False
            try:
                call = (
                    self._stream(request, settings, index)
                    if self.streamed
                    else self._chat(request, settings, index)
                )
                return await peer(self.ports.provider.name, call)
            except LlmError as error:
                remaining = len(chain) - index - 1
                if not falls_back(
                    error,
                    self.settings.fallback_on,
                    output_seen=self._output_seen,
                    remaining=remaining,
                ):
                    raise
                following = chain[index + 1]
                await self.emit(
                    am.ModelFallback(
                        from_provider=settings.provider or error.provider,
                        from_model=settings.model,
                        to_provider=following.provider or "",
                        to_model=following.model,
                        error_kind=str(fallback_kind(error)),
                        error=str(error),
                    )
                )
        raise AssertionError("unreachable: the last model of a chain never falls back")

    async def _record(self, response: ChatResponse, settings: ModelSettings, index: int) -> None:
        """Account one reply: usage, cost, the call's record and its event."""
        budget = self.config.budget
        provider = response.provider or settings.provider or ""
        price = price_of(budget.prices, provider, response.model, settings.model)
        if price is None and budget.needs_prices:
            raise AgentConfigError(
                f"no price for model {response.model or settings.model!r} of provider "
                f"{provider!r}: a cost limit needs one in the budget's prices"
            )
        spent = spend_of(response.usage, price)
        self.usage = self.usage + response.usage
        self.cost += spent.cost
        model = response.model or settings.model
        self.calls.append(
            am.ModelCall(
                provider=provider,
                model=model,
                usage=response.usage,
                cost=spent.cost,
                fallback=index,
            )
        )
        if not response.usage.is_empty:
            await self.emit(
                am.UsageReported(
                    response.usage,
                    provider=provider,
                    model=model,
                    cost=spent.cost,
                    request_model=settings.model,
                    response_id=response.id,
                    finish_reason=response.finish_reason or "",
                )
            )

    async def _chat(
        self, request: ChatRequest, settings: ModelSettings, index: int
    ) -> ChatResponse:
        ask = lm.Chat(request, provider=settings.provider)
        self.model_calls += 1
        response: ChatResponse = await self.ports.provider.ask(ask)
        await self._record(response, settings, index)
        return response

    async def _stream(
        self, request: ChatRequest, settings: ModelSettings, index: int
    ) -> ChatResponse:
        ask = lm.ChatStream(request, provider=settings.provider)
        self.model_calls += 1
        shown = self._shown
        shown.clear()  # what an earlier attempt sent (before a reactive compaction)
        async with self.ports.provider.stream(ask) as events:
            async for event in events:
                match event:
                    # Kept once the reader has it (a cancelled send delivered nothing).
                    case lm.Content(text=text):
                        self._output_seen = True
                        await self.emit(am.TextDelta(text))
                        shown.append(text)
                    case lm.ContentFirst(text=text):
                        self._output_seen = True
                        await self.emit(am.ContentStarted(text))
                        shown.append(text)
                    case lm.Thinking(text=text):
                        self._output_seen = True
                        await self.emit(am.ThinkingDelta(text))
                    case lm.Retrying():
                        shown.clear()  # (none yet: a stream is not retried after output)
                        await self.emit(
                            am.RetryingModel(
                                attempt=event.attempt, delay=event.delay, error=event.error
                            )
                        )
                    case lm.Finish(response=response):
                        await self._record(response, settings, index)
                        return response
                    case _:
                        pass
        raise RuntimeError("the provider's stream ended without a Finish event")
