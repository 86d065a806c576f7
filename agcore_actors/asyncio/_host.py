"""AsyncioHost: the SessionHost inside an asyncio program, on trio's guest mode.

Semantics:
    ``async with AsyncioHost(build) as host`` starts a trio run as a *guest* of the
    running asyncio loop (:func:`trio.lowlevel.start_guest_run`): trio's tasks run in the
    loop's own thread, between the loop's callbacks, and only trio's wait for I/O runs
    on a helper thread. The run opens the same host a trio program would (an
    ActorSystem, the actors ``build`` starts, a :class:`~agcore_actors.agent.SessionHost`)
    and each method below runs the host's method of the same name there, for the
    asyncio task that awaits it. Results, events and errors are the host's own objects:
    an error the trio API raises is raised here as it is (same class, same ``kind``).
    A host is used from the loop that entered it; one host at a time per loop (trio
    keeps one run per thread), serving any number of sessions.

Cancellation:
    Cancelling the asyncio task that awaits a call (``task.cancel()``,
    :func:`asyncio.timeout`, a framework that drops a request) cancels the call in trio
    and waits until it has ended there before ``CancelledError`` is raised: a cancelled
    :meth:`AsyncioHost.run` or stream has its turn committed, every tool call answered,
    as with trio. Cancelled again while it waits, the task keeps waiting (the commit is
    short and bounded) and raises ``CancelledError`` once.

Shutdown:
    Leaving the ``async with`` (also by an exception or a cancellation) drains the host
    as the trio host does (turns in flight get ``HostConfig.drain_timeout``, then are
    cancelled and committed), stops the actors and ends the trio run, then returns; no
    task of the run outlives the block (the helper thread goes back to trio's worker
    cache, which ends idle threads after 10 s). A call that waited for a turn gets that
    turn's result; one still running once the host has closed (a stream nobody reads),
    and any later call, ends with :class:`~agcore_actors.actor.ActorStopped`. Under
    :func:`asyncio.run`, Ctrl-C cancels the main task, so the host drains as the task
    unwinds. SIGTERM, when nothing else handles it (``handle_sigterm``, main thread
    only), does the same to the task that entered the host, which then ends the program
    with ``SystemExit(143)`` once the host has stopped.
"""

from __future__ import annotations

import asyncio
import functools
import signal
import threading
from collections.abc import Sequence
from types import TracebackType
from typing import Any

import outcome
import trio
import trio.lowlevel

from .._embed import HostSource, Job, Portal, open_session_host, unwrap
from .._embed import _calls as calls
from ..agent import HostConfig, HostSnapshot, SessionHost
from ..agent import messages as am
from ..llm import ContentPart
from ._stream import AsyncioTurnStream, Waiter, wait_out
from ._ticks import Ticks

__all__ = ["AsyncioHost"]


