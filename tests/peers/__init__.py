"""Real peers of the test suite: where they are installed, and how to run one.

Every test that talks to a real peer (the fault server, the local model server, MCP
servers) goes through this package: a free port on 127.0.0.1, a readiness wait with a
deadline, and a process started in its own process group and always reaped — so a test
that fails half-way leaves no server running.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / ".peers"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def installed(*parts: str, installer: str) -> Path:
    """``.peers/<parts>``, or a RuntimeError naming the installer that makes it."""
    path = PEERS.joinpath(*parts)
    if not path.exists():
        raise RuntimeError(
            f"{path} is missing: run `bash tests/peers/{installer}` (./dev test does)"
        )
    return path


def http_ready(url: str) -> Callable[[], bool]:
    """A readiness probe: ``url`` answers any HTTP status below 500."""

    def probe() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                return int(response.status) < 500
        except urllib.error.HTTPError as error:
            return error.code < 500
        except OSError:
            return False

    return probe


def default_sigint() -> None:
    """A ``preexec_fn``: the child takes SIGINT the way a terminal's Ctrl-C is taken, also
    when the suite runs where SIGINT is ignored (a background job of a non-interactive
    shell passes the ignore on to every program it starts)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop_process(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM the process group, SIGKILL it after ``grace`` seconds, and reap the leader."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue
    for stream in (process.stdout, process.stderr, process.stdin):
        if stream is not None:
            stream.close()


@contextmanager
def running(
    argv: Sequence[str],
    *,
    ready: Callable[[], bool],
    name: str,
    timeout: float = 60.0,
    stderr: bool = True,
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``argv`` in its own process group until ``ready()``; stop and reap it on exit.

    Raises RuntimeError (with the tail of its stderr) when the process exits before it is
    ready or is not ready within ``timeout`` seconds.
    """
    process = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE if stderr else subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            if process.poll() is not None:
                tail = process.stderr.read().decode(errors="replace") if process.stderr else ""
                raise RuntimeError(f"{name} exited with {process.returncode}: {tail[-500:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} was not ready within {timeout:g} s")
            time.sleep(0.1)
        if process.stderr is not None:
            # Nobody reads it from here on: a chatty server must not block on a full pipe.
            process.stderr.close()
            process.stderr = None
        yield process
    finally:
        stop_process(process)
