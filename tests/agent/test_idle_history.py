"""An idle session holds no decoded transcript: the next turn reloads the same tail.

The expected prompts are computed here from the stored log with the tail rule written
out again (keep appending; past ``history_tail`` messages, cut to the newest ones that
open with a user message), sharing no code with the session.
"""

from __future__ import annotations

from typing import Any

import trio

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.agent import SessionState, StoreTurns
from agcore_actors.agent import messages as am
from agcore_actors.agent._config import Agent, AgentConfig
from agcore_actors.agent._session import Session
from agcore_actors.agent._turn import TurnPorts
from agcore_actors.llm import (
    AssistantMessage,
    FunctionCall,
    Message,
    ProviderRegistry,
    RetryConfig,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    provider_actor,
)
from agcore_actors.store import messages as sm
from agcore_actors.tools import ToolExecutor, ToolRegistry, function_tool
from tests.agent.fakes import scripted
from tests.agent.stores import start_store, stored, transcript


@function_tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def tool_turn(n: int) -> list[list[Any]]:
    """Attempts of one turn: a call of ``add``, then an answer."""
    call = ToolCall(f"c{n}", FunctionCall("add", f'{{"a":{n},"b":1}}'))
    return [[AssistantMessage(None, tool_calls=[call])], [AssistantMessage(f"sum {n + 1}")]]


async def start(
    system: ActorSystem,
    script: list[list[Any]],
    history_tail: int = 200,
    store_ref: ActorRef[Any] | None = None,
    store: StoreTurns | None = None,
) -> tuple[Any, Any, Any, list[Session]]:
    """Session ``s1`` over a scripted model, the ``add`` tool and a store (``store_ref``,
    else a new one); every Session instance made lands in the returned list."""
    provider = scripted(script)
    llm = await system.spawn(
        provider_actor(ProviderRegistry().register(provider), retry=RetryConfig(max_retries=0)),
        name="llm",
    )
    tools = ToolRegistry([add])
    executor = await system.spawn(lambda: ToolExecutor(tools), name="tools")
    if store_ref is None:
        store_ref, _ = await start_store(system)
    store = store or StoreTurns(store_ref)
    ports = TurnPorts(provider=llm, tools=executor, definitions=tools.definitions)
    agents = {"a": Agent(name="a", instructions="Be brief."), "b": Agent(name="b")}
    made: list[Session] = []

    def factory() -> Session:
        made.append(
            Session(
                "s1",
                agents=agents,
                default_agent="a",
                ports=ports,
                store=store,
                config=AgentConfig(),
                history_tail=history_tail,
            )
        )
        return made[-1]

    ref = await system.spawn(factory, name="session:s1")
    return provider, store_ref, ref, made


def expected_tails(log: list[Message], turn_sizes: list[int], keep: int) -> list[list[Message]]:
    """The history each turn's prompt starts with, from the log and how many messages
    each turn stored."""
    tails: list[list[Message]] = []
    kept: list[Message] = []
    at = 0
    for size in turn_sizes:
        tails.append(list(kept))
        kept += log[at : at + size]
        at += size
        if len(kept) > keep:
            start = len(kept) - keep  # back to a user message: no result without its call
            while start > 0 and not isinstance(kept[start], UserMessage):
                start -= 1
            kept = kept[start:]
    return tails


async def test_an_idle_session_reloads_exactly_the_tail_it_dropped(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    script: list[list[Any]] = []
    for n in range(6):
        script += tool_turn(n)
    provider, store_ref, ref, made = await start(system, script, history_tail=6)
    session = made[0]
    sizes: list[int] = []
    for n in range(6):
        if n == 3:  # a switch note goes into the history with the next turn
            await ref.ask(am.SwitchAgent("b"))
        before = len(await transcript(store_ref, "s1"))
        result = await ref.ask(am.RunTurn(text=f"t{n}"))
        assert result.status == "completed" and result.text == f"sum {n + 1}"
        sizes.append(len(await transcript(store_ref, "s1")) - before)
        # idle: nothing decoded is held, only how many messages the tail has
        assert session.history is None
        info = await ref.ask(am.GetSessionInfo())
        assert session.history is None and info.messages == session._history_size > 0
        saved = await stored(store_ref, "s1")
        assert session.usage is None and saved is not None and info.usage == saved.record.usage
        assert info.usage.input_tokens == 10 * 2 * (n + 1)  # two model calls a turn
    log = await transcript(store_ref, "s1")
    assert any(isinstance(m, SystemMessage) for m in log)  # the switch note is stored
    tails = expected_tails(log, sizes, keep=6)
    # each turn asks the model twice (the call, then the answer); the first request of
    # turn n holds the system prompt, the history, then the turn's opening messages
    firsts = provider.requests[::2]
    assert len(firsts) == 6
    for n, request in enumerate(firsts):
        prompt = list(request.messages)
        if n < 3:  # agent "a" has instructions, "b" none
            assert prompt[0] == SystemMessage("Be brief.")
            prompt = prompt[1:]
        opening = log[sum(sizes[:n]) : sum(sizes[:n]) + (2 if n == 3 else 1)]
        assert prompt == tails[n] + opening, n
    assert sum(isinstance(m, ToolMessage) for m in log) == 6


async def test_a_tail_that_opens_with_a_summary_is_kept_while_idle(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    script = tool_turn(0) + tool_turn(1)
    store_ref, _ = await start_store(system, name="seed")
    # a session compacted before the Session starts: its tail opens with the summary
    record = await store_ref.ask(
        sm.BeginTurn(session="s1", turn="old", expected_version=0, messages=[UserMessage("hi")])
    )
    await store_ref.ask(
        sm.CommitTurn(
            session="s1",
            turn="old",
            expected_version=record.version,
            messages=[AssistantMessage("hello")],
            compaction=sm.Compaction(2, [UserMessage("[summary] greeted")]),
        )
    )
    provider, _, ref, made = await start(system, script, store_ref=store_ref)
    for n in range(2):
        assert (await ref.ask(am.RunTurn(text=f"t{n}"))).status == "completed"
        history = made[0].history
        assert history is not None and history[0] == UserMessage("[summary] greeted")
    second = provider.requests[2].messages
    assert UserMessage("[summary] greeted") in second and UserMessage("t0") in second


class CountingStore(StoreTurns):
    """Counts the store requests a Session makes, by kind."""

    def __init__(self, store: ActorRef[Any]) -> None:
        super().__init__(store)
        self.calls: dict[str, int] = {}

    def _count(self, what: str) -> None:
        self.calls[what] = self.calls.get(what, 0) + 1

    async def load(self, session: str, tail: int | None, keep_open: bool = False) -> SessionState:
        self._count("load")
        return await super().load(session, tail, keep_open)

    async def begin(self, *args: Any) -> int:
        self._count("begin")
        return await super().begin(*args)

    async def begin_and_load(self, *args: Any) -> SessionState:
        self._count("begin_and_load")
        return await super().begin_and_load(*args)


async def test_a_turn_after_an_idle_spell_reloads_its_tail_in_the_write_that_opens_it(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store_ref, _ = await start_store(system, name="counted")
    counting = CountingStore(store_ref)
    _, _, ref, made = await start(system, tool_turn(0) + tool_turn(1), store=counting)
    assert (await ref.ask(am.RunTurn(text="t0"))).status == "completed"
    assert counting.calls == {"load": 1, "begin": 1}  # on start: loaded, tail held
    assert made[0].history is None  # idle: dropped
    assert (await ref.ask(am.RunTurn(text="t1"))).status == "completed"
    assert counting.calls == {"load": 1, "begin": 1, "begin_and_load": 1}
