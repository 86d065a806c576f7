"""AsyncioHost: the SessionHost in an asyncio program, on trio's guest mode.

Each test is a plain function running its own ``asyncio.run`` (the asyncio loop is the
host of the trio run); what the trio API does for the same input is the reference.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import random
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.actor import ActorStopped
from agcore_actors.agent import HostConfig, SessionHost, transcript_errors
from agcore_actors.agent import messages as am
from agcore_actors.asyncio import AsyncioHost
from agcore_actors.blocking import open_host
from agcore_actors.config import parse_settings
from agcore_actors.llm import UserMessage, image_part_of
from agcore_actors.store import SqliteSessions
from tests.asyncio.rig import Model, builder, no_threads_left, tool_results
from tests.serve.helpers import fake_openai


@pytest.fixture(autouse=True)
def threads_checked() -> Iterator[None]:
    """Every test ends with no thread it started still alive."""
    with no_threads_left():
        yield


def in_asyncio(main: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``main`` under asyncio.run and check that it left no asyncio task behind."""

    async def checked() -> Any:
        result = await main()
        assert asyncio.all_tasks() == {asyncio.current_task()}
        return result

    return asyncio.run(checked())


def test_a_turn_and_a_streamed_turn() -> None:
    model = Model()

    async def main() -> None:
        async with AsyncioHost(builder(model)) as host:
            result = await host.run("s1", "hello")
            assert (result.status, result.text) == ("completed", "echo: hello")
            events = [event async for event in host.submit("s1", "stream")]
            assert isinstance(events[0], am.TurnStarted)
            deltas = [e.text for e in events if isinstance(e, am.TextDelta)]
            assert deltas == ["ec", "h", "o"]
            assert isinstance(events[-1], am.TurnCompleted)
            assert events[-1].result.text == "echo"
            assert (await host.snapshot()).activated == 1
            assert await host.live_sessions() == ["s1"]
            info = await host.ask("s1", am.GetSessionInfo())
            assert info.turns == 2

    in_asyncio(main)


def test_a_turn_with_an_image_from_asyncio() -> None:
    image = image_part_of(b"\x89PNG", "image/png")

    async def main() -> None:
        async with AsyncioHost(builder(Model())) as host:
            result = await host.run("s1", "what is it?", parts=[image])
            assert result.text == "parts: TextPart ImagePart"
            events = [e async for e in host.submit("s1", "", parts=[image, image])]
            assert isinstance(events[-1], am.TurnCompleted)
            assert events[-1].result.text == "parts: ImagePart ImagePart"

    in_asyncio(main)


def test_an_error_in_a_tool_is_a_tool_result_and_the_turn_completes() -> None:
    model = Model()

    async def main() -> None:
        async with AsyncioHost(builder(model)) as host:
            events = [event async for event in host.submit("s1", "broken")]
            finished = [e for e in events if isinstance(e, am.ToolCallFinished)]
            assert [(e.call_id, e.status) for e in finished] == [("b1", "error")]
            assert isinstance(events[-1], am.TurnCompleted)
            assert events[-1].result.text == "done"

    in_asyncio(main)


async def _trio_outcomes(model: Model, texts: list[str]) -> list[tuple[str, str]]:
    """What the trio API gives for each text: (status or error class, kind)."""
    out = []
    async with ActorSystem() as system:
        bundle = (await builder(model)(system)).build()
        async with SessionHost(system, bundle) as host:
            for n, text in enumerate(texts):
                out.append(await _outcome(host.run(f"s{n}", text)))
    return out


async def _outcome(call: Awaitable[am.TurnResult]) -> tuple[str, str]:
    try:
        result = await call
    except Exception as exc:
        return type(exc).__qualname__, getattr(exc, "kind", "")
    return result.status, result.error_kind


def test_provider_errors_surface_as_the_trio_api_gives_them() -> None:
    texts = ["auth", "bug", "hello", "bug", "hello"]
    reference = trio.run(_trio_outcomes, Model(), texts)

    async def main() -> list[tuple[str, str]]:
        async with AsyncioHost(builder(Model())) as host:
            return [await _outcome(host.run(f"s{n}", text)) for n, text in enumerate(texts)]

    assert in_asyncio(main) == reference
    assert reference[0] == ("failed", "llm_authentication")
    assert reference[2] == ("completed", "")


