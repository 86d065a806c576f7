"""Pure MCP policy: which configured values are secrets, and their redaction."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.mcp import HttpServer, StdioServer
from agcore_actors.mcp.policy import REDACTED, redact, secret_values


def test_header_values_and_their_credentials_are_secrets() -> None:
    server = HttpServer(
        "https://user:p%40ss-word@example.com/mcp",
        {"Authorization": "Bearer sk-abcdef", "X-Flag": "on", "X-Key": "key-123456"},
    )
    secrets = secret_values(server)
    assert {"Bearer sk-abcdef", "sk-abcdef", "key-123456", "p@ss-word"} <= set(secrets)
    assert "on" not in secrets  # too short to hide anything
    assert list(secrets) == sorted(secrets, key=lambda s: (-len(s), s))


def test_configured_env_values_are_secrets_inherited_ones_are_not() -> None:
    server = StdioServer("srv", env={"TOKEN": "tok-123456", "TZ": "UTC"}, inherit_env=["HOME"])
    assert secret_values(server) == ("tok-123456",)


words = st.text(alphabet="abcdefgh []", min_size=1, max_size=20)
secret_texts = st.text(alphabet="0123456789-", min_size=6, max_size=12)


@given(st.lists(st.tuples(words, secret_texts), max_size=4), words)
def test_redaction_removes_every_secret_and_keeps_the_rest(
    pieces: list[tuple[str, str]], tail: str
) -> None:
    secrets = sorted({s for _, s in pieces}, key=lambda s: (-len(s), s))
    text = "".join(word + secret for word, secret in pieces) + tail
    out = redact(text, secrets)
    assert not any(secret in out for secret in secrets)
    assert out.replace(REDACTED, "") == "".join(word for word, _ in pieces) + tail
