"""The ``prompt`` command group, run in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agcore_actors.cli import main


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
    assert len(err.splitlines()) == 1 and err.startswith("agcore-actors prompt render: ")
    handlebars = [a if a != "--seed-syntax" else "--handlebars" for a in args]
    assert main([*handlebars, "--var", "name=Bo", "--var", "who=Cy"]) == 0
    assert capsys.readouterr().out == "Dear Cy\n-- Bo"


def test_render_json_and_vars_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    template = tmp_path / "hi.j2"
    template.write_text("Hi {{ name }} from {{ city }}", encoding="utf-8")
    variables = tmp_path / "vars.json"
    variables.write_text(json.dumps({"name": "Ann", "city": "Oslo"}), encoding="utf-8")
    args = ["prompt", "render", str(template), "--vars-json", str(variables)]
    assert main([*args, "--var", "city=Rome", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"template": "hi.j2", "text": "Hi Ann from Rome"}
