"""A host whose turns suspend for approval, restartable over one session store.

Each turn ``t`` asks for two tool calls in one reply: ``guarded`` (needs approval, call
id ``<t>-g``) and ``free`` (call id ``<t>-f``) — or, when ``t`` starts with ``batch``,
three ``free`` calls ``<t>-a``, ``<t>-b``, ``<t>-c``; once all have results the model
answers ``done <t>``. The tools count their own runs by call id in :data:`RUNS` (in-process) or
in a file (``runs_file``: one line per completed run, for the SIGKILL tests).
:meth:`Rig.restart` drops the host, its sessions, provider and executor and builds new
ones over the same store: what survives is only what the store has.

With ``asking=True`` the ``guarded`` tool needs no approval but asks the person one
question the way an MCP server's elicitation reaches the session (through
:func:`~agcore_actors.agent.session_elicitor`, with the requesting session and call set
as the MCP client sets them); it counts a run only when it got an answer (not the
``cancel`` a suspending turn tells it), so :data:`RUNS` counts the runs whose result the
turn kept. With ``deferring=True`` it raises ``CallDeferred`` instead (counted in
:data:`DEFERRED`): its result must come with the answer.
"""

from __future__ import annotations

import collections
import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

import trio

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    AgentConfig,
    HostConfig,
    SessionHost,
    StoreTurns,
    session_approver,
    session_elicitor,
)
from agcore_actors.llm import (
    ChatRequest,
    ProviderRegistry,
    RetryConfig,
    ToolMessage,
    UserMessage,
    provider_actor,
)
from agcore_actors.mcp._requests import REQUESTING_CALL, REQUESTING_SESSION
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import (
    CallDeferred,
    ToolContext,
    ToolExecutor,
    ToolRegistry,
    function_tool,
)

#: Completed runs of each call id (in-process tools).
RUNS: collections.Counter[str] = collections.Counter()
#: When set, each completed run is also appended to this file (one call id a line).
RUNS_FILE: list[str] = []
#: Call ids whose tool waits for ever on its first run (a batch to kill mid-way).
STALL_ONCE: set[str] = set()


def _ran(ctx: ToolContext) -> None:
    RUNS[ctx.call_id] += 1
    if RUNS_FILE:
        with open(RUNS_FILE[0], "a", encoding="utf-8") as f:
            f.write(ctx.call_id + "\n")
            f.flush()
            os.fsync(f.fileno())


def _stalled(ctx: ToolContext) -> None:
    if RUNS_FILE:
        with open(RUNS_FILE[0] + ".stalled", "w", encoding="utf-8") as f:
            f.write(ctx.call_id)


@function_tool(requires_approval=True)
async def guarded(key: str, ctx: ToolContext) -> str:
    """Change something (needs approval)."""
    _ran(ctx)
    return f"guarded {key}"


#: The elicitation handler of the running system (set by :meth:`Rig.host`).
ELICITOR: list[Any] = []


@function_tool(name="guarded")
async def asking(key: str, ctx: ToolContext) -> str:
    """Change something (asks the person first)."""
    REQUESTING_SESSION.set(ctx.session_id)
    REQUESTING_CALL.set(ctx.call_id)
    reply = await ELICITOR[0]("srv", {"message": f"Change {key}?", "requestedSchema": {}})
    if reply["action"] != "cancel":
        _ran(ctx)
    return f"asked {key}: {reply['action']}"


@function_tool(name="guarded", requires_approval=True)
async def approved_asking(key: str, ctx: ToolContext) -> str:
    """Change something (needs approval, then asks the person twice)."""
    REQUESTING_SESSION.set(ctx.session_id)
    REQUESTING_CALL.set(ctx.call_id)
    got = []
    for question in ("first", "second"):
        reply = await ELICITOR[0]("srv", {"message": f"{question} {key}?", "requestedSchema": {}})
        if reply["action"] == "cancel":
            return "cancelled"
        got.append(str(reply.get("content", {}).get("v", reply["action"])))
    _ran(ctx)
    return " ".join(got)


#: Runs of the deferring tool, by call id.
DEFERRED: collections.Counter[str] = collections.Counter()


@function_tool(name="guarded")
async def deferring(key: str, ctx: ToolContext) -> str:
    """Change something (reviewed later, outside the turn)."""
    DEFERRED[ctx.call_id] += 1
    raise CallDeferred("sent for review")


@function_tool
async def free(key: str, ctx: ToolContext) -> str:
    """Look something up."""
    if ctx.call_id in STALL_ONCE:
        STALL_ONCE.discard(ctx.call_id)
        _stalled(ctx)
        await trio.sleep_forever()
    _ran(ctx)
    return f"free {key}"


def play(request: ChatRequest, attempt: int) -> ScriptedReply:
    """The model: ask for the two calls, answer once they have results."""
    user = next(m for m in reversed(request.messages) if isinstance(m, UserMessage))
    text = str(user.content)
    if isinstance(request.messages[-1], ToolMessage):
        return ScriptedReply(text=f"done {text}")
    if text.startswith("batch"):  # three free calls, one batch
        names = [("free", f"{text}-{part}") for part in "abc"]
    else:
        names = [("guarded", f"{text}-g"), ("free", f"{text}-f")]
    calls = [ScriptedToolCall(name, f'{{"key": "{text}"}}', id=call_id) for name, call_id in names]
    return ScriptedReply(tool_calls=calls)


class Rig:
    """A host over ``store`` (a SessionStore ref) that can be restarted."""

    def __init__(
        self,
        system: ActorSystem,
        store: ActorRef[Any],
        config: AgentConfig,
        *,
        asking: bool = False,
        deferring: bool = False,
        tool: Any = None,
    ) -> None:
        self.system = system
        self.store = store
        self.config = config
        self.asking = asking
        self.deferring = deferring
        #: The tool named ``guarded`` to use instead of the flags' choice.
        self.tool = tool
        self.generation = 0

    @contextlib.asynccontextmanager
    async def host(self) -> AsyncIterator[SessionHost]:
        """A new host (new provider, executor, sessions) over the same store."""
        self.generation += 1
        g = self.generation
        registry = ProviderRegistry().register(ScriptedProvider(play))
        llm = await self.system.spawn(
            provider_actor(registry, retry=RetryConfig(max_retries=0)), name=f"llm{g}"
        )
        first = deferring if self.deferring else asking if self.asking else guarded
        first = self.tool or first
        tools = ToolRegistry([first, free])
        ELICITOR[:] = [session_elicitor(self.system)]
        executor = await self.system.spawn(
            lambda: ToolExecutor(tools, approver=session_approver(self.system)), name=f"tools{g}"
        )
        bundle = (
            AgentBuilder()
            .provider(llm)
            .store(StoreTurns(self.store))
            .tools(executor, tools)
            .agent(Agent(name="bot"))
            .config(self.config)
            .build()
        )
        try:
            config = HostConfig(max_sessions=8)
            async with SessionHost(self.system, bundle, config, name=f"sessions{g}") as host:
                yield host
        finally:
            await self.system.stop(f"llm{g}")
            await self.system.stop(f"tools{g}")


SUSPEND = AgentConfig(approvals="suspend", interrupted="resume", turn_timeout=None)
ELICIT = AgentConfig(elicitations="suspend", interrupted="resume", turn_timeout=None)
