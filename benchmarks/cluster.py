"""Sessions on several hosts over one PostgreSQL: the chaos run, and what the cluster costs.

Real processes: N ``agcore-actors serve --http`` hosts on a fresh PostgreSQL database,
the zero-latency fake model (benchmarks/fake_openai.py) in its own process, and the
clients in this one (benchmarks/cluster_clients.py): every session submits its turns,
each with a unique turn id, through a random host, and retries any failure with the same
id. Meanwhile (benchmarks/cluster_faults.py) hosts are SIGKILLed and restarted,
SIGSTOPped for longer than the lease and resumed, and, where ``ip netns`` works, the
host in a network namespace is cut off from PostgreSQL and the other hosts and rejoined.
Afterwards benchmarks/cluster_check.py reads PostgreSQL with SQL of its own and counts
lost and duplicated turns, writes accepted under a stale lease, and invalid transcripts;
the failover time of a session is from its owner's fault to its next answered turn
(acknowledged, or 409 ``turn_exists`` for a turn in flight at the fault; from its first
attempt, if the client was thinking at the time of the fault). The last
line printed::

    lost=N duplicated=N fenced_writes_accepted=N invalid=N max_failover_s=X

Before the chaos (unless ``--no-measure``), on the same machine in the same run: host CPU
per turn on SQLite (one host) and on PostgreSQL (one host), the PostgreSQL server's CPU
per turn, the CPU of a turn sent to its owner vs one forwarded by another host, and turns
per CPU-second with one and two hosts.

Run from the repository root, as root for the namespace::

    python benchmarks/cluster.py --hosts 3 --sessions 200 --turns 20 --kills 10
    python benchmarks/cluster.py --quick        # 3 hosts, 20 sessions, a few faults
"""

from __future__ import annotations

import argparse
import errno
import random
import secrets
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx2
import trio
from cluster_check import install_audit, judge, tables_exist
from cluster_clients import Balancer, ClientConfig, Clients, Turn
from cluster_faults import Fault, Injector
from cluster_rig import (
    Database,
    FakeModel,
    HostProcess,
    Netns,
    RelayProcess,
    cleanup,
    netns_works,
)

PG_PORT = 5432


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", type=int, default=3)
    p.add_argument("--sessions", type=int, default=200)
    p.add_argument("--turns", type=int, default=20)
    p.add_argument("--kills", type=int, default=10)
    p.add_argument("--stops", type=int, default=2)
    p.add_argument("--cuts", type=int, default=1, help="namespace cut-offs (where possible)")
    p.add_argument("--lease-ttl", type=float, default=3.0)
    p.add_argument("--renew-interval", type=float, default=0.5)
    p.add_argument("--fence-margin", type=float, default=1.0)
    p.add_argument(
        "--read-timeout",
        type=float,
        default=3.0,
        help="seconds a client waits for a byte before it retries elsewhere",
    )
    p.add_argument("--fault-every", type=float, default=2.0, help="seconds between faults")
    p.add_argument("--measure-sessions", type=int, default=50)
    p.add_argument("--measure-turns", type=int, default=10)
    p.add_argument("--no-measure", action="store_true", help="the chaos run only")
    p.add_argument(
        "--no-health-check",
        action="store_true",
        help="clients pick any host at random (no load balancer's health checks)",
    )
    p.add_argument("--workdir", type=Path, help="keep the hosts' logs and configs here")
    p.add_argument("--quick", action="store_true", help="20 sessions, 6 turns, 2 kills, 1 stop")
    args = p.parse_args(argv)
    if args.quick:
        args.sessions, args.turns, args.kills, args.stops = 20, 6, 2, 1
        args.fault_every = 1.0
        args.measure_sessions, args.measure_turns = 10, 4
    return args


