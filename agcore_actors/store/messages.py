"""The SessionStore actor's protocol: every request it accepts and its reply.

Turns (each one transaction, durable when it replies; ``expected_version`` is compared
and the version bumped by one)::

    BeginTurn(session, turn, expected_version, messages, agent)        -> SessionRecord
    BeginTurnAndLoad(session, turn, expected_version, messages, agent, tail)
                                                                       -> LoadedSession
    AppendTurn(session, turn, expected_version, messages, usage_delta) -> SessionRecord
    CommitTurn(session, turn, expected_version, messages, usage_delta,
               agent, facts_set, facts_removed, compaction)            -> SessionRecord
    RepairInterrupted(session, turn, expected_version)                 -> SessionRecord
    UpdateSession(session, expected_version, agent, facts_set, facts_removed)
                                                                       -> SessionRecord

A write may carry ``fence``, the writer's lease token on the session (see Ownership):
it is then refused with :class:`~agcore_actors.store.Fenced`, in its own transaction
and with nothing written, unless the session's lease is live with that very token.
``fence=None`` (the default) is unfenced: one process, no leases, no extra cost.

Reads (one consistent read each)::

    LoadSession(session, tail, missing_ok)           -> LoadedSession
    ListSessions(idle_before, status, limit, cursor) -> SessionPage
    ExportSession(session)                           -> SessionSnapshot
    HasTurn(session, turn)                           -> bool

Whole sessions (retention never removes single messages)::

    DeleteSessions(ids)                    -> Deleted
    ExpireSessions(idle_before, limit)     -> Deleted
    RestoreSession(snapshot, replace)      -> SessionRecord

Ownership (leases, one transaction each; times on the store's clock: PostgreSQL's own
for that backend, the actor's ``clock`` otherwise)::

    AcquireLease(session, host, ttl)      -> Lease
    RenewLeases(host, ttl, leases)        -> RenewedLeases
    ReleaseLeases(host, leases)           -> ReleasedLeases
    FindLease(session)                    -> Lease | None        (a read)

Hosts (membership, in the same store)::

    RegisterHost(host, address, ttl)      -> HostRecord
    HostHeartbeat(host, ttl)              -> HostRecord
    ListHosts()                           -> Hosts               (a read)
    UnregisterHost(host)                  -> Deleted

A lease is granted when the session has none, or it was released, or it has expired
by the store's clock, or ``host`` itself holds it (a re-activation); every grant gives a
token one above the session's previous one (tokens only grow: they outlive release,
expiry and the session's deletion). Otherwise :class:`~agcore_actors.store.LeaseHeld`.
``RenewLeases`` extends, in one statement, those of ``leases`` (``(session, token)``
pairs) that ``host`` still holds live with that token, and refreshes ``host``'s
heartbeat if it is registered (one round trip per interval for both); the others are
``lost``. A host must stop writing a session before its lease could have expired by
its own clock: ``ttl`` seconds after it *sent* the request that granted or renewed it
(the store's clock is not the host's; ``expires_in`` says what was left at the store).
The Structs of ownership and hosts are defined in ``_ownership_messages``, and the
replies and records of sessions (``SessionRecord``, ``LoadedSession``, ``SessionPage``,
``SessionSnapshot``, ``LogEntry``, ``Compaction``, ``Deleted``) in ``_message_values``;
both are re-exported here, so ``sm.AcquireLease`` or ``sm.SessionRecord`` is used like
every other name of the protocol.

Cancelling the asker:

- of a write: if the store has not taken the request yet it is withdrawn and never
  applied; once taken it is applied and made durable, and the asker's cancellation
  completes only after that. Either way nothing is half-applied; reload to learn which.
- of a read: the request is withdrawn, or its reply dropped.

Order: requests are applied one at a time, in the order the store takes them; requests
in flight at the same moment (several askers, pipelined tells) have no order between
them. Wait for a reply before sending a request that depends on it.

Errors (the asker's, nothing written): :class:`~agcore_actors.store.Fenced` (checked
first), :class:`~agcore_actors.store.Conflict` (stale
version, or the turn is not in the state the request needs),
:class:`~agcore_actors.store.LeaseHeld`, :class:`~agcore_actors.store.HostNotFound`,
:class:`~agcore_actors.store.SessionNotFound`,
:class:`~agcore_actors.store.InvalidTranscript`,
:class:`~agcore_actors.store.InvalidRequest`. A session that does not exist has version
0: ``BeginTurn``, ``UpdateSession`` and ``RestoreSession`` create it.

Transcript validity, kept by every write: each tool message answers a call of the
assistant message it follows (only tool messages between them), no call is answered
twice, and every call is answered before the next non-tool message and before the turn
is committed. Only an open turn (after ``BeginTurn``/``AppendTurn``) may end with
unanswered calls; ``RepairInterrupted`` answers them with synthetic results.
"""

