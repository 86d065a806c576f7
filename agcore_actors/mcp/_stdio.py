"""Stdio transport: the server is a child process speaking newline-delimited
JSON-RPC on stdin/stdout; its stderr goes to our log, and only there (never into an
error, so never into a tool message), with its configured ``env`` values redacted.

A line over ``max_message_bytes`` is skipped without being held in memory, and only
the request it answers fails (:class:`McpMessageTooLarge`, found by the id at either
end of the line; a line without one is dropped with a warning and its request times
out). The server starts in a process group of its own, so that a wrapper (``sh -c``,
``npx``, ``uvx``) and everything it started go together. Shutdown
(:meth:`StdioTransport.aclose`): close stdin (MCP servers exit at EOF) and wait
``grace`` seconds for the server; then SIGTERM the whole group, wait up to ``grace``
for it to be gone, and SIGKILL what is left; always reap the server: no zombie and no
orphan of the group, even when cancelled; then close our ends of its pipes. (A process
that left the group on purpose, a daemon, is out of reach by design.)
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import signal
import subprocess

import trio

from ._config import StdioServer, child_environment
from ._errors import McpConnectionClosed, McpMessageTooLarge
from ._jsonrpc import oversized_answer_id
from ._policy import redact, secret_values
from ._transport import Closed, Deliver, Fail, Waiting

log = logging.getLogger("agcore_actors.mcp.stdio")

#: The default cap on one message (a line): a longer one fails the request it answers.
MAX_LINE_BYTES = 16 * 1024 * 1024
#: Bytes kept from each end of an oversized line, to find the id of its request.
_KEEP = 4096


class StdioTransport:
    def __init__(
        self,
        name: str,
        config: StdioServer,
        *,
        grace: float = 2.0,
        max_message_bytes: int = MAX_LINE_BYTES,
    ) -> None:
        self.name = name
        self.config = config
        self.grace = grace
        self.max_message_bytes = max_message_bytes
        self.process: trio.Process | None = None
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        self._closing = False
        self._send_lock = trio.Lock()

    async def start(
        self, nursery: trio.Nursery, deliver: Deliver, fail: Fail, closed: Closed, waiting: Waiting
    ) -> None:
        try:
            self.process = await trio.lowlevel.open_process(
                [self.config.command, *self.config.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=child_environment(self.config),
                cwd=self.config.cwd,
                start_new_session=True,
            )
        except OSError as exc:
            raise McpConnectionClosed(
                self.name, f"cannot start {self.config.command!r}: {exc.strerror or exc}"
            ) from None
        nursery.start_soon(self._read_stdout, deliver, fail, closed)
        nursery.start_soon(self._read_stderr)

    async def _read_stdout(self, deliver: Deliver, fail: Fail, closed: Closed) -> None:
        assert self.process is not None and self.process.stdout is not None
        stream = self.process.stdout
        limit = self.max_message_bytes
        buffer = bytearray()
        # While a line over the limit is skipped: its first and last bytes, where the
        # id of the request it answers can be found.
        head: bytes | None = None
        tail = b""
        reason = "the server closed its stdout"
        try:
            while chunk := await stream.receive_some(65536):
                scan = len(buffer)  # only the new bytes can hold a newline
                buffer += chunk
                while (end := buffer.find(b"\n", scan)) >= 0:
                    if head is not None:
                        self._too_large(head, (tail + buffer[:end])[-_KEEP:], fail)
                        head, tail = None, b""
                    elif end > limit:
                        line_tail = bytes(buffer[max(0, end - _KEEP) : end])
                        self._too_large(bytes(buffer[:_KEEP]), line_tail, fail)
                    elif line := bytes(buffer[:end]).strip():
                        deliver(line, None)
                    del buffer[: end + 1]
                    scan = 0
                if head is None and len(buffer) > limit:
                    head, tail = bytes(buffer[:_KEEP]), bytes(buffer[-_KEEP:])
                    buffer.clear()
                elif head is not None:
                    tail = (tail + buffer)[-_KEEP:]
                    buffer.clear()
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            reason = f"reading stdout failed: {exc}"
        if not self._closing:
            # The process usually exits right after closing stdout: name its status.
            with trio.move_on_after(0.5):
                await self.process.wait()
            code = self.process.returncode
            status = f" (exit status {code})" if code is not None else ""
            # Its last stderr lines go to the log only: a server may print its
            # configuration there, and the reason ends up in tool messages.
            if self.stderr_tail:
                log.warning(
                    "[%s] server gone%s; its last stderr lines:\n%s",
                    self.name,
                    status,
                    "\n".join(self.stderr_tail),
                )
            closed(f"{reason}{status}")

    def _too_large(self, head: bytes, tail: bytes, fail: Fail) -> None:
        """An oversized line was skipped: fail the request it answers, if it names one."""
        request_id = oversized_answer_id(head, tail)
        log.warning(
            "[%s] skipped a message over %d bytes (answer to request %r)",
            self.name,
            self.max_message_bytes,
            request_id,
        )
        if request_id is not None:
            fail(request_id, McpMessageTooLarge(self.name, self.max_message_bytes))

    async def _read_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        secrets = secret_values(self.config)  # a server may print its configuration
        buffer = bytearray()
        try:
            while chunk := await self.process.stderr.receive_some(65536):
                buffer += chunk
                while (end := buffer.find(b"\n")) >= 0:
                    line = redact(buffer[:end].decode("utf-8", "replace").rstrip(), secrets)
                    del buffer[: end + 1]
                    self.stderr_tail.append(line)
                    log.info("[%s] %s", self.name, line)
                del buffer[:-MAX_LINE_BYTES]  # keep memory bounded on a never-ending line
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def send(self, data: bytes, request_id: int | str | None) -> None:
        assert self.process is not None and self.process.stdin is not None
        async with self._send_lock:
            try:
                await self.process.stdin.send_all(data + b"\n")
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise McpConnectionClosed(self.name, f"writing stdin failed: {exc}") from None

    def negotiated(self, protocol_version: str) -> None:
        return None

    async def initialized(self) -> None:
        return None

    async def aclose(self) -> None:
        process = self.process
        if process is None:
            return
        self._closing = True
        with trio.CancelScope(shield=True):
            if process.stdin is not None:
                with contextlib.suppress(trio.BrokenResourceError):
                    await process.stdin.aclose()
            with trio.move_on_after(self.grace):
                await process.wait()
            # The server's pid is its group's id (start_new_session); the group
            # outlives a leader that exited while members of it still run.
            group = process.pid
            if process.returncode is None or _group_alive(group):
                _signal_group(group, signal.SIGTERM)
                with trio.move_on_after(self.grace):
                    await process.wait()
                    # Polling: the death of a process that is not our child has no
                    # event to wait on.
                    while _group_alive(group):  # noqa: ASYNC110
                        await trio.sleep(0.01)
                _signal_group(group, signal.SIGKILL)
            await process.wait()  # SIGKILL cannot be ignored: this returns
            # Our ends of its stdout and stderr pipes: closed now, not when a garbage
            # collection gets to the process object (a server that keeps crashing would
            # run us out of file descriptors first). A reader still in them sees the
            # stream closed and ends.
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    await stream.aclose()


def _group_alive(group: int) -> bool:
    """Whether process group ``group`` has a member; only ESRCH proves it gone."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)
