"""Ctrl-C of a script that uses the blocking host: the turn it waits for is cancelled and
committed before KeyboardInterrupt comes out, then the host stops, then the script ends."""

from __future__ import annotations

import signal

from tests.asyncio.signalled import signalled


def test_ctrl_c_commits_the_turn_then_stops_the_host_then_ends_the_script() -> None:
    code, out, err = signalled("tests.blocking.signal_worker", signal.SIGINT)
    assert out.splitlines() == ["interrupted: running None, turns 1", "host stopped"], err
    assert code in (-signal.SIGINT, 130), err
    assert err.rstrip().endswith("KeyboardInterrupt")