from __future__ import annotations

import msgspec

from .._exports import publish
from ..actor import Request
from ..llm import Message, Usage
from ._message_values import (
    Compaction,
    Deleted,
    LoadedSession,
    LogEntry,
    SessionPage,
    SessionRecord,
    SessionSnapshot,
    SessionStatus,
)
from ._ownership_messages import (
    AcquireLease,
    FindLease,
    HostHeartbeat,
    HostRecord,
    Hosts,
    Lease,
    LeaseRef,
    ListHosts,
    RegisterHost,
    ReleasedLeases,
    ReleaseLeases,
    RenewedLeases,
    RenewLeases,
    UnregisterHost,
)

__all__ = [
    "AcquireLease",
    "AppendTurn",
    "BeginTurn",
    "BeginTurnAndLoad",
    "CommitTurn",
    "Compaction",
    "DeleteSessions",
    "Deleted",
    "ExpireSessions",
    "ExportSession",
    "FindLease",
    "HasTurn",
    "HostHeartbeat",
    "HostRecord",
    "Hosts",
    "Lease",
    "LeaseRef",
    "ListHosts",
    "ListSessions",
    "LoadSession",
    "LoadedSession",
    "LogEntry",
    "RegisterHost",
    "ReleaseLeases",
    "ReleasedLeases",
    "RenewLeases",
    "RenewedLeases",
    "RepairInterrupted",
    "RestoreSession",
    "SessionPage",
    "SessionRecord",
    "SessionSnapshot",
    "SessionStatus",
    "StoreMsg",
    "StoreReply",
    "UnregisterHost",
    "UpdateSession",
]

# -- turns ----------------------------------------------------------------------------


class BeginTurn(Request[SessionRecord], frozen=True, tag=True, kw_only=True):
    """Open turn ``turn``: append the user's message(s), status ``running``."""

    session: str
    turn: str
    #: 0 for a session that does not exist yet: it is created.
    expected_version: int
    messages: list[Message]
    #: None: keep the session's agent.
    agent: str | None = None
    #: The writer's lease token (None: unfenced); see the module doc.
    fence: int | None = None


class BeginTurnAndLoad(Request[LoadedSession], frozen=True, tag=True, kw_only=True):
    """``BeginTurn``, replying with the session as ``LoadSession(session, tail +
    len(messages))`` reads it right after: the last ``tail`` messages before the turn
    (None: all), then the turn's own (one ask where a reload and a begin took two)."""

    session: str
    turn: str
    #: 0 for a session that does not exist yet: it is created.
    expected_version: int
    messages: list[Message]
    #: None: keep the session's agent.
    agent: str | None = None
    tail: int | None = None
    #: The writer's lease token (None: unfenced); see the module doc.
    fence: int | None = None


class AppendTurn(Request[SessionRecord], frozen=True, tag=True, kw_only=True):
    """Checkpoint the open turn: append its messages so far (calls may stay open)."""

    session: str
    turn: str
    expected_version: int
    messages: list[Message]
    usage_delta: Usage = Usage()
    #: The writer's lease token (None: unfenced); see the module doc.
    fence: int | None = None


