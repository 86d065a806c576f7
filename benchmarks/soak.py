"""Soak and crash-resume: many sessions through one SessionHost under a seeded fault
schedule, with eviction pressure; and the same work SIGKILLed and restarted on one store.

- ``soak``: N sessions x M turns at once through one SessionHost (a live cap and idle TTL
  far below N: sessions are evicted and restored many times) against the fault-injecting
  fake OpenAI server (tests/peers/fault_openai.py, its own process), misbehaving function
  tools and a fault-injecting MCP server (benchmarks/soak_rig.py). Reports turns
  completed, failed with a typed error, lost; invalid transcripts (benchmarks/soak_check.py
  says what valid means); tasks, threads, file descriptors and child processes leaked;
  RSS at start, middle and end. With ``--cancel-rate 0.1`` a tenth of the callers give
  up at a random moment, and with ``--store-faults`` the store's writes fail for a moment
  now and then (disk full, read-only, busy); after the run, with the faults stopped, one
  more turn on every session must complete (else the session is *wedged*). Reports lost,
  duplicated and invalid turns, wedged sessions and leaks.
- ``crash``: the same work in a child process (``worker``), SIGKILLed at random points
  ``--kills`` times and restarted on the same SQLite store, then run to the end. The
  worker appends an acknowledgement (a JSON line, fsynced) only after the host returned
  the turn's result; afterwards every acknowledged turn must be in the store and every
  transcript valid.
- ``checker``: the concurrency checker of tests/agent/test_host_checker.py (many callers on
  colliding sessions, faults at random checkpoints, checked against its own model; see
  tests/agent/CHECKER_NOTES.md) for ``--examples`` scenarios per store instead of CI's
  150, drawn from ``--seed`` (so not CI's: the same command reproduces a failure), with
  ``--faults`` (``all`` or some of cancel,ids,store,crash,provider,bug,executor,evict,
  restart) on ``--stores`` (benchmarks/soak_checker.py).

    .venv/bin/python benchmarks/soak.py soak --sessions 200 --turns 20
    .venv/bin/python benchmarks/soak.py crash --sessions 50 --turns 10 --kills 8
    .venv/bin/python benchmarks/soak.py soak --sessions 20 --turns 4 --json out.json
    .venv/bin/python benchmarks/soak.py soak --cancel-rate 0.1 --store-faults
    .venv/bin/python benchmarks/soak.py checker --examples 2000 --faults all

Exit status 0 when every must-be-zero figure is zero (and RSS grew < 10 % from the
middle to the end of a soak of at least 1,000 turns); for ``checker``, when no scenario
broke a property.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import trio

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from soak_check import Findings, check_store, read_acks  # noqa: E402
from soak_checker import run_checker  # noqa: E402
from soak_driver import Driver, session_ids  # noqa: E402
from soak_rig import (  # noqa: E402
    RigConfig,
    StoreFaults,
    children,
    fault_counts,
    fd_targets,
    open_fds,
    rss,
    soak_host,
    start_provider,
    stop_provider,
    tagged,
    tasks,
    threads,
)

from agcore_actors import ActorSystem  # noqa: E402


def rig_config(args: argparse.Namespace) -> RigConfig:
    return RigConfig(
        max_sessions=args.max_sessions,
        idle_ttl=args.idle_ttl,
        in_flight=args.in_flight,
        seed=args.seed,
        mcp_tag=args.mcp_tag,
        cache_mib=args.cache_mib,
    )


# -- soak --------------------------------------------------------------------------------


async def _soak(
    base: str,
    db: Path,
    acks: Path,
    n: int,
    m: int,
    rig: RigConfig,
    cancel_rate: float = 0.0,
    store_faults: bool = False,
) -> dict[str, Any]:
    tasks_before = tasks()
    samples: list[tuple[int, ...]] = []
    snapshot: dict[str, Any] = {}
    total = n * m
    faults = StoreFaults(rig.seed) if store_faults else None
    faulting = trio.CancelScope()
    async with (
        ActorSystem() as system,
        soak_host(system, base, str(db), rig, faults) as host,
        trio.open_nursery() as nursery,
    ):
        if faults is not None:
            nursery.start_soon(_faults, faults, faulting)
        driver = Driver(
            host, acks, m, watchdog=rig.turn_timeout * 3, seed=rig.seed, cancel_rate=cancel_rate
        )
        marks = {max(1, total * i // 10) for i in range(1, 11)}

        def progress() -> None:
            if driver.done in marks:
                sample()

        def sample() -> None:
            if gc.isenabled():
                gc.collect()
            live = len(host.live_sessions)
            heap = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
            samples.append((driver.done, rss(), open_fds(), tasks(), threads(), live, heap))

        driver.on_progress = progress
        sample()
        started = time.monotonic()
        try:
            await driver.run({s: 0 for s in session_ids(n)}, "a")
            wall = time.monotonic() - started
            faulting.cancel()  # the faults stop: every session's next turn must complete
            wedged = await driver.wedged(session_ids(n), "w")
        finally:
            faulting.cancel()
            driver.close()
        for session in list(host.live_sessions):
            await host.close(session)
        snap = host.snapshot()
        snapshot = {f: getattr(snap, f) for f in snap.__struct_fields__}
    return {
        "wall_s": round(wall, 1),
        "counts": driver.counts,
        "ways": driver.ways,
        "errors": driver.errors,
        "lost_detail": driver.lost[:20],
        "host": snapshot,
        "wedged_sessions": len(wedged),
        "wedged_detail": wedged[:20],
        "store_faults": faults.injected if faults is not None else {},
        # (turns done, RSS, fds, tasks, threads, live sessions, traced heap or 0) at
        # every tenth of the run
        "samples": samples,
        "tasks_leaked": tasks() - tasks_before,
    }


async def _faults(faults: StoreFaults, scope: trio.CancelScope) -> None:
    with scope:
        await faults.schedule()


def settle(measure: Any, baseline: int, seconds: float) -> int:
    """``measure()`` once it is back at ``baseline``, or after ``seconds`` (trio's idle
    worker threads linger for 10 s before they exit: that is no leak)."""
    deadline = time.monotonic() + seconds
    while (value := measure()) > baseline and time.monotonic() < deadline:
        time.sleep(0.2)
    return int(value)


def soak(args: argparse.Namespace) -> dict[str, Any]:
    rig = rig_config(args)
    provider, base = start_provider(args.seed, args.rate, args.tool_rate)
    try:
        with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
            db, acks = Path(tmp) / "soak.db", Path(tmp) / "acks.jsonl"
            mine = frozenset({provider.pid})
            fds, thr, kids = open_fds(), threads(), len(children(mine))
            targets = fd_targets()
            if args.heap:
                tracemalloc.start()
            if args.no_gc:
                gc.collect()
                gc.disable()
            try:
                report = trio.run(
                    _soak,
                    base,
                    db,
                    acks,
                    args.sessions,
                    args.turns,
                    rig,
                    args.cancel_rate,
                    args.store_faults,
                )
            finally:
                gc.enable()
                tracemalloc.stop()
            report["fds_leaked"] = settle(open_fds, fds, 5) - fds
            report["fds_leaked_detail"] = sorted(set(fd_targets().items()) - set(targets.items()))
            report["children_leaked"] = settle(lambda: len(children(mine)), kids, 5) - kids
            report["threads_leaked"] = settle(threads, thr, 20) - thr
            findings = check_store(db, read_acks(acks), session_ids(args.sessions))
            report["faults"] = fault_counts(base)
    finally:
        stop_provider(provider)
    return _finish(report, findings, args.sessions * args.turns)


def _finish(report: dict[str, Any], found: Findings, planned: int) -> dict[str, Any]:
    report["planned_turns"] = planned
    report["acknowledged"] = found.acknowledged
    report["lost_acknowledged"] = found.lost[:20]
    report["turns_lost"] = report["counts"].get("lost", 0) + len(found.lost)
    report["stale_session_errors"] = report["counts"].get("stale", 0)
    report["duplicated"] = len(found.duplicated)
    report["duplicated_detail"] = found.duplicated[:20]
    report["invalid_transcripts"] = len(found.invalid)
    report["invalid_detail"] = dict(list(found.invalid.items())[:5])
    report["open_turns"] = len(found.open_turns)
    report["stored"] = {
        "sessions": found.sessions,
        "messages": found.messages,
        "turns": found.turns_stored,
    }
    report["integrity"] = found.integrity
    report["tool_results"] = dict(sorted(found.tool_results.items(), key=lambda kv: -kv[1]))
    rss_points = report.get("samples") or []
    if len(rss_points) >= 3:
        middle, end = rss_points[len(rss_points) // 2][1], rss_points[-1][1]
        report["rss_mb"] = {
            "start": rss_points[0][1] / 1e6,
            "middle": middle / 1e6,
            "end": end / 1e6,
        }
        report["rss_growth_middle_to_end"] = (end - middle) / middle
        if rss_points[-1][6]:
            points = (rss_points[0], rss_points[len(rss_points) // 2], rss_points[-1])
            heap = [p[6] / 1e6 for p in points]
            report["heap_mb"] = dict(zip(("start", "middle", "end"), heap, strict=True))
    return report


def passed(report: dict[str, Any]) -> bool:
    zero = (
        "turns_lost",
        "duplicated",
        "invalid_transcripts",
        "open_turns",
        "wedged_sessions",
        "stale_session_errors",
    )
    leaks = ("tasks_leaked", "fds_leaked", "children_leaked", "threads_leaked")
    ok = all(report.get(k, 0) == 0 for k in zero + leaks) and report["integrity"] == "ok"
    if report["planned_turns"] >= 1000 and "rss_growth_middle_to_end" in report:
        ok = ok and report["rss_growth_middle_to_end"] < 0.10
    return ok


# -- crash-resume ------------------------------------------------------------------------


async def _worker(
    base: str, db: str, acks: Path, n: int, m: int, rig: RigConfig, drain_after: int
) -> dict[str, Any]:
    """Take the turns not acknowledged yet; with ``drain_after``, leave the host once this
    process acknowledged that many, while the sessions keep sending turns."""
    done: dict[str, int] = {}
    for ack in read_acks(acks):
        done[ack["session"]] = max(done.get(ack["session"], 0), ack["k"] + 1)
    plan = {s: done.get(s, 0) for s in session_ids(n) if done.get(s, 0) < m}
    finished = trio.Event()
    async with ActorSystem() as system, trio.open_nursery() as clients:
        async with soak_host(system, base, db, rig) as host:
            print("READY", flush=True)
            driver = Driver(host, acks, m, watchdog=rig.turn_timeout * 3, seed=rig.seed)

            async def drive() -> None:
                await driver.run(plan, os.urandom(3).hex())
                finished.set()

            clients.start_soon(drive)
            # Polling: the acknowledgement count has no event of its own.
            while not finished.is_set() and not (drain_after and driver.acked >= drain_after):  # noqa: ASYNC110
                await trio.sleep(0.01)
            driver.stopping = True
            drain_started = trio.current_time()
        drained_in = trio.current_time() - drain_started
    driver.close()
    return {
        "counts": driver.counts,
        "ways": driver.ways,
        "errors": driver.errors,
        "lost_detail": driver.lost[:20],
        "drained_in_s": round(drained_in, 2),
    }


def worker(args: argparse.Namespace) -> dict[str, Any]:
    rig = rig_config(args)
    acks = Path(args.acks)
    return trio.run(
        _worker, args.base, args.db, acks, args.sessions, args.turns, rig, args.drain_after
    )


def crash(args: argparse.Namespace) -> dict[str, Any]:
    """Rounds of a worker on one store: ``--kills`` SIGKILLs and ``--drains`` graceful
    stops under load, in a seeded order, then one round run to the end."""
    rng = random.Random(args.seed)
    rounds = ["kill"] * args.kills + ["drain"] * args.drains
    rng.shuffle(rounds)
    tag = f"soak-crash-{os.getpid()}-{os.urandom(3).hex()}"
    provider, base = start_provider(args.seed, args.rate, args.tool_rate)
    counts: dict[str, int] = {}
    report: dict[str, Any] = {"kills": [], "drains": [], "lost_detail": []}
    try:
        with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
            db, acks = Path(tmp) / "crash.db", Path(tmp) / "acks.jsonl"
            # At most half the turns go by before the last round, so that no kill or
            # drain round runs out of work before it stops its worker.
            per_round = max(1, args.sessions * args.turns // (2 * len(rounds) + 2))
            for number, kind in enumerate([*rounds, "finish"]):
                stop_at = rng.randint(1, per_round)
                drain_after = stop_at if kind == "drain" else 0
                child = _start_worker(args, base, db, acks, tag, number, drain_after)
                assert child.stdout is not None
                if kind == "kill":
                    target = len(read_acks(acks)) + stop_at
                    deadline = time.monotonic() + 600  # a bound on a hang, not a timing
                    while len(read_acks(acks)) < target and child.poll() is None:
                        assert time.monotonic() < deadline, "the worker makes no progress"
                        time.sleep(0.01)
                    # Lands mid-turn, mid-commit, anywhere; but before the round has used
                    # up its share of the turns (a fast machine finishes many in 0.3 s).
                    until = time.monotonic() + rng.uniform(0, 0.3)
                    while time.monotonic() < until and len(read_acks(acks)) < target + per_round:
                        time.sleep(0.005)
                    child.send_signal(signal.SIGKILL)
                    child.wait()
                    child.stdout.close()
                    kill = {"after_acks": len(read_acks(acks)), "rc": child.returncode}
                    report["kills"].append(kill)
                    continue
                out = child.stdout.read()
                assert child.wait() == 0, f"a worker failed: {child.returncode}"
                summary = json.loads(out.strip().splitlines()[-1])
                for key, value in summary["counts"].items():
                    counts[key] = counts.get(key, 0) + value
                report["lost_detail"] += summary["lost_detail"]
                if kind == "drain":
                    drain = {"after_acks": len(read_acks(acks)), **summary["counts"]}
                    report["drains"].append({**drain, "drained_in_s": summary["drained_in_s"]})
            findings = check_store(db, read_acks(acks), session_ids(args.sessions))
            report["counts"] = counts
            # A killed worker's MCP server sees stdin close and exits: none may outlive it.
            report["children_leaked"] = settle(lambda: len(tagged(tag)), 0, 10)
            report["faults"] = fault_counts(base)
    finally:
        stop_provider(provider)
    return _finish(report, findings, args.sessions * args.turns)


def _start_worker(
    args: argparse.Namespace, base: str, db: Path, acks: Path, tag: str, n: int, drain: int
) -> subprocess.Popen[str]:
    argv = [sys.executable, __file__, "worker", "--base", base, "--db", str(db)]
    argv += ["--acks", str(acks), "--sessions", str(args.sessions)]
    argv += ["--turns", str(args.turns), "--seed", str(args.seed + n)]
    argv += ["--max-sessions", str(args.max_sessions), "--idle-ttl", str(args.idle_ttl)]
    argv += ["--in-flight", str(args.in_flight), "--mcp-tag", tag, "--drain-after", str(drain)]
    argv += ["--cache-mib", str(args.cache_mib)]
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    return subprocess.Popen(argv, stdout=subprocess.PIPE, env=env, text=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="soak and crash-resume")
    parser.add_argument("what", choices=["soak", "crash", "worker", "checker"])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--kills", type=int, default=8)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--rate", type=float, default=0.2, help="provider fault rate")
    parser.add_argument("--tool-rate", type=float, default=0.3, help="faulting tool rate")
    parser.add_argument("--max-sessions", type=int, default=16)
    parser.add_argument("--idle-ttl", type=float, default=0.2)
    parser.add_argument("--in-flight", type=int, default=48, help="turns at once")
    parser.add_argument("--cache-mib", type=int, default=32, help="the store's page cache")
    parser.add_argument("--tmp", default=None, help="where the store and acks go")
    parser.add_argument("--json", default=None, help="write the report here too")
    parser.add_argument("--heap", action="store_true", help="sample tracemalloc's heap too")
    parser.add_argument(
        "--no-gc", action="store_true", help="cycle collector off: what waits for it shows"
    )
    parser.add_argument("--base", default="")
    parser.add_argument("--db", default="")
    parser.add_argument("--acks", default="")
    parser.add_argument("--mcp-tag", default="soak")
    parser.add_argument("--drain-after", type=int, default=0)
    parser.add_argument(
        "--cancel-rate", type=float, default=0.0, help="share of callers that give up at random"
    )
    parser.add_argument(
        "--store-faults", action="store_true", help="writes fail for a moment now and then"
    )
    parser.add_argument("--drains", type=int, default=2, help="graceful stops under load")
    parser.add_argument("--examples", type=int, default=2000, help="checker: scenarios per store")
    parser.add_argument("--faults", default="all", help="checker: all, or cancel,ids,...")
    parser.add_argument("--stores", default="memory,sqlite", help="checker: memory,sqlite")
    parser.add_argument("--shrink", action="store_true", help="checker: shrink a failure")
    args = parser.parse_args(argv)
    if args.what == "worker":
        print(json.dumps(worker(args)), flush=True)
        return 0
    if args.what == "checker":
        try:
            report = run_checker(args.examples, args.faults, args.stores, args.seed, args.shrink)
        except ValueError as exc:
            parser.error(str(exc))
    else:
        report = soak(args) if args.what == "soak" else crash(args)
        report["passed"] = passed(report)
    text = json.dumps(report, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
