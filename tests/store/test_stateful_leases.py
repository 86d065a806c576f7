"""Leases, fencing and hosts against a plain model (``tests/store/lease_model.py``), on
top of the session store's whole stateful test (``test_stateful.py``), on the three backends.

Besides every rule of the session machine, hosts acquire, renew and release leases
(with stale and unknown tokens, bad TTLs, several sessions at once), register, beat
and unregister, while time passes and the actor restarts; and writes carry fencing
tokens: the current one, a stale one, one never granted. Checked after every step: the
token of each session only grows (also across the session's deletion), the store's
lease of each session is the model's, and a fenced write the model refuses was refused
with the same reason and changed nothing (the session machine's invariant compares
every session's version and transcript with the model's after every step).
"""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
import msgspec
from hypothesis.stateful import initialize, invariant, rule

from agcore_actors.llm import Usage
from agcore_actors.store import Conflict, Fenced
from agcore_actors.store import messages as sm
from tests.store.lease_model import LeaseModel
from tests.store.test_stateful import (
    SESSIONS,
    PostgresMachine,
    SqliteMachine,
    StoreMachine,
    _postgres_settings,
    _settings,
    fact_maps,
)

HOSTS = ["h1", "h2", "h3"]
ttls = st.sampled_from([0.5, 2.0, 5.0])
#: How a write is fenced: not at all, with the current token, one below, one above.
fences = st.sampled_from(["none", "current", "current", "current", "stale", "future"])
#: A lease named with its current token, one below (stale) or one above (never granted).
deltas = st.sampled_from([0, 0, 0, -1, 1])


