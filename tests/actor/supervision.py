"""The supervised test actor and the specs the supervisor tests share."""

from __future__ import annotations

import msgspec
import trio
import trio.testing

from agcore_actors import (
    NO_BACKOFF,
    Actor,
    ActorSystem,
    ChildSpec,
    Request,
    Restart,
    Strategy,
    SupervisorSpec,
)


class Crash(msgspec.Struct, frozen=True, tag=True):
    pass


class Quit(msgspec.Struct, frozen=True, tag=True):
    pass


class Hold(Request[None], frozen=True, tag=True):
    seconds: float


class Who(Request[str], frozen=True, tag=True):
    pass


Msg = Crash | Quit | Hold | Who


class Node(Actor[Msg]):
    def __init__(self, name: str, log: list[str], fail_start: int = 0) -> None:
        self.name = name
        self.log = log
        self.fail_start = fail_start

    async def on_start(self) -> None:
        if self.ctx.restarts < self.fail_start:
            self.log.append(f"failstart {self.name}")
            raise RuntimeError(f"{self.name} cannot start")
        self.log.append(f"start {self.name}")

    async def handle(self, msg: Msg) -> str | None:
        match msg:
            case Crash():
                raise RuntimeError(f"{self.name} crashed")
            case Quit():
                self.ctx.stop()
            case Hold(seconds=seconds):
                await trio.sleep(seconds)
            case Who():
                return f"{self.name}#{self.ctx.restarts}"
        return None

    async def on_stop(self, reason: BaseException | None) -> None:
        self.log.append(f"stop {self.name}")


def child(
    name: str, log: list[str], restart: Restart = Restart.PERMANENT, fail_start: int = 0
) -> ChildSpec[Msg]:
    return ChildSpec(name, lambda: Node(name, log, fail_start), restart=restart)


def team(log: list[str], strategy: Strategy, **kw: object) -> SupervisorSpec:
    options: dict[str, object] = {"backoff": NO_BACKOFF, "restart": Restart.TEMPORARY}
    options.update(kw)
    return SupervisorSpec(
        "team",
        children=[child("a", log), child("b", log), child("c", log)],
        strategy=strategy,
        **options,  # type: ignore[arg-type]
    )


async def crash(system: ActorSystem, name: str) -> None:
    await system.lookup(name).tell(Crash())
    await trio.sleep(1)  # let the supervisor settle (virtual time)
