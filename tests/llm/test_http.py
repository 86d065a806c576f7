"""The HTTP read loop against the real fault server: idle limits at the read, connection
reuse after the end marker."""

from __future__ import annotations

import trio

from agcore_actors import ActorSystem
from agcore_actors.llm import (
    ChatRequest,
    ChatStream,
    Finish,
    LlmTimeoutError,
    ProviderRegistry,
    Timeouts,
    provider_spec,
    user,
)
from tests.llm.helpers import openai, stream, stream_until_error, text_stream
from tests.peers.fault_server import (
    FaultServer,
    chunk,
    sse,
    sse_reply,
)

# -- issue 11 regressions ------------------------------------------------------------


async def test_streamed_calls_reuse_one_connection(fault_server: FaultServer) -> None:
    body = sse(*text_stream("a"), chunk({}, "stop"))
    url, scenario = fault_server.script(sse_reply(*body, framing="chunked"))
    registry = ProviderRegistry().register(openai(url))
    before = fault_server.connections
    async with ActorSystem(strict=True) as system:
        llm = await system.root.start_child(provider_spec("llm", registry=registry))
        for _ in range(3):
            async with llm.stream(ChatStream(ChatRequest([user("q")]))) as events:
                assert isinstance([e async for e in events][-1], Finish)
    assert len(scenario.requests) == 3
    assert fault_server.connections - before == 1


async def test_a_stall_after_three_events_times_out_within_one_and_a_half_idle(
    fault_server: FaultServer,
) -> None:
    body = [*sse(*text_stream("a", "b"), done=False), 5.0]
    url, _ = fault_server.script(sse_reply(*body, framing="chunked"))
    stamps: list[float] = []
    _, error = await stream_until_error(
        openai(url), stamps=stamps, timeouts=Timeouts(attempt=2, idle=0.4, call=10)
    )
    assert isinstance(error, LlmTimeoutError) and error.scope == "idle"
    # From the last event, not from the request: connecting is not what is measured.
    assert stamps and trio.current_time() - stamps[-1] < 0.4 * 1.5


async def test_a_keep_alive_only_stream_times_out_within_one_and_a_half_idle(
    fault_server: FaultServer,
) -> None:
    body: list[bytes | float] = [*sse(*text_stream("a"), done=False)]
    for _ in range(40):
        body += [0.1, b": keep-alive\n\n"]
    url, _ = fault_server.script(sse_reply(*body, framing="chunked"))
    stamps: list[float] = []
    _, error = await stream_until_error(
        openai(url), stamps=stamps, timeouts=Timeouts(attempt=2, idle=0.4, call=10)
    )
    assert isinstance(error, LlmTimeoutError) and error.scope == "idle"
    # From the last event, not from the request: connecting is not what is measured.
    assert stamps and trio.current_time() - stamps[-1] < 0.4 * 1.5


async def test_headers_may_take_longer_than_idle_when_the_attempt_allows(
    fault_server: FaultServer,
) -> None:
    body = sse(*text_stream("late"), chunk({}, "stop"))
    url, _ = fault_server.script(sse_reply(*body, delay=0.6))
    final = (await stream(openai(url), timeouts=Timeouts(attempt=3, idle=0.3, call=10)))[-1]
    assert isinstance(final, Finish) and final.response.text == "late"


def test_a_request_url_is_parsed_once_per_stack_and_a_bad_one_is_left_to_the_request() -> None:
    import httpx2

    from agcore_actors.llm._http import request_url

    client = httpx2.AsyncClient()
    url = "http://127.0.0.1:9/v1/chat/completions"
    parsed = request_url(client, url)
    assert isinstance(parsed, httpx2.URL) and str(parsed) == url
    assert request_url(client, url) is parsed  # not parsed again
    assert request_url(client, "http://[::1") == "http://[::1"  # the request raises
    assert request_url(object(), url) == url  # type: ignore[arg-type]  # no base_url
