"""The one retry loop: hooks, per-attempt timeouts, the call deadline, backoff.

:class:`Caller` applies a :class:`RetryConfig`, :class:`Timeouts` and a
:class:`HookExecutor` to a provider. All waiting is on trio's clock, so the
loop runs on virtual time in tests.

- ``chat``: each attempt is bounded by ``timeouts.attempt`` and by the call
  deadline (``timeouts.call`` from the start of the call); an attempt cut by
  its own timeout is a retryable :class:`LlmTimeoutError`, one cut by the
  call deadline is final.
- ``stream``: the first delta must come within ``timeouts.attempt`` (one cancel
  scope per attempt); after that the provider applies ``timeouts.idle`` and the
  call deadline where it waits, at the network read (:class:`ReadLimits`), so
  no cancel scope is opened per event and none is held across a ``yield``: a
  slow reader never counts against the provider's timeouts. Once an output
  event (anything but ``UsageUpdate``/``Retrying``) was yielded, the call is
  never retried.
- Cancellation: cancelling the caller cancels the attempt in progress (the
  provider's HTTP response is closed as its generator unwinds) or the
  backoff sleep; no hook fires for a cancellation.
"""

from __future__ import annotations

import functools
import inspect
import math
import random
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING

import attrs
import msgspec
import trio

from ._errors import BlockedByHook, LlmError, LlmTimeoutError
from ._hooks import HookContext, HookEvent, HookExecutor
from ._provider import Provider, ReadLimits
from ._request import ChatRequest
from ._retry import RetryConfig, Timeouts, retry_decision
from ._stream import StreamAssembler
from ._usage import Usage
from .messages import ChatResponse, Finish, Retrying, StreamEvent, UsageUpdate

if TYPE_CHECKING:
    import httpx2


def _limit(now: float, seconds: float | None, deadline: float) -> float:
    return min(deadline, math.inf if seconds is None else now + seconds)


@functools.cache
def _stream_takes_limits(cls: type[Provider]) -> bool:
    try:
        parameters = inspect.signature(cls.stream).parameters
    except (TypeError, ValueError):
        return True
    return len(parameters) >= 4 or any(p.kind is p.VAR_POSITIONAL for p in parameters.values())


def _takes_limits(provider: Provider) -> bool:
    """Whether ``provider.stream`` takes :class:`ReadLimits` (a provider written
    before it did gets a cancel scope per event instead)."""
    return _stream_takes_limits(type(provider))


