"""How ``run`` and ``chat`` show a turn: plain text, or rich output on a terminal.

A view gets the local model's start-up steps (:meth:`View.progress`), then each turn's
events in order (:meth:`View.begin`, :meth:`View.event`, :meth:`View.end`). Both views
show the same things: the answer as it streams, each tool call when it starts (name and
arguments) and when it ends (status and a one-line preview of its result), retries, and
the time to the first token of a local model.

- :class:`PlainView` writes the answer to ``out`` as it comes, and everything else as
  short lines to ``notes`` (stderr for ``run``: its stdout is the answer only).
- :class:`RichView` (stdout is a terminal) shows a spinner while the model starts and
  until the first token, and the answer as live-rendered markdown.

Neither view ever reads input; a view is used from one trio task at a time. Rich runs
its refresh on a thread of its own, which :meth:`View.close` stops.
"""

from __future__ import annotations

import sys
from typing import Protocol, TextIO

import trio

from ..agent import messages as am
from ..local import ProgressEvent, StderrProgress, prefix_line

__all__ = ["PlainView", "RichView", "View", "call_line", "preview"]

_PREVIEW = 160


def preview(text: str, limit: int = _PREVIEW) -> str:
    """``text`` on one line, cut at ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def call_line(name: str, arguments: str) -> str:
    """``name(arguments)`` with the arguments on one line."""
    return f"{name}({preview(arguments, 120)})"


class View(Protocol):
    def progress(self, event: ProgressEvent, /) -> None: ...
    def begin(self, *, local: bool) -> None: ...
    def event(self, event: am.TurnEvent) -> None: ...
    def note(self, text: str) -> None: ...
    def pause(self) -> None: ...
    def end(self, result: am.TurnResult | None) -> None: ...
    def close(self) -> None: ...


class PlainView:
    """Plain text: the answer to ``out``, the rest to ``notes``."""

    def __init__(self, out: TextIO | None = None, notes: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.notes = notes or sys.stderr
        self._progress = StderrProgress(self.notes)
        self._started = 0.0
        self._local = False
        self._first = True
        self._midline = False

    def progress(self, event: ProgressEvent, /) -> None:
        self._progress(event)

    def begin(self, *, local: bool) -> None:
        self._started = trio.current_time()
        self._local = local
        self._first = True
        self._midline = False

    def _first_token(self) -> None:
        if self._first:
            self._first = False
            if self._local:
                seconds = trio.current_time() - self._started
                self._line(f"agcore-actors: first token after {seconds:.1f} s", self.notes)

    def _line(self, text: str, stream: TextIO) -> None:
        self.pause()  # a note never lands in the middle of the answer's line
        print(text, file=stream, flush=True)

    def note(self, text: str) -> None:
        self._line(text, self.notes)

    def event(self, event: am.TurnEvent) -> None:
        match event:
            case am.TextDelta(text=text) | am.ContentStarted(text=text):
                if text:
                    self._first_token()
                    self.out.write(text)
                    self.out.flush()
                    self._midline = not text.endswith("\n")
            case am.ToolCallStarted(name=name, arguments=arguments):
                self._first_token()
                self._line(f"[tool] {call_line(name, arguments)}", self.notes)
            case am.ToolCallFinished(name=name, status=status, content=content):
                self._line(f"[tool] {name} -> {status}: {preview(content)}", self.notes)
            case am.RetryingModel(attempt=attempt, delay=delay, error=error):
                self._line(
                    f"agcore-actors: retrying the model in {delay:.1f} s "
                    f"(attempt {attempt}): {preview(error)}",
                    self.notes,
                )
            case _:
                pass

    def pause(self) -> None:
        if self._midline:
            self.out.write("\n")
            self.out.flush()
            self._midline = False

    def end(self, result: am.TurnResult | None) -> None:
        self.pause()

    def close(self) -> None:
        self.pause()


class RichView:
    """Spinners and live markdown on a terminal (see the module doc)."""

    def __init__(self, console: object | None = None) -> None:
        from rich.console import Console

        self.console = console if isinstance(console, Console) else Console(highlight=False)
        self._status: object | None = None
        self._live: object | None = None
        self._text = ""
        self._started = 0.0
        self._local = False
        self._first = True

    # -- spinner and live text --------------------------------------------------------------

    def _spin(self, text: str) -> None:
        from rich.status import Status

        self._stop_live()
        if isinstance(self._status, Status):
            self._status.update(text)
            return
        status = Status(text, console=self.console, spinner="dots")
        status.start()
        self._status = status

    def _stop_spin(self) -> None:
        from rich.status import Status

        if isinstance(self._status, Status):
            self._status.stop()
        self._status = None

    def _show_text(self, delta: str) -> None:
        from rich.live import Live
        from rich.markdown import Markdown

        self._stop_spin()
        self._text += delta
        if not isinstance(self._live, Live):
            live = Live(console=self.console, refresh_per_second=10, vertical_overflow="visible")
            live.start()
            self._live = live
        assert isinstance(self._live, Live)
        self._live.update(Markdown(self._text))

    def _stop_live(self) -> None:
        from rich.live import Live

        if isinstance(self._live, Live):
            self._live.stop()
        self._live = None
        self._text = ""

    # -- the view -------------------------------------------------------------------------

    def progress(self, event: ProgressEvent, /) -> None:
        match event.stage:
            case "download":
                self._spin(f"downloading the parts of {event.model} ({event.detail})")
            case "join":
                percent = 100 * event.done // event.total if event.total else 100
                self._spin(f"unpacking {event.model}: {percent}%")
            case "start":
                self._spin(f"starting the local model ({event.model})")
            case "ready":
                self._stop_spin()
                self.console.print(
                    f"[dim]local model {event.model} ready in {event.seconds:.1f} s[/dim]"
                )
            case "prefix" if event.detail == "warming":
                self._spin(prefix_line(event))
            case "prefix":
                self._stop_spin()
                self.console.print(f"[dim]{prefix_line(event)}[/dim]")
                self._spin("waiting for the first token")

    def begin(self, *, local: bool) -> None:
        self._started = trio.current_time()
        self._local = local
        self._first = True
        self._spin("waiting for the first token" if local else "thinking")

    def _first_token(self) -> None:
        if self._first:
            self._first = False
            if self._local:
                seconds = trio.current_time() - self._started
                self._stop_spin()
                self.console.print(f"[dim]first token after {seconds:.1f} s[/dim]")

    def note(self, text: str) -> None:
        self._stop_spin()
        self._stop_live()
        self.console.print(text, markup=False)

    def event(self, event: am.TurnEvent) -> None:
        match event:
            case am.TextDelta(text=text) | am.ContentStarted(text=text):
                if text:
                    self._first_token()
                    self._show_text(text)
            case am.ToolCallStarted(name=name, arguments=arguments):
                self._first_token()
                self._stop_spin()
                self._stop_live()
                self.console.print(f"[bold cyan]⚙ {_escape(call_line(name, arguments))}[/]")
                self._spin(f"running {name}")
            case am.ToolCallFinished(name=name, status=status, content=content):
                self._stop_spin()
                colour = "green" if status == "ok" else "red"
                self.console.print(
                    f"  [{colour}]→ {status}[/]: [dim]{_escape(preview(content))}[/dim]"
                )
                self._spin("thinking")
            case am.RetryingModel(attempt=attempt, delay=delay, error=error):
                self._spin(f"retrying in {delay:.1f} s (attempt {attempt}): {preview(error, 60)}")
            case _:
                pass

    def pause(self) -> None:
        self._stop_spin()
        self._stop_live()

    def end(self, result: am.TurnResult | None) -> None:
        self.pause()

    def close(self) -> None:
        self.pause()


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
