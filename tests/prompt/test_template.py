"""Templates: Jinja2 sandboxed, strict; the seed's examples with its bugs fixed."""

from __future__ import annotations

import time

import pytest

from agcore_actors.prompt import (
    NotAnArray,
    PartialNotFound,
    PromptTemplate,
    TemplateRecursionError,
    TemplateRegistry,
    TemplateSecurityError,
    TemplateSyntaxError,
    VariableNotFound,
    context_from_json,
    from_seed_syntax,
)

# -- the seed's composer-module template tests (§14.2), in both syntaxes ---------------


def test_template_render() -> None:
    ctx = {"name": "Alice", "count": "5"}
    expected = "Hello Alice, you have 5 messages"
    assert PromptTemplate("Hello {{ name }}, you have {{ count }} messages").render(ctx) == expected
    seed = PromptTemplate.from_seed("Hello {{name}}, you have {{count}} messages")
    assert seed.render(ctx) == expected


def test_template_if() -> None:
    jinja = PromptTemplate("Hello {% if name is defined %}{{ name }}{% else %}Guest{% endif %}")
    seed = PromptTemplate.from_seed("Hello {{#if name}}{{name}}{{else}}Guest{{/if}}")
    for t in (jinja, seed):
        assert t.render(name="Bob") == "Hello Bob"
        assert t.render() == "Hello Guest"


def test_template_each() -> None:
    jinja = PromptTemplate("Items: {% for item in items %}{{ item }}, {% endfor %}")
    seed = PromptTemplate.from_seed("Items: {{#each items}}{{item}}, {{/each}}")
    for t in (jinja, seed):
        assert t.render(items=["a", "b", "c"]) == "Items: a, b, c, "


def test_template_display() -> None:
    assert str(PromptTemplate("Hello {{ name }}")) == "Hello {{ name }}"


def test_context_from_json() -> None:
    ctx = context_from_json('{"name": "Alice", "active": true, "none": null, "n": 3}')
    assert ctx["name"] == "Alice" and ctx["active"] is True
    assert ctx["none"] == "" and ctx["n"] == 3
    with pytest.raises(Exception, match="root value must be an object"):
        context_from_json("[1, 2]")


# -- the seed's verified bugs, fixed (§13.5) -------------------------------------------


def test_partial_output_is_kept() -> None:
    t = PromptTemplate.from_seed("A{{> hdr}}B", partials={"hdr": "HEADER {{name}}"})
    assert t.render(name="Bob") == "AHEADER BobB"
    j = PromptTemplate("A{% include 'hdr' %}B", partials={"hdr": "HEADER {{ name }}"})
    assert j.render(name="Bob") == "AHEADER BobB"


def test_tags_in_else_branch_stay_there() -> None:
    t = PromptTemplate.from_seed("{{#if f}}T{{else}}Hello {{name}}!{{/if}}")
    assert t.render(f=False, name="Bob") == "Hello Bob!"
    assert t.render(f=True, name="Bob") == "T"
    nested = PromptTemplate.from_seed("{{#if f}}A{{else}}X{{#if a}}Y{{/if}}Z{{/if}}")
    assert nested.render(f=False, a=False) == "XZ"
    assert nested.render(f=False, a=True) == "XYZ"
    assert nested.render(f=True, a=True) == "A"


def test_non_ascii_text_is_untouched() -> None:
    t = PromptTemplate.from_seed("你好{{name}}\uff0c{{#if x}}欢迎{{/if}}")
    assert t.render(name="Bob", x=True) == "你好Bob\uff0c欢迎"
    assert PromptTemplate("Grüße, {{ n }} — ¡olé! 🎉").render(n="Zoë") == "Grüße, Zoë — ¡olé! 🎉"


def test_registry_resolves_partials_from_other_templates() -> None:
    registry = TemplateRegistry().register_seed("p", "[{{name}}]").register_seed("main", "M{{> p}}")
    assert registry.render("main", name="x") == "M[x]"
    registry.register("p", "<{{ name }}>")  # replacing a partial takes effect
    assert registry.render("main", name="x") == "M<x>"


