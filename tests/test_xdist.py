"""The suite under pytest-xdist (``./dev test`` runs it so): a test marked ``exclusive``
runs while no other worker runs a test, and the others still run side by side.

A real pytest with two workers runs a small suite that imports the fixture of
tests/conftest.py; each test writes when it starts and ends to one log.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

INNER = """
import time

import pytest

from tests.conftest import _exclusive_under_xdist  # noqa: F401  (the fixture under test)

LOG = {log!r}


def note(what: str) -> None:
    with open(LOG, "a") as log:
        log.write(what + "\\n")


def hold(name: str) -> None:
    note(f"start {{name}}")
    time.sleep(0.3)  # long enough for the other worker to start a test meanwhile
    note(f"end {{name}}")


@pytest.mark.parametrize("n", range(8))
def test_plain(n: int) -> None:
    hold(f"plain{{n}}")


@pytest.mark.exclusive
@pytest.mark.parametrize("n", range(3))
def test_alone(n: int) -> None:
    hold(f"alone{{n}}")
"""


@pytest.mark.slow
def test_an_exclusive_test_overlaps_no_other_and_plain_ones_overlap(tmp_path: Path) -> None:
    log = tmp_path / "log"
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_inner.py").write_text(textwrap.dedent(INNER.format(log=str(log))))
    ini = "[pytest]\nmarkers =\n    exclusive: alone\n"
    (suite / "pytest.ini").write_text(ini)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", str(suite)],
        cwd=suite,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        },
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "11 passed" in done.stdout, done.stdout
    running: set[str] = set()
    overlapped = False
    for line in log.read_text().splitlines():
        what, name = line.split()
        if what == "start":
            assert not any(n.startswith("alone") for n in running), (name, running)
            assert not (name.startswith("alone") and running), (name, running)
            running.add(name)
            overlapped |= len(running) > 1
        else:
            running.remove(name)
    assert not running
    # The evidence that two workers ran at all: some plain tests overlapped.
    assert overlapped, log.read_text()
