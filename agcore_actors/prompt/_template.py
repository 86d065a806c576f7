"""Prompt templates on Jinja2's sandboxed environment.

Syntax is Jinja2's: ``{{ name }}``, ``{% if x %}…{% else %}…{% endif %}``,
``{% for item in items %}…{% endfor %}``, ``{% include "partial" %}``,
``{% raw %}…{% endraw %}``. Handlebars-like templates (``{{#if}}``, ``{{#each}}``,
``{{> partial}}``, ``{{#raw}}``) are translated by :func:`from_seed_syntax`.

Rules:

- Sandboxed (:class:`jinja2.sandbox.ImmutableSandboxedEnvironment`, the
  sandbox that also refuses to mutate lists and dicts passed in): no access
  to private or internal attributes (``''.__class__``, ``__globals__``,
  ``mro``), no unsafe calls; a violation is :class:`TemplateSecurityError`.
- Strict: an undefined variable is :class:`VariableNotFound` wherever it is
  used (printed, iterated, tested for truth); test with ``is defined``.
- No HTML escaping (prompts are not HTML). Scalars print as text, with
  ``true``/``false`` for booleans and ``""`` for None; lists and dicts print as
  JSON.
- Partials: ``{% include %}`` looks in the template's own partials, then in
  its registry. Include cycles are refused before rendering
  (:class:`TemplateRecursionError`); the partial's output is kept.
- Errors carry the template name and line.
- Compiling never raises anything but a :class:`PromptError`: a source nested deeper
  than Python's parser and compiler take is :class:`TemplateSyntaxError`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jinja2
import jinja2.exceptions
import jinja2.meta

from ._errors import (
    NotAnArray,
    PartialNotFound,
    PromptError,
    TemplateLimitExceeded,
    TemplateRecursionError,
    TemplateRenderError,
    TemplateSecurityError,
    TemplateSyntaxError,
    VariableNotFound,
)
from ._sandbox import LimitedEnvironment, RenderLimits, render_limited
from ._seed_syntax import from_seed_syntax

Sources = Callable[[str], str | None]


def _display(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, ensure_ascii=False, default=str)
    return value


def _array(value: Any) -> Any:
    """The ``array`` filter: the value when it is a list, else an error."""
    if isinstance(value, jinja2.Undefined):
        value._fail_with_undefined_error()
    if not isinstance(value, list | tuple):
        raise NotAnArray(f"cannot loop over a {type(value).__name__}: a list is needed")
    return value


def _environment(sources: Sources) -> LimitedEnvironment:
    def load(name: str) -> tuple[str, str, Callable[[], bool]] | None:
        source = sources(name)
        if source is None:
            return None
        # Up to date while the registered source is the same object.
        return source, name, lambda: sources(name) is source

    env = LimitedEnvironment(
        loader=jinja2.FunctionLoader(load),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        finalize=_display,
        auto_reload=True,
    )
    env.filters["array"] = _array
    return env


def _location(exc: BaseException, names: set[str]) -> tuple[str | None, int | None]:
    """The innermost template frame of ``exc``'s traceback."""
    where: tuple[str | None, int | None] = (None, None)
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename in names:
            where = (filename, tb.tb_lineno)
        tb = tb.tb_next
    return where


def _translate(exc: Exception, names: set[str], default: str) -> PromptError:
    """A Jinja (or filter) error as a :class:`PromptError` with its location."""
    if isinstance(exc, PromptError) and exc.template is not None:
        return exc
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return TemplateSyntaxError(
            exc.message or str(exc), template=exc.name or default, line=exc.lineno
        )
    template, line = _location(exc, names)
    template = template or default
    if isinstance(exc, jinja2.TemplateNotFound):
        return PartialNotFound(str(exc.name), template=template, line=line)
    if isinstance(exc, jinja2.UndefinedError):
        return VariableNotFound(exc.message or str(exc), template=template, line=line)
    if isinstance(exc, jinja2.exceptions.SecurityError):
        return TemplateSecurityError(str(exc), template=template, line=line)
    if isinstance(exc, RecursionError):
        return TemplateRecursionError("render recursion too deep", template=template, line=line)
    if isinstance(exc, TemplateLimitExceeded):
        return TemplateLimitExceeded(exc.message, limit=exc.limit, template=template, line=line)
    if isinstance(exc, PromptError):
        return type(exc)(exc.message, template=template, line=line)
    return TemplateRenderError(f"{type(exc).__name__}: {exc}", template=template, line=line)


