"""What the HTTP server refuses before anything runs, and that a refusal changes nothing:
a foreign ``Host`` (DNS rebinding), a POST or DELETE from another origin, a body that is
not ``application/json``, an id outside the id rule, a wrong method (405), a malformed
cursor (400); and the security headers every answer carries."""

from __future__ import annotations

from typing import Any

import pytest

from tests.serve.raw import connect, head, read_to_eof
from tests.serve.runtime import Served, served

JSON = {"accept": "application/json"}


async def stored(s: Served, session: str) -> int:
    async with s.client() as client:
        return (await client.get(f"/v1/sessions/{session}")).status_code


async def test_a_foreign_host_header_is_refused_on_every_route() -> None:
    """Fails on df941de: any Host was served (DNS rebinding reads and deletes sessions)."""
    async with served() as s, s.client() as client:
        await client.post("/v1/sessions/a/turns", json={"text": "hi"}, headers=JSON)
        for host in ["evil.example", "evil.example:80", "127.0.0.1.evil.example", "", "[::2]"]:
            for method, path in [("GET", "/v1/sessions"), ("GET", "/v1/sessions/a"),
                                 ("DELETE", "/v1/sessions/a")]:  # fmt: skip
                stream = await connect(s)
                async with stream:
                    await stream.send_all(head(s, method, path, "connection: close", host=host))
                    answer = await read_to_eof(stream)
                status = answer.split(b"\r\n", 1)[0]
                assert status.split()[1] in (b"403", b"400"), (host, method, status)
        assert await stored(s, "a") == 200
        for host in ["localhost", "127.0.0.1", "[::1]"]:  # loopback names of a loopback bind
            r = await client.get("/v1/sessions", headers={"host": host})
            assert r.status_code == 200, host


async def test_an_allowed_host_name_is_served() -> None:
    async with served(allowed_hosts=("bot.internal",)) as s, s.client() as client:
        assert (
            await client.get("/v1/sessions", headers={"host": "bot.internal"})
        ).status_code == 200
        assert (await client.get("/v1/sessions", headers={"host": "bot.other"})).status_code == 403


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1:1",
                                    "file://", "http://localhost.evil.example"])  # fmt: skip
async def test_a_state_changing_request_from_another_origin_is_refused(origin: str) -> None:
    """Fails on df941de: no Origin was checked."""
    async with served() as s, s.client() as client:
        hostile = {"origin": origin, **JSON}
        r = await client.post("/v1/sessions/a/turns", json={"text": "hi"}, headers=hostile)
        assert r.status_code == 403 and r.json()["error_kind"] == "bad_origin"
        assert await stored(s, "a") == 404
        await client.post("/v1/sessions/b/turns", json={"text": "hi"}, headers=JSON)
        assert (await client.delete("/v1/sessions/b", headers=hostile)).status_code == 403
        r = await client.post("/v1/sessions/b/cancel", json={}, headers=hostile)
        assert r.status_code == 403
        assert await stored(s, "b") == 200
        own = {"origin": s.url, **JSON}  # the server's own page may
        r = await client.post("/v1/sessions/c/turns", json={"text": "hi"}, headers=own)
        assert r.status_code == 200 and r.json()["status"] == "completed"


@pytest.mark.parametrize("ctype", [None, "text/plain", "application/x-www-form-urlencoded",
                                   "multipart/form-data; boundary=x",
                                   "application/jsonx"])  # fmt: skip
async def test_only_a_json_body_is_taken(ctype: str | None) -> None:
    """Fails on df941de: a text/plain body (what a no-cors fetch may send) ran a turn."""
    async with served() as s, s.client() as client:
        headers = {**JSON, **({"content-type": ctype} if ctype else {})}
        r = await client.post("/v1/sessions/a/turns", content=b'{"text": "hi"}', headers=headers)
        assert r.status_code == 415 and r.json()["error_kind"] == "unsupported_media_type"
        assert await stored(s, "a") == 404
        headers["content-type"] = "application/json; charset=utf-8"
        r = await client.post("/v1/sessions/a/turns", content=b'{"text": "hi"}', headers=headers)
        assert r.status_code == 200


