"""examples/streaming_events.py: events stream in order; a cancelled turn closes its
HTTP request and is committed, and the next turn's history includes it, with the text the
user saw marked as interrupted."""

from __future__ import annotations

from tests.examples.model import answer, bodies, run_example
from tests.peers.fault_server import FaultServer


def test_a_turn_streams_and_a_cancelled_turn_closes_its_request(
    fault_server: FaultServer,
) -> None:
    base, scenario = fault_server.script(
        answer("Why did the actor ", "restart? ", "It had no state to lose."),
        answer("Once upon a time", " in a land far away", pause=30.0),
        answer("They lived happily ever after."),
    )
    done = run_example("streaming_events", base)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0].startswith("[started] turn ") and out[0].endswith(" with agent jester")
    assert out[1:4] == [
        "Why did the actor restart? It had no state to lose.",
        "[usage] 12 in, 7 out",
        "[done] completed after 1 model call(s)",
    ]
    assert out[4].startswith("[started] turn ")
    assert out[5:7] == ["Once upon a time", "[done] cancelled after 1 model call(s), committed"]
    assert out[8:] == [
        "They lived happily ever after.",
        "[usage] 12 in, 7 out",
        "[done] completed after 1 model call(s)",
    ]
    # The pause was 30 s: the client hung up instead of waiting for the rest.
    assert scenario.disconnects == 1
    third = bodies(scenario)[2]
    assert [(m["role"], m["content"]) for m in third["messages"][1:]] == [
        ("user", "Tell me a joke."),
        ("assistant", "Why did the actor restart? It had no state to lose."),
        ("user", "Now tell me a very long story."),
        ("assistant", "Once upon a time\n\n[interrupted]"),
        ("user", "Just tell me how it ends."),
    ]
