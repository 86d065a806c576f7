"""``agcore-actors memory``: inspect and move data in a SQLite memory store.

The command uses the synchronous store (no actor system). ``stats``, ``export``
and ``search`` only read: they open an existing file read-only
(:class:`SqliteReader`), write nothing to it (not even access statistics), and
work while a MemoryStore actor writes to it. ``import`` is a writer: it creates
the file if needed, adds the whole transcript in one transaction or nothing
(see :meth:`ConversationMemory.import_jsonl`), and is refused with
``memory_store_in_use`` while another writer has the file open.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..memory import (
    ConversationMemoryConfig,
    MemoryStrategy,
    NotFound,
    RetrievalMode,
    RetrieverConfig,
)
from ..memory.lowlevel import (
    ConversationMemory,
    MemoryRetriever,
    SqliteBackend,
    SqliteReader,
    messages_from_jsonl,
)
from ._common import OK, add_command, add_group, examples, print_json
from ._convert import existing_file, input_file, int_at_least
from ._errors import NoTranscript

NAMESPACES = (("conversation", "conv:"), ("knowledge", "knowledge_"), ("session", "_session_"))


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub = add_group(
        commands,
        "memory",
        help="inspect a SQLite memory store",
        epilog=examples(
            "agcore-actors memory stats memory.db",
            "agcore-actors memory export memory.db SESSION > transcript.jsonl",
            "agcore-actors memory import memory.db SESSION transcript.jsonl [--replace]",
            'agcore-actors memory search memory.db "borrow checker" --mode bm25 -n 5 --json',
        ),
    )
    stats = add_command(sub, "stats", _stats, help="item counts per namespace and a file check")
    stats.add_argument("db", type=existing_file)
    stats.add_argument("--json", action="store_true", help="print the counts as JSON")

    export = add_command(sub, "export", _export, help="write a session's transcript as JSON Lines")
    export.add_argument("db", type=existing_file)
    export.add_argument("session")

    imp = add_command(sub, "import", _import, help="read a transcript (JSON Lines) into a session")
    imp.add_argument("db", type=Path)
    imp.add_argument("session")
    imp.add_argument("file", type=input_file, help="a .jsonl file, or - for stdin")
    imp.add_argument("--replace", action="store_true", help="replace the transcript")
    imp.add_argument("--json", action="store_true", help="print the result as JSON")

    search = add_command(sub, "search", _search, help="retrieve knowledge pages for a query")
    search.add_argument("db", type=existing_file)
    search.add_argument("query")
    search.add_argument(
        "--mode", choices=[m.value for m in RetrievalMode], default=RetrievalMode.HYBRID.value
    )
    search.add_argument("-n", "--max-results", type=int_at_least(1), default=10)
    search.add_argument("--json", action="store_true", help="print the pages as JSON")


def _stats(args: argparse.Namespace) -> int:
    reader = SqliteReader.open(args.db)
    try:
        counts = {label: reader.count(prefix) for label, prefix in NAMESPACES}
        total = reader.count()
        counts["other"] = total - sum(counts.values())
        counts["total"] = total
        integrity = reader.integrity_check()
    finally:
        reader.close()
    if args.json:
        print_json({**counts, "integrity": integrity})
        return OK
    for label, n in counts.items():
        print(f"{label:<13} {n:>10,}")
    print(f"integrity     {integrity}")
    return OK


def _export(args: argparse.Namespace) -> int:
    reader = SqliteReader.open(args.db)
    try:
        jsonl = ConversationMemory(reader, args.session).export_jsonl()
    except NotFound:
        raise NoTranscript(args.session, str(args.db)) from None
    finally:
        reader.close()
    sys.stdout.write(jsonl)
    return OK


def _import(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text("utf-8")
    messages_from_jsonl(text)  # a bad file is refused before the store file is made
    store = SqliteBackend(args.db)
    try:
        full = ConversationMemoryConfig(strategy=MemoryStrategy.FULL)
        imported = ConversationMemory(store, args.session, full).import_jsonl(
            text, replace=args.replace
        )
    finally:
        store.close()
    if args.json:
        print_json({"session": args.session, "imported": imported})
    else:
        print(f"imported {imported} message(s) into session {args.session!r}")
    return OK


def _search(args: argparse.Namespace) -> int:
    reader = SqliteReader.open(args.db)
    try:
        config = RetrieverConfig(mode=RetrievalMode(args.mode), max_results=args.max_results)
        result = MemoryRetriever(reader, config).retrieve(args.query)
    finally:
        reader.close()
    if args.json:
        pages = [{"id": i.page.id, "title": i.page.title, "score": i.score} for i in result.items]
        print_json({"query": args.query, "pages": pages})
        return OK
    for item in result.items:
        print(f"{item.score:.4f}  {item.page.id}  {item.page.title}")
    if not result.items:
        print("no pages found")
    return OK
