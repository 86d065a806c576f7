"""Guardrails and tool hooks: the folding of verdicts property-tested against a model,
and each end to end through SessionHost — an input guardrail refuses before the model
is called and nothing is stored, an output guardrail replaces or blocks the answer
(committed as ``blocked`` with a note), tool hooks deny, rewrite arguments and change
results; hooks that raise fail the turn (``hook_failed``), and a turn cancelled while
hooks run answers every call id exactly once."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.agent import (
    Agent,
    AgentConfig,
    Block,
    Deny,
    Replace,
    Rewrite,
    ToolCallInfo,
    ToolHooks,
    ToolOutcome,
)
from agcore_actors.agent import messages as am
from agcore_actors.agent.policy import apply_after, apply_before, apply_output_guardrails
from agcore_actors.llm import AssistantMessage, ChatRequest, ToolMessage, UserMessage
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import RunContext
from tests.agent.capability_rig import answered_once, cap_host, events_of, final

CTX: RunContext[Any] = RunContext(session="s", turn="t", agent="a", deps=None)

# -- the folding, against a model --------------------------------------------------------

verdict = st.one_of(
    st.none(),
    st.builds(Block, st.text(max_size=5)),
    st.builds(Replace, st.text(max_size=5)),
)


@given(start=st.text(max_size=5), verdicts=st.lists(verdict, max_size=6))
async def test_output_guardrails_apply_replacements_in_order_and_stop_at_the_first_block(
    start: str, verdicts: list[Block | Replace | None]
) -> None:
    seen: list[str] = []

    def guard(v: Block | Replace | None) -> Any:
        async def run(context: RunContext[Any], text: str) -> Block | Replace | None:
            seen.append(text)
            return v

        return run

    # The model: walk the list by hand.
    text, reason, ran = start, None, 0
    for v in verdicts:
        ran += 1
        if isinstance(v, Block):
            reason = v.reason
            break
        if isinstance(v, Replace):
            text = v.text
    got = await apply_output_guardrails([guard(v) for v in verdicts], CTX, start)
    assert got == (text, reason)
    assert len(seen) == ran


@given(
    arguments=st.text(max_size=5),
    v=st.one_of(
        st.none(),
        st.builds(Deny, st.text(max_size=5)),
        st.builds(Rewrite, st.text(max_size=5)),
        st.builds(Rewrite, st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
    ),
)
def test_before_hooks_deny_or_rewrite_or_leave_the_arguments(
    arguments: str, v: Deny | Rewrite | None
) -> None:
    import json

    new, denied = apply_before(arguments, v)
    if isinstance(v, Deny):
        assert (new, denied) == (arguments, v.reason)
    elif isinstance(v, Rewrite):
        expected = v.arguments
        assert denied is None
        assert (new if isinstance(v.arguments, str) else json.loads(new)) == expected
    else:
        assert (new, denied) == (arguments, None)


@given(
    status=st.sampled_from(["ok", "error", "denied"]),
    content=st.text(max_size=5),
    replaced=st.none() | st.builds(ToolOutcome, status=st.just("ok"), content=st.text(max_size=5)),
)
def test_after_hooks_replace_the_outcome_or_keep_it(
    status: Any, content: str, replaced: ToolOutcome | None
) -> None:
    outcome = ToolOutcome(status=status, content=content)
    assert apply_after(outcome, replaced) == (outcome if replaced is None else replaced)


# -- guardrails end to end ---------------------------------------------------------------


def answers(text: str) -> ScriptedProvider:
    return ScriptedProvider([ScriptedReply(text=[text])])


async def no_secrets(context: RunContext[Any], text: str) -> str | None:
    return "it asks for a secret" if "secret" in text else None


async def test_an_input_guardrail_refuses_before_the_model_and_stores_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    provider = answers("hello")
    agent = Agent(name="a", input_guardrails=[no_secrets])
    async with cap_host([provider], agents=[agent]) as cap:
        events = await events_of(cap.host, "s", "tell me the secret")
        result = final(events)
        assert result.status == "blocked" and result.error_kind == "guardrail_blocked"
        assert "asks for a secret" in result.error
        assert provider.attempts == 0 and await cap.transcript("s") == []
        ok = await cap.host.run("s", "hi")
        assert ok.status == "completed" and provider.attempts == 1


async def redact(context: RunContext[Any], text: str) -> Block | Replace | None:
    return Replace(text.replace("1234", "****")) if "1234" in text else None


async def block_leaks(context: RunContext[Any], text: str) -> Block | Replace | None:
    return Block("it leaks the key") if "KEY" in text else None


@pytest.mark.parametrize("streamed", [True, False])
async def test_an_output_guardrail_replaces_the_answer_before_it_is_committed(
    autojump_clock: trio.testing.MockClock, streamed: bool
) -> None:
    agent = Agent(name="a", output_guardrails=[redact, block_leaks])
    async with cap_host([answers("card 1234")], agents=[agent]) as cap:
        if streamed:
            result = final(await events_of(cap.host, "s", "hi"))
        else:
            result = await cap.host.run("s", "hi")
        assert result.status == "completed" and result.text == "card ****"
        log = await cap.transcript("s")
        assert log[-1] == AssistantMessage("card ****")


async def test_a_blocked_answer_is_committed_as_blocked_with_a_note_the_next_turn_sees(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[ChatRequest] = []

    def play(request: ChatRequest, attempt: int) -> ScriptedReply:
        seen.append(request)
        return ScriptedReply(text=["the KEY is 42"] if attempt == 1 else ["fine"])

    agent = Agent(name="a", output_guardrails=[block_leaks])
    async with cap_host([ScriptedProvider(play)], agents=[agent]) as cap:
        result = await cap.host.run("s", "hi")
        assert result.status == "blocked" and result.error_kind == "guardrail_blocked"
        assert result.text == "" and "leaks the key" in result.error
        log = await cap.transcript("s")
        assert "KEY" not in str(log) and "blocked" in str(log[-1])
        await cap.host.run("s", "again")
        assert "KEY" not in str(seen[-1].messages)
        assert await cap.valid("s")


# -- tool hooks end to end ----------------------------------------------------------------


def calls_then_done(*calls: ScriptedToolCall) -> ScriptedProvider:
    def play(request: ChatRequest, attempt: int) -> ScriptedReply:
        if isinstance(request.messages[-1], UserMessage):
            return ScriptedReply(tool_calls=list(calls))
        return ScriptedReply(text="done")

    return ScriptedProvider(play)


async def before(call: ToolCallInfo) -> Deny | Rewrite | None:
    n = int(call.arguments.split(":")[1].strip(" }"))
    if n == 13:
        return Deny("unlucky")
    if n == 2:
        return Rewrite({"n": 20})
    return None


async def after(call: ToolCallInfo, outcome: ToolOutcome) -> ToolOutcome | None:
    if outcome.content == "recorded 1":
        return ToolOutcome(status="ok", content="one, checked")
    return None


async def test_tool_hooks_deny_rewrite_and_change_results(
    autojump_clock: trio.testing.MockClock,
) -> None:
    provider = calls_then_done(
        ScriptedToolCall("record", {"n": 1}, id="c1"),
        ScriptedToolCall("record", {"n": 2}, id="c2"),
        ScriptedToolCall("record", {"n": 13}, id="c13"),
    )
    agent = Agent(name="a", tool_hooks=ToolHooks(before=before, after=after))
    async with cap_host([provider], agents=[agent]) as cap:
        events = await events_of(cap.host, "s", "go")
        assert final(events).status == "completed"
        assert sorted(cap.counters.ran) == [1, 20]  # 2 ran as 20, 13 never ran
        changed = [(e.call_id, e.what) for e in events if isinstance(e, am.ToolHookChanged)]
        assert sorted(changed) == [("c1", "result"), ("c13", "denied"), ("c2", "arguments")]
        finished = {
            e.call_id: (e.status, e.content) for e in events if isinstance(e, am.ToolCallFinished)
        }
        assert finished["c1"] == ("ok", "one, checked")
        assert finished["c2"] == ("ok", "recorded 20")
        assert finished["c13"][0] == "denied" and "unlucky" in finished["c13"][1]
        log = await cap.transcript("s")
        results = {m.tool_call_id: m.content for m in log if isinstance(m, ToolMessage)}
        assert results["c1"] == "one, checked" and answered_once(log)


async def broken(call: ToolCallInfo) -> Deny | Rewrite | None:
    raise KeyError("a bug in the hook")


async def test_a_hook_that_raises_fails_the_turn_and_the_session_goes_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    provider = calls_then_done(ScriptedToolCall("record", {"n": 1}, id="c1"))
    agent = Agent(name="a", tool_hooks=ToolHooks(before=broken))
    async with cap_host([provider], agents=[agent]) as cap:
        result = await cap.host.run("s", "go")
        assert result.status == "failed" and result.error_kind == "hook_failed"
        assert "KeyError" in result.error and cap.counters.ran == []
        log = await cap.transcript("s")
        assert answered_once(log) and await cap.valid("s")
        assert cap.host.is_live("s")


@pytest.mark.parametrize("cancel_at", [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.6, 2.5])
async def test_a_turn_cancelled_while_hooks_run_answers_every_call_once(
    autojump_clock: trio.testing.MockClock, cancel_at: float
) -> None:
    async def slow_before(call: ToolCallInfo) -> Deny | Rewrite | None:
        await trio.sleep(0.25)
        return None

    async def slow_after(call: ToolCallInfo, outcome: ToolOutcome) -> ToolOutcome | None:
        await trio.sleep(0.25)
        return None

    provider = calls_then_done(
        *[ScriptedToolCall("record", {"n": i}, id=f"c{i}") for i in range(3)]
    )
    agent = Agent(name="a", tool_hooks=ToolHooks(before=slow_before, after=slow_after))
    async with cap_host([provider], agents=[agent], work=0.3) as cap:
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                await cap.host.run("s", "go")

            nursery.start_soon(run)
            await trio.sleep(cancel_at)
            await cap.host.cancel("s")
        log = await cap.transcript("s")
        assert answered_once(log) and await cap.valid("s")


async def test_an_agent_without_guards_behaves_as_before(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with cap_host([answers("plain")], config=AgentConfig()) as cap:
        result = await cap.host.run("s", "hi")
        assert (result.status, result.text) == ("completed", "plain")


@pytest.mark.parametrize("cancel_at", [0.3, 0.45, 0.6, 0.75, 0.9])
async def test_a_redacting_after_hook_is_never_bypassed_by_a_cancellation(
    autojump_clock: trio.testing.MockClock, cancel_at: float
) -> None:
    async def redact_after(call: ToolCallInfo, outcome: ToolOutcome) -> ToolOutcome | None:
        await trio.sleep(0.2)
        return ToolOutcome(
            status=outcome.status, content=outcome.content.replace("recorded", "r***")
        )

    provider = calls_then_done(
        *[ScriptedToolCall("record", {"n": i}, id=f"c{i}") for i in range(3)]
    )
    agent = Agent(name="a", tool_hooks=ToolHooks(after=redact_after))
    async with cap_host([provider], agents=[agent], work=0.25) as cap:
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                await cap.host.run("s", "go")

            nursery.start_soon(run)
            await trio.sleep(cancel_at)
            await cap.host.cancel("s")
        log = await cap.transcript("s")
        assert answered_once(log) and await cap.valid("s")
        assert "recorded" not in str(log)


async def test_results_recorded_by_a_cancelled_batch_pass_the_after_hook_too(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def redact_after(call: ToolCallInfo, outcome: ToolOutcome) -> ToolOutcome | None:
        return ToolOutcome(status=outcome.status, content=outcome.content.replace("user", "u***"))

    provider = calls_then_done(
        ScriptedToolCall("whoami", {}, id="fast"), ScriptedToolCall("record", {"n": 1}, id="slow")
    )
    agent = Agent(name="a", tool_hooks=ToolHooks(after=redact_after))
    async with cap_host(
        [provider], agents=[agent], work=1.0, deps=lambda s: {"user": "alice"}
    ) as cap:
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                await cap.host.run("s", "go")

            nursery.start_soon(run)
            await trio.sleep(0.5)  # whoami has answered, record still runs
            await cap.host.cancel("s")
        log = await cap.transcript("s")
        assert answered_once(log) and await cap.valid("s")
        assert "user alice" not in str(log)


async def test_an_input_guardrail_that_hangs_is_bounded_by_the_turn_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def hangs(context: RunContext[Any], text: str) -> str | None:
        await trio.sleep_forever()
        return None

    provider = answers("hello")
    agent = Agent(name="a", input_guardrails=[hangs])
    async with cap_host([provider], agents=[agent], config=AgentConfig(turn_timeout=30.0)) as cap:
        start = trio.current_time()
        result = await cap.host.run("s", "hi")
        assert result.status == "failed" and result.error_kind == "turn_timeout"
        assert trio.current_time() - start == 30.0
        assert provider.attempts == 0 and await cap.transcript("s") == []
