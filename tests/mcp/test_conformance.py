"""The official MCP conformance framework's client scenarios against our client.

``tests/peers/install_conformance.sh`` installs ``@modelcontextprotocol/conformance`` and
the Node 22 it needs into ``.peers/conformance``. Every client scenario the framework
lists runs against ``tests/mcp/conformance/client.py`` (our :func:`open_client`); the
test fails when fewer than :data:`PASSING` pass or when a scenario outside
:data:`KNOWN_FAILING` fails, so the count can only go up. When a change makes a known
failure pass, move it out of :data:`KNOWN_FAILING` and raise :data:`PASSING`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.peers import ROOT, installed, stop_process

pytestmark = pytest.mark.slow

SUITE_VERSION = "0.1.16"
#: Client scenarios of the framework at SUITE_VERSION.
SCENARIOS = 26
#: Scenarios that pass today; the test fails when fewer do.
PASSING = 24
#: Scenarios that fail today, each with the reason (the framework's failed check).
KNOWN_FAILING = {
    "auth/2025-03-26-oauth-metadata-backcompat": (
        "the SDK's provider rejects the server's metadata: its issuer (.../oauth) is not "
        "the URL it was fetched for (RFC 8414 3.3); the SDK fails it the same way"
    ),
    "auth/cross-app-access-complete-flow": (
        "enterprise-managed authorization (SEP-990, token exchange then jwt-bearer) is not offered"
    ),
}
#: Milliseconds the framework gives our client per scenario.
SCENARIO_TIMEOUT_MS = 15_000
WORKERS = 3


def suite() -> tuple[Path, Path]:
    base = installed("conformance", installer="install_conformance.sh")
    stamp = (base / ".installed").read_text()
    assert f"conformance@{SUITE_VERSION}" in stamp, stamp
    cli = base / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    return base / "node", cli


def client_scenarios(node: Path, cli: Path) -> list[str]:
    listing = subprocess.run(
        [node, cli, "list"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    section = listing.split("Client scenarios", 1)[1]
    return re.findall(r"^\s*-\s+(\S+)", section, re.MULTILINE)


def run_scenario(node: Path, cli: Path, scenario: str) -> tuple[str, bool, str]:
    command = f"{sys.executable} -m tests.mcp.conformance.client"
    argv: list[str | Path] = [node, cli, "client", "--command", command, "--scenario", scenario]
    argv += ["--timeout", str(SCENARIO_TIMEOUT_MS)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = process.communicate(timeout=SCENARIO_TIMEOUT_MS / 1000 + 60)
    except subprocess.TimeoutExpired:
        stop_process(process, grace=2.0)
        return scenario, False, "the framework did not finish"
    finally:
        stop_process(process, grace=2.0)
    text = out.decode(errors="replace")
    failed = re.findall(r"^\s+- (\S+: .*)$", text.split("Failed Checks:", 1)[-1], re.MULTILINE)
    return scenario, process.returncode == 0, "; ".join(failed[:3]) or text[-300:]


def test_the_official_client_scenarios_pass_at_least_as_before() -> None:
    node, cli = suite()
    scenarios = client_scenarios(node, cli)
    assert len(scenarios) == SCENARIOS, scenarios
    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(lambda s: run_scenario(node, cli, s), scenarios))
    passed = sorted(s for s, ok, _ in results if ok)
    print("passing:", ", ".join(passed))
    failed = {s: why for s, ok, why in results if not ok}
    report = "\n".join(f"  {s}: {why}" for s, why in sorted(failed.items()))
    print(f"conformance: {len(passed)} of {len(scenarios)} client scenarios pass")
    print(f"failing:\n{report}")
    regressions = sorted(set(failed) - set(KNOWN_FAILING))
    assert not regressions, f"scenarios that passed before now fail:\n{report}"
    assert len(passed) >= PASSING, f"{len(passed)} pass, {PASSING} expected:\n{report}"
