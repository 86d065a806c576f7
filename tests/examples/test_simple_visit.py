"""examples/simple_visit.py: one request, one typed reply, failures as typed errors."""

from __future__ import annotations

from tests.examples.model import bodies, completed, run_example
from tests.peers.fault_server import FaultServer, error_reply


def test_simple_visit_prints_the_reply_and_its_usage(fault_server: FaultServer) -> None:
    base, scenario = fault_server.script(completed("I am a concise assistant."))
    done = run_example("simple_visit", base)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "sending the request...",
        "reply: I am a concise assistant.",
        "usage: 12 input, 7 output tokens",
    ]
    [body] = bodies(scenario)
    assert body["model"] == "test-model"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"] == "Introduce yourself."
    assert scenario.requests[0].headers["authorization"] == "Bearer sk-test"


def test_simple_visit_reports_a_failure_by_kind_and_exit_status(
    fault_server: FaultServer,
) -> None:
    base, _ = fault_server.script(error_reply(401, "bad key"))
    done = run_example("simple_visit", base)
    assert done.returncode == 1
    assert done.stderr.startswith("request failed (llm_authentication): ")
    assert "sk-test" not in done.stderr
