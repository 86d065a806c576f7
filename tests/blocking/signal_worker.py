"""A script for the Ctrl-C test: a blocking host, a streamed turn whose tool hangs.

Prints ``ready`` once the tool runs; on SIGINT the read is interrupted, the turn is
cancelled and committed before ``KeyboardInterrupt`` comes out of it (printed: no turn
running, one turn stored), then leaving the ``with`` stops the host.
"""

from __future__ import annotations

from agcore_actors.agent import messages as am
from agcore_actors.blocking import open_host
from tests.asyncio.rig import Model, builder


def main() -> None:
    try:
        with open_host(builder(Model())) as host:
            try:
                for event in host.submit("s", "hang"):
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
