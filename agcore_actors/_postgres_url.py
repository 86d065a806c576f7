"""PostgreSQL URLs in messages: the password never shows (shared by the session store
and the memory store)."""

from __future__ import annotations

import re

_PASSWORD_IN_URL = re.compile(r"(?P<head>://[^:/@]*:)[^@]*(?P<tail>@)")
_PASSWORD_IN_DSN = re.compile(r"(?P<head>password\s*=\s*)('(\\.|[^'])*'|\S+)", re.IGNORECASE)


def redact(url: str) -> str:
    """``url`` with its password (``user:secret@`` or ``password=secret``) as ``***``."""
    url = _PASSWORD_IN_URL.sub(r"\g<head>***\g<tail>", url)
    url = re.sub(r"([?&]password=)[^&]*", r"\1***", url, flags=re.IGNORECASE)
    return _PASSWORD_IN_DSN.sub(r"\g<head>***", url)


def error_text(exc: BaseException, url: str) -> str:
    """The error's first line, prefixed by the redacted URL; the URL's password is
    removed from the line too if it shows up in it."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    for m in _PASSWORD_IN_URL.finditer(url):
        secret = m.group(0)[len(m.group("head")) : -1]
        if secret:
            text = text.replace(secret, "***")
    return f"PostgreSQL ({redact(url)}): {text}"
