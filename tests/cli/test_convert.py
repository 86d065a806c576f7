"""Typed converters: each bad value is refused (a usage error), each good one kept."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agcore_actors.cli._convert import (
    existing_file,
    http_url,
    int_at_least,
    json_object,
    key_value,
    non_negative_float,
    positive_float,
)


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
