"""The session store: sessions, messages and facts as real tables, turns as transactions.

::

    from agcore_actors.store import messages as sm

    spec = session_store_spec("sessions", backend=SqliteSessions("bot.db"))
    store = await system.root.start_child(spec)
    rec = await store.ask(sm.BeginTurn(session="chat-1", turn="t1", expected_version=0,
                                       messages=[user("hi")]))
    rec = await store.ask(sm.CommitTurn(session="chat-1", turn="t1",
                                        expected_version=rec.version,
                                        messages=[assistant("hello")], usage_delta=usage))
    loaded = await store.ask(sm.LoadSession("chat-1", tail=50))

The protocol is :mod:`agcore_actors.store.messages`; the storage backends and the
transcript migration are in :mod:`agcore_actors.store.lowlevel`, the transcript rules
in :mod:`agcore_actors.store.policy`. ``docs/store.md`` explains the design.
"""

from .._exports import publish
from . import messages
from ._actor import SessionStore, session_store_spec
from ._config import (
    InMemorySessions,
    PostgresSessions,
    SessionBackendConfig,
    SessionStoreConfig,
    SqliteSessions,
)
from ._errors import (
    Conflict,
    ConflictReason,
    Fenced,
    FenceReason,
    HostNotFound,
    InvalidRequest,
    InvalidTranscript,
    LeaseHeld,
    SessionNotFound,
    SessionStoreError,
    StoreBusy,
    StoreStorageError,
    StoreUnavailable,
    TurnExists,
)
from ._transcript import export_session, import_session, snapshot_from_jsonl, snapshot_to_jsonl
from .messages import (
    Compaction,
    Deleted,
    HostRecord,
    Hosts,
    Lease,
    LoadedSession,
    LogEntry,
    SessionPage,
    SessionRecord,
    SessionSnapshot,
    SessionStatus,
    StoreMsg,
)

__all__ = [
    "Compaction",
    "Conflict",
    "ConflictReason",
    "Deleted",
    "FenceReason",
    "Fenced",
    "HostNotFound",
    "HostRecord",
    "Hosts",
    "InMemorySessions",
    "InvalidRequest",
    "InvalidTranscript",
    "Lease",
    "LeaseHeld",
    "LoadedSession",
    "LogEntry",
    "PostgresSessions",
    "SessionBackendConfig",
    "SessionNotFound",
    "SessionPage",
    "SessionRecord",
    "SessionSnapshot",
    "SessionStatus",
    "SessionStore",
    "SessionStoreConfig",
    "SessionStoreError",
    "SqliteSessions",
    "StoreBusy",
    "StoreMsg",
    "StoreStorageError",
    "StoreUnavailable",
    "TurnExists",
    "export_session",
    "import_session",
    "messages",
    "session_store_spec",
    "snapshot_from_jsonl",
    "snapshot_to_jsonl",
]

publish(__name__, __all__)
