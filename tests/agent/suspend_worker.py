"""A bot process for the SIGKILL tests of suspended and resumed turns: a SessionHost
(``tests.agent.suspend_rig``) over a SQLite session store.

``python -m tests.agent.suspend_worker DB RUNS STEP``, STEP one of:

- ``suspend``: run turn ``t1`` of session ``s`` (it suspends for approval), print
  ``SUSPENDED <awaited call ids>``, then wait to be killed;
- ``answer``: approve ``t1-g`` twice; print ``ANSWER <status> <turn status> <text>`` each;
- ``suspend-ask`` and ``answer-ask``: the same with a turn suspended on the question its
  ``guarded`` call asks (``elicitations="suspend"``), answered ``accept`` as ``t1-g.e1``;
- ``batch``: stream turn ``batch`` (three calls, ``batch-c`` stalls on its first run),
  printing ``FINISHED <call id>`` for each result (stored before it is reported), then
  wait to be killed;
- ``resume``: resume the open turn; print ``RESUMED <status> <text>``;
- ``next``: run turn ``batch2`` (the open turn is resumed first); print
  ``NEXT <status> <text>``.

The tools append each completed run to the file RUNS (one call id a line).
"""

from __future__ import annotations

import sys

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import AgentConfig
from agcore_actors.agent import messages as am
from agcore_actors.store import SqliteSessions, session_store_spec
from tests.agent import suspend_rig as rig


async def main(db: str, runs: str, step: str) -> None:
    rig.RUNS_FILE[:] = [runs]
    if step == "batch":
        rig.STALL_ONCE.add("batch-c")
    asking = step.endswith("-ask")
    step = step.removesuffix("-ask")
    config = rig.SUSPEND if step in ("suspend", "answer") else AgentConfig(interrupted="resume")
    if asking:
        config = rig.ELICIT
    async with ActorSystem() as system:
        store = await system.root.start_child(
            session_store_spec("store", backend=SqliteSessions(db))
        )
        r = rig.Rig(system, store, config, asking=asking)
        async with r.host() as host:
            if step == "suspend":
                result = await host.run("s", "t1", turn="t1")
                calls = " ".join(c.call_id for c in result.awaiting)
                print(f"SUSPENDED {result.status} {calls}", flush=True)
                await trio.sleep_forever()
            elif step == "answer":
                for _ in range(2):
                    call = "t1-g.e1" if asking else "t1-g"
                    answer = await host.ask("s", am.AnswerTurn(turn="t1", call_id=call))
                    status = answer.result.status if answer.result else "-"
                    text = answer.result.text if answer.result else "-"
                    print(f"ANSWER {answer.status} {status} {text}", flush=True)
            elif step == "batch":
                async with host.submit("s", "batch", turn="batch") as events:
                    async for event in events:
                        if isinstance(event, am.ToolCallFinished):
                            print(f"FINISHED {event.call_id}", flush=True)
            elif step == "next":  # a new turn: the open one is resumed first
                result = await host.run("s", "batch2", turn="batch2")
                print(f"NEXT {result.status} {result.text}", flush=True)
            else:
                result = await host.ask("s", am.ResumeTurn())
                print(f"RESUMED {result.status} {result.text}", flush=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
