"""The cost figures of benchmarks/cluster.py, each on fresh processes in the same run:

1. one host on SQLite (no cluster): host CPU per turn, turns per host CPU-second;
2. one host on PostgreSQL (cluster on: leases, heartbeat): the same, and the PostgreSQL
   server's CPU per turn;
3. two hosts on PostgreSQL: every session's first turn through host 0 (it takes them all),
   then its turns through host 0 (direct) and through host 1 (forwarded to host 0): CPU
   of both hosts per turn in each case, and the difference, the cost of a forward; then
   new sessions through random hosts (about half forwarded): turns per CPU-second with
   two hosts.

CPU is read from ``/proc`` (user + system) of the host processes and of every
``postgres`` process; the clients' own CPU (this process) is not counted. Sessions run
their turns back to back, all at once, so the hosts are busy; wall time is printed but
means little on a shared machine.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import trio
from cluster_clients import ClientConfig, Clients
from cluster_rig import Database, FakeModel, cleanup, postgres_cpu_seconds


@attrs.define
class Cost:
    name: str
    turns: int
    host_cpu: float
    pg_cpu: float
    wall: float
    failed: int

    def row(self) -> str:
        per_turn = 1e3 * self.host_cpu / max(1, self.turns)
        pg_turn = 1e3 * self.pg_cpu / max(1, self.turns)
        rate = self.turns / max(1e-9, self.host_cpu + self.pg_cpu)
        wall = self.turns / max(1e-9, self.wall)
        return (f"| {self.name} | {self.turns} | {per_turn:.2f} | {pg_turn:.2f} | "
                f"{rate:.0f} | {wall:.0f} | {self.failed} |")  # fmt: skip


async def _workload(
    rig: Any, name: str, sessions: list[str], turns: int, first: int,
    route: Callable[[str, int], int] | None,
) -> Cost:  # fmt: skip
    clients = Clients(rig.urls, ClientConfig(token=rig.token, turns=turns, route=route))
    cpu0, pg0, t0 = rig.cpu(), postgres_cpu_seconds(), trio.current_time()
    await clients.run(sessions, first=first)
    cpu1, pg1, t1 = rig.cpu(), postgres_cpu_seconds(), trio.current_time()
    acked = sum(1 for t in clients.log if t.outcome == "acked")
    return Cost(name, acked, cpu1 - cpu0, pg1 - pg0, t1 - t0, len(clients.log) - acked)


async def run(args: argparse.Namespace, workdir: Path, rig_class: Any) -> None:
    n, turns = args.measure_sessions, args.measure_turns
    rows: list[Cost] = []
    model = FakeModel()
    try:
        # 1. SQLite, one host, no cluster.
        with cleanup() as things:
            rig = rig_class(args, workdir, things)
            rig.add_host(store=str(workdir / "one.db"), model=model.url(), bind="127.0.0.1",
                         cluster=False, ns=None)  # fmt: skip
            await rig.start(rig.hosts[0])
            sessions = [f"q{i}" for i in range(n)]
            await _workload(rig, "warm-up", sessions, 1, 0, None)
            rows.append(await _workload(rig, "SQLite, 1 host", sessions, turns, 1, None))
        # 2. PostgreSQL, one host.
        with cleanup() as things:
            db = Database()
            things.append(db)
            rig = rig_class(args, workdir, things)
            rig.add_host(store=db.url_for("m0"), model=model.url(), bind="127.0.0.1",
                         cluster=True, ns=None)  # fmt: skip
            await rig.start(rig.hosts[0])
            sessions = [f"p{i}" for i in range(n)]
            await _workload(rig, "warm-up", sessions, 1, 0, None)
            rows.append(await _workload(rig, "PostgreSQL, 1 host", sessions, turns, 1, None))
        # 3. PostgreSQL, two hosts.
        with cleanup() as things:
            db = Database()
            things.append(db)
            rig = rig_class(args, workdir, things)
            for i in range(2):
                rig.add_host(store=db.url_for(f"m{i}"), model=model.url(), bind="127.0.0.1",
                             cluster=True, ns=None)  # fmt: skip
                await rig.start(rig.hosts[i])
            owned = [f"f{i}" for i in range(n)]
            await _workload(rig, "warm-up", owned, 1, 0, lambda s, a: 0)
            direct = await _workload(rig, "2 hosts, to the owner", owned, turns, 1,
                                     lambda s, a: 0)  # fmt: skip
            forwarded = await _workload(rig, "2 hosts, forwarded", owned, turns, 1 + turns,
                                        lambda s, a: 1)  # fmt: skip
            rows += [direct, forwarded]
            spread = [f"r{i}" for i in range(n)]
            await _workload(rig, "warm-up", spread, 1, 0, None)
            rows.append(await _workload(rig, "PostgreSQL, 2 hosts, random host", spread, turns,
                                        1, None))  # fmt: skip
    finally:
        model.close()
    print(f"\n### Cost per turn ({n} sessions x {turns} turns back to back, each row)\n")
    print("| setup | turns | host CPU ms/turn | PostgreSQL CPU ms/turn | "
          "turns per CPU-s (hosts + PostgreSQL) | turns/s wall | failed |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(row.row())
    sqlite, pg1 = rows[0], rows[1]
    per = {r.name: r.host_cpu / max(1, r.turns) for r in rows}
    print(
        f"\n- host CPU per turn, PostgreSQL / SQLite: "
        f"{per[pg1.name] / max(1e-9, per[sqlite.name]):.2f}x"
    )
    extra = per["2 hosts, forwarded"] - per["2 hosts, to the owner"]
    print(
        f"- a forwarded turn costs {1e3 * extra:.2f} ms more host CPU than a direct one "
        f"({per['2 hosts, forwarded'] / max(1e-9, per['2 hosts, to the owner']):.2f}x)"
    )
    print(flush=True)
