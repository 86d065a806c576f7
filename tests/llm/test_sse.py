"""The SSE decoder: the event-stream rules, any split of the bytes, and the size cap."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.llm import StreamError
from agcore_actors.llm.wire import SseDecoder, SseEvent


def decode(*chunks: bytes, limit: int = 1 << 20) -> list[SseEvent]:
    decoder = SseDecoder(limit, "p")
    return [event for chunk in chunks for event in decoder.feed(chunk)] + decoder.end()


def test_fields_comments_and_line_endings() -> None:
    body = (
        b"\xef\xbb\xbf: a comment\r\n"
        b"event: ping\r\ndata: {}\r\n\r\n"
        b"id: 7\rdata:no space\rdata:  two spaces\r\r"
        b"retry: 10\ndata\n\n"
        b"data: tail without a blank line"
    )
    assert decode(body) == [
        SseEvent("ping", b"{}"),
        SseEvent("message", b"no space\n two spaces"),
        SseEvent("message", b""),
    ]


LINE = st.binary(max_size=40).filter(lambda b: b"\r" not in b and b"\n" not in b)
ENDING = st.sampled_from([b"\n", b"\r\n", b"\r"])


@given(st.lists(st.tuples(LINE, ENDING)), st.data())
def test_any_split_of_the_bytes_decodes_the_same(
    events: list[tuple[bytes, bytes]], data: st.DataObject
) -> None:
    lines = [line for line, _ in events]
    endings = [end for _, end in events]
    body = b"".join(b"data: " + line + end + end for line, end in zip(lines, endings, strict=True))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=8)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    expected = [SseEvent("message", line) for line in lines]
    assert decode(body) == expected
    assert decode(*pieces) == expected


def test_a_line_or_an_event_over_the_cap_is_a_stream_error() -> None:
    with pytest.raises(StreamError, match="100 bytes"):
        decode(b"data: " + b"x" * 200, limit=100)  # one line, never ended
    with pytest.raises(StreamError):
        decode(*(b"data: " + b"y" * 30 + b"\n" for _ in range(5)), limit=100)  # one event
    assert decode(b"data: " + b"z" * 90 + b"\n\n", limit=100) == [SseEvent("message", b"z" * 90)]