class Rig:
    """The processes of one configuration; ``things`` undoes them."""

    def __init__(self, args: argparse.Namespace, workdir: Path, things: list[Any]) -> None:
        self.args, self.workdir, self.things = args, workdir, things
        self.token = secrets.token_hex(16)
        self.hosts: list[HostProcess] = []
        self.netns: Netns | None = None
        self.db: Database | None = None

    def cluster(self) -> dict[str, float]:
        a = self.args
        return {"lease_ttl": a.lease_ttl, "renew_interval": a.renew_interval,
                "fence_margin": a.fence_margin}  # fmt: skip

    def add_host(self, *, store: Any, model: str, bind: str, cluster: bool, ns: str | None) -> None:
        port = _free_port(bind)
        host = HostProcess(index=len(self.hosts), bind=bind, port=port,
                           advertise=f"http://{bind}:{port}", store_url=store, model_url=model,
                           token=self.token, workdir=self.workdir,
                           cluster=self.cluster() if cluster else {}, netns=ns)  # fmt: skip
        self.hosts.append(host)
        self.things.append(host)

    async def start(self, host: HostProcess) -> None:
        """Start ``host`` and wait until it answers. A port still taken (by what, ``ss``
        says in the output) is tried again for a few seconds."""
        for _ in range(20):
            host.start()
            try:
                await wait_ready(host, self.token)
                return
            except RuntimeError as exc:
                if "Address already in use" not in str(exc):
                    raise
                holders = await trio.run_process(["ss", "-tanp", f"sport = :{host.port}"],
                                                 capture_stdout=True, check=False)  # fmt: skip
                print(f"port {host.port} of {host.host_id} taken:\n"
                      f"{holders.stdout.decode()[-600:]}", flush=True)  # fmt: skip
                await trio.sleep(0.5)
        raise RuntimeError(f"host {host.host_id}: its port stayed taken")

    def urls(self) -> list[str]:
        return [h.url for h in self.hosts]

    def cpu(self) -> float:
        return sum(h.cpu() for h in self.hosts)


def _free_port(bind: str) -> int:
    """A port free on ``bind``, below the kernel's ephemeral range: a killed host's port
    must still be free when it restarts, and one in the ephemeral range may meanwhile be
    the local port of some outgoing connection (an address of a namespace has its own
    ports: one free here is as good as any)."""
    import socket

    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(1000):
        port = random.randrange(max(1024, low - 12000), low)
        with socket.socket() as probe:
            try:
                probe.bind((bind, port))
            except OSError as exc:
                if exc.errno == errno.EADDRNOTAVAIL:  # not an address here: the namespace's
                    bind = "127.0.0.1"
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


async def wait_ready(host: HostProcess, token: str, timeout: float = 60.0) -> None:
    """Until the host answers /healthz (raises with its log if it exits or never does)."""
    with trio.move_on_after(timeout):
        async with httpx2.AsyncClient(timeout=1.0) as client:
            while host.alive:
                try:
                    if (await client.get(f"{host.url}/healthz")).status_code == 200:
                        return
                except httpx2.TransportError:
                    pass
                await trio.sleep(0.1)
    raise RuntimeError(f"host {host.host_id} did not start:\n{host.log_tail()}")


# -- the chaos run ------------------------------------------------------------------------------


async def chaos(args: argparse.Namespace, workdir: Path) -> int:
    with cleanup() as things:
        rig = Rig(args, workdir, things)
        db = rig.db = Database()
        things.append(db)
        ns = None
        if args.cuts and netns_works():
            ns = rig.netns = Netns(f"agc{random.randrange(10**6)}", subnet=1)
            things.append(ns)
        elif args.cuts:
            print("ip netns with veth pairs does not work here: no cut-off fault", flush=True)
        outer = ns.outer if ns else "127.0.0.1"
        model = FakeModel(("127.0.0.1", outer) if ns else ("127.0.0.1",))
        things.append(model)
        async with trio.open_nursery() as nursery:
            relay_port = _free_port(outer)
            if ns:
                pump = RelayProcess((outer, relay_port), ("127.0.0.1", PG_PORT))
                things.append(pump)
                await trio.to_thread.run_sync(pump.wait_ready)
            for i in range(args.hosts):
                in_ns = ns is not None and i == args.hosts - 1
                if in_ns:
                    assert ns is not None
                    rig.add_host(store=_by_id(db, f"{outer}:{relay_port}"),
                                 model=model.url(outer), bind=ns.inner, cluster=True,
                                 ns=ns.name)  # fmt: skip
                else:
                    rig.add_host(store=_by_id(db, None), model=model.url(), bind=outer,
                                 cluster=True, ns=None)  # fmt: skip
            await rig.start(rig.hosts[0])
            await _tables_made(db.url)
            await trio.to_thread.run_sync(install_audit, db.url)
            for host in rig.hosts[1:]:
                await rig.start(host)
            line = await _chaos_run(args, rig, db, ns)
            nursery.cancel_scope.cancel()
    print(line, flush=True)
    return 0


