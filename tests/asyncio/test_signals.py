"""Ctrl-C and SIGTERM of an asyncio bot process end both loops in order: the host drains
(a turn in flight is cancelled and committed), then the program exits."""

from __future__ import annotations

import signal

import pytest

from tests.asyncio.signalled import signalled


@pytest.mark.parametrize(
    ("sig", "codes"),
    [(signal.SIGTERM, (143,)), (signal.SIGINT, (-signal.SIGINT, 130))],
)
def test_a_signal_drains_the_host_then_ends_the_program(
    sig: signal.Signals, codes: tuple[int, ...]
) -> None:
    code, out, err = signalled("tests.asyncio.signal_worker", sig)
    assert out.splitlines() == ["turn cancelled", "host stopped"], err
    assert code in codes, err
