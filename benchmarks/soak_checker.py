"""``soak.py checker``: the concurrency checker of tests/agent/test_host_checker.py, run
longer than CI runs it.

CI runs a fixed set of 150 scenarios per store (``derandomize``). This runs ``examples``
scenarios per store drawn from ``seed`` (other scenarios than CI's, the same for the same
seed: a failure reproduces with the same command), with the faults named (``all``, or a
comma-separated subset of cancel, ids, store, crash, provider, bug, executor, evict,
restart), in a pytest process of its own (its leak probes count only its own tasks,
threads, fds and processes). A failing scenario is printed as hypothesis found it
(``shrink``: shrunk too, which can take hypothesis' five-minute shrink budget).

The report: what ran, how long it took, whether it passed and, if not, the broken
properties and the failing ``Scenario(...)`` (``violations``: pytest's ``E`` lines) and
pytest's last lines.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TEST = "tests/agent/test_host_checker.py"
STORES = ("memory", "sqlite")
FAULTS = ("cancel", "ids", "store", "crash", "provider", "bug", "executor", "evict", "restart")


def check_arguments(faults: str, stores: str) -> tuple[str, list[str]]:
    """``faults`` and ``stores`` checked (ValueError naming what is wrong)."""
    named = [f for f in faults.split(",") if f]
    unknown = [f for f in named if f != "all" and f not in FAULTS]
    if not named or unknown:
        choices = ",".join(("all", *FAULTS))
        raise ValueError(f"--faults: unknown {unknown or faults!r}; choose from {choices}")
    chosen = [s for s in stores.split(",") if s]
    if not chosen or any(s not in STORES for s in chosen):
        raise ValueError(f"--stores: {stores!r}; choose from {','.join(STORES)}")
    return ",".join(named), chosen


def run_checker(
    examples: int, faults: str, stores: str, seed: int, shrink: bool = False
) -> dict[str, Any]:
    """Run the checker (see the module docstring); its report."""
    named, chosen = check_arguments(faults, stores)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CHECKER_EXAMPLES": str(examples),
        "CHECKER_FAULTS": named,
        "CHECKER_SEED": str(seed),
        "CHECKER_SHRINK": "1" if shrink else "0",
    }
    # No captured logs on a failure (every planted crash logs a warning): the violations
    # and the scenario are what the report needs.
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--show-capture=no"]
    argv.append(TEST)
    argv += ["-k", " or ".join(chosen)]
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    report: dict[str, Any] = {
        "what": "checker",
        "examples_per_store": examples,
        "faults": named,
        "stores": chosen,
        "seed": seed,
        "seconds": round(time.monotonic() - started, 1),
        "pytest_exit": done.returncode,
        "passed": done.returncode == 0,
        "summary": (done.stdout.strip().splitlines() or [""])[-1],
    }
    if done.returncode != 0:
        # pytest's "E" lines: the broken properties, then the failing Scenario(...).
        failure = [line[1:].strip() for line in done.stdout.splitlines() if line[:1] == "E"]
        report["violations"] = failure[:60]
        report["output_tail"] = (done.stdout + done.stderr)[-3000:]
    return report