class AsyncioHost:
    """See the module docstring. ``async with AsyncioHost(build) as host:``.

    ``source`` is an async function that starts the actors under the given
    ``ActorSystem`` and returns the :class:`~agcore_actors.agent.RuntimeBundle` (or its
    :class:`~agcore_actors.agent.AgentBuilder`), or the product's
    :class:`~agcore_actors.config.Settings`. ``config``: the host's limits.
    """

    def __init__(
        self,
        source: HostSource,
        config: HostConfig | None = None,
        *,
        name: str = "sessions",
        handle_sigterm: bool = True,
    ) -> None:
        self.name = name
        self.handle_sigterm = handle_sigterm
        self._portal = Portal(functools.partial(open_session_host, source, config, name), name=name)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ticks: Ticks | None = None
        self._ready: asyncio.Future[None] | None = None
        self._done: asyncio.Future[outcome.Outcome[None]] | None = None
        self._task: asyncio.Task[Any] | None = None
        self._sigterm = False
        self._terminated = False

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> AsyncioHost:
        if self._loop is not None:
            raise RuntimeError("an AsyncioHost is entered once")
        loop = self._loop = asyncio.get_running_loop()
        self._ticks = Ticks(loop)
        self._ready = loop.create_future()
        self._done = loop.create_future()
        try:
            trio.lowlevel.start_guest_run(
                self._portal.main,
                self._on_ready,
                run_sync_soon_threadsafe=self._ticks.threadsafe,
                run_sync_soon_not_threadsafe=self._ticks.soon,
                done_callback=self._on_done,
                # asyncio owns the signal wakeup fd (add_signal_handler); trio needs none.
                host_uses_signal_set_wakeup_fd=True,
            )
        except RuntimeError:
            # trio keeps one run per thread: another AsyncioHost (or TrioDriver) is open.
            raise RuntimeError(
                "a trio run is already open in this thread (another AsyncioHost?): "
                "one AsyncioHost per event loop; a host serves any number of sessions"
            ) from None
        self._ticks.start()
        starting: list[asyncio.Future[Any]] = [self._ready, self._done]
        try:
            await asyncio.wait(starting, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await self._stop()
            raise
        if not self._ready.done():
            await self._stop()  # raises why the host could not start
            raise RuntimeError("the host's trio run ended while it started")
        self._install_sigterm(loop)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._remove_sigterm()
        await self._stop()
        if self._terminated and isinstance(exc, asyncio.CancelledError):
            raise SystemExit(128 + signal.SIGTERM)

    async def _stop(self) -> None:
        """Drain and stop the host, end the run; raise the run's failure, if any."""
        assert self._done is not None
        self._portal.stop()
        cancelled = False
        while not self._done.done():
            try:
                await asyncio.shield(self._done)
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError
        result = self._done.result()
        if isinstance(result, outcome.Error):
            raise unwrap(result.error)

    def _on_ready(self) -> None:
        assert self._ready is not None
        self._ready.set_result(None)

    def _on_done(self, result: outcome.Outcome[None]) -> None:
        assert self._done is not None
        if not self._done.done():
            self._done.set_result(result)

    def _install_sigterm(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self.handle_sigterm or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return  # the program (uvicorn, a bot framework) handles it
        try:
            loop.add_signal_handler(signal.SIGTERM, self._on_sigterm)
        except (NotImplementedError, RuntimeError):
            return  # a loop without signal handlers (Windows' proactor)
        self._task = asyncio.current_task()
        self._sigterm = True

    def _remove_sigterm(self) -> None:
        if self._sigterm and self._loop is not None:
            self._sigterm = False
            self._loop.remove_signal_handler(signal.SIGTERM)

    def _on_sigterm(self) -> None:
        self._terminated = True
        if self._task is not None:
            self._task.cancel()

    # -- the host's calls ----------------------------------------------------------------

    async def run(
        self, session: str, text: str, *, turn: str = "", parts: Sequence[ContentPart] = ()
    ) -> am.TurnResult:
        """Run a turn of ``session`` (``parts``: images and files after ``text``) and
        return its result (:meth:`SessionHost.run`)."""
        result: am.TurnResult = await self._call(calls.run_turn(turn, tuple(parts)), session, text)
        return result

    def submit(
        self, session: str, text: str, *, turn: str = "", parts: Sequence[ContentPart] = ()
    ) -> AsyncioTurnStream:
        """Run a turn of ``session`` and read its events: ``async for event in
        host.submit(...)``, or ``async with host.submit(...) as events`` to wait, when
        leaving early, until the turn is cancelled and committed."""
        return AsyncioTurnStream(self._start_stream, (session, text, turn, tuple(parts)))

    async def cancel(self, session: str, mode: am.CancelMode = "immediate") -> bool:
        """Cancel the running turn of a live session; False if none runs."""
        done: bool = await self._call(SessionHost.cancel, session, mode)
        return done

    async def approve(self, session: str, call_id: str, allow: bool, reason: str = "") -> bool:
        """Answer an approval request of a live session's running turn."""
        done: bool = await self._call(SessionHost.approve, session, call_id, allow, reason)
        return done

    async def ask(self, session: str, msg: Any) -> Any:
        """Send another message of the session protocol (facts, agent switch, info)."""
        return await self._call(SessionHost.ask, session, msg)

    async def delete(self, session: str) -> bool:
        """Deactivate ``session`` and delete everything stored for it."""
        done: bool = await self._call(SessionHost.delete, session)
        return done

    async def close(self, session: str) -> None:
        """Deactivate ``session`` now (its data stays) and unpark it."""
        await self._call(SessionHost.close, session)

    async def snapshot(self) -> HostSnapshot:
        snap: HostSnapshot = await self._call(calls.snapshot)
        return snap

    async def is_live(self, session: str) -> bool:
        live: bool = await self._call(calls.is_live, session)
        return live

    async def live_sessions(self) -> list[str]:
        sessions: list[str] = await self._call(calls.live_sessions)
        return sessions

    # -- the bridge ----------------------------------------------------------------------

    async def _call(self, fn: Any, *args: Any) -> Any:
        waiter = self._waiter()
        job = self._portal.start(fn, args, waiter.wake)
        while job.outcome is None:
            try:
                await waiter.wait()
            except asyncio.CancelledError:
                job.cancel()
                await wait_out(job, waiter)
                raise
        return job.outcome.unwrap()

    def _start_stream(self, args: tuple[Any, ...]) -> tuple[Job, Waiter]:
        waiter = self._waiter()
        return self._portal.start(calls.stream_turn, args, waiter.wake, stream=True), waiter

    def _waiter(self) -> Waiter:
        """A waiter on the loop of this host (a host not entered: any loop; its calls
        fail with ActorStopped)."""
        loop = asyncio.get_running_loop()
        if self._loop is not None and loop is not self._loop:
            raise RuntimeError("an AsyncioHost is used from the event loop that entered it")
        return Waiter(loop, self._ticks or Ticks(loop))
