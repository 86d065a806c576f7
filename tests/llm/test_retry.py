"""Retry policy properties: the pure functions, and the real retry loop on virtual time
(the public ScriptedProvider stands in for the network, which virtual time cannot drive)."""

from __future__ import annotations

import email.utils
import math
import random
from typing import Any

import httpx2
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from agcore_actors.llm import (
    AuthenticationError,
    ChatRequest,
    Content,
    ContextLengthError,
    HookExecutor,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
    RateLimitError,
    RequestError,
    RetryConfig,
    StreamError,
    Timeouts,
    user,
)
from agcore_actors.llm.policy import (
    parse_retry_after,
    retry_decision,
    retry_delay,
)
from agcore_actors.llm.wire import (
    Caller,
)
from agcore_actors.testing import ScriptedProvider, ScriptedReply

configs = st.builds(
    RetryConfig,
    max_retries=st.integers(0, 8),
    base_delay=st.floats(0.001, 5),
    max_delay=st.floats(0.001, 60),
    jitter=st.floats(0, 1),
    max_retry_after=st.floats(0, 300),
)
unit = st.floats(0, 1, exclude_max=True)


@given(configs, st.integers(1, 200), unit)
def test_backoff_stays_within_its_bounds(config: RetryConfig, k: int, u: float) -> None:
    delay = retry_delay(config, k, u)
    low = min(config.base_delay * 2.0 ** (k - 1), config.max_delay)
    assert low <= delay <= low * (1 + config.jitter) + 1e-9
    assert delay <= config.max_delay * (1 + config.jitter) + 1e-9


def test_backoff_without_jitter_is_the_seed_sequence() -> None:
    config = RetryConfig(jitter=0)
    assert [retry_delay(config, k, 0.5) for k in range(1, 7)] == [1, 2, 4, 8, 16, 30]


def _errors() -> st.SearchStrategy[LlmError]:
    return st.one_of(
        st.builds(RateLimitError, st.just("p"), st.none() | st.floats(0, 500)),
        st.builds(
            RequestError,
            st.just("p"),
            st.sampled_from([400, 404, 429, 500, 503]),
            st.just(""),
            st.none() | st.floats(0, 500),
        ),
        st.builds(
            LlmTimeoutError, st.just("p"), st.just(1.0), st.sampled_from(["attempt", "call"])
        ),
        st.builds(LlmConnectionError, st.just("p"), st.just("refused")),
        st.builds(StreamError, st.just("p"), st.just("cut"), truncated=st.booleans()),
        st.builds(AuthenticationError, st.just("p"), st.sampled_from([401, 403]), st.just("")),
        st.builds(ContextLengthError, st.just("p"), st.just(0), st.just(0)),
    )


@given(configs, _errors(), st.integers(0, 10), unit, st.floats(0, 1000), st.booleans())
def test_decide(
    config: RetryConfig, error: LlmError, done: int, u: float, left: float, delivered: bool
) -> None:
    decision = retry_decision(
        config, error, done, u, now=0.0, deadline=left, output_delivered=delivered
    )
    if not decision.retry:
        return
    assert decision.delay is not None
    assert error.is_retryable() and not delivered and done < config.max_retries
    assert decision.delay < left  # never sleeps past the deadline
    server_wait = getattr(error, "retry_after", None)
    if server_wait is not None:
        assert server_wait <= config.max_retry_after
        assert decision.delay >= server_wait  # Retry-After honoured
    else:
        assert decision.delay == retry_delay(config, done + 1, u)


def test_seed_retryable_set() -> None:
    assert RequestError("p", 429, "").is_retryable()
    assert RequestError("p", 500, "").is_retryable() and RequestError("p", 503, "").is_retryable()
    assert not any(RequestError("p", s, "").is_retryable() for s in (400, 401, 404))
    assert not AuthenticationError("p", 401, "").is_retryable()
    assert not ContextLengthError("p", 0, 0).is_retryable()
    assert not StreamError("p", "bad json").is_retryable()


@given(st.integers(0, 10_000), st.floats(1e9, 2e9))
def test_retry_after_forms(seconds: int, now: float) -> None:
    assert parse_retry_after(httpx2.Headers({"Retry-After": str(seconds)}), now) == seconds
    date = email.utils.formatdate(math.floor(now) + seconds, usegmt=True)
    parsed = parse_retry_after(httpx2.Headers({"Retry-After": date}), now)
    assert parsed is not None and abs(parsed - seconds) <= 1
    ms = parse_retry_after(httpx2.Headers({"retry-after-ms": str(seconds)}), now)
    assert ms == seconds / 1000
    assert parse_retry_after(httpx2.Headers({"Retry-After": "soon"}), now) is None


