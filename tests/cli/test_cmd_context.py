"""The ``context`` command group, run in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agcore_actors.cli import main

CONVERSATION = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "Sunny and warm, " * 20},
    {"role": "user", "content": "And tomorrow?"},
]


def test_estimate_and_compact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "conv.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in CONVERSATION), encoding="utf-8")
    assert main(["context", "estimate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "(5 messages, heuristic estimate)" in out and "tool:" in out

    array = tmp_path / "conv.json"
    array.write_text(json.dumps(CONVERSATION), encoding="utf-8")
    status = main(["context", "compact", str(array), "--budget", "80", "--keep-recent", "1"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    compacted = json.loads(captured.out)
    assert compacted[3] == {"role": "tool", "content": "[pruned]", "tool_call_id": "c1"}
    assert "fits" in captured.err and "microcompact" in captured.err
    # Over budget even after compaction: exit status 1.
    assert main(["context", "compact", str(array), "--budget", "5"]) == 1


def test_json_results_parse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    array = tmp_path / "conv.json"
    array.write_text(json.dumps(CONVERSATION), encoding="utf-8")
    assert main(["context", "estimate", str(array), "--json"]) == 0
    estimate = json.loads(capsys.readouterr().out)
    assert estimate["messages"] == 5 and estimate["estimator"] == "heuristic estimate"
    assert estimate["tokens"] == sum(estimate["by_role"].values()) > 0

    args = ["context", "compact", str(array), "--keep-recent", "1", "--json"]
    assert main([*args, "--budget", "80"]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert err == ""
    assert result["messages"][3]["content"] == "[pruned]" and result["report"]["fits"] is True
    assert main([*args, "--budget", "5"]) == 1  # over budget: still the JSON, status 1
    assert json.loads(capsys.readouterr().out)["report"]["fits"] is False


def test_a_file_that_is_not_a_conversation_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(CONVERSATION[0]) + "\n{nope\n", encoding="utf-8")
    assert main(["context", "estimate", str(bad)]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"agcore-actors context estimate: bad_input: {bad}, line 2: ")
