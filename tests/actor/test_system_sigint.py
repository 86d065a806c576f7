"""A real SIGINT ends a program that runs an ActorSystem, through the ordered shutdown."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.peers import default_sigint, stop_process

ROOT = Path(__file__).resolve().parents[2]


def read_line(process: subprocess.Popen[bytes], timeout: float = 20.0) -> str:
    """The next line of the child's stdout (a failure, not a hang, after ``timeout``)."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    if not ready:
        pytest.fail(f"the child printed nothing for {timeout} s")
    line = process.stdout.readline().decode().strip()
    if not line:
        stderr = process.stderr.read().decode() if process.stderr else ""
        raise AssertionError(f"the child ended early ({process.wait()}): {stderr[-800:]}")
    return line


def start(mode: str) -> subprocess.Popen[bytes]:
    """Run ``tests.actor.sigint_child <mode>`` with this worktree first on the path."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "tests.actor.sigint_child", mode],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=default_sigint,
        bufsize=0,  # unbuffered: select() in read_line sees every line not yet read
    )


@pytest.mark.parametrize("mode", ["busy", "idle"])
def test_sigint_exits_within_a_second_stopping_actors_in_reverse_order(mode: str) -> None:
    process = start(mode)
    try:
        assert read_line(process) == "ready"
        if mode == "busy":
            assert read_line(process) == "busy"
        else:
            time.sleep(0.2)  # let every task park
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        try:
            status = process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pytest.fail("the program was still running 5 s after SIGINT")
        took = time.monotonic() - sent
        assert process.stdout is not None
        rest = process.stdout.read().decode().splitlines()
    finally:
        stop_process(process)
    assert rest == [
        "stop c KeyboardInterrupt",
        "stop b KeyboardInterrupt",
        "stop a KeyboardInterrupt",
        "interrupted",
    ]
    assert status == 130
    assert took < 1.0


def test_a_second_sigint_cuts_the_ordered_shutdown_short() -> None:
    process = start("stubborn")
    try:
        assert read_line(process) == "ready"
        time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        assert read_line(process) == "stopping c"  # c's on_stop would take 30 s
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        status = process.wait(timeout=5)
        took = time.monotonic() - sent
        assert process.stdout is not None
        rest = process.stdout.read().decode().splitlines()
    finally:
        stop_process(process)
    # No order any more: what is left is cancelled at once. Whether a and b see that
    # cancellation (ActorStopped) or finish the graceful stop the supervisor may already
    # have sent them once c's on_stop was cut (KeyboardInterrupt, the stop's reason) is a
    # race between the two; either way they stop at once.
    lines = sorted(rest[:3])
    assert lines[0] in ("stop a ActorStopped", "stop a KeyboardInterrupt"), lines
    assert lines[1] in ("stop b ActorStopped", "stop b KeyboardInterrupt"), lines
    assert lines[2] == "stop c KeyboardInterrupt"
    assert rest[3:] == ["interrupted"]
    assert status == 130
    assert took < 1.0
