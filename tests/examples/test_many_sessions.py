"""examples/many_sessions.py: 200 sessions in one process, at most 50 live; an evicted
session comes back from the store with its history."""

from __future__ import annotations

from tests.examples.model import answer, bodies, run_example
from tests.peers.fault_server import FaultServer


def test_the_live_cap_holds_and_an_evicted_session_resumes(fault_server: FaultServer) -> None:
    base, scenario = fault_server.script(answer("Hello!"))
    done = run_example("many_sessions", base, "200")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "200 of 200 turns completed"
    live, started, evicted = (int(part.split(": ")[1]) for part in lines[1].split(", "))
    assert started == 200 and live + evicted == 200
    # Activations under way are not counted against the cap, so up to
    # max_turns_in_flight of them may overshoot it for a while (reported to the lead);
    # the next activation brings the host back to the cap.
    assert 50 <= live <= 50 + 16
    user, rest = lines[2].split(" ", 1)
    assert rest == "(evicted) again: Hello!"
    assert lines[3] == "live: 50, started: 201"
    assert scenario.max_active <= 16  # max_turns_in_flight
    last = bodies(scenario)[-1]
    assert [m["content"] for m in last["messages"][1:]] == [
        f"Hello, I am {user}.",
        "Hello!",
        "Do you remember my name?",
    ]