def test_a_host_error_is_raised_as_its_own_class() -> None:
    async def main() -> None:
        host = AsyncioHost(builder(Model()))
        with pytest.raises(ActorStopped):  # not entered yet
            await host.run("s1", "hello")
        async with host:
            pass
        with pytest.raises(ActorStopped):  # left
            await host.run("s1", "hello")

    in_asyncio(main)


def test_a_failing_build_is_raised_by_the_async_with() -> None:
    async def build(system: ActorSystem) -> Any:
        raise KeyError("no such model")

    async def main() -> None:
        with pytest.raises(KeyError, match="no such model"):
            async with AsyncioHost(build):
                raise AssertionError("entered")

    in_asyncio(main)


def test_an_approval_answered_from_asyncio() -> None:
    model = Model()

    async def main() -> None:
        async with AsyncioHost(builder(model)) as host:
            for session, allow in (("yes", True), ("no", False)):
                async with host.submit(session, f"pay {session}") as events:
                    async for event in events:
                        if isinstance(event, am.ApprovalRequested):
                            assert await host.approve(session, event.call_id, allow, "said no")
                        if isinstance(event, am.ToolCallFinished):
                            status = event.status
                        last = event
                assert isinstance(last, am.TurnCompleted)
                assert status == ("ok" if allow else "denied")
                assert (await host.run(session, "after")).status == "completed"
            assert tool_results(model.transcript_before("after"))["p1"].startswith("Error")
            # (the last "after" is session "no"'s; "yes" got its payment)
            assert "paid 30" in str(model.requests)

    in_asyncio(main)


# -- cancellation ------------------------------------------------------------------------


def _check_cancelled_turn_then_next(model: Model, session: str, text: str) -> None:
    """The history the next turn of ``session`` showed the model is valid (every call
    of the cancelled turn answered), and the cancelled turn is in it or never began."""
    messages = model.transcript_before(f"next {session}")
    assert transcript_errors(messages) == []
    users = [m.content for m in messages if isinstance(m, UserMessage)]
    assert users in ([text, f"next {session}"], [f"next {session}"])


async def _cancel_then_next(
    host: AsyncioHost,
    session: str,
    cancel: Callable[[asyncio.Task[Any]], Awaitable[None]],
    *,
    alone: bool = True,
) -> bool:
    """Run "tools 3" in a task, cancel it by ``cancel``; then the next turn must work.
    True if the task was in fact cancelled (not already done)."""
    task = asyncio.create_task(host.run(session, "tools 3"))
    await cancel(task)
    try:
        result = await task
    except asyncio.CancelledError:
        cancelled = True
    else:
        assert result.status == "completed"
        cancelled = False
    # The cancelled turn has ended (committed) before CancelledError came.
    info = await host.ask(session, am.GetSessionInfo())
    assert (info.running_turn, info.queued_turns) == (None, 0)
    if alone:
        assert not (await host.snapshot()).busy
    after = await host.run(session, f"next {session}")
    assert after.status == "completed"
    return cancelled


def test_cancelling_the_asyncio_task_at_every_step_answers_every_call() -> None:
    """Cancel after 0..N loop iterations (each lets the bridge and trio move a step),
    then after real delays spanning the model call and the tool batch."""
    model = Model()
    outcomes: list[bool] = []

    def after_steps(n: int) -> Callable[[asyncio.Task[Any]], Awaitable[None]]:
        async def cancel(task: asyncio.Task[Any]) -> None:
            for _ in range(n):
                await asyncio.sleep(0)
            task.cancel()

        return cancel

    def after_seconds(seconds: float) -> Callable[[asyncio.Task[Any]], Awaitable[None]]:
        async def cancel(task: asyncio.Task[Any]) -> None:
            await asyncio.sleep(seconds)
            task.cancel()

        return cancel

    async def main() -> None:
        async with AsyncioHost(builder(model)) as host:
            points = [after_steps(n) for n in range(40)]
            points += [after_seconds(0.005 * n) for n in range(1, 25)]
            for n, cancel in enumerate(points):
                outcomes.append(await _cancel_then_next(host, f"s{n}", cancel))

    in_asyncio(main)
    assert sum(outcomes) >= 30  # most points fell inside the turn
    for n in range(len(outcomes)):
        _check_cancelled_turn_then_next(model, f"s{n}", "tools 3")
    # Some cancellations fell inside the tool batch: calls answered as cancelled.
    cancelled_calls = [
        content
        for request in model.requests
        for content in tool_results(list(request.messages)).values()
        if "slept" not in str(content)
    ]
    assert cancelled_calls


