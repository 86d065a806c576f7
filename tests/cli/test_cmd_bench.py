"""``agcore-actors bench list|run``: the scripts of benchmarks/, found and run by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from agcore_actors.cli import main

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_list_names_every_benchmark_with_its_first_docstring_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in lines]
    helpers = {"fake_openai", "soak_check", "soak_driver", "soak_rig"}
    expected = sorted(
        p.stem
        for p in BENCHMARKS.glob("*.py")
        if p.stem not in helpers and not p.stem.startswith("_")
    )
    assert names == expected
    assert any(line.startswith("local_model ") and "correctness" in line for line in lines)


def test_run_runs_the_named_script_with_its_arguments_and_exits_with_its_status(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "echo.py").write_text(
        '"""Echo."""\nimport sys\nprint("args", sys.argv[1:])\nsys.exit(3)\n'
    )
    assert main(["bench", "run", "echo", "--dir", str(tmp_path), "--", "--quick", "x"]) == 3
    assert capfd.readouterr().out == "args ['--quick', 'x']\n"


def test_an_unknown_benchmark_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "one.py").write_text('"""One."""\n')
    assert main(["bench", "run", "two", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == "agcore-actors bench run: usage: no benchmark 'two'; there are: one\n"


def test_no_benchmarks_directory_says_they_come_from_a_checkout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "list", "--dir", str(tmp_path / "nowhere")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("agcore-actors bench list: usage: no benchmarks directory: ")
    assert "source checkout" in line and "--dir" in line
