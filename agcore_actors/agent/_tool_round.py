"""The tool half of a turn: one round of the tool calls a model reply asked for.

:class:`ToolRound` is a part of :class:`~._turn.Turn` (a mixin: the state is the turn's).
A round runs the calls the executor may run in one ``ExecuteTools`` ask and each agent
called as a tool in a child session beside it, all children of the caller's task.

Guarantees, under cancellation too:

- every call of the reply gets exactly one tool message in the turn's ``messages``: the
  executor's result, a child session's answer, or a refusal (``unknown_tool``, repeated
  call, bad arguments of an agent call); a cancelled round keeps the results the executor
  had recorded and the answers of children that had finished, the turn's ``close``
  answers the rest;
- the agent's tool hooks run around each call (:mod:`~._guards`): ``before`` before
  it is sent (a denial is its ``denied`` result, new arguments are what runs),
  ``after`` on each outcome the round gives, before the model sees it; the budget's
  ``tool_calls_per_turn`` is checked before any call of a reply runs, and its
  ``concurrent_tool_calls`` bounds how many of the executor's run at once;
- a typed error of the executor (or :class:`PeerFailed` for a bug there) or of a child
  session's store ends the round with that error, the same whether or not children ran
  beside the executor: never an exception group, which the session would take for a bug
  of its own (a child's failing turn is its call's error result, not the round's);
- a durable turn's round (the turn has ``append``) stores the reply before any call runs,
  runs each call as an ask of its own and stores each result as it comes (so a crash
  loses no completed call), and leaves the calls held for an answer (``suspended``:
  waiting for approval, asked a question, or deferred by their tool) unanswered; a call
  whose answer gave its result does not run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
import trio

from .._decode import DECODE_ERRORS
from .._errors import AgcoreError
from ..actor import ActorCrashed, ActorStopped
from ..llm import (
    AssistantMessage,
    ContentPart,
    TextPart,
    ToolMessage,
    Usage,
    placeholder,
)
from ..llm import Message as ChatMessage
from ..tools import RunContext
from ..tools import messages as tm
from . import messages as am
from ._config import Agent, AgentConfig
from ._errors import LimitExceeded, PeerFailed
from ._guards import (
    ToolCallInfo,
    ToolOutcome,
    apply_after,
    apply_before,
    hook_call,
    keep_result,
)
from ._suspend import Answer, held

if TYPE_CHECKING:
    from ._turn import TurnPorts

T = TypeVar("T")
Emit = Callable[[am.TurnEvent], Awaitable[None]]
#: Runs agent ``Agent`` as a tool for call ``call_id`` on ``task``; its status, answer,
#: usage and cost.
RunChild = Callable[[Agent, str, str], Awaitable[tuple[am.ToolCallStatus, str, Usage, float]]]

_STATUS: dict[str, am.ToolCallStatus] = {
    "ok": "ok",
    "error": "error",
    "timeout": "timeout",
    "denied": "denied",
    "cancelled": "cancelled",
    "invalid_arguments": "invalid_arguments",
    "unknown_tool": "unknown_tool",
}


class ToolRound:
    """The tool rounds of a :class:`~._turn.Turn` (see the module docstring)."""

    # The turn's state this part uses: fields of Turn, which holds them (a Turn lives for
    # one turn, so the mixin gives it no slots of its own).
    session: str
    turn_id: str
    agent: Agent
    config: AgentConfig
    ports: TurnPorts
    emit: Emit
    messages: list[ChatMessage]
    usage: Usage
    model_calls: int
    tool_calls: int
    subagents: Mapping[str, Agent]
    run_child: RunChild | None
    run_context: RunContext[Any] | None
    cost: float
    _seen_calls: dict[str, int]
    append: Callable[[list[ChatMessage], Usage], Awaitable[None]] | None
    suspended: dict[str, am.AwaitingCall]
    answers: Mapping[str, Answer]

    if TYPE_CHECKING:  # Turn's (declared for the checker, not defined here)

        def close(self, status: str, detail: str = "") -> None: ...

        async def save(self) -> None: ...

    async def _check_call_cap(self, count: int) -> None:
        """The budget's ``tool_calls_per_turn``: more calls than it allows fail the turn
        before any of them runs (each answered ``limit``)."""
        cap = self.config.budget.tool_calls_per_turn
        used = self.tool_calls + count
        if cap is not None and used > cap:
            await self.emit(am.LimitReached(limit="tool_calls_per_turn", value=cap, used=used))
            self.close("limit", f"tool_calls_per_turn ({cap}) reached")
            raise LimitExceeded("tool_calls_per_turn", cap, used=used)

    async def _before(self, call_id: str, name: str, arguments: str) -> tuple[str, str | None]:
        """The arguments to run the call with, or a denial (the agent's ``before`` hook)."""
        hooks = self.agent.tool_hooks
        if hooks is None:
            return arguments, None
        assert self.run_context is not None
        info = ToolCallInfo(
            call_id=call_id, name=name, arguments=arguments, context=self.run_context
        )
        verdict = await hook_call("before", hooks.before(info))
        new, denied = apply_before(arguments, verdict)
        if denied is not None:
            await self.emit(
                am.ToolHookChanged(call_id=call_id, name=name, what="denied", reason=denied)
            )
        elif new != arguments:
            await self.emit(
                am.ToolHookChanged(call_id=call_id, name=name, what="arguments", arguments=new)
            )
        return new, denied

    async def _after(
        self, call_id: str, name: str, arguments: str, status: am.ToolCallStatus, content: str
    ) -> tuple[am.ToolCallStatus, str]:
        """The outcome the model sees (the agent's ``after`` hook may replace it)."""
        hooks = self.agent.tool_hooks
        if hooks is None:
            return status, content
        assert self.run_context is not None
        info = ToolCallInfo(
            call_id=call_id, name=name, arguments=arguments, context=self.run_context
        )
        outcome = ToolOutcome(status=status, content=content)
        verdict = await hook_call("after", hooks.after(info, outcome))
        final = apply_after(outcome, verdict)
        if final != outcome:
            await self.emit(am.ToolHookChanged(call_id=call_id, name=name, what="result"))
        return final.status, final.content

    async def _run_tools(self, message: AssistantMessage, only: set[str] | None = None) -> None:
        calls = [c for c in message.tool_calls or [] if only is None or c.id in only]
        durable = self.append is not None
        if durable:
            await self.save()  # the reply, before any of its calls runs
        await self._check_call_cap(len(calls))
        self.tool_calls += len(calls)
        runnable: list[tm.ToolCall] = []
        children: list[tuple[str, Agent, str]] = []
        refused: dict[str, tuple[am.ToolCallStatus, str]] = {}
        ran_with: dict[str, str] = {}
        for call in calls:
            name, arguments = call.function.name, call.function.arguments
            await self.emit(am.ToolCallStarted(call_id=call.id, name=name, arguments=arguments))
            arguments, denied = await self._before(call.id, name, arguments)
            ran_with[call.id] = arguments
            if denied is not None:
                refused[call.id] = ("denied", f"Error: the call was denied: {denied}")
                continue
            given = self.answers.get(call.id)
            if given is not None and given.result is not None:
                refused[call.id] = ("ok", given.result)  # answered with its result
                continue
            key = name + "\x00" + arguments
            self._seen_calls[key] = self._seen_calls.get(key, 0) + 1
            if name in self.subagents and self.run_child is not None:
                task = _task_of(arguments)
                if task is None:
                    refused[call.id] = (
                        "invalid_arguments",
                        'Error: invalid arguments: expected {"task": "<text>"}',
                    )
                else:
                    children.append((call.id, self.subagents[name], task))
            elif not self.agent.allows(name) or self.ports.tools is None:
                refused[call.id] = ("unknown_tool", f"Error: tool {name!r} is not available")
            elif self._seen_calls[key] > self.config.max_repeated_calls:
                refused[call.id] = (
                    "error",
                    f"Error: the same call of {name!r} was already made "
                    f"{self.config.max_repeated_calls} times in this turn; do not repeat it",
                )
            else:
                runnable.append(tm.ToolCall(id=call.id, name=name, arguments=arguments))
        results: dict[str, tm.ToolResult] = {}
        answered: dict[str, tuple[am.ToolCallStatus, str]] = {}

        async def execute() -> None:
            assert self.ports.tools is not None
            results.update(await peer(self.ports.tools.name, self._execute(runnable)))

        async def child(call_id: str, agent: Agent, task: str) -> None:
            assert self.run_child is not None
            status, content, usage, cost = await self.run_child(agent, call_id, task)
            self.usage = self.usage + usage
            self.cost += cost
            status, content = await self._after(
                call_id, agent.name, ran_with[call_id], status, content
            )
            # Kept at once, so a cancellation of its siblings does not lose it.
            self.messages.append(ToolMessage(content, call_id))
            answered[call_id] = (status, content)
            await self.save()  # a durable turn's: stored before it is reported
            await self.emit(
                am.ToolCallFinished(
                    call_id=call_id, name=agent.name, status=status, content=content
                )
            )

        async def execute_one(call: tm.ToolCall, limiter: trio.CapacityLimiter) -> None:
            assert self.ports.tools is not None
            async with limiter:
                got = await peer(self.ports.tools.name, self._execute([call], call.id))
            result = got[call.id]
            if result.status is tm.ToolStatus.DEFERRED:
                # Its result comes later: the turn suspends after this round.
                self.suspended[call.id] = am.AwaitingCall(
                    call_id=call.id,
                    name=call.name,
                    arguments=ran_with[call.id],
                    kind="deferred",
                    message=result.content.removeprefix("Error: "),
                )
            if held(self.suspended, call.id):
                return  # held for an answer: the turn suspends after this round
            status = _STATUS.get(result.status.value, "error")
            status, content = await self._after(
                call.id, call.name, ran_with[call.id], status, result.content
            )
            self.messages.append(ToolMessage(content, call.id))
            answered[call.id] = (status, content)
            await self.save()  # stored before it is reported: a crash keeps it
            await self.emit(
                am.ToolCallFinished(call_id=call.id, name=call.name, status=status, content=content)
            )

        if not children and not durable:
            # The usual batch: one ask, awaited here (no nursery, no task). An error of
            # the executor's reaches the turn as it is (a failed turn, not a group).
            if runnable:
                await execute()
        else:
            try:
                async with trio.open_nursery() as nursery:
                    if durable:
                        cap = self.config.budget.concurrent_tool_calls
                        limiter = trio.CapacityLimiter(max(1, cap or len(runnable) or 1))
                        for one in runnable:
                            nursery.start_soon(execute_one, one, limiter)
                    elif runnable:
                        nursery.start_soon(execute)
                    for call_id, agent, task in children:
                        nursery.start_soon(child, call_id, agent, task)
            except BaseExceptionGroup as group:
                # The same failed turn as without subagents, not a group the session
                # would take for a bug.
                raise _typed_failure(group) from None
        for call in calls:
            if call.id in answered or held(self.suspended, call.id):
                continue
            parts: list[ContentPart] = []
            if call.id in refused:
                status, content = refused[call.id]
            else:
                result = results[call.id]
                status, content = _STATUS.get(result.status.value, "error"), result.content
                parts = result.parts or []
            status, content = await self._after(
                call.id, call.function.name, ran_with[call.id], status, content
            )
            self.messages.append(ToolMessage(tool_content(content, parts), call.id))
            await self.emit(
                am.ToolCallFinished(
                    call_id=call.id,
                    name=call.function.name,
                    status=status,
                    content=content,
                    media=[placeholder(p) for p in parts],
                )
            )
        if durable:
            await self.save()

    async def _execute(self, calls: list[tm.ToolCall], part: str = "") -> dict[str, tm.ToolResult]:
        assert self.ports.tools is not None
        batch_id = f"{self.session}/{self.turn_id}/{self.model_calls}"
        if part:
            batch_id += "/" + part  # one call of a durable round
        request = tm.ExecuteTools(
            batch_id=batch_id,
            calls=calls,
            session_id=self.session,
            trace_id=self.turn_id,
            default_timeout=self.config.tool_timeout,
            max_concurrency=self.config.budget.concurrent_tool_calls,
        )
        try:
            reply = await self.ports.tools.ask(request)
        except trio.Cancelled:
            # The executor recorded what finished; the rest are cancelled. Keep the real
            # results where there are some, so the transcript says what really ran —
            # unless the agent's ``after`` hook must see every result first (it may
            # redact): those calls are answered ``cancelled`` by the turn's close.
            hooks = self.agent.tool_hooks
            if hooks is not None and hooks.after is not keep_result:
                raise
            with trio.CancelScope(shield=True), trio.move_on_after(5.0):
                recorded = await self.ports.tools.ask(tm.FetchResults(batch_id))
                if recorded is not None:
                    for result in recorded.results:
                        content = tool_content(result.content, result.parts or [])
                        self.messages.append(ToolMessage(content, result.call_id))
            raise
        return {result.call_id: result for result in reply.results}


def tool_content(text: str, parts: list[ContentPart]) -> str | list[ContentPart]:
    """A tool message's content: ``text``, then the result's media parts if any."""
    if not parts:
        return text
    return [TextPart(text), *parts] if text else list(parts)


def _task_of(arguments: str) -> str | None:
    try:
        decoded = msgspec.json.decode(arguments or "{}")
    except DECODE_ERRORS:
        return None
    task = decoded.get("task") if isinstance(decoded, dict) else None
    return task if isinstance(task, str) else None


def _typed_failure(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """What a tool batch beside subagents ends the turn with: its first typed error when
    the rest of ``group`` is the cancellations that error caused (or came with); else the
    group as it is (a bug, or only cancellations: trio's to handle)."""
    typed, rest = group.split(AgcoreError)
    if typed is None:
        return group
    if rest is not None:
        _, other = rest.split(trio.Cancelled)
        if other is not None:
            return group
    first: BaseException = typed
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first


async def peer(actor: str, work: Awaitable[T]) -> T:
    """``await work``, an ask of another actor: an error of ours passes as it is, but
    the peer crashing or stopping under the ask, or anything else (a bug in that actor),
    becomes :class:`PeerFailed` (a parked peer's ``ActorParked`` passes: it says when
    to try again)."""
    try:
        return await work
    except (ActorCrashed, ActorStopped) as exc:
        raise PeerFailed(actor, exc) from exc
    except AgcoreError:
        raise
    except Exception as exc:
        raise PeerFailed(actor, exc) from exc