def test_stray_close_tag_is_a_syntax_error() -> None:
    with pytest.raises(TemplateSyntaxError) as info:
        PromptTemplate.from_seed("before {{/if}} after {{name}}", name="t")
    assert info.value.template == "t" and info.value.line == 1


def test_self_including_partial_is_refused() -> None:
    registry = (
        TemplateRegistry().register("a", "A{% include 'b' %}").register("b", "{% include 'a' %}")
    )
    with pytest.raises(TemplateRecursionError, match="a -> b -> a"):
        registry.render("a")
    t = PromptTemplate.from_seed("{{> me}}", partials={"me": "x{{> me}}"})
    with pytest.raises(TemplateRecursionError):
        t.render()


# -- derived checks (§14.3) -------------------------------------------------------------


def test_whitespace_missing_and_unclosed() -> None:
    assert PromptTemplate.from_seed("{{  name  }}").render(name="x") == "x"
    with pytest.raises(VariableNotFound, match="'nope' is undefined"):
        PromptTemplate.from_seed("{{nope}}").render()
    with pytest.raises(TemplateSyntaxError, match="unclosed"):
        PromptTemplate.from_seed("Hi {{name")
    assert PromptTemplate.from_seed("a { b } c }} d").render() == "a { b } c }} d"
    for src, what in [
        ("{{#if x}}", "if"),
        ("{{#each xs}}", "each"),
        ("{{#raw}} x", "raw"),
    ]:
        with pytest.raises(TemplateSyntaxError, match=f"unclosed {{{{#{what}}}}}"):
            PromptTemplate.from_seed(src)


def test_values_truthiness_loops_and_raw() -> None:
    t = PromptTemplate.from_seed("{{b}} {{xs}}")
    assert t.render(b=True, xs=["x", "y"]) == 'true ["x", "y"]'
    truth = PromptTemplate.from_seed("{{#if v}}T{{else}}F{{/if}}")
    assert [truth.render(v=v) for v in ["", "0", [], ["a"], False]] == ["F", "T", "F", "T", "F"]
    assert truth.render() == "F"  # missing is false in the seed's #if
    nested_if = PromptTemplate.from_seed("{{#if a}}A{{#if f}}B{{else}}C{{/if}}D{{/if}}")
    assert nested_if.render(a=True, f=False) == "ACD"
    nested_each = PromptTemplate.from_seed("{{#each xs}}<{{#each item}}{{item}}{{/each}}>{{/each}}")
    assert nested_each.render(xs=[["p", "q"], ["r"]]) == "<pq><r>"
    assert nested_each.render(xs=[]) == ""
    with pytest.raises(NotAnArray):
        PromptTemplate.from_seed("{{#each s}}{{item}}{{/each}}").render(s="abc")
    with pytest.raises(VariableNotFound):
        PromptTemplate.from_seed("{{#each s}}{{item}}{{/each}}").render()
    outer = PromptTemplate.from_seed("{{#each items}}{{name}}{{/each}}")
    assert outer.render(items=[1, 2], name="Bob") == "BobBob"
    raw = PromptTemplate.from_seed("{{#raw}} {{literal}} {{#if x}} {{/raw}}!")
    assert raw.render() == " {{literal}} {{#if x}} !"
    jraw = PromptTemplate("{% raw %}{{ not_a_var }}{% endraw %}")
    assert jraw.render() == "{{ not_a_var }}"


def test_seed_literal_text_with_jinja_delimiters_stays_literal() -> None:
    t = PromptTemplate.from_seed("use {% and {# freely, {{name}}")
    assert t.render(name="ok") == "use {% and {# freely, ok"
    assert "{% raw %}" in from_seed_syntax("{% x")


def test_deep_nesting_renders() -> None:
    src = "{{#if a}}" * 17 + "x" + "{{/if}}" * 17  # the seed stopped at 16
    assert PromptTemplate.from_seed(src).render(a=True) == "x"


# -- errors carry the template name and line --------------------------------------------


