"""``serve --stdio``: a bot host over JSON lines on stdin and stdout.

Semantics:
    Each input line is one command (see :mod:`agcore_actors.serve._wire`). A turn
    command is answered by one line per turn event, each with ``session``, ``turn`` and
    ``event``; every turn ends with exactly one line whose ``event`` is
    ``turn_completed``, ``turn_cancelled`` or ``turn_failed`` (with ``error_kind``) —
    also a turn that never started (refused by the host, or dropped at shutdown). Turns
    of different sessions run concurrently; the turns of one session run one at a time
    in input order. ``cancel`` and ``approve`` are answered by one line each
    (``cancelled`` / ``answered``: whether a running turn took it); ``answer`` and
    ``resume`` answer and resume a suspended turn (see :mod:`._resume`), one line each.
    A malformed or unknown command, or an id outside the id rule, gets one ``error`` line naming the
    problem and changes nothing. A turn id is an idempotency key within its session: a
    turn command whose (session, turn) is queued, running or stored already gets one
    ``error`` line with ``error_kind`` ``turn_exists`` and runs nothing. With a
    ``tenant``, every session id is the tenant's: ``s1`` is stored as
    ``tenant/s1``, and no command reaches another's session.

Ending:
    At end of input the turns in flight and queued run to their end (each committed),
    then :func:`serve_stdio` returns 0. SIGTERM stops reading and does the same within
    ``drain_timeout`` seconds, after which the rest is cancelled (committed as
    cancelled); it returns 0. SIGINT stops reading and cancels every turn at once (each
    is committed as cancelled before its final line is written); it returns 130.

Cancellation:
    Cancelling :func:`serve_stdio` cancels every turn (each committed by the host before
    the cancellation completes); final lines are still written when the sink allows.
"""

from __future__ import annotations

import collections
import signal
from typing import Any

import attrs
import msgspec
import trio

from .._errors import AgcoreError
from .._ids import new_id
from .._validators import at_least_one, non_negative
from ..agent import SessionHost, StoreTurns
from ..agent import messages as am
from ..store import messages as sm
from . import _elicit, _resume
from ._auth import check_id
from ._errors import BadCommand
from ._logging import log_event
from ._wire import (
    ApproveCommand,
    CancelCommand,
    TurnCommand,
    event_fields,
    final_fields,
    parse_line,
)

__all__ = ["StdioConfig", "serve_stdio"]

OK = 0
INTERRUPTED = 130
_FINAL = (am.TurnCompleted, am.TurnCancelled, am.TurnFailed, am.TurnSuspended)


def _tenant_name(_: object, attribute: object, value: str) -> None:
    if value:
        check_id("tenant", value)


@attrs.frozen(kw_only=True)
class StdioConfig:
    """Limits of :func:`serve_stdio`."""

    #: Seconds SIGTERM gives the turns in flight and queued before cancelling them.
    drain_timeout: float = attrs.field(default=30.0, validator=non_negative)
    #: Longest input line in bytes; a longer one gets an ``error`` line.
    max_line: int = attrs.field(default=1 << 20, validator=at_least_one)
    #: Turns one session may have waiting behind its running one; more are refused.
    max_queued: int = attrs.field(default=64, validator=at_least_one)
    #: Handle SIGTERM and SIGINT (main thread only).
    signals: bool = True
    #: The tenant whose sessions these are ("": ids stored as they are).
    tenant: str = attrs.field(default="", validator=_tenant_name)


@attrs.define
class _Lane:
    queue: collections.deque[tuple[TurnCommand, str]] = attrs.field(factory=collections.deque)
    running: bool = False


