"""The session store's protocol against a plain model (``tests/store/model.py``), on
the three backends (PostgreSQL: the real server of ``tests/postgres_fixture.py``),
through a live actor in a strict system on virtual time.

Random sequences of begin / append / commit / repair / update / load / list / delete /
expire / export+restore, with stale versions, wrong turn ids, invalid transcripts (a
result for no call, a call answered twice or not at all, a compaction cutting a call
from its result), time passing and actor restarts: every reply (or error and conflict
reason) is the model's, and after every step every stored transcript, loaded whole, is
valid (every tool call answered exactly once, after its call).
"""

from __future__ import annotations

import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

import attrs
import hypothesis.strategies as st
import msgspec
import trio
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.llm import AssistantMessage, Message, Usage
from agcore_actors.store import (
    Conflict,
    InMemorySessions,
    PostgresSessions,
    SessionBackendConfig,
    SqliteSessions,
    StoreMsg,
    session_store_spec,
)
from agcore_actors.store import messages as sm
from agcore_actors.testing import TrioDriver, virtual_clock
from tests.postgres_fixture import drop_schema, fresh_url
from tests.store.helpers import NAME, calls, problems, result, user
from tests.store.model import Model

SESSIONS = ["a", "b", "c"]
# Mostly tokens that keep a transcript valid; "stray", "dup" and "twin" break it.
VALID = ["user", "text", "calls1", "calls2", "answer_all", "answer_one"]
TOKENS = [*VALID, *VALID, *VALID, "stray", "dup", "twin"]
plans = st.lists(st.sampled_from(TOKENS), max_size=5)
mostly = st.sampled_from([True, True, True, True, False])
rarely = st.sampled_from([False, False, False, False, False, True])
staleness = st.sampled_from([0, 0, 0, 0, 0, 0, -1, 1])
usages = st.builds(Usage, *[st.integers(0, 50)] * 5)
KEYS = ["k1", "k2", "k3"] * 4 + [""]  # an empty key is refused
fact_maps = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(["x", "y"]), max_size=2)
fact_keys = st.lists(st.sampled_from(KEYS), max_size=1)
summaries = st.sampled_from(["none", "text", "open"])
#: Mostly a new turn id; sometimes (an index into) one handed out before.
agains = st.none() | st.none() | st.integers(0, 40)


