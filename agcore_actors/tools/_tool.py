"""The tool protocol, the per-call context, and tools made from typed functions.

A tool is anything with ``name``, ``description``, ``parameters`` (a JSON
Schema object), ``required_permissions``, ``requires_approval``, ``timeout``
(None: the executor's default) and ``async call(args, ctx)``. ``args`` is the
decoded JSON object the model sent; the return value is any JSON value (a
``str`` is shown to the model as is). Failures are :class:`ToolError`\\s;
any other exception counts as an execution failure.

Cancellation: ``call`` is cancelled like any trio code when the call times
out or its batch is cancelled; ``ctx.cancelled`` lets code that does not
checkpoint (a worker thread) notice it. A sync function tool runs on the tools'
own worker threads (:class:`~agcore_actors.tools.ToolThreads`), never on trio's
default limiter; it cannot be interrupted, so it should poll ``ctx.cancelled``
and return early: a thread that ignores it stays busy after its call has ended.
A child process a tool starts with ``subprocess`` outlives a cancelled call; one
started with :func:`~agcore_actors.tools.run_process` (async) or
:func:`~agcore_actors.tools.run_process_sync` (sync; it finds the call by itself) is
killed with its whole process group.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    Protocol,
    get_origin,
    get_type_hints,
    overload,
    runtime_checkable,
)

import attrs
import msgspec

from ._deps import RunContext, run_context_for
from ._errors import ExecutionFailed, InvalidArguments, ToolError
from ._results import carries_parts
from ._threads import ToolThreads, default_tool_threads

if TYPE_CHECKING:
    # Defaults (PEP 696) keep a bare ``FunctionTool`` valid under ``mypy --strict``; only
    # type checkers see them (typing_extensions comes with them), so no runtime dependency.
    from typing_extensions import ParamSpec, TypeVar

    P = ParamSpec("P", default=...)
    R = TypeVar("R", default=Any)
else:
    from typing import ParamSpec, TypeVar

    P = ParamSpec("P")
    R = TypeVar("R")

#: ``report(progress, total, message)``: progress of a running call.
ProgressReporter = Callable[[float, float | None, str | None], None]


def _no_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


@attrs.define
class CancelToken:
    """A flag a running tool may poll (set when its call is cancelled)."""

    _cancelled: bool = False

    def cancel(self) -> None:
        self._cancelled = True

    def is_cancelled(self) -> bool:
        return self._cancelled


@attrs.define
class ToolContext:
    """What a tool knows about the call it serves (defaults keep old tools working)."""

    session_id: str = ""
    trace_id: str = ""
    call_id: str = ""
    cancel_token: CancelToken = attrs.field(factory=CancelToken)
    report: ProgressReporter = _no_progress
    #: The threads a sync tool runs on; None: the run's default :class:`ToolThreads`.
    threads: ToolThreads | None = None

    @property
    def cancelled(self) -> bool:
        return self.cancel_token.is_cancelled()

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress; never blocks (the executor drops events it cannot deliver)."""
        self.report(progress, total, message)


#: The call a sync function tool's worker thread serves (set in that thread only).
_CURRENT: contextvars.ContextVar[ToolContext | None] = contextvars.ContextVar(
    "agcore_tool_context", default=None
)


def current_tool_context() -> ToolContext | None:
    """The :class:`ToolContext` of the sync function tool this thread runs, else None
    (what :func:`~agcore_actors.tools.run_process_sync` polls for cancellation)."""
    return _CURRENT.get()