@attrs.define
class Caller:
    """Runs calls of any provider under one retry policy, timeouts and hooks.

    ``on_usage(provider, usage)`` is told every usage a provider reported,
    once per response (failed streamed attempts included when they got that
    far); the ProviderActor accounts it.
    """

    retry: RetryConfig = attrs.field(factory=RetryConfig)
    timeouts: Timeouts = attrs.field(factory=Timeouts)
    hooks: HookExecutor = attrs.field(factory=HookExecutor)
    rng: random.Random = attrs.field(factory=random.Random)
    on_usage: Callable[[str, Usage], None] | None = None

    async def _pre_request(self, name: str, request: ChatRequest) -> None:
        if self.hooks:
            reason = await self.hooks.block_reason(
                HookContext(HookEvent.PRE_REQUEST, name, request)
            )
            if reason is not None:
                raise BlockedByHook(name, reason)

    async def _after_error(
        self,
        name: str,
        request: ChatRequest,
        error: LlmError,
        retries: int,
        deadline: float,
        delivered: bool = False,
    ) -> float | None:
        """Decide on a failed attempt and run its hook: the delay before retry
        number ``retries + 1`` (after ON_RETRY), or None to give up (after
        ON_ERROR; the caller re-raises)."""
        decision = retry_decision(
            self.retry,
            error,
            retries,
            self.rng.random(),
            now=trio.current_time(),
            deadline=deadline,
            output_delivered=delivered,
        )
        if decision.delay is None:
            if self.hooks:
                await self.hooks.execute(HookContext(HookEvent.ON_ERROR, name, request, error))
            return None
        if self.hooks:
            await self.hooks.execute(
                HookContext(HookEvent.ON_RETRY, name, request, error, retries + 1, decision.delay)
            )
        return decision.delay

    def _deadline(self) -> float:
        return _limit(trio.current_time(), self.timeouts.call, math.inf)

    def _timeout(
        self, name: str, step_deadline: float, deadline: float, idle: bool = False
    ) -> LlmTimeoutError:
        if step_deadline >= deadline and self.timeouts.call is not None:
            return LlmTimeoutError(name, self.timeouts.call, scope="call")
        if idle:
            return LlmTimeoutError(name, self.timeouts.idle or math.inf, scope="idle")
        return LlmTimeoutError(name, self.timeouts.attempt or math.inf)

    async def chat(
        self, name: str, provider: Provider, client: httpx2.AsyncClient, request: ChatRequest
    ) -> ChatResponse:
        """One call of ``provider`` (registered as ``name``), retried per the policy."""
        deadline = self._deadline()
        retries = 0
        while True:
            if self.hooks:
                await self._pre_request(name, request)
            step_deadline = _limit(trio.current_time(), self.timeouts.attempt, deadline)
            try:
                with trio.CancelScope(deadline=step_deadline) as scope:
                    response = await provider.chat(client, request)
                if scope.cancelled_caught:
                    raise self._timeout(name, step_deadline, deadline)
            except LlmError as error:
                delay = await self._after_error(name, request, error, retries, deadline)
                if delay is None:
                    raise
                retries += 1
                await trio.sleep(delay)
                continue
            response = msgspec.structs.replace(response, provider=name, attempts=retries + 1)
            if self.on_usage is not None:
                self.on_usage(name, response.usage)
            if self.hooks:
                await self.hooks.execute(
                    HookContext(HookEvent.POST_REQUEST, name, request, usage=response.usage)
                )
            return response

    async def stream(
        self, name: str, provider: Provider, client: httpx2.AsyncClient, request: ChatRequest
    ) -> AsyncGenerator[StreamEvent, None]:
        """One streamed call: its events, retried per the policy before any output."""
        deadline = self._deadline()
        retries = 0
        delivered = False
        call_seconds = math.inf if self.timeouts.call is None else self.timeouts.call
        while True:
            await self._pre_request(name, request)
            assembler = StreamAssembler()
            limits = ReadLimits(
                idle=self.timeouts.idle, deadline=deadline, call_seconds=call_seconds
            )
            try:
                at_read = _takes_limits(provider)
                if at_read:
                    deltas = provider.stream(client, request, limits)
                else:
                    deltas = provider.stream(client, request)  # type: ignore[call-arg]
                async with aclosing(deltas):
                    step_deadline = _limit(trio.current_time(), self.timeouts.attempt, deadline)
                    idle = False
                    while True:
                        with trio.CancelScope(deadline=step_deadline) as scope:
                            delta = await anext(deltas, None)
                        if scope.cancelled_caught:
                            raise self._timeout(name, step_deadline, deadline, idle)
                        if delta is None:
                            break
                        for event in assembler.feed(delta):
                            delivered = delivered or not isinstance(event, UsageUpdate)
                            yield event
                        if at_read:
                            break
                        # A provider that ignores ReadLimits: bound each pull here.
                        idle = True
                        step_deadline = _limit(trio.current_time(), self.timeouts.idle, deadline)
                    if at_read:
                        async for delta in deltas:
                            for event in assembler.feed(delta):
                                if not delivered and not isinstance(event, UsageUpdate):
                                    delivered = True
                                yield event
            except LlmError as error:
                if assembler.usage is not None and self.on_usage is not None:
                    self.on_usage(name, assembler.usage)
                delay = await self._after_error(name, request, error, retries, deadline, delivered)
                if delay is None:
                    raise
                retries += 1
                yield Retrying(
                    attempt=retries, delay=delay, error_kind=error.kind, error=str(error)
                )
                await trio.sleep(delay)
                continue
            response = assembler.response(name, retries + 1)
            if self.on_usage is not None:
                self.on_usage(name, response.usage)
            if self.hooks:
                await self.hooks.execute(
                    HookContext(HookEvent.POST_REQUEST, name, request, usage=response.usage)
                )
            yield Finish(response)
            return
