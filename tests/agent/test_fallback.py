"""Model fallback: the pure decision against an independent model, and the chain end to
end through SessionHost (scripted providers registered by name, and real HTTP servers on
127.0.0.1): the next model on the chosen kinds, never after output was streamed, the
model that answered recorded per call and said by the events."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.agent import Agent, AgentConfig, ModelSettings
from agcore_actors.agent import messages as am
from agcore_actors.agent.policy import ALL_FALLBACK_KINDS, falls_back
from agcore_actors.llm import (
    AuthenticationError,
    ContextLengthError,
    InvalidResponseError,
    LlmConnectionError,
    LlmTimeoutError,
    OpenAICompatibleProvider,
    OpenAIConfig,
    RateLimitError,
    RequestError,
    StreamError,
    Usage,
)
from agcore_actors.local.messages import Endpoint
from agcore_actors.testing import ScriptedProvider, ScriptedReply
from tests.agent.capability_rig import answered_once, cap_host, events_of, final
from tests.peers.fault_server import FaultServer, completion, error_reply, json_reply
from tests.peers.local_model import openai_config

# -- the decision, against a model that shares no code ---------------------------------

ERRORS: dict[str, Any] = {
    "429": lambda: RateLimitError("p", None),
    "req429": lambda: RequestError("p", 429, ""),
    "500": lambda: RequestError("p", 500, ""),
    "503": lambda: RequestError("p", 503, ""),
    "400": lambda: RequestError("p", 400, ""),
    "404": lambda: RequestError("p", 404, ""),
    "ctx": lambda: ContextLengthError("p", 10, 5),
    "t_attempt": lambda: LlmTimeoutError("p", 1.0, "attempt"),
    "t_idle": lambda: LlmTimeoutError("p", 1.0, "idle"),
    "t_call": lambda: LlmTimeoutError("p", 1.0, "call"),
    "conn": lambda: LlmConnectionError("p", "refused"),
    "cut": lambda: StreamError("p", "cut", truncated=True),
    "malformed": lambda: StreamError("p", "bad"),
    "auth": lambda: AuthenticationError("p", 401, ""),
    "invalid": lambda: InvalidResponseError("p", "x"),
    "bug": lambda: RuntimeError("x"),
}

# The model's own table: which error names belong to which kind.
KIND_OF = {
    "429": "rate_limit",
    "req429": "rate_limit",
    "500": "server_error",
    "503": "server_error",
    "cut": "server_error",
    "ctx": "context_length",
    "t_attempt": "timeout",
    "t_idle": "timeout",
    "conn": "connection",
}


@given(
    error=st.sampled_from(sorted(ERRORS)),
    chosen=st.frozensets(st.sampled_from(sorted(ALL_FALLBACK_KINDS))),
    output_seen=st.booleans(),
    remaining=st.integers(0, 3),
)
def test_a_call_falls_back_only_on_a_chosen_kind_before_output_with_a_model_left(
    error: str, chosen: frozenset[Any], output_seen: bool, remaining: int
) -> None:
    expected = not output_seen and remaining > 0 and error in KIND_OF and KIND_OF[error] in chosen
    assert falls_back(ERRORS[error](), chosen, output_seen=output_seen, remaining=remaining) == (
        expected
    )


def test_bad_fallback_settings_are_refused_where_they_are_built() -> None:
    with pytest.raises(ValueError, match="fallback_on"):
        ModelSettings(fallback_on={"nonsense"})
    with pytest.raises(ValueError, match="fallbacks of its own"):
        ModelSettings(fallback=(ModelSettings(fallback=(ModelSettings(),)),))


# -- end to end through SessionHost ------------------------------------------------------

USAGE = Usage(input_tokens=7, output_tokens=3)


def chain(*names: str, on: frozenset[str] = ALL_FALLBACK_KINDS) -> Agent:
    first, *rest = names
    model = ModelSettings(
        provider=first,
        model=f"{first}-model",
        fallback=tuple(ModelSettings(provider=n, model=f"{n}-model") for n in rest),
        fallback_on=on,
    )
    return Agent(name="a", model=model)


def answering(name: str, text: str = "from backup") -> ScriptedProvider:
    return ScriptedProvider([ScriptedReply(text=[text], usage=USAGE)], name=name, model=f"{name}-m")


def failing(name: str, error: Any) -> ScriptedProvider:
    return ScriptedProvider([error], name=name, model=f"{name}-m")


@pytest.mark.parametrize("streamed", [True, False])
async def test_a_rate_limited_model_falls_back_and_the_turn_records_who_answered(
    autojump_clock: trio.testing.MockClock, streamed: bool
) -> None:
    primary = failing("primary", RateLimitError("primary", None))
    backup = answering("backup")
    async with cap_host([primary, backup], agents=[chain("primary", "backup")]) as cap:
        if streamed:
            events = await events_of(cap.host, "s", "hi")
            result = final(events)
            fallbacks = [e for e in events if isinstance(e, am.ModelFallback)]
            assert len(fallbacks) == 1
            assert fallbacks[0].from_provider == "primary"
            assert fallbacks[0].to_provider == "backup"
            assert fallbacks[0].error_kind == "rate_limit"
            usage = [e for e in events if isinstance(e, am.UsageReported)]
            assert [(u.provider, u.model) for u in usage] == [("backup", "backup-m")]
        else:
            result = await cap.host.run("s", "hi")
        assert result.status == "completed"
        assert result.text == "from backup"
        assert [(c.provider, c.model, c.fallback) for c in result.calls] == [
            ("backup", "backup-m", 1)
        ]
        assert result.usage == USAGE
        assert primary.attempts == 1 and backup.attempts == 1
        # The backup was asked for its own model.
        assert backup.requests[0].model == "backup-model"
        assert await cap.valid("s")


async def test_no_fallback_after_a_piece_of_the_answer_was_streamed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cut = StreamError("primary", "cut", truncated=True)
    primary = ScriptedProvider(
        [ScriptedReply(text=["Hel", "lo"], fail_after=1, error=cut)], name="primary"
    )
    backup = answering("backup")
    async with cap_host([primary, backup], agents=[chain("primary", "backup")]) as cap:
        events = await events_of(cap.host, "s", "hi")
        result = final(events)
        assert result.status == "failed" and result.error_kind == "llm_stream"
        assert not [e for e in events if isinstance(e, am.ModelFallback)]
        assert backup.attempts == 0
        # The piece the person saw is kept, marked as interrupted.
        log = await cap.transcript("s")
        assert "Hel" in str(log[-1]) and await cap.valid("s")


async def test_a_kind_the_agent_did_not_choose_does_not_fall_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    primary = failing("primary", RequestError("primary", 503, "down"))
    backup = answering("backup")
    agents = [chain("primary", "backup", on=frozenset({"rate_limit"}))]
    async with cap_host([primary, backup], agents=agents) as cap:
        result = await cap.host.run("s", "hi")
        assert result.status == "failed" and result.error_kind == "llm_request"
        assert backup.attempts == 0


async def test_authentication_errors_never_fall_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    primary = failing("primary", AuthenticationError("primary", 401, "bad key"))
    backup = answering("backup")
    async with cap_host([primary, backup], agents=[chain("primary", "backup")]) as cap:
        result = await cap.host.run("s", "hi")
        assert result.error_kind == "llm_authentication" and backup.attempts == 0


async def test_the_chain_goes_on_to_the_last_model_and_its_error_ends_the_turn(
    autojump_clock: trio.testing.MockClock,
) -> None:
    one = failing("one", RequestError("one", 500, "x"))
    two = failing("two", LlmTimeoutError("two", 1.0))
    three = failing("three", RateLimitError("three", 1.0))
    async with cap_host([one, two, three], agents=[chain("one", "two", "three")]) as cap:
        events = await events_of(cap.host, "s", "hi")
        result = final(events)
        assert result.status == "failed" and result.error_kind == "rate_limit"
        moves = [
            (e.from_provider, e.to_provider) for e in events if isinstance(e, am.ModelFallback)
        ]
        assert moves == [("one", "two"), ("two", "three")]
        assert (one.attempts, two.attempts, three.attempts) == (1, 1, 1)


async def test_fallback_in_a_tool_loop_answers_every_call_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from agcore_actors.testing import ScriptedToolCall

    def backup_play(request: Any, attempt: int) -> ScriptedReply:
        if attempt == 1:
            calls = [ScriptedToolCall("record", {"n": i}, id=f"c{i}") for i in range(3)]
            return ScriptedReply(tool_calls=calls, usage=USAGE)
        return ScriptedReply(text="done", usage=USAGE)

    primary = failing("primary", RequestError("primary", 502, "bad gateway"))
    backup = ScriptedProvider(backup_play, name="backup")
    async with cap_host([primary, backup], agents=[chain("primary", "backup")]) as cap:
        result = await cap.host.run("s", "go")
        assert result.status == "completed" and result.text == "done"
        assert sorted(cap.counters.ran) == [0, 1, 2]
        # Each model call tried the primary first, then the backup answered.
        assert [c.provider for c in result.calls] == ["backup", "backup"]
        assert primary.attempts == 2
        log = await cap.transcript("s")
        assert answered_once(log) and await cap.valid("s")


# -- real HTTP: a failing fake server, then a working one ---------------------------------


async def test_a_failing_http_server_falls_back_to_a_working_one(
    fault_server: FaultServer,
) -> None:
    bad_url, bad = fault_server.script(error_reply(503, "overloaded"))
    good_url, good = fault_server.script(
        json_reply(completion("real answer", usage={"prompt_tokens": 9, "completion_tokens": 2}))
    )
    down = OpenAICompatibleProvider(
        OpenAIConfig(name="down", base_url=bad_url, api_key="sk-test-1", model="m-down")
    )
    up = OpenAICompatibleProvider(
        OpenAIConfig(name="up", base_url=good_url, api_key="sk-test-2", model="m-up")
    )
    agent = chain("down", "up")
    async with cap_host([down, up], agents=[agent], config=AgentConfig()) as cap:
        result = await cap.host.run("s", "hi")
    assert result.status == "completed" and result.text == "real answer"
    assert [(c.provider, c.usage.total_tokens) for c in result.calls] == [("up", 11)]
    assert len(bad.requests) == 1 and len(good.requests) == 1
    assert good.requests[0].body["model"] == "up-model"


@pytest.mark.slow
async def test_a_failing_server_falls_back_to_the_real_local_model(
    fault_server: FaultServer, local_model: Endpoint
) -> None:
    bad_url, bad = fault_server.script(error_reply(500, "internal error"))
    down = OpenAICompatibleProvider(
        OpenAIConfig(name="down", base_url=bad_url, api_key="sk-test-1", model="m-down")
    )
    local = OpenAICompatibleProvider(openai_config(local_model, name="local"))
    model = ModelSettings(
        provider="down",
        model="m-down",
        max_tokens=32,
        fallback=(ModelSettings(provider="local", max_tokens=32, temperature=0.0),),
    )
    agent = Agent(name="a", instructions="Answer in one short sentence.", model=model, tools=[])
    async with cap_host([down, local], agents=[agent]) as cap:
        events = await events_of(cap.host, "s", "Say hello.")
    result = final(events)
    assert result.status == "completed" and result.text.strip()
    assert [c.provider for c in result.calls] == ["local"]
    assert result.calls[0].model  # the model the server said answered
    assert result.usage.output_tokens > 0
    moves = [e for e in events if isinstance(e, am.ModelFallback)]
    assert [(m.from_provider, m.to_provider, m.error_kind) for m in moves] == [
        ("down", "local", "server_error")
    ]
    assert len(bad.requests) == 1
