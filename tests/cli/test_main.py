"""One convention for every command group: exit status, one-line errors, --version, help.

In-process through :func:`agcore_actors.cli.main` (which never raises for a covered
error and never calls ``sys.exit``), plus one real process to see what a shell sees.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agcore_actors
from agcore_actors.cli import main
from agcore_actors.memory.lowlevel import SqliteBackend

GROUPS = ("context", "demo", "llm", "mcp", "memory", "prompt")


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory with a conversation, a template and a memory file; no LLM env."""
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "ANTHROPIC_")):
            monkeypatch.delenv(name)
    (tmp_path / "conv.json").write_text(json.dumps([{"role": "user", "content": "hi"}]))
    (tmp_path / "t.tpl").write_text("Hello {{ name }}")
    SqliteBackend(tmp_path / "memory.db").close()
    monkeypatch.chdir(tmp_path)
    return tmp_path


# (argv, the command named in the error line)
BAD_VALUES = [
    (["context", "estimate", "missing.json"], "context estimate"),
    (["context", "compact", "conv.json", "--budget", "-1"], "context compact"),
    (
        ["context", "compact", "conv.json", "--budget", "10", "--keep-recent", "x"],
        "context compact",
    ),
    (["llm", "complete", "hi", "--max-tokens", "-5"], "llm complete"),
    (["llm", "complete", "hi", "--base-url", "not-a-url"], "llm complete"),
    (
        ["llm", "complete", "hi", "--base-url", "http://127.0.0.1:9", "--timeout", "0"],
        "llm complete",
    ),
    (["llm", "complete", "hi"], "llm complete"),  # no provider configured
    (["mcp", "tools", "--url", "not-a-url"], "mcp tools"),
    (["mcp", "tools", "--timeout", "-1", "--", "true"], "mcp tools"),
    (["mcp", "call", "echo", "[1]", "--url", "http://127.0.0.1:9/mcp"], "mcp call"),
    (["mcp", "tools", "--header", "novalue", "--url", "http://127.0.0.1:9/mcp"], "mcp tools"),
    (["memory", "stats", "missing.db"], "memory stats"),
    (["memory", "search", "memory.db", "q", "-n", "0"], "memory search"),
    (["prompt", "render", "missing.tpl"], "prompt render"),
    (["prompt", "render", "t.tpl", "--var", "novalue"], "prompt render"),
    (["demo", "--jobs", "0"], "demo"),
    (["demo", "--crash-every", "-3"], "demo"),
    (["context"], "context"),
    ([], ""),
    (["nosuchgroup"], ""),
]


@pytest.mark.parametrize(("argv", "command"), BAD_VALUES, ids=[" ".join(a) for a, _ in BAD_VALUES])
def test_a_bad_value_is_a_usage_error_on_one_line(
    argv: list[str], command: str, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(argv)
    out, err = capsys.readouterr()
    assert status == 2, err
    assert out == ""
    lines = err.splitlines()
    prefix = " ".join(["agcore-actors", command]).strip()
    assert len(lines) == 1 and lines[0].startswith(f"{prefix}: usage: "), err


def test_a_missing_file_in_a_real_process_exits_2_without_a_traceback(files: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "agcore_actors.cli", "context", "estimate", "missing.json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "agcore-actors context estimate: usage: argument file: no such file: 'missing.json'\n"
    )


def test_version_is_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"agcore-actors {agcore_actors.__version__}\n"


@pytest.mark.parametrize("group", GROUPS)
def test_each_group_help_shows_examples(group: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([group, "--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:" in out
    assert f"  agcore-actors {group} " in out.split("examples:", 1)[1]
