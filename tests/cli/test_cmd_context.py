"""The ``context`` and ``prompt`` command groups, run in-process."""

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


def test_prompt_render(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parts = tmp_path / "partials"
    parts.mkdir()
    (parts / "sig.tpl").write_text("-- {{name}}", encoding="utf-8")
    main_tpl = tmp_path / "mail.tpl"
    main_tpl.write_text("Dear {{#if who}}{{who}}{{else}}friend{{/if}}\n{{> sig}}", encoding="utf-8")
    args = ["prompt", "render", str(main_tpl), "--seed-syntax", "--partials", str(parts)]
    assert main([*args, "--var", "name=Ann"]) == 0
    assert capsys.readouterr().out == "Dear friend\n-- Ann"
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "template 'sig', line 1" in err and "'name' is undefined" in err