BAD_IDS = ["%0AFORGED", "a%0Db", "%1B%5B31m", "a%00b", "%E2%80%AEevil", "a" * 129, "%ff%fe",
           "%fe%ff", "a%20b", ".hidden", "a%2Fb", "%C3%A9t%C3%A9"]  # fmt: skip


@pytest.mark.parametrize("bad", BAD_IDS)
async def test_an_id_outside_the_rule_is_400_on_every_route_and_changes_nothing(bad: str) -> None:
    """Fails on df941de: LF, CR, ESC, NUL, bidi and 60 KB ids were taken (a %0A id
    forged a log line), and undecodable ids aliased one session."""
    async with served() as s, s.client() as client:
        routes: list[tuple[str, str, dict[str, Any] | None]] = [
            ("POST", f"/v1/sessions/{bad}/turns", {"text": "hi"}),
            ("GET", f"/v1/sessions/{bad}", None),
            ("DELETE", f"/v1/sessions/{bad}", None),
            ("POST", f"/v1/sessions/{bad}/cancel", {}),
            ("GET", f"/v1/sessions/{bad}/turns/t1", None),
            ("GET", f"/v1/sessions/a/turns/{bad}", None),
            ("POST", f"/v1/sessions/a/approvals/{bad}", {"allow": True}),
        ]
        for method, path, body in routes:
            r = await client.request(method, path, json=body, headers=JSON)
            assert r.status_code in (400, 404) if "%2F" in bad else r.status_code == 400, (
                method, path, r.status_code)  # fmt: skip
        r = await client.post(
            "/v1/sessions/a/turns", json={"text": "hi", "turn": bad}, headers=JSON
        )
        assert r.status_code == 400
        assert (await client.get("/v1/sessions")).json()["sessions"] == []


async def test_the_longest_id_and_every_allowed_character_are_taken() -> None:
    ok = ["a" * 128, "A-z_0.9:x", "-", "_x", "0"]
    async with served() as s, s.client() as client:
        for session in ok:
            body = {"text": "hi", "turn": session}
            r = await client.post(f"/v1/sessions/{session}/turns", json=body, headers=JSON)
            assert r.status_code == 200, session
            assert r.json()["session"] == session and r.json()["turn"] == session


async def test_a_known_path_with_another_method_is_405_with_allow() -> None:
    """Fails on df941de: it was 404."""
    async with served() as s, s.client() as client:
        r = await client.put("/v1/sessions/a", json={})
        assert r.status_code == 405 and set(r.headers["allow"].split(", ")) == {"GET", "DELETE"}
        r = await client.get("/v1/sessions/a/turns")
        assert r.status_code == 405 and r.headers["allow"] == "POST"
        assert (await client.post("/metrics")).status_code == 405
        assert (await client.get("/v1/nowhere")).status_code == 404


@pytest.mark.parametrize("cursor", ["nope", "[1]", '[1, "a", 3]', "%ff", '["x", 1]'])
async def test_a_malformed_cursor_is_400_with_a_body(cursor: str) -> None:
    """Fails on df941de: it was a 500 with an empty body."""
    async with served() as s, s.client() as client:
        r = await client.get(f"/v1/sessions?cursor={cursor}")
        assert r.status_code == 400 and r.json()["error_kind"] == "bad_command"


async def test_every_answer_carries_the_security_headers() -> None:
    """Fails on df941de: no Content-Security-Policy, X-Frame-Options or nosniff."""
    async with served() as s, s.client() as client:
        answers = [
            await client.get("/healthz"),
            await client.get("/v1/sessions"),
            await client.get("/v1/sessions/none"),
            await client.post("/v1/sessions/a/turns", json={"text": "hi"}, headers=JSON),
            await client.post("/v1/sessions/a/turns", json={"text": "hi"}),  # a stream
            await client.get("/observer"),
            await client.get("/metrics"),
        ]
        for r in answers:
            assert r.headers["x-content-type-options"] == "nosniff", r.url
            assert r.headers["x-frame-options"] == "DENY"
            assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
            assert r.headers["cache-control"] == "no-store"
