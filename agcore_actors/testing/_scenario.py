"""Operations on a supervisor of probes, as data, and how to apply one.

A scenario is a list of operations (see ``agcore_actors.testing.strategies``
for hypothesis strategies that generate them). Children are chosen by
index, modulo the number of candidates at the time the operation applies,
so every operation is valid in every state:

- :class:`CrashChild` / :class:`ExitChild`: the ``index``-th *running*
  child of the supervisor (in start order) crashes / exits normally.
- :class:`StopChild`: the ``index``-th child, running or waiting out its
  restart backoff, is stopped for good with ``stop_child``.
- :class:`StartChild`: a dynamic probe child ``name`` is started.
- :class:`AdvanceTime`: ``seconds`` of trio time pass.
"""

from __future__ import annotations

import attrs

from ..actor import ActorSystem, ChildSpec, NoSuchActor, Restart, State, Supervisor
from ._probe import Crash, EventLog, Exit, Probe
from ._time import advance, settle


@attrs.frozen
class CrashChild:
    index: int


@attrs.frozen
class ExitChild:
    index: int


@attrs.frozen
class StopChild:
    index: int


@attrs.frozen
class StartChild:
    name: str
    restart: Restart = Restart.PERMANENT


@attrs.frozen
class AdvanceTime:
    seconds: float


Operation = CrashChild | ExitChild | StopChild | StartChild | AdvanceTime


def running_children(system: ActorSystem, supervisor: str) -> list[str]:
    """The supervisor's actor children that are running, in start order."""
    return [
        row.name
        for row in system.snapshot()
        if row.parent == supervisor and row.kind == "actor" and row.state is State.RUNNING
    ]


async def apply_operation(
    system: ActorSystem, supervisor: str, op: Operation, log: EventLog
) -> str | None:
    """Apply ``op`` to the probe children of ``supervisor``, then settle.

    Settling (see :func:`settle`) lets every consequence that is due now
    happen: crashes, stops, restarts without backoff. Returns the name of the
    child acted on, or None when there was none (no candidate, or the
    supervisor no longer exists; :class:`AdvanceTime` always returns None).
    Dynamic children are probes recording to ``log``.
    """
    if isinstance(op, AdvanceTime):
        await advance(op.seconds)
        return None
    try:
        sup: Supervisor = system.supervisor(supervisor)
    except NoSuchActor:
        return None
    name: str | None = None
    if isinstance(op, CrashChild | ExitChild):
        running = running_children(system, supervisor)
        if running:
            name = running[op.index % len(running)]
            await system.lookup(name).tell(Crash() if isinstance(op, CrashChild) else Exit())
    elif isinstance(op, StopChild):
        children = sup.children()
        if children:
            name = children[op.index % len(children)]
            await sup.stop_child(name)
    else:
        await sup.start_child(ChildSpec(op.name, Probe.factory(log), restart=op.restart))
        name = op.name
    await settle()
    return name