async def _tables_made(url: str, timeout: float = 30.0) -> None:
    """Until the first host's store has made its tables (it migrates on open)."""
    with trio.fail_after(timeout):
        while True:  # the tables are made by another process
            if await trio.to_thread.run_sync(tables_exist, url):
                return
            await trio.sleep(0.1)


def _by_id(db: Database, host: str | None) -> Any:
    def url(host_id: str) -> str:
        return db.url_for(host_id, host=host)

    return url


async def _chaos_run(args: argparse.Namespace, rig: Rig, db: Database, ns: Netns | None) -> str:
    injector = Injector(rig.hosts, db.url, rig.start, ns, args.lease_ttl)
    kinds = injector.plan(args.kills, args.stops, args.cuts)
    # The sessions ask until a little after the last fault is undone (a restart takes a
    # few seconds), so every fault has sessions asking after it.
    durations = {"kill": args.lease_ttl / 2 + 5.0, "stop": args.lease_ttl + 2.0,
                 "cut": args.lease_ttl + 3.0}  # fmt: skip
    span = sum(durations[k] + args.fault_every for k in kinds) + 2 * args.fault_every
    every = span / max(1, args.turns)
    balancer = None if args.no_health_check else Balancer(rig.urls)
    clients = Clients(rig.urls, ClientConfig(token=rig.token, turns=args.turns, every=every,
                                             read_timeout=args.read_timeout,
                                             give_up=max(60.0, 4 * args.lease_ttl)),
                      balancer)  # fmt: skip
    sessions = [f"s{i:04d}" for i in range(args.sessions)]
    started = trio.current_time()
    async with trio.open_nursery() as nursery:
        if balancer:
            nursery.start_soon(balancer.run)
        async with trio.open_nursery() as turns:
            turns.start_soon(clients.run, sessions)
            await trio.sleep(args.fault_every)
            await injector.run(kinds, args.fault_every)
        nursery.cancel_scope.cancel()
    elapsed = trio.current_time() - started
    for host in rig.hosts:
        host.terminate()
    acked = [(t.session, t.turn) for t in clients.log if t.outcome == "acked"]
    verdict = await trio.to_thread.run_sync(judge, db.url, acked)
    failovers = failover_times(injector.log, clients.log)
    kills = [f for f, fault in failovers if fault.kind == "kill"]
    worst = max((f for f, _ in failovers), default=0.0)
    outcomes: dict[str, int] = {}
    for t in clients.log:
        outcomes[t.outcome] = outcomes.get(t.outcome, 0) + 1
    print(f"\n### Chaos run: {args.hosts} hosts, {args.sessions} sessions x {args.turns} turns, "
          f"{elapsed:.0f} s\n")  # fmt: skip
    faults = ", ".join(f"{f.kind} {f.host_id} at {f.at - started:.1f} s ({len(f.held)} held)"
                       for f in injector.log)  # fmt: skip
    print(f"- faults: {faults}")
    print("- clients: " + ("random host, no health checks" if balancer is None else
                           f"behind a balancer checking /healthz every {balancer.interval:g} s; "
                           f"hosts taken out {dict(balancer.outs)}"))  # fmt: skip
    print(
        f"- turns: {outcomes}; attempts {sum(t.attempts for t in clients.log)}; "
        f"retried failures: {dict(clients.errors.most_common(8))}"
    )
    print(
        f"- stored: {verdict.sessions} sessions, {verdict.messages} messages, "
        f"{verdict.audited_writes} audited writes"
    )
    if kills:
        print(
            f"- failover after SIGKILL: p50 {_pct(kills, 50):.2f} s, p99 {_pct(kills, 99):.2f} s "
            f"({len(kills)} sessions); worst after any fault {worst:.2f} s "
            f"(lease TTL {args.lease_ttl:g} s + 2 s = {args.lease_ttl + 2:g} s)"
        )
    budget = args.lease_ttl + 2
    for kind in ("kill", "stop", "cut"):
        times = [f for f, fault in failovers if fault.kind == kind]
        if times:
            print(
                f"- failover after {kind}: p50 {_pct(times, 50):.2f} s, p99 "
                f"{_pct(times, 99):.2f} s, max {max(times):.2f} s ({len(times)} sessions, "
                f"{sum(t > budget for t in times)} over {budget:g} s)"
            )
    _print_slowest(injector.log, clients.log, budget)
    for t in [t for t in clients.log if t.outcome == "abandoned"][:12]:
        tries = "; ".join(f"{a - started:.2f}..{b - started:.2f} h{i} {o}"
                          for a, b, i, o in t.tries)  # fmt: skip
        print(f"  abandoned {t.session} {t.turn} (seconds from the run's start): {tries}")
    for name, items in (
        ("lost", verdict.lost),
        ("duplicated", verdict.duplicated),
        ("fenced", verdict.fenced),
        ("invalid", list(verdict.invalid.items())),
    ):
        for item in items[:5]:
            print(f"  {name}: {item}")  # fmt: skip
    return verdict.line(worst)


