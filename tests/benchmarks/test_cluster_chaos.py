"""The chaos test at a small size (issue 27), with real processes: 3 ``serve --http``
hosts on a fresh PostgreSQL database and the fake model, 20 sessions whose clients
retry through random hosts with the same turn ids, while hosts are SIGKILLed and
restarted, SIGSTOPped past their lease and resumed, and (as root, where ``ip netns``
works) one is cut off from PostgreSQL and the other hosts and rejoined. The judge reads
PostgreSQL directly (benchmarks/cluster_check.py). The cost figures run first, small. The
full size is
``python benchmarks/cluster.py --hosts 3 --sessions 200 --turns 20 --kills 10``."""

from __future__ import annotations

import ast
from collections.abc import Callable
from types import ModuleType

import pytest

from tests.conftest import BENCHMARKS


@pytest.mark.slow
@pytest.mark.exclusive  # real processes and their timing: alone on the machine
def test_no_acknowledged_turn_is_lost_or_run_twice_when_hosts_die_stall_or_are_cut_off(
    load_benchmark: Callable[[str], ModuleType],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    cluster = load_benchmark("cluster")
    ttl = 3.0
    argv = ["--quick", "--lease-ttl", str(ttl)]
    assert cluster.main(argv) == 0
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    fields = dict(item.split("=") for item in last.split())
    assert set(fields) == {"lost", "duplicated", "fenced_writes_accepted", "invalid",
                           "max_failover_s"}, out  # fmt: skip
    assert fields["lost"] == fields["duplicated"] == "0", out
    assert fields["fenced_writes_accepted"] == fields["invalid"] == "0", out
    # Every session was served again after its owner's death (no hang, no orphan). How
    # soon (lease TTL + 2 s) is wall-clock time that a loaded machine stretches: the full
    # size benchmark measures it (docs/performance.md), this test bounds only a hang.
    assert float(fields["max_failover_s"]) <= 10 * ttl, out
    # Every turn answered: acknowledged, or (issue 30) 409 turn_exists when a turn in flight
    # at a fault was retried after it had begun; none abandoned.
    turns = ast.literal_eval(out.split("- turns: ", 1)[1].split(";", 1)[0])
    assert set(turns) <= {"acked", "exists"} and sum(turns.values()) == 120, out
    # The cost figures ran first, in the same run (no figure is asserted).
    assert "| setup | turns | host CPU ms/turn |" in out and "| SQLite, 1 host |" in out
    assert "| 2 hosts, forwarded |" in out and "failover after SIGKILL: p50" in out
