"""Suspended turns against a model that shares no code with them.

Rules start turns (each suspends on its approval call), answer calls — the awaited one,
one answered before, one of a cancelled or finished turn, an unknown one; resuming at
once or later —, resume, cancel, and restart the host on the same store. After every
step: each tool ran exactly as often as the model says (counted by the tools), the
session reports the suspended turn the model expects, and the store holds it open with
its awaited call pending, or holds a valid transcript with no turn open.

:class:`ElicitMachine` runs the same rules on turns that suspend on a question asked
during their ``guarded`` call (``elicitations="suspend"``): the awaited id is the
question's (``<call>.e1``), the store holds the call itself pending, and the call runs
again on resume whatever the answer (a declined question is still a run).
"""

from __future__ import annotations

import collections
import contextlib
from functools import partial
from typing import Any

import pytest
import trio
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from agcore_actors import ActorSystem
from agcore_actors.agent import SessionHost, SessionSuspended, StaleAnswer, transcript_errors
from agcore_actors.agent import messages as am
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.testing import TrioDriver, virtual_clock
from tests.agent import suspend_rig as rig
from tests.agent.stores import stored


async def _hold(
    host: contextlib.AbstractAsyncContextManager[SessionHost],
    into: list[SessionHost],
    entered: trio.Event,
    release: trio.Event,
    done: trio.Event,
) -> None:
    async with host as live:
        into.append(live)
        entered.set()
        await release.wait()
    done.set()


class SuspendMachine(RuleBasedStateMachine):
    #: Suspend on questions (``elicitations="suspend"``) instead of approvals.
    asking = False

    def __init__(self) -> None:
        super().__init__()
        rig.RUNS.clear()
        self.driver = TrioDriver(clock=virtual_clock(), timeout=20)
        try:
            self.system = self.driver.enter(ActorSystem(strict=True, seed=0))
            spec = session_store_spec("store", backend=InMemorySessions(), clock=trio.current_time)
            self.store = self.driver.run(partial(self.system.root.start_child, spec))
            config = rig.ELICIT if self.asking else rig.SUSPEND
            self.rig = rig.Rig(self.system, self.store, config, asking=self.asking)
            self._start_host()
        except BaseException:
            self.driver.close()
            raise
        # The model.
        self.next_turn = 0
        self.suspended: str | None = None  # the turn waiting (or answered, not resumed)
        self.answers: dict[str, bool] = {}  # every call answered, first answer
        self.cancelled: set[str] = set()
        self.finished: set[str] = set()
        self.runs: collections.Counter[str] = collections.Counter()

    # -- the host ------------------------------------------------------------------------

    def _start_host(self) -> None:
        into: list[SessionHost] = []
        entered, self.release, self.done = trio.Event(), trio.Event(), trio.Event()
        self.driver.start_soon(_hold, self.rig.host(), into, entered, self.release, self.done)
        self.driver.run(entered.wait)
        self.host = into[0]

    def _stop_host(self) -> None:
        self.release.set()
        self.driver.run(self.done.wait)

    def teardown(self) -> None:
        try:
            self._stop_host()
        finally:
            self.driver.close()

    def ask(self, msg: Any) -> Any:
        return self.driver.run(self.host.ask, "s", msg)

    # -- the model's steps -----------------------------------------------------------------

    def _awaited(self, turn: str) -> str:
        """The id a suspended ``turn`` waits for an answer to."""
        return f"{turn}-g.e1" if self.asking else f"{turn}-g"

    def _finish_suspended(self) -> str:
        """The suspended turn resumes to its end: its guarded call runs if allowed (a
        question's call runs whatever the answer)."""
        turn = self.suspended
        assert turn is not None
        if self.asking or self.answers[self._awaited(turn)]:
            self.runs[f"{turn}-g"] += 1
        self.finished.add(turn)
        self.suspended = None
        return turn

    def _waiting(self) -> bool:
        return self.suspended is not None and self._awaited(self.suspended) not in self.answers

    # -- rules -----------------------------------------------------------------------------

    @rule()
    def submit(self) -> None:
        turn = f"t{self.next_turn}"
        if self._waiting():
            with pytest.raises(SessionSuspended):
                self.driver.run(partial(self.host.run, "s", turn, turn=turn))
            return
        if self.suspended is not None:  # answered, not resumed: it goes first
            self._finish_suspended()
        self.next_turn += 1
        result = self.driver.run(partial(self.host.run, "s", turn, turn=turn))
        assert result.status == "suspended"
        assert [c.call_id for c in result.awaiting] == [self._awaited(turn)]
        self.runs[f"{turn}-f"] += 1
        self.suspended = turn

    @rule(
        which=st.sampled_from(["current", "past", "unknown"]),
        index=st.integers(0, 20),
        allow=st.booleans(),
        resume=st.booleans(),
    )
    def answer(self, which: str, index: int, allow: bool, resume: bool) -> None:
        if which == "current" and self.suspended is not None:
            turn = self.suspended
        elif which == "past" and self.next_turn:
            turn = f"t{index % self.next_turn}"
        else:
            turn = "never"
        call = self._awaited(turn)
        msg = am.AnswerTurn(turn=turn, call_id=call, allow=allow, reason="r", resume=resume)
        if call in self.answers:
            got = self.ask(msg)
            assert got.status == "duplicate" and got.allow == self.answers[call]
            return
        if turn != self.suspended:
            with pytest.raises(StaleAnswer) as caught:
                self.ask(msg)
            why = "cancelled" if turn in self.cancelled else "unknown"
            assert caught.value.why == why
            return
        got = self.ask(msg)
        self.answers[call] = allow
        if not resume:
            assert got.status == "recorded" and got.result is None
            return
        assert got.status == "resumed" and got.result is not None
        assert got.result.status == "completed" and got.result.text == f"done {turn}"
        self._finish_suspended()

    @rule()
    def resume(self) -> None:
        if self.suspended is None:
            with pytest.raises(StaleAnswer):
                self.ask(am.ResumeTurn())
        elif self._waiting():
            with pytest.raises(SessionSuspended):
                self.ask(am.ResumeTurn())
        else:
            result = self.ask(am.ResumeTurn())
            turn = self._finish_suspended()
            assert result.status == "completed" and result.text == f"done {turn}"

    @rule()
    def cancel(self) -> None:
        cancelled = self.ask(am.CancelTurn())
        assert cancelled == (self.suspended is not None)
        if self.suspended is not None:
            self.cancelled.add(self.suspended)
            self.suspended = None

    @rule()
    def restart_host(self) -> None:
        self._stop_host()
        self._start_host()

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def tools_ran_as_the_model_says(self) -> None:
        assert self.runs == rig.RUNS

    @invariant()
    def session_and_store_agree_with_the_model(self) -> None:
        info = self.ask(am.GetSessionInfo())
        assert info.suspended_turn == self.suspended
        waiting = [self._awaited(self.suspended)] if self.suspended and self._waiting() else []
        assert [c.call_id for c in info.awaiting] == waiting
        saved = self.driver.run(stored, self.store, "s")
        if saved is None:
            assert self.next_turn == 0
            return
        assert saved.record.open_turn == self.suspended
        if self.suspended is not None:
            assert saved.record.pending_calls == (f"{self.suspended}-g",)
        else:
            assert transcript_errors([e.message for e in saved.entries]) == []


SuspendMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=20, deadline=None)
test_suspended_turns_agree_with_the_model = SuspendMachine.TestCase


class ElicitMachine(SuspendMachine):
    asking = True


ElicitMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=20, deadline=None)
test_turns_suspended_on_a_question_agree_with_the_model = ElicitMachine.TestCase