def failover_times(faults: Sequence[Fault], log: Sequence[Turn]) -> list[tuple[float, Fault]]:
    """For each session held by a faulted host and asked again after the fault: seconds
    from the fault (or from the first attempt of the turn that followed, if later) to its
    next answered turn: acknowledged, or refused with 409 ``turn_exists`` (a turn in
    flight at the fault, retried: a host read the session's store after the owner's lease
    lapsed and answered for it); inf when no turn was answered after it. A session whose
    client asked nothing more has no figure."""
    by_session: dict[str, list[Turn]] = {}
    for t in log:
        by_session.setdefault(t.session, []).append(t)
    out = []
    for fault in faults:
        for session in fault.held:
            # Turns in flight at the fault, or begun after it.
            asked = [t for t in by_session.get(session, [])
                     if t.answered_at is None or t.answered_at > fault.at]  # fmt: skip
            if not asked:
                continue
            answered = [t for t in asked if t.answered_at is not None]
            if not answered:
                out.append((float("inf"), fault))
                continue
            first = min(answered, key=lambda t: t.answered_at or 0.0)
            assert first.answered_at is not None
            out.append((first.answered_at - max(fault.at, first.first_try), fault))
    return out


def _print_slowest(faults: Sequence[Fault], log: Sequence[Turn], budget: float) -> None:
    """Where the failovers over ``budget`` spent their time: each attempt of the turns
    asked after the fault (seconds from the fault, the host, the outcome)."""
    slow = []
    for fault in faults:
        for session in fault.held:
            asked = [t for t in log if t.session == session
                     and (t.answered_at is None or t.answered_at > fault.at)]  # fmt: skip
            answered = [t for t in asked if t.answered_at is not None]
            if not answered:
                continue
            first = min(answered, key=lambda t: t.answered_at or 0.0)
            assert first.answered_at is not None
            took = first.answered_at - max(fault.at, first.first_try)
            if took > budget:
                slow.append((took, fault, session, first))
    slow.sort(key=lambda x: -x[0])
    print(f"- failovers over {budget:g} s: {len(slow)}")
    for took, fault, session, turn in slow[:12]:
        tries = "; ".join(f"{a - fault.at:+.2f}..{b - fault.at:+.2f} h{i} {o}"
                          for a, b, i, o in turn.tries)  # fmt: skip
        print(f"  {took:.2f} s {fault.kind} {fault.host_id} {session} {turn.turn}: {tries}")


def _pct(values: Sequence[float], p: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


# -- the cost figures ------------------------------------------------------------------------------


async def measure(args: argparse.Namespace, workdir: Path) -> None:
    import cluster_measure

    await cluster_measure.run(args, workdir, Rig)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    with tempfile.TemporaryDirectory(prefix="agcore-cluster-") as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        # The SQLite row starts on a fresh file: one left in a kept --workdir holds its
        # turn ids already (every turn would answer 409).
        for old in work.glob("one.db*"):
            old.unlink()
        if not args.no_measure:
            trio.run(measure, args, work)
        return trio.run(chaos, args, work)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
