"""Issue-31 capabilities through ``serve --http`` with scripted providers: a fallback from
a rate-limited model (its event and the model that answered in the SSE stream), a
budget's ``limit_exceeded``, guardrails (an input refused as ``blocked``, an answer
replaced), a tool hook's denial, a tool reading the session's deps from its run
context, and a turn's own model settings from the request body."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    AgentConfig,
    Block,
    Budget,
    Deny,
    ModelSettings,
    Replace,
    Rewrite,
    SessionHost,
    StoreTurns,
    ToolCallInfo,
    ToolHooks,
)
from agcore_actors.llm import (
    ChatRequest,
    Pricing,
    ProviderConfig,
    ProviderRegistry,
    RateLimitError,
    RetryConfig,
    ToolMessage,
    Usage,
    UserMessage,
    provider_spec,
)
from agcore_actors.serve import HttpConfig, serve_http
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import RunContext, ToolRegistry, function_tool, tool_executor_spec
from tests.serve.helpers import AUTH, TOKEN
from tests.serve.sse import connect_sse

USAGE = Usage(input_tokens=5, output_tokens=5)


@function_tool
async def record(n: int) -> str:
    """Record n."""
    return f"recorded {n}"


@function_tool
async def whoami(run: RunContext[dict[str, str]]) -> str:
    """Who is the user."""
    return f"you are {run.deps['user']}"


def backup(request: ChatRequest, attempt: int) -> ScriptedReply:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        return ScriptedReply(text=f"tools said {last.content}", usage=USAGE)
    text = last.content if isinstance(last, UserMessage) else ""
    if text == "many":
        calls = [ScriptedToolCall("record", {"n": i}, id=f"c{i}") for i in range(5)]
        return ScriptedReply(tool_calls=calls, usage=USAGE)
    if text == "unlucky":
        return ScriptedReply(tool_calls=[ScriptedToolCall("record", {"n": 13}, id="u")])
    if text == "who":
        return ScriptedReply(tool_calls=[ScriptedToolCall("whoami", {}, id="w")])
    if text == "card":
        return ScriptedReply(text=["card 1234"], usage=USAGE)
    return ScriptedReply(text=[f"t={request.temperature} seed={request.seed}"], usage=USAGE)


async def refuse_secrets(context: RunContext[Any], text: str) -> str | None:
    return "no secrets here" if "secret" in text else None


async def mask(context: RunContext[Any], text: str) -> Block | Replace | None:
    return Replace(text.replace("1234", "****")) if "1234" in text else None


async def deny_13(call: ToolCallInfo) -> Deny | Rewrite | None:
    return Deny("13 is unlucky") if '"n":13' in call.arguments.replace(" ", "") else None


AGENT = Agent(
    name="bot",
    model=ModelSettings(
        provider="primary",
        model="big",
        temperature=0.3,
        fallback=(ModelSettings(provider="backup", model="small", temperature=0.3),),
    ),
    input_guardrails=[refuse_secrets],
    output_guardrails=[mask],
    tool_hooks=ToolHooks(before=deny_13),
)
CONFIG = AgentConfig(
    budget=Budget(tool_calls_per_turn=3, prices={"small": Pricing(input=1.0, output=2.0)})
)


@asynccontextmanager
async def served() -> AsyncIterator[str]:
    registry = ProviderRegistry()
    registry.register(ScriptedProvider([RateLimitError("primary", None)], name="primary"))
    registry.register(ScriptedProvider(backup, name="backup", model="small"))
    registry.set_default("primary")
    async with ActorSystem() as system:
        root = system.root
        # No retries: a rate-limited call moves to the next model at once.
        config = ProviderConfig(retry=RetryConfig(max_retries=0))
        llm = await root.start_child(provider_spec("llm", registry=registry, config=config))
        tools_registry = ToolRegistry([record, whoami])
        tools = await root.start_child(tool_executor_spec("tools", registry=tools_registry))
        store = await root.start_child(session_store_spec("store", backend=InMemorySessions()))
        bundle = (
            AgentBuilder()
            .provider(llm)
            .tools(tools, tools_registry)
            .store(StoreTurns(store))
            .agent(AGENT)
            .config(CONFIG)
            .deps(lambda session: {"user": f"owner of {session}"})
            .build()
        )
        async with SessionHost(system, bundle) as host, trio.open_nursery() as nursery:
            stop = trio.Event()
            url = await nursery.start(_serve, host, stop)
            yield url
            stop.set()


async def _serve(
    host: SessionHost,
    stop: trio.Event,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    await serve_http(
        host, HttpConfig(port=0, token=TOKEN), shutdown=stop.wait, task_status=task_status
    )


async def turn(client: httpx2.AsyncClient, session: str, **body: Any) -> list[dict[str, Any]]:
    path = f"/v1/sessions/{session}/turns"
    async with connect_sse(client, "POST", path, json=body) as source:
        return [json.loads(e.data) async for e in source.aiter_sse()]


async def test_the_capabilities_reach_serve_clients() -> None:
    async with (
        served() as url,
        httpx2.AsyncClient(base_url=url, timeout=30, headers=AUTH) as client,
    ):
        # Fallback: the primary is rate limited, the backup answers; the stream says so.
        events = await turn(client, "a", text="hi")
        kinds = [e["event"] for e in events]
        assert "model_fallback" in kinds and kinds[-1] == "turn_completed"
        fallback = next(e for e in events if e["event"] == "model_fallback")
        assert (fallback["from_provider"], fallback["to_provider"]) == ("primary", "backup")
        usage = next(e for e in events if e["event"] == "usage_reported")
        assert (usage["provider"], usage["model"], usage["cost"]) == ("backup", "small", 1.5e-5)
        assert events[-1]["result"]["calls"][0]["provider"] == "backup"
        assert events[-1]["result"]["text"] == "t=0.3 seed=None"

        # The turn's own settings, from the request body.
        events = await turn(client, "a", text="hi", settings={"temperature": 0.9, "seed": 4})
        assert events[-1]["result"]["text"] == "t=0.9 seed=4"
        bad = await client.post("/v1/sessions/a/turns", json={"text": "x", "settings": {"nope": 1}})
        assert bad.status_code == 400 and "settings" in bad.text

        # Budget: five calls asked, three allowed.
        events = await turn(client, "b", text="many")
        assert events[-1]["status"] == "failed" and events[-1]["error_kind"] == "limit_exceeded"
        reached = next(e for e in events if e["event"] == "limit_reached")
        assert (reached["limit"], reached["value"], reached["used"]) == (
            "tool_calls_per_turn",
            3,
            5,
        )

        # Guardrails: refused input, replaced answer.
        events = await turn(client, "c", text="tell me a secret")
        assert events[-1]["status"] == "blocked" and events[-1]["error_kind"] == "guardrail_blocked"
        events = await turn(client, "c", text="card")
        assert events[-1]["result"]["text"] == "card ****"

        # A tool hook's denial, and the run context's deps.
        events = await turn(client, "d", text="unlucky")
        changed = next(e for e in events if e["event"] == "tool_hook_changed")
        assert changed["what"] == "denied" and "unlucky" in changed["reason"]
        events = await turn(client, "d", text="who")
        assert events[-1]["result"]["text"] == "tools said you are owner of d"


def test_a_turn_command_carries_its_settings_and_bad_ones_are_refused() -> None:
    import pytest

    from agcore_actors.agent import messages as am
    from agcore_actors.serve import BadCommand
    from agcore_actors.serve._wire import TurnCommand, parse_line

    line = '{"session": "s", "text": "hi", "settings": {"seed": 3, "stop": ["x"]}}'
    command = parse_line(line)
    assert isinstance(command, TurnCommand)
    assert command.settings == am.ModelOverrides(seed=3, stop=["x"])
    assert parse_line('{"session": "s", "text": "hi"}').settings is None  # type: ignore[union-attr]
    for bad in ('{"seed": "three"}', '{"nope": 1}', "[1]"):
        with pytest.raises(BadCommand, match="settings"):
            parse_line('{"session": "s", "text": "hi", "settings": ' + bad + "}")
