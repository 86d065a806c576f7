"""Running one checker scenario: concurrent callers against a real SessionHost, faults on
a schedule, and the model's checks at every quiescent point (see test_host_checker).

:func:`run_scenario` runs a whole :class:`Scenario` in one ``trio.run`` on a MockClock
that autojumps (virtual time), with trio's scheduler seeded from the scenario, and
returns the violations found (empty: the host kept every promise checked).

Quiescent points: after each round (every caller done), after each host exits, and at the
end. Checked there: what callers were told (:class:`History`), every stored session
against the model (:func:`store_problems`), that every ``session:*`` actor is one the
host holds; after the faults stop, that one more turn on every session
completes and leaves no open turn; after the last host, that no session actor, task,
thread, file descriptor or child process is left.
"""

from __future__ import annotations

import tempfile
from contextlib import suppress
from typing import Any

import trio
import trio.testing

from agcore_actors import ActorSystem
from agcore_actors._errors import AgcoreError
from agcore_actors.actor import ActorParked
from agcore_actors.agent import HostConfig, SessionHost
from agcore_actors.agent import messages as am
from agcore_actors.store import SessionNotFound
from agcore_actors.store import messages as sm

from .checker_model import History, Op, Round, Scenario, TurnPlan, store_problems
from .checker_rig import (
    Faults,
    build_runtime,
    child_processes,
    open_fds,
    our_threads,
    still_threads,
    task_count,
)

#: Virtual seconds a whole scenario may take: beyond it a caller is wedged.
BUDGET = 2000.0
#: Tries of the clean turn while a shared actor is parked, and virtual seconds between.
HEAL_TRIES, HEAL_WAIT = 4, 120.0
HEAL_PLAN = TurnPlan(batches=(("ok", "ok"),), ids="reused")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, AgcoreError):
        return f"typed:{exc.kind}"
    if isinstance(exc, RuntimeError) and str(exc).startswith("planted"):
        return f"planted:{exc}"
    return f"{type(exc).__name__}: {exc}"


def _actor(exc: BaseException) -> str:
    """The actor an ``ActorCrashed``/``ActorStopped`` names (else "")."""
    return str(getattr(exc, "actor", "")) if isinstance(exc, AgcoreError) else ""


