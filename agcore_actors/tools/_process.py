"""Child processes for tools: :func:`run_process` (async tools) and
:func:`run_process_sync` (sync tools, on their worker threads).

Both run ``command`` (a list: no shell unless you run one) like ``subprocess.run`` with
``capture_output=True`` and return a :class:`subprocess.CompletedProcess` of bytes, but:

- the child starts a process group (a session) of its own, and when the call ends the
  whole group is killed (``SIGKILL``): on cancellation, on timeout, on any error, and
  also after the child exits normally (a background process it left behind). So no
  process the call started outlives it, grandchildren included — except one that left
  the group itself (``setsid``, a daemon), which is out of reach;
- its stdin is ``/dev/null`` unless ``input`` is given (``serve --stdio`` reads its
  protocol from the server's own stdin);
- ``timeout`` kills the group and raises :class:`subprocess.TimeoutExpired`; ``check``
  raises :class:`subprocess.CalledProcessError` for a non-zero exit status.

Cancellation: :func:`run_process` is cancelled like any trio code; the group is killed
and the leader reaped before the cancellation goes on. :func:`run_process_sync` cannot be
interrupted, so it polls its tool call's ``ctx.cancelled`` (the
:class:`~agcore_actors.tools.ToolContext` given, else that of the sync function tool it
runs in) every 50 ms: once the call is cancelled or times out, it kills the group and
raises :class:`~agcore_actors.tools.ToolCancelled`, and the worker thread returns. Outside
a tool call, only ``timeout`` bounds it. Its waiting is on the OS clock (a worker thread
has no trio clock). A tool that uses ``subprocess`` directly gets none of this: its child
runs on after the call is cancelled.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import trio

from ._errors import ToolCancelled
from ._tool import ToolContext, current_tool_context

if TYPE_CHECKING:
    from trio.abc import ReceiveStream, SendStream

__all__ = ["run_process", "run_process_sync"]

Command = Sequence[str | os.PathLike[str]]
Directory = str | os.PathLike[str] | None

#: How often a sync call looks at ``ctx.cancelled``, in seconds.
_POLL = 0.05
#: How long the leader, killed, may take to be reaped before we stop waiting.
_REAP = 5.0


def _kill_group(pgid: int) -> None:
    """SIGKILL every process of group ``pgid`` (none left: nothing to do).

    Called before the leader is reaped wherever the call ends early, so the group id
    cannot have been reused."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _program(command: Command) -> list[str | os.PathLike[str]]:
    """``command`` as a list; ``ValueError`` when it names no program."""
    args = list(command)
    if not args or isinstance(command, str | bytes):
        raise ValueError("command must be a non-empty list: the program, then its arguments")
    return args


def _finished(
    args: list[str | os.PathLike[str]],
    returncode: int,
    stdout: bytes | None,
    stderr: bytes | None,
    check: bool,
) -> subprocess.CompletedProcess[bytes]:
    if check and returncode:
        raise subprocess.CalledProcessError(returncode, args, stdout, stderr)
    return subprocess.CompletedProcess(args, returncode, stdout, stderr)


async def run_process(
    command: Command,
    *,
    input: bytes | None = None,
    timeout: float | None = None,
    check: bool = False,
    capture_output: bool = True,
    cwd: Directory = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``command`` in a process group of its own; kill the group when the call ends.

    See the module docstring. Raises ``ValueError`` for an empty ``command`` (or a
    string: pass a list), ``OSError`` when it cannot start (a missing
    program: ``FileNotFoundError``), :class:`subprocess.TimeoutExpired` after
    ``timeout`` seconds (of trio's clock), and :class:`subprocess.CalledProcessError`
    with ``check``.
    """
    args = _program(command)
    pipe = subprocess.PIPE if capture_output else None
    process = await trio.lowlevel.open_process(
        args,
        stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
        stdout=pipe,
        stderr=pipe,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    out: list[bytes] = []
    err: list[bytes] = []
    try:
        with trio.move_on_after(math.inf if timeout is None else timeout) as limit:
            async with trio.open_nursery() as nursery:
                if input is not None and process.stdin is not None:
                    nursery.start_soon(_feed, process.stdin, input)
                if process.stdout is not None:
                    nursery.start_soon(_read, process.stdout, out)
                if process.stderr is not None:
                    nursery.start_soon(_read, process.stderr, err)
                await process.wait()
    finally:
        # Cancelled, timed out or failed: the leader is not reaped yet, so its group id
        # is still ours to kill. Finished: any process it left in the group.
        _kill_group(process.pid)
        with trio.CancelScope(shield=True):
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    await stream.aclose()
            with trio.move_on_after(_REAP):
                await process.wait()
    stdout = b"".join(out) if capture_output else None
    stderr = b"".join(err) if capture_output else None
    if limit.cancelled_caught:
        assert timeout is not None
        raise subprocess.TimeoutExpired(args, timeout, stdout, stderr)
    assert process.returncode is not None
    return _finished(args, process.returncode, stdout, stderr, check)


async def _feed(stream: SendStream, data: bytes) -> None:
    async with stream:
        with contextlib.suppress(trio.BrokenResourceError):
            await stream.send_all(data)


async def _read(stream: ReceiveStream, chunks: list[bytes]) -> None:
    async with stream:
        async for chunk in stream:
            chunks.append(bytes(chunk))


def run_process_sync(
    command: Command,
    *,
    input: bytes | None = None,
    timeout: float | None = None,
    check: bool = False,
    capture_output: bool = True,
    cwd: Directory = None,
    env: Mapping[str, str] | None = None,
    ctx: ToolContext | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """:func:`run_process` for sync code: a sync tool's worker thread (never the event
    loop: it blocks). ``ctx``: the tool call whose cancellation kills the group (default:
    the call of the sync function tool this thread runs). Raises as :func:`run_process`
    does, and :class:`~agcore_actors.tools.ToolCancelled` once ``ctx`` is cancelled.
    """
    args = _program(command)
    ctx = ctx if ctx is not None else current_tool_context()
    if ctx is not None and ctx.cancelled:  # abandoned before it began: start nothing
        raise ToolCancelled(f"{os.fspath(args[0])!s} was not started")
    deadline = math.inf if timeout is None else time.monotonic() + timeout
    pipe = subprocess.PIPE if capture_output else None
    process = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
        stdout=pipe,
        stderr=pipe,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    try:
        while True:
            step = min(_POLL, max(0.0, deadline - time.monotonic()))
            try:
                stdout, stderr = process.communicate(input, timeout=step)
                break
            except subprocess.TimeoutExpired:
                if ctx is not None and ctx.cancelled:
                    raise ToolCancelled(f"{os.fspath(args[0])!s} was killed") from None
                if time.monotonic() >= deadline:
                    assert timeout is not None
                    raise subprocess.TimeoutExpired(args, timeout) from None
    finally:
        # As in run_process: before the leader is reaped when the call ends early.
        _kill_group(process.pid)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(_REAP)
    return _finished(args, process.returncode, stdout, stderr, check)
