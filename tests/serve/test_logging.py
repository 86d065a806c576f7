"""Structured logs: a turn that ends is one record with its fields, JSON when asked,
and secrets never reach the output."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.serve import JsonFormatter, TextFormatter
from agcore_actors.serve._logging import REDACTED, redact
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
    async with served() as s, s.client() as client:
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


async def test_a_turn_record_logs_its_token_counts_unredacted(records: io.StringIO) -> None:
    async with served() as s, s.client() as client:
        # "add": two model responses of 20 input and 5 output tokens
        r = await client.post(
            "/v1/sessions/a/turns", json={"text": "add"}, headers={"accept": "application/json"}
        )
        assert r.json()["status"] == "completed"
    lines = [json.loads(line) for line in records.getvalue().splitlines()]
    ended = next(line for line in lines if line["message"] == "turn completed")
    assert ended["input_tokens"] == 40 and ended["output_tokens"] == 10


SECRET_NAMES = [
    "token", "Token", "api_key", "apiKey", "API_KEY", "x-api-key", "key", "apikey",
    "authorization", "Authorization", "proxy-authorization", "access_token", "accessToken",
    "refresh_token", "id_token", "auth_token", "x-auth-token", "client_secret", "secret",
    "password", "db_password", "passwd", "cookie", "set-cookie", "credentials",
    "private_key", "session_token",
]  # fmt: skip
COUNT_NAMES = [
    "input_tokens", "output_tokens", "inputTokens", "max_tokens", "cache_read_tokens",
    "reasoning_tokens", "tokens_before", "tokens_after", "total_tokens", "session", "turn",
    "model_calls", "monkey", "keyboard", "tokenizer", "status",
]  # fmt: skip


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_a_field_named_as_a_secret_is_redacted(name: str) -> None:
    assert redact(name, "hunter2") == REDACTED


@pytest.mark.parametrize("name", COUNT_NAMES)
def test_a_field_naming_counts_or_ids_is_kept(name: str) -> None:
    assert redact(name, 42) == 42 and redact(name, "plain") == "plain"


SECRET_WORDS = {"token", "key", "keys", "apikey", "secret", "secrets", "password",
                "passwords", "passwd", "authorization", "cookie", "cookies", "credential",
                "credentials"}  # fmt: skip
WORD = st.from_regex(r"[a-z]{1,8}", fullmatch=True).filter(lambda w: w not in SECRET_WORDS)
SEP = st.sampled_from(["_", "-", "."])


@given(st.lists(WORD, max_size=3), SEP, st.sampled_from(sorted(SECRET_WORDS)))
def test_any_name_ending_in_a_secret_word_is_redacted(
    words: list[str], sep: str, secret: str
) -> None:
    assert redact(sep.join([*words, secret]), 7) == REDACTED
    camel = "".join([*words[:1], *(w.title() for w in [*words[1:], secret])])
    assert redact(camel, 7) == REDACTED


@given(st.lists(WORD, min_size=1, max_size=3), SEP)
def test_a_count_of_tokens_is_never_redacted(words: list[str], sep: str) -> None:
    assert redact(sep.join([*words, "tokens"]), 7) == 7
    assert redact(sep.join(["tokens", *words]), 7) == 7
