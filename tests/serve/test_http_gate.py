"""A full server sheds turns at accept time: while ``max_admitted`` turns are in flight, a
new connection's turn POST is answered 503 + ``Retry-After`` + ``Connection: close`` at its
request line, before any of the request is parsed, and nothing runs or is stored; every
other request is still served in full; in a burst of clients no more turns are let through
than can be admitted; a connection whose turn was refused by the application is closed, so
its client's retry meets the gate."""

from __future__ import annotations

import pytest
import trio

from agcore_actors.serve._http_gate import is_turn_post
from tests.serve.raw import connect, head, read_to_eof, turn_request
from tests.serve.runtime import Served, served
from tests.serve.test_http_turns import JSON, hold, in_flight

LINE = b"POST /v1/sessions/x/turns HTTP/1.1\r\n"


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (LINE, True),
        (b"POST /v1/sessions/a-b.c/turns?x=1 HTTP/1.1\r\nhost: h\r\n\r\n", True),
        (b"POST /v1/sessions/x/turns HTTP/1.1\n", True),
        (b"POST /v1/sessions/x/turns", False),  # the line has not ended
        (b"GET /v1/sessions/x/turns HTTP/1.1\r\n", False),
        (b"POST /v1/sessions/x/cancel HTTP/1.1\r\n", False),
        (b"POST /v1/sessions//turns HTTP/1.1\r\n", False),
        (b"POST /v1/sessions/x/turns/y HTTP/1.1\r\n", False),
        (b"POST /v1/sessions/x/approvals/turns HTTP/1.1\r\n", False),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", False),
        (b"", False),
    ],
)
def test_only_a_turn_post_request_line_is_a_turn_post(head: bytes, expected: bool) -> None:
    assert is_turn_post(head) is expected


