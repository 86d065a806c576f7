"""``agcore-actors memory``: inspect and move data in a SQLite memory store.

::

    agcore-actors memory stats memory.db
    agcore-actors memory export memory.db SESSION > transcript.jsonl
    agcore-actors memory import memory.db SESSION transcript.jsonl [--replace]
    agcore-actors memory search memory.db "borrow checker" [--mode bm25] [-n 5]

The command opens the file with the synchronous store (no actor system): run it
while no MemoryStore actor is writing to the same file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..memory import (
    ConversationMemoryConfig,
    MemoryStoreError,
    MemoryStrategy,
    RetrievalMode,
    RetrieverConfig,
)
from ..memory.lowlevel import (
    ConversationMemory,
    MemoryRetriever,
    SqliteBackend,
    messages_from_jsonl,
    messages_to_jsonl,
)

NAMESPACES = (("conversation", "conv:"), ("knowledge", "knowledge_"), ("session", "_session_"))


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    memory = commands.add_parser("memory", help="inspect a SQLite memory store")
    sub = memory.add_subparsers(dest="memory_command", required=True)

    stats = sub.add_parser("stats", help="item counts per namespace and a file check")
    stats.add_argument("db", type=Path)
    stats.set_defaults(func=_stats)

    export = sub.add_parser("export", help="write a session's transcript as JSON Lines")
    export.add_argument("db", type=Path)
    export.add_argument("session")
    export.set_defaults(func=_export)

    imp = sub.add_parser("import", help="read a transcript (JSON Lines) into a session")
    imp.add_argument("db", type=Path)
    imp.add_argument("session")
    imp.add_argument("file", help="a .jsonl file, or - for stdin")
    imp.add_argument("--replace", action="store_true", help="replace the transcript")
    imp.set_defaults(func=_import)

    search = sub.add_parser("search", help="retrieve knowledge pages for a query")
    search.add_argument("db", type=Path)
    search.add_argument("query")
    search.add_argument(
        "--mode", choices=[m.value for m in RetrievalMode], default=RetrievalMode.HYBRID.value
    )
    search.add_argument("-n", "--max-results", type=int, default=10)
    search.set_defaults(func=_search)


def _open(path: Path) -> SqliteBackend:
    if not path.exists():
        raise MemoryStoreError(f"{path}: no such file")
    return SqliteBackend(path)


def _fail(exc: Exception) -> int:
    print(f"agcore-actors memory: {exc}", file=sys.stderr)
    return 1


def _stats(args: argparse.Namespace) -> int:
    try:
        store = _open(args.db)
        try:
            total = store.count()
            for label, prefix in NAMESPACES:
                print(f"{label:<13} {store.count(prefix):>10,}")
            print(f"{'other':<13} {total - sum(store.count(p) for _, p in NAMESPACES):>10,}")
            print(f"{'total':<13} {total:>10,}")
            print(f"integrity     {store.integrity_check()}")
        finally:
            store.close()
    except MemoryStoreError as exc:
        return _fail(exc)
    return 0


def _export(args: argparse.Namespace) -> int:
    try:
        store = _open(args.db)
        try:
            sys.stdout.write(messages_to_jsonl(ConversationMemory(store, args.session).history()))
        finally:
            store.close()
    except MemoryStoreError as exc:
        return _fail(exc)
    return 0


def _import(args: argparse.Namespace) -> int:
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text("utf-8")
        messages = messages_from_jsonl(text)
        store = SqliteBackend(args.db)
        try:
            conv = ConversationMemory(
                store, args.session, ConversationMemoryConfig(strategy=MemoryStrategy.FULL)
            )
            if args.replace:
                conv.replace(messages)
            else:
                conv.extend(messages)
        finally:
            store.close()
    except (MemoryStoreError, OSError) as exc:
        return _fail(exc)
    print(f"imported {len(messages)} message(s) into session {args.session!r}")
    return 0


def _search(args: argparse.Namespace) -> int:
    if args.max_results < 1:
        return _fail(ValueError("--max-results must be >= 1"))
    try:
        store = _open(args.db)
        try:
            config = RetrieverConfig(mode=RetrievalMode(args.mode), max_results=args.max_results)
            result = MemoryRetriever(store, config).retrieve(args.query)
        finally:
            store.close()
    except MemoryStoreError as exc:
        return _fail(exc)
    for item in result.items:
        print(f"{item.score:.4f}  {item.page.id}  {item.page.title}")
    if not result.items:
        print("no pages found")
    return 0