class _StdioServer:
    def __init__(self, host: SessionHost, sink: trio.abc.SendStream, config: StdioConfig) -> None:
        self.host = host
        self.sink = sink
        self.config = config
        self.status = OK
        self.lanes: dict[str, _Lane] = {}
        self.reading = trio.CancelScope()
        self.control = trio.CancelScope()
        self.turns: trio.Nursery | None = None
        self.out_send, self.out_recv = trio.open_memory_channel[dict[str, Any]](1024)
        self.prefix = f"{config.tenant}/" if config.tenant else ""
        #: A :class:`~agcore_actors.serve.tracing.TurnTracer`, when spans are wanted.
        self.tracer: Any = None
        #: (session, turn) of every turn queued or running: a repeat is refused.
        self.in_flight: set[tuple[str, str]] = set()

    async def run(self, source: trio.abc.ReceiveStream) -> int:
        async with trio.open_nursery() as main:
            main.start_soon(self._writer)
            async with trio.open_nursery() as turns:
                self.turns = turns
                if self.config.signals:
                    main.start_soon(self._watch_signals)
                with self.reading:
                    await self._read(source)
            self.control.cancel()
            await self.out_send.aclose()
        return self.status

    # -- output ----------------------------------------------------------------------------

    async def emit(self, line: dict[str, Any]) -> None:
        await self.out_send.send(line)

    async def _writer(self) -> None:
        encoder = msgspec.json.Encoder()
        async with self.out_recv:
            async for line in self.out_recv:
                batch = [line]
                # Write what is ready in one go: fewer syscalls under load.
                while len(batch) < 256:
                    try:
                        batch.append(self.out_recv.receive_nowait())
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                await self.sink.send_all(b"".join(encoder.encode(x) + b"\n" for x in batch))

    # -- input -----------------------------------------------------------------------------

    async def _read(self, source: trio.abc.ReceiveStream) -> None:
        buffer = bytearray()
        skipping = False  # inside a line that was too long
        while True:
            chunk = await source.receive_some(65536)
            if not chunk:
                break
            buffer += chunk
            while True:
                end = buffer.find(b"\n")
                if end < 0:
                    if len(buffer) > self.config.max_line and not skipping:
                        await self._refuse(BadCommand(f"line longer than {self.config.max_line}"))
                        skipping = True
                    if skipping:
                        buffer.clear()
                    break
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                if skipping:
                    skipping = False
                    continue
                await self._line(line)
        if buffer.strip() and not skipping:
            await self._line(bytes(buffer))

    async def _refuse(self, exc: BadCommand) -> None:
        await self.emit({"event": "error", "error_kind": exc.kind, "error": str(exc)})

    async def _line(self, line: bytes) -> None:
        if not line.strip():
            return
        if len(line) > self.config.max_line:
            await self._refuse(BadCommand(f"line longer than {self.config.max_line}"))
            return
        try:
            command = parse_line(line)
        except BadCommand as exc:
            if _elicit.is_elicitation(_decoded(line)):
                await self._on_elicitation(_decoded(line))
                return
            if _resume.is_answer(_decoded(line)):
                await self._on_answer(_decoded(line))
                return
            await self._refuse(exc)
            return
        match command:
            case TurnCommand():
                await self._on_turn(command)
            case CancelCommand(session=session, mode=mode):
                cancelled = await self.host.cancel(self.prefix + session, mode)
                await self.emit(
                    {"session": session, "event": "cancel", "mode": mode, "cancelled": cancelled}
                )
            case ApproveCommand(session=session, call_id=call_id, allow=allow, reason=reason):
                answered = await self.host.approve(self.prefix + session, call_id, allow, reason)
                line_out = {"session": session, "event": "approve", "call_id": call_id}
                await self.emit({**line_out, "allow": allow, "answered": answered})

    async def _on_elicitation(self, obj: object) -> None:
        try:
            command = _elicit.parse_elicitation(obj)
        except BadCommand as exc:
            await self._refuse(exc)
            return
        reply = await _elicit.answer(self.host, self.prefix + command.session, command)
        line = {"session": command.session, "event": "elicitation"}
        await self.emit({**line, "elicitation": command.elicitation_id, **reply})

    async def _on_answer(self, obj: object) -> None:
        """An ``answer`` or ``resume`` line (see :mod:`._resume`): carried out beside the
        reader (a resumed turn may run long), its line written when it is done; at end
        of input it runs to its end as turns do."""
        try:
            command = _resume.parse_stdio(obj)
        except BadCommand as exc:
            await self._refuse(exc)
            return

        async def reply() -> None:
            try:
                line = await _resume.stdio_reply(self.host, self.prefix, command)
            except AgcoreError as exc:
                kind = getattr(exc, "kind", type(exc).__name__)
                line = {"session": command.session, "event": "error", "error_kind": kind,
                        "error": str(exc)}  # fmt: skip
            except Exception as exc:  # the session's actor crashed; the host restarts it
                line = {"session": command.session, "event": "error", "error_kind": "crash",
                        "error": type(exc).__name__}  # fmt: skip
            await self.emit(line)

        assert self.turns is not None
        self.turns.start_soon(reply)

    async def _known(self, session: str, turn: str) -> bool:
        """Whether (``session``, ``turn``) is queued, running, or stored. Only this reader
        adds turns, and a turn is committed before it leaves ``in_flight``: no turn slips
        between the two checks."""
        if (session, turn) in self.in_flight:
            return True
        store = self.host.bundle.store
        if not isinstance(store, StoreTurns):
            return False
        stored: bool = await store.store.ask(sm.HasTurn(self.prefix + session, turn))
        return stored

    async def _on_turn(self, command: TurnCommand) -> None:
        turn = command.turn or new_id()
        if command.turn and await self._known(command.session, turn):
            known = f"turn {turn!r} of this session is known already"
            await self.emit({"session": command.session, "turn": turn, "event": "error",
                             "error_kind": "turn_exists", "error": known})  # fmt: skip
            return
        lane = self.lanes.setdefault(command.session, _Lane())
        if len(lane.queue) >= self.config.max_queued:
            error = BadCommand(
                f"session {command.session!r} has {len(lane.queue)} turns waiting already"
            )
            await self.emit({"session": command.session, "turn": turn, "event": "error",
                             "error_kind": "session_busy", "error": str(error)})  # fmt: skip
            return
        lane.queue.append((command, turn))
        self.in_flight.add((command.session, turn))
        if not lane.running:
            lane.running = True
            assert self.turns is not None
            self.turns.start_soon(self._run_lane, command.session, lane)

    # -- turns -----------------------------------------------------------------------------

    async def _run_lane(self, session: str, lane: _Lane) -> None:
        try:
            while lane.queue:
                command, turn = lane.queue[0]
                await self._run_turn(command, turn)
                lane.queue.popleft()
                self.in_flight.discard((session, turn))
        finally:
            with trio.CancelScope(shield=True):
                # Cancelled: the turn at the head has written its final line already.
                if lane.queue:
                    self.in_flight.discard((session, lane.queue.popleft()[1]))
                while lane.queue:
                    _, turn = lane.queue.popleft()
                    self.in_flight.discard((session, turn))
                    await self.emit(final_fields(session, turn, "turn_cancelled"))
                lane.running = False
                if self.lanes.get(session) is lane:
                    del self.lanes[session]

    async def _run_turn(self, command: TurnCommand, turn: str) -> None:
        session = command.session
        final = False
        started = trio.current_time()
        try:
            stored = self.prefix + session
            submit = self.host.submit(
                stored, command.text, turn=turn, settings=command.settings, parts=command.parts
            )
            async with submit as events:
                async for event in events:
                    if self.tracer is not None:
                        self.tracer.observe(session, turn, event)
                    log_event(stored, turn, event, trio.current_time() - started)
                    await self.emit(event_fields(session, turn, event))
                    final = final or isinstance(event, _FINAL)
        except (AgcoreError, OSError) as exc:
            if not final:
                kind = getattr(exc, "kind", type(exc).__name__)
                self._trace_end(session, turn, "failed", kind)
                await self.emit(
                    final_fields(session, turn, "turn_failed", error_kind=kind, error=str(exc))
                )
                final = True
        except Exception as exc:  # the session's actor crashed; the host restarts it
            if not final:
                self._trace_end(session, turn, "failed", "crash")
                await self.emit(
                    final_fields(
                        session, turn, "turn_failed", error_kind="crash", error=type(exc).__name__
                    )
                )
                final = True
        finally:
            if not final:
                self._trace_end(session, turn, "cancelled")
                with trio.CancelScope(shield=True):
                    await self.emit(final_fields(session, turn, "turn_cancelled"))

    def _trace_end(self, session: str, turn: str, status: am.TurnStatus, kind: str = "") -> None:
        """End the spans of a turn that ended without its own final event."""
        if self.tracer is None:
            return
        result = am.TurnResult(session=session, turn=turn, status=status, error_kind=kind)
        final = am.TurnCancelled(result) if status == "cancelled" else am.TurnFailed(result)
        self.tracer.observe(session, turn, final)

    # -- signals ---------------------------------------------------------------------------

    async def _watch_signals(self) -> None:
        with (
            self.control,
            trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals,
        ):
            async with trio.open_nursery() as timers:
                async for signum in signals:
                    self.reading.cancel()
                    assert self.turns is not None
                    if signum == signal.SIGINT:
                        self.status = INTERRUPTED
                        self.turns.cancel_scope.cancel()
                    else:
                        timers.start_soon(self._deadline)

    async def _deadline(self) -> None:
        await trio.sleep(self.config.drain_timeout)
        assert self.turns is not None
        self.turns.cancel_scope.cancel()


def _decoded(line: bytes) -> object:
    """The line as JSON, or None; a hostile line (nested too deep) is None too: the
    parser has refused it already, and its error line is the answer."""
    try:
        return msgspec.json.decode(line)
    except (ValueError, RecursionError):  # DecodeError, UnicodeDecodeError
        return None


async def serve_stdio(
    host: SessionHost,
    source: trio.abc.ReceiveStream,
    sink: trio.abc.SendStream,
    config: StdioConfig | None = None,
    *,
    tracer: Any = None,
) -> int:
    """Serve commands read from ``source`` and write events to ``sink`` until end of
    input or a signal (see the module docstring); the exit status (0, or 130 after
    SIGINT). ``tracer``: a :class:`~agcore_actors.serve.tracing.TurnTracer` for spans."""
    server = _StdioServer(host, sink, config or StdioConfig())
    server.tracer = tracer
    return await server.run(source)
