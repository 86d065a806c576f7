"""The terminal's elicitation form: each field parsed to its schema's type, asked again
when it does not parse, cancelled at the end of input or after too many tries."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from agcore_actors.agent import messages as am
from agcore_actors.cli._elicit_form import ATTEMPTS, fields_of, parse_field, prompting_elicitor

SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Your name"},
            "age": {"type": "integer"},
            "ok": {"type": "boolean"},
            "size": {"type": "string", "enum": ["s", "m"]},
            "note": {"type": "string"},
        },
        "required": ["name", "age", "ok", "size"],
    }
)


def event(schema: str = SCHEMA) -> am.ElicitationRequested:
    return am.ElicitationRequested(
        elicitation_id="e1", server="srv", message="Who?", schema=schema, timeout=5.0
    )


async def run(lines: list[str | None]) -> tuple[str, object, list[str]]:
    shown: list[str] = []
    feed: Iterator[str | None] = iter(lines)

    async def readline() -> str | None:
        return next(feed)

    elicit = prompting_elicitor(readline, shown.append, shown.append)
    action, content = await elicit(event())
    return action, content, shown


def test_fields_keep_the_schema_order_and_required_marks() -> None:
    assert [(n, r) for n, _, r in fields_of(SCHEMA)] == [
        ("name", True),
        ("age", True),
        ("ok", True),
        ("size", True),
        ("note", False),
    ]
    assert fields_of("not json") == [] and fields_of('{"type": "object"}') == []


@pytest.mark.parametrize(
    ("prop", "line", "value"),
    [
        ({"type": "integer"}, " 42 ", 42),
        ({"type": "number"}, "1.5", 1.5),
        ({"type": "boolean"}, "yes", True),
        ({"type": "boolean"}, "N", False),
        ({"enum": [1, 2]}, "2", 2),
        ({"type": "string"}, " keep spaces ", " keep spaces "),
    ],
)
def test_a_line_becomes_its_declared_type(
    prop: dict[str, object], line: str, value: object
) -> None:
    assert parse_field(prop, line) == value


@pytest.mark.parametrize(
    ("prop", "line"),
    [({"type": "integer"}, "4.2"), ({"type": "boolean"}, "maybe"), ({"enum": ["s"]}, "x")],
)
def test_a_line_of_the_wrong_type_is_refused(prop: dict[str, object], line: str) -> None:
    with pytest.raises(ValueError):
        parse_field(prop, line)


async def test_an_answer_is_typed_and_a_bad_line_asked_again() -> None:
    action, content, shown = await run(["", "Ada", "old", "36", "y", "m", ""])
    assert action == "accept"
    assert content == {"name": "Ada", "age": 36, "ok": True, "size": "m"}
    assert "  expected a whole number" in shown and "srv asks: Who?" in shown


async def test_n_declines_and_end_of_input_cancels() -> None:
    assert (await run(["n"]))[:2] == ("decline", None)
    assert (await run(["y", "Ada", None]))[:2] == ("cancel", None)
    assert (await run(["y", "Ada", *["x"] * ATTEMPTS]))[:2] == ("cancel", None)
