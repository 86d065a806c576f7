"""Text policy for retrieval: tokens, keywords, stop words and Dice scores.

Pure functions, no I/O.

Tokenisation (:func:`tokens`) splits on every character that is not
alphanumeric (underscore, hyphen and all punctuation, full-width comma and
stop included, are separators) and lowercases. A run of CJK characters is not
one token: it becomes its overlapping
character bigrams (``"知识图谱"`` → ``知识 识图 图谱``), the usual approach of
search engines without a dictionary segmenter, so a query matches a page that
shares a two-character word with it. A CJK run of a single character stays one
token. A run mixing scripts (``"Rust语言"``) is cut where the script changes.

The Dice score (:func:`text_overlap_score`): set Dice coefficient on character
bigrams (spaces and punctuation included), case-sensitive, title 0.5 / summary
0.3 / content 0.2.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

from ._item import KnowledgePage

#: 68 English stop words.
DEFAULT_STOP_WORDS: frozenset[str] = frozenset(
    [
        "the",
        "a",
        "an",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "have",
        "has",
        "had",
        "do",
        "does",
        "did",
        "will",
        "would",
        "should",
        "could",
        "may",
        "might",
        "shall",
        "can",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "they",
        "them",
        "their",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "when",
        "where",
        "and",
        "or",
        "but",
        "not",
        "no",
        "nor",
        "so",
        "if",
        "then",
        "else",
        "with",
        "without",
        "for",
        "to",
        "from",
        "in",
        "on",
        "at",
        "by",
        "of",
        "as",
        "into",
        "through",
        "during",
        "before",
        "after",
        "above",
        "below",
    ]
)

TITLE_WEIGHT = 0.5
SUMMARY_WEIGHT = 0.3
CONTENT_WEIGHT = 0.2


def is_cjk(ch: str) -> bool:
    """Han ideographs, kana and Hangul syllables: scripts written without spaces
    (Hangul is spaced, but bigrams are the standard treatment there too)."""
    cp = ord(ch)
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2FA1F
        or 0xF900 <= cp <= 0xFAFF
        or 0x3040 <= cp <= 0x30FF
        or 0x31F0 <= cp <= 0x31FF
        or 0xAC00 <= cp <= 0xD7AF
    )


def _is_word_char(ch: str) -> bool:
    # Alphabetic or numeric, combining marks included (Python's isalnum leaves
    # them out, but they are part of words in many scripts).
    return ch.isalnum() or unicodedata.category(ch) in ("Mn", "Mc")


def _runs(text: str) -> Iterable[tuple[str, bool]]:
    """Maximal runs of word characters, each split where CJK-ness changes."""
    start = -1
    kind = False
    for i, ch in enumerate(text):
        if _is_word_char(ch):
            cjk = is_cjk(ch)
            if start < 0:
                start, kind = i, cjk
            elif cjk != kind:
                yield text[start:i], kind
                start, kind = i, cjk
        elif start >= 0:
            yield text[start:i], kind
            start = -1
    if start >= 0:
        yield text[start:], kind


def tokens(text: str) -> list[str]:
    """Lowercased word tokens, CJK runs as character bigrams, in text order."""
    out: list[str] = []
    for run, cjk in _runs(text):
        if cjk and len(run) > 1:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            out.append(run.lower())
    return out


def extract_keywords(query: str, stop_words: frozenset[str] = DEFAULT_STOP_WORDS) -> list[str]:
    """The query's keywords: tokens minus stop words and one-character Latin
    tokens (a single CJK character is a word and is kept). Duplicates stay,
    (a repeated keyword weighs more)."""
    return [t for t in tokens(query) if t not in stop_words and (len(t) >= 2 or is_cjk(t[0]))]


def char_bigrams(text: str) -> set[str]:
    """The set of overlapping pairs of consecutive characters."""
    return {text[i : i + 2] for i in range(len(text) - 1)}


def text_overlap_dice(a: str, b: str) -> float:
    """Dice coefficient of the two strings' character-bigram sets; 0.0 when
    either has fewer than two characters."""
    qa, qb = char_bigrams(a), char_bigrams(b)
    if not qa or not qb:
        return 0.0
    return 2.0 * len(qa & qb) / (len(qa) + len(qb))


def text_overlap_score(query: str, page: KnowledgePage) -> float:
    """A page's score: Dice against title, summary and content,
    weighted 0.5 / 0.3 / 0.2 (tags are not scored)."""
    return (
        text_overlap_dice(query, page.title) * TITLE_WEIGHT
        + text_overlap_dice(query, page.summary) * SUMMARY_WEIGHT
        + text_overlap_dice(query, page.content) * CONTENT_WEIGHT
    )


def page_index_text(page: KnowledgePage) -> str:
    """The text the full-text index holds for a page: its tokens, space-separated."""
    return " ".join(tokens(" ".join((page.title, page.summary, " ".join(page.tags), page.content))))


def query_terms(query: str, stop_words: frozenset[str] = DEFAULT_STOP_WORDS) -> list[str]:
    """Unique keywords of a query, in order, for a BM25 search."""
    return list(dict.fromkeys(extract_keywords(query, stop_words)))


def matches_any(page: KnowledgePage, needles: Sequence[str]) -> int | None:
    """Index of the first needle that is a case-insensitive substring of the
    page's title, summary, content or one of its tags, or None."""
    fields = (page.title.lower(), page.summary.lower(), page.content.lower())
    tags = [t.lower() for t in page.tags]
    for i, needle in enumerate(needles):
        if any(needle in f for f in fields) or any(needle in t for t in tags):
            return i
    return None
