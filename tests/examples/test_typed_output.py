"""examples/typed_output.py: the schema goes out, a bad answer is re-asked with the reason,
a good one comes back typed; one that never fits fails the turn."""

from __future__ import annotations

from tests.examples.model import answer, bodies, run_example
from tests.peers.fault_server import FaultServer

GOOD = '{"city": "Paris", "condition": "sunny", "celsius": 21.5}'


def test_a_bad_answer_is_re_asked_and_a_good_one_decoded(fault_server: FaultServer) -> None:
    base, scenario = fault_server.script(
        answer('{"city": "Paris", "condition": "sunny", "celsius": 212}'), answer(GOOD)
    )
    done = run_example("typed_output", base)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Paris: sunny, 21.5 °C", "(2 model call(s))"]
    first, second = bodies(scenario)
    schema = first["response_format"]["json_schema"]
    assert schema["name"] == "Forecast"
    forecast = schema["schema"]["$defs"]["Forecast"]  # msgspec's schema: a $ref to $defs
    assert sorted(forecast["properties"]["condition"]["enum"]) == [
        "cloudy",
        "rain",
        "snow",
        "sunny",
    ]
    reask = second["messages"][-1]
    assert reask["role"] == "user" and "celsius" in reask["content"]
    assert "<= 60" in reask["content"]


def test_an_answer_that_never_fits_fails_the_turn(fault_server: FaultServer) -> None:
    base, scenario = fault_server.script(answer("It will be nice."))
    done = run_example("typed_output", base)
    assert done.returncode == 1
    assert done.stderr.startswith("no forecast: output_validation: ")
    assert len(scenario.requests) == 3  # the first answer and two re-asks