class CommitTurn(Request[SessionRecord], frozen=True, tag=True, kw_only=True):
    """Close the open turn: its remaining messages, usage, agent, facts, compaction."""

    session: str
    turn: str
    expected_version: int
    messages: list[Message] = msgspec.field(default_factory=list)
    usage_delta: Usage = Usage()
    #: None: keep the session's agent.
    agent: str | None = None
    facts_set: dict[str, str] = msgspec.field(default_factory=dict)
    #: Applied before ``facts_set``.
    facts_removed: list[str] = msgspec.field(default_factory=list)
    compaction: Compaction | None = None
    #: The writer's lease token (None: unfenced); see the module doc.
    fence: int | None = None


class RepairInterrupted(Request[SessionRecord], frozen=True, tag=True):
    """Close the open turn ``turn`` as interrupted, answering its open calls."""

    session: str
    turn: str
    #: None: do not compare (the turn id is the guard).
    expected_version: int | None = None
    #: The writer's lease token (None: unfenced); see the module doc.
    fence: int | None = None


class UpdateSession(Request[SessionRecord], frozen=True, tag=True, kw_only=True):
    """Set the agent and facts outside a turn (creates the session at version 0)."""

    session: str
    expected_version: int
    agent: str | None = None
    facts_set: dict[str, str] = msgspec.field(default_factory=dict)
    facts_removed: list[str] = msgspec.field(default_factory=list)
    #: The writer's lease token (None: unfenced); see the module doc.
    fence: int | None = None


# -- reads ----------------------------------------------------------------------------


class LoadSession(Request[LoadedSession], frozen=True, tag=True):
    """Record, summary, the last ``tail`` messages (None: all) and facts, in one read."""

    session: str
    tail: int | None = None
    #: A session that does not exist loads as a new, empty one at version 0 (nothing is
    #: written) instead of raising ``SessionNotFound``.
    missing_ok: bool = False


class ListSessions(Request[SessionPage], frozen=True, tag=True, kw_only=True):
    """Sessions idle since before ``idle_before``, oldest update first (keyset pages)."""

    #: Only sessions with ``updated_at < idle_before`` (None: all).
    idle_before: float | None = None
    status: SessionStatus | None = None
    limit: int = 100
    #: The previous page's cursor.
    cursor: str | None = None


class ExportSession(Request[SessionSnapshot], frozen=True, tag=True):
    """The whole session, raw log included, in one read."""

    session: str


class HasTurn(Request[bool], frozen=True, tag=True):
    """Whether the session has messages of turn ``turn`` (it ran, or began: a retried
    turn id), without reading the transcript; False for no such session."""

    session: str
    turn: str


# -- whole sessions -------------------------------------------------------------------


class DeleteSessions(Request[Deleted], frozen=True, tag=True):
    """Delete these sessions with their messages and facts, in one transaction."""

    ids: list[str]
    #: The writer's lease token (None: unfenced); a fenced delete names one session.
    fence: int | None = None


class ExpireSessions(Request[Deleted], frozen=True, tag=True):
    """Delete up to ``limit`` sessions idle since before ``idle_before``, oldest first."""

    idle_before: float
    limit: int = 1000


class RestoreSession(Request[SessionRecord], frozen=True, tag=True):
    """Write a whole session from a snapshot (import); ``replace`` an existing one."""

    snapshot: SessionSnapshot
    replace: bool = False
    #: The writer's lease token (None: unfenced); see the module doc.
    fence: int | None = None


StoreReply = (
    SessionRecord
    | LoadedSession
    | SessionPage
    | SessionSnapshot
    | Deleted
    | Lease
    | RenewedLeases
    | ReleasedLeases
    | HostRecord
    | Hosts
    | bool
    | None
)

StoreMsg = (
    BeginTurn
    | BeginTurnAndLoad
    | AppendTurn
    | CommitTurn
    | RepairInterrupted
    | UpdateSession
    | LoadSession
    | ListSessions
    | ExportSession
    | HasTurn
    | DeleteSessions
    | ExpireSessions
    | RestoreSession
    | AcquireLease
    | RenewLeases
    | ReleaseLeases
    | FindLease
    | RegisterHost
    | HostHeartbeat
    | ListHosts
    | UnregisterHost
)

publish(__name__, __all__)
