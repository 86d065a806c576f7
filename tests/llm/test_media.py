"""Media parts: built from bytes, checked against limits, shown as placeholders, split
into blobs and joined back (a property), and mapped to each provider's wire shape."""

from __future__ import annotations

import base64
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.llm import (
    AssistantMessage,
    AssistantToolCall,
    ChatRequest,
    ContentPart,
    ContentTooLarge,
    FunctionCall,
    InvalidContent,
    MediaLimits,
    OpenAIConfig,
    TextPart,
    ToolMessage,
    UnsupportedContent,
    UserMessage,
    audio_part_of,
    check_parts,
    file_part_of,
    image_part_of,
    placeholder,
)
from agcore_actors.llm.wire import (
    anthropic_request_body,
    blob_refs,
    join_blobs,
    openai_request_body,
    split_blobs,
)

PNG = b"\x89PNG" + bytes(range(200))


def test_limits_are_checked_on_decoded_sizes() -> None:
    check_parts([image_part_of(PNG, "image/png")], MediaLimits(max_part_bytes=len(PNG)))
    with pytest.raises(ContentTooLarge) as part:
        check_parts([image_part_of(PNG, "image/png")], MediaLimits(max_part_bytes=len(PNG) - 1))
    assert (part.value.size, part.value.limit, part.value.kind) == (
        len(PNG),
        len(PNG) - 1,
        "content_too_large",
    )
    two: list[ContentPart] = [file_part_of(PNG, "application/pdf"), audio_part_of(PNG, "audio/wav")]
    with pytest.raises(ContentTooLarge, match="parts of one message"):
        check_parts(two, MediaLimits(max_message_bytes=2 * len(PNG) - 1))
    with pytest.raises(InvalidContent, match="image/svg"):
        check_parts([image_part_of(PNG, "image/svg+xml")])
    bad = msgspec.structs.replace(
        image_part_of(PNG, "image/png").image_url, url="data:image/png;base64,@@@"
    )
    with pytest.raises(InvalidContent, match="base64"):
        check_parts([msgspec.structs.replace(image_part_of(PNG, "image/png"), image_url=bad)])
    with pytest.raises(InvalidContent):
        audio_part_of(PNG, "audio/x-unknown")


def test_a_placeholder_names_the_part_without_its_data() -> None:
    shown = placeholder(image_part_of(PNG, "image/png"))
    assert shown.startswith("[image image/png 204 bytes sha256:") and shown.endswith("]")
    assert base64.b64encode(PNG).decode()[:16] not in shown


@given(
    texts=st.lists(st.text(max_size=5), max_size=3),
    blobs=st.lists(
        st.tuples(st.binary(max_size=300), st.sampled_from(["image", "file"])), max_size=4
    ),
    threshold=st.integers(0, 300),
)
def test_split_then_join_gives_the_message_back(
    texts: list[str], blobs: list[tuple[bytes, str]], threshold: int
) -> None:
    parts: list[Any] = [TextPart(t) for t in texts]
    parts += [
        image_part_of(data, "image/png")
        if kind == "image"
        else file_part_of(data, "text/plain", "a")
        for data, kind in blobs
    ]
    message = UserMessage(parts)
    stored, taken = split_blobs(message, threshold)
    kept = {ref: url for ref, _, url in taken}
    assert len(taken) == sum(len(d) >= threshold for d, _ in blobs)
    assert sorted(blob_refs(stored)) == sorted(ref for ref, _, _ in taken)
    body = msgspec.json.encode(stored).decode()
    assert not any(url in body for url in kept.values())  # the data is out of the body
    assert join_blobs(stored, kept.__getitem__) == message


def _batch(*results: ToolMessage) -> ChatRequest:
    calls = [AssistantToolCall(r.tool_call_id, FunctionCall("f", "{}")) for r in results]
    return ChatRequest(
        [UserMessage("go"), AssistantMessage(None, tool_calls=calls), *results], model="m"
    )


def _openai(request: ChatRequest, **kw: Any) -> list[dict[str, Any]]:
    body, _ = openai_request_body(request, OpenAIConfig(**kw), stream=False)
    messages: list[dict[str, Any]] = msgspec.json.decode(body)["messages"]
    return messages


def test_openai_gets_a_tools_media_in_one_user_message_after_the_whole_batch() -> None:
    image = image_part_of(PNG, "image/png")
    pdf = file_part_of(PNG, "application/pdf", "r.pdf")
    request = _batch(
        ToolMessage([TextPart("one"), image], "c1"),
        ToolMessage("two", "c2"),
        ToolMessage([pdf], "c3"),
    )
    sent = _openai(request)
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "tool", "user"]
    assert sent[2]["content"] == [
        {"type": "text", "text": "one"},
        {"type": "text", "text": "(attached below)"},
    ]
    assert sent[3]["content"] == "two"
    assert sent[4]["content"] == [{"type": "text", "text": "(attached below)"}]
    assert sent[5]["content"] == [msgspec.to_builtins(image), msgspec.to_builtins(pdf)]


def test_a_provider_that_takes_no_media_refuses_before_sending() -> None:
    request = ChatRequest([UserMessage([TextPart("x"), image_part_of(PNG, "image/png")])])
    with pytest.raises(UnsupportedContent) as refused:
        _openai(request, name="local", input_media=frozenset())
    assert (refused.value.kind, refused.value.media, refused.value.provider) == (
        "unsupported_content",
        "image",
        "local",
    )
    assert _openai(ChatRequest([UserMessage("text only")]), input_media=frozenset())


def _anthropic(request: ChatRequest) -> dict[str, Any]:
    body, _ = anthropic_request_body(
        request, model="c", max_tokens=10, headers={}, extra_body={}, stream=False
    )
    decoded: dict[str, Any] = msgspec.json.decode(body)
    return decoded


def test_anthropic_gets_documents_and_refuses_audio() -> None:
    pdf = file_part_of(PNG, "application/pdf", "r.pdf")
    note = file_part_of(b"hello", "text/plain", "n.txt")
    sent = _anthropic(ChatRequest([UserMessage([pdf, note])]))
    b64 = base64.b64encode(PNG).decode()
    assert sent["messages"][0]["content"] == [
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": b64},
            "title": "r.pdf",
        },
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "hello"},
            "title": "n.txt",
        },
    ]
    with pytest.raises(UnsupportedContent, match="audio"):
        _anthropic(ChatRequest([UserMessage([audio_part_of(PNG, "audio/wav")])]))
    with pytest.raises(UnsupportedContent, match="zip"):
        _anthropic(ChatRequest([UserMessage([file_part_of(PNG, "application/zip")])]))
