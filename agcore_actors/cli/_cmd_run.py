"""``agcore-actors run "prompt"``: one agent turn, streamed to the terminal.

The answer streams to stdout; tool calls (as they start and end), the local model's
start-up and the session id go to stderr. ``--json`` prints instead one object on
stdout, ``{"session", "text", "tool_calls", "usage", "status"}`` (and ``"error"`` for a
failed turn). Every turn is stored (SQLite, ``--store``); ``--session ID`` continues one
(an unknown ID exits 1 with ``store_session_not_found`` before any model starts).

Exit status: 0 the turn completed; 1 it failed (its error as one line on stderr); 130 it
was interrupted (Ctrl-C cancels the turn, which is stored as cancelled); 2 bad options or a bad
configuration file.
A tool that needs approval is asked about on the terminal, approved by ``--yes``, and
denied when there is no terminal to ask.
"""

from __future__ import annotations

import argparse
import datetime
import io
import mimetypes
import os
import secrets
import signal
import sys
from pathlib import Path

import trio

from ..llm import ContentPart, file_part_of, image_part_of
from ._common import FAILURE, INTERRUPTED, OK, add_command, examples, print_json
from ._errors import UsageError
from ._render import PlainView, RichView, View
from ._runtime import RuntimeOptions, add_runtime_flags, open_runtime
from ._turns import (
    Approver,
    LineReader,
    TurnOutcome,
    TurnRunner,
    approve_all,
    denied_without_terminal,
    prompting,
)

__all__ = ["new_session_id", "register"]


def new_session_id() -> str:
    """``YYYYmmdd-HHMMSS-xxxx``: sorts by creation, unique enough for one user."""
    now = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return f"{now}-{secrets.token_hex(2)}"


async def watch_interrupts(runner: TurnRunner) -> None:
    """Turn every SIGINT into :meth:`TurnRunner.interrupt` while it runs."""
    with trio.open_signal_receiver(signal.SIGINT) as signals:
        async for _ in signals:
            await runner.interrupt()


def _approver(args: argparse.Namespace, view: View) -> Approver:
    if args.yes:
        return approve_all()
    if not sys.stdin.isatty():
        return denied_without_terminal("no terminal to ask for approval (use --yes)")

    def ask(question: str) -> None:
        print(question, end="", file=sys.stderr, flush=True)

    return prompting(LineReader(), ask)


async def _run(args: argparse.Namespace, view: View) -> int:
    options = RuntimeOptions.from_args(args)
    parts = media_parts(args)  # a bad path is a usage error before anything starts
    session = args.session or new_session_id()
    # An unknown --session fails before the model starts (SessionNotFound, exit 1).
    async with open_runtime(options, progress=view.progress, session=args.session) as runtime:
        local = runtime.model.startswith("local ")
        runner = TurnRunner(runtime, view, _approver(args, view), local=local)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch_interrupts, runner)
            outcome = await runner.run(session, args.prompt, parts)
            nursery.cancel_scope.cancel()
    return _report(args, outcome)


def media_parts(args: argparse.Namespace) -> list[ContentPart]:
    """The ``--image`` and ``--file`` arguments as content parts (media type from the
    file's name); :class:`UsageError` for a file that cannot be read or an image whose
    type is not an image's."""
    parts: list[ContentPart] = []
    for flag, paths in (("--image", args.image or ()), ("--file", args.file or ())):
        for path in paths:
            media = mimetypes.guess_type(path)[0] or "application/octet-stream"
            try:
                data = Path(path).read_bytes()
            except OSError as exc:
                raise UsageError(f"{flag} {path}: {exc.strerror or exc}") from None
            if flag == "--image":
                if not media.startswith("image/"):
                    raise UsageError(f"--image {path}: not an image by its name ({media})")
                parts.append(image_part_of(data, media))
            else:
                parts.append(file_part_of(data, media, Path(path).name))
    return parts


def _report(args: argparse.Namespace, outcome: TurnOutcome) -> int:
    result = outcome.result
    if args.json:
        print_json(outcome.as_json())
    else:
        print(f"session {outcome.session}", file=sys.stderr, flush=True)
    if result is not None and result.status == "completed":
        return OK
    if result is not None and result.status == "failed":
        print(
            f"{args.prog}: {result.error_kind or 'failed'}: {' '.join(result.error.split())}",
            file=sys.stderr,
            flush=True,
        )
        return FAILURE
    print(f"{args.prog}: interrupted (the turn is stored as cancelled)", file=sys.stderr)
    return INTERRUPTED


def _main(args: argparse.Namespace) -> int:
    if not args.prompt.strip():
        raise UsageError("the prompt is empty")
    view: View
    if args.json or args.plain or not sys.stdout.isatty() or os.environ.get("TERM") == "dumb":
        # With --json the answer is in the object only; the notes still go to stderr.
        view = PlainView(out=io.StringIO() if args.json else sys.stdout)
    else:
        view = RichView()
    try:
        status: int = trio.run(_run, args, view)
    finally:
        view.close()
    return status


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = add_command(
        commands,
        "run",
        _main,
        help="run one agent turn, streamed (default model: the embedded local one)",
        epilog=examples(
            'agcore-actors run "What is 17 * 23 + 4? Use the calculate tool."',
            'agcore-actors run "And divided by 3?" --session 20261123-101500-ab12',
            'agcore-actors run "What time is it in Tokyo?" --json',
            'OPENAI_API_KEY=... agcore-actors run "Hello" --model-name gpt-4o-mini',
        ),
    )
    run.add_argument("prompt", help="the user's message")
    run.add_argument("--session", metavar="ID", help="continue this stored session")
    run.add_argument(
        "--image", action="append", metavar="PATH", help="an image after the prompt (repeatable)"
    )
    run.add_argument(
        "--file",
        action="append",
        metavar="PATH",
        help="a file (PDF, text) after the prompt (repeatable)",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object at the end")
    run.add_argument("--yes", action="store_true", help="approve every tool call that asks")
    run.add_argument("--plain", action="store_true", help="plain text even on a terminal")
    add_runtime_flags(run)
