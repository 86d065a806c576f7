"""A script for the Ctrl-C test: a blocking host, a streamed turn whose tool hangs.

Prints ``ready`` once the tool runs; on SIGINT the turn is cancelled and committed before
``KeyboardInterrupt`` reaches the handler (printed: no turn running, one turn stored), then
leaving the outer ``with`` stops the host. The stream is read under ``with`` because the
signal may land in this loop's own code (the ``print``) rather than in ``next()``: a bare
``for`` would then only drop the stream, which cancels without waiting (see
``BlockingTurnStream``), and the handler could see the turn still running.
"""

from __future__ import annotations

from agcore_actors.agent import messages as am
from agcore_actors.blocking import open_host
from tests.asyncio.rig import Model, builder


def main() -> None:
    try:
        with open_host(builder(Model())) as host:
            try:
                with host.submit("s", "hang") as events:
                    for event in events:
                        if isinstance(event, am.ToolCallStarted):
                            print("ready", flush=True)
            except KeyboardInterrupt:
                info = host.ask("s", am.GetSessionInfo())
                print(f"interrupted: running {info.running_turn}, turns {info.turns}", flush=True)
                raise
    finally:
        print("host stopped", flush=True)


if __name__ == "__main__":
    main()