def _serving(ctx: ToolContext, func: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Run ``func(**kwargs)`` in this worker thread as the call ``ctx``."""
    token = _CURRENT.set(ctx)
    try:
        return func(**kwargs)
    finally:
        _CURRENT.reset(token)


@runtime_checkable
class Tool(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parameters(self) -> Mapping[str, Any]: ...
    @property
    def required_permissions(self) -> Sequence[str]: ...
    @property
    def requires_approval(self) -> bool: ...
    @property
    def timeout(self) -> float | None: ...

    async def call(self, args: Any, ctx: ToolContext) -> Any: ...


def schema_of(struct_type: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON Schema of ``struct_type`` as one object (nested types under ``$defs``)."""
    (top,), components = msgspec.json.schema_components(
        [struct_type], ref_template="#/$defs/{name}"
    )
    name = top["$ref"].rsplit("/", 1)[1]
    schema = dict(components.pop(name))
    schema.pop("title", None)
    if components:
        schema["$defs"] = components
    return schema


@attrs.frozen
class FunctionTool(Generic[P, R]):
    """A tool from a typed Python callable (see :func:`function_tool`).

    Generic over the function's parameters ``P`` and its return type ``R``: calling the
    tool as a function (``add(1, 2)``) calls ``func`` and is type-checked like it. A bare
    ``FunctionTool`` means ``FunctionTool[..., Any]``.
    """

    name: str
    description: str
    func: Callable[P, R]
    args_type: type[msgspec.Struct]
    parameters: Mapping[str, Any]
    context_param: str | None = None
    #: The parameter that receives the turn's :class:`~._deps.RunContext` (not in the
    #: schema: the model never sees it).
    run_context_param: str | None = None
    required_permissions: tuple[str, ...] = ()
    requires_approval: bool = False
    timeout: float | None = None

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the function itself (no validation, no context, no thread): what a test of
        the function or other code of its module does."""
        return self.func(*args, **kwargs)

    def decode_args(self, args: Any) -> dict[str, Any]:
        """Validate ``args`` against the signature; raise :class:`InvalidArguments`."""
        if args is None:
            args = {}
        try:
            decoded = msgspec.convert(args, self.args_type)
        except msgspec.ValidationError as exc:
            raise InvalidArguments(self.name, str(exc)) from None
        return {f: getattr(decoded, f) for f in decoded.__struct_fields__}

    async def call(self, args: Any, ctx: ToolContext) -> Any:
        kwargs = self.decode_args(args)
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        if self.run_context_param is not None:
            run = run_context_for(ctx.session_id, ctx.trace_id)
            if run is None:
                raise ExecutionFailed(
                    self.name, "it needs the run context of an agent's turn, and none runs here"
                )
            kwargs[self.run_context_param] = run
        func: Callable[..., Any] = self.func  # called with the decoded keywords
        try:
            if inspect.iscoroutinefunction(func):
                result = await func(**kwargs)
            else:
                # A sync tool runs in a worker thread of the tools' own; on
                # cancellation the thread is abandoned (it cannot be interrupted) and
                # ctx.cancelled turns true (run_process_sync finds ctx by itself).
                threads = ctx.threads or default_tool_threads()
                call = functools.partial(_serving, ctx, func, kwargs)
                result = await threads.run_sync(self.name, call)
        except ToolError:
            raise
        except (Exception, SystemExit) as exc:  # SystemExit: argparse, click, sys.exit
            raise ExecutionFailed(self.name, f"{type(exc).__name__}: {exc}") from exc
        if carries_parts(result):
            return result  # content parts: the result's ``parts`` (see ok_result)
        return msgspec.to_builtins(result)


@overload
def function_tool(func: Callable[P, R], /) -> FunctionTool[P, R]: ...


@overload
def function_tool(
    *,
    name: str | None = None,
    description: str | None = None,
    permissions: Sequence[str] = (),
    requires_approval: bool = False,
    timeout: float | None = None,
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def function_tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    permissions: Sequence[str] = (),
    requires_approval: bool = False,
    timeout: float | None = None,
) -> Any:  # the overloads above are the public types
    """Make a :class:`FunctionTool` from ``func`` (usable as a bare or called decorator).

    Parameters become the JSON Schema through msgspec (``Annotated[...,
    msgspec.Meta(description=...)]`` documents one); a parameter annotated
    :class:`ToolContext` receives the context instead, one annotated
    :class:`~agcore_actors.tools.RunContext` the running turn's context (its ``deps``);
    neither is part of the schema. The description
    defaults to the docstring. Every parameter needs a type hint.

    The result is a ``FunctionTool[P, R]`` of ``func``'s own signature: type checkers
    check calls of the decorated name against it (``add("x")`` is an error).

    A sync ``func`` runs on a worker thread of :class:`~agcore_actors.tools.ToolThreads`;
    a thread cannot be interrupted, so a long sync tool should take a
    :class:`ToolContext` and return once ``ctx.cancelled`` is true.
    """

    def build(f: Callable[..., Any]) -> FunctionTool[..., Any]:
        hints = get_type_hints(f, include_extras=True)
        fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        context_param = None
        run_context_param = None
        for pname, param in inspect.signature(f).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"tool {f.__name__!r}: *args/**kwargs are not supported")
            if pname not in hints:
                raise TypeError(f"tool {f.__name__!r}: parameter {pname!r} has no type hint")
            if hints[pname] is ToolContext:
                context_param = pname
                continue
            if hints[pname] is RunContext or get_origin(hints[pname]) is RunContext:
                run_context_param = pname
                continue
            if param.default is param.empty:
                fields.append((pname, hints[pname]))
            else:
                fields.append((pname, hints[pname], param.default))
        tool_name = name or f.__name__
        args_type = msgspec.defstruct(
            f"{tool_name}_args", fields, kw_only=True, forbid_unknown_fields=True
        )
        return FunctionTool(
            name=tool_name,
            description=description or inspect.cleandoc(f.__doc__ or ""),
            func=f,
            args_type=args_type,
            parameters=schema_of(args_type),
            context_param=context_param,
            run_context_param=run_context_param,
            required_permissions=tuple(permissions),
            requires_approval=requires_approval,
            timeout=timeout,
        )

    if func is not None:
        return build(func)
    return build
