"""The soak's fault schedule (tests/peers/fault_openai.py): reproducible, covering every
fault, and each fault, met by the real provider's retry loop with no retry left, ends in
a typed LLM error or a clean answer — never an untyped error or a hang."""

from __future__ import annotations

import collections

import pytest
import trio

from agcore_actors.llm import (
    ChatRequest,
    Finish,
    FunctionDefinition,
    LlmError,
    RetryConfig,
    Timeouts,
    ToolDefinition,
    user,
)
from tests.llm.helpers import openai, stream
from tests.peers.fault_openai import (
    PROVIDER_FAULTS,
    FaultyModel,
    choose_fault,
    choose_tools,
    request_key,
)
from tests.peers.fault_server import FaultServer

NO_RETRY = RetryConfig(max_retries=0)
SHORT = Timeouts(attempt=0.5, idle=0.5, connect=2.0, call=10.0)


def test_a_request_meets_the_same_fault_however_requests_interleave() -> None:
    keys = [f"k{i}" for i in range(500)]
    forward = {(k, a): choose_fault(7, 0.3, k, a) for k in keys for a in range(3)}
    backward = {(k, a): choose_fault(7, 0.3, k, a) for k in reversed(keys) for a in range(3)}
    assert forward == backward
    assert forward != {(k, a): choose_fault(8, 0.3, k, a) for k in keys for a in range(3)}


def test_every_fault_is_met_at_about_the_rate() -> None:
    seen = collections.Counter(choose_fault(1, 0.25, f"k{i}", 0) for i in range(8000))
    assert set(seen) == {"ok", *PROVIDER_FAULTS}
    assert 0.22 < 1 - seen["ok"] / 8000 < 0.28


def test_a_retry_may_meet_another_fault_than_its_first_attempt() -> None:
    outcomes = {(choose_fault(3, 0.5, "same", a)) for a in range(50)}
    assert len(outcomes) > 3


def test_the_model_calls_offered_tools_by_name_or_suffix() -> None:
    offered = ["add", "hang", "flaky-echo", "flaky-crash"]
    picked = {n for i in range(300) for n in choose_tools(0, 0.5, f"k{i}", offered)}
    assert picked == set(offered)  # missing tools fall back to the first one offered
    assert request_key({"messages": [{"role": "user", "content": "a"}]}) != request_key(
        {"messages": [{"role": "user", "content": "b"}]}
    )


TOOL = ToolDefinition(FunctionDefinition(name="add", parameters={"type": "object"}))


@pytest.mark.parametrize("fault", PROVIDER_FAULTS)
async def test_each_fault_ends_in_a_typed_error_or_a_clean_answer(
    fault_server: FaultServer, fault: str
) -> None:
    base, _ = fault_server.respond(FaultyModel(0, 1.0, 0.0, faults=(fault,)))
    request = ChatRequest([user("What is 2 + 3?")], tools=[TOOL])
    with trio.fail_after(15):  # a bound on a hang, not a timing assertion
        try:
            events = await stream(openai(base), request, retry=NO_RETRY, timeouts=SHORT)
        except LlmError as exc:
            assert fault not in ("slow", "bad_tool_args"), exc
            assert exc.kind
            return
    assert fault in ("slow", "bad_tool_args"), events
    finish = events[-1]
    assert isinstance(finish, Finish)
    (call,) = finish.response.message.tool_calls or []
    assert call.function.name == "add"
    assert (call.function.arguments == '{"a": 2,') == (fault == "bad_tool_args")