def test_errors_name_template_and_line() -> None:
    with pytest.raises(VariableNotFound) as info:
        PromptTemplate("line 1\nline 2 {{ missing }}", name="greeting").render()
    assert (info.value.template, info.value.line) == ("greeting", 2)
    assert str(info.value).startswith("template 'greeting', line 2:")
    with pytest.raises(TemplateSyntaxError) as syntax:
        PromptTemplate("ok\nok\n{% if %}", name="broken")
    assert (syntax.value.template, syntax.value.line) == ("broken", 3)
    registry = TemplateRegistry().register("inner", "a\nb\n{{ gone }}")
    registry.register("outer", "{% include 'inner' %}")
    with pytest.raises(VariableNotFound) as inner:
        registry.render("outer")
    assert (inner.value.template, inner.value.line) == ("inner", 3)
    with pytest.raises(PartialNotFound) as missing:
        PromptTemplate("x\n{% include 'nowhere' %}", name="m").render()
    assert missing.value.name == "nowhere" and missing.value.template == "m"
    with pytest.raises(PartialNotFound):
        TemplateRegistry().get("unknown")


def test_registry_register_compiles_now_and_lazy_later(tmp_path: object) -> None:
    registry = TemplateRegistry()
    with pytest.raises(TemplateSyntaxError):
        registry.register("bad", "{% if x %}")
    assert "bad" not in registry
    registry.register_lazy("lazy", "{% if x %}")
    with pytest.raises(TemplateSyntaxError):
        registry.render("lazy")
    from pathlib import Path

    path = Path(str(tmp_path)) / "t.j2"
    path.write_text("file {{ v }}", encoding="utf-8")
    assert registry.register_file("f", path).render("f", v=1) == "file 1"
    with pytest.raises(Exception, match="cannot read"):
        registry.register_file("g", Path(str(tmp_path)) / "missing.j2")


def test_render_with_partials_uses_the_given_map() -> None:
    t = PromptTemplate("<{% include 'p' %}>", partials={"p": "own"})
    assert t.render_with_partials({}, {"p": "given"}) == "<given>"
    assert t.render() == "<own>"


# -- the sandbox -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ x.__class__ }}",
        "{{ f.__globals__ }}",
        "{{ f.__code__ }}",
        "{{ cycler.__init__.__globals__.os }}",
        "{{ ().__class__.__base__.__subclasses__() }}",
        "{% for c in [].__class__.__base__.__subclasses__() %}{{ c }}{% endfor %}",
        "{{ self._TemplateReference__context }}",
        "{{ x.mro() }}",
    ],
)
def test_sandbox_refuses_escapes(source: str) -> None:
    def f() -> None:
        pass

    with pytest.raises((TemplateSecurityError, VariableNotFound)) as info:
        PromptTemplate(source, name="evil").render(x="s", f=f)
    assert info.value.template == "evil"


def test_sandbox_refuses_unsafe_calls_but_allows_plain_data() -> None:
    with pytest.raises(TemplateSecurityError):
        PromptTemplate("{{ d.clear() }}").render(d={"a": 1})  # mutating a passed dict
    assert (
        PromptTemplate("{{ d.a }} {{ xs|length }} {{ s.upper() }}").render(
            d={"a": 1}, xs=[1, 2], s="hi"
        )
        == "1 2 HI"
    )


# -- compiled once ---------------------------------------------------------------------


def registry_of_partials(n: int) -> TemplateRegistry:
    registry = TemplateRegistry()
    body = "".join(f"{{% if x > {i} %}}line {i} {{{{ x }}}}\n{{% endif %}}" for i in range(40))
    for i in range(n):
        registry.register(f"part{i}", body)
    registry.register("main", "".join(f"{{% include 'part{i}' %}}" for i in range(n)))
    return registry


@pytest.mark.exclusive
def test_rendering_again_does_not_parse_again() -> None:
    registry = registry_of_partials(10)
    template = registry.get("main")
    expected = template.render(x=3)
    start = time.perf_counter()
    for _ in range(100):
        assert template.render(x=3) == expected
        assert registry.render("main", x=3) == expected
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"{elapsed / 200 * 1000:.1f} ms a render"


def test_a_changed_partial_is_seen_at_the_next_render() -> None:
    registry = registry_of_partials(2)
    template = registry.get("main")
    assert template.render(x=0) == ""
    registry.register("part1", "changed {{ x }}")
    assert template.render(x=0) == "changed 0"
    assert registry.render("main", x=0) == "changed 0"
    template.register_partial("part0", "own ")
    assert template.render(x=0) == "own changed 0"
