"""``agcore-actors demo``: a supervised actor tree at work, in about a second.

A flaky worker crashes on every ``crash_every``-th job; its supervisor
restarts it with backoff, the asks that hit a crash get the worker's own error
(a ``ValueError``, as raised: the runtime never wraps a handler's exception),
and a counter (in a one_for_one tree, so unaffected) tallies the results.
"""

from __future__ import annotations

import argparse
import functools

import msgspec
import trio

from ..actor import (
    Actor,
    ActorSystem,
    Backoff,
    ChildSpec,
    Intensity,
    Request,
    Strategy,
    SupervisorSpec,
)
from ._common import OK, add_command, examples
from ._convert import int_at_least


class Work(Request[int], frozen=True, tag=True):
    job: int


class Record(msgspec.Struct, frozen=True, tag=True):
    ok: bool


class Totals(Request[dict[str, int]], frozen=True, tag=True):
    pass


class Worker(Actor[Work]):
    def __init__(self, crash_every: int) -> None:
        self.crash_every = crash_every
        self.handled = 0

    async def handle(self, msg: Work) -> int:
        self.handled += 1
        if msg.job % self.crash_every == 0:
            raise ValueError(f"job {msg.job} hit a bad input")
        await trio.sleep(0.001)
        return msg.job * msg.job


class Counter(Actor[Record | Totals]):
    def __init__(self) -> None:
        self.ok = 0
        self.failed = 0

    async def handle(self, msg: Record | Totals) -> dict[str, int] | None:
        if isinstance(msg, Totals):
            return {"ok": self.ok, "failed": self.failed}
        if msg.ok:
            self.ok += 1
        else:
            self.failed += 1
        return None


async def run_demo(jobs: int = 40, crash_every: int = 9) -> None:
    tree = SupervisorSpec(
        "workers",
        strategy=Strategy.ONE_FOR_ONE,
        intensity=Intensity(max_restarts=jobs, period=5.0),
        backoff=Backoff(initial=0.01, cap=0.2),
        children=[
            ChildSpec("counter", Counter),
            ChildSpec("worker", functools.partial(Worker, crash_every)),
        ],
    )
    async with ActorSystem(strict=True, seed=1) as system:
        await system.start_supervisor(tree)
        worker = system.lookup("worker")
        counter = system.lookup("counter")
        for job in range(1, jobs + 1):
            try:
                result = await worker.ask(Work(job), timeout=5)
            except ValueError as exc:
                print(f"job {job:3}: worker crashed ({exc}); supervisor restarts it")
                await counter.tell(Record(ok=False))
            else:
                print(f"job {job:3}: {result}")
                await counter.tell(Record(ok=True))
        totals = await counter.ask(Totals())
        print(f"\ntotals: {totals['ok']} ok, {totals['failed']} failed")
        print("\nsnapshot:")
        print(f"  {'name':10} {'kind':10} {'parent':8} {'state':9} {'restarts':>8}")
        for row in system.snapshot():
            print(
                f"  {row.name:10} {row.kind:10} {row.parent or '-':8} "
                f"{row.state.value:9} {row.restarts:8}"
            )


def main(jobs: int, crash_every: int) -> None:
    trio.run(run_demo, jobs, crash_every)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = add_command(
        commands,
        "demo",
        _run,
        help="run a small supervised actor tree",
        epilog=examples("agcore-actors demo", "agcore-actors demo --jobs 12 --crash-every 5"),
    )
    demo.add_argument("--jobs", type=int_at_least(1), default=40, help="jobs to send (default 40)")
    demo.add_argument(
        "--crash-every",
        type=int_at_least(1),
        default=9,
        help="the worker crashes on every N-th job",
    )


def _run(args: argparse.Namespace) -> int:
    main(args.jobs, args.crash_every)
    return OK
