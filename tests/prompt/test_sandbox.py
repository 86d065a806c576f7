"""Rendering is bounded: templates that would run for minutes or allocate
gigabytes stop with TemplateLimitExceeded, quickly and within little memory,
while ordinary templates render as before."""

from __future__ import annotations

import resource
import time

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from agcore_actors.prompt import (
    PromptError,
    PromptTemplate,
    RenderLimits,
    TemplateLimitExceeded,
)

BOMBS = {
    "nested loops, no output": (
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    ),
    "nested loops with output": (
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"
    ),
    "exponential macro": (
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}"
    ),
    "recursive loop": ("{% for x in [1, 2] recursive %}{{ loop([x, x, x]) }}{% endfor %}"),
    "recursive loop over ranges": (
        "{% for x in range(100000) recursive %}"
        "{% if loop.depth < 3 %}{{ loop(range(100000)) }}{% endif %}{% endfor %}"
    ),
    "string multiplication": '{{ "a" * 1000000000 }}',
    "string multiplication, twice": '{{ "a" * 100000 * 100000 }}',
    "list multiplication": "{{ [1, 2, 3] * 1000000000 }}",
    "power": "{{ 7 ** 100000000 }}",
    "doubling in a namespace": (
        '{% set ns = namespace(s="ab") %}{% for i in range(64) %}'
        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}"
    ),
    "doubling with +": (
        '{% set ns = namespace(s="ab") %}{% for i in range(64) %}'
        "{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}"
    ),
    "center filter": '{{ "x"|center(1000000000) }}',
    "indent filter": '{{ "a\\nb"|indent(1000000000) }}',
    "format filter": '{{ "%1000000000s"|format("x") }}',
    "percent operator": '{{ "%1000000000s" % "x" }}',
    "str.format width": '{{ "{:>1000000000}".format("x") }}',
    "str.ljust": '{{ "x".ljust(1000000000) }}',
    "str.zfill": '{{ "1".zfill(1000000000) }}',
    "replace growth": '{{ ("a" * 100000)|replace("a", "a" * 100000) }}',
    "join growth": '{{ range(100000)|join("x" * 100000) }}',
    "batch fill": '{{ range(1)|batch(1000000000, fill_with="x")|list }}',
    "lipsum": "{{ lipsum(1000000) }}",
    "wordwrap loop": '{% for i in range(100000) %}{{ "a b c"|wordwrap(2) }}{% endfor %}',
}


@pytest.mark.exclusive
@pytest.mark.parametrize("source", BOMBS.values(), ids=BOMBS.keys())
def test_a_template_bomb_stops_quickly_with_a_typed_error(source: str) -> None:
    template = PromptTemplate(source, name="bomb")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(PromptError) as info:
        template.render()
    elapsed = time.perf_counter() - start
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert elapsed < 3.0, f"{elapsed:.1f} s"
    assert grown_mb < 200, f"{grown_mb:.0f} MB more at peak"
    assert info.value.template == "bomb"


def test_the_limits_are_the_typed_error_and_configurable() -> None:
    source = "{% for i in range(10) %}{% for j in range(100) %}x{% endfor %}{% endfor %}"
    assert PromptTemplate(source).render() == "x" * 1000
    with pytest.raises(TemplateLimitExceeded, match="output") as info:
        PromptTemplate(source, limits=RenderLimits(max_output=999)).render()
    assert info.value.limit == "output" and isinstance(info.value, PromptError)
    with pytest.raises(TemplateLimitExceeded, match="work"):
        PromptTemplate(source, limits=RenderLimits(max_work=500)).render()


def test_ordinary_templates_render_as_before() -> None:
    source = (
        "{% for doc in docs %}{{ loop.index }}/{{ loop.length }} {{ doc.title|upper }}: "
        "{{ doc.body|truncate(20) }} {{ '%-5s|' % doc.tag }}{{ '{:>3}'.format(loop.index) }}\n"
        "{% endfor %}{{ docs|map(attribute='tag')|join(', ') }}"
    )
    docs = [{"title": f"t{i}", "body": "word " * 10, "tag": f"g{i}"} for i in range(3)]
    plain = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined)
    expected = plain.from_string(source).render(docs=docs)
    assert PromptTemplate(source).render(docs=docs) == expected
    assert expected.endswith("g0, g1, g2")
