"""Import cost: an agent without MCP imports none of ``agcore_actors.mcp``, and our MCP
client imports none of the official SDK (only OAuth and ``serve --mcp`` do, when used).
Checked in a fresh interpreter, so that no other test's imports count."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.peers import ROOT

PROBE = """
import json, sys
import agcore_actors, agcore_actors.agent, agcore_actors.tools, agcore_actors.llm
before = sorted(m for m in sys.modules if m.startswith("agcore_actors.mcp"))
import agcore_actors.mcp
sdk = sorted(m for m in sys.modules if m.split(".")[0] in ("mcp", "mcp_types"))
print(json.dumps({"mcp_before": before, "sdk": sdk}))
"""


def test_an_agent_without_mcp_imports_none_of_it_and_the_client_none_of_the_sdk() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    ).stdout
    seen = json.loads(out)
    assert seen == {"mcp_before": [], "sdk": []}
