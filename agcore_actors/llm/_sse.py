"""Server-Sent Events decoding on bytes, with a size cap (no I/O).

The WHATWG event-stream rules the model APIs rely on: lines end in LF, CRLF or CR
(also when a CRLF is split across two reads); a line starting with ``:`` is a comment
(keep-alive); ``field: value`` drops one space after the colon; ``data`` lines of one
event are joined with LF; a blank line dispatches the event; ``event`` names it
(default ``"message"``); ``id`` and ``retry`` are ignored (no reconnection here); a
leading UTF-8 BOM is dropped; an event the stream ends in the middle of is not
dispatched.

Data stays bytes (JSON decoders take bytes), so a UTF-8 character split across reads
needs no care. No line and no event may exceed ``max_event_bytes``: the decoder raises
a :class:`StreamError` instead of buffering without bound.
"""

from __future__ import annotations

from typing import NamedTuple

from ._errors import StreamError

#: The default cap of one SSE line or event.
DEFAULT_MAX_EVENT_BYTES = 4 * 1024 * 1024

_BOM = b"\xef\xbb\xbf"


class SseEvent(NamedTuple):
    """One dispatched event: its name and its data (data lines joined with LF)."""

    event: str
    data: bytes


class SseDecoder:
    """Feed the body's bytes in order; each call returns the events completed so far.

    Raises :class:`StreamError` (naming ``provider``) when a line or an event exceeds
    ``max_event_bytes``.
    """

    __slots__ = ("_buffer", "_data", "_event", "_limit", "_provider", "_size", "_started")

    def __init__(
        self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES, provider: str = "sse"
    ) -> None:
        self._limit = max_event_bytes
        self._provider = provider
        self._buffer = b""
        self._data: list[bytes] = []
        self._event = ""
        self._size = 0
        self._started = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events that ``chunk`` completes, in order."""
        if not self._started:
            if not chunk:
                return []
            self._started = True
            if chunk.startswith(_BOM):
                chunk = chunk[3:]
        buf = self._buffer + chunk if self._buffer else chunk
        if b"\r" in buf:
            cr = buf.endswith(b"\r")  # maybe the first half of a CRLF: decide next time
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if cr:
                buf = buf[:-1] + b"\r"
        lines = buf.split(b"\n")
        self._buffer = lines.pop()
        if len(self._buffer) + self._size > self._limit:
            raise self._too_large()
        return self._lines(lines)

    def end(self) -> list[SseEvent]:
        """The body ended: a last line ended by a lone CR still counts (an event the
        body ends in the middle of is not dispatched)."""
        rest, self._buffer = self._buffer, b""
        return self._lines([rest[:-1]]) if rest.endswith(b"\r") else []

    def _lines(self, lines: list[bytes]) -> list[SseEvent]:
        events: list[SseEvent] = []
        for line in lines:
            if line.startswith(b"data:"):
                value = line[6:] if line[5:6] == b" " else line[5:]
                self._data.append(value)
                self._size += len(value)
                if self._size > self._limit:
                    raise self._too_large()
            elif not line:
                if self._data or self._event:
                    events.append(SseEvent(self._event or "message", b"\n".join(self._data)))
                    self._data = []
                    self._event = ""
                    self._size = 0
            elif line[0] != 58:  # not a ":" comment
                self._field(line)
        return events

    def _field(self, line: bytes) -> None:
        name, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"data":  # "data" without a colon: an empty data line
            self._data.append(value)

    def _too_large(self) -> StreamError:
        return StreamError(self._provider, f"an SSE line or event exceeded {self._limit} bytes")