#: What compiling a source raises: Jinja's syntax errors, and for nesting deeper than
#: Python's parser or compiler take (a thousand parentheses, twenty nested loops) a
#: RecursionError or Python's own SyntaxError.
_COMPILE_ERRORS = (jinja2.TemplateSyntaxError, RecursionError, SyntaxError)


def _compile_error(exc: Exception, names: set[str], default: str) -> PromptError:
    """A compile failure as a :class:`TemplateSyntaxError` (see ``_COMPILE_ERRORS``)."""
    if isinstance(exc, RecursionError | SyntaxError):
        return TemplateSyntaxError("the template nests too deeply to compile", template=default)
    return _translate(exc, names, default)


class TemplateRegistry:
    """Named templates; each may include any other as a partial.

    ``register`` compiles at once (a syntax error surfaces there),
    ``register_lazy`` on first use; registering a name again replaces it.
    An unknown name is :class:`PartialNotFound`. Not thread-safe; no file
    watching.
    """

    def __init__(self, *, limits: RenderLimits | None = None) -> None:
        self.limits = limits or RenderLimits()
        self._sources: dict[str, str] = {}
        self._env = _environment(self._sources.get)
        #: Changes with every (un)registration: what was checked for cycles is stale.
        self.version = 0
        self._renderers: dict[str, PromptTemplate] = {}

    def _compile(self, name: str) -> jinja2.Template:
        try:
            return self._env.get_template(name)
        except jinja2.TemplateNotFound as exc:
            if exc.name == name:
                raise PartialNotFound(name) from None
            raise _translate(exc, set(self._sources), name) from exc
        except _COMPILE_ERRORS as exc:
            raise _compile_error(exc, set(self._sources), name) from exc

    def _changed(self) -> None:
        self.version += 1
        self._renderers.clear()

    def register(self, name: str, source: str) -> TemplateRegistry:
        previous = self._sources.get(name)
        self._sources[name] = source
        self._changed()
        try:
            self._compile(name)
        except PromptError:
            # A template that does not compile is not registered.
            if previous is None:
                del self._sources[name]
            else:
                self._sources[name] = previous
            raise
        return self

    def register_seed(self, name: str, source: str) -> TemplateRegistry:
        """Register a handlebars-like template (:func:`from_seed_syntax`)."""
        return self.register(name, from_seed_syntax(source, name))

    def register_lazy(self, name: str, source: str) -> TemplateRegistry:
        self._sources[name] = source
        self._changed()
        return self

    def register_file(self, name: str, path: str | Path) -> TemplateRegistry:
        try:
            source = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise PromptError(f"cannot read {path}: {exc}", template=name) from exc
        return self.register(name, source)

    def unregister(self, name: str) -> None:
        self._sources.pop(name, None)
        self._changed()

    def __contains__(self, name: object) -> bool:
        return name in self._sources

    def names(self) -> list[str]:
        return sorted(self._sources)

    def source(self, name: str) -> str:
        try:
            return self._sources[name]
        except KeyError:
            raise PartialNotFound(name) from None

    def get(self, name: str) -> PromptTemplate:
        """A template of its own for ``name`` (compiled now; keep it to render often)."""
        self._compile(name)
        return PromptTemplate(self._sources[name], name=name, registry=self, limits=self.limits)

    def render(
        self, name: str, context: Mapping[str, Any] | None = None, /, **variables: Any
    ) -> str:
        """Render ``name``; its compiled form is kept until the registry changes."""
        template = self._renderers.get(name)
        if template is None:
            template = self._renderers[name] = self.get(name)
        return template.render(context, **variables)


def _check_cycles(env: jinja2.Environment, sources: Sources, start: str) -> None:
    """Refuse include cycles reachable from ``start`` (static names only)."""
    state: dict[str, int] = {}  # 1 = on the path, 2 = done

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = " -> ".join([*path[path.index(name) :], name])
            raise TemplateRecursionError(f"partials include each other: {cycle}", template=start)
        source = sources(name)
        if source is None:
            return  # reported as PartialNotFound when rendered
        state[name] = 1
        try:
            ast = env.parse(source, name)
        except _COMPILE_ERRORS as exc:
            raise _compile_error(exc, {name}, name) from exc
        for ref in jinja2.meta.find_referenced_templates(ast):
            if ref is not None:
                visit(ref, [*path, name])
        state[name] = 2

    visit(start, [])


