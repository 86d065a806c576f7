"""``agcore-actors memory``: inspect a memory store (knowledge and memories): a SQLite
file, or a ``postgresql://`` URL.

The command uses the synchronous store (no actor system). ``stats`` and ``search``
only read: they open an existing file read-only (:class:`SqliteReader`) or the
database's tables (:class:`PostgresReader`, no migration), write nothing to it (not
even access statistics), and work while MemoryStore actors write to it.
Conversations are not memory: ``agcore-actors sessions`` exports and imports them, and
``sessions migrate-memory`` copies the transcripts an older memory file still holds
(counted here as ``legacy``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..memory import RetrievalMode, RetrieverConfig
from ..memory.lowlevel import MemoryRetriever, PostgresReader, SqliteReader
from ._common import OK, add_command, add_group, examples, print_json
from ._convert import existing_file, int_at_least
from ._extras import require

#: Transcripts (``conv:``) and session facts (``_session_``) an older version kept here:
#: ``sessions migrate-memory`` moves them to the session store.
NAMESPACES = (("knowledge", "knowledge_"), ("legacy", "conv:"), ("legacy", "_session_"))


def store_location(text: str) -> Path | str:
    """A ``postgresql://`` URL as it is, else an existing file."""
    if text.startswith(("postgresql://", "postgres://")):
        return text
    return existing_file(text)


def _open(location: Path | str) -> SqliteReader | PostgresReader:
    if isinstance(location, str):
        return PostgresReader(location)
    return SqliteReader.open(location)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub = add_group(
        commands,
        "memory",
        help="inspect a memory store (a SQLite file or a postgresql:// URL)",
        epilog=examples(
            "agcore-actors memory stats memory.db",
            'agcore-actors memory search memory.db "borrow checker" --mode bm25 -n 5 --json',
        ),
    )
    stats = add_command(sub, "stats", _stats, help="item counts per namespace and a file check")
    stats.add_argument("db", type=store_location, help="a SQLite file or a postgresql:// URL")
    stats.add_argument("--json", action="store_true", help="print the counts as JSON")

    search = add_command(sub, "search", _search, help="retrieve knowledge pages for a query")
    search.add_argument("db", type=store_location, help="a SQLite file or a postgresql:// URL")
    search.add_argument("query")
    search.add_argument(
        "--mode", choices=[m.value for m in RetrievalMode], default=RetrievalMode.HYBRID.value
    )
    search.add_argument("-n", "--max-results", type=int_at_least(1), default=10)
    search.add_argument("--json", action="store_true", help="print the pages as JSON")


def _stats(args: argparse.Namespace) -> int:
    reader = _open(args.db)
    try:
        counts: dict[str, int] = {}
        for label, prefix in NAMESPACES:
            counts[label] = counts.get(label, 0) + reader.count(prefix)
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


def _search(args: argparse.Namespace) -> int:
    mode = RetrievalMode(args.mode)
    embedder = None
    if mode is RetrievalMode.BM25_EMBEDDINGS:
        require(f"memory search --mode {mode.value}", "wordllama")
        from ..memory.embeddings import WordLlamaEmbedder

        embedder = WordLlamaEmbedder()
    reader = _open(args.db)
    try:
        config = RetrieverConfig(mode=mode, max_results=args.max_results)
        result = MemoryRetriever(reader, config, embedder=embedder).retrieve(args.query)
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
