"""``in_own_context``: a coroutine awaited in the current task with its own context."""

from __future__ import annotations

import contextvars

import pytest
import trio
import trio.testing

from agcore_actors.tools._context import in_own_context

user: contextvars.ContextVar[str] = contextvars.ContextVar("user", default="nobody")


async def test_what_the_coroutine_sets_stays_in_its_context() -> None:
    async def tool() -> str:
        user.set("alice")
        await trio.lowlevel.checkpoint()
        return user.get()

    assert await in_own_context(tool()) == "alice"
    assert user.get() == "nobody"


async def test_the_coroutine_sees_the_caller_s_values() -> None:
    async def tool() -> str:
        await trio.lowlevel.checkpoint()
        return user.get()

    token = user.set("bob")
    try:
        assert await in_own_context(tool()) == "bob"
    finally:
        user.reset(token)


async def test_an_error_comes_out_unchanged() -> None:
    async def tool() -> None:
        await trio.lowlevel.checkpoint()
        raise KeyError("k")

    with pytest.raises(KeyError, match="k"):
        await in_own_context(tool())


async def test_a_cancellation_reaches_the_coroutine_and_its_finally_runs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cleaned: list[str] = []

    async def tool() -> None:
        try:
            await trio.sleep(10)
        finally:
            cleaned.append(user.get())

    user_token = user.set("carol")
    try:
        with trio.move_on_after(1) as scope:
            await in_own_context(tool())
    finally:
        user.reset(user_token)
    assert scope.cancelled_caught
    assert cleaned == ["carol"]
    assert trio.current_time() == pytest.approx(1)


async def test_a_caught_cancellation_lets_the_coroutine_finish(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def tool() -> str:
        with trio.move_on_after(1):
            await trio.sleep(10)
        user.set("after")
        await trio.sleep(1)
        return user.get()

    assert await in_own_context(tool()) == "after"
    assert trio.current_time() == pytest.approx(2)
    assert user.get() == "nobody"


async def test_tasks_the_coroutine_starts_inherit_its_context() -> None:
    seen: list[str] = []

    async def child() -> None:
        seen.append(user.get())

    async def tool() -> None:
        user.set("dave")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(child)
        seen.append(await trio.to_thread.run_sync(user.get))

    await in_own_context(tool())
    assert seen == ["dave", "dave"]
    assert user.get() == "nobody"
