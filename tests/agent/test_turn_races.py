"""A turn keeps its promises against what real model servers and callers do: call ids
that are empty or repeated in one reply, a failing tool batch beside a subagent, sessions
that stay live for hundreds of turns, and a stream cut off mid-answer (hook events and the
tool timeout: test_turn_settings.py).

Every test runs on both stores (the in-memory one on virtual time, SQLite on a file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from agcore_actors import Actor, ActorSystem
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    AgentConfig,
    StoreTurns,
    session_spec,
    transcript_errors,
)
from agcore_actors.agent import messages as am
from agcore_actors.llm import (
    AssistantMessage,
    ChatRequest,
    OpenAICompatibleProvider,
    OpenAIConfig,
    ProviderRegistry,
    RetryConfig,
    ToolMessage,
    UserMessage,
    provider_actor,
)
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.testing import ScriptedReply, ScriptedToolCall
from agcore_actors.tools import ToolExecutor, ToolRegistry, ToolThreadsExhausted, function_tool
from agcore_actors.tools import messages as tm
from tests.agent.stores import transcript
from tests.agent.turn_rig import last_user, rig, store_accepts
from tests.peers.fault_server import (
    FaultServer,
    chunk,
    completion,
    json_reply,
    sse,
    sse_reply,
)


def rounds_since_user(request: ChatRequest) -> int:
    """Tool rounds the turn made so far (assistant messages after the last user one)."""
    count = 0
    for message in reversed(request.messages):
        if isinstance(message, UserMessage):
            break
        count += isinstance(message, AssistantMessage)
    return count


# -- 5: call ids of one reply ---------------------------------------------------------------

ID_CASES = {
    "empty": ["", ""],
    "one_empty": ["", "c2"],
    "duplicated": ["c1", "c1"],
    "mixed": ["", "c1", "c1", "", "c5"],
}


@pytest.mark.parametrize("ids", list(ID_CASES))
@pytest.mark.parametrize("streamed", [False, True])
async def test_call_ids_of_one_reply_are_made_unique_before_any_tool_runs(
    backend: str, clock: object, tmp_path: Path, ids: str, streamed: bool
) -> None:
    call_ids = ID_CASES[ids]

    def play(request: ChatRequest, attempt: int) -> Any:
        if rounds_since_user(request) == 0 and last_user(request) == "go":
            calls = [ScriptedToolCall("record", {"n": n}, i) for n, i in enumerate(call_ids)]
            return ScriptedReply(tool_calls=calls)
        return ScriptedReply(text=f"done {last_user(request)}")

    async with rig(backend, tmp_path, play) as r:
        if streamed:
            async with r.session.stream(am.SubmitTurn(text="go")) as events:
                outcome = [e async for e in events][-1]
            assert isinstance(outcome, am.TurnCompleted), outcome
        else:
            result = await r.session.ask(am.RunTurn(text="go"))
            assert result.status == "completed", result
        # Each call ran exactly once, once the ids were unique.
        assert sorted(r.ran) == list(range(len(call_ids)))
        again = await r.session.ask(am.RunTurn(text="again"))
        assert again.status == "completed" and again.text == "done again"
        log = await transcript(r.store, "s1")
        assert transcript_errors(log) == [] and store_accepts(log)
        asked = log[1]
        assert isinstance(asked, AssistantMessage) and asked.tool_calls
        new_ids = [c.id for c in asked.tool_calls]
        assert len(set(new_ids)) == len(new_ids) and all(new_ids)
        # A unique non-empty id the model gave is kept.
        for old, new in zip(call_ids, new_ids, strict=True):
            if old and call_ids.count(old) == 1:
                assert new == old
        answers = [m for m in log[2 : 2 + len(new_ids)] if isinstance(m, ToolMessage)]
        assert [m.tool_call_id for m in answers] == new_ids
        assert [m.content for m in answers] == [f"recorded {n}" for n in range(len(new_ids))]
        # The model is shown the same ids in its next request, and in the next turn's.
        for request in r.provider.requests[1:]:
            shown = next(m for m in request.messages if isinstance(m, AssistantMessage))
            assert [c.id for c in shown.tool_calls or []] == new_ids


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_server_that_leaves_call_ids_out_gets_each_tool_run_once(
    fault_server: FaultServer, streamed: bool
) -> None:
    """Over real HTTP: parallel calls with no ``id`` at all, plain and streamed."""
    calls = [
        {"type": "function", "function": {"name": "record", "arguments": json.dumps({"n": n})}}
        for n in range(3)
    ]
    pieces = [chunk({"tool_calls": [{"index": n, **call}]}) for n, call in enumerate(calls)]
    plain = completion(None, tool_calls=calls, finish="tool_calls")
    asks = sse_reply(*sse(*pieces, chunk({}, finish="tool_calls")), plain=json_reply(plain))
    done = sse_reply(*sse(chunk({"content": "done"}), chunk({}, finish="stop")),
                     plain=json_reply(completion("done")))  # fmt: skip
    base, scenario = fault_server.script(asks, done)
    ran: list[int] = []

    @function_tool
    async def record(n: int) -> str:
        """Record n."""
        ran.append(n)
        return f"recorded {n}"

    async with ActorSystem(strict=True, seed=0) as system:
        provider = OpenAICompatibleProvider(
            OpenAIConfig(name="fault", base_url=base, api_key="sk-test", model="m")
        )
        llm = await system.spawn(
            provider_actor(ProviderRegistry().register(provider), retry=RetryConfig(max_retries=0)),
            name="llm",
        )
        store_ref = await system.root.start_child(
            session_store_spec("store", backend=InMemorySessions())
        )
        registry = ToolRegistry([record])
        tools = await system.spawn(lambda: ToolExecutor(registry), name="tools")
        bundle = (
            AgentBuilder()
            .provider(llm)
            .store(StoreTurns(store_ref))
            .tools(tools, registry)
            .agent(Agent(name="helper"))
            .build()
        )
        session = await system.root.start_child(session_spec("s1", bundle))
        if streamed:
            async with session.stream(am.SubmitTurn(text="go")) as events:
                outcome = [e async for e in events][-1]
            assert isinstance(outcome, am.TurnCompleted), outcome
        else:
            result = await session.ask(am.RunTurn(text="go"))
            assert result.status == "completed", result
        log = await transcript(store_ref, "s1")
    assert sorted(ran) == [0, 1, 2]
    assert transcript_errors(log) == [] and store_accepts(log)
    second = [request.body for request in scenario.requests][1]["messages"]
    ids = [call["id"] for call in second[1]["tool_calls"]]
    assert len(set(ids)) == 3 and all(ids)
    assert [m["tool_call_id"] for m in second[2:5]] == ids


# -- 7: a typed executor error beside a subagent -----------------------------------------------


class RefusingExecutor(Actor[Any]):
    """An executor whose every batch is refused with a typed error after ``delay``."""

    expected_errors = (ToolThreadsExhausted,)
    max_concurrency = 8

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def handle(self, msg: Any) -> Any:
        if isinstance(msg, tm.ExecuteTools):
            await trio.sleep(self.delay)
            raise ToolThreadsExhausted(msg.calls[0].name, 8)
        return None


# The executor fails before the subagent's answer (which its cancellation then cuts
# short) or after it.
@pytest.mark.parametrize(
    ("with_subagent", "refuse_after"), [(False, 0.0), (True, 0.0), (True, 0.05)]
)
async def test_a_typed_executor_error_fails_the_turn_alike_with_or_without_a_subagent(
    backend: str, clock: object, tmp_path: Path, with_subagent: bool, refuse_after: float
) -> None:
    def play(request: ChatRequest, attempt: int) -> Any:
        if last_user(request) == "find x":
            return ScriptedReply(text="x is 42", latency=0.02)
        if last_user(request) == "go" and rounds_since_user(request) == 0:
            calls = [ScriptedToolCall("record", {"n": 1}, "k1")]
            if with_subagent:
                calls.append(ScriptedToolCall("researcher", {"task": "find x"}, "k2"))
            return ScriptedReply(tool_calls=calls)
        return ScriptedReply(text="fine")

    lead = Agent(name="lead", subagents=frozenset({"researcher"}))
    researcher = Agent(name="researcher", description="Finds things.")
    async with rig(
        backend,
        tmp_path,
        play,
        agents=(lead, researcher),
        executor=lambda _: RefusingExecutor(refuse_after),
    ) as r:
        result = await r.session.ask(am.RunTurn(text="go"))
        assert result.status == "failed", result
        assert result.error_kind == "tool_threads_exhausted"
        async with r.session.stream(am.SubmitTurn(text="go")) as events:
            outcome = [e async for e in events][-1]
        assert isinstance(outcome, am.TurnFailed)
        assert outcome.result.error_kind == "tool_threads_exhausted"
        after = await r.session.ask(am.RunTurn(text="hello"))
        assert after.status == "completed" and after.text == "fine"
        log = await transcript(r.store, "s1")
        assert transcript_errors(log) == [] and store_accepts(log)
        # The subagent's session, if it got as far as its store (cut short, it may not).
        kept = await transcript(r.store, "s1/k2")
        assert transcript_errors(kept) == [] and store_accepts(kept)


# -- 9: limits are per turn ----------------------------------------------------------------------


def three_calls_per_turn(request: ChatRequest, attempt: int) -> Any:
    """Two tool rounds, then the answer: three model calls per turn."""
    done = rounds_since_user(request)
    if done < 2:
        return ScriptedReply(tool_calls=[ScriptedToolCall("record", {"n": done})])
    return ScriptedReply(text=f"answer to {last_user(request)}")


async def test_a_live_session_runs_100_turns_of_several_model_calls_each(
    backend: str, clock: object, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path, three_calls_per_turn) as r:
        for n in range(100):
            result = await r.session.ask(am.RunTurn(text=f"turn {n}"))
            assert result.status == "completed", (n, result)
            assert result.model_calls == 3 and result.text == f"answer to turn {n}"
        assert r.provider.attempts == 300
        log = await transcript(r.store, "s1")
        assert len(log) == 100 * 6 and transcript_errors(log) == []


async def test_max_turns_bounds_the_model_calls_of_each_turn(
    backend: str, clock: object, tmp_path: Path
) -> None:
    config = AgentConfig(max_turns=2)
    async with rig(backend, tmp_path, three_calls_per_turn, config=config) as r:
        for _ in range(3):  # every turn gets its own budget of two calls
            result = await r.session.ask(am.RunTurn(text="go"))
            assert result.status == "failed" and result.error_kind == "limit_exceeded"
            assert result.model_calls == 2 and "per turn" in result.error
        log = await transcript(r.store, "s1")
        assert transcript_errors(log) == [] and store_accepts(log)


# -- 14: a cancelled turn's streamed text --------------------------------------------------------


@pytest.mark.parametrize("pieces", [0, 1, 2])
@pytest.mark.parametrize("how", ["cancel_turn", "leave_stream"])
@pytest.mark.parametrize("after_tools", [False, True])
async def test_a_cancelled_turns_streamed_text_is_kept_for_the_next_turn(
    backend: str, clock: object, tmp_path: Path, pieces: int, how: str, after_tools: bool
) -> None:
    def play(request: ChatRequest, attempt: int) -> Any:
        if last_user(request) != "tell":
            return ScriptedReply(text="go on then")
        if after_tools and rounds_since_user(request) == 0:
            return ScriptedReply(tool_calls=[ScriptedToolCall("record", {"n": 7})])
        return ScriptedReply(text=["Once ", "upon ", "a time"], stall_after=pieces)

    async with rig(backend, tmp_path, play) as r:
        seen: list[str] = []
        async with r.session.stream(am.SubmitTurn(text="tell")) as events:
            async for event in events:
                if isinstance(event, am.TextDelta):
                    seen.append(event.text)
                if len(seen) == pieces and (
                    isinstance(event, am.TextDelta)
                    or (pieces == 0 and isinstance(event, am.TurnStarted) and not after_tools)
                    or (pieces == 0 and isinstance(event, am.ToolCallFinished))
                ):
                    if how == "leave_stream":
                        break
                    assert await r.session.ask(am.CancelTurn("immediate"))
                if isinstance(event, am.TurnCancelled):
                    break
        shown = "".join(seen)
        result = await r.session.ask(am.RunTurn(text="and then?"))
        assert result.status == "completed"
        prompt = r.provider.requests[-1].messages
        log = await transcript(r.store, "s1")
        assert transcript_errors(log) == [] and store_accepts(log)
        kept = [
            m
            for m in prompt
            if isinstance(m, AssistantMessage) and not m.tool_calls and m.content != "go on then"
        ]
        if not shown:
            assert kept == []
        else:
            [partial] = kept
            assert isinstance(partial.content, str)
            assert partial.content.startswith(shown) and "[interrupted]" in partial.content
            assert partial in log
        # Nothing of this turn is dangling: the prompt ends with this turn's user message.
        assert prompt[-1] == UserMessage("and then?")


async def test_a_turn_cancelled_at_any_moment_keeps_exactly_what_was_shown(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    answer = ["Once ", "upon ", "a ", "time"]

    def play(request: ChatRequest, attempt: int) -> Any:
        if last_user(request) != "tell":
            return ScriptedReply(text="go on then")
        if rounds_since_user(request) == 0:
            return ScriptedReply(tool_calls=[ScriptedToolCall("record", {"n": 1})], latency=0.5)
        return ScriptedReply(text=answer, latency=0.3, gap=0.5)

    kept: list[str] = []
    async with rig("memory", tmp_path, play) as r:
        # Cancel at every moment of the turn, from before the first model call to after
        # the answer (2.3 s in): in the model call, the tool, each gap of the stream.
        for k in range(14):
            shown: list[str] = []
            ended: list[am.TurnEvent] = []
            async with trio.open_nursery() as nursery:

                async def cancel_later(at: float = k * 0.2) -> None:
                    await trio.sleep(at)
                    await r.session.ask(am.CancelTurn("immediate"))

                nursery.start_soon(cancel_later)
                async with r.session.stream(am.SubmitTurn(text="tell")) as events:
                    async for event in events:
                        if isinstance(event, am.TextDelta):
                            shown.append(event.text)
                        ended.append(event)
            text = "".join(shown)
            log = await transcript(r.store, "s1")
            assert transcript_errors(log) == [] and store_accepts(log), k
            last = log[-1]
            if isinstance(ended[-1], am.TurnCompleted):
                assert text == "".join(answer) and last == AssistantMessage(text), k
            else:
                assert isinstance(ended[-1], am.TurnCancelled), (k, ended[-1])
                if text:
                    assert last == AssistantMessage(f"{text}\n\n[interrupted]"), k
                    kept.append(last.content)  # type: ignore[arg-type]
                else:
                    assert not isinstance(last, AssistantMessage) or last.tool_calls, k
        assert len(kept) >= 4  # cancelled after each piece of the stream, at least
        result = await r.session.ask(am.RunTurn(text="and then?"))
        assert result.status == "completed"
        prompt = [m.content for m in r.provider.requests[-1].messages]
        assert [c for c in prompt if c in kept] == kept
