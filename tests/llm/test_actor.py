"""The ProviderActor in a strict system against the real fault server."""

from __future__ import annotations

import httpx2
import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.llm import (
    AuthenticationError,
    BlockedByHook,
    Chat,
    ChatStream,
    Content,
    Finish,
    GetUsage,
    HookContext,
    HookEvent,
    HookExecutor,
    HookResult,
    ListProviders,
    ProviderActor,
    ProviderConfig,
    ProviderRegistry,
    ResetUsage,
    UnknownProviderError,
    Usage,
    block,
    provider_actor,
    provider_spec,
)
from tests.llm.helpers import FAST_RETRY, SHORT, eventually, hello, openai
from tests.peers.fault_server import (
    FaultServer,
    Reply,
    chunk,
    completion,
    dumps,
    error_reply,
    json_reply,
    sse,
    sse_reply,
)

USAGE = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}


def registry(url: str) -> ProviderRegistry:
    reg = ProviderRegistry().register(openai(url))
    reg.set_default("fault")
    return reg


async def test_chat_and_usage_report(system: ActorSystem, fault_server: FaultServer) -> None:
    url, _ = fault_server.script(json_reply(completion("hi", usage=USAGE)))
    llm = await system.spawn(provider_actor(registry(url), retry=FAST_RETRY), name="llm")
    response = await llm.ask(Chat(hello()))
    assert response.text == "hi" and response.provider == "fault"
    await llm.ask(Chat(hello(), provider="fault"))
    report = await llm.ask(GetUsage())
    assert report.calls == 2 and report.total == Usage(20, 4)
    assert report.by_provider == {"fault": Usage(20, 4)} and report.last == Usage(10, 2)
    await llm.ask(ResetUsage())
    assert (await llm.ask(GetUsage())).calls == 0
    listing = await llm.ask(ListProviders())
    assert listing.names == ["fault"] and listing.default == "fault"


async def test_stream_through_the_actor(system: ActorSystem, fault_server: FaultServer) -> None:
    pieces = [chunk({"role": "assistant", "content": "a"}), chunk({"content": "b"}, "stop")]
    url, _ = fault_server.script(sse_reply(*sse(*pieces)))
    llm = await system.spawn(provider_actor(registry(url), retry=FAST_RETRY), name="llm")
    async with llm.stream(ChatStream(hello())) as events:
        got = [event async for event in events]
    assert [type(e) for e in got] == [Content, Content, Finish]
    final = got[-1]
    assert isinstance(final, Finish) and final.response.text == "ab"
    assert (await llm.ask(GetUsage())).calls == 1


async def test_provider_errors_go_to_the_asker_without_a_crash(
    system: ActorSystem, fault_server: FaultServer
) -> None:
    bad = error_reply(401, "bad key")
    url, _ = fault_server.script(bad, bad, json_reply(completion("ok")))
    llm = await system.spawn(provider_actor(registry(url), retry=FAST_RETRY), name="llm")
    with pytest.raises(AuthenticationError):
        await llm.ask(Chat(hello()))
    with pytest.raises(UnknownProviderError):
        await llm.ask(Chat(hello(), provider="nope"))
    with pytest.raises(AuthenticationError):
        async with llm.stream(ChatStream(hello())) as events:
            async for _ in events:
                pass
    assert (await llm.ask(Chat(hello()))).text == "ok"
    row = next(r for r in system.snapshot() if r.name == "llm")
    assert row.restarts == 0


async def test_cancelled_asker_closes_the_http_request(
    system: ActorSystem, fault_server: FaultServer
) -> None:
    url, scenario = fault_server.script(Reply(delay=10.0, body=[dumps(completion())]))
    llm = await system.spawn(provider_actor(registry(url), timeouts=SHORT), name="llm")
    with trio.move_on_after(0.5) as scope:
        await llm.ask(Chat(hello()))
    assert scope.cancelled_caught
    await eventually(lambda: scenario.disconnects > 0)
    assert len(scenario.requests) == 1


