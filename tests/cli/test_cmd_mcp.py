"""The ``agcore-actors mcp`` CLI group against the third-party mcp-server-time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agcore_actors.cli", "mcp", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_tools_and_call_inline(peers: Any) -> None:
    server = ["--", peers.time_server(), "--local-timezone", "UTC"]
    listed = cli("tools", *server)
    assert listed.returncode == 0, listed.stderr
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == [
        "get_current_time",
        "convert_time",
    ]
    called = cli("call", "get_current_time", '{"timezone": "UTC"}', *server)
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["timezone"] == "UTC"

    listed_json = cli("tools", "--json", *server)
    assert listed_json.returncode == 0, listed_json.stderr
    assert [t["name"] for t in json.loads(listed_json.stdout)] == [
        "get_current_time",
        "convert_time",
    ]
    called_json = cli("call", "get_current_time", '{"timezone": "UTC"}', "--json", *server)
    assert called_json.returncode == 0, called_json.stderr
    result = json.loads(called_json.stdout)
    assert result["is_error"] is False and json.loads(result["text"])["timezone"] == "UTC"


def test_call_from_mcp_servers_config(peers: Any, tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "time": {"command": peers.time_server(), "args": ["--local-timezone", "UTC"]}
                }
            }
        )
    )
    args = '{"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}'
    ok = cli("call", "convert_time", args, "--config", str(config), "--server", "time")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["target"]["datetime"].endswith("T21:00:00+09:00")
    failed = cli("call", "get_current_time", '{"timezone": "Nowhere/X"}', "--config", str(config))
    assert failed.returncode == 1 and "Invalid timezone" in failed.stdout
    assert failed.stderr == (
        "agcore-actors mcp call: tool_error: tool 'get_current_time' reported an error\n"
    )
    missing = cli("tools", "--config", str(config), "--server", "nope")
    assert missing.returncode == 2 and "no server 'nope'" in missing.stderr
    assert len(missing.stderr.splitlines()) == 1
    bad = cli("call", "x", "[1]", "--config", str(config))
    assert bad.returncode == 2
