"""The sandbox templates render in, with bounds on the work and the size of a render.

Jinja2's :class:`~jinja2.sandbox.ImmutableSandboxedEnvironment` stops escapes
(private attributes, unsafe calls, mutating what was passed in) but not a
template that loops for hours or builds a gigabyte string. This one also counts:

- *work*: every loop iteration (``{% for %}``, recursive ``loop(...)`` calls
  included), every call (macros, methods, globals) and every filter; past
  :attr:`RenderLimits.max_work` the render stops;
- *size*: the output, and any one value a template makes (by ``*``, ``+``, ``~``,
  ``**``, ``%``, a filter or a call), may hold at most
  :attr:`RenderLimits.max_output` characters (items, for a list). Sizes are
  checked *before* an operation allocates where the result's size is known
  from its operands (``"a" * n``, ``n ** m``, a format width, an integer argument
  such as ``center(n)``), and after it otherwise.

Exceeding either is :class:`TemplateLimitExceeded` (a :class:`PromptError`): the
render stops, nothing is returned. The budget is per render (a context
variable), so renders in several threads or tasks do not share it.
"""

from __future__ import annotations

import contextvars
import functools
import math
import re
import string
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs
import jinja2
from jinja2 import nodes
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

from .._validators import positive
from ._errors import TemplateLimitExceeded


@attrs.frozen(kw_only=True)
class RenderLimits:
    """Bounds on one render (see the module doc)."""

    #: Characters of output, and characters (or items) of any one value.
    max_output: int = attrs.field(default=1_000_000, validator=positive)
    #: Loop iterations, calls and filters, all counted together (about a second).
    max_work: int = attrs.field(default=100_000, validator=positive)


class _Budget:
    __slots__ = ("limits", "work")

    def __init__(self, limits: RenderLimits) -> None:
        self.limits = limits
        self.work = 0

    def spend(self) -> None:
        self.work += 1
        if self.work > self.limits.max_work:
            raise TemplateLimitExceeded(
                f"the render did more than {self.limits.max_work} operations "
                "(loop iterations, calls, filters): work limit",
                limit="work",
            )

    def check_size(self, size: float) -> None:
        if size > self.limits.max_output:
            raise TemplateLimitExceeded(
                f"a value of {size:.0f} characters or items is over the value limit "
                f"of {self.limits.max_output}",
                limit="value",
            )

    def check_value(self, value: Any) -> Any:
        if isinstance(value, str | bytes | list | tuple | dict):
            self.check_size(len(value))
        return value

    def check_arguments(self, args: Iterable[Any]) -> None:
        for arg in args:
            if isinstance(arg, int) and not isinstance(arg, bool):
                self.check_size(abs(arg))


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar(
    "template_budget", default=None
)

# printf-style widths and precisions: "%1000s", "%.1000f"
_PERCENT_SIZES = re.compile(r"%[-#0 +]*(\d*)(?:\.(\d+))?")
_DIGITS = re.compile(r"\d+")


def _budget() -> _Budget | None:
    return _BUDGET.get()


def _check_format(budget: _Budget, fmt: str, braces: bool, values: Iterable[Any] = ()) -> None:
    """Refuse a format string whose widths alone exceed the value limit. A nested spec
    (``"{:{}}"``) takes its width from ``values``: every number in a string among them
    counts as a width too."""
    if braces:
        try:
            specs = [spec or "" for _, _, spec, _ in string.Formatter().parse(fmt)]
        except ValueError:
            return  # the call itself will fail
        numbers = [n for spec in specs for n in _DIGITS.findall(spec)]
        if any("{" in spec for spec in specs):
            texts = [v for v in values if isinstance(v, str)]
            numbers += [n for text in texts for n in _DIGITS.findall(text)]
    else:
        numbers = [n for m in _PERCENT_SIZES.finditer(fmt) for n in m.groups() if n]
    for number in numbers:
        budget.check_size(int(number))


def _size_of_binop(operator: str, left: Any, right: Any) -> float:
    """The size of ``left operator right`` when known before computing it (else 0)."""
    sized = (str, bytes, list, tuple)
    if operator == "*":
        if isinstance(left, sized) and isinstance(right, int):
            return len(left) * right
        if isinstance(right, sized) and isinstance(left, int):
            return len(right) * left
    elif operator == "+" and isinstance(left, sized) and isinstance(right, sized):
        return len(left) + len(right)
    elif (
        operator == "**"
        and isinstance(left, int)
        and isinstance(right, int)
        and right > 0
        and abs(left) > 1
    ):
        return right * math.log10(abs(left))  # decimal digits of the result
    return 0


