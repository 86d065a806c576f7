"""BlockingHost: the SessionHost for scripts, notebooks and threaded programs.

Semantics:
    :func:`open_host` starts a thread of its own running a trio run, which opens the
    same host a trio program would (an ActorSystem, the actors ``build`` starts, a
    :class:`~agcore_actors.agent.SessionHost`). Each method below runs the host's method
    of the same name there and blocks the calling thread until it has ended, returning
    its result or raising its error as it is (same class, same ``kind``). Any number of
    threads may call at once: each call is a task of the run, so turns of different
    sessions run concurrently, within the host's limits. Calling from the host's own
    thread (a tool's code) is refused with ``RuntimeError``: it would wait for itself.

Cancellation:
    A ``KeyboardInterrupt`` (Ctrl-C) while a call waits cancels the call in trio and
    waits until it has ended there (a turn is committed, every tool call answered)
    before it is raised. Leaving a :meth:`BlockingHost.submit` stream early (``break``,
    an error in the ``with`` block) cancels its turn and waits for its commit.

Shutdown:
    Leaving the ``with`` (or :meth:`BlockingHost.shutdown`, or the interpreter's exit
    for a host never shut down) drains the host as the trio host does (turns in flight
    get ``HostConfig.drain_timeout``, then are cancelled and committed), stops the
    actors, ends the run and joins its thread. A call that waited for a turn gets that
    turn's result; one still running once the host has closed, and any later call, ends
    with :class:`~agcore_actors.actor.ActorStopped`.
"""

from __future__ import annotations

import atexit
import functools
import threading
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any

import outcome
import trio

from .._embed import HostSource, Job, Portal, open_session_host, unwrap
from .._embed import _calls as calls
from ..agent import HostConfig, HostSnapshot, SessionHost
from ..agent import messages as am
from ..llm import ContentPart

__all__ = ["BlockingHost", "BlockingTurnStream", "open_host"]


def open_host(
    source: HostSource, config: HostConfig | None = None, *, name: str = "sessions"
) -> BlockingHost:
    """Start a host on a thread of its own and return it once it is ready:
    ``with open_host(build) as host: host.run("s1", "Hello")``.

    Raises what kept the host from starting (the thread has ended then).
    """
    return BlockingHost(source, config, name=name).start()