class StoreMachine(RuleBasedStateMachine):
    backend: SessionBackendConfig

    def __init__(self) -> None:
        super().__init__()
        self.model = Model()
        self.calls = 0
        self.turns = 0
        #: Every turn id handed out, for a begin that names one again.
        self.used: list[str] = []
        self.driver = TrioDriver(clock=virtual_clock())
        self.system = self.driver.enter(ActorSystem(strict=True, seed=0))
        spec = session_store_spec(NAME, backend=self.make_backend(), clock=trio.current_time)
        # Virtual time jumps ahead while the SQLite store opens its file in a worker
        # thread, so a finite start timeout would fire at once: starts are not timed here.
        self.spec = attrs.evolve(spec, start_timeout=math.inf)
        self.store: ActorRef[StoreMsg] = self.driver.run(self.system.root.start_child, self.spec)

    def make_backend(self) -> SessionBackendConfig:
        return InMemorySessions()

    def teardown(self) -> None:
        self.driver.close()

    # -- plumbing ---------------------------------------------------------------------

    def ask(self, msg: Any) -> Any:
        try:
            return self.driver.run(self.store.ask, msg)
        except Conflict as exc:
            return ("Conflict", exc.reason)
        except Exception as exc:  # the asker's errors, compared by class name
            return (type(exc).__name__, None)

    def now(self) -> float:
        return self.driver.current_time()

    def check(self, got: Any, want: Any) -> None:
        assert got == want, f"\nstore: {got}\nmodel: {want}"

    def build(self, sid: str, plan: list[str]) -> list[Message]:
        """Messages from a plan, against the session's unanswered calls (may be invalid)."""
        s = self.model.sessions.get(sid)
        waiting = [] if s is None else list(s.record().pending_calls)
        answered: list[str] = []
        out: list[Message] = []
        for token in plan:
            if token == "user":
                out.append(user("u"))
            elif token == "text":
                out.append(AssistantMessage("a"))
            elif token in ("calls1", "calls2", "twin"):
                ids = [self.new_call() for _ in range(1 if token == "calls1" else 2)]
                if token == "twin":  # one id twice in one message
                    ids = [ids[0], ids[0]]
                out.append(calls(*ids))
                waiting = list(dict.fromkeys(ids))
            elif token == "answer_all":
                out.extend(result(c) for c in reversed(waiting))
                answered, waiting = answered + waiting, []
            elif token == "answer_one" and waiting:
                out.append(result(waiting[0]))
                answered, waiting = [*answered, waiting[0]], waiting[1:]
            elif token == "stray":
                out.append(result(f"nope{self.new_call()}"))
            elif token == "dup" and answered:
                out.append(result(answered[-1]))
        return out

    def new_call(self) -> str:
        self.calls += 1
        return f"c{self.calls}"

    def version(self, sid: str, stale: int) -> int:
        s = self.model.sessions.get(sid)
        return max(0, (0 if s is None else s.version) + stale)

    def turn(self, sid: str, wrong: bool, again: int | None = None) -> str:
        """A new turn id; with ``again``, one handed out before (a client retrying a
        turn, in this session or, by chance, one of another session's ids)."""
        if again is not None and self.used:
            return self.used[again % len(self.used)]
        s = self.model.sessions.get(sid)
        if wrong or s is None or s.open_turn is None:
            self.turns += 1
            self.used.append(f"t{self.turns}")
            return f"t{self.turns}"
        return s.open_turn

    # -- rules ------------------------------------------------------------------------

    @initialize(
        starts=st.lists(st.sampled_from(["none", "update", "turn"]), min_size=3, max_size=3)
    )
    def some_sessions_exist(self, starts: list[str]) -> None:
        for sid, how in zip(SESSIONS, starts, strict=True):
            if how == "update":
                self.update(sid, 0, None, {"k1": "x"}, [])
            elif how == "turn":
                self.begin(sid, ["calls1"], 0, "x")
                self.commit(sid, [], True, 0, False, Usage(1, 2, 3, 4, 5), {}, [], None)

    @rule(sid=st.sampled_from([*SESSIONS, "zz"]), again=st.integers(0, 40))
    def has_turn(self, sid: str, again: int) -> None:
        turn = self.used[again % len(self.used)] if self.used else "t0"
        self.check(self.ask(sm.HasTurn(sid, turn)), self.model.has_turn(sid, turn))

    @rule(
        sid=st.sampled_from(SESSIONS),
        plan=plans,
        stale=staleness,
        agent=st.none() | st.just("x"),
        again=agains,
    )
    def begin(
        self, sid: str, plan: list[str], stale: int, agent: str | None, again: int | None = None
    ) -> None:
        msgs, expected, turn = (
            self.build(sid, ["user", *plan]),
            self.version(sid, stale),
            self.turn(sid, True, again),
        )
        got = self.ask(
            sm.BeginTurn(
                session=sid, turn=turn, expected_version=expected, messages=msgs, agent=agent
            )
        )
        self.check(got, self.model.begin(sid, turn, expected, msgs, agent, self.now()))

    @rule(
        sid=st.sampled_from(SESSIONS),
        plan=plans,
        stale=staleness,
        tail=st.none() | st.integers(-1, 6),
        again=agains,
    )
    def begin_and_load(
        self, sid: str, plan: list[str], stale: int, tail: int | None, again: int | None
    ) -> None:
        msgs, expected, turn = (
            self.build(sid, ["user", *plan]),
            self.version(sid, stale),
            self.turn(sid, True, again),
        )
        got = self.ask(
            sm.BeginTurnAndLoad(
                session=sid, turn=turn, expected_version=expected, messages=msgs, tail=tail
            )
        )
        want: Any
        if tail is not None and tail < 0:
            want = ("InvalidRequest", None)  # and nothing written
        else:
            want = self.model.begin(sid, turn, expected, msgs, None, self.now())
            if not isinstance(want, tuple):
                want = self.model.load(sid, None if tail is None else tail + len(msgs))
        self.check(got, want)

    @rule(
        sid=st.sampled_from(SESSIONS),
        plan=plans,
        stale=staleness,
        wrong=rarely,
        usage=usages,
    )
    def append(self, sid: str, plan: list[str], stale: int, wrong: bool, usage: Usage) -> None:
        msgs, expected, turn = (
            self.build(sid, plan),
            self.version(sid, stale),
            self.turn(sid, wrong),
        )
        got = self.ask(
            sm.AppendTurn(
                session=sid, turn=turn, expected_version=expected, messages=msgs, usage_delta=usage
            )
        )
        self.check(got, self.model.append(sid, turn, expected, msgs, usage, self.now()))

    @rule(
        sid=st.sampled_from(SESSIONS),
        plan=plans,
        stale=staleness,
        wrong=rarely,
        usage=usages,
        facts_set=fact_maps,
        facts_removed=fact_keys,
        compact=st.none() | st.tuples(st.integers(-1, 12), summaries),
        tidy=mostly,
    )
    def commit(
        self,
        sid: str,
        plan: list[str],
        tidy: bool,
        stale: int,
        wrong: bool,
        usage: Usage,
        facts_set: dict[str, str],
        facts_removed: list[str],
        compact: tuple[int, str] | None,
    ) -> None:
        if tidy:  # answer what is open, then end with a text answer
            plan = ["answer_all", *plan, "answer_all", "text"]
        msgs, expected, turn = (
            self.build(sid, plan),
            self.version(sid, stale),
            self.turn(sid, wrong),
        )
        compaction = None
        if compact is not None:
            upto, kind = compact
            kinds: dict[str, list[Message]] = {
                "none": [],
                "text": [user("summary")],
                "open": [calls("cs")],
            }
            summary = kinds[kind]
            compaction = (max(0, upto), summary)
        got = self.ask(
            sm.CommitTurn(
                session=sid,
                turn=turn,
                expected_version=expected,
                messages=msgs,
                usage_delta=usage,
                facts_set=facts_set,
                facts_removed=facts_removed,
                compaction=None if compaction is None else sm.Compaction(*compaction),
            )
        )
        want = self.model.commit(
            sid, turn, expected, msgs, usage, facts_set, facts_removed, compaction, self.now()
        )
        self.check(got, want)

    @rule(sid=st.sampled_from(SESSIONS), stale=st.none() | staleness, wrong=rarely)
    def repair(self, sid: str, stale: int | None, wrong: bool) -> None:
        expected = None if stale is None else self.version(sid, stale)
        turn = self.turn(sid, wrong)
        got = self.ask(sm.RepairInterrupted(sid, turn, expected))
        self.check(got, self.model.repair(sid, turn, expected, self.now()))

    @rule(
        sid=st.sampled_from(SESSIONS),
        stale=staleness,
        agent=st.none() | st.just("y"),
        facts_set=fact_maps,
        facts_removed=fact_keys,
    )
    def update(
        self,
        sid: str,
        stale: int,
        agent: str | None,
        facts_set: dict[str, str],
        facts_removed: list[str],
    ) -> None:
        expected = self.version(sid, stale)
        got = self.ask(
            sm.UpdateSession(
                session=sid,
                expected_version=expected,
                agent=agent,
                facts_set=facts_set,
                facts_removed=facts_removed,
            )
        )
        self.check(
            got, self.model.update(sid, expected, agent, facts_set, facts_removed, self.now())
        )

    @rule(sid=st.sampled_from(SESSIONS), tail=st.none() | st.integers(0, 8))
    def load(self, sid: str, tail: int | None) -> None:
        self.check(self.ask(sm.LoadSession(sid, tail)), self.model.load(sid, tail))

    @rule(sid=st.sampled_from([*SESSIONS, "zz"]), tail=st.none() | st.integers(0, 8))
    def load_missing_ok(self, sid: str, tail: int | None) -> None:
        want = self.model.load(sid, tail)
        if want == ("SessionNotFound", None):  # a new, empty one, not stored
            now = self.now()
            record = sm.SessionRecord(id=sid, created_at=now, updated_at=now, version=0)
            want = sm.LoadedSession(record=record, summary=[], first_index=0, messages=[], facts={})
        self.check(self.ask(sm.LoadSession(sid, tail, missing_ok=True)), want)

    @rule(
        back=st.none() | st.sampled_from([0.0, 0.5, 2.0]),
        status=st.none() | st.sampled_from(["idle", "running", "interrupted"]),
        limit=st.integers(1, 3),
    )
    def list_all(self, back: float | None, status: Any, limit: int) -> None:
        idle_before = None if back is None else self.now() - back
        got: list[Any] = []
        cursor: str | None = None
        while True:
            page = self.ask(
                sm.ListSessions(idle_before=idle_before, status=status, limit=limit, cursor=cursor)
            )
            assert len(page.sessions) <= limit
            got.extend(page.sessions)
            cursor = page.cursor
            if cursor is None:
                break
            assert len(page.sessions) == limit
        self.check(got, self.model.listed(idle_before, status))

    @rule(ids=st.lists(st.sampled_from([*SESSIONS, "zz"]), max_size=2))
    def delete(self, ids: list[str]) -> None:
        self.check(self.ask(sm.DeleteSessions(ids)), sm.Deleted(self.model.delete(ids)))

    @rule(back=st.sampled_from([0.5, 2.0, 5.0]), limit=st.integers(1, 2))
    def expire(self, back: float, limit: int) -> None:
        idle_before = self.now() - back
        got = self.ask(sm.ExpireSessions(idle_before, limit))
        self.check(got, sm.Deleted(self.model.expire(idle_before, limit)))

    @rule(src=st.sampled_from(SESSIONS), dst=st.sampled_from(SESSIONS), replace=st.booleans())
    def copy(self, src: str, dst: str, replace: bool) -> None:
        snapshot = self.ask(sm.ExportSession(src))
        if isinstance(snapshot, tuple):
            self.check(snapshot, self.model.copy(src, dst, replace))
            return
        renamed = msgspec.structs.replace(
            snapshot, record=msgspec.structs.replace(snapshot.record, id=dst)
        )
        self.check(
            self.ask(sm.RestoreSession(renamed, replace)), self.model.copy(src, dst, replace)
        )

    @rule(seconds=st.sampled_from([0.25, 1.0, 3.0]))
    def time_passes(self, seconds: float) -> None:
        self.driver.advance(seconds)

    @rule()
    def restart(self) -> None:
        self.driver.run(self.system.stop, NAME)
        self.store = self.driver.run(self.system.root.start_child, self.spec)

    @invariant()
    def every_transcript_is_valid(self) -> None:
        for sid, s in self.model.sessions.items():
            loaded = self.ask(sm.LoadSession(sid))
            history = [*loaded.summary, *loaded.messages]
            assert not problems(history, open_end=s.open_turn is not None), (sid, problems(history))
            assert loaded.record.version == s.version


class SqliteMachine(StoreMachine):
    def make_backend(self) -> SessionBackendConfig:
        self.tmp = Path(tempfile.mkdtemp(prefix="store-stateful-"))
        return SqliteSessions(str(self.tmp / "sessions.db"))

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)


class PostgresMachine(StoreMachine):
    """The same machine on the real PostgreSQL server: a schema of its own per example;
    leases on the actor's clock (virtual time)."""

    def make_backend(self) -> SessionBackendConfig:
        self.url = fresh_url()
        return PostgresSessions(self.url, lease_clock="local")

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            drop_schema(self.url)


_settings = settings(
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestInMemory = StoreMachine.TestCase
TestInMemory.settings = _settings
TestSqlite = SqliteMachine.TestCase
TestSqlite.settings = _settings
#: Fewer examples on PostgreSQL: each step is a few network round trips, not a file's.
_postgres_settings = settings(_settings, max_examples=40)
TestPostgres = PostgresMachine.TestCase
TestPostgres.settings = _postgres_settings
