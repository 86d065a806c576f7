"""MkDocs hook: a link from a page to a source file of the package becomes a link to that
package's API reference page (``../agcore_actors/store/_sqlite.py`` → ``api/store.md``),
so pages written for reading in the repository also work on the site."""

from __future__ import annotations

import re
from typing import Any

_SOURCE = re.compile(r"\]\((?:\.\./)+agcore_actors/(?:(?P<pkg>[a-z]+)/)?[\w/.]*\.py\)")


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    depth = page.file.src_uri.count("/")
    up = "../" * depth

    def api_page(match: re.Match[str]) -> str:
        package = match["pkg"] or "root"
        return f"]({up}api/{package}.md)"

    return _SOURCE.sub(api_page, markdown)