class PromptTemplate:
    """One template, compiled at construction.

    ``partials`` are this template's own (see :meth:`register_partial`);
    ``registry`` (optional) resolves the others. ``str(t)`` is the source.
    """

    def __init__(
        self,
        source: str,
        *,
        name: str = "<template>",
        partials: Mapping[str, str] | None = None,
        registry: TemplateRegistry | None = None,
        limits: RenderLimits | None = None,
    ) -> None:
        self.source = source
        self.name = name
        self.partials: dict[str, str] = dict(partials or {})
        self.registry = registry
        self.limits = limits or (registry.limits if registry else RenderLimits())
        self._env = _environment(self._lookup)
        self._version = 0  # of the partials; with the registry's: what was checked
        self._checked: tuple[int, int | None] | None = None
        self._compile()

    @classmethod
    def from_seed(
        cls,
        source: str,
        *,
        name: str = "<template>",
        partials: Mapping[str, str] | None = None,
        registry: TemplateRegistry | None = None,
    ) -> PromptTemplate:
        """A template (and partials) written in the handlebars-like syntax."""
        translated = {k: from_seed_syntax(v, k) for k, v in (partials or {}).items()}
        return cls(
            from_seed_syntax(source, name), name=name, partials=translated, registry=registry
        )

    def _lookup(self, name: str) -> str | None:
        if name == self.name:
            return self.source
        if name in self.partials:
            return self.partials[name]
        if self.registry is not None and name in self.registry:
            return self.registry.source(name)
        return None

    def _names(self) -> set[str]:
        names = {self.name, *self.partials}
        if self.registry is not None:
            names.update(self.registry.names())
        return names

    def _compile(self) -> jinja2.Template:
        try:
            return self._env.get_template(self.name)
        except (*_COMPILE_ERRORS, jinja2.TemplateNotFound) as exc:
            raise _compile_error(exc, self._names(), self.name) from exc

    def register_partial(self, name: str, source: str) -> PromptTemplate:
        """Add (or replace) a partial of this template; checked for syntax now."""
        try:
            self._env.parse(source, name)
        except _COMPILE_ERRORS as exc:
            raise _compile_error(exc, {name}, name) from exc
        self.partials[name] = source
        self._version += 1
        return self

    def render(self, context: Mapping[str, Any] | None = None, /, **variables: Any) -> str:
        """Render with ``context`` and ``variables`` (the latter win)."""
        values = {**(context or {}), **variables}
        template = self._compile()  # Jinja's cache: compiled once per source
        state = (self._version, None if self.registry is None else self.registry.version)
        if state != self._checked:
            _check_cycles(self._env, self._lookup, self.name)
            self._checked = state
        try:
            return render_limited(template, values, self.limits)
        except Exception as exc:
            raise _translate(exc, self._names(), self.name) from exc

    def render_with_partials(
        self, context: Mapping[str, Any] | None, partials: Mapping[str, str]
    ) -> str:
        """Render with ``partials`` in place of this template's own."""
        saved = self.partials, self._env
        self.partials = dict(partials)
        self._env = _environment(self._lookup)
        self._version += 1
        try:
            return self.render(context)
        finally:
            self.partials, self._env = saved
            self._version += 1

    def __str__(self) -> str:
        return self.source

    def __repr__(self) -> str:
        return f"PromptTemplate(name={self.name!r})"


def context_from_json(value: Any) -> dict[str, Any]:
    """A render context from JSON text or a decoded JSON value.

    The root must be an object. ``null`` becomes ``""`` (falsy, prints as
    nothing); other values stay as they are.
    """
    if isinstance(value, str | bytes):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise TemplateRenderError(f"invalid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise TemplateRenderError("the JSON root value must be an object")

    def convert(v: Any) -> Any:
        if v is None:
            return ""
        if isinstance(v, list):
            return [convert(x) for x in v]
        if isinstance(v, dict):
            return {str(k): convert(x) for k, x in v.items()}
        return v

    result: dict[str, Any] = convert(value)
    return result