async def _read_until(host: AsyncioHost, session: str, stop_at: int) -> None:
    """Read a "tools 3" turn's events; cancel this task at the ``stop_at``-th."""
    seen = 0
    async for _ in host.submit(session, "tools 3"):
        seen += 1
        if seen == stop_at:
            task = asyncio.current_task()
            assert task is not None
            task.cancel()


def test_cancelling_a_stream_at_every_event_answers_every_call() -> None:
    """A "tools 3" turn streams TurnStarted, 3 ToolCallStarted, 3 ToolCallFinished,
    usage...: the reader is cancelled at each of them in turn."""
    model = Model()

    async def main() -> None:
        async with AsyncioHost(builder(model)) as host:
            for stop_at in range(1, 10):
                session = f"e{stop_at}"
                with pytest.raises(asyncio.CancelledError):
                    await asyncio.create_task(_read_until(host, session, stop_at))
                assert not (await host.snapshot()).busy
                assert (await host.run(session, f"next {session}")).status == "completed"
                _check_cancelled_turn_then_next(model, session, "tools 3")

    in_asyncio(main)


def test_asyncio_timeout_cancels_the_turn() -> None:
    model = Model()

    async def main() -> None:
        async with AsyncioHost(builder(model)) as host:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.03):
                    await host.run("t", "tools 3")
            assert (await host.run("t", "next t")).status == "completed"
            _check_cancelled_turn_then_next(model, "t", "tools 3")

    in_asyncio(main)


# -- shutdown ----------------------------------------------------------------------------


def test_leaving_with_turns_in_flight_drains_and_commits_them(tmp_path: Path) -> None:
    store = SqliteSessions(str(tmp_path / "sessions.db"))
    model = Model()
    results: list[Any] = []

    async def turn(host: AsyncioHost, n: int) -> None:
        try:
            results.append(await host.run(f"s{n}", f"tools {1 + n % 4}"))
        except ActorStopped as exc:
            results.append(exc)

    async def first() -> None:
        config = HostConfig(drain_timeout=0.03)
        async with AsyncioHost(builder(model, store), config) as host:
            tasks = [asyncio.create_task(turn(host, n)) for n in range(12)]
            await asyncio.sleep(0.02)
        # The host has stopped: every caller has its answer.
        assert all(task.done() for task in tasks)
        await asyncio.gather(*tasks)

    in_asyncio(first)
    statuses = {r.status if isinstance(r, am.TurnResult) else "stopped" for r in results}
    assert "cancelled" in statuses and statuses <= {"completed", "cancelled", "stopped"}

    async def second() -> None:
        async with AsyncioHost(builder(model, store)) as host:
            for n in range(12):
                assert (await host.run(f"s{n}", f"next s{n}")).status == "completed"

    in_asyncio(second)
    for n in range(12):
        _check_cancelled_turn_then_next(model, f"s{n}", f"tools {1 + n % 4}")


def test_cancelling_the_task_that_holds_the_host_drains_it() -> None:
    """What Ctrl-C does under asyncio.run: the main task is cancelled in the block."""
    model = Model()

    async def main() -> None:
        started = asyncio.Event()
        runs: list[asyncio.Task[Any]] = []

        async def holder() -> None:
            async with AsyncioHost(builder(model), HostConfig(drain_timeout=0.0)) as host:
                runs.append(asyncio.create_task(host.run("s", "tools 3")))
                started.set()
                await asyncio.sleep(3600)

        task = asyncio.create_task(holder())
        await started.wait()
        await asyncio.sleep(0.03)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        result = await runs[0]
        assert result.status == "cancelled"

    in_asyncio(main)


