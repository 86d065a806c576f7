"""The template sandbox refuses attribute escapes and bounds work: a template (which may
come from a user or a model) never reaches Python internals, never runs Jinja code it
was not written in, and never runs or allocates without bound."""

from __future__ import annotations

import resource

import pytest

from agcore_actors.prompt import (
    PromptError,
    PromptTemplate,
    RenderLimits,
    TemplateLimitExceeded,
    TemplateRecursionError,
    TemplateSecurityError,
)

ESCAPES = {
    "__class__": "{{ ''.__class__ }}",
    "mro": "{{ ''.__class__.__mro__ }}",
    "mro()": "{{ [].__class__.mro() }}",
    "__subclasses__": "{{ ().__class__.__base__.__subclasses__() }}",
    "__globals__ of a macro": "{% macro m() %}{% endmacro %}{{ m.__globals__ }}",
    "__globals__ via self": "{{ self.__init__.__globals__ }}",
    "__globals__ via a filter": "{{ (''|attr('__class__')) }}",
    "func_globals of a value": "{{ x.upper.__globals__ }}",
    "__builtins__": "{{ namespace.__init__.__builtins__ }}",
    "cycler internals": "{{ cycler.__init__.__globals__.os }}",
    "joiner internals": "{{ joiner.__init__.__globals__ }}",
    "__dict__": "{{ x.__dict__ }}",
    "__init__ of a value": "{{ x.__init__ }}",
    "format attribute": "{{ '{0.__class__}'.format(x) }}",
    "format nested attribute": "{{ '{0.__class__.__mro__[1].__subclasses__}'.format(x) }}",
    "format_map attribute": "{{ '{x.__class__}'.format_map({'x': x}) }}",
    "str.mro through getattr": "{{ x|attr('__class__')|attr('mro') }}",
    "mutating a passed list": "{{ items.append(1) }}{{ items }}",
    "mutating a passed dict": "{{ config.update({'a': 1}) }}",
}


@pytest.mark.parametrize("source", ESCAPES.values(), ids=ESCAPES.keys())
def test_attribute_escapes_are_refused(source: str) -> None:
    items: list[int] = [1]
    config: dict[str, int] = {}
    with pytest.raises(PromptError) as caught:
        PromptTemplate(source).render(x="text", items=items, config=config)
    assert isinstance(caught.value, TemplateSecurityError | TemplateLimitExceeded) or (
        "undefined" in str(caught.value).lower() or "has no attribute" in str(caught.value)
    ), caught.value
    assert items == [1] and config == {}
    assert "<class" not in str(caught.value) or "unsafe" in str(caught.value)


def test_seed_syntax_text_stays_literal_even_when_it_closes_a_raw_block() -> None:
    """Text of a handlebars-like template is text: an ``{% endraw %}`` in it cannot
    switch to Jinja code (which would then run, sandboxed but unintended)."""
    source = "a {% endraw %}{% for i in range(3) %}x{% endfor %}{% raw %} b"
    assert PromptTemplate.from_seed(source).render() == source


def test_seed_syntax_raw_block_cannot_be_closed_early() -> None:
    body = "a {% endraw %}{{ 7 * 7 }}{%raw%} {{ x }}"
    source = "{{#raw}}" + body + "{{/raw}}"
    assert PromptTemplate.from_seed(source).render() == body


LIMITS = RenderLimits(max_output=100_000, max_work=10_000)
BOUNDS = {
    "nested loops": "{% for i in range(9999) %}{% for j in range(9999) %}{% endfor %}{% endfor %}",
    "huge range": "{{ range(10**12)|list|length }}",
    "a long loop": "{% for i in range(10**9) %}{% endfor %}",
    "exponential macro": (
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}"
    ),
    "output size": "{% for i in range(9999) %}{{ 'x' * 99 }}{% endfor %}",
    "string bomb": "{{ 'a' * 10**9 }}",
    "power bomb": "{{ 3 ** 99999999 }}",
    "format_map width from a string": "{{ '{a:{w}}'.format_map({'a': 1, 'w': '>999999999'}) }}",
    "format width": "{{ '{:>999999999}'.format(1) }}",
    "format width from a string": "{{ '{:{}}'.format(1, '999999999') }}",
    "percent star width": "{{ '%*d' % (999999999, 1) }}",
    "join growth": "{{ range(10000)|join('x' * 10000) }}",
}  # fmt: skip


@pytest.mark.parametrize("source", BOUNDS.values(), ids=BOUNDS.keys())
def test_work_and_size_are_bounded(source: str) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(TemplateLimitExceeded):
        PromptTemplate(source, limits=LIMITS).render()
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 200_000  # no gigabyte was allocated on the way


def test_deep_recursion_is_a_typed_error() -> None:
    with pytest.raises(TemplateRecursionError):
        PromptTemplate("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}").render()
