"""The output-schema check agrees with the ``jsonschema`` package (an independent, full
draft 2020-12 validator) on every value and schema built from the keywords it checks,
and never refuses what that validator accepts when a schema has keywords it skips."""

from __future__ import annotations

from typing import Any

import jsonschema  # type: ignore[import-untyped]
from hypothesis import given, settings
from hypothesis import strategies as st

from agcore_actors.mcp._schema import violation

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.sampled_from([0.0, 1.0, 1.5, -2.5]),
    st.sampled_from(["", "a", "bb", "ccc"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    ),
    max_leaves=8,
)
TYPES = st.sampled_from(["object", "array", "string", "number", "integer", "boolean", "null"])


def leaf() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda t: {"type": t}, TYPES),
        st.builds(lambda ts: {"type": ts}, st.lists(TYPES, min_size=1, max_size=3, unique=True)),
        st.builds(lambda vs: {"enum": vs}, st.lists(SCALARS, min_size=1, max_size=3)),
        st.builds(lambda v: {"const": v}, SCALARS),
        st.builds(lambda n: {"minimum": n}, st.integers(-3, 3)),
        st.builds(lambda n: {"exclusiveMaximum": n}, st.integers(-3, 3)),
        st.builds(lambda n: {"minLength": n, "maxItems": n}, st.integers(0, 3)),
        st.builds(lambda n: {"maxLength": n, "minItems": n}, st.integers(0, 3)),
        st.just({}),
    )


def combine(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    names = st.sampled_from(["a", "b", "c"])
    return st.one_of(
        st.builds(
            lambda props, req, extra: {
                "type": "object",
                "properties": props,
                "required": req,
                "additionalProperties": extra,
            },
            st.dictionaries(names, inner, max_size=2),
            st.lists(names, max_size=2, unique=True),
            st.one_of(st.just(True), st.just(False), inner),
        ),
        st.builds(lambda s: {"type": "array", "items": s}, inner),
        st.builds(lambda p, s: {"prefixItems": p, "items": s}, st.lists(inner, max_size=2), inner),
        st.builds(lambda ss: {"anyOf": ss}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda ss: {"oneOf": ss}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda ss: {"allOf": ss}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda s: {"not": s}, inner),
    )


INNER = st.recursive(leaf(), combine, max_leaves=6)
#: ``$ref``s resolve against the root: a definition used from places under it.
SCHEMAS = st.one_of(
    INNER,
    st.builds(
        lambda d: {
            "$defs": {"d": d},
            "properties": {"a": {"$ref": "#/$defs/d"}},
            "items": {"$ref": "#/$defs/d"},
        },
        INNER,
    ),
)


@settings(max_examples=600, deadline=None)
@given(SCHEMAS, VALUES)
def test_the_check_agrees_with_a_full_validator(schema: dict[str, Any], value: Any) -> None:
    expected = jsonschema.Draft202012Validator(schema).is_valid(value)
    assert (violation(schema, value) is None) == expected


@settings(max_examples=200, deadline=None)
@given(SCHEMAS, VALUES)
def test_an_unchecked_keyword_never_refuses_a_valid_value(
    schema: dict[str, Any], value: Any
) -> None:
    widened = {**schema, "pattern": "^z", "format": "email", "uniqueItems": True}
    if jsonschema.Draft202012Validator(widened).is_valid(value):
        assert violation(widened, value) is None


def test_a_violation_says_where() -> None:
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
        "required": ["items"],
    }
    assert violation(schema, {"items": [1, "x"]}) == "$.items[1]: expected integer"
    assert violation(schema, {}) == "$: missing required property 'items'"
    assert violation(schema, {"items": [1, 2.0]}) is None