def test_concurrent_turns_of_many_sessions() -> None:
    model = Model()

    async def main() -> None:
        async with AsyncioHost(builder(model)) as host:
            results = await asyncio.gather(*(host.run(f"s{n}", f"hi {n}") for n in range(50)))
            assert [r.text for r in results] == [f"echo: hi {n}" for n in range(50)]

    in_asyncio(main)


_CALLER_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="unset")


async def _seen_in_trio(host: SessionHost) -> str:
    await trio.lowlevel.checkpoint()
    return _CALLER_VAR.get()


def test_calls_from_the_loop_run_in_the_runs_context_also_after_trio_idled() -> None:
    """A call from the loop's thread starts its job at once, from the run's context: no
    asyncio task's contextvars reach trio, whether trio was busy or idle (waiting on its
    I/O thread, which the call then wakes)."""

    async def caller(host: AsyncioHost, n: int) -> list[str]:
        _CALLER_VAR.set(f"asyncio task {n}")
        seen = [await host._call(_seen_in_trio)]
        await asyncio.sleep(0.05)  # trio has nothing to do: it waits on its I/O thread
        seen.append(await host._call(_seen_in_trio))
        result = await host.run(f"s{n}", "hi")
        assert result.text == "echo: hi"
        return seen

    async def main() -> None:
        async with AsyncioHost(builder(Model())) as host:
            seen = await asyncio.gather(*(caller(host, n) for n in range(20)))
            assert seen == [["unset", "unset"]] * 20

    in_asyncio(main)


def test_a_second_host_in_the_same_loop_is_refused_and_the_first_goes_on() -> None:
    async def main() -> None:
        async with AsyncioHost(builder(Model())) as host:
            with pytest.raises(RuntimeError, match="one AsyncioHost per event loop"):
                async with AsyncioHost(builder(Model())):
                    raise AssertionError("entered")
            assert (await host.run("s", "hello")).status == "completed"

    in_asyncio(main)


def test_a_host_is_used_from_its_own_loop() -> None:
    async def main() -> None:
        async with AsyncioHost(builder(Model())) as host:
            other = await asyncio.to_thread(asyncio.run, _expect_refused(host))
            assert "event loop that entered it" in other

    in_asyncio(main)


async def _expect_refused(host: AsyncioHost) -> str:
    try:
        await host.run("s", "hello")
    except RuntimeError as exc:
        return str(exc)
    return "not refused"


def test_a_stream_dropped_mid_turn_cancels_it_and_the_next_turn_runs() -> None:
    model = Model()

    async def main() -> None:
        async with AsyncioHost(builder(model)) as host:
            for stop_at in (1, 3, 5):
                session = f"d{stop_at}"
                stream = host.submit(session, "tools 3")
                seen = 0
                async for _ in stream:
                    seen += 1
                    if seen == stop_at:
                        break
                del stream  # dropped: its turn is cancelled, nobody waits for it
                gc.collect()
                assert (await host.run(session, f"next {session}")).status == "completed"
                _check_cancelled_turn_then_next(model, session, "tools 3")
                if stop_at == 1:  # dropped right after TurnStarted: not all tools ran
                    results = tool_results(model.transcript_before(f"next {session}"))
                    assert sum("slept" in str(r) for r in results.values()) < 3

    in_asyncio(main)


def test_a_reader_that_stops_reading_does_not_hold_up_the_drain() -> None:
    """A turn streams more events than the window while its reader sleeps; leaving the
    host lets the stream run ahead: the turn completes (no drain timeout, no cancel)."""

    async def main() -> None:
        async with AsyncioHost(builder(Model()), HostConfig(drain_timeout=600.0)) as host:
            stream = host.submit("s", "many 500")
            first = await stream.__anext__()
            assert isinstance(first, am.TurnStarted)
            await asyncio.sleep(0.05)  # the trio side waits for this reader now
        rest = [event async for event in stream]
        assert isinstance(rest[-1], am.TurnCompleted)
        assert rest[-1].result.text == "".join(f"{i} " for i in range(500))

    in_asyncio(main)


