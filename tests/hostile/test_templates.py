"""Hostile template sources: compiling and rendering any source ends in a string or a
:class:`PromptError` — never another exception, never unbounded work.

Hypothesis assembles sources from Jinja's own tokens (both syntaxes); the corpus is
``corpus/template`` (``.j2``: Jinja syntax, ``.hbs``: the handlebars-like syntax).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agcore_actors.prompt import PromptError, PromptTemplate, RenderLimits, TemplateRegistry
from tests.hostile.hostile import corpus

LIMITS = RenderLimits(max_output=10_000, max_work=5_000)

_tokens = st.sampled_from(
    [
        "{{", "}}", "{%", "%}", "{#", "#}", "for", "in", "endfor", "if", "endif", "else",
        "macro", "endmacro", "call", "set", "include", "raw", "endraw", "recursive", "loop",
        "range(", "10**9", ")", "(", "[", "]", "|", "join", "format", "center(", "*", "**",
        "~", "+", "%", "'{:>99999}'", "'%*s'", ".format(", ".__class__", ".mro()", "self",
        "namespace(", "x", "items", "1", "0", ",", ":", " ", "\n", "'a'", "lipsum(", "=",
    ]
)  # fmt: skip
_seed_tokens = st.sampled_from(
    ["{{", "}}", "#if ", "#each ", "/if", "/each", "else", "#raw", "/raw", "> ", "x", "items",
     "{%", "%}", "endraw", " ", "\n", "{#"]
)  # fmt: skip
VALUES = {"x": "v", "items": [1, 2, 3]}


def outcome(source: str, *, seed: bool) -> str | PromptError:
    try:
        if seed:
            template = PromptTemplate.from_seed(source, name="t")
            template.limits = LIMITS
        else:
            template = PromptTemplate(source, name="t", limits=LIMITS)
        return template.render(VALUES)
    except PromptError as error:
        return error


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_tokens, max_size=30).map("".join))
def test_any_jinja_source_renders_or_is_a_prompt_error(source: str) -> None:
    result = outcome(source, seed=False)
    if isinstance(result, str):
        assert len(result) <= LIMITS.max_output


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_seed_tokens, max_size=30).map("".join))
def test_any_seed_source_renders_or_is_a_prompt_error(source: str) -> None:
    result = outcome(source, seed=True)
    if isinstance(result, str):
        assert len(result) <= LIMITS.max_output


def read(path: Path) -> str:
    return path.read_text()


@pytest.mark.parametrize("path", corpus("template"), ids=lambda p: p.name)
def test_corpus_template_renders_or_is_a_prompt_error(path: Path) -> None:
    source = read(path)
    result = outcome(source, seed=path.suffix == ".hbs")
    assert isinstance(result, str | PromptError)
    if not path.name.startswith("seed"):
        # The registry compiles the same source at registration: a PromptError or none.
        registry = TemplateRegistry(limits=LIMITS)
        try:
            registry.register("t", source)
        except PromptError:
            assert "t" not in registry
