"""Built-in demo tools: safe ones a default agent may call without asking anyone.

- :data:`current_time` — the date and time now, in UTC or an IANA time zone;
- :data:`calculate` — an arithmetic expression (numbers, ``+ - * / // % **``, parentheses,
  ``abs round min max sqrt``), evaluated on its syntax tree, never by ``eval``;
- :data:`read_file` — a UTF-8 text file under the working directory, at most 64 KiB;
- :data:`list_files` — the entries of a directory under the working directory;
- :data:`write_file` — writes a text file under the working directory; it declares
  ``Write`` and needs a human's approval.

Every path is resolved (symlinks too) and must stay under the directory the tools were
made for (:func:`builtin_tools`), so ``../`` and absolute paths elsewhere are refused. No
tool here declares ``Shell`` or ``Delete``, which the default :class:`PermissionConfig`
refuses; :data:`CLI_PERMISSIONS` is that default plus ``Write``.

Errors: a refused path, a missing file, a bad expression are the call's
:class:`~agcore_actors.tools.ExecutionFailed` result (the model sees the reason); nothing
here raises past its call. Cancellation: the file tools are short sync calls on the tools'
threads; the others do not block.
"""

from __future__ import annotations

import ast
import datetime
import math
import operator
import zoneinfo
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import msgspec

from .._exports import publish
from ._errors import ExecutionFailed
from ._permission import DELETE, NETWORK, READ, SHELL, WRITE, PermissionConfig
from ._tool import FunctionTool, function_tool

__all__ = ["CLI_PERMISSIONS", "MAX_READ_BYTES", "builtin_tools", "calculate", "current_time"]

#: The most bytes :func:`read_file` returns (a longer file is cut, and says so).
MAX_READ_BYTES = 64 * 1024
_MAX_ENTRIES = 200
_MAX_POWER = 10_000

#: The default rules plus ``Write`` (which :data:`write_file` also gates by approval).
CLI_PERMISSIONS = PermissionConfig(allowed=(READ, NETWORK, WRITE), denied=(DELETE, SHELL))


@function_tool(name="current_time")
def _current_time(
    timezone: Annotated[
        str, msgspec.Meta(description="IANA time zone such as Europe/Paris; default UTC")
    ] = "UTC",
) -> str:
    """Get the current date and time (ISO 8601) in a time zone."""
    try:
        zone: datetime.tzinfo = zoneinfo.ZoneInfo(timezone or "UTC")
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ExecutionFailed("current_time", f"unknown time zone {timezone!r}") from None
    now = datetime.datetime.now(zone)
    return f"{now.isoformat(timespec='seconds')} ({now:%A}, {timezone or 'UTC'})"


current_time: FunctionTool = _current_time

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
}


def _evaluate(node: ast.AST) -> int | float:
    match node:
        case ast.Expression(body=body):
            return _evaluate(body)
        case ast.Constant(value=value) if isinstance(value, int | float) and not isinstance(
            value, bool
        ):
            return value
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _BINARY:
            a, b = _evaluate(left), _evaluate(right)
            if isinstance(op, ast.Pow) and abs(b) > _MAX_POWER:
                raise ValueError(f"exponent {b} is too large")
            result: int | float = _BINARY[type(op)](a, b)
            return result
        case ast.UnaryOp(op=op, operand=operand) if type(op) in _UNARY:
            value = _UNARY[type(op)](_evaluate(operand))
            assert isinstance(value, int | float)
            return value
        case ast.Call(func=ast.Name(id=name), args=args, keywords=[]) if name in _FUNCTIONS:
            called = _FUNCTIONS[name](*(_evaluate(a) for a in args))
            assert isinstance(called, int | float)
            return called
        case _:
            raise ValueError(f"unsupported syntax: {ast.unparse(node)!r}")


@function_tool(name="calculate")
def _calculate(
    expression: Annotated[
        str, msgspec.Meta(description="The arithmetic expression to evaluate, written as in Python")
    ],
) -> str:
    """Evaluate an arithmetic expression exactly and return the result."""
    text = expression.replace("^", "**").replace("\N{MULTIPLICATION SIGN}", "*")
    try:
        value = _evaluate(ast.parse(text.strip(), mode="eval"))
    except (SyntaxError, ValueError, TypeError, ZeroDivisionError, OverflowError) as exc:
        raise ExecutionFailed("calculate", f"cannot evaluate {expression!r}: {exc}") from None
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    return f"{expression} = {value}"


calculate: FunctionTool = _calculate


def _inside(root: Path, tool: str, path: str) -> Path:
    target = (root / path).resolve()
    if target != root and root not in target.parents:
        raise ExecutionFailed(tool, f"{path!r} is outside the working directory")
    return target


def builtin_tools(root: Path | str | None = None) -> list[FunctionTool]:
    """The demo tools, with the file tools confined to ``root`` (None: the current
    working directory, taken now)."""
    base = Path(root if root is not None else Path.cwd()).resolve()

    @function_tool(permissions=(READ,))
    def read_file(
        path: Annotated[str, msgspec.Meta(description="File path relative to the working dir")],
    ) -> str:
        """Read a UTF-8 text file from the working directory."""
        target = _inside(base, "read_file", path)
        try:
            with target.open("rb") as file:
                data = file.read(MAX_READ_BYTES + 1)
        except OSError as exc:
            raise ExecutionFailed("read_file", f"{path}: {exc.strerror}") from None
        text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
        if len(data) > MAX_READ_BYTES:
            text += f"\n[cut at {MAX_READ_BYTES} bytes]"
        return text

    @function_tool(permissions=(READ,))
    def list_files(
        directory: Annotated[
            str, msgspec.Meta(description="Directory relative to the working dir")
        ] = ".",
    ) -> str:
        """List the files and directories in a directory of the working directory."""
        target = _inside(base, "list_files", directory)
        try:
            entries = sorted(target.iterdir())
        except OSError as exc:
            raise ExecutionFailed("list_files", f"{directory}: {exc.strerror}") from None
        names = [e.name + ("/" if e.is_dir() else "") for e in entries[:_MAX_ENTRIES]]
        more = len(entries) - len(names)
        return "\n".join(names + ([f"[{more} more]"] if more > 0 else [])) or "(empty)"

    @function_tool(requires_approval=True, permissions=(WRITE,))
    def write_file(
        path: Annotated[str, msgspec.Meta(description="File path relative to the working dir")],
        content: Annotated[str, msgspec.Meta(description="The whole new text of the file")],
    ) -> str:
        """Write a text file in the working directory (asks the user first)."""
        target = _inside(base, "write_file", path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        except OSError as exc:
            raise ExecutionFailed("write_file", f"{path}: {exc.strerror}") from None
        return f"wrote {len(content.encode())} bytes to {path}"

    return [current_time, calculate, read_file, list_files, write_file]


publish(__name__, __all__)
