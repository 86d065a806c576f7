"""The retrieval set of ``retrieval_embeddings.py``: the project's own docs as pages.

Each ``## `` section of README.md and docs/*.md (not the changelog, not the API
reference) is one knowledge page, id ``FILE#SLUG`` (``docs/memory.md#eviction``);
the text before a file's first ``## `` is the page ``FILE#``. The queries, written by
hand, are ``data/retrieval_queries.json``: each names the page (or pages) that
answer it. A query whose page no longer exists (a heading renamed) is reported and
left out, never counted as a miss.

The docs are read as they were at a commit (``DOCS_AT``, through ``git show``) so that
the figures of docs/performance.md stay reproducible while the docs change; ``at=None``
reads the working tree.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent
QUERIES = Path(__file__).resolve().parent / "data" / "retrieval_queries.json"
#: The commit whose docs the published figures were measured on (main, issue 33).
DOCS_AT = "d6d4a0e"


@attrs.frozen
class DocPage:
    id: str
    title: str
    summary: str
    content: str


@attrs.frozen
class Query:
    text: str
    expected: frozenset[str]


def slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")


def doc_files(at: str | None) -> list[str]:
    """README.md and docs/*.md but the changelog, as paths from the repository root."""
    if at is None:
        names = [p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")]
    else:
        names = git("ls-tree", "--name-only", f"{at}:docs").split()
        names = [f"docs/{n}" for n in names if n.endswith(".md")]
    return ["README.md", *sorted(n for n in names if n != "docs/CHANGELOG.md")]


def git(*args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False, timeout=60
    )
    if done.returncode:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr.strip()} (try --docs-at worktree)")
    return done.stdout


def load_pages(at: str | None = DOCS_AT) -> list[DocPage]:
    """Every section of the docs as a page (see the module doc)."""
    pages: list[DocPage] = []
    for name in doc_files(at):
        if at is None:
            text = (ROOT / name).read_text(encoding="utf-8")
        else:
            text = git("show", f"{at}:{name}")
        first = re.search(r"^# (.+)$", text, re.MULTILINE)
        file_title = first.group(1).strip() if first else name
        parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
        sections = [("", file_title, parts[0])]
        headed = zip(parts[1::2], parts[2::2], strict=True)
        sections += [(slug(h), h.strip(), body) for h, body in headed]
        for anchor, title, body in sections:
            body = body.strip()
            if body:
                pages.append(DocPage(f"{name}#{anchor}", title, file_title, body))
    return pages


def load_queries(page_ids: set[str]) -> tuple[list[Query], list[str]]:
    """The queries whose pages all exist, and a line per query left out."""
    kept: list[Query] = []
    stale: list[str] = []
    for row in json.loads(QUERIES.read_text(encoding="utf-8")):
        expected = frozenset(row["expected"])
        missing = sorted(expected - page_ids)
        if missing:
            stale.append(f"{row['query']!r}: no page {', '.join(missing)}")
        else:
            kept.append(Query(row["query"], expected))
    return kept, stale
