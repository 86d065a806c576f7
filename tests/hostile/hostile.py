"""Shared pieces of the hostile-input tests: strategies for near-valid and junk input,
and the fuzz corpus kept under ``tests/hostile/corpus/<target>/``.

A corpus file is one hostile input, exactly as it goes over the wire (a body, an SSE
stream, a line); every file of a target is replayed by that target's test, so a case
found once (by hypothesis, by hand, by a bug report) is kept for good: add a file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

CORPUS = Path(__file__).resolve().parent / "corpus"

#: Nesting deep enough to exhaust a recursive decoder (msgspec, json, jinja's parser).
DEEP = 100_000


def corpus(target: str) -> list[Path]:
    """The files of one target, sorted (a test is parametrized over them)."""
    files = sorted(p for p in (CORPUS / target).iterdir() if p.is_file())
    assert files, f"empty corpus: {target}"
    return files


def corpus_ids(target: str) -> list[str]:
    return [p.name for p in corpus(target)]


def deep_array(depth: int = DEEP) -> bytes:
    return b"[" * depth + b"]" * depth


def deep_object(key: str, depth: int = DEEP) -> bytes:
    """``{"key": {"key": ... }}`` nested ``depth`` times."""
    return (b'{"%s":' % key.encode()) * depth + b"1" + b"}" * depth


# -- strategies -----------------------------------------------------------------------

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(["", "[DONE]", "\ud7ff", "\u0000", "null", "error", "function"])
)


def json_values(keys: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[Any]:
    """Any JSON value; object keys drawn from ``keys`` (a protocol's vocabulary) or text."""
    key = st.text(max_size=8) if keys is None else keys | st.text(max_size=8)
    return st.recursive(
        _scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(key, inner, max_size=5),
        max_leaves=20,
    )


def shaped(template: Any, junk: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Values shaped like ``template`` where any part may be replaced by ``junk``.

    ``template`` is a dict (each key optional), a one-item list (a list of that shape),
    or a strategy (a leaf).
    """
    inner: st.SearchStrategy[Any]
    if isinstance(template, dict):
        inner = st.fixed_dictionaries(
            {}, optional={k: shaped(v, junk) for k, v in template.items()}
        )
    elif isinstance(template, list):
        inner = st.lists(shaped(template[0], junk), max_size=3)
    else:
        inner = template
    return inner | junk


def to_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


@st.composite
def mangled(draw: st.DrawFn, documents: st.SearchStrategy[bytes]) -> bytes:
    """A document, then maybe cut short, with bytes flipped or junk spliced in."""
    data = bytearray(draw(documents))
    action = draw(st.sampled_from(["keep", "cut", "flip", "splice"]))
    if action == "cut" and data:
        del data[draw(st.integers(0, len(data) - 1)) :]
    elif action == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        data[at] = draw(st.integers(0, 255))
    elif action == "splice":
        at = draw(st.integers(0, len(data)))
        data[at:at] = draw(st.binary(max_size=8))
    return bytes(data)


@st.composite
def split(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """``data`` in pieces at arbitrary points (as network reads deliver it)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=6)))
    pieces, start = [], 0
    for cut in cuts:
        pieces.append(data[start:cut])
        start = cut
    pieces.append(data[start:])
    return [p for p in pieces if p]
