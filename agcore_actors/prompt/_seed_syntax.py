"""Translate handlebars-like templates into Jinja2 templates.

The grammar (``{{name}}``, ``{{#if x}}…{{else}}…{{/if}}``,
``{{#each items}}…{{item}}…{{/each}}``, ``{{> partial}}``,
``{{#raw}}…{{/raw}}``) maps onto Jinja2 one tag at a time; line numbers are
kept. A partial's output is kept, tags in an else branch stay in it, non-ASCII
text is untouched, a stray close tag is a syntax error.

- ``{{#if x}}`` is false for a missing ``x``, so it becomes
  ``{% if x is defined and x %}``; ``{{x}}`` of a missing ``x`` is still an
  error (strict).
- ``{{#each xs}}`` binds ``item``; ``xs`` must be a list (``array`` filter).
- Literal text (and the body of ``{{#raw}}``) stays literal: with Jinja delimiters
  (``{{``, ``{%``, ``{#``) it is wrapped in ``{% raw %}``, and if it holds ``endraw``
  (which could close that block and start Jinja code) each ``{`` is printed by an
  expression instead.
"""

from __future__ import annotations

import re

from ._errors import TemplateSyntaxError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PARTIAL = re.compile(r"[^\s'\"{}]+\Z")


def _literal(text: str) -> str:
    if "endraw" in text:  # it could close a raw block: print every brace instead
        return text.replace("{", "{{ '{' }}")
    if "{%" in text or "{#" in text or "{{" in text:
        return "{% raw %}" + text + "{% endraw %}"
    return text


def from_seed_syntax(source: str, name: str = "<template>") -> str:
    """The Jinja2 form of a handlebars-like template; :class:`TemplateSyntaxError`
    with the line for anything its grammar does not allow."""
    out: list[str] = []
    stack: list[tuple[str, int]] = []
    pos = 0

    def line_at(index: int) -> int:
        return source.count("\n", 0, index) + 1

    def fail(message: str, index: int) -> TemplateSyntaxError:
        return TemplateSyntaxError(message, template=name, line=line_at(index))

    def variable(text: str, index: int) -> str:
        if not _NAME.match(text):
            raise fail(f"{text!r} is not a variable name", index)
        return text

    while True:
        start = source.find("{{", pos)
        if start < 0:
            out.append(_literal(source[pos:]))
            break
        out.append(_literal(source[pos:start]))
        end = source.find("}}", start + 2)
        if end < 0:
            raise fail("unclosed {{ tag", start)
        raw_inner = source[start + 2 : end]
        inner = raw_inner.strip()
        pos = end + 2
        if inner.startswith("#if "):
            cond = variable(inner[4:].strip(), start)
            out.append(f"{{% if {cond} is defined and {cond} %}}")
            stack.append(("if", start))
        elif inner == "else":
            if not stack or stack[-1][0] != "if":
                raise fail("{{else}} outside an {{#if}} block", start)
            out.append("{% else %}")
        elif inner.startswith("#each "):
            items = variable(inner[6:].strip(), start)
            out.append(f"{{% for item in {items}|array %}}")
            stack.append(("each", start))
        elif inner == "#raw":
            close = source.find("{{/raw}}", pos)
            if close < 0:
                raise fail("unclosed {{#raw}} block", start)
            body = source[pos:close]
            out.append(_literal(body))
            pos = close + len("{{/raw}}")
        elif inner.startswith("> "):
            partial = inner[2:].strip()
            if not _PARTIAL.match(partial):
                raise fail(f"{partial!r} is not a partial name", start)
            out.append(f'{{% include "{partial}" %}}')
        elif inner.startswith("/"):
            kind = inner[1:].strip()
            if not stack or stack[-1][0] != kind:
                raise fail(f"{{{{/{kind}}}}} closes no open block", start)
            stack.pop()
            out.append("{% endif %}" if kind == "if" else "{% endfor %}")
        else:
            out.append("{{ " + variable(inner, start) + " }}")
        # Keep the line count of tags that span lines.
        out.append("{#" + "\n" * raw_inner.count("\n") + "#}" if "\n" in raw_inner else "")
    if stack:
        kind, at = stack[-1]
        raise fail(f"unclosed {{{{#{kind}}}}} block", at)
    return "".join(out)
