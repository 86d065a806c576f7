"""The concurrency checker: many callers on a few colliding sessions of a real
SessionHost, with faults at random checkpoints, checked against an independent model.

Hypothesis draws a :class:`Scenario` (rounds of 3-8 concurrent callers, each running 1-2
turns on one of three session ids) and :func:`run_scenario` plays it on virtual time on
the in-memory and the SQLite store. Faults: callers cancelled after a delay or a few
checkpoints (activation, begin, model call, tool batch, approval, commit), ``CancelTurn``
from a peer, readers leaving the stream, turn deadlines (a stalled model), typed provider
errors and provider bugs, empty/duplicate/reused call ids, writes failing with disk full,
read-only, busy or an I/O error for a while, session crashes (a bug at begin or commit),
the tool executor refusing a batch with a typed error (beside a subagent call or not),
eviction by a tiny TTL and cap, host restarts on the same store.

The properties (tests/agent/checker_model.py and checker_run.py): callers are told a
result or a typed error (never a conflict, an invalid transcript or a lifetime limit of
their own session); every acknowledged turn is stored exactly once, as completed, in
each caller's order; nothing a caller was told failed or cancelled is stored as
completed; every stored transcript is valid; once the faults stop, the next turn on every
session completes and leaves no open turn; every ``session:*`` actor is held by the
host; nothing (actor, task, thread, fd, process) is left after the host; a batch the
executor refused fails its turn with the executor's error kind; a streamed answer cut
off is stored as the text its reader received, marked ``[interrupted]``; a session's
actor crashes only where a crash was planted.

``CHECKER_FAULTS=cancel,ids,store,crash,provider,bug,executor,evict,restart`` limits the
faults drawn (default: all); a failure prints the scenario and its seed (``derandomize``:
the same examples every run; ``CHECKER_SEED=n``: other examples, the same for the same
``n``, as ``benchmarks/soak.py checker`` runs them). tests/agent/CHECKER_NOTES.md says how
each bug of issue 26 is planted back and which property catches it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, Phase, example, given, note, seed, settings
from hypothesis import strategies as st

from .checker_model import Op, Round, Scenario, TurnPlan
from .checker_run import run_scenario

T = TypeVar("T", bound=Callable[..., object])

FAULTS = set(os.environ.get("CHECKER_FAULTS", "all").split(","))
EXAMPLES = int(os.environ.get("CHECKER_EXAMPLES", "150"))
#: ``CHECKER_SHRINK=0``: report the first failing scenario as found (shrinking one can
#: take hypothesis' whole five-minute shrink budget).
SHRINK = os.environ.get("CHECKER_SHRINK", "1") != "0"
#: ``CHECKER_SEED=n``: draw the examples from seed ``n`` instead of the fixed CI set.
SEED = int(os.environ["CHECKER_SEED"]) if os.environ.get("CHECKER_SEED") else None


def _on(fault: str) -> bool:
    return "all" in FAULTS or fault in FAULTS


def _maybe(fault: str, values: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.none() | values if _on(fault) else st.none()


def _choice(fault: str, normal: object, faulty: list[object]) -> st.SearchStrategy[object]:
    return st.sampled_from([normal, normal, *faulty]) if _on(fault) else st.just(normal)


TOOLS = ["ok", "ok", "slow", "fail", "guarded", "helper"]
turn_plans = st.builds(
    TurnPlan,
    batches=st.lists(
        st.lists(st.sampled_from(TOOLS), min_size=1, max_size=3).map(tuple), max_size=2
    ).map(tuple),
    ids=_choice("ids", "unique", ["empty", "dup", "reused"]),
    provider=_choice("provider", "none", ["error", "stall"])
    if not _on("bug")
    else st.sampled_from(["none", "none", "none", "error", "stall", "bug"]),
    fail_at=st.integers(0, 2),
    crash=_choice("crash", "none", ["begin", "commit"]),
    jam=_choice("executor", None, [0, 1]),
)
ops = st.builds(
    Op,
    session=st.integers(0, 2),
    via=st.sampled_from(["run", "submit"]),
    turn=turn_plans,
    pause=st.sampled_from([0.0, 0.0, 0.005, 0.02, 0.5, 3.0]),
    cancel_after=_maybe("cancel", st.sampled_from([0.0, 0.001, 0.005, 0.012, 0.025, 0.05, 2.5])),
    cancel_ticks=_maybe("cancel", st.integers(0, 12)),
    leave_after=_maybe("cancel", st.integers(1, 4)),
    cancel_turn_at=_maybe("cancel", st.sampled_from([0.005, 0.015, 0.03, 1.0])),
    approve=st.sampled_from(["allow", "deny", "ignore"]),
)
store_faults = st.tuples(
    st.sampled_from(["full", "readonly", "busy", "io"]),
    st.sampled_from([0.0, 0.005, 0.02]),
    st.sampled_from([0.01, 0.05, 1.0]),
)
rounds = st.builds(
    Round,
    callers=st.lists(st.lists(ops, min_size=1, max_size=2).map(tuple), min_size=3, max_size=8).map(
        tuple
    ),
    store_fault=_maybe("store", store_faults),
    restart_after=st.booleans() if _on("restart") else st.just(False),
)
scenarios = st.builds(
    Scenario,
    seed=st.integers(0, 2**32 - 1),
    sessions=st.just(3),
    idle_ttl=st.sampled_from([0.05, 1.0, 100.0]) if _on("evict") else st.just(100.0),
    max_sessions=st.sampled_from([1, 2, 8]) if _on("evict") else st.just(8),
    rounds=st.lists(rounds, min_size=1, max_size=3).map(tuple),
)


def _one_round(seed: int, *callers: tuple[Op, ...]) -> Scenario:
    return Scenario(seed=seed, sessions=3, idle_ttl=100.0, max_sessions=8, rounds=(Round(callers),))


#: Scenarios that found bugs of issue 26 on df941de, run first on every run.
#: Three plain first turns on one cold session (26.4: bool() of a trio.Event).
COLLIDING_FIRST_TURNS = _one_round(0, (Op(session=0),), (Op(session=0),), (Op(session=0),))
#: ... one of them cancelled at its first checkpoint (26.1: an actor the host does not hold).
CANCELLED_ACTIVATION = _one_round(
    0, (Op(session=0),), (Op(session=0),), (Op(session=0, cancel_ticks=0),)
)  #: ... one of them making a tool call with an empty id (26.5: stored as it came).
EMPTY_CALL_ID = _one_round(
    0,
    (Op(session=0),),
    (Op(session=0),),
    (Op(session=0, turn=TurnPlan(batches=(("ok",),), ids="empty")),),
)
#: ... while the disk is full for 10 ms (26.6: the session stays behind its store).
DISK_FULL_FOR_A_MOMENT = Scenario(
    seed=0,
    sessions=3,
    idle_ttl=100.0,
    max_sessions=8,
    rounds=(Round(((Op(session=0),),) * 3, store_fault=("full", 0.005, 0.01)),),
)
#: A batch the executor refuses with a typed error, beside a subagent call and not, and a
#: plain turn after them (26.7: the error reached the session as an exception group).
JAMMED_BATCHES = _one_round(
    0,
    (Op(session=0, turn=TurnPlan(batches=(("helper", "ok"),), jam=0)),),
    (Op(session=0, via="submit", turn=TurnPlan(batches=(("ok",), ("ok", "ok")), jam=1)),),
    (Op(session=0),),
)
#: Streamed answers cut off after their first piece: by CancelTurn, by the reader leaving
#: and by the turn's deadline (a stalled model); one plain turn after them (26.14: the
#: partial answer was dropped).
CUT_OFF_ANSWERS = _one_round(
    0,
    (Op(session=0, via="submit", cancel_turn_at=0.025),),
    (Op(session=1, via="submit", leave_after=2),),
    (Op(session=2, via="submit", turn=TurnPlan(provider="stall")), Op(session=2)),
)
#: Two turns and a streamed one crashing at commit on one session: the stream ends with
#: neither a final event nor an error (found after the helpers' fixes; fixed by 32d0612).
CRASHING_STREAM = _one_round(
    0,
    (Op(session=0),),
    (Op(session=0),),
    (Op(session=0, via="submit", turn=TurnPlan(crash="commit")),),
)

CHECKER = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    phases=list(Phase) if SHRINK else [Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _seeded(test: T) -> T:
    """``test`` drawing from ``CHECKER_SEED`` when it is set (a seed overrides
    ``derandomize``: applied only when one is asked for)."""
    return seed(SEED)(test) if SEED is not None else test


@pytest.mark.parametrize("store", ["memory", "sqlite"])
@CHECKER
@_seeded
@given(scenario=scenarios)
@example(scenario=COLLIDING_FIRST_TURNS)
@example(scenario=CANCELLED_ACTIVATION)
@example(scenario=EMPTY_CALL_ID)
@example(scenario=DISK_FULL_FOR_A_MOMENT)
@example(scenario=CRASHING_STREAM)
@example(scenario=JAMMED_BATCHES)
@example(scenario=CUT_OFF_ANSWERS)
def test_the_host_keeps_its_promises_to_concurrent_callers_under_faults(
    store: str, scenario: Scenario
) -> None:
    note(f"seed={scenario.seed}")
    problems = run_scenario(scenario, store)
    assert not problems, "\n".join(problems)
