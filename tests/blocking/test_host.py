"""BlockingHost: the SessionHost for scripts, from one thread and from many at once."""

from __future__ import annotations

import _thread
import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.actor import ActorStopped
from agcore_actors.agent import HostConfig, transcript_errors
from agcore_actors.agent import messages as am
from agcore_actors.blocking import BlockingHost, open_host
from agcore_actors.llm import UserMessage, image_part_of
from agcore_actors.store import SqliteSessions
from tests.asyncio.rig import Model, builder, no_threads_left, tool_results
from tests.asyncio.test_host import _trio_outcomes


@pytest.fixture(autouse=True)
def threads_checked() -> Iterator[None]:
    with no_threads_left():
        yield


def test_a_turn_a_streamed_turn_and_the_host_thread_ends() -> None:
    with open_host(builder(Model())) as host:
        assert host.run("s1", "hello").text == "echo: hello"
        events = list(host.submit("s1", "stream"))
        assert [e.text for e in events if isinstance(e, am.TextDelta)] == ["ec", "h", "o"]
        assert isinstance(events[-1], am.TurnCompleted)
        assert host.ask("s1", am.GetSessionInfo()).turns == 2
        assert host.is_live("s1") and host.live_sessions() == ["s1"]
    with pytest.raises(ActorStopped):
        host.run("s1", "hello")


def test_a_turn_with_an_image_from_a_thread() -> None:
    image = image_part_of(b"\x89PNG", "image/png")
    with open_host(builder(Model())) as host:
        assert host.run("s1", "what is it?", parts=[image]).text == "parts: TextPart ImagePart"
        events = list(host.submit("s1", "and this?", parts=[image]))
        assert isinstance(events[-1], am.TurnCompleted)
        assert events[-1].result.text == "parts: TextPart ImagePart"


def test_many_threads_at_once() -> None:
    model = Model()
    with open_host(builder(model)) as host, ThreadPoolExecutor(16) as pool:
        texts = [f"hi {n}" for n in range(64)]
        results = list(pool.map(lambda n: host.run(f"s{n % 8}", texts[n]), range(64)))
        assert [r.text for r in results] == [f"echo: {t}" for t in texts]
        assert host.snapshot().activated == 8
        streams = list(pool.map(lambda n: list(host.submit(f"t{n}", "stream")), range(16)))
        assert all(isinstance(s[-1], am.TurnCompleted) for s in streams)


def test_errors_surface_as_the_trio_api_gives_them() -> None:
    texts = ["auth", "bug", "hello", "bug", "hello"]
    reference = trio.run(_trio_outcomes, Model(), texts)
    got = []
    with open_host(builder(Model())) as host:
        for n, text in enumerate(texts):
            try:
                result = host.run(f"s{n}", text)
            except Exception as exc:
                got.append((type(exc).__qualname__, getattr(exc, "kind", "")))
            else:
                got.append((result.status, result.error_kind))
        events = list(host.submit("b", "broken"))
        finished = [e for e in events if isinstance(e, am.ToolCallFinished)]
        assert [e.status for e in finished] == ["error"]
        assert isinstance(events[-1], am.TurnCompleted)
    assert got == reference


def test_a_failing_build_is_raised_by_open_host() -> None:
    async def build(system: ActorSystem) -> Any:
        raise KeyError("no such model")

    with pytest.raises(KeyError, match="no such model"):
        open_host(build)


def test_an_approval_answered_from_another_thread() -> None:
    model = Model()
    with open_host(builder(model)) as host:
        with host.submit("s", "pay") as events:
            for event in events:
                if isinstance(event, am.ApprovalRequested):
                    answer = threading.Thread(target=host.approve, args=("s", event.call_id, True))
                    answer.start()
                    answer.join()
                last = event
        assert isinstance(last, am.TurnCompleted)
        host.run("s", "after")
    assert tool_results(model.transcript_before("after"))["p1"] == "paid 30"


def test_a_tool_cannot_call_its_own_host() -> None:
    host = open_host(builder(Model()))
    try:
        caught: list[BaseException] = []

        async def from_the_host_thread(_: Any) -> None:
            try:
                host.run("s", "hello")
            except RuntimeError as exc:
                caught.append(exc)

        host._call(from_the_host_thread)
        assert caught and "other threads" in str(caught[0])
    finally:
        host.shutdown()


