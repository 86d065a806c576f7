"""examples/fastapi_app.py: uvicorn serves turns from the embedded host over real HTTP,
many at once; SIGINT and SIGTERM end uvicorn, then the host, in order."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx2
import pytest

from tests.examples.model import EXAMPLES, ROOT, answer, bodies
from tests.peers.fault_server import FaultServer


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _start(base_url: str, port: int) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_MODEL": "test-model",
    }
    return subprocess.Popen(
        [sys.executable, str(EXAMPLES / "fastapi_app.py"), str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_up(url: str, child: subprocess.Popen[str]) -> None:
    for _ in range(600):
        assert child.poll() is None, child.communicate()
        try:
            httpx2.get(url, timeout=1.0)
            return
        except httpx2.TransportError:
            time.sleep(0.05)
    raise AssertionError("the app did not come up")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_uvicorn_serves_turns_from_the_embedded_host(
    fault_server: FaultServer, stop: signal.Signals
) -> None:
    base, scenario = fault_server.script(answer("Hel", "lo!", pause=0.05))
    port = _free_port()
    child = _start(base, port)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_up(url + "/docs", child)
        with httpx2.Client(base_url=url, timeout=30.0) as client:

            def chat(n: int) -> dict[str, str]:
                reply = client.post(f"/chats/c{n % 10}", json={"text": f"hi {n}"})
                assert reply.status_code == 200, reply.text
                body: dict[str, str] = reply.json()
                return body

            with ThreadPoolExecutor(20) as pool:
                answers = list(pool.map(chat, range(40)))
            assert answers == [{"status": "completed", "text": "Hello!"}] * 40
            streamed = client.get("/chats/s1/stream", params={"text": "stream please"})
            assert streamed.text == "Hello!"
            # One session per chat: every request shows the model one chat's turns only,
            # and each chat's last one all four of its turns (in their arrival order).
            users = [
                [m["content"] for m in b["messages"] if m["role"] == "user"]
                for b in bodies(scenario)
                if b["messages"][-1]["content"].startswith("hi ")
            ]
            assert all(len({int(u.split()[1]) % 10 for u in turn}) == 1 for turn in users)
            longest = {int(turn[0].split()[1]) % 10: turn for turn in users if len(turn) == 4}
            assert {c: sorted(t) for c, t in longest.items()} == {
                c: sorted(f"hi {c + 10 * k}" for k in range(4)) for c in range(10)
            }
            # A turn in flight when the signal comes is finished first (uvicorn waits
            # for its requests), then the host drains and stops.
            with ThreadPoolExecutor(1) as pool:
                late = pool.submit(client.post, "/chats/late", json={"text": "late"})
                while not any(b["messages"][-1]["content"] == "late" for b in bodies(scenario)):
                    assert not late.done(), late.result()
                    time.sleep(0.005)  # until its turn has reached the model
                child.send_signal(stop)
                assert late.result().json() == {"status": "completed", "text": "Hello!"}
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    # uvicorn re-raises the signal it handled once it has shut down (so SIGTERM's
    # exit status is the signal's); what counts is that the host stopped before.
    assert child.returncode in (0, -stop), err
    assert out.splitlines() == ["host ready", "host stopped"]