async def test_leaving_a_stream_early_closes_the_http_response(
    system: ActorSystem, fault_server: FaultServer
) -> None:
    body = [*sse(chunk({"role": "assistant", "content": "first"}), done=False), 10.0]
    url, scenario = fault_server.script(sse_reply(*body, framing="chunked"))
    llm = await system.spawn(provider_actor(registry(url), timeouts=SHORT), name="llm")
    async with llm.stream(ChatStream(hello())) as events:
        async for event in events:
            assert isinstance(event, Content)
            break
    await eventually(lambda: scenario.disconnects > 0)


async def test_in_flight_requests_are_limited(
    system: ActorSystem, fault_server: FaultServer
) -> None:
    url, scenario = fault_server.script(Reply(delay=0.3, body=[dumps(completion())]))
    llm = await system.spawn(provider_actor(registry(url), max_in_flight=2), name="llm")
    async with trio.open_nursery() as nursery:
        for _ in range(5):
            nursery.start_soon(llm.ask, Chat(hello()))
    assert len(scenario.requests) == 5
    assert scenario.max_active == 2


async def test_pre_request_hook_blocks_without_calling_the_provider(
    system: ActorSystem, fault_server: FaultServer
) -> None:
    url, scenario = fault_server.script(json_reply(completion()))
    seen: list[HookEvent] = []

    async def refuse(ctx: HookContext) -> HookResult:
        seen.append(ctx.event)
        return block("over budget")

    async def observe(ctx: HookContext) -> None:
        seen.append(ctx.event)

    hooks = HookExecutor().register(HookEvent.PRE_REQUEST, refuse)
    hooks.register(HookEvent.ON_ERROR, observe)
    llm = await system.spawn(provider_actor(registry(url), hooks=hooks), name="llm")
    with pytest.raises(BlockedByHook, match="over budget"):
        await llm.ask(Chat(hello()))
    assert scenario.requests == [] and seen == [HookEvent.PRE_REQUEST]


async def test_post_request_hook_sees_usage(system: ActorSystem, fault_server: FaultServer) -> None:
    url, _ = fault_server.script(json_reply(completion(usage=USAGE)))
    seen: list[Usage | None] = []

    async def observe(ctx: HookContext) -> None:
        seen.append(ctx.usage)

    hooks = HookExecutor().register(HookEvent.POST_REQUEST, observe)
    llm = await system.spawn(provider_actor(registry(url), hooks=hooks), name="llm")
    await llm.ask(Chat(hello()))
    assert seen == [Usage(10, 2)]


async def test_client_is_made_on_start_and_closed_on_stop(fault_server: FaultServer) -> None:
    url, _ = fault_server.script(json_reply(completion()))
    clients: list[httpx2.AsyncClient] = []

    def make() -> httpx2.AsyncClient:
        clients.append(httpx2.AsyncClient())
        return clients[-1]

    async with ActorSystem(strict=True) as system:
        llm = await system.spawn(provider_actor(registry(url), client_factory=make), name="llm")
        await llm.ask(Chat(hello()))
        assert len(clients) == 1 and not clients[0].is_closed
    assert clients[0].is_closed


def test_max_in_flight_must_allow_concurrency() -> None:
    with pytest.raises(ValueError):
        provider_actor(ProviderRegistry(), max_in_flight=1)


async def test_provider_spec_runs_at_most_max_concurrency_requests(
    system: ActorSystem, fault_server: FaultServer
) -> None:
    url, scenario = fault_server.script(Reply(delay=0.3, body=[dumps(completion())]))
    spec = provider_spec("llm", registry=registry(url), max_concurrency=3)
    llm = await system.root.start_child(spec)
    async with trio.open_nursery() as nursery:
        for _ in range(7):
            nursery.start_soon(llm.ask, Chat(hello()))
    assert len(scenario.requests) == 7 and scenario.max_active == 3


def test_provider_spec_needs_a_concurrent_actor() -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        provider_spec("llm", registry=ProviderRegistry(), max_concurrency=1)
    spec = provider_spec("llm", registry=ProviderRegistry(), config=ProviderConfig(seed=1))
    assert spec.name == "llm" and isinstance(spec.factory(), ProviderActor)
