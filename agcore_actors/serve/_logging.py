"""Structured logs of a served host: stdlib :mod:`logging` with fields, secrets redacted.

Records go to the ``agcore_actors.serve`` logger with their fields in ``extra``
(``session``, ``turn``, ``tool``, ``call_id``, ``status``, ``error_kind``, ...):
one INFO record per turn that ends, one DEBUG record per tool call that ends, a
WARNING per failed turn. :class:`JsonFormatter` writes each record as one JSON object;
:class:`TextFormatter` as ``message key=value ...``. Both redact: a field whose name
holds a secret word (``token``, ``key``, ``secret``, ``password``, ``authorization``,
``cookie``, ``credentials``, ...: ``api_key``, ``accessToken``, ``x-auth-token``) is
replaced by ``[redacted]``; the name is read as words (split at ``_ - .`` and camelCase),
so counts such as ``input_tokens`` or ``max_tokens`` are logged as they are. Bearer
tokens and ``sk-...`` keys inside any text are masked.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from typing import Any

from ..agent import messages as am

__all__ = [
    "JsonFormatter",
    "TextFormatter",
    "configure_logging",
    "log_event",
    "redact",
    "serving_line",
    "token_line",
]

logger = logging.getLogger("agcore_actors.serve")

# A name's words: camelCase humps and runs of letters or digits ("APIKey" -> API, Key).
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# Singular "token" only: "tokens" names a count (input_tokens), never a credential.
_SECRET_WORDS = frozenset({
    "token", "key", "keys", "apikey", "secret", "secrets", "password", "passwords", "passwd",
    "authorization", "cookie", "cookies", "credential", "credentials",
})  # fmt: skip
_SECRET_TEXT = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+|\bsk-[A-Za-z0-9_\-]{6,}")
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
REDACTED = "[redacted]"


def _mask(match: re.Match[str]) -> str:
    return (match.group(1) or "") + REDACTED


def redact(name: str, value: Any) -> Any:
    """``value`` of field ``name`` as it may be logged."""
    if any(word.lower() in _SECRET_WORDS for word in _WORDS.findall(name)):
        return REDACTED
    if isinstance(value, str):
        return _SECRET_TEXT.sub(_mask, value)
    return value


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: redact(k, v) for k, v in vars(record).items() if k not in _STANDARD}


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message and the fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact("message", record.getMessage()),
            **_fields(record),
        }
        if record.exc_info:
            out["exception"] = redact("exception", self.formatException(record.exc_info))
        return json.dumps(out, default=str)


class TextFormatter(logging.Formatter):
    """``LEVEL logger: message key=value ...``."""

    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(f"{k}={v}" for k, v in _fields(record).items())
        text = f"{record.levelname} {record.name}: {redact('message', record.getMessage())}"
        return f"{text} {fields}".rstrip()


def configure_logging(level: str = "INFO", *, json_format: bool = False) -> logging.Handler:
    """Send the library's records to stderr in the chosen format; the handler added."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_format else TextFormatter())
    root = logging.getLogger("agcore_actors")
    root.addHandler(handler)
    root.setLevel(level.upper())
    return handler


def serving_line(url: str, *, json_format: bool = False) -> str:
    """The line that says where the server listens, written whatever the log level: plain
    ``serving on URL``, or with ``json_format`` a JSON record like every other line."""
    message = f"serving on {url}"
    if not json_format:
        return message
    record = logging.makeLogRecord(
        {"name": logger.name, "msg": message, "levelno": logging.INFO, "levelname": "INFO"}
    )
    record.url = url
    return JsonFormatter().format(record)


def token_line(url: str, token: str, *, json_format: bool = False) -> str:
    """The line that shows a token made at start, once: it and the observer's address
    (the token in the fragment, which a browser never sends)."""
    observer = f"{url}/observer#access_token={token}"
    message = f"a fresh token for this run (send it as Authorization: Bearer): {token}"
    if not json_format:
        return f"{message}\nobserver: {observer}"
    record = logging.makeLogRecord(
        {"name": logger.name, "msg": message, "levelno": logging.INFO, "levelname": "INFO"}
    )
    record.observer = observer
    return JsonFormatter().format(record)


def log_event(session: str, turn: str, event: am.TurnEvent, seconds: float | None = None) -> None:
    """Log what is worth a record in ``event`` of ``turn``."""
    match event:
        case am.TurnCompleted(result=r) | am.TurnCancelled(result=r) | am.TurnFailed(result=r):
            fields: dict[str, Any] = {
                "session": session,
                "turn": turn,
                "status": r.status,
                "model_calls": r.model_calls,
                "tool_calls": r.tool_calls,
                "input_tokens": r.usage.input_tokens,
                "output_tokens": r.usage.output_tokens,
            }
            if seconds is not None:
                fields["seconds"] = round(seconds, 3)
            if r.status == "failed":
                fields.update(error_kind=r.error_kind, error=r.error)
                logger.warning("turn failed", extra=fields)
            else:
                logger.info("turn %s", r.status, extra=fields)
        case am.ToolCallFinished(call_id=call_id, name=name, status=status):
            extra = {"session": session, "turn": turn, "tool": name, "call_id": call_id}
            logger.debug("tool call %s", status, extra={**extra, "status": status})
        case am.RetryingModel(attempt=attempt, error=error):
            retry: dict[str, Any] = {"session": session, "turn": turn, "attempt": attempt}
            logger.info("model call retried", extra={**retry, "error": error})
        case _:
            pass