class World:
    def __init__(self, scenario: Scenario, store_kind: str, path: str) -> None:
        self.scenario = scenario
        self.store_kind = store_kind
        self.path = path
        self.faults = Faults()
        self.history = History()
        self.sessions = [f"s{n}" for n in range(scenario.sessions)]
        self.host: SessionHost | None = None
        self.hosts = 0
        self.next_caller = 0
        self.config = HostConfig(
            idle_ttl=scenario.idle_ttl,
            max_sessions=scenario.max_sessions,
            max_queued=64,
            crash_limit=1_000_000,  # parking is a documented state; checked elsewhere
        )

    # -- callers ---------------------------------------------------------------------

    async def caller(self, caller: int, ops: tuple[Op, ...]) -> None:
        for op in ops:
            await trio.sleep(op.pause)
            await self.turn(caller, op)

    async def turn(self, caller: int, op: Op) -> None:
        session = self.sessions[op.session % len(self.sessions)]
        text = self.history.start(caller, session, op)
        self.faults.plans[text] = op.turn
        host = self.host
        assert host is not None
        with trio.CancelScope() as scope:
            if op.cancel_after is not None:
                scope.deadline = trio.current_time() + op.cancel_after
            async with trio.open_nursery() as nursery:
                if op.cancel_ticks is not None:
                    nursery.start_soon(_cancel_after_ticks, scope, op.cancel_ticks)
                if op.cancel_turn_at is not None:
                    nursery.start_soon(self.cancel_turn, host, session, op.cancel_turn_at)
                try:
                    if op.via == "run":
                        await self.run(host, session, text)
                    else:
                        await self.submit(host, session, text, op)
                finally:
                    nursery.cancel_scope.cancel()
        if self.history.records[text].told is None:
            self.history.tell(text, "gave_up")

    async def run(self, host: SessionHost, session: str, text: str) -> None:
        try:
            result = await host.run(session, text)
        except Exception as exc:
            self.history.tell(text, "raised", _describe(exc), _actor(exc))
        else:
            self.told_result(text, result)

    async def submit(self, host: SessionHost, session: str, text: str, op: Op) -> None:
        try:
            async with host.submit(session, text) as events:
                seen = 0
                async for event in events:
                    seen += 1
                    if isinstance(event, am.TextDelta | am.ContentStarted):
                        self.history.records[text].received.append(event.text)
                    if isinstance(event, am.ApprovalRequested) and op.approve != "ignore":
                        with suppress(AgcoreError):
                            await host.approve(session, event.call_id, op.approve == "allow")
                    if isinstance(event, am.TurnCompleted | am.TurnFailed | am.TurnCancelled):
                        self.told_result(text, event.result)
                        return
                    if op.leave_after is not None and seen >= op.leave_after:
                        self.history.tell(text, "left")
                        return
            self.history.tell(text, "raised", "the stream ended without a final event")
        except Exception as exc:
            self.history.tell(text, "raised", _describe(exc), _actor(exc))

    def told_result(self, text: str, result: am.TurnResult) -> None:
        # The checker's agents have no guardrails: no turn of theirs is ever blocked.
        # Nor approvals that suspend: a suspended turn is a violation here.
        if result.status == "suspended":
            self.history.violations.append(f"{text}: suspended, but nothing asks for approval")
        status = (
            "failed"
            if result.status == "blocked" or result.status == "suspended"
            else result.status
        )
        self.history.tell(text, status, result.error_kind)
        if result.status == "completed" and result.text != f"answer to {text}":
            self.history.violations.append(f"{text}: completed with text {result.text!r}")

    async def cancel_turn(self, host: SessionHost, session: str, at: float) -> None:
        await trio.sleep(at)
        try:
            await host.cancel(session)
        except AgcoreError:
            pass
        except Exception as exc:
            self.history.violations.append(f"CancelTurn on {session} raised {exc!r}")

    async def store_fault(self, fault: tuple[Any, float, float]) -> None:
        kind, start, seconds = fault
        await trio.sleep(start)
        self.faults.store = kind
        try:
            await trio.sleep(seconds)
        finally:
            self.faults.store = None

    # -- checks ----------------------------------------------------------------------

    async def check_store(self, store: Any, closed: bool) -> list[str]:
        problems = []
        for session in self.sessions:
            try:
                saved = await _export(store, session)
            except SessionNotFound:
                messages: list[Any] = []
                open_turn = None
            else:
                messages = [entry.message for entry in saved.entries]
                open_turn = saved.record.open_turn
            if closed and open_turn is not None:
                problems.append(f"{session}: turn {open_turn} still open after a clean turn")
            problems += store_problems(self.history, session, messages, open_turn is not None)
        return problems

    def check_actors(self, system: ActorSystem) -> list[str]:
        """Every ``session:*`` actor is one the host holds. (The reverse need not hold: a
        crashed incarnation may stay in the live set until its next message notices it;
        that the next message then gets a working session is P8.)"""
        actors = {i.name for i in system.snapshot() if i.name.startswith("session:")}
        held = {f"session:{s}" for s in (self.host.live_sessions if self.host else [])}
        return [f"actor {a} runs, the host does not hold it" for a in sorted(actors - held)]

    async def heal(self) -> list[str]:
        """Faults stop: one more turn on every session must complete. A shared actor
        parked for crashing (``actor_parked``) is tried again after its breaker's
        backoff, a documented delay: such a turn is retried after it, a few times."""
        self.faults.store = None
        self.history.round += 1
        self.history.store_fault = False
        assert self.host is not None
        problems = []
        for session in self.sessions:
            for _ in range(HEAL_TRIES):
                text = self.history.start(-1, session, None)
                self.faults.plans[text] = HEAL_PLAN
                await self.run(self.host, session, text)
                record = self.history.records[text]
                if not record.detail.endswith("actor_parked"):
                    break
                await trio.sleep(HEAL_WAIT)
            if record.told != "completed":
                problems.append(
                    f"{session}: the first turn after the faults stopped was told "
                    f"{record.told} {record.detail}"
                )
        return problems

    # -- the scenario ----------------------------------------------------------------

    async def main(self) -> list[str]:
        problems: list[str] = []
        async with ActorSystem(strict=True, seed=self.scenario.seed) as system:
            store, bundle, _ = await build_runtime(system, self.store_kind, self.path, self.faults)
            await trio.sleep(1.0)  # every actor dormant: a stable baseline
            await _settle()
            tasks = task_count()
            rounds = list(self.scenario.rounds)
            with trio.move_on_after(BUDGET) as budget:
                while True:
                    problems += await self.host_life(system, store, bundle, rounds)
                    if problems or not rounds:
                        break
            if budget.cancelled_caught:
                problems.append(f"wedged: the scenario took over {BUDGET} virtual seconds")
            self.host = None
            await trio.sleep(1.0)
            await _settle()
            problems += self.check_actors(system)
            if not problems and task_count() > tasks:
                problems.append(f"tasks leaked: {task_count()} after, {tasks} before")
        return problems

    async def host_life(
        self, system: ActorSystem, store: Any, bundle: Any, rounds: list[Round]
    ) -> list[str]:
        """One host on the store: rounds until one restarts it; the heal at the end."""
        host = SessionHost(system, bundle, self.config, name=f"sessions{self.hosts}")
        self.hosts += 1
        problems: list[str] = []
        async with host:
            self.host = host
            while rounds:
                spec = rounds.pop(0)
                base, self.next_caller = self.next_caller, self.next_caller + len(spec.callers)
                self.history.round += 1
                self.history.store_fault = spec.store_fault is not None
                async with trio.open_nursery() as nursery:
                    if spec.store_fault is not None:
                        nursery.start_soon(self.store_fault, spec.store_fault)
                    for n, ops in enumerate(spec.callers):
                        nursery.start_soon(self.caller, base + n, ops)
                await _settle()
                problems += self.history.violations + self.check_actors(system)
                problems += self.history.executor_problems(self.history.round)
                problems += await self.check_store(store, closed=False)
                if problems or spec.restart_after:
                    return problems
            problems += await self.heal()
            await _settle()
            problems += self.history.violations + self.check_actors(system)
            problems += await self.check_store(store, closed=True)
        self.host = None
        await _settle()
        problems += self.check_actors(system)
        return problems


