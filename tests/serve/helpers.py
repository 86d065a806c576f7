"""Peers of the serve tests: the fast fake OpenAI server in its own process, a model
endpoint that never answers, the ``serve`` command as a child process, and the store
read back after it exited."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trio

from agcore_actors import ActorSystem
from agcore_actors.store import SessionSnapshot, SqliteSessions, session_store_spec
from agcore_actors.store import messages as sm

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "benchmarks" / "fake_openai.py"
#: The token ``serve --http`` children get (AGCORE_SERVE_TOKEN), and its header.
TOKEN = "test-token-0123456789abcdef"
AUTH = {"authorization": f"Bearer {TOKEN}"}


@contextmanager
def fake_openai() -> Iterator[str]:
    """The fast fake server's base URL while it runs."""
    process = subprocess.Popen([sys.executable, str(FAKE)], stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


@contextmanager
def silent_model() -> Iterator[str]:
    """A base URL whose server takes connections and requests and never answers: every
    turn against it stays in flight until it is cancelled."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4096)  # never accepted: the kernel queues the connections
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"


def serve_env(base_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(ROOT),
        OPENAI_BASE_URL=base_url,
        OPENAI_MODEL="fake",
        OPENAI_API_KEY="sk-test",
        AGCORE_SERVE_TOKEN=TOKEN,
    )
    return env


def start_serve(base_url: str, *args: str) -> subprocess.Popen[bytes]:
    """``agcore-actors serve ARGS`` as a child process with pipes on all three streams."""
    return subprocess.Popen(
        [sys.executable, "-m", "agcore_actors.cli", "serve", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=serve_env(base_url),
    )


def lines(out: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.decode().splitlines() if line.strip()]


def commands(*objs: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objs)


def stored(path: Path, sessions: list[str]) -> dict[str, SessionSnapshot]:
    """Every named session as exported from the SQLite store at ``path``."""

    async def read() -> dict[str, SessionSnapshot]:
        async with ActorSystem() as system:
            ref = await system.root.start_child(
                session_store_spec("store", backend=SqliteSessions(str(path)))
            )
            return {s: await ref.ask(sm.ExportSession(s)) for s in sessions}

    return trio.run(read)
