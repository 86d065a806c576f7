"""The Session actor against the real ProviderActor and ToolExecutor, on virtual time."""

from __future__ import annotations

from typing import Any

import trio

from agcore_actors import Actor, ActorRef, ActorSystem
from agcore_actors.agent import messages as am
from agcore_actors.agent._config import Agent, AgentConfig
from agcore_actors.agent._session import Session
from agcore_actors.agent._transcript import transcript_errors
from agcore_actors.agent._turn import TurnPorts
from agcore_actors.llm import (
    AssistantMessage,
    FunctionCall,
    ProviderRegistry,
    RetryConfig,
    ToolCall,
    UserMessage,
    provider_actor,
)
from agcore_actors.testing import ScriptedProvider
from agcore_actors.tools import ToolExecutor, ToolRegistry, function_tool
from agcore_actors.tools import messages as tm
from tests.agent.fakes import echo, scripted
from tests.agent.stores import start_store, stored, transcript


def call(call_id: str, name: str, arguments: str = "{}") -> ToolCall:
    return ToolCall(call_id, FunctionCall(name, arguments))


@function_tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@function_tool
async def hang() -> str:
    """Never returns."""
    await trio.sleep_forever()
    return ""


async def start(
    system: ActorSystem, script: list[list[Any]], **config: float
) -> tuple[ScriptedProvider, ActorRef[Any], ActorRef[Any]]:
    provider = scripted(script)
    registry = ProviderRegistry().register(provider)
    llm = await system.spawn(provider_actor(registry, retry=RetryConfig(max_retries=0)), name="llm")
    tools = ToolRegistry([add, hang])
    executor = await system.spawn(lambda: ToolExecutor(tools), name="tools")
    store_ref, store = await start_store(system)
    ports = TurnPorts(provider=llm, tools=executor, definitions=tools.definitions)
    agent = Agent(name="helper", instructions="Be brief.")
    ref = await system.spawn(
        lambda: Session(
            "s1",
            agents={"helper": agent},
            default_agent="helper",
            ports=ports,
            store=store,
            config=AgentConfig(**config),  # type: ignore[arg-type]
        ),
        name="session:s1",
    )
    return provider, store_ref, ref


async def events_of(ref: object, text: str) -> list[am.TurnEvent]:
    out: list[am.TurnEvent] = []
    async with ref.stream(am.SubmitTurn(text=text)) as events:  # type: ignore[attr-defined]
        async for event in events:
            out.append(event)
    return out