async def _export(store: Any, session: str) -> sm.SessionSnapshot:
    """The stored session; a store parked for crashing (a documented, timed state) is
    asked again once its backoff is over."""
    for _ in range(HEAL_TRIES):
        try:
            snapshot: sm.SessionSnapshot = await store.ask(sm.ExportSession(session))
        except ActorParked as exc:
            await trio.sleep(exc.retry_in + 0.1)
        else:
            return snapshot
    snapshot = await store.ask(sm.ExportSession(session))
    return snapshot


async def _cancel_after_ticks(scope: trio.CancelScope, ticks: int) -> None:
    for _ in range(ticks):
        await trio.lowlevel.checkpoint()
    scope.cancel()


async def _settle() -> None:
    for _ in range(3):
        await trio.testing.wait_all_tasks_blocked()


def _cause(exc: BaseException) -> str:
    """The first failure in ``exc`` that is not a cancellation, as one line."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = [e for e in exc.exceptions if not isinstance(e, trio.Cancelled)]
        return _cause(leaves[0] if leaves else exc.exceptions[0])
    return f"{type(exc).__name__}: {exc}"


def run_scenario(scenario: Scenario, store_kind: str) -> list[str]:
    """Run ``scenario`` on a fresh store of ``store_kind``; the violations found."""
    import trio._core._run as trio_run  # the scheduler's coin, seeded: reproducible runs

    fds, threads, children = open_fds(), our_threads(), child_processes()
    clock = trio.testing.MockClock(autojump_threshold=0)
    with tempfile.TemporaryDirectory() as tmp, still_threads(clock):
        trio_run._r.seed(scenario.seed)
        world = World(scenario, store_kind, f"{tmp}/sessions.db")
        try:
            problems = trio.run(world.main, clock=clock)
        except BaseException as exc:  # the whole runtime died: report why, briefly
            problems = [f"the run died: {_cause(exc)}"]
    if not problems:
        if leaked := open_fds() - fds:
            problems.append(f"file descriptors leaked: {sorted(leaked)}")
        if leaked := our_threads() - threads:
            problems.append(f"threads leaked: {sorted(leaked)}")
        if leaked := child_processes() - children:
            problems.append(f"child processes leaked: {sorted(leaked)}")
    return problems
