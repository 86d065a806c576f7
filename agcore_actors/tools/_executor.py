"""ToolExecutor: the actor that runs a batch of tool calls in parallel, and its spec.

Its protocol is :mod:`agcore_actors.tools.messages`; the pure rules it applies
(timeouts, argument decoding, result shaping, approval) are in
:mod:`agcore_actors.tools.policy`.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from typing import Any, ClassVar, assert_never

import attrs
import trio

from .._validators import non_negative
from ..actor import (
    DEFAULT_ISOLATION,
    Actor,
    ActorRef,
    ActorStopped,
    ChildSpec,
    CircuitBreaker,
    MailboxFull,
)
from ._approval import DEFAULT_APPROVAL_TIMEOUT, Approver, decide_approval
from ._context import in_own_context
from ._errors import (
    BatchInProgress,
    ExecutionFailed,
    PermissionDenied,
    ToolError,
    ToolNotFound,
    ToolTimeout,
)
from ._permission import PermissionChecker
from ._registry import ToolRegistry
from ._results import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_TOOL_TIMEOUT,
    cancelled_result,
    effective_timeout,
    error_result,
    ok_result,
    parse_arguments,
)
from ._threads import ToolThreads, default_tool_threads
from ._tool import CancelToken, ProgressReporter, Tool, ToolContext
from .messages import (
    ApprovalDecision,
    ApprovalRequest,
    CancelBatch,
    ExecuteTools,
    FetchResults,
    ToolCall,
    ToolExecutorMsg,
    ToolExecutorReply,
    ToolProgress,
    ToolResult,
    ToolResults,
)


def _optional_seconds(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        non_negative(_, attribute, value)  # type: ignore[arg-type]


@attrs.frozen
class ExecutorConfig:
    """How a :class:`ToolExecutor` bounds calls and keeps results."""

    #: Per-call timeout when the tool sets none; None or 0 = no timeout.
    default_timeout: float | None = attrs.field(
        default=DEFAULT_TOOL_TIMEOUT, validator=_optional_seconds
    )
    #: The cap on a tool message's UTF-8 size; longer results are cut.
    max_result_bytes: int = attrs.field(
        default=DEFAULT_MAX_RESULT_BYTES, validator=attrs.validators.ge(1)
    )
    #: Seconds an approver gets before the call is denied.
    approval_timeout: float = attrs.field(default=DEFAULT_APPROVAL_TIMEOUT, validator=non_negative)
    #: How many recent batches ``FetchResults`` can still answer for.
    max_recorded_batches: int = attrs.field(default=256, validator=attrs.validators.ge(1))


#: The permission checker an executor applies unless told otherwise (frozen: shared).
DEFAULT_CHECKER = PermissionChecker()


class ToolExecutor(Actor[ToolExecutorMsg]):
    """Runs the tools of ``registry``, every call of a batch in parallel.

    ``checker`` and ``approver`` gate calls. The default checker applies
    :class:`~agcore_actors.tools.PermissionConfig`'s defaults (Shell and Delete refused,
    Read and Network allowed, tools that declare nothing allowed); ``checker=None``
    turns permission checks off. ``events``
    receives :class:`~agcore_actors.tools.messages.ToolProgress`, told without waiting
    and dropped when its mailbox is full. Sync tools run on ``threads`` (None: the
    :class:`~agcore_actors.tools.ToolThreads` shared by the whole trio run).

    Semantics:
        Every call of an ``ExecuteTools`` gets exactly one result, in call order,
        whatever happens: unknown tool, invalid arguments, permission or approval
        denied, failure, timeout, cancellation. Each call runs under its own timeout
        (the tool's ``timeout``, else ``config.default_timeout``); approval, when a tool
        needs it, is waited for first under ``config.approval_timeout`` and does not
        count against the tool's. Batches run concurrently (up to 64 at once); the calls
        of a batch all at once, or ``max_concurrency`` at a time, started in call order.

    Cancellation:
        ``CancelBatch`` cancels the running calls of a batch, which still replies (its
        unfinished calls ``cancelled``). When the asker of ``ExecuteTools`` is
        cancelled, the batch is cancelled with it: every running call is cancelled,
        sync tools' worker threads are abandoned (their ``ctx.cancelled`` turns true),
        and no task of the batch is left once the cancellation has unwound (an abandoned
        thread runs on until its function returns, ``threads`` counting it meanwhile, and
        so does a child process it started with ``subprocess``; one started with
        :func:`~agcore_actors.tools.run_process_sync` is killed with its process group
        and the thread returns). Either way
        the results (finished calls keep theirs) are recorded for ``FetchResults``; the
        last ``config.max_recorded_batches`` batches are kept.

    Errors:
        A call's failure is that call's result, never the batch's error: any exception
        a tool raises, ``SystemExit`` included (argparse, click, ``sys.exit``), except
        a cancellation and ``KeyboardInterrupt``.
        ``ExecuteTools`` raises :class:`~agcore_actors.tools.BatchInProgress` (to the
        asker only) when its batch id is already running.
    """

    # Until ChildSpec takes max_concurrency, the limit stays a class attribute.
    max_concurrency: ClassVar[int] = 64
    expected_errors = (BatchInProgress,)

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        checker: PermissionChecker | None = DEFAULT_CHECKER,
        approver: Approver | None = None,
        events: ActorRef[ToolProgress] | None = None,
        config: ExecutorConfig | None = None,
        threads: ToolThreads | None = None,
    ) -> None:
        self.registry = registry
        self.checker = checker
        self.approver = approver
        self.events = events
        self.config = config or ExecutorConfig()
        self.threads = threads
        self._running: dict[str, trio.CancelScope] = {}
        self._recorded: OrderedDict[str, ToolResults] = OrderedDict()

    async def handle(self, msg: ToolExecutorMsg) -> ToolExecutorReply:
        match msg:
            case ExecuteTools():
                return await self._on_execute(msg)
            case CancelBatch():  # a tell: no reply
                self._on_cancel(msg)
                return None
            case FetchResults():
                return self._on_fetch(msg)
            case _:
                assert_never(msg)

    def _on_cancel(self, msg: CancelBatch) -> None:
        scope = self._running.get(msg.batch_id)
        if scope is not None:
            scope.cancel()

    def _on_fetch(self, msg: FetchResults) -> ToolResults | None:
        return self._recorded.get(msg.batch_id)

    async def _on_execute(self, msg: ExecuteTools) -> ToolResults:
        if msg.batch_id in self._running:
            raise BatchInProgress(msg.batch_id)
        results: list[ToolResult | None] = [None] * len(msg.calls)
        try:
            if len(msg.calls) == 1:
                # One call: no task of its own but its own context, and its scope is the
                # batch's (a cancel scope costs more than an ask).
                await in_own_context(self._run_call(msg, 0, msg.calls[0], results, alone=True))
            else:
                limit = msg.max_concurrency
                with trio.CancelScope() as batch_scope:
                    self._running[msg.batch_id] = batch_scope
                    async with trio.open_nursery() as nursery:
                        if limit is None or limit >= len(msg.calls):
                            for index, call in enumerate(msg.calls):
                                nursery.start_soon(self._run_call, msg, index, call, results)
                        else:
                            limiter = trio.CapacityLimiter(max(1, limit))
                            for index, call in enumerate(msg.calls):
                                await limiter.acquire_on_behalf_of(index)
                                nursery.start_soon(
                                    self._run_limited, limiter, msg, index, call, results
                                )
        finally:
            # Runs on cancellation of the asker too: no await here.
            self._running.pop(msg.batch_id, None)
            final = ToolResults(
                msg.batch_id,
                [
                    r if r is not None else cancelled_result(c)
                    for r, c in zip(results, msg.calls, strict=True)
                ],
            )
            self._recorded[msg.batch_id] = final
            self._recorded.move_to_end(msg.batch_id)
            while len(self._recorded) > self.config.max_recorded_batches:
                self._recorded.popitem(last=False)
        return final

    async def _run_limited(
        self,
        limiter: trio.CapacityLimiter,
        msg: ExecuteTools,
        index: int,
        call: ToolCall,
        results: list[ToolResult | None],
    ) -> None:
        """:meth:`_run_call` holding one of the batch's ``max_concurrency`` slots (taken
        for it, in call order, by the batch's task)."""
        try:
            await self._run_call(msg, index, call, results)
        finally:
            limiter.release_on_behalf_of(index)

    async def _run_call(
        self,
        msg: ExecuteTools,
        index: int,
        call: ToolCall,
        results: list[ToolResult | None],
        alone: bool = False,
    ) -> None:
        """Run one call into ``results[index]``; ``alone``: the batch's only call, whose
        scope (its timeout) is also the one ``CancelBatch`` cancels."""
        cap = self.config.max_result_bytes
        token = CancelToken()
        ctx = ToolContext(
            session_id=msg.session_id,
            trace_id=msg.trace_id,
            call_id=call.id,
            cancel_token=token,
            report=self._reporter(msg.batch_id, call),
            threads=self.threads or default_tool_threads(),
        )
        scope = trio.CancelScope()  # the call's timeout, from when it is admitted
        if alone:
            self._running[msg.batch_id] = scope
        done, value = False, None
        try:
            with scope:
                tool, args = await self._admit(msg, call)
                default = msg.default_timeout
                if default is None:
                    default = self.config.default_timeout
                timeout = effective_timeout(tool.timeout, default)
                scope.deadline = trio.current_time() + timeout
                try:
                    value = await tool.call(args, ctx)
                    done = True
                finally:
                    if scope.cancel_called:
                        token.cancel()
            if scope.cancel_called and trio.current_time() >= scope.deadline:
                raise ToolTimeout(call.name, timeout)
            # Not done: CancelBatch cancelled this batch's only call.
            results[index] = ok_result(call, value, cap) if done else cancelled_result(call)
        except ToolError as exc:
            results[index] = error_result(call, exc, cap)
        except BaseException as exc:
            if _propagates(exc):
                token.cancel()
                results[index] = cancelled_result(call)
                raise
            # Anything else a tool raises (SystemExit from argparse or click, a group
            # from its own nursery) is this call's failure, never the batch's.
            failure = ExecutionFailed(call.name, f"{type(exc).__name__}: {exc}")
            results[index] = error_result(call, failure, cap)

    async def _admit(self, msg: ExecuteTools, call: ToolCall) -> tuple[Tool, Any]:
        """The tool and decoded arguments, or the ToolError that refuses the call."""
        tool = self.registry.get(call.name)
        if tool is None:
            raise ToolNotFound(call.name)
        args = parse_arguments(call)
        if self.checker is not None:
            self.checker.check(call.name, tool.required_permissions)
        if tool.requires_approval:
            request = ApprovalRequest(
                call_id=call.id,
                tool=call.name,
                arguments=args,
                session_id=msg.session_id,
                description=tool.description,
            )
            decision = await self._approve(request)
            if not decision.allow:
                raise PermissionDenied(
                    call.name, "Approval", f"was not approved: {decision.reason}"
                )
        return tool, args

    async def _approve(self, request: ApprovalRequest) -> ApprovalDecision:
        if self.approver is None:
            return decide_approval(None, timed_out=False)
        answer: ApprovalDecision | None = None
        failed: str | None = None
        with trio.move_on_after(self.config.approval_timeout) as scope:
            try:
                if isinstance(self.approver, ActorRef):
                    answer = await self.approver.ask(request)
                else:
                    answer = await self.approver(request)
            except Exception as exc:
                failed = f"{type(exc).__name__}: {exc}"
        return decide_approval(answer, timed_out=scope.cancelled_caught, failed=failed)

    def _reporter(self, batch_id: str, call: ToolCall) -> ProgressReporter:
        events = self.events

        def report(progress: float, total: float | None, message: str | None) -> None:
            if events is None:
                return
            # Progress is advisory: never block or fail a tool over it.
            with contextlib.suppress(MailboxFull, ActorStopped):
                events.tell_nowait(
                    ToolProgress(
                        batch_id=batch_id,
                        call_id=call.id,
                        name=call.name,
                        progress=progress,
                        total=total,
                        message=message,
                    )
                )

        return report


def _propagates(exc: BaseException) -> bool:
    """Cancellation (also a group of only cancellations) and Ctrl-C are not a tool's
    failure: they unwind the batch."""
    if isinstance(exc, trio.Cancelled | KeyboardInterrupt | GeneratorExit):
        return True
    if isinstance(exc, BaseExceptionGroup):
        if exc.subgroup(KeyboardInterrupt) is not None:
            return True
        return exc.split(trio.Cancelled)[1] is None
    return False


def tool_executor_spec(
    name: str,
    *,
    registry: ToolRegistry,
    checker: PermissionChecker | None = DEFAULT_CHECKER,
    approver: Approver | None = None,
    events: ActorRef[ToolProgress] | None = None,
    config: ExecutorConfig | None = None,
    threads: ToolThreads | None = None,
    shutdown: float = 5.0,
    isolate: CircuitBreaker | None = DEFAULT_ISOLATION,
) -> ChildSpec[ToolExecutorMsg]:
    """A child spec for a :class:`ToolExecutor` called ``name``.

    Every (re)start builds a fresh executor over the same ``registry``; the results
    recorded for ``FetchResults`` do not survive a restart. ``shutdown`` is the grace a
    stop gives running batches before they are cancelled. ``isolate`` parks an executor
    that keeps crashing: its askers get ``ActorParked`` for a while and its crashes never
    use up its supervisor's restart intensity (None: plain OTP restarts).
    """
    config = config or ExecutorConfig()

    def factory() -> ToolExecutor:
        return ToolExecutor(
            registry,
            checker=checker,
            approver=approver,
            events=events,
            config=config,
            threads=threads,
        )

    return ChildSpec(name=name, factory=factory, shutdown=shutdown, isolate=isolate)
