"""Hypothesis strategies for supervision scenarios and bot traffic (needs hypothesis
installed).

The numbers are small on purpose: intensities of a few restarts within a few
seconds, backoffs of fractions of a second, time steps of fractions of a
second. The defaults draw only binary fractions (multiples of 1/8 s,
multipliers 1, 1.5 and 2) from few distinct values, so that virtual times
add up exactly, a test model can compare them with ``==``, and edge cases
(two restarts exactly one period apart) come up often. Pass your own
strategies to widen them. ::

    from hypothesis import given, strategies as st
    from agcore_actors import ActorSystem
    from agcore_actors.testing import EventLog, Probe, apply_operation, virtual_clock
    from agcore_actors.testing.strategies import operations, supervisor_specs

    @given(st.data())
    def test_my_tree(data):
        log = EventLog()
        spec = data.draw(supervisor_specs(Probe.factory(log)))
        ops = data.draw(operations())

        async def scenario():
            async with ActorSystem(strict=True) as system:
                await system.start_supervisor(spec)
                for op in ops:
                    await apply_operation(system, spec.name, op, log)
                    ...  # check your invariants against system.snapshot() and log

        trio.run(scenario, clock=virtual_clock())
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from ..actor import Actor, Backoff, ChildSpec, Intensity, Restart, Strategy, SupervisorSpec
from ._host import Visit
from ._scenario import AdvanceTime, CrashChild, ExitChild, Operation, StartChild, StopChild

__all__ = [
    "backoffs",
    "child_specs",
    "intensities",
    "operations",
    "restart_types",
    "supervision_strategies",
    "supervisor_specs",
    "time_steps",
    "visits",
]


def restart_types() -> st.SearchStrategy[Restart]:
    """PERMANENT, TRANSIENT or TEMPORARY."""
    return st.sampled_from(Restart)


def supervision_strategies() -> st.SearchStrategy[Strategy]:
    """ONE_FOR_ONE, ONE_FOR_ALL or REST_FOR_ONE."""
    return st.sampled_from(Strategy)


def intensities(
    max_restarts: st.SearchStrategy[int] | None = None,
    periods: st.SearchStrategy[float] | None = None,
) -> st.SearchStrategy[Intensity]:
    """0-3 restarts within 1, 2 or 4 seconds by default.

    Few distinct periods, whole seconds like :func:`time_steps`: restarts
    exactly one period apart, the edge of the window, then happen often.
    """
    return st.builds(
        Intensity,
        max_restarts=max_restarts if max_restarts is not None else st.integers(0, 3),
        period=periods if periods is not None else st.sampled_from([1.0, 2.0, 4.0]),
    )


def backoffs(
    *,
    initial: st.SearchStrategy[float] | None = None,
    multiplier: st.SearchStrategy[float] | None = None,
    cap: st.SearchStrategy[float] | None = None,
    jitter: st.SearchStrategy[float] | None = None,
    reset_after: st.SearchStrategy[float] | None = None,
) -> st.SearchStrategy[Backoff]:
    """Small backoffs; by default without jitter, so restart times are exact.

    Defaults: ``initial`` 0-1/2 s and ``cap`` 0-1 s in eighths of a second,
    ``multiplier`` 1, 1.5 or 2, ``reset_after`` 1/2-4 s in half seconds.
    Pass e.g. ``jitter=st.floats(0, 1)`` to add jitter.
    """
    return st.builds(
        Backoff,
        initial=initial if initial is not None else st.integers(0, 4).map(lambda n: n / 8),
        multiplier=multiplier if multiplier is not None else st.sampled_from([1.0, 1.5, 2.0]),
        cap=cap if cap is not None else st.integers(0, 8).map(lambda n: n / 8),
        jitter=jitter if jitter is not None else st.just(0.0),
        reset_after=(
            reset_after if reset_after is not None else st.integers(1, 8).map(lambda n: n / 2)
        ),
    )


def child_specs(
    factory: Callable[[], Actor[Any]],
    name: str,
    *,
    restart: st.SearchStrategy[Restart] | None = None,
) -> st.SearchStrategy[ChildSpec[Any]]:
    """A child called ``name`` made by ``factory``, with a drawn restart type."""
    return st.builds(
        ChildSpec,
        name=st.just(name),
        factory=st.just(factory),
        restart=restart if restart is not None else restart_types(),
    )


def supervisor_specs(
    factory: Callable[[], Actor[Any]],
    *,
    name: str = "tree",
    min_children: int = 1,
    max_children: int = 5,
    strategy: st.SearchStrategy[Strategy] | None = None,
    intensity: st.SearchStrategy[Intensity] | None = None,
    backoff: st.SearchStrategy[Backoff] | None = None,
    child_restart: st.SearchStrategy[Restart] | None = None,
    restart: st.SearchStrategy[Restart] | None = None,
) -> st.SearchStrategy[SupervisorSpec]:
    """A supervisor ``name`` of ``factory`` children named ``name-0``, ``name-1``, ...

    Its own restart type (how its parent treats it) is TEMPORARY unless
    ``restart`` says otherwise, so that a supervisor that gives up is
    removed by its parent rather than restarted.
    """

    @st.composite
    def build(draw: st.DrawFn) -> SupervisorSpec:
        count = draw(st.integers(min_children, max_children))
        children = [
            draw(child_specs(factory, f"{name}-{i}", restart=child_restart)) for i in range(count)
        ]
        return SupervisorSpec(
            name,
            children,
            strategy=draw(strategy if strategy is not None else supervision_strategies()),
            intensity=draw(intensity if intensity is not None else intensities()),
            backoff=draw(backoff if backoff is not None else backoffs()),
            restart=draw(restart if restart is not None else st.just(Restart.TEMPORARY)),
        )

    return build()


def time_steps() -> st.SearchStrategy[float]:
    """1/4, 1/2, 1 or 2 s, or 10 s (more than any default backoff, to let restarts settle)."""
    return st.sampled_from([0.25, 0.5, 1.0, 2.0, 10.0])


def operations(
    *,
    min_size: int = 0,
    max_size: int = 20,
    max_index: int = 7,
    dynamic_prefix: str = "dyn",
    dt: st.SearchStrategy[float] | None = None,
    restart: st.SearchStrategy[Restart] | None = None,
) -> st.SearchStrategy[list[Operation]]:
    """A list of operations, as :func:`agcore_actors.testing.apply_operation` applies them.

    Dynamic children are named ``<dynamic_prefix>0``, ``<dynamic_prefix>1``,
    ... in the order they start, so names never collide within one list.
    """
    index = st.integers(0, max_index)
    op: st.SearchStrategy[Operation] = st.one_of(
        st.builds(CrashChild, index),
        st.builds(ExitChild, index),
        st.builds(StopChild, index),
        st.builds(AdvanceTime, dt if dt is not None else time_steps()),
        st.builds(StartChild, st.just(""), restart if restart is not None else restart_types()),
    )

    def name_dynamic(ops: list[Operation]) -> list[Operation]:
        named: list[Operation] = []
        for item in ops:
            if isinstance(item, StartChild):
                count = sum(isinstance(o, StartChild) for o in named)
                item = StartChild(f"{dynamic_prefix}{count}", item.restart)
            named.append(item)
        return named

    return st.lists(op, min_size=min_size, max_size=max_size).map(name_dynamic)


def visits(
    *,
    sessions: int = 5,
    max_wait: float = 1200.0,
    min_size: int = 1,
    max_size: int = 20,
) -> st.SearchStrategy[list[Visit]]:
    """Traffic for a :class:`~agcore_actors.agent.SessionHost`: a list of
    :class:`~agcore_actors.testing.Visit` (wait, then one turn of a session).

    Sessions are named ``s0`` .. ``s<sessions-1>``; waits are whole seconds from 0 to
    ``max_wait``, as often a burst (0 to 10 s) as a long pause (``max_wait`` itself comes
    up often), and add up exactly in virtual time.
    Pick ``max_wait`` above the idle TTL under test, so that some sessions are evicted
    for idleness and others by the live cap. Shrinks towards fewer visits, to ``s0``,
    and to shorter waits.
    """
    if sessions < 1 or max_wait < 0:
        raise ValueError("visits() needs sessions >= 1 and max_wait >= 0")
    top = int(max_wait)
    # Bursts (waits of a few seconds) as often as long pauses, so that both the live cap
    # and the idle TTL are crossed within a few visits.
    wait = st.one_of(
        st.just(0.0), st.integers(0, min(top, 10)), st.integers(0, top), st.just(top)
    ).map(float)
    visit = st.builds(Visit, st.integers(0, sessions - 1).map(lambda n: f"s{n}"), wait)
    return st.lists(visit, min_size=min_size, max_size=max_size)
