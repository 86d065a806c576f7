"""ConversationMemory: a session's transcript, one stored item per message.

Rows: id ``conv:{session}:{index:010}`` (``session`` escaped, see
:func:`escape_segment`), content = the message as msgspec JSON, metadata
``{"session_id", "index"}``. The index is one more than the last stored
index, so ids never repeat and id order is transcript order, whatever the
clock does.

Strategies (:class:`MemoryStrategy`): ``SLIDING_WINDOW`` keeps the newest
``max_turns`` messages (``max_turns`` counts messages, not turns) and
deletes the older ones from the store in the same transaction as the
append; ``FULL`` keeps everything.

The store is the transcript: there is no cache to drift from it, so
``history()`` always reads the store and a transcript survives a restart.
Compaction is not done here (it lives in the context layer, above this one);
:meth:`replace` writes a compacted history back.
"""

from __future__ import annotations

import enum

import attrs
import msgspec

from .._validators import non_negative
from ._errors import InvalidInput, NotFound, SerializationError
from ._item import MemoryFilter, StoredMessage, escape_segment
from ._store import MemoryBackend, check_text, delete_prefix, encode_json
from ._transcript import (
    check_tool_call_ids,
    messages_from_jsonl,
    messages_to_jsonl,
    tool_call_ids,
)

CONVERSATION_PREFIX = "conv:"

_decoder = msgspec.json.Decoder(StoredMessage)


class MemoryStrategy(enum.Enum):
    SLIDING_WINDOW = "sliding_window"
    FULL = "full"


@attrs.frozen(kw_only=True)
class ConversationMemoryConfig:
    """How a transcript is bounded."""

    #: Keep a sliding window of the newest ``max_turns`` messages, or everything.
    strategy: MemoryStrategy = MemoryStrategy.SLIDING_WINDOW
    #: The window's size, in messages.
    max_turns: int = attrs.field(default=50, validator=non_negative)


def conversation_prefix(session_id: str) -> str:
    return f"{CONVERSATION_PREFIX}{escape_segment(session_id)}:"


def encode_message(msg: StoredMessage) -> str:
    """``msg`` as JSON text; :class:`InvalidInput` if it cannot be stored."""
    return encode_json(msg, f"a {msg.role} message").decode()


def decode_message(text: str, where: str) -> StoredMessage:
    try:
        return _decoder.decode(text)
    except msgspec.DecodeError as exc:
        raise SerializationError(f"{where}: not a chat message: {exc}") from None


class ConversationMemory:
    """One session's transcript over a store (synchronous; see module doc)."""

    def __init__(
        self,
        store: MemoryBackend,
        session_id: str,
        config: ConversationMemoryConfig | None = None,
    ) -> None:
        if not check_text(session_id, "session_id"):
            raise InvalidInput("session_id must be a non-empty string")
        self.store = store
        self.session_id = session_id
        self.config = config or ConversationMemoryConfig()
        self.prefix = conversation_prefix(session_id)

    def _next_index(self) -> int:
        last = self.store.keys(self.prefix, limit=1, reverse=True)
        if not last:
            return 0
        try:
            return int(last[0][len(self.prefix) :]) + 1
        except ValueError:
            raise SerializationError(f"unexpected conversation id {last[0]!r}") from None

    def add_message(self, msg: StoredMessage) -> int:
        """Append ``msg``; return its index. One transaction with the window."""
        return self.extend([msg])[0]

    def extend(self, msgs: list[StoredMessage]) -> list[int]:
        """Append several messages in one transaction; their indexes."""
        if not msgs:
            return []
        encoded = [encode_message(msg) for msg in msgs]  # refused before any write
        with self.store.batch():
            index = self._next_index()
            out: list[int] = []
            for text in encoded:
                self.store.put(
                    f"{self.prefix}{index:010d}",
                    text,
                    {"session_id": self.session_id, "index": index},
                    pinned=False,
                )
                out.append(index)
                index += 1
            self._apply_window()
        return out

    def _apply_window(self) -> None:
        if self.config.strategy is not MemoryStrategy.SLIDING_WINDOW:
            return
        excess = self.store.count(self.prefix) - self.config.max_turns
        if excess > 0:
            for old in self.store.keys(self.prefix, limit=excess):
                self.store.delete(old)

    def history(self) -> list[StoredMessage]:
        """The stored transcript, oldest first (by index, not by clock)."""
        items = self.store.list(MemoryFilter(prefix=self.prefix))
        items.sort(key=lambda item: item.id)
        return [decode_message(item.content, item.id) for item in items]

    def __len__(self) -> int:
        return self.store.count(self.prefix)

    def clear(self) -> int:
        """Delete the whole transcript; how many messages were removed."""
        return delete_prefix(self.store, self.prefix)

    def export_jsonl(self) -> str:
        """The transcript as JSON Lines; :class:`NotFound` when it has no message."""
        messages = self.history()
        if not messages:
            raise NotFound(f"transcript of session {self.session_id!r}")
        return messages_to_jsonl(messages)

    def import_jsonl(self, jsonl: str, *, replace: bool = False) -> int:
        """Append (or with ``replace``, substitute) a JSON Lines transcript in one
        transaction; how many messages. All-or-nothing: a bad line, or a tool call
        id that the result would hold twice, is :class:`SerializationError`."""
        messages = messages_from_jsonl(jsonl)
        with self.store.batch():
            if replace:
                self.replace(messages)
            else:
                check_tool_call_ids(messages, tool_call_ids(self.history()))
                self.extend(messages)
        return len(messages)

    def replace(self, msgs: list[StoredMessage]) -> None:
        """Replace the transcript by ``msgs`` (e.g. after compaction), atomically."""
        for msg in msgs:
            encode_message(msg)  # refused before the old transcript goes
        with self.store.batch():
            self.clear()
            self.extend(msgs)