# -- the loop on virtual time ------------------------------------------------------------------


Step = tuple[float, LlmError | None, int]  # latency, error or None, outputs before it


def scripted(script: list[Step]) -> ScriptedProvider:
    """Each attempt: ``outputs`` content pieces spread over ``latency`` seconds, then
    ``error`` (or the finish)."""

    def reply(step: Step) -> ScriptedReply:
        latency, error, outputs = step
        gap = latency / max(outputs, 1)
        return ScriptedReply(
            text=["x"] * outputs or None,
            latency=gap,
            gap=gap,
            fail_after=None if error is None else outputs,
            error=error,
        )

    return ScriptedProvider([reply(step) for step in script])


retryable = st.one_of(
    st.builds(RateLimitError, st.just("p"), st.none() | st.floats(0, 20)),
    st.builds(RequestError, st.just("p"), st.just(503), st.just("")),
    st.builds(LlmConnectionError, st.just("p"), st.just("reset")),
    st.builds(StreamError, st.just("p"), st.just("cut"), truncated=st.just(True)),
)
steps = st.tuples(st.floats(0, 30), st.none() | retryable, st.integers(0, 3))


#: Never used for I/O: the scripted provider ignores it.
CLIENT = httpx2.AsyncClient()


def run_virtual(fn: Any, *args: Any) -> Any:
    return trio.run(fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(steps, min_size=1, max_size=6),
    st.builds(
        RetryConfig,
        max_retries=st.integers(0, 5),
        base_delay=st.floats(0.01, 5),
        max_delay=st.floats(0.01, 30),
        jitter=st.floats(0, 0.5),
    ),
    st.floats(1, 100),
    st.floats(5, 200),
    st.booleans(),
    st.integers(0, 2**32),
)
def test_loop_bounds_retries_and_never_passes_the_deadline(
    script: list[Step],
    retry: RetryConfig,
    attempt_timeout: float,
    call_timeout: float,
    streaming: bool,
    seed: int,
) -> None:
    provider = scripted(script)
    caller = Caller(
        retry,
        Timeouts(attempt=attempt_timeout, idle=attempt_timeout, call=call_timeout),
        HookExecutor(),
        random.Random(seed),
    )
    request = ChatRequest([user("q")])
    outcome: dict[str, Any] = {}
    output_attempts: list[int] = []

    async def main() -> None:
        start = trio.current_time()
        try:
            if streaming:
                async for event in caller.stream("p", provider, CLIENT, request):
                    if isinstance(event, Content):
                        output_attempts.append(provider.attempts)
            else:
                outcome["response"] = await caller.chat("p", provider, CLIENT, request)
        except LlmError as exc:
            outcome["error"] = exc
        outcome["elapsed"] = trio.current_time() - start

    run_virtual(main)
    assert provider.attempts <= retry.max_retries + 1
    assert outcome["elapsed"] <= call_timeout + 1e-6
    # Output came from one attempt only, the last one: no retry after output.
    assert set(output_attempts) <= {provider.attempts}


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), retryable, st.integers(0, 100))
def test_stream_is_never_retried_after_output(outputs: int, error: LlmError, seed: int) -> None:
    provider = scripted([(0.5, error, outputs), (0.5, None, 1)])
    caller = Caller(RetryConfig(max_retries=5), Timeouts(), HookExecutor(), random.Random(seed))
    got: list[Any] = []

    async def main() -> None:
        try:
            async for event in caller.stream("p", provider, CLIENT, ChatRequest([user("q")])):
                got.append(event)
        except LlmError as exc:
            got.append(exc)

    run_virtual(main)
    assert provider.attempts == 1
    assert got[-1] is error and len(got) == outputs + 1


@settings(max_examples=40, deadline=None)
@given(st.floats(0.5, 50), st.integers(0, 100))
def test_retry_after_is_waited_for_on_virtual_time(wait: float, seed: int) -> None:
    provider = scripted([(0.0, RateLimitError("p", wait), 0), (0.0, None, 0)])
    caller = Caller(
        RetryConfig(base_delay=0.01, max_delay=0.1),
        Timeouts(),
        HookExecutor(),
        random.Random(seed),
    )
    times: list[float] = []

    async def main() -> None:
        start = trio.current_time()
        await caller.chat("p", provider, CLIENT, ChatRequest([user("q")]))
        times.append(trio.current_time() - start)

    run_virtual(main)
    assert provider.attempts == 2 and times[0] >= wait
