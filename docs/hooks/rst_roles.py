"""MkDocs hook: Sphinx roles in docstrings (``:class:`~agcore_actors.llm.LlmError```) become
links to the API reference where the target is documented, and plain code otherwise.

The docstrings are written to read well in an editor and in ``help()``; mkdocstrings renders
them as Markdown, where a role shows as ``:class:`` followed by code. This rewrites the
rendered HTML: ``~`` keeps the last component as the title (Sphinx's rule), and the link
is an optional cross-reference resolved by autorefs, so an unknown target is no warning.
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const):<code>(?P<tilde>~?)"
    r"(?P<target>[\w.]+)(?P<call>\(\))?</code>"
)


def _link(match: re.Match[str]) -> str:
    target = match["target"].lstrip(".")
    title = target.rsplit(".", 1)[-1] if match["tilde"] else target
    title += match["call"] or ""
    return f'<autoref optional identifier="{target}"><code>{title}</code></autoref>'


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub(_link, html)
