"""A bug in provider code never takes the runtime down: every ask gets an error at
once, the ProviderActor is parked (isolated) while it keeps crashing, and it serves
again once the bug is gone."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from agcore_actors import ActorSystem
from agcore_actors.actor import ActorError, ActorParked
from agcore_actors.llm import (
    Chat,
    ChatRequest,
    ChatStream,
    ProviderRegistry,
    provider_spec,
    user,
)
from agcore_actors.testing import ScriptedProvider

BUG = "bug in provider code"


class Switch:
    """A provider script whose every call raises a plain RuntimeError while ``broken``."""

    def __init__(self) -> None:
        self.broken = True

    def __call__(self, request: ChatRequest, attempt: int) -> str:
        if self.broken:
            raise RuntimeError(BUG)
        return "fine"


def chat() -> Chat:
    return Chat(request=ChatRequest([user("hi")]))


async def test_a_provider_bug_fails_50_concurrent_asks_promptly_and_the_system_stays_up(
    autojump_clock: trio.testing.MockClock,
) -> None:
    script = Switch()
    registry = ProviderRegistry().register(ScriptedProvider(script))
    told: list[tuple[BaseException, float]] = []
    async with ActorSystem(strict=True, seed=0) as system:
        llm = await system.root.start_child(provider_spec("llm", registry=registry))

        async def ask() -> None:
            begun = trio.current_time()
            try:
                await llm.ask(chat())
            except Exception as exc:
                told.append((exc, trio.current_time() - begun))

        async with trio.open_nursery() as nursery:
            for _ in range(50):
                nursery.start_soon(ask)
        assert len(told) == 50
        for exc, took in told:
            # The ask whose call crashed the actor gets the bug itself (a session maps it
            # to PeerFailed); every other one a typed runtime error.
            assert isinstance(exc, ActorError) or str(exc) == BUG, exc
            assert took <= 2.0  # restart backoffs only: never a hang
        # Three crashes in a row park it: the asks still queued fail with ActorParked.
        assert any(isinstance(exc, ActorParked) for exc, _ in told)
        # Parked: a new ask fails at once, and says when the actor is tried again.
        begun = trio.current_time()
        with pytest.raises(ActorParked) as info:
            await llm.ask(chat())
        assert trio.current_time() == begun
        assert info.value.kind == "actor_parked" and info.value.is_retryable()
        assert info.value.retry_in is not None and info.value.retry_in > 0
        assert "llm" in system.root.children()
        # The bug goes away: after the park, the actor is started again and serves.
        script.broken = False
        await trio.sleep(info.value.retry_in)
        reply = await llm.ask(chat())
        assert reply.message.content == "fine"


async def test_a_parked_actor_that_still_crashes_is_parked_again_for_longer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    script = Switch()
    registry = ProviderRegistry().register(ScriptedProvider(script))
    async with ActorSystem(strict=True, seed=0) as system:
        llm = await system.root.start_child(provider_spec("llm", registry=registry))
        parks: list[float] = []
        for _ in range(100):  # a bounded loop: an ask that fails at once never yields
            try:
                await llm.ask(chat())
            except ActorParked as exc:
                parks.append(exc.retry_in)
                if len(parks) == 3:
                    break
                await trio.sleep(exc.retry_in)  # then the trial: it crashes again
            except RuntimeError as exc:
                assert str(exc) == BUG
        assert len(parks) == 3 and parks[0] < parks[1] < parks[2]
        assert "llm" in system.root.children()


async def test_streamed_calls_to_a_buggy_provider_all_end_with_an_error_promptly(
    autojump_clock: trio.testing.MockClock,
) -> None:
    script = Switch()
    registry = ProviderRegistry().register(ScriptedProvider(script))
    told: list[BaseException] = []
    async with ActorSystem(strict=True, seed=0) as system:
        llm = await system.root.start_child(provider_spec("llm", registry=registry))

        async def read() -> None:
            try:
                async with llm.stream(ChatStream(request=ChatRequest([user("hi")]))) as events:
                    async for _ in events:
                        pass
            except Exception as exc:
                told.append(exc)

        begun = trio.current_time()
        async with trio.open_nursery() as nursery:
            for _ in range(30):
                nursery.start_soon(read)
        assert len(told) == 30 and trio.current_time() - begun <= 2.0
        assert all(isinstance(e, ActorError) or str(e) == BUG for e in told)
        assert any(isinstance(e, ActorParked) for e in told)
        assert "llm" in system.root.children()