class LeaseMachine(StoreMachine):
    def __init__(self) -> None:
        super().__init__()
        self.leases = LeaseModel()
        self.tokens: dict[str, int] = {}

    def ask(self, msg: Any) -> Any:
        try:
            return self.driver.run(self.store.ask, msg)
        except Conflict as exc:
            return ("Conflict", exc.reason)
        except Fenced as exc:
            return ("Fenced", exc.reason)
        except Exception as exc:  # the asker's errors, compared by class name
            return (type(exc).__name__, None)

    def fence(self, sid: str, how: str) -> int | None:
        token = self.leases.token(sid)
        return {"none": None, "current": token, "stale": token - 1, "future": token + 1}[how]

    # -- leases -----------------------------------------------------------------------

    @initialize(hosts=st.lists(st.sampled_from(HOSTS), min_size=3, max_size=3), ttl=ttls)
    def some_sessions_are_leased(self, hosts: list[str], ttl: float) -> None:
        for sid, host in zip(SESSIONS, hosts, strict=True):
            self.acquire(sid, host, ttl)

    @rule(sid=st.sampled_from(SESSIONS), host=st.sampled_from(HOSTS), ttl=ttls)
    def take_over(self, sid: str, host: str, ttl: float) -> None:
        """A host acquires, as a host taking over a session does (twice as likely)."""
        self.acquire(sid, host, ttl)

    @rule(sid=st.sampled_from(SESSIONS), host=st.sampled_from(HOSTS), ttl=ttls)
    def acquire(self, sid: str, host: str, ttl: float) -> None:
        got = self.ask(sm.AcquireLease(session=sid, host=host, ttl=ttl))
        self.check(got, self.leases.acquire(sid, host, ttl, self.now()))

    @rule(
        sid=st.sampled_from(SESSIONS),
        host=st.sampled_from(["h1", ""]),
        ttl=st.sampled_from([0.0, -1.0, float("nan"), float("inf")]),
    )
    def acquire_refused(self, sid: str, host: str, ttl: float) -> None:
        got = self.ask(sm.AcquireLease(session=sid, host=host, ttl=ttl))
        self.check(got, ("InvalidRequest", None))  # and nothing changed: see the invariant

    @rule(
        host=st.sampled_from(HOSTS),
        pairs=st.lists(st.tuples(st.sampled_from(SESSIONS), deltas), max_size=4),
        ttl=ttls,
    )
    def renew(self, host: str, pairs: list[tuple[str, int]], ttl: float) -> None:
        refs = [(sid, self.leases.token(sid) + d) for sid, d in pairs]
        got = self.ask(sm.RenewLeases(host=host, ttl=ttl, leases=refs))
        self.check(got, self.leases.renew(host, refs, ttl, self.now()))

    @rule(
        host=st.sampled_from(HOSTS),
        pairs=st.lists(st.tuples(st.sampled_from(SESSIONS), deltas), max_size=3),
    )
    def release(self, host: str, pairs: list[tuple[str, int]]) -> None:
        refs = [(sid, self.leases.token(sid) + d) for sid, d in pairs]
        got = self.ask(sm.ReleaseLeases(host=host, leases=refs))
        self.check(got, self.leases.release(host, refs, self.now()))

    # -- hosts ------------------------------------------------------------------------

    @rule(host=st.sampled_from(HOSTS), ttl=ttls, address=st.sampled_from(["a:1", "a:2"]))
    def register(self, host: str, ttl: float, address: str) -> None:
        got = self.ask(sm.RegisterHost(host=host, address=address, ttl=ttl))
        self.check(got, self.leases.register(host, address, ttl, self.now()))

    @rule(host=st.sampled_from(HOSTS), ttl=ttls)
    def heartbeat(self, host: str, ttl: float) -> None:
        got = self.ask(sm.HostHeartbeat(host=host, ttl=ttl))
        self.check(got, self.leases.heartbeat(host, ttl, self.now()))

    @rule()
    def list_hosts(self) -> None:
        self.check(self.ask(sm.ListHosts()), self.leases.list_hosts(self.now()))

    @rule(host=st.sampled_from(HOSTS))
    def unregister(self, host: str) -> None:
        self.check(self.ask(sm.UnregisterHost(host)), self.leases.unregister(host))

    # -- fenced writes ----------------------------------------------------------------

    @rule(sid=st.sampled_from(SESSIONS), how=fences)
    def fenced_begin(self, sid: str, how: str) -> None:
        fence, msgs = self.fence(sid, how), self.build(sid, ["user", "calls1"])
        expected, turn = self.version(sid, 0), self.turn(sid, True)
        got = self.ask(
            sm.BeginTurn(
                session=sid, turn=turn, expected_version=expected, messages=msgs, fence=fence
            )
        )
        want = self.leases.fence(sid, fence, self.now()) or self.model.begin(
            sid, turn, expected, msgs, None, self.now()
        )
        self.check(got, want)

    @rule(sid=st.sampled_from(SESSIONS), how=fences, tail=st.none() | st.integers(-1, 3))
    def fenced_begin_and_load(self, sid: str, how: str, tail: int | None) -> None:
        fence, msgs = self.fence(sid, how), self.build(sid, ["user"])
        expected, turn = self.version(sid, 0), self.turn(sid, True)
        got = self.ask(
            sm.BeginTurnAndLoad(
                session=sid,
                turn=turn,
                expected_version=expected,
                messages=msgs,
                tail=tail,
                fence=fence,
            )
        )
        want: Any = self.leases.fence(sid, fence, self.now())
        if want is None and tail is not None and tail < 0:
            want = ("InvalidRequest", None)
        if want is None:
            want = self.model.begin(sid, turn, expected, msgs, None, self.now())
            if not isinstance(want, tuple):
                want = self.model.load(sid, None if tail is None else tail + len(msgs))
        self.check(got, want)

    @rule(sid=st.sampled_from(SESSIONS), how=fences)
    def fenced_append(self, sid: str, how: str) -> None:
        fence, msgs = self.fence(sid, how), self.build(sid, ["answer_all", "calls1"])
        expected, turn = self.version(sid, 0), self.turn(sid, False)
        got = self.ask(
            sm.AppendTurn(
                session=sid, turn=turn, expected_version=expected, messages=msgs, fence=fence
            )
        )
        want = self.leases.fence(sid, fence, self.now()) or self.model.append(
            sid, turn, expected, msgs, Usage(), self.now()
        )
        self.check(got, want)

    @rule(sid=st.sampled_from(SESSIONS), how=fences, facts=fact_maps)
    def fenced_commit(self, sid: str, how: str, facts: dict[str, str]) -> None:
        fence, msgs = self.fence(sid, how), self.build(sid, ["answer_all", "text"])
        expected, turn = self.version(sid, 0), self.turn(sid, False)
        got = self.ask(
            sm.CommitTurn(
                session=sid,
                turn=turn,
                expected_version=expected,
                messages=msgs,
                facts_set=facts,
                fence=fence,
            )
        )
        want = self.leases.fence(sid, fence, self.now()) or self.model.commit(
            sid, turn, expected, msgs, Usage(), facts, [], None, self.now()
        )
        self.check(got, want)

    @rule(sid=st.sampled_from(SESSIONS), how=fences)
    def fenced_repair(self, sid: str, how: str) -> None:
        fence, turn = self.fence(sid, how), self.turn(sid, False)
        got = self.ask(sm.RepairInterrupted(sid, turn, None, fence=fence))
        want = self.leases.fence(sid, fence, self.now()) or self.model.repair(
            sid, turn, None, self.now()
        )
        self.check(got, want)

    @rule(sid=st.sampled_from(SESSIONS), how=fences, agent=st.sampled_from(["p", "q"]))
    def fenced_update(self, sid: str, how: str, agent: str) -> None:
        fence, expected = self.fence(sid, how), self.version(sid, 0)
        got = self.ask(
            sm.UpdateSession(session=sid, expected_version=expected, agent=agent, fence=fence)
        )
        want = self.leases.fence(sid, fence, self.now()) or self.model.update(
            sid, expected, agent, {}, [], self.now()
        )
        self.check(got, want)

    @rule(src=st.sampled_from(SESSIONS), dst=st.sampled_from(SESSIONS), how=fences)
    def fenced_restore(self, src: str, dst: str, how: str) -> None:
        snapshot = self.ask(sm.ExportSession(src))
        if isinstance(snapshot, tuple):
            return
        renamed = msgspec.structs.replace(
            snapshot, record=msgspec.structs.replace(snapshot.record, id=dst)
        )
        fence = self.fence(dst, how)
        got = self.ask(sm.RestoreSession(renamed, True, fence=fence))
        want = self.leases.fence(dst, fence, self.now()) or self.model.copy(src, dst, True)
        self.check(got, want)

    # -- invariants -------------------------------------------------------------------

    @invariant()
    def every_lease_is_the_models_and_tokens_only_grow(self) -> None:
        for sid in SESSIONS:
            got = self.ask(sm.FindLease(sid))
            self.check(got, self.leases.find(sid, self.now()))
            token = 0 if got is None else got.token
            assert token >= self.tokens.get(sid, 0), (sid, token, self.tokens)
            self.tokens[sid] = token


class SqliteLeaseMachine(LeaseMachine, SqliteMachine):
    pass


class PostgresLeaseMachine(LeaseMachine, PostgresMachine):
    pass


TestLeasesInMemory = LeaseMachine.TestCase
TestLeasesInMemory.settings = _settings
TestLeasesSqlite = SqliteLeaseMachine.TestCase
TestLeasesSqlite.settings = _settings
TestLeasesPostgres = PostgresLeaseMachine.TestCase
TestLeasesPostgres.settings = _postgres_settings
