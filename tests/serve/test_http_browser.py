"""A web page on another origin, opened in headless Chromium (Debian's ``chromium``), tries
to run a turn on the operator's loopback server the ways a page can: a ``no-cors`` POST
with a ``text/plain`` body, a form-like ``urlencoded`` one, and a CORS request that
carries the token itself. None runs a turn; the page sees that its requests did reach
the server (so the test would see a turn if one ran)."""

from __future__ import annotations

import shutil

import pytest
import trio

from tests.serve.runtime import served

CHROMIUM = shutil.which("chromium") or "chromium"
pytestmark = pytest.mark.slow

PAGE = """<!doctype html><html><body><script>
const target = "%(url)s/v1/sessions/victim/turns";
const body = JSON.stringify({text: "run me"});
const tries = [
  fetch(target, {method: "POST", mode: "no-cors", headers: {"content-type": "text/plain"}, body}),
  fetch(target, {method: "POST", mode: "no-cors",
                 headers: {"content-type": "application/x-www-form-urlencoded"}, body}),
  fetch(target, {method: "POST", mode: "cors", body,
                 headers: {"content-type": "application/json",
                           "authorization": "Bearer %(token)s"}}),
];
Promise.allSettled(tries).then((results) => {
  document.body.dataset.done = results.map((r) => r.status).join(",");
});
</script></body></html>"""


async def page_server(html: bytes, task_status: trio.TaskStatus[int]) -> None:
    """Serves ``html`` to every request on a free port of 127.0.0.1: another origin."""

    async def answer(stream: trio.SocketStream) -> None:
        async with stream:
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = await stream.receive_some()
                if not chunk:
                    return
                request += chunk
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nconnection: close\r\n"
            await stream.send_all(head + b"content-length: %d\r\n\r\n" % len(html) + html)

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(answer, listeners)


async def test_a_page_on_another_origin_cannot_run_a_turn() -> None:
    """Fails on df941de: the no-cors text/plain POST ran a turn and committed it."""
    async with served() as s, s.client() as client, trio.open_nursery() as nursery:
        seen: list[str] = []
        original = s.host.submit

        def counting(session: str, *args: object, **kwargs: object) -> object:
            seen.append(session)
            return original(session, *args, **kwargs)  # type: ignore[arg-type]

        s.host.submit = counting  # type: ignore[method-assign,assignment]
        html = (PAGE % {"url": s.url, "token": s.config.token or ""}).encode()
        port = await nursery.start(page_server, html)
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000"]
        result = await trio.run_process(
            [CHROMIUM, *flags, "--dump-dom", f"http://127.0.0.1:{port}/"],
            capture_stdout=True,
            capture_stderr=True,
        )
        dom = result.stdout.decode()
        # no-cors requests reached the server and got an (opaque) answer; the CORS one
        # failed its preflight
        assert 'data-done="fulfilled,fulfilled,rejected"' in dom, dom[-500:]
        assert seen == []
        assert (await client.get("/v1/sessions/victim")).status_code == 404
        nursery.cancel_scope.cancel()
