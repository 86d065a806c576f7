"""Connections of the HTTP server end when they should: a finished event stream ends its
response and the server closes the connection (``Connection: close``) or starts its
keep-alive timer, so file descriptors come back to their count after 1,000 streams; a
request body that stalls is answered 408 and cut; a request framed twice
(``Content-Length`` and ``Transfer-Encoding``) is refused and nothing pipelined behind it
is read."""

from __future__ import annotations

import os

import trio

from tests.serve.raw import connect, head, read_to_eof, turn_request
from tests.serve.runtime import served


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_a_finished_stream_with_connection_close_is_closed_by_the_server() -> None:
    """Fails on df941de: the connection stayed open after the final event."""
    async with served() as s:
        stream = await connect(s)
        async with stream:
            await stream.send_all(turn_request(s, "a", {"text": "hi"}, "connection: close"))
            answer = await read_to_eof(stream)
        assert b"event: turn_completed" in answer and answer.endswith(b"0\r\n\r\n")


async def test_a_finished_stream_starts_the_keep_alive_timer() -> None:
    """Fails on df941de: a kept-alive connection was never closed after a stream."""
    async with served() as s:
        stream = await connect(s)
        async with stream:
            await stream.send_all(turn_request(s, "a", {"text": "hi"}))
            answer = await read_to_eof(stream, seconds=30)  # hypercorn's timer: 5 s
        assert b"event: turn_completed" in answer


async def test_fds_come_back_to_their_count_after_1000_finished_streams() -> None:
    """Fails on df941de: every finished stream held its connection (and fd)."""
    async with served(max_streams=2048) as s:

        async def one(i: int) -> None:
            stream = await connect(s)
            async with stream:
                request = turn_request(s, f"s{i % 50}", {"text": "hi"}, "connection: close")
                await stream.send_all(request)
                assert b"turn_completed" in await read_to_eof(stream, seconds=60)

        async def batch(start: int) -> None:
            async with trio.open_nursery() as nursery:
                for i in range(start, start + 50):
                    nursery.start_soon(one, i)

        await batch(0)  # the server's own fds (sessions, store) are open before counting
        before = open_fds()
        for start in range(50, 1050, 50):
            await batch(start)
        with trio.move_on_after(10):
            while open_fds() > before:  # noqa: ASYNC110 (the server closes after our EOF)
                await trio.sleep(0.05)
        assert open_fds() <= before


async def test_a_stalled_body_is_answered_408_and_the_connection_cut() -> None:
    """Fails on df941de: a body that never came held the request open for ever."""
    async with served(body_timeout=0.5) as s:
        stream = await connect(s)
        async with stream:
            start = head(s, "POST", "/v1/sessions/a/turns", "content-type: application/json",
                         "content-length: 100")  # fmt: skip
            await stream.send_all(start + b'{"text": "h')
            answer = await read_to_eof(stream)
        assert answer.startswith(b"HTTP/1.1 408") and b"body_timeout" in answer
        async with s.client() as client:
            assert (await client.get("/v1/sessions/a")).status_code == 404


async def test_a_request_with_both_framings_is_refused_and_nothing_behind_it_is_read() -> None:
    """Fails on df941de: it was accepted and a request pipelined behind it answered."""
    async with served() as s:
        stream = await connect(s)
        body = b'{"text": "hi"}'
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        smuggled = head(s, "DELETE", "/v1/sessions/a")
        async with stream:
            framing = [f"content-length: {len(chunked)}", "transfer-encoding: chunked"]
            request = head(s, "POST", "/v1/sessions/b/turns", "content-type: application/json",
                           *framing)  # fmt: skip
            await stream.send_all(request + chunked + smuggled)
            answer = await read_to_eof(stream)
        assert answer.startswith(b"HTTP/1.1 400") and answer.count(b"HTTP/1.1") == 1
        async with s.client() as client:
            assert (await client.get("/v1/sessions/b")).status_code == 404


async def test_a_refused_request_keeps_its_connection_alive() -> None:
    """A refusal decided before the body is read (here: a foreign Origin) still reads it,
    so the connection serves the next request instead of costing a new one."""
    async with served() as s:
        stream = await connect(s)
        async with stream:
            refused = turn_request(s, "a", {"text": "hi"}, "origin: http://evil.example")
            await stream.send_all(refused)
            received = b""
            while b"bad_origin" not in received:
                chunk = await stream.receive_some()
                assert chunk, received
                received += chunk
            await stream.send_all(head(s, "GET", "/healthz", "connection: close"))
            answer = await read_to_eof(stream)
        assert answer.startswith(b"HTTP/1.1 200"), answer[:100]
