"""The server process: launch it in its own process group, learn its URL, probe its
readiness, and stop the whole group.

Guarantees:

- :func:`launch` starts ``_child.py`` with ``start_new_session=True``: the server is the
  leader of a new process group (its pid is the group id) and a terminal's Ctrl-C does
  not reach it; its stdin is a pipe we hold, so it exits when we close it or die.
- :func:`stop_group` always ends with the leader reaped, the group having had SIGTERM and,
  if that did not end it within ``grace``, SIGKILL; it runs shielded, so a cancelled
  caller still leaves no process behind. (The server runs threads, not processes: its
  group is the leader alone.)
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import signal
import subprocess
from pathlib import Path
from typing import Any, NoReturn

import httpx2
import trio

from ._child import EXIT_NO_RUNTIME
from ._errors import LocalRuntimeMissing, LocalServerStartFailed

log = logging.getLogger("agcore_actors.local")

CHILD = Path(__file__).with_name("_child.py")
_MAX_LINE = 64 * 1024


class ServerProcess:
    """One launched server: the process, the tail of its stderr, and its URL once known."""

    def __init__(self, process: trio.Process, python: str) -> None:
        self.process = process
        self.python = python
        self.pid = process.pid
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=12)
        self.url = ""

    def tail(self) -> str:
        return " | ".join(line for line in self.stderr_tail if line)[-1500:]

    async def drain_stderr(self) -> None:
        """Keep the last lines of the server's stderr and log them (a background task)."""
        stream = self.process.stderr
        assert stream is not None
        buffer = bytearray()
        try:
            while chunk := await stream.receive_some(65536):
                buffer += chunk
                while (end := buffer.find(b"\n")) >= 0:
                    line = buffer[:end].decode("utf-8", "replace").rstrip()
                    del buffer[: end + 1]
                    self.stderr_tail.append(line)
                    log.debug("[local model %d] %s", self.pid, line)
                del buffer[:-_MAX_LINE]
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def read_url(self) -> str:
        """Wait for the child's ``{"url": ...}`` line on stdout and return the URL.

        Other lines (a library printing on stdout) are logged and skipped. Raises
        :class:`LocalRuntimeMissing` or :class:`LocalServerStartFailed` when the process
        closes its stdout first.
        """
        stream = self.process.stdout
        assert stream is not None
        buffer = bytearray()
        while True:
            while (end := buffer.find(b"\n")) >= 0:
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                try:
                    self.url = str(json.loads(line)["url"])
                except (ValueError, KeyError, TypeError):
                    log.debug("[local model %d] stdout: %r", self.pid, line[:200])
                    continue
                return self.url
            chunk = await stream.receive_some(4096)
            if not chunk:
                await self._failed()
            buffer += chunk
            del buffer[:-_MAX_LINE]

    async def drain_stdout(self) -> None:
        """Read and drop stdout after the URL line, so a chatty child never blocks on a
        full pipe (a background task)."""
        stream = self.process.stdout
        assert stream is not None
        try:
            while await stream.receive_some(65536):
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def _failed(self) -> NoReturn:
        code = await self.process.wait()
        await trio.sleep(0.05)  # let the stderr reader take the last lines
        if code == EXIT_NO_RUNTIME:
            raise LocalRuntimeMissing(self.python, self.tail())
        raise LocalServerStartFailed(code, self.tail())

    async def wait_healthy(self, client: httpx2.AsyncClient, interval: float = 0.05) -> None:
        """Poll ``GET /health`` until it answers 200 (a loading server answers 503)."""
        while True:
            if self.process.returncode is not None:
                await self._failed()
            try:
                response = await client.get(self.url + "/health")
                if response.status_code == 200:
                    return
            except httpx2.TransportError:
                pass
            await trio.sleep(interval)


async def launch(python: str, options: dict[str, Any]) -> ServerProcess:
    """Start the server process in a new process group (see the module doc)."""
    try:
        process = await trio.lowlevel.open_process(
            [python, str(CHILD), json.dumps(options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise LocalRuntimeMissing(python, exc.strerror or str(exc)) from None
    return ServerProcess(process, python)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def stop_group(server: ServerProcess, grace: float) -> int | None:
    """SIGTERM the group, SIGKILL it after ``grace`` s, reap the leader; the exit code.

    Shielded: completes even when the caller is cancelled. The group is only signalled
    while its leader is unreaped, so its id cannot belong to anyone else yet.
    """
    process = server.process
    with trio.CancelScope(shield=True):
        if process.returncode is None:
            _signal_group(server.pid, signal.SIGTERM)
            with trio.move_on_after(grace):
                await process.wait()
        if process.returncode is None:
            _signal_group(server.pid, signal.SIGKILL)
            await process.wait()  # SIGKILL cannot be ignored: this returns
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                await stream.aclose()
    return process.returncode