class BlockingHost:
    """See the module docstring; made and started by :func:`open_host`."""

    def __init__(
        self, source: HostSource, config: HostConfig | None = None, *, name: str = "sessions"
    ) -> None:
        self.name = name
        self._portal = Portal(functools.partial(open_session_host, source, config, name), name=name)
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._result: outcome.Outcome[None] | None = None
        self._lock = threading.Lock()

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> BlockingHost:
        """Start the thread and the host; return once it is ready (or raise why not)."""
        if self._thread is not None:
            raise RuntimeError("a BlockingHost is started once")
        self._thread = threading.Thread(target=self._main, name=f"agcore-{self.name}", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._result is not None:
            self._thread.join()
            self._raise_failure()
        atexit.register(self.shutdown)
        return self

    def shutdown(self) -> None:
        """Drain and stop the host, end its thread; raise the run's failure, if any.
        Idempotent; waits through Ctrl-C (the drain is bounded) and raises it after."""
        thread = self._thread
        if thread is None or threading.current_thread() is thread:
            return
        atexit.unregister(self.shutdown)
        self._portal.stop()
        interrupted: BaseException | None = None
        while thread.is_alive():
            try:
                thread.join()
            except KeyboardInterrupt as exc:
                interrupted = exc
        with self._lock:
            result, self._result = self._result, None
        if interrupted is not None:
            raise interrupted
        if isinstance(result, outcome.Error):
            raise unwrap(result.error)

    def __enter__(self) -> BlockingHost:
        if self._thread is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()

    def _main(self) -> None:
        try:
            trio.run(self._portal.main, self._ready.set)
        except BaseException as exc:
            self._result = outcome.Error(exc)
        else:
            self._result = outcome.Value(None)
        finally:
            self._ready.set()

    def _raise_failure(self) -> None:
        result, self._result = self._result, None
        if isinstance(result, outcome.Error):
            raise unwrap(result.error)
        raise RuntimeError("the host's trio run ended while it started")

    # -- the host's calls ----------------------------------------------------------------

    def run(
        self, session: str, text: str, *, turn: str = "", parts: Sequence[ContentPart] = ()
    ) -> am.TurnResult:
        """Run a turn of ``session`` (``parts``: images and files after ``text``) and
        return its result (:meth:`SessionHost.run`)."""
        result: am.TurnResult = self._call(calls.run_turn(turn, tuple(parts)), session, text)
        return result

    def submit(
        self, session: str, text: str, *, turn: str = "", parts: Sequence[ContentPart] = ()
    ) -> BlockingTurnStream:
        """Run a turn of ``session`` and read its events: ``for event in
        host.submit(...)``, or ``with host.submit(...) as events`` to wait, when leaving
        early, until the turn is cancelled and committed."""
        return BlockingTurnStream(self, (session, text, turn, tuple(parts)))

    def cancel(self, session: str, mode: am.CancelMode = "immediate") -> bool:
        """Cancel the running turn of a live session; False if none runs."""
        done: bool = self._call(SessionHost.cancel, session, mode)
        return done

    def approve(self, session: str, call_id: str, allow: bool, reason: str = "") -> bool:
        """Answer an approval request of a live session's running turn."""
        done: bool = self._call(SessionHost.approve, session, call_id, allow, reason)
        return done

    def ask(self, session: str, msg: Any) -> Any:
        """Send another message of the session protocol (facts, agent switch, info)."""
        return self._call(SessionHost.ask, session, msg)

    def delete(self, session: str) -> bool:
        """Deactivate ``session`` and delete everything stored for it."""
        done: bool = self._call(SessionHost.delete, session)
        return done

    def close(self, session: str) -> None:
        """Deactivate ``session`` now (its data stays) and unpark it."""
        self._call(SessionHost.close, session)

    def snapshot(self) -> HostSnapshot:
        snap: HostSnapshot = self._call(calls.snapshot)
        return snap

    def is_live(self, session: str) -> bool:
        live: bool = self._call(calls.is_live, session)
        return live

    def live_sessions(self) -> list[str]:
        sessions: list[str] = self._call(calls.live_sessions)
        return sessions

    # -- the bridge ----------------------------------------------------------------------

    def _call(self, fn: Any, *args: Any) -> Any:
        event = self._check_thread()
        job: Job | None = None
        try:
            job = self._portal.start(fn, args, event.set)
            _wait(job, event)
        except KeyboardInterrupt:
            if job is not None:
                job.cancel()
                _wait_out(job, event)
            raise
        assert job.outcome is not None
        return job.outcome.unwrap()

    def _start_stream(self, args: tuple[Any, ...]) -> tuple[Job, threading.Event]:
        event = self._check_thread()
        return self._portal.start(calls.stream_turn, args, event.set, stream=True), event

    def _check_thread(self) -> threading.Event:
        if self._thread is not None and threading.current_thread() is self._thread:
            raise RuntimeError("a BlockingHost is called from other threads than its own")
        return threading.Event()


class BlockingTurnStream:
    """The events of one turn, from :meth:`BlockingHost.submit` (see its docstring).

    The turn starts with the first ``next()`` (or ``__enter__``) and ends with one of
    ``TurnCompleted``, ``TurnCancelled``, ``TurnFailed`` as its last event; an error of
    the host is raised by ``next()``. A stream dropped without ``with`` cancels its
    turn without waiting.
    """

    def __init__(self, host: BlockingHost, args: tuple[Any, ...]) -> None:
        self._host = host
        self._args = args
        self._job: Job | None = None
        self._event = threading.Event()

    def _begin(self) -> Job:
        if self._job is None:
            self._job, self._event = self._host._start_stream(self._args)
        return self._job

    def __iter__(self) -> Iterator[am.TurnEvent]:
        return self

    def __next__(self) -> am.TurnEvent:
        job = self._begin()
        try:
            _wait(job, self._event, items=True)
        except KeyboardInterrupt:
            job.cancel()
            _wait_out(job, self._event)
            raise
        if job.items:
            event: am.TurnEvent = job.take()
            return event
        assert job.outcome is not None
        job.outcome.unwrap()
        raise StopIteration

    def close(self) -> None:
        """Cancel the turn if it still runs and wait until it has ended (committed)."""
        job = self._job
        if job is not None and job.outcome is None:
            job.cancel()
            _wait_out(job, self._event)

    def __enter__(self) -> BlockingTurnStream:
        self._begin()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        job = self._job
        if job is not None and job.outcome is None:
            job.cancel()


def _wait(job: Job, event: threading.Event, *, items: bool = False) -> None:
    """Block until ``job`` has an outcome (or, with ``items``, an event to read)."""
    while True:
        event.clear()
        if job.outcome is not None or (items and job.items):
            return
        event.wait()


def _wait_out(job: Job, event: threading.Event) -> None:
    """Block until a cancelled ``job`` has ended, through further Ctrl-C (the commit of
    a cancelled turn is short and bounded)."""
    while True:
        try:
            _wait(job, event)
            return
        except KeyboardInterrupt:
            continue
