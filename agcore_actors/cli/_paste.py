"""Files pasted into a chat line: the images and PDFs a line names are attached to its
turn.

A terminal pastes a dragged file as its path (quoted, or with ``\\ `` before spaces,
sometimes as a ``file://`` URL). :func:`pasted_media` finds the words of a line that are
paths of existing image or PDF files and makes each a content part (a file named twice,
once); the line's text is
sent unchanged (the model sees the name too). Other files are left alone: a line that
mentions ``notes.txt`` is not an upload of it. A line that does not split into words
(an unbalanced quote) attaches nothing.
"""

from __future__ import annotations

import mimetypes
import shlex
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..llm import ContentPart, file_part_of, image_part_of

__all__ = ["pasted_media"]

#: Decoded bytes a pasted file may have; a larger one is named, not read.
MAX_PASTED_BYTES = 20 * 1024 * 1024


def _path(word: str, cwd: Path) -> Path | None:
    if word.startswith("file://"):
        word = unquote(urlsplit(word).path)
    path = Path(word).expanduser()
    path = path if path.is_absolute() else cwd / path
    try:
        return path if path.is_file() else None
    except OSError:  # a name too long for the file system
        return None


def pasted_media(line: str, cwd: Path) -> tuple[list[ContentPart], list[str]]:
    """The parts of the image and PDF files ``line`` names (relative to ``cwd``), and a
    note per file (attached, or why not)."""
    try:
        words = shlex.split(line)
    except ValueError:
        return [], []
    parts: list[ContentPart] = []
    notes: list[str] = []
    seen: set[Path] = set()
    for word in words:
        path = _path(word, cwd)
        if path is None or path.resolve() in seen:
            continue
        seen.add(path.resolve())
        media = mimetypes.guess_type(path.name)[0] or ""
        if not (media.startswith("image/") or media == "application/pdf"):
            continue
        size = path.stat().st_size
        if size > MAX_PASTED_BYTES:
            notes.append(f"{path.name}: {size} bytes, over {MAX_PASTED_BYTES}: not attached")
            continue
        data = path.read_bytes()
        if media == "application/pdf":
            parts.append(file_part_of(data, media, path.name))
        else:
            parts.append(image_part_of(data, media))
        notes.append(f"attached {path.name} ({media}, {len(data)} bytes)")
    return parts, notes
