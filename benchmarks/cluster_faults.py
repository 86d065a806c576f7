"""The faults of the chaos run, one at a time, each undone before the next:

- ``kill``: SIGKILL a host; it is restarted (as a new host id) a moment later;
- ``stop``: SIGSTOP a host for longer than the lease, then SIGCONT: it must find by its
  own clock that its leases have expired and not write under them;
- ``cut``: the host in the network namespace loses PostgreSQL and the other hosts (its
  link goes down) for longer than the lease, then rejoins.

Before each fault the sessions whose live lease the host holds are read from PostgreSQL
(:func:`cluster_check.held_by`): the failover figures are the time from the fault to the
next acknowledged turn of each of them.
"""

from __future__ import annotations

import random
import signal
from collections.abc import Awaitable, Callable, Sequence

import attrs
import trio
from cluster_check import held_by
from cluster_rig import HostProcess, Netns


@attrs.define
class Fault:
    kind: str
    host_id: str
    #: trio clock time the fault began.
    at: float
    held: set[str]
    ended: float | None = None


@attrs.define
class Injector:
    hosts: Sequence[HostProcess]
    url: str  # the checker's database URL
    #: Starts a host and returns once it answers.
    start: Callable[[HostProcess], Awaitable[None]]
    netns: Netns | None
    lease_ttl: float
    log: list[Fault] = attrs.field(factory=list)

    def plan(self, kills: int, stops: int, cuts: int) -> list[str]:
        kinds = ["kill"] * kills + ["stop"] * stops + ["cut"] * (cuts if self.netns else 0)
        random.shuffle(kinds)
        return kinds

    async def run(self, kinds: Sequence[str], every: float) -> None:
        """Each fault ``every`` seconds after the previous one was undone."""
        for kind in kinds:
            await trio.sleep(every)
            await self.one(kind)

    async def one(self, kind: str) -> None:
        if kind == "cut":
            host = next(h for h in self.hosts if h.netns is not None)
        else:
            host = random.choice([h for h in self.hosts if h.alive])
        held = await trio.to_thread.run_sync(held_by, self.url, host.host_id)
        fault = Fault(kind, host.host_id, trio.current_time(), held)
        self.log.append(fault)
        if kind == "kill":
            host.kill()
            await trio.sleep(self.lease_ttl / 2)
            host.renew_id()
            await self.start(host)
        elif kind == "stop":
            host.signal(signal.SIGSTOP)
            await trio.sleep(self.lease_ttl + 2.0)
            host.signal(signal.SIGCONT)
        else:
            assert self.netns is not None
            self.netns.cut()
            await trio.sleep(self.lease_ttl + 3.0)
            self.netns.heal()
        fault.ended = trio.current_time()
