"""``agcore-actors sessions``: the sessions ``run`` and ``chat`` stored — the one home of
conversations and session facts (``list``, ``show``, ``export``, ``import``, ``delete``,
``migrate-memory``).

Every command opens the store (``--store``: a SQLite file or a ``postgresql://`` URL;
else the configuration's ``[store] url`` or ``path``; else the per-user file of
:func:`~agcore_actors.cli._runtime.default_store_path`) through the SessionStore actor,
reads or deletes, and stops it; no model is started. ``show`` prints the transcript
(``--json``: the snapshot), ``export`` the session as JSON Lines (the format
``agcore_actors.store.import_session`` reads back), ``import`` writes such a file (or a
plain transcript, one chat message per line, with ``--session``) as one session, all or
nothing. ``migrate-memory`` copies the transcripts and session facts an older memory file
holds (``conv:`` and ``_session_`` items) into the session store, one session per request;
a session the store already has is left alone, so running it again is harmless. An unknown
session is ``session_not_found`` (exit 1); a store file that does not exist is a usage
error (exit 2) for the commands that only read.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path
from typing import Any

import trio

from ..actor import ActorSystem
from ..config import load_settings
from ..llm import AssistantMessage, SystemMessage, ToolMessage, UserMessage
from ..store import Conflict, SessionNotFound, export_session, import_session
from ..store import messages as sm
from ..store.lowlevel import memory_transcripts
from ._common import OK, add_command, add_group, examples, print_json
from ._errors import UsageError
from ._render import call_line
from ._runtime import default_store_path, is_postgres_url, open_store

__all__ = ["register"]


def _store(args: argparse.Namespace, *, create: bool = False) -> Path | str:
    """The store: ``--store`` (a file, or a ``postgresql://`` URL), else the file's
    ``[store] url`` or ``path``, else the per-user file; with ``create`` a missing file
    is made (by the store) rather than refused."""
    given: str | None = args.store
    if given is not None and is_postgres_url(given):
        return given
    path = Path(given) if given is not None else None
    if path is None:  # as run and chat: the file's [store], else the per-user file
        settings = load_settings(args.config).store
        if settings.url is not None:
            return settings.url
        path = Path(settings.path) if settings.path else default_store_path()
    if not create and not path.is_file():
        raise UsageError(f"no session store at {path} (run or chat make one; or pass --store)")
    return path


async def _with_store(args: argparse.Namespace, work: Any) -> int:
    target = _store(args, create=work in _WRITERS)
    async with ActorSystem() as system:
        store = await open_store(system, target)
        status: int = await work(store, args)
        return status


def _when(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M")


async def _list(store: Any, args: argparse.Namespace) -> int:
    records: list[sm.SessionRecord] = []
    cursor: str | None = None
    while True:
        page: sm.SessionPage = await store.ask(sm.ListSessions(limit=500, cursor=cursor))
        records.extend(page.sessions)
        if page.cursor is None:
            break
        cursor = page.cursor
    if args.json:
        print_json(records)
        return OK
    if not records:
        print("no sessions", file=sys.stderr)
        return OK
    print(f"{'session':24} {'agent':10} {'status':11} {'turns':>5} {'tokens':>8}  updated")
    for r in records:
        print(
            f"{r.id:24} {r.agent or '-':10} {r.status:11} {r.turns:5} "
            f"{r.usage.total_tokens:8}  {_when(r.updated_at)}"
        )
    return OK


def _content(message: UserMessage | AssistantMessage | ToolMessage | SystemMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    return " ".join(getattr(part, "text", "") or "" for part in content)


async def _show(store: Any, args: argparse.Namespace) -> int:
    snapshot: sm.SessionSnapshot = await store.ask(sm.ExportSession(args.session))
    if args.json:
        print_json(snapshot)
        return OK
    record = snapshot.record
    print(
        f"session {record.id}: agent {record.agent or '-'}, {record.turns} turns, "
        f"{record.usage.total_tokens} tokens, {record.status}"
    )
    for entry in snapshot.entries:
        message = entry.message
        match message:
            case UserMessage():
                print(f"\nyou> {_content(message)}")
            case AssistantMessage():
                text = _content(message)
                if text:
                    print(f"\n{text}")
                for call in message.tool_calls or []:
                    print(f"[tool] {call_line(call.function.name, call.function.arguments)}")
            case ToolMessage():
                print(f"[tool] -> {' '.join(_content(message).split())[:200]}")
            case _:
                pass
    return OK


async def _export(store: Any, args: argparse.Namespace) -> int:
    text = await export_session(store, args.session)
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    return OK


async def _import(store: Any, args: argparse.Namespace) -> int:
    text = sys.stdin.read() if str(args.file) == "-" else args.file.read_text("utf-8")
    record = await import_session(
        store, text, session=args.session, replace=args.replace, repair=args.repair
    )
    if args.json:
        print_json(record)
    else:
        print(f"imported session {record.id}: {record.last_index + 1} message(s)")
    return OK


async def _migrate_memory(store: Any, args: argparse.Namespace) -> int:
    if not args.memory.is_file():
        raise UsageError(f"no memory file at {args.memory}")
    counts = {"sessions": 0, "messages": 0, "dropped": 0, "skipped_existing": 0}
    for snapshot in memory_transcripts(args.memory, counts):
        try:
            await store.ask(sm.RestoreSession(snapshot))
        except Conflict:
            counts["skipped_existing"] += 1
            continue
        counts["sessions"] += 1
        counts["messages"] += len(snapshot.entries)
    if args.json:
        print_json(counts)
    else:
        print(
            f"copied {counts['sessions']} session(s), {counts['messages']} message(s); "
            f"{counts['skipped_existing']} already in the store, {counts['dropped']} row(s) "
            "dropped"
        )
    return OK


async def _delete(store: Any, args: argparse.Namespace) -> int:
    deleted: sm.Deleted = await store.ask(sm.DeleteSessions(list(args.sessions)))
    missing = [s for s in args.sessions if s not in deleted.ids]
    if args.json:
        print_json({"deleted": deleted.ids, "missing": missing})
    else:
        for session in deleted.ids:
            print(f"deleted {session}")
    if missing:
        raise SessionNotFound(missing[0])
    return OK


_WRITERS = (_import, _migrate_memory)


def _command(work: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        status: int = trio.run(_with_store, args, work)
        return status

    return run


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = add_group(
        commands,
        "sessions",
        help="list, show, export, import and delete the stored chat sessions",
        epilog=examples(
            "agcore-actors sessions list",
            "agcore-actors sessions show 20261123-101500-ab12",
            "agcore-actors sessions export 20261123-101500-ab12 -o chat.jsonl",
            "agcore-actors sessions import chat.jsonl --session copy-of-chat",
            "agcore-actors sessions delete 20261123-101500-ab12",
            "agcore-actors sessions migrate-memory memory.db",
            "agcore-actors sessions list --store postgresql://bot@db.internal/agcore",
        ),
    )

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--store",
            metavar="PATH|URL",
            help="the sessions' SQLite file, or a postgresql:// database",
        )
        parser.add_argument(
            "--config", type=Path, metavar="FILE", help="configuration file (its [store] path)"
        )

    listing = add_command(group, "list", _command(_list), help="every stored session")
    listing.add_argument("--json", action="store_true", help="the records as JSON")
    common(listing)
    show = add_command(group, "show", _command(_show), help="a session's transcript")
    show.add_argument("session", help="the session id")
    show.add_argument("--json", action="store_true", help="the whole snapshot as JSON")
    common(show)
    export = add_command(group, "export", _command(_export), help="a session as JSON Lines")
    export.add_argument("session", help="the session id")
    export.add_argument("-o", "--output", type=Path, metavar="FILE", help="write to FILE")
    common(export)
    imp = add_command(group, "import", _command(_import), help="a session from JSON Lines")
    imp.add_argument("file", type=Path, help="an export (or a plain transcript); - for stdin")
    imp.add_argument("--session", help="the session id (renames an export's session)")
    imp.add_argument("--replace", action="store_true", help="overwrite a session of that id")
    imp.add_argument(
        "--repair", action="store_true", help="drop orphan tool results, answer open calls"
    )
    imp.add_argument("--json", action="store_true", help="the session's record as JSON")
    common(imp)
    migrate = add_command(
        group,
        "migrate-memory",
        _command(_migrate_memory),
        help="copy an older memory file's transcripts and facts into the store",
    )
    migrate.add_argument("memory", type=Path, help="the memory store's SQLite file")
    migrate.add_argument("--json", action="store_true", help="the counts as JSON")
    common(migrate)
    delete = add_command(group, "delete", _command(_delete), help="delete sessions")
    delete.add_argument("sessions", nargs="+", metavar="SESSION", help="session ids")
    delete.add_argument("--json", action="store_true", help="what was deleted, as JSON")
    common(delete)
