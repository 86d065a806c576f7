"""Pure MCP policy: which configured values are secrets, their redaction, and registry
names every model API accepts."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.mcp import HttpServer, StdioServer
from agcore_actors.mcp.policy import (
    REDACTED,
    TOOL_NAME_PATTERN,
    needs_approval,
    prefixed_name,
    redact,
    registry_names,
    secret_values,
)


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


# -- registry names -------------------------------------------------------------------

servers = st.text(min_size=1, max_size=40)
tool_lists = st.lists(st.text(min_size=1, max_size=80), max_size=8, unique=True)


@given(servers, tool_lists, st.sampled_from(["-", "_", ".", "::"]))
def test_registry_names_are_valid_distinct_and_stable(
    server: str, tools: list[str], separator: str
) -> None:
    names = registry_names(server, tools, separator)
    assert len(names) == len(tools) and len(set(names)) == len(names)
    assert all(TOOL_NAME_PATTERN.match(n) for n in names), names
    assert registry_names(server, tools, separator) == names
    # A name that is already valid, and that no other tool's name turns into, is kept.
    cleaned = [re.sub(r"[^a-zA-Z0-9_-]", "_", prefixed_name(server, t, separator)) for t in tools]
    for tool, name in zip(tools, names, strict=True):
        plain = prefixed_name(server, tool, separator)
        if TOOL_NAME_PATTERN.match(plain) and cleaned.count(plain) == 1:
            assert name == plain


def test_registry_names_by_example() -> None:
    assert registry_names("time", ["get_current_time"]) == ["time-get_current_time"]
    assert registry_names("my.srv", ["a b"]) == ["my_srv-a_b"]
    clash = registry_names("s", ["a.b", "a:b"])  # both would be "s-a_b"
    assert len(set(clash)) == 2 and all(n.startswith("s-a_b_") for n in clash)
    (long,) = registry_names("s", ["x" * 80])
    assert len(long) == 64 and long.startswith("s-" + "x" * 53 + "_")


hints = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(["destructiveHint", "readOnlyHint", "idempotentHint", "title"]),
        st.one_of(st.booleans(), st.none(), st.text(max_size=3)),
    ),
)


@given(hints, st.one_of(st.none(), st.booleans()))
def test_needs_approval_is_the_override_else_an_explicit_destructive_hint(
    annotations: dict[str, object] | None, override: bool | None
) -> None:
    decided = needs_approval(annotations, override)
    if override is not None:
        assert decided is override
    else:
        destructive = bool(annotations) and annotations.get("destructiveHint") is True  # type: ignore[union-attr]
        read_only = bool(annotations) and annotations.get("readOnlyHint") is True  # type: ignore[union-attr]
        assert decided is (destructive and not read_only)


def test_needs_approval_examples() -> None:
    assert needs_approval({"destructiveHint": True}, None)
    assert not needs_approval({"destructiveHint": True, "readOnlyHint": True}, None)
    assert not needs_approval(None, None) and not needs_approval({}, None)
    assert needs_approval(None, True) and not needs_approval({"destructiveHint": True}, False)
