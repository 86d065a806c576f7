"""The convention's parts: the error line, the top-level handler, parsing."""

from __future__ import annotations

import argparse
import errno
import os
import subprocess
import sys

import pytest

from agcore_actors.cli._common import (
    FAILURE,
    INTERRUPTED,
    USAGE,
    error_line,
    parse,
    report,
    with_hint,
)
from agcore_actors.cli._errors import BadInput, CliError, UsageError
from agcore_actors.cli._main import _build_parser


def test_error_line_is_one_line_with_kind_and_hints() -> None:
    assert (
        error_line("agcore-actors x", CliError("disk\n  full")) == "agcore-actors x: cli: disk full"
    )
    assert error_line("p", BadInput("bad")) == "p: bad_input: bad"
    missing = FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), "a.json")
    assert error_line("p", missing) == "p: FileNotFoundError: a.json: No such file or directory"
    hinted = with_hint(BadInput("no"), "try\nthat")
    assert error_line("p", hinted) == "p: bad_input: no (hint: try that)"


def test_report_gives_each_covered_error_its_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert report("p", UsageError("bad flag")) == USAGE
    assert report("p", LookupError("x"), usage_errors=(LookupError,)) == USAGE
    assert report("p", BadInput("bad data")) == FAILURE
    assert report("p", PermissionError(errno.EACCES, "Permission denied", "f")) == FAILURE
    assert report("p", ValueError("not JSON")) == FAILURE
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "p: usage: bad flag",
        "p: LookupError: x",
        "p: bad_input: bad data",
        "p: PermissionError: f: Permission denied",
        "p: ValueError: not JSON",
    ]


def test_report_leaves_bugs_to_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert report("p", RuntimeError("a bug")) is None
    assert report("p", ExceptionGroup("g", [BadInput("x"), TypeError("bug")])) is None
    assert capsys.readouterr().err == ""


def test_an_interrupt_anywhere_in_a_group_is_130(capsys: pytest.CaptureFixture[str]) -> None:
    group = BaseExceptionGroup("g", [BadInput("x"), BaseExceptionGroup("h", [KeyboardInterrupt()])])
    assert report("p", group) == INTERRUPTED
    assert capsys.readouterr().err == "p: interrupted\n"
    both = ExceptionGroup("g", [BadInput("one"), UsageError("two")])
    assert report("p", both) == USAGE
    assert capsys.readouterr().err == "p: bad_input: one\np: usage: two\n"


def test_a_stdio_command_after_options_is_taken_whole() -> None:
    argv = ["mcp", "call", "t", '{"a": 1}', "--json", "--", "server", "--flag", "-v"]
    args = _build_parser().parse_known_args(argv)
    assert args[1] == ["--", "server", "--flag", "-v"]  # what argparse alone makes of it
    parsed = parse(_build_parser(), argv)
    assert isinstance(parsed, argparse.Namespace)
    assert parsed.server_command == ["server", "--flag", "-v"] and parsed.json is True
    assert parsed.arguments == {"a": 1}


def test_a_closed_stdout_ends_quietly_with_status_1() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen(
        [sys.executable, "-m", "agcore_actors.cli", "demo", "--jobs", "200"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.readline()
        process.stdout.close()  # the reader goes away, as `| head -1` does
        err = process.stderr.read()
        assert process.wait(timeout=60) == 1
    assert err == b""
