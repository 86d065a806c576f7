"""Structured logs: a turn that ends is one record with its fields, JSON when asked,
and secrets never reach the output."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import httpx2
import pytest

from agcore_actors.serve import JsonFormatter, TextFormatter
from tests.serve.runtime import served


@pytest.fixture
def records() -> Iterator[io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("agcore_actors.serve")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield out
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)


async def test_each_turn_and_tool_call_is_one_json_record_with_its_fields(
    records: io.StringIO,
) -> None:
    async with served() as s, httpx2.AsyncClient(base_url=s.url) as client:
        r = await client.post(
            "/v1/sessions/a/turns",
            json={"text": "hi", "turn": "t1"},
            headers={"accept": "application/json"},
        )
        assert r.json()["status"] == "completed"
    lines = [json.loads(line) for line in records.getvalue().splitlines()]
    ended = [line for line in lines if line["message"] == "turn completed"]
    assert len(ended) == 1
    record = ended[0]
    assert record["session"] == "a" and record["turn"] == "t1" and record["level"] == "info"
    assert record["model_calls"] == 1 and record["seconds"] >= 0


def make(message: str, **fields: object) -> logging.LogRecord:
    return logging.makeLogRecord({"msg": message, "name": "agcore_actors.serve", **fields})


@pytest.mark.parametrize("formatter", [JsonFormatter(), TextFormatter()])
def test_secrets_are_redacted_by_field_name_and_in_text(formatter: logging.Formatter) -> None:
    record = make(
        "calling with Authorization: Bearer abc.def and sk-live1234567890",
        api_key="sk-live1234567890",
        token="t0ps3cret",
        session="s1",
    )
    text = formatter.format(record)
    for secret in ("abc.def", "sk-live1234567890", "t0ps3cret"):
        assert secret not in text
    assert "s1" in text and "[redacted]" in text
