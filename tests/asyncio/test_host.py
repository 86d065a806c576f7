"""AsyncioHost: the SessionHost in an asyncio program, on trio's guest mode.

Each test is a plain function running its own ``asyncio.run`` (the asyncio loop is the
host of the trio run); what the trio API does for the same input is the reference.
Cancelling callers and leaving the host are in ``test_host_cancel``.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.actor import ActorStopped
from agcore_actors.agent import SessionHost
from agcore_actors.agent import messages as am
from agcore_actors.asyncio import AsyncioHost
from agcore_actors.blocking import open_host
from agcore_actors.config import parse_settings
from agcore_actors.llm import image_part_of
from tests.asyncio.checks import in_asyncio
from tests.asyncio.rig import Model, builder, tool_results
from tests.serve.helpers import fake_openai

pytestmark = pytest.mark.usefixtures("threads_checked")


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


def test_a_host_from_the_settings_file(tmp_path: Path) -> None:
    """The same configuration the CLI reads (agcore.toml), here with a real HTTP model."""
    with fake_openai() as base:
        settings = parse_settings(
            f'[providers.fake]\nkind = "openai"\nbase_url = "{base}"\nmodel = "fake"\n'
            f'[store]\npath = "{tmp_path / "s.db"}"\n[host]\nmax_sessions = 7\n'
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
