"""ActorSystem: the root supervisor, the name registry, dead letters, snapshots.

::

    async with ActorSystem(strict=True) as system:
        counter = await system.spawn(Counter, name="counter")
        await counter.tell(Add(2))
        assert await counter.ask(Get()) == 2

Ending: leaving the block stops every actor, last started first, each within
its grace period; asks still waiting then fail with :class:`ActorStopped`.
The same ordered shutdown happens when

- the block is cancelled from outside (a cancel scope around it): the actors
  do not see that cancellation; each stops as on a normal exit, and
  ``on_stop`` receives the Cancelled as its reason;
- a KeyboardInterrupt or SystemExit is raised in an actor (a handler,
  ``on_start``, a background task; where a real SIGINT lands while a handler
  runs) or in the block: it is never a crash and restarts nothing. Every
  actor stops in order, ``on_stop`` receives it as its reason, and it is raised
  out of the block (the asker of the interrupted request gets
  :class:`ActorStopped`). A second SIGINT during that shutdown cancels what is
  left at once.

``shutdown_timeout`` bounds all of it: what is still running when it has
passed is cancelled (a handler that shields itself from cancellation keeps
its task until it returns; trio cannot stop it), and no ``on_stop`` runs past
it. If the root supervisor gives up, the block is cancelled and
:class:`SupervisorGaveUp` is raised out of it.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, TypeVar

import trio

from ._actor import Actor
from ._breaker import CircuitBreaker
from ._cancel import interrupt_in, is_cancellation, unwrap_group
from ._cell import Cell
from ._deadletters import DeadLetter
from ._errors import NoSuchActor
from ._node import ActorInfo
from ._policy import DEFAULT_BACKOFF, DEFAULT_INTENSITY, Backoff, Intensity, Restart, Strategy
from ._ref import ActorRef
from ._runtime import Runtime
from ._spec import ChildSpec, SupervisorSpec
from ._supervisor import Supervisor

M = TypeVar("M")


class ActorSystem:
    """Async context manager that owns every actor of one application.

    ``strict=True`` round-trips every message and reply through msgspec
    msgpack (see :mod:`._codec`); the test suite runs that way. ``seed``
    makes restart jitter reproducible. ``shutdown_timeout`` bounds the
    ordered shutdown on exit (see the module docstring), after which whatever
    is left is cancelled.
    """

    def __init__(
        self,
        *,
        strict: bool = False,
        strategy: Strategy = Strategy.ONE_FOR_ONE,
        intensity: Intensity = DEFAULT_INTENSITY,
        backoff: Backoff = DEFAULT_BACKOFF,
        seed: int | None = None,
        shutdown_timeout: float = 30.0,
    ) -> None:
        self._runtime = Runtime(strict=strict)
        self._root_spec = SupervisorSpec(
            "root", strategy=strategy, intensity=intensity, backoff=backoff
        )
        self._rng = random.Random(seed)
        self._shutdown_timeout = shutdown_timeout
        self._root: Supervisor | None = None
        self._root_done = trio.Event()
        # Shields the actors from a cancellation of the block: they stop in order.
        self._root_scope = trio.CancelScope(shield=True)
        self._nursery_cm: AbstractAsyncContextManager[trio.Nursery] | None = None

    # -- context management ------------------------------------------------------

    async def __aenter__(self) -> ActorSystem:
        if self._nursery_cm is not None:
            raise RuntimeError("an ActorSystem can be entered only once")
        self._root = Supervisor(self._runtime, self._root_spec, rng=self._rng)
        runtime = self._runtime
        runtime.thread = threading.get_ident()
        runtime.token = trio.lowlevel.current_trio_token()
        runtime.on_interrupt = self._root.request_stop
        self._nursery_cm = trio.open_nursery()
        nursery = await self._nursery_cm.__aenter__()
        # Cancelled while the root starts, the caller would wait for ever: the root's
        # start only ends once it is asked to stop (its shutdown is shielded), and
        # nobody asks while __aenter__ waits for it. A watcher asks.
        starting = trio.CancelScope()
        nursery.start_soon(self._stop_if_cancelled, starting)
        try:
            await nursery.start(self._run_root)
        except BaseException as exc:
            starting.cancel()
            await self._nursery_cm.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        starting.cancel()
        return self

    async def _stop_if_cancelled(self, starting: trio.CancelScope) -> None:
        assert self._root is not None
        with starting:
            try:
                await trio.sleep_forever()
            finally:
                if not starting.cancel_called:
                    self._root.request_stop()

    async def _run_root(self, task_status: trio.TaskStatus[None]) -> None:
        assert self._root is not None
        link = _RootLink(task_status)
        try:
            with self._root_scope:
                async with trio.open_nursery() as nursery:
                    self._root.start(nursery, link)
        finally:
            self._root_done.set()
        if self._runtime.fatal is not None:
            raise self._runtime.fatal  # an interrupt, after the ordered shutdown
        if link.reason is not None:
            raise link.reason  # the root gave up: end the system's block

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._root is not None and self._nursery_cm is not None
        runtime = self._runtime
        if exc is not None and runtime.stop_reason is None:
            fatal = interrupt_in(exc)
            if fatal is not None:
                runtime.fatal = runtime.stop_reason = fatal
            elif is_cancellation(exc):
                runtime.stop_reason = exc  # what on_stop receives
        self._root.request_stop()
        runtime.deadline = trio.current_time() + self._shutdown_timeout
        with trio.CancelScope(shield=True, deadline=runtime.deadline):
            try:
                await self._root_done.wait()
            except (KeyboardInterrupt, SystemExit) as again:
                # A second interrupt during the shutdown (trio delivers it to
                # this task despite the shield): cancel what is left now.
                if runtime.fatal is None:
                    runtime.fatal = again
        if not self._root_done.is_set():
            runtime.cut_short()  # the timeout has passed: cancel what is left
            self._root_scope.cancel()
            with trio.CancelScope(shield=True):
                await self._root_done.wait()
        try:
            return await self._nursery_cm.__aexit__(exc_type, exc, tb)
        except BaseException as group:
            if runtime.fatal is not None:
                raise runtime.fatal from None
            real = unwrap_group(group)
            if real is not group:
                raise real from None
            raise
        finally:
            self._root.close()

    # -- starting and stopping actors -------------------------------------------

    @property
    def root(self) -> Supervisor:
        if self._root is None:
            raise RuntimeError("the ActorSystem has not been entered")
        return self._root

    async def spawn(
        self,
        factory: Callable[[], Actor[M]],
        *,
        name: str,
        restart: Restart = Restart.PERMANENT,
        shutdown: float = 5.0,
        mailbox_size: int = 1024,
        max_concurrency: int | None = None,
        background_tasks: bool | None = None,
        isolate: CircuitBreaker | None = None,
    ) -> ActorRef[M]:
        """Start an actor under the root supervisor and return its ref.

        The options are those of :class:`ChildSpec`; ``max_concurrency`` and
        ``background_tasks`` default to the actor class's own attributes.
        Returns once the actor's ``on_start`` has finished; the actor then
        stops with the system, after the actors started before it.

        Cancellation: if the caller is cancelled, the root supervisor still
        completes the start; the actor then runs supervised as usual (find it
        with :meth:`lookup`).

        Raises:
            DuplicateName: an actor or supervisor called ``name`` exists.
            ValueError: an option is out of range.
            ActorStopped: the system is shutting down.
            Exception: whatever the factory or ``on_start`` raised.
        """
        spec = ChildSpec(
            name,
            factory,
            restart=restart,
            shutdown=shutdown,
            mailbox_size=mailbox_size,
            max_concurrency=max_concurrency,
            background_tasks=background_tasks,
            isolate=isolate,
        )
        return await self.root.start_child(spec)

    async def start_supervisor(self, spec: SupervisorSpec) -> Supervisor:
        """Start a supervisor (and its children) under the root supervisor."""
        return await self.root.start_supervisor(spec)

    async def stop(self, name: str) -> None:
        """Stop the actor or supervisor called ``name`` for good, and remove it.

        Its parent stops it as on shutdown: the current message (and a
        supervisor's children, last started first) get the child's
        ``shutdown`` grace, then it is cancelled; ``on_stop`` runs; asks still
        queued fail with :class:`ActorStopped` and queued tells become dead
        letters. Returns once all of that is done.

        Cancellation: if the caller is cancelled, the stop still completes
        (the parent supervisor carries it out).

        Raises:
            NoSuchActor: nothing is called ``name``.
        """
        parent = self.root.parent_of(name)
        if parent is None:
            raise NoSuchActor(name)
        await parent.stop_child(name)

    # -- lookup and observation --------------------------------------------------

    def lookup(self, name: str) -> ActorRef[Any]:
        """The ref of the actor called ``name``.

        The ref stays valid across the actor's restarts. Never blocks.

        Raises:
            NoSuchActor: no actor is called ``name`` (a supervisor is not an
                actor: see :meth:`supervisor`).
        """
        node = self._runtime.names.get(name)
        if not isinstance(node, Cell):
            raise NoSuchActor(name)
        return node.ref

    def supervisor(self, name: str) -> Supervisor:
        """The supervisor called ``name``.

        Raises:
            NoSuchActor: no supervisor is called ``name``.
        """
        node = self._runtime.names.get(name)
        if not isinstance(node, Supervisor):
            raise NoSuchActor(name)
        return node

    def dead_letters(self) -> AbstractAsyncContextManager[trio.MemoryReceiveChannel[DeadLetter]]:
        """Subscribe to dead letters: ``async with system.dead_letters() as s``."""
        return self._runtime.dead_letters.subscribe()

    def snapshot(self) -> list[ActorInfo]:
        """Every actor and supervisor, depth first in start order."""
        rows: list[ActorInfo] = []
        self.root.snapshot(None, rows)
        return rows

    @property
    def strict(self) -> bool:
        return self._runtime.strict


class _RootLink:
    """The root supervisor's parent: the system's own nursery."""

    def __init__(self, task_status: trio.TaskStatus[None]) -> None:
        self._task_status = task_status
        self.reason: BaseException | None = None

    def started(self) -> None:
        self._task_status.started()

    def exited(self, reason: BaseException | None) -> None:
        self.reason = reason