async def test_a_tool_turn_answers_and_commits_a_valid_transcript(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    _, store, ref = await start(
        system,
        [[AssistantMessage(None, tool_calls=[call("c1", "add", '{"a": 2, "b": 3}')])],
         [AssistantMessage("It is 5.")]],
    )  # fmt: skip
    events = await events_of(ref, "2+3?")
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "TurnStarted" and kinds[-1] == "TurnCompleted"
    finished = [e for e in events if isinstance(e, am.ToolCallFinished)]
    assert [(f.status, f.content) for f in finished] == [("ok", "5")]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.text == "It is 5." and result.model_calls == 2
    assert result.usage.input_tokens == 20
    log = await transcript(store, "s1")
    assert transcript_errors(log) == [] and len(log) == 4


async def test_a_run_turn_calls_the_model_plainly_and_a_submitted_turn_streams(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    provider, _, ref = await start(
        system,
        [[AssistantMessage(None, tool_calls=[call("c1", "add", '{"a": 2, "b": 3}')])],
         [AssistantMessage("It is 5.")]],
    )  # fmt: skip
    plain: list[object] = []
    chat = provider.chat

    async def counted(client: Any, request: Any) -> Any:
        plain.append(request)
        return await chat(client, request)

    provider.chat = counted  # type: ignore[method-assign]
    result = await ref.ask(am.RunTurn(text="2+3?"))
    assert result.status == "completed" and result.text == "It is 5."
    assert result.model_calls == 2 and len(plain) == 2
    events = await events_of(ref, "again")
    assert len(plain) == 2, "a submitted turn's model call was not streamed"
    assert [e.text for e in events if isinstance(e, am.TextDelta)] == ["It is 5."]


class BrokenExecutor(Actor[tm.ToolExecutorMsg]):
    """A tool executor with a bug: every batch raises."""

    async def handle(self, msg: tm.ToolExecutorMsg) -> None:
        raise RuntimeError("executor bug")


async def test_a_failing_tool_executor_fails_the_turn_and_the_session_goes_on(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    await start(
        system,
        [[AssistantMessage(None, tool_calls=[call("c1", "add", '{"a": 2, "b": 3}')])],
         [AssistantMessage("Done.")]],
    )  # fmt: skip
    broken = await system.spawn(BrokenExecutor, name="broken-tools")
    _, store = await start_store(system, "store2")
    session = await system.spawn(
        lambda: Session(
            "s2",
            agents={"helper": Agent(name="helper", instructions="Be brief.")},
            default_agent="helper",
            ports=TurnPorts(provider=system.lookup("llm"), tools=broken),
            store=store,
            config=AgentConfig(),
        ),
        name="session:s2",
    )
    failed = await session.ask(am.RunTurn(text="2+3?"))
    assert failed.status == "failed" and failed.error_kind == "peer_failed"
    assert "executor bug" in failed.error
    info = await session.ask(am.GetSessionInfo())
    assert info.turns == 1 and info.messages == 3  # committed; the same incarnation


async def test_queued_turns_run_one_at_a_time_in_arrival_order_and_facts_go_with_them(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    # The turn lock is made when a turn comes and dropped when the last one leaves it:
    # order and the facts set mid-turn hold across that, and an idle session holds none.
    registry = ProviderRegistry().register(echo(delay=1.0))
    llm = await system.spawn(provider_actor(registry), name="llm")
    store_ref, store = await start_store(system)
    made: list[Session] = []

    def factory() -> Session:
        made.append(
            Session(
                "s1",
                agents={"helper": Agent(name="helper", instructions="Be brief.")},
                default_agent="helper",
                ports=TurnPorts(provider=llm),
                store=store,
                config=AgentConfig(),
            )
        )
        return made[-1]

    ref = await system.spawn(factory, name="session:s1")
    done: list[str] = []

    async def run(text: str) -> None:
        result = await ref.ask(am.RunTurn(text=text))
        done.append(result.text)

    for round_ in range(2):
        done.clear()
        async with trio.open_nursery() as nursery:
            for i in range(4):
                nursery.start_soon(run, f"r{round_}t{i}")
                await trio.sleep(0.1)
            await ref.ask(am.SetFacts(set={"round": str(round_)}))
        assert done == [f"echo: r{round_}t{i}" for i in range(4)]
        assert made[0]._busy is None  # idle: no lock, no running or waiting turn held
        log = await transcript(store_ref, "s1")
        users = [m.content for m in log if isinstance(m, UserMessage)]
        assert users[-4:] == [f"r{round_}t{i}" for i in range(4)]
        snapshot = await stored(store_ref, "s1")
        assert snapshot is not None and snapshot.facts == {"round": str(round_)}
    assert len(made) == 1


async def cancelled_after(ref: ActorRef[Any], text: str, seconds: float) -> list[am.TurnEvent]:
    """The events of a turn of ``text`` that ``CancelTurn`` stops after ``seconds``."""
    got: list[am.TurnEvent] = []

    async def run() -> None:
        got.extend(await events_of(ref, text))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await trio.sleep(seconds)
        assert await ref.ask(am.CancelTurn("immediate"))
    return got


async def test_cancelling_a_turn_mid_tool_answers_every_call(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    both = [call("a", "hang"), call("b", "add", '{"a":1,"b":1}')]
    _, store, ref = await start(
        system, [[AssistantMessage(None, tool_calls=both)], [AssistantMessage("done")]]
    )
    got = await cancelled_after(ref, "go", 5)
    assert isinstance(got[-1], am.TurnCancelled)
    assert transcript_errors(await transcript(store, "s1")) == []
    record = await stored(store, "s1")
    assert record is not None and record.record.open_turn is None
    # the next turn works and sees the history
    follow = await ref.ask(am.RunTurn(text="again"))
    assert follow.status == "completed" and follow.text == "done"


async def test_leaving_the_stream_cancels_and_commits(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    _, store, ref = await start(
        system, [[AssistantMessage(None, tool_calls=[call("a", "hang")])], [AssistantMessage("x")]]
    )
    async with ref.stream(am.SubmitTurn(text="go")) as events:
        async for event in events:
            if isinstance(event, am.ToolCallStarted):
                break
    record = await stored(store, "s1")
    assert record is not None and record.record.open_turn is None
    assert transcript_errors(await transcript(store, "s1")) == []


async def test_tool_rounds_are_bounded(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    script = [
        [AssistantMessage(None, tool_calls=[call(f"x{i}", "add", '{"a":1,"b":2}')])]
        for i in range(4)
    ]
    _, store, ref = await start(system, script, max_tool_turns=2, max_repeated_calls=10)
    result = await ref.ask(am.RunTurn(text="loop"))
    assert result.status == "failed" and result.error_kind == "limit_exceeded"
    assert result.model_calls == 3
    log = await transcript(store, "s1")
    assert transcript_errors(log) == []
    assert log[-1].content == "Error: tool call limit: max_tool_turns (2) reached"


async def test_a_turn_past_its_timeout_fails_with_turn_timeout_and_answers_every_call(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    script = [[AssistantMessage(None, tool_calls=[call("a", "hang")])], [AssistantMessage("x")]]
    _, store, ref = await start(system, script, turn_timeout=10.0)
    started = trio.current_time()
    result = await ref.ask(am.RunTurn(text="go"))
    assert result.status == "failed" and result.error_kind == "turn_timeout"
    assert trio.current_time() - started == 10.0
    assert transcript_errors(await transcript(store, "s1")) == []


async def test_a_turn_cancelled_before_its_timeout_is_cancelled_not_timed_out(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    script = [[AssistantMessage(None, tool_calls=[call("a", "hang")])], [AssistantMessage("x")]]
    _, store, ref = await start(system, script, turn_timeout=10.0)
    got = await cancelled_after(ref, "go", 9.5)
    assert isinstance(got[-1], am.TurnCancelled)
    assert transcript_errors(await transcript(store, "s1")) == []
