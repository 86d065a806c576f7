"""Hostile provider bodies and SSE streams: every one ends in a typed :class:`LlmError` or
a clean reply — never another exception, and never a hang.

Hypothesis drives the real retry loop (:class:`Caller`) and the real providers over an
in-memory HTTP transport on trio's virtual clock; the corpus is replayed through a
:class:`ProviderActor` against a real HTTP server on 127.0.0.1, and the actor must still
answer a valid request afterwards without having restarted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agcore_actors import ActorSystem
from agcore_actors.llm import (
    AnthropicConfig,
    AnthropicProvider,
    Chat,
    ChatRequest,
    ChatResponse,
    ChatStream,
    Finish,
    GetUsage,
    HookExecutor,
    LlmError,
    OpenAICompatibleProvider,
    OpenAIConfig,
    Provider,
    ProviderRegistry,
    RetryConfig,
    StreamEvent,
    Timeouts,
    provider_actor,
    user,
)
from agcore_actors.llm.wire import Caller
from tests.hostile.hostile import corpus, json_values, mangled, shaped, split, to_bytes
from tests.peers.fault_server import FaultServer, Reply, completion, json_reply

RETRY = RetryConfig(max_retries=1, base_delay=0.01, max_delay=0.05, jitter=0.1)
TIMEOUTS = Timeouts(attempt=30.0, idle=10.0, connect=2.0, call=60.0)
REQUEST = ChatRequest([user("Hello")], model="m")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- the shapes ---------------------------------------------------------------------------

_openai_keys = st.sampled_from(
    [
        "id",
        "object",
        "model",
        "choices",
        "index",
        "message",
        "delta",
        "role",
        "content",
        "reasoning_content",
        "reasoning",
        "refusal",
        "tool_calls",
        "function",
        "name",
        "arguments",
        "type",
        "finish_reason",
        "usage",
        "prompt_tokens",
        "completion_tokens",
        "prompt_tokens_details",
        "cached_tokens",
        "completion_tokens_details",
        "reasoning_tokens",
        "error",
        "code",
        "param",
        "detail",
        "text",
        "logprobs",
    ]
)
_junk = json_values(_openai_keys)
_text = st.text(max_size=10) | st.none()
_int = st.integers(-(2**66), 2**66) | st.none()
_tool_call = {
    "index": _int,
    "id": _text,
    "type": st.just("function"),
    "function": {"name": _text, "arguments": _text},
}
_parts = [{"type": st.just("text"), "text": _text}]
_usage = {
    "prompt_tokens": _int,
    "completion_tokens": _int,
    "prompt_tokens_details": {"cached_tokens": _int},
    "completion_tokens_details": {"reasoning_tokens": _int},
    "prompt_cache_hit_tokens": _int,
}
_error = {"message": _text, "type": _text, "code": _text | _int}
_finish = st.sampled_from(["stop", "length", "tool_calls", "error", "weird"]) | st.none()
OPENAI_COMPLETION = shaped(
    {
        "id": _text,
        "model": _text,
        "choices": [
            {
                "index": _int,
                "message": {
                    "role": _text,
                    "content": _text | st.lists(shaped(_parts[0], _junk), max_size=3),
                    "reasoning_content": _text,
                    "refusal": _text,
                    "tool_calls": [_tool_call],
                },
                "finish_reason": _finish,
            }
        ],
        "usage": _usage,
        "error": _error,
        "detail": _junk,
    },
    _junk,
)
OPENAI_CHUNK = shaped(
    {
        "id": _text,
        "object": st.sampled_from(["chat.completion.chunk", "error"]),
        "model": _text,
        "choices": [
            {
                "index": _int,
                "delta": {
                    "role": _text,
                    "content": _text,
                    "reasoning_content": _text,
                    "tool_calls": [_tool_call],
                },
                "finish_reason": _finish,
            }
        ],
        "usage": _usage,
        "error": _error,
        "message": _text,
    },
    _junk,
)
_anthropic_keys = st.sampled_from(
    [
        "type",
        "index",
        "message",
        "content_block",
        "delta",
        "usage",
        "error",
        "id",
        "model",
        "content",
        "stop_reason",
        "text",
        "thinking",
        "signature",
        "data",
        "name",
        "input",
        "partial_json",
        "input_tokens",
        "output_tokens",
    ]
)
_ajunk = json_values(_anthropic_keys)
_block = {
    "type": st.sampled_from(["text", "thinking", "redacted_thinking", "tool_use", "image"]),
    "text": _text,
    "thinking": _text,
    "signature": _text,
    "data": _text,
    "id": _text,
    "name": _text,
    "input": _ajunk,
}
_ausage = {"input_tokens": _int, "output_tokens": _int, "cache_read_input_tokens": _int}
ANTHROPIC_MESSAGE = shaped(
    {"id": _text, "model": _text, "content": [_block], "stop_reason": _text, "usage": _ausage},
    _ajunk,
)
_event_types = st.sampled_from(
    [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "error",
        "ping",
    ]
)
ANTHROPIC_EVENT = shaped(
    {
        "type": _event_types,
        "index": _int,
        "message": {"id": _text, "model": _text, "usage": _ausage},
        "content_block": _block,
        "delta": {
            "type": st.sampled_from(
                ["text_delta", "thinking_delta", "signature_delta", "input_json_delta"]
            ),
            "text": _text,
            "thinking": _text,
            "signature": _text,
            "partial_json": _text,
            "stop_reason": _text,
        },
        "usage": _ausage,
        "error": {"type": _text, "message": _text},
    },
    _ajunk,
)

_statuses = st.sampled_from([200, 200, 200, 200, 400, 401, 404, 413, 429, 500, 503, 529])
_retry_after = st.none() | st.sampled_from(
    ["1", "-1", "nan", "inf", "1e309", "0.5", "Wed, 21 Oct 2015 07:28:00 GMT",
     "Fri, 31 Dec 9999 23:59:59 GMT", "Mon, 01 Jan 0001 00:00:00 GMT", "soon", ""]
)  # fmt: skip


def documents(shape: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    return mangled(shape.map(to_bytes)) | st.binary(max_size=64)


@st.composite
def sse_bodies(draw: st.DrawFn, event: st.SearchStrategy[Any], names: bool) -> bytes:
    """An SSE body of hostile events: names, data lines, separators, comments, ends."""
    out = bytearray()
    if draw(st.booleans()):
        out += b"\xef\xbb\xbf"
    for _ in range(draw(st.integers(0, 6))):
        data = draw(documents(event))
        sep = draw(st.sampled_from([b"\n", b"\r\n", b"\r"]))
        if names or draw(st.booleans()):
            name = draw(_event_types | st.sampled_from(["error", "message", ""]))
            out += b"event: " + name.encode() + sep
        out += draw(st.sampled_from([b"data: ", b"data:", b": keep-alive\ndata: "]))
        out += data.replace(b"\n", b" ").replace(b"\r", b" ") + sep + sep
    out += draw(st.sampled_from([b"", b"data: [DONE]\n\n", b"event: message_stop\ndata: {}\n\n"]))
    return bytes(out)


# -- running one hostile exchange -----------------------------------------------------------


def _transport(status: int, retry_after: str | None, pieces: list[bytes], sse: bool) -> Any:
    headers = {"content-type": "text/event-stream" if sse else "application/json"}
    if retry_after is not None:
        headers["retry-after"] = retry_after

    async def body() -> Any:
        for piece in pieces:
            yield piece

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, headers=headers, content=body())

    return httpx2.MockTransport(handler)


async def _exchange(provider: Provider, transport: Any, stream: bool) -> object:
    caller = Caller(RETRY, TIMEOUTS, HookExecutor())
    client: Any  # httpx2's client, which the providers accept like httpx's
    async with httpx2.AsyncClient(transport=transport) as client:
        with trio.fail_after(600):  # virtual time: a hang is a failure, not a stuck test
            try:
                if not stream:
                    return await caller.chat(provider.name, provider, client, REQUEST)
                events: list[StreamEvent] = []
                async for event in caller.stream(provider.name, provider, client, REQUEST):
                    events.append(event)
                return events
            except LlmError as error:
                return error


def exchange(provider: Provider, status: int, retry_after: str | None, pieces: list[bytes], *,
             stream: bool, sse: bool) -> object:  # fmt: skip
    """One call through the real retry loop; returns its reply, events or typed error
    (any other exception fails the test)."""
    transport = _transport(status, retry_after, pieces, sse)
    clock = trio.testing.MockClock(autojump_threshold=0)
    outcome = trio.run(_exchange, provider, transport, stream, clock=clock)
    if stream and isinstance(outcome, list):
        assert outcome and isinstance(outcome[-1], Finish), outcome
    return outcome


def openai() -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        OpenAIConfig(name="o", base_url="http://127.0.0.1:9/v1", api_key="sk-x", model="m")
    )


def anthropic() -> AnthropicProvider:
    return AnthropicProvider(
        AnthropicConfig(name="a", base_url="http://127.0.0.1:9", api_key="sk-ant-x", model="m")
    )


@SETTINGS
@given(body=documents(OPENAI_COMPLETION), status=_statuses, retry_after=_retry_after,
       data=st.data())  # fmt: skip
def test_any_openai_body_ends_in_a_reply_or_a_typed_error(
    body: bytes, status: int, retry_after: str | None, data: st.DataObject
) -> None:
    outcome = exchange(openai(), status, retry_after, data.draw(split(body)), stream=False,
                       sse=False)  # fmt: skip
    assert isinstance(outcome, ChatResponse | LlmError), outcome


@SETTINGS
@given(body=sse_bodies(OPENAI_CHUNK, names=False), data=st.data())
def test_any_openai_stream_ends_in_a_finish_or_a_typed_error(
    body: bytes, data: st.DataObject
) -> None:
    exchange(openai(), 200, None, data.draw(split(body)), stream=True, sse=True)


@SETTINGS
@given(body=documents(ANTHROPIC_MESSAGE), status=_statuses, retry_after=_retry_after,
       data=st.data())  # fmt: skip
def test_any_anthropic_body_ends_in_a_reply_or_a_typed_error(
    body: bytes, status: int, retry_after: str | None, data: st.DataObject
) -> None:
    outcome = exchange(anthropic(), status, retry_after, data.draw(split(body)), stream=False,
                       sse=False)  # fmt: skip
    assert isinstance(outcome, ChatResponse | LlmError), outcome


@SETTINGS
@given(body=sse_bodies(ANTHROPIC_EVENT, names=True), data=st.data())
def test_any_anthropic_stream_ends_in_a_finish_or_a_typed_error(
    body: bytes, data: st.DataObject
) -> None:
    exchange(anthropic(), 200, None, data.draw(split(body)), stream=True, sse=True)


# -- the corpus, over real HTTP, through the provider actor -------------------------------

TARGETS = {
    "openai_body": ("application/json", False),
    "openai_sse": ("text/event-stream", True),
    "anthropic_body": ("application/json", False),
    "anthropic_sse": ("text/event-stream", True),
}


def _cases() -> list[Any]:
    return [
        pytest.param(target, path, id=f"{target}/{path.name}")
        for target in TARGETS
        for path in corpus(target)
    ]


def read(path: Path) -> bytes:
    return path.read_bytes()


def _provider(target: str, url: str, server: FaultServer) -> Provider:
    if target.startswith("anthropic"):
        config = AnthropicConfig(name="p", base_url=server.root(url), api_key="sk-ant-x")
        return AnthropicProvider(config)
    return OpenAICompatibleProvider(OpenAIConfig(name="p", base_url=url, api_key="sk-x"))


@pytest.mark.parametrize(("target", "path"), _cases())
async def test_corpus_body_is_a_typed_error_or_a_reply_and_the_actor_lives_on(
    system: ActorSystem, fault_server: FaultServer, target: str, path: Path
) -> None:
    content_type, streamed = TARGETS[target]
    hostile = Reply(headers={"content-type": content_type}, body=[read(path)],
                    framing="chunked")  # fmt: skip
    url, _ = fault_server.script(hostile)
    fine, _ = fault_server.script(json_reply(completion("fine")))
    registry = ProviderRegistry().register(_provider(target, url, fault_server))
    registry.register(OpenAICompatibleProvider(OpenAIConfig(name="ok", base_url=fine)))
    registry.set_default("p")
    llm = await system.spawn(provider_actor(registry, retry=RETRY), name="llm")
    with trio.fail_after(30):
        try:
            if streamed:
                async with llm.stream(ChatStream(REQUEST)) as events:
                    got = [event async for event in events]
                assert isinstance(got[-1], Finish)
            else:
                assert isinstance(await llm.ask(Chat(REQUEST)), ChatResponse)
        except LlmError:
            pass
        before = await llm.ask(GetUsage())
        # The same actor (not a restarted one: its usage count goes on) still answers.
        assert (await llm.ask(Chat(REQUEST, provider="ok"))).text == "fine"
        assert (await llm.ask(GetUsage())).calls == before.calls + 1
