"""The one in-stream error classifier: the same failure reads the same as over HTTP."""

from __future__ import annotations

import pytest

from agcore_actors.llm import (
    AuthenticationError,
    ContextLengthError,
    LlmError,
    RateLimitError,
    RequestError,
    StreamError,
)
from agcore_actors.llm.policy import stream_error

KEY = "sk-secret-key-123"


@pytest.mark.parametrize(
    ("kind", "code", "message", "expected", "retryable"),
    [
        ("rate_limit_error", None, "slow down", RateLimitError, True),
        ("overloaded_error", None, "Overloaded", RequestError, True),
        ("server_error", None, "boom", RequestError, True),
        ("api_error", None, "Internal error", RequestError, True),
        (None, 502, "upstream died", RequestError, True),
        (None, 429, "slow down", RateLimitError, True),
        (
            "invalid_request_error",
            None,
            "prompt is too long: 9 tokens > 8 maximum",
            ContextLengthError,
            False,
        ),
        ("authentication_error", None, "bad key", AuthenticationError, False),
        ("invalid_request_error", None, "bad tool schema", StreamError, False),
        (None, None, "something odd", StreamError, False),
    ],
)
def test_in_stream_errors_map_like_their_http_twins(
    kind: str | None, code: int | None, message: str, expected: type[LlmError], retryable: bool
) -> None:
    error = stream_error("p", message=message, kind=kind, code=code, raw=f"{message} {KEY}",
                         secrets=(KEY,))  # fmt: skip
    assert type(error) is expected and error.is_retryable() is retryable
    assert KEY not in str(error)
