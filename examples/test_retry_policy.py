"""Property-testing your own retry policy: ``agcore_actors.testing`` + hypothesis.

    python -m pytest examples/test_retry_policy.py
    python examples/test_retry_policy.py                (the same, without pytest)

``MY_RETRY`` is the retry policy a deployment chose (the ``[retry]`` table of
``agcore.toml``, or ``ProviderConfig(retry=...)``). The test states what it promises to
the bot's users — a turn whose model call meets up to three 429s still completes, a
server that asks to wait too long is not waited for (the turn fails as ``rate_limit``),
the server's Retry-After is honoured, and no retry waits longer than the backoff cap
allows — and hypothesis checks it over many failure patterns. The bot runs for real on a
scripted model (``scripted_host``); virtual time makes minutes of backoff take no time.
"""

# --8<-- [start:imports]
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agcore_actors.agent.messages import TurnResult
from agcore_actors.llm import ProviderConfig, RateLimitError, RetryConfig
from agcore_actors.testing import elapsed, run_virtual, scripted_host

# --8<-- [end:imports]

# --8<-- [start:test]
MY_RETRY = RetryConfig(max_retries=3, base_delay=0.5, max_delay=4.0, max_retry_after=30.0)
MY_CONFIG = ProviderConfig(retry=MY_RETRY)


@settings(max_examples=40, deadline=None)
@given(failures=st.integers(0, 5), wait=st.none() | st.floats(0, 60))
def test_my_retry_policy(failures: int, wait: float | None) -> None:
    async def turn() -> tuple[TurnResult, float]:
        script = [RateLimitError("scripted", retry_after=wait)] * failures + ["ok"]
        async with scripted_host(script, provider=MY_CONFIG) as bot:
            with elapsed() as took:
                return await bot.run("s1", "hi"), took.seconds

    result, seconds = run_virtual(turn)
    waited = wait is None or wait <= MY_RETRY.max_retry_after
    ok = failures == 0 or (waited and failures <= MY_RETRY.max_retries)
    assert result.status == ("completed" if ok else "failed"), result.error
    if ok:  # each retry waited Retry-After, else at most the backoff cap plus its jitter
        cap = MY_RETRY.max_delay * (1 + MY_RETRY.jitter)
        assert failures * (wait or 0) <= seconds <= failures * max(wait or 0, cap)


# --8<-- [end:test]


if __name__ == "__main__":
    test_my_retry_policy()
    print("the retry policy keeps its promises")
