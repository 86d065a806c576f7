"""Errors of the session store.

::

    SessionStoreError          session_store
    ├── Conflict               store_conflict             the asker's view of the session is stale
    ├── TurnExists             store_turn_exists          the session has this turn id already
    ├── SessionNotFound        store_session_not_found    (LookupError) no such session
    ├── InvalidTranscript      store_invalid_transcript   (ValueError) the write would break the
    │                                                     tool-call pairing of the transcript
    ├── InvalidRequest         store_invalid_request      (ValueError) a bad argument
    ├── Fenced                 store_fenced               a write carried a lease token that is
    │                                                     not the session's live lease's
    ├── LeaseHeld              store_lease_held           another host holds a live lease
    ├── HostNotFound           store_host_not_found       (LookupError) no such host registered
    └── StoreStorageError      store_storage              the database failed (a crash)
        ├── StoreBusy          store_storage_busy         retryable: the file stayed locked
        └── StoreUnavailable   store_storage_unavailable  disk full, read-only, I/O error:
                                                          the asker's; the actor stays up

:class:`Conflict`, :class:`TurnExists`, :class:`SessionNotFound`,
:class:`InvalidTranscript`, :class:`InvalidRequest`, :class:`Fenced`, :class:`LeaseHeld`
and :class:`HostNotFound` are raised before anything is written and go to the asker only
(the actor carries on).
:class:`StoreBusy` and :class:`StoreUnavailable` fail every request of their
transaction, which was rolled back, and stop there: the actor carries on, degraded
after a :class:`StoreUnavailable` until a write succeeds again. Any other
:class:`StoreStorageError` crashes the actor: its supervisor restarts it, which reopens
the database; the outcome of the writes in the failed transaction is then unknown to
their askers (reload to learn it).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from .._errors import AgcoreError

__all__ = [
    "Conflict",
    "ConflictReason",
    "FenceReason",
    "Fenced",
    "HostNotFound",
    "InvalidRequest",
    "InvalidTranscript",
    "LeaseHeld",
    "SessionNotFound",
    "SessionStoreError",
    "StoreBusy",
    "StoreStorageError",
    "StoreUnavailable",
    "TurnExists",
]

#: Why a write conflicted: the version differs (``version``), a turn is already open
#: (``turn_open``), no turn is open (``no_open_turn``), another turn is open
#: (``turn_mismatch``), or the session exists where a new one was asked for (``exists``).
ConflictReason = Literal["version", "turn_open", "no_open_turn", "turn_mismatch", "exists"]


class SessionStoreError(AgcoreError):
    """Base of every error the session store raises."""

    kind: ClassVar[str] = "session_store"


class Conflict(SessionStoreError):
    """The session is not in the state the writer expected; nothing was written.

    ``expected`` is the version the writer gave, ``actual`` the stored one. A stale
    writer (an older incarnation of a session, a second host) gets this instead of
    interleaving its turn with the current one; it should reload the session.
    """

    kind: ClassVar[str] = "store_conflict"

    def __init__(
        self, session: str, reason: ConflictReason, *, expected: int | None, actual: int
    ) -> None:
        super().__init__(
            f"session {session!r}: {reason} conflict (expected version {expected}, "
            f"stored version {actual})"
        )
        self.session = session
        self.reason: ConflictReason = reason
        self.expected = expected
        self.actual = actual


class TurnExists(SessionStoreError):
    """``BeginTurn`` named a turn id the session's log has already (the turn ran, or
    began and was cut off); nothing was written. A client that retries a turn with its
    id, through this host or another, gets this instead of the turn running twice."""

    kind: ClassVar[str] = "store_turn_exists"

    def __init__(self, session: str, turn: str) -> None:
        super().__init__(f"session {session!r}: turn {turn!r} exists already")
        self.session = session
        self.turn = turn


class SessionNotFound(SessionStoreError, LookupError):
    """No session has this id (never created, deleted or expired)."""

    kind: ClassVar[str] = "store_session_not_found"

    def __init__(self, session: str) -> None:
        super().__init__(f"session not found: {session!r}")
        self.session = session


class InvalidTranscript(SessionStoreError, ValueError):
    """The write would leave a tool result without its call, a call answered twice, or
    (when it closes a turn) a call unanswered; nothing was written."""

    kind: ClassVar[str] = "store_invalid_transcript"


class InvalidRequest(SessionStoreError, ValueError):
    """An argument the store refuses (an empty id, a negative limit, a bad cursor)."""

    kind: ClassVar[str] = "store_invalid_request"


#: Why a fenced write was refused: another grant made the token ``stale``, the lease
#: was ``released``, it ``expired`` by the store's clock, or the session never had one
#: (``none``).
FenceReason = Literal["stale", "released", "expired", "none"]


class Fenced(SessionStoreError):
    """A write carried a fencing token that is not the session's live lease's; nothing
    was written (checked in the write's own transaction).

    ``token`` is the token the writer gave, ``current`` the session's latest (0: none
    ever granted). The writer no longer owns the session: it must drop it without
    writing again (another host may own it now).
    """

    kind: ClassVar[str] = "store_fenced"

    def __init__(self, session: str, reason: FenceReason, *, token: int, current: int) -> None:
        super().__init__(
            f"session {session!r}: write fenced ({reason}: token {token}, current {current})"
        )
        self.session = session
        self.reason: FenceReason = reason
        self.token = token
        self.current = current


class LeaseHeld(SessionStoreError):
    """Another host holds a live lease on the session; no lease was granted.

    ``seconds_left`` is how long the lease has to run by the store's clock, unless
    renewed (it is no promise: the owner may renew or release it).
    """

    kind: ClassVar[str] = "store_lease_held"

    def __init__(self, session: str, *, host: str, token: int, seconds_left: float) -> None:
        super().__init__(
            f"session {session!r}: leased by host {host!r} (token {token}) for "
            f"{seconds_left:.3f} s more"
        )
        self.session = session
        self.host = host
        self.token = token
        self.seconds_left = seconds_left


class HostNotFound(SessionStoreError, LookupError):
    """No host is registered under this id (never, or unregistered)."""

    kind: ClassVar[str] = "store_host_not_found"

    def __init__(self, host: str) -> None:
        super().__init__(f"host not registered: {host!r}")
        self.host = host


class StoreStorageError(SessionStoreError):
    """The database failed (I/O error, a corrupt or newer file); crashes the actor."""

    kind: ClassVar[str] = "store_storage"


class StoreBusy(StoreStorageError):
    """Another connection held the file's write lock past the busy timeout.

    Nothing of the transaction was written; sending the same request again may succeed.
    """

    kind: ClassVar[str] = "store_storage_busy"

    def is_retryable(self) -> bool:
        return True


class StoreUnavailable(StoreStorageError):
    """The file cannot be written or read now (disk full, read-only, an I/O error).

    Nothing of the transaction was written. The actor stays up and reports itself
    degraded (in :meth:`ActorSystem.snapshot`) until a write succeeds again.
    """

    kind: ClassVar[str] = "store_storage_unavailable"