def _check_next(model: Model, session: str) -> None:
    messages = model.transcript_before(f"next {session}")
    assert transcript_errors(messages) == []
    users = [m.content for m in messages if isinstance(m, UserMessage)]
    assert users in (["tools 3", f"next {session}"], [f"next {session}"])


def test_ctrl_c_while_a_call_waits_cancels_its_turn_at_many_points() -> None:
    """KeyboardInterrupt in the waiting (main) thread, at delays spanning the turn."""
    model = Model()
    interrupted = 0
    with open_host(builder(model)) as host:
        for n in range(20):
            session = f"s{n}"
            timer = threading.Timer(0.004 * n, _thread.interrupt_main)
            in_run = False
            try:
                timer.start()
                in_run = True
                host.run(session, "tools 3")
                in_run = False
                timer.join()  # the turn ended first: the interrupt comes here
                time.sleep(0.05)
            except KeyboardInterrupt:
                interrupted += in_run
            timer.join()
            info = host.ask(session, am.GetSessionInfo())
            assert (info.running_turn, info.queued_turns) == (None, 0)
            assert not host.snapshot().busy
            assert host.run(session, f"next {session}").status == "completed"
            _check_next(model, session)
    assert interrupted >= 10


def test_leaving_a_stream_early_cancels_and_commits_its_turn() -> None:
    model = Model()
    with open_host(builder(model)) as host:
        for stop_at in range(1, 10):
            session = f"e{stop_at}"
            with host.submit(session, "tools 3") as events:
                for seen, _ in enumerate(events, 1):
                    if seen == stop_at:
                        break
            assert not host.snapshot().busy
            assert host.run(session, f"next {session}").status == "completed"
            _check_next(model, session)


def test_shutdown_with_turns_in_flight_in_other_threads(tmp_path: Path) -> None:
    store = SqliteSessions(str(tmp_path / "sessions.db"))
    model = Model()
    results: list[Any] = []

    def turn(host: BlockingHost, n: int) -> None:
        try:
            results.append(host.run(f"s{n}", f"tools {1 + n % 4}"))
        except ActorStopped as exc:
            results.append(exc)

    host = open_host(builder(model, store), HostConfig(drain_timeout=0.03))
    threads = [threading.Thread(target=turn, args=(host, n)) for n in range(12)]
    for thread in threads:
        thread.start()
    time.sleep(0.03)
    host.shutdown()
    for thread in threads:
        thread.join(timeout=10)
        assert not thread.is_alive()
    assert len(results) == 12
    statuses = {r.status if isinstance(r, am.TurnResult) else "stopped" for r in results}
    assert statuses <= {"completed", "cancelled", "stopped"}

    with open_host(builder(model, store)) as again:
        for n in range(12):
            assert again.run(f"s{n}", f"next s{n}").status == "completed"
    for n in range(12):
        messages = model.transcript_before(f"next s{n}")
        assert transcript_errors(messages) == []


def test_turns_in_many_threads_cancelled_from_other_threads() -> None:
    """16 threads run turns; 16 others cancel them through the host at seeded points."""
    model = Model()
    rng = random.Random(32)
    delays = [rng.uniform(0.0, 0.1) for _ in range(16)]
    statuses: dict[int, str] = {}

    with open_host(builder(model)) as host:

        def turn(n: int) -> None:
            statuses[n] = host.run(f"r{n}", "tools 3").status

        def cancel(n: int) -> None:
            time.sleep(delays[n])
            host.cancel(f"r{n}")

        with ThreadPoolExecutor(32) as pool:
            futures = [pool.submit(turn, n) for n in range(16)]
            futures += [pool.submit(cancel, n) for n in range(16)]
            for future in futures:
                future.result()
        assert set(statuses.values()) <= {"completed", "cancelled"}
        assert "cancelled" in statuses.values()
        for n in range(16):
            assert host.run(f"r{n}", f"next r{n}").status == "completed"
    for n in range(16):
        _check_next(model, f"r{n}")