def guarded_loop(iterable: Any) -> Iterator[Any]:
    """The iterable of a ``{% for %}``, counting one unit of work per item."""
    budget = _budget()
    for item in iterable:
        if budget is not None:
            budget.spend()
        yield item


def _guard_filter(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    passes = getattr(fn, "jinja_pass_arg", None) is not None  # context or environment first

    @functools.wraps(fn)  # keeps Jinja's pass_context/pass_environment mark
    def filter(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        if budget is None:
            # Outside a render: Jinja folding a constant at compile time. Let it
            # run at render time instead, within the limits.
            raise nodes.Impossible()
        budget.spend()
        head, rest = (args[:1], args[1:]) if passes else ((), args)
        if not rest:
            return budget.check_value(fn(*args, **kwargs))
        value, params = rest[0], rest[1:]
        budget.check_arguments(params)
        budget.check_arguments(kwargs.values())
        if name == "format" and isinstance(value, str):
            _check_format(budget, value, braces=False)
        elif name == "replace" and isinstance(value, str) and len(params) >= 2:
            old, new = str(params[0]), str(params[1])
            if old:
                budget.check_size(len(value) + value.count(old) * max(0, len(new) - len(old)))
        elif name == "join" and not isinstance(value, str | jinja2.Undefined):
            value = list(value)  # it is iterated anyway; its size is known now
            separator = str(params[0] if params else kwargs.get("d", ""))
            texts = sum(len(v) for v in value if isinstance(v, str))
            budget.check_size(texts + len(separator) * max(0, len(value) - 1))
        return budget.check_value(fn(*head, value, *params, **kwargs))

    return filter


def guarded_value(value: Any) -> Any:
    """A value the template built (``a ~ b``): refused if over the value limit."""
    budget = _budget()
    return value if budget is None else budget.check_value(value)


class _Guards(NodeTransformer):
    """Routes every loop's iterable and every ``~`` through the guards."""

    def _wrap(self, node: nodes.Node, guard: str) -> nodes.Filter:
        return nodes.Filter(node, guard, [], [], None, None, lineno=node.lineno)

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = self._wrap(node.iter, "_guarded_loop")
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return self._wrap(node, "_guarded_value")


class LimitedEnvironment(ImmutableSandboxedEnvironment):
    """The immutable sandbox, with the work and size bounds of the module doc."""

    intercepted_binops = frozenset(["*", "**", "+", "%"])

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.filters = {name: _guard_filter(name, f) for name, f in self.filters.items()}
        self.filters["_guarded_loop"] = guarded_loop
        self.filters["_guarded_value"] = guarded_value
        self.globals.pop("lipsum", None)  # text on demand, of any size: not for prompts

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        guarded = _Guards().visit(tree)
        assert isinstance(guarded, nodes.Template)
        return guarded

    def call_binop(
        self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any
    ) -> Any:
        budget = _budget()
        if budget is not None:
            budget.check_size(_size_of_binop(operator, left, right))
            if operator == "%" and isinstance(left, str):
                _check_format(budget, left, braces=False)
                budget.check_arguments(right if isinstance(right, tuple) else (right,))
        result = super().call_binop(context, operator, left, right)
        return result if budget is None else budget.check_value(result)

    def call(
        __self, __context: jinja2.runtime.Context, __obj: Any, *args: Any, **kwargs: Any
    ) -> Any:
        budget = _budget()
        if budget is None:
            return super().call(__context, __obj, *args, **kwargs)
        budget.spend()
        budget.check_arguments(args)
        budget.check_arguments(kwargs.values())
        target = getattr(__obj, "__wrapped__", __obj)
        receiver = getattr(target, "__self__", None)
        if isinstance(receiver, str) and getattr(target, "__name__", "") in (
            "format",
            "format_map",
        ):
            mappings = [a for a in args if isinstance(a, dict)]  # format_map's argument
            nested = [*args, *kwargs.values(), *(v for m in mappings for v in m.values())]
            _check_format(budget, receiver, braces=True, values=nested)
        if isinstance(__obj, LoopContext) and args:
            args = (guarded_loop(args[0]), *args[1:])  # a recursive loop's next level
        return budget.check_value(super().call(__context, __obj, *args, **kwargs))


def render_limited(template: jinja2.Template, values: dict[str, Any], limits: RenderLimits) -> str:
    """Render ``template`` within ``limits`` (see the module doc)."""
    budget = _Budget(limits)
    token = _BUDGET.set(budget)
    try:
        out: list[str] = []
        size = 0
        for chunk in template.generate(values):
            size += len(chunk)
            if size > limits.max_output:
                raise TemplateLimitExceeded(
                    f"the output is over {limits.max_output} characters: output limit",
                    limit="output",
                )
            out.append(chunk)
        return "".join(out)
    finally:
        _BUDGET.reset(token)
