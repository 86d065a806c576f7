"""Files pasted into a chat line: images and PDFs named by the line (quoted, escaped,
``file://``, relative) become parts; other files, missing ones and broken quoting
attach nothing."""

from __future__ import annotations

from pathlib import Path

from agcore_actors.cli._paste import pasted_media
from agcore_actors.llm import FilePart, ImagePart


def test_pasted_images_and_pdfs_become_parts_and_other_files_do_not(tmp_path: Path) -> None:
    (tmp_path / "my cat.png").write_bytes(b"\x89PNG")
    (tmp_path / "q3.pdf").write_bytes(b"%PDF")
    (tmp_path / "notes.txt").write_text("hi")
    line = f"what are these? {tmp_path}/my\\ cat.png 'q3.pdf' notes.txt gone.png file://{tmp_path}/q3.pdf"
    parts, notes = pasted_media(line, tmp_path)
    assert [type(p) for p in parts] == [ImagePart, FilePart]  # q3.pdf once
    assert isinstance(parts[0], ImagePart)
    assert parts[0].image_url.url == "data:image/png;base64,iVBORw=="
    assert isinstance(parts[1], FilePart) and parts[1].file.filename == "q3.pdf"
    assert notes == [
        "attached my cat.png (image/png, 4 bytes)",
        "attached q3.pdf (application/pdf, 4 bytes)",
    ]


def test_a_line_with_broken_quoting_or_no_files_attaches_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(b"x")
    assert pasted_media("it's a.png", tmp_path) == ([], [])
    assert pasted_media("just words", tmp_path) == ([], [])
