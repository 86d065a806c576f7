"""FactMemory: key/value facts shared by the contexts of one session.

Items ``_session_{session}:{key}`` (``session`` escaped, so session ``"a:b"``
never shows up in session ``"a"``). ``snapshot()`` renders the block::

    <session-context>
    key1: value1
    key2: value2
    </session-context>

in store order (oldest write first; an overwritten key moves to the end), with
no trailing newline; an empty session gives
``"<session-context>\\n</session-context>"``. A backslash or
a line break in a key or value is escaped (``\\\\``, ``\\n``, ``\\r``), so a
value cannot break the one-line-per-fact format or forge the closing tag.
"""

from __future__ import annotations

from ._errors import InvalidInput
from ._item import MemoryFilter, escape_segment
from ._store import MemoryBackend, check_text, delete_prefix

SESSION_PREFIX = "_session_"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


class FactMemory:
    """Key/value memory of one session over a store (synchronous)."""

    def __init__(self, store: MemoryBackend, session_id: str) -> None:
        if not check_text(session_id, "session_id"):
            raise InvalidInput("session_id must be a non-empty string")
        self.store = store
        self.session_id = session_id
        self.namespace = f"{SESSION_PREFIX}{escape_segment(session_id)}"
        self.prefix = self.namespace + ":"

    def _key(self, key: str) -> str:
        if not check_text(key, "key"):
            raise InvalidInput("key must be a non-empty string")
        return self.prefix + key

    def set(self, key: str, value: str) -> None:
        check_text(value, "value")
        self.store.put(self._key(key), value)

    def get(self, key: str) -> str | None:
        item = self.store.get(self._key(key))
        return None if item is None else item.content

    def remove(self, key: str) -> bool:
        return self.store.delete(self._key(key))

    def items(self) -> list[tuple[str, str]]:
        """(key, value) pairs in store order."""
        return [
            (item.id[len(self.prefix) :], item.content)
            for item in self.store.list(MemoryFilter(prefix=self.prefix))
        ]

    def clear(self) -> int:
        """Delete this session's keys only; how many were removed."""
        return delete_prefix(self.store, self.prefix)

    def snapshot(self) -> str:
        lines = ["<session-context>"]
        lines.extend(f"{_escape(k)}: {_escape(v)}" for k, v in self.items())
        lines.append("</session-context>")
        return "\n".join(lines)
