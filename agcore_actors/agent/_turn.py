"""One turn, as messages to the runtime's actors.

:class:`Turn` runs a single turn of a session: model call (streamed when someone reads
the turn's events, else one plain call; compacted when over
budget and once more after a context-length refusal) → the tool calls it asked for, in
parallel through the ToolExecutor → again, up to ``max_tool_turns`` rounds → the answer
(validated against the agent's output type, with re-asks) — emitting
:data:`~agcore_actors.agent.messages.TurnEvent` s as it goes. Its limits are its own:
``max_turns`` model calls and ``max_tool_turns`` tool rounds per turn, however many turns
the session ran before.

Guarantees, under cancellation too:

- the calls of each reply have distinct, non-empty ids before any tool runs (an empty or
  repeated id is replaced, in the stored reply and its results alike, so the model sees
  the same ids next time);
- every tool call the model made gets exactly one tool message in :attr:`Turn.messages`
  — the real result, or a synthetic one saying why there is none (``cancelled``,
  ``denied``, ``limit``, ``unknown_tool``);
- the text of a streamed answer the turn was cut off in (cancelled, timed out, failed)
  is kept by :meth:`Turn.close` as an assistant message ending in ``[interrupted]``: the
  next turn's model sees what the person saw;
- an error of the tool batch fails the turn with that error, whether or not subagents
  ran beside it (never an exception group);
- usage is added once per model response that reported it, and every reply is recorded
  with the provider and model that answered it (:mod:`~._model_call`, which also falls
  back along the agent's chain and applies its budget);
- an output guardrail's replacement is what the transcript keeps; a blocked answer is
  kept as a note saying so, and the turn fails with :class:`GuardrailBlocked`
  (:mod:`~._turn_answer`, which also validates the answer into the output type);
- the turn never holds a task after :meth:`Turn.run` returns: the model request, the
  tool batch and any approval wait are children of the caller's task;
- a durable turn (given ``append``) stores each model reply that asks for tools before
  any of them runs, and each tool result as it comes (:meth:`Turn.save`): a turn
  resumed from the store (:meth:`Turn.resume`) runs only the calls with no stored
  result; a round that leaves calls waiting for answers (``suspended``) ends the turn
  there (:meth:`Turn.run` returns False).

The caller (the Session actor) persists :attr:`Turn.messages` and :attr:`Turn.usage`
whatever the outcome.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import attrs
import trio

from ..actor import ActorRef
from ..context import messages as cm
from ..llm import (
    AssistantMessage,
    ContextLengthError,
    FunctionDefinition,
    OutputMode,
    SystemMessage,
    Usage,
    UserMessage,
)
from ..llm import Message as ChatMessage
from ..llm import Tool as ModelTool
from ..llm import messages as lm
from ..tools import RunContext
from ..tools import messages as tm
from . import messages as am
from ._budget import Spend
from ._config import Agent, AgentConfig, ModelSettings
from ._errors import LimitExceeded, OutputValidationError
from ._model_call import ModelCalls
from ._output import FINAL_TOOL
from ._suspend import Answer, usage_minus
from ._tool_round import Emit, RunChild, ToolRound
from ._transcript import interrupted, synthetic_results, unique_call_ids
from ._turn_answer import TurnAnswer

__all__ = ["Emit", "RunChild", "Turn", "TurnPorts"]


_TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "What the agent should do."}},
    "required": ["task"],
}


@attrs.define(kw_only=True)
class TurnPorts:
    """The actors a turn talks to, and what the model is offered."""

    provider: ActorRef[lm.ProviderMsg]
    tools: ActorRef[tm.ToolExecutorMsg] | None = None
    #: Tool definitions by name (JSON Schema ``parameters``), as the registry lists them.
    definitions: Callable[[], Sequence[Mapping[str, Any]]] = list
    compactor: ActorRef[cm.CompactorMsg] | None = None
    #: Each provider's structured-output mode and the default provider's name, asked of
    #: the provider actor once (by the first turn of an ``auto`` agent with an output type).
    output_modes: tuple[dict[str, str], str | None] | None = None


@attrs.define
class Turn(ModelCalls, ToolRound, TurnAnswer):
    """The state of one running turn; see the module docstring (its model calls:
    :class:`~._model_call.ModelCalls`, its tool rounds: :class:`~._tool_round.ToolRound`,
    its answer: :class:`~._turn_answer.TurnAnswer`)."""

    session: str
    turn_id: str
    agent: Agent
    config: AgentConfig
    ports: TurnPorts
    #: The valid history before this turn (system prompt excluded).
    history: list[ChatMessage]
    system_prompt: str
    emit: Emit
    messages: list[ChatMessage] = attrs.field(factory=list)
    usage: Usage = attrs.field(factory=Usage)
    model_calls: int = 0
    tool_calls: int = 0
    text: str = ""
    output: object = None
    stop_after_step: bool = False
    #: Agents offered as tools, by tool name, and how to run one.
    subagents: Mapping[str, Agent] = attrs.field(factory=dict)
    run_child: RunChild | None = None
    #: Stream model calls (their deltas become events); False: one plain call each,
    #: for turns whose events nobody reads (cheaper on the client).
    streamed: bool = True
    #: The model settings of this turn: the agent's, with the turn's overrides.
    settings: ModelSettings = attrs.field(
        default=attrs.Factory(lambda self: self.agent.model, takes_self=True)
    )
    #: What the session had spent before this turn (its budget's ``session_*`` limits).
    session_spend: Spend = attrs.field(factory=Spend)
    #: The turn's run context (tools that declare one, guardrails, tool hooks).
    run_context: RunContext[Any] | None = None
    #: Every model call: who answered, its usage and cost.
    calls: list[am.ModelCall] = attrs.field(factory=list)
    cost: float = 0.0
    #: A guardrail's reason when it blocked the answer (the turn is ``blocked``).
    blocked: str | None = None
    _seen_calls: dict[str, int] = attrs.field(factory=dict)
    #: The text pieces the model call being streamed has sent so far (the person saw
    #: them); emptied when its reply is complete.
    _shown: list[str] = attrs.field(factory=list, init=False)
    #: A piece of the answer of the call being made reached the reader (no fallback).
    _output_seen: bool = attrs.field(default=False, init=False)
    #: The structured-output mode of the last model call (see _output).
    output_mode: OutputMode = attrs.field(default="json_schema", init=False)
    #: ``messages[:stored]`` and ``stored_usage`` are in the store (begin stored the
    #: user's message; a durable turn's :meth:`save` stores more as it goes).
    stored: int = 1
    stored_usage: Usage = attrs.field(factory=Usage)
    #: Durable turns: ``append(messages, usage)`` stores them in the open turn.
    append: Callable[[list[ChatMessage], Usage], Awaitable[None]] | None = None
    #: Calls held for an answer (the turn suspends after their round), by id.
    suspended: dict[str, am.AwaitingCall] = attrs.field(factory=dict)
    #: Answers given to a suspended turn, by call id (a resumed turn applies them).
    answers: Mapping[str, Answer] = attrs.field(factory=dict)
    #: Loaded from the store and resumed (its begin counted it already).
    resumed: bool = False
    #: Questions MCP servers asked during each tool call so far, by call id.
    elicited: dict[str, int] = attrs.field(factory=dict)
    _save_lock: trio.Lock = attrs.field(factory=trio.Lock, init=False)

    # -- the loop ------------------------------------------------------------------------

    async def run(self, user: str | UserMessage) -> bool:
        """Run the turn to its answer; False if it stopped early (``stop_after_step``, or
        calls wait for answers: :attr:`suspended`).

        Raises the typed error that ended the turn (LlmError, LimitExceeded,
        OutputValidationError, ...); :attr:`messages` is valid whatever happens once
        :meth:`close` has been called.
        """
        self.messages.append(user if isinstance(user, UserMessage) else UserMessage(user))
        return await self._loop()

    async def resume(self, pending: Sequence[str]) -> bool:
        """Go on with a turn loaded from the store (:attr:`messages` as stored, ending
        with calls ``pending`` unanswered, or none): those calls run (or get their
        answer's result), then the loop goes on as :meth:`run`'s."""
        if pending:
            last = self.messages[-1]
            index = len(self.messages) - 1
            while not isinstance(last, AssistantMessage):
                index -= 1
                last = self.messages[index]
            await self._run_tools(last, only=set(pending))
            if self.suspended:
                return False
        return await self._loop()

    def call_of(self, call_id: str) -> tuple[str, str]:
        """The tool name and arguments of call ``call_id`` of this turn ("" if none)."""
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage):
                for call in message.tool_calls or []:
                    if call.id == call_id:
                        return call.function.name, call.function.arguments
        return "", ""

    async def save(self) -> None:
        """Store what the turn has that the store has not (durable turns; one write at
        a time, the results of a round come concurrently)."""
        if self.append is None:
            return
        async with self._save_lock:
            end, usage = len(self.messages), self.usage
            new = self.messages[self.stored : end]
            delta = usage_minus(usage, self.stored_usage)
            if not new and delta == Usage():
                return
            await self.append(new, delta)
            self.stored, self.stored_usage = end, usage

    async def _loop(self) -> bool:
        tool_rounds = 0
        output_attempts = 0
        while True:
            if self.stop_after_step:
                return False
            if self.model_calls >= self.config.max_turns:
                raise LimitExceeded("max_turns", self.config.max_turns, "model calls per turn")
            response = await self._model_call()
            # Before any tool runs: results and the next prompt must name each call alike.
            message = unique_call_ids(response.message)
            self.messages.append(message)
            self._shown.clear()  # the whole reply is kept now
            await self.check_budget()  # the reply that went over is kept (close answers it)
            calls = message.tool_calls or []
            final = self._final_call(calls)
            if final is not None:
                # Tool mode: the final_result call's arguments are the answer.
                error = await self._answer_final(message, final)
                if error is None:
                    return True
                output_attempts += 1
                if output_attempts > self.config.output_retries:
                    raise OutputValidationError(self._output_name(), output_attempts, error)
                continue
            if calls:
                if tool_rounds >= self.config.max_tool_turns:
                    self.close("limit", f"max_tool_turns ({self.config.max_tool_turns}) reached")
                    raise LimitExceeded("max_tool_turns", self.config.max_tool_turns)
                tool_rounds += 1
                await self._run_tools(message)
                if self.suspended:
                    return False  # waits for answers: the session stores it suspended
                continue
            self.text = message.text
            if self.agent.output_type is None:
                await self._guard_output()
                return True
            error = self._validate_output(self.text)
            if error is None:
                return True
            output_attempts += 1
            if output_attempts > self.config.output_retries:
                raise OutputValidationError(self._output_name(), output_attempts, error)
            how = f"by calling {FINAL_TOOL}" if self.output_mode == "tool" else "with valid JSON"
            self.messages.append(
                UserMessage(f"Your answer is not valid: {error}. Answer again {how}.")
            )

    def close(self, status: str, detail: str = "") -> None:
        """Answer every call the turn left open with a synthetic ``status`` result, and
        keep the text of an answer cut off mid-stream (see the module docstring)."""
        self.messages.extend(synthetic_results(self.messages, status, detail))
        if self._shown:
            # Its tool calls (if any had started) are dropped: only the text was seen.
            self.messages.append(interrupted("".join(self._shown)))
            self._shown.clear()

    def result(self, status: am.TurnStatus, error: BaseException | None) -> am.TurnResult:
        """What the session answers for this turn once it is committed with ``status``."""
        kind = getattr(error, "kind", type(error).__name__) if error is not None else ""
        return am.TurnResult(
            session=self.session,
            turn=self.turn_id,
            status=status,
            text=self.text if status == "completed" else "",
            output=self.output if status == "completed" else None,
            usage=self.usage,
            model_calls=self.model_calls,
            tool_calls=self.tool_calls,
            error_kind=str(kind),
            error=str(error) if error is not None else "",
            calls=list(self.calls),
            cost=self.cost,
            awaiting=list(self.suspended.values()) if status == "suspended" else [],
        )

    # -- the model -----------------------------------------------------------------------

    def _offered_tools(self) -> list[ModelTool]:
        offered = []
        for definition in self.ports.definitions():
            function = definition.get("function", definition)
            name = str(function.get("name", ""))
            if not name or not self.agent.allows(name):
                continue
            offered.append(
                ModelTool(
                    FunctionDefinition(
                        name=name,
                        description=function.get("description"),
                        parameters=function.get("parameters"),
                    )
                )
            )
        for name, agent in self.subagents.items():
            description = agent.description or f"Ask the {name} agent to do a task."
            offered.append(ModelTool(FunctionDefinition(name, description, _TASK_SCHEMA)))
        return offered

    def _messages(self) -> list[ChatMessage]:
        """The whole prompt: system prompt, history, this turn so far."""
        if self.system_prompt:
            return [SystemMessage(self.system_prompt), *self.history, *self.messages]
        return [*self.history, *self.messages]

    async def _compacted(
        self, compactor: ActorRef[cm.CompactorMsg], reactive: ContextLengthError | None
    ) -> list[ChatMessage]:
        """The whole prompt as ``compactor`` returns it (``reactive``: after an overflow)."""
        messages = self._messages()
        request: cm.Compact | cm.CompactAfterOverflow
        if reactive is None:
            request = cm.Compact(messages=messages)
        else:
            request = cm.CompactAfterOverflow.from_error(messages, reactive)
        result = await compactor.ask(request)
        report = result.report
        if report.steps:
            await self.emit(
                am.Compacted(
                    tokens_before=report.tokens_before,
                    tokens_after=report.tokens_after,
                    steps=[s.name for s in report.steps],
                    reactive=reactive is not None,
                )
            )
        return list(result.messages)