def test_many_turns_cancelled_at_once_at_random_points() -> None:
    """30 sessions' turns run together; each task is cancelled at its own (seeded) point
    while the others run; then every session's next turn sees a valid history."""
    model = Model()
    rng = random.Random(32)
    delays = [rng.uniform(0.0, 0.1) for _ in range(30)]

    async def one(host: AsyncioHost, n: int) -> bool:
        async def cancel(task: asyncio.Task[Any]) -> None:
            await asyncio.sleep(delays[n])
            task.cancel()

        return await _cancel_then_next(host, f"r{n}", cancel, alone=False)

    async def main() -> list[bool]:
        async with AsyncioHost(builder(model)) as host:
            return list(await asyncio.gather(*(one(host, n) for n in range(30))))

    cancelled = in_asyncio(main)
    assert sum(cancelled) >= 10
    for n in range(30):
        _check_cancelled_turn_then_next(model, f"r{n}", "tools 3")


def test_a_host_from_the_settings_file(tmp_path: Path) -> None:
    """The same configuration the CLI reads (agcore.toml), here with a real HTTP model."""
    with fake_openai() as base:
        settings = parse_settings(
            f'[providers.fake]\nkind = "openai"\nbase_url = "{base}"\nmodel = "fake"\n'
            f'[store]\npath = "{tmp_path / "s.db"}"\n[host]\nmax_live = 7\n'
        )

        async def main() -> None:
            async with AsyncioHost(settings) as host:
                result = await host.run("s1", "hi")
                assert result.status == "completed" and result.text
                assert (await host.ask("s1", am.GetSessionInfo())).turns == 1

        in_asyncio(main)
        with open_host(settings) as blocking:
            assert blocking.ask("s1", am.GetSessionInfo()).turns == 1  # from the file
            assert blocking.run("s1", "again").status == "completed"


def _error(exc: BaseException) -> tuple[str, str]:
    return type(exc).__qualname__, getattr(exc, "kind", "")


async def _trio_raised(model: Model) -> list[tuple[str, str]]:
    """What the trio API raises for an unknown agent and for a full session queue."""
    async with ActorSystem() as system:
        bundle = (await builder(model)(system)).build()
        async with SessionHost(system, bundle) as host:
            with pytest.raises(Exception) as unknown:
                await host.ask("s", am.SwitchAgent("nobody"))
            busy: list[BaseException] = []

            async def turn() -> None:
                try:
                    await host.run("b", "tools 3")
                except Exception as exc:
                    busy.append(exc)

            async with trio.open_nursery() as nursery:
                for _ in range(8):
                    nursery.start_soon(turn)
    return [_error(unknown.value), *sorted({_error(e) for e in busy})]


def test_errors_the_host_raises_are_raised_as_the_trio_api_raises_them() -> None:
    reference = trio.run(_trio_raised, Model())
    assert reference[0][1] and reference[1][0] == "SessionBusy"

    async def main() -> list[tuple[str, str]]:
        async with AsyncioHost(builder(Model())) as host:
            with pytest.raises(Exception) as unknown:
                await host.ask("s", am.SwitchAgent("nobody"))
            outcomes = await asyncio.gather(
                *(host.run("b", "tools 3") for _ in range(8)), return_exceptions=True
            )
            busy = {_error(e) for e in outcomes if isinstance(e, BaseException)}
            return [_error(unknown.value), *sorted(busy)]

    assert in_asyncio(main) == reference
    with open_host(builder(Model())) as host:
        with pytest.raises(Exception) as unknown:
            host.ask("s", am.SwitchAgent("nobody"))
        with ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(host.run, "b", "tools 3") for _ in range(8)]
            busy = {_error(e) for f in futures if (e := f.exception()) is not None}
    assert [_error(unknown.value), *sorted(busy)] == reference