def answer(raw: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body


def assert_shed(raw: bytes) -> None:
    status, headers, body = answer(raw)
    assert status == 503 and b'"error_kind":"overloaded"' in body, raw
    assert int(headers[b"retry-after"]) >= 1 and headers[b"connection"] == b"close"
    assert int(headers[b"content-length"]) == len(body)
    assert headers[b"x-content-type-options"] == b"nosniff"


async def exchange(s: Served, request: bytes) -> bytes:
    """Send ``request`` on a new connection; everything until the server closes it."""
    stream = await connect(s)
    async with stream:
        await stream.send_all(request)
        return await read_to_eof(stream, seconds=30)


async def test_a_full_server_refuses_a_turn_post_at_its_request_line() -> None:
    """Fails before the gate: the server waited for the rest of the request."""
    async with (
        served(max_admitted=2, drain_timeout=0) as s,
        s.client() as client,
        trio.open_nursery() as nursery,
    ):
        for i in range(2):
            nursery.start_soon(hold, client, f"h{i}")
        await in_flight(client, 2)
        assert_shed(await exchange(s, LINE))  # no headers, no token, no body: none needed
        for i in range(2):
            await client.post(f"/v1/sessions/h{i}/cancel", json={})


async def test_500_clients_at_a_full_server_are_all_shed_and_nothing_runs() -> None:
    """Fails before the gate: each refusal kept its connection alive."""
    async with served(max_admitted=2, drain_timeout=0) as s, s.client(timeout=60) as client:
        async with trio.open_nursery() as nursery:
            for i in range(2):
                nursery.start_soon(hold, client, f"h{i}")
            await in_flight(client, 2)
            answers: list[bytes] = []

            async def one(i: int) -> None:
                answers.append(await exchange(s, turn_request(s, f"x{i}", {"text": "hi"})))

            async with trio.open_nursery() as clients:
                for i in range(500):
                    clients.start_soon(one, i)
            for raw in answers:
                assert_shed(raw)
            assert len(answers) == 500
            # Every other request is still served in full, on new connections too.
            assert answer(await exchange(s, head(s, "GET", "/healthz")))[0] == 200
            assert answer(await exchange(s, head(s, "GET", "/v1/sessions/h0")))[0] == 200
            bad = head(s, "GET", "/v1/sessions", host="evil.example")
            assert answer(await exchange(s, bad))[0] == 403
            for i in range(2):
                await client.post(f"/v1/sessions/h{i}/cancel", json={})
        listed = (await client.get("/v1/sessions", params={"limit": "1000"})).json()
        assert sorted(r["id"] for r in listed["sessions"]) == ["h0", "h1"]
        r = await client.post("/v1/sessions/x0/turns", json={"text": "hi"}, headers=JSON)
        assert r.json()["status"] == "completed"  # admitted again once there is room


async def test_a_burst_lets_through_no_more_turns_than_can_be_admitted() -> None:
    """300 connections at once against 5 admitted turns: every answer is a completed turn
    or a 503 with Retry-After, never more than 5 turns run, and the store holds exactly
    the completed ones."""
    async with served(max_admitted=5) as s, s.client(timeout=60) as client:
        outcomes: list[str] = []
        peak = 0

        async def watch() -> None:
            nonlocal peak
            while True:
                peak = max(peak, s.host.snapshot().turns_in_flight)
                await trio.sleep(0.001)

        async def one(i: int) -> None:
            request = turn_request(s, f"c{i}", {"text": "slow"}, "accept: application/json")
            status, headers, body = answer(await exchange(s, request))
            if status == 503:
                assert int(headers[b"retry-after"]) >= 1 and headers[b"connection"] == b"close"
                outcomes.append("refused")
            else:
                assert status == 200 and b'"status":"completed"' in body, body
                outcomes.append("completed")

        async with trio.open_nursery() as watching:
            watching.start_soon(watch)
            async with trio.open_nursery() as nursery:
                for i in range(300):
                    nursery.start_soon(one, i)
            watching.cancel_scope.cancel()
        completed = outcomes.count("completed")
        assert completed >= 5 and completed + outcomes.count("refused") == 300
        listed = (await client.get("/v1/sessions", params={"limit": "1000"})).json()["sessions"]
        assert len(listed) == completed and 1 <= peak <= 5


async def test_turn_posts_refused_by_the_application_do_not_keep_the_gate_shut() -> None:
    """A turn POST handed on counts against the limit until it is decided: one refused
    by the application (here 401, on connections kept alive) no longer counts."""
    async with served(max_admitted=2) as s, s.client() as client:
        streams = [await connect(s) for _ in range(4)]
        for stream in streams:
            request = turn_request(s, "x", {"text": "hi"}).replace(
                s.headers["authorization"].encode(), b"Bearer wrong-token-0123456789"
            )
            await stream.send_all(request)
            assert (await stream.receive_some()).startswith(b"HTTP/1.1 401")
        r = await client.post("/v1/sessions/y/turns", json={"text": "hi"}, headers=JSON)
        assert r.json()["status"] == "completed"
        for stream in streams:
            await stream.aclose()


async def test_a_turn_refused_by_the_application_closes_its_connection() -> None:
    """Fails before the gate: the connection was kept alive, so the client's retry cost
    the server a full request again."""
    async with (
        served(max_admitted=1, drain_timeout=0) as s,
        s.client() as client,
        trio.open_nursery() as nursery,
    ):
        stream = await connect(s)  # opened while there is room: it passes the gate
        async with stream:
            await stream.send_all(head(s, "GET", "/healthz"))
            assert (await stream.receive_some()).startswith(b"HTTP/1.1 200")
            nursery.start_soon(hold, client, "h")
            await in_flight(client, 1)
            await stream.send_all(turn_request(s, "x", {"text": "hi"}))
            raw = await read_to_eof(stream)
        status, headers, _ = answer(raw)
        assert status == 503 and headers[b"connection"] == b"close"
        assert int(headers[b"retry-after"]) >= 1
        await client.post("/v1/sessions/h/cancel", json={})


async def send_in_pieces(s: Served, request: bytes) -> bytes:
    """``request`` in three writes a little apart (the request line split too); the
    answer, read until the server closes."""
    stream = await connect(s)
    async with stream:
        for piece in (request[:3], request[3:20], request[20:]):
            await stream.send_all(piece)
            await trio.sleep(0.05)
        return await read_to_eof(stream, seconds=30)


async def test_a_request_line_that_arrives_in_pieces_is_refused_or_served_whole() -> None:
    async with (
        served(max_admitted=1, drain_timeout=0) as s,
        s.client() as client,
        trio.open_nursery() as nursery,
    ):
        request = turn_request(s, "x", {"text": "hi"}, "accept: application/json",
                               "connection: close")  # fmt: skip
        status, _, body = answer(await send_in_pieces(s, request))
        assert status == 200 and b'"status":"completed"' in body  # bytes read ahead, replayed
        nursery.start_soon(hold, client, "h")
        await in_flight(client, 1)
        assert_shed(await send_in_pieces(s, request))
        await client.post("/v1/sessions/h/cancel", json={})
        r = await client.get("/v1/sessions/x")  # x ran once: the refusal changed nothing
        assert r.json()["record"]["turns"] == 1


async def test_a_client_silent_for_a_while_after_connecting_is_still_answered() -> None:
    """The listening socket defers accepting until a connection's first bytes come
    (TCP_DEFER_ACCEPT): a client that connects and only sends later, past the kernel's
    first SYN-ACK retransmission (1 s), is answered all the same, served or refused."""
    async with (
        served(max_admitted=1, drain_timeout=0) as s,
        s.client() as client,
        trio.open_nursery() as nursery,
    ):
        request = turn_request(s, "x", {"text": "hi"}, "accept: application/json",
                               "connection: close")  # fmt: skip

        async def late(request: bytes) -> bytes:
            stream = await connect(s)
            async with stream:
                await trio.sleep(1.5)
                await stream.send_all(request)
                return await read_to_eof(stream, seconds=30)

        status, _, body = answer(await late(request))
        assert status == 200 and b'"status":"completed"' in body
        nursery.start_soon(hold, client, "h")
        await in_flight(client, 1)
        assert_shed(await late(request))
        await client.post("/v1/sessions/h/cancel", json={})
