"""The convention's parts: typed converters, the error line, the top-level handler."""

from __future__ import annotations

import argparse
import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agcore_actors.cli._common import (
    FAILURE,
    INTERRUPTED,
    USAGE,
    error_line,
    existing_file,
    http_url,
    int_at_least,
    json_object,
    key_value,
    non_negative_float,
    parse,
    positive_float,
    report,
    with_hint,
)
from agcore_actors.cli._errors import BadInput, CliError, UsageError
from agcore_actors.cli._main import _build_parser


@pytest.mark.parametrize(
    ("convert", "text"),
    [
        (int_at_least(1), "0"),
        (int_at_least(0), "-1"),
        (int_at_least(-1), "-2"),
        (int_at_least(0), "1.5"),
        (positive_float, "0"),
        (positive_float, "-0.5"),
        (positive_float, "nan"),
        (non_negative_float, "-1"),
        (non_negative_float, "inf"),
        (http_url, "not-a-url"),
        (http_url, "localhost:8080/v1"),
        (http_url, "ftp://example.com"),
        (http_url, "http://"),
        (http_url, "http://127.0.0.1:99999/v1"),
        (key_value, "novalue"),
        (key_value, "=value"),
        (json_object, "[1]"),
        (json_object, "{nope"),
    ],
)
def test_converters_refuse_bad_values(convert: object, text: str) -> None:
    assert callable(convert)
    with pytest.raises(argparse.ArgumentTypeError):
        convert(text)


def test_converters_accept_good_values(tmp_path: Path) -> None:
    assert int_at_least(-1)("-1") == -1 and int_at_least(1)("3") == 3
    assert positive_float("inf") == float("inf") and non_negative_float("0") == 0.0
    assert http_url("https://api.example.com/v1") == "https://api.example.com/v1"
    assert http_url("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
    assert key_value("A=b=c") == ("A", "b=c") and key_value("A=") == ("A", "")
    assert json_object('{"a": 1}') == {"a": 1}
    file = tmp_path / "f"
    file.write_text("x")
    assert existing_file(str(file)) == file
    with pytest.raises(argparse.ArgumentTypeError, match="directory"):
        existing_file(str(tmp_path))


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
