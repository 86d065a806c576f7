"""Property-testing your own retry policy: ``agcore_actors.testing`` + hypothesis.

    python -m pytest examples/test_retry_policy.py      (or: python examples/test_retry_policy.py)

``MY_POLICY`` is the retry policy a deployment chose. The test states what it promises
— a call that meets up to three 429s still succeeds, a server that asks to wait too
long is not waited for, the server's Retry-After is honoured, and no call waits longer
than the backoff cap allows — and hypothesis checks it over many failure patterns. The
model is a ``ScriptedProvider`` behind the real ``ProviderActor``, so the real retry
loop runs; trio's virtual clock makes minutes of backoff take no time.
"""

from __future__ import annotations

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from agcore_actors import ActorSystem
from agcore_actors.llm import (
    ChatRequest,
    ProviderConfig,
    ProviderRegistry,
    RateLimitError,
    RetryConfig,
    provider_spec,
    user,
)
from agcore_actors.llm import messages as lm
from agcore_actors.testing import ScriptedProvider, elapsed, virtual_clock

MY_POLICY = RetryConfig(max_retries=3, base_delay=0.5, max_delay=4.0, max_retry_after=30.0)
MY_CONFIG = ProviderConfig(retry=MY_POLICY)


@settings(max_examples=40, deadline=None)
@given(failures=st.integers(0, 5), wait=st.none() | st.floats(0, 60))
def test_my_retry_policy(failures: int, wait: float | None) -> None:
    model = ScriptedProvider([RateLimitError("scripted", retry_after=wait)] * failures + ["ok"])

    async def call() -> tuple[bool, float]:
        async with ActorSystem() as actors:
            llm = await actors.root.start_child(
                provider_spec("llm", registry=ProviderRegistry().register(model), config=MY_CONFIG)
            )
            with elapsed() as took:
                try:
                    await llm.ask(lm.Chat(ChatRequest(messages=[user("hi")])))
                except RateLimitError:
                    return False, took.seconds
            return True, took.seconds

    ok, seconds = trio.run(call, clock=virtual_clock())
    waits = wait is None or wait <= MY_POLICY.max_retry_after
    assert ok == (failures == 0 or (waits and failures <= MY_POLICY.max_retries))
    if ok:  # each retry waited at least Retry-After, and never over 5 s unless it asked
        assert failures * (wait or 0) <= seconds <= failures * max(wait or 0, 5.0)


if __name__ == "__main__":
    test_my_retry_policy()
    print("the retry policy keeps its promises")
