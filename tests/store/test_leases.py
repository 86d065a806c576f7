"""Leases, fencing and hosts on each backend: request by request (no actor), then many
hosts at once through a live store on virtual time."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.store import (
    Conflict,
    Fenced,
    HostNotFound,
    InMemorySessions,
    InvalidRequest,
    LeaseHeld,
    PostgresSessions,
    SessionBackendConfig,
    SqliteSessions,
    TurnExists,
    session_store_spec,
)
from agcore_actors.store import _leases as leases
from agcore_actors.store import _ops as ops
from agcore_actors.store import messages as sm
from agcore_actors.store.lowlevel import Backend
from tests.store.backends import BACKENDS, open_backend
from tests.store.helpers import user


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    b = open_backend(request, tmp_path)
    yield b
    b.close()


def run(b: Backend, op: Any, msg: Any, now: float = 100.0) -> Any:
    (found,) = b.run_batch([lambda: op(b, msg, now)], write=True)
    return found.unwrap()


def acquire(b: Backend, session: str, host: str, ttl: float = 10.0, now: float = 100.0) -> Any:
    return run(b, leases.acquire, sm.AcquireLease(session=session, host=host, ttl=ttl), now)


def begin(b: Backend, session: str, version: int, fence: int | None, now: float = 100.0) -> Any:
    turn = f"t{version}"
    msg = sm.BeginTurn(
        session=session, turn=turn, expected_version=version, messages=[user()], fence=fence
    )
    return run(b, ops.begin, msg, now)


def test_a_lease_goes_to_one_host_until_it_expires_and_each_grant_raises_the_token(
    backend: Backend,
) -> None:
    first = acquire(backend, "s", "h1", ttl=10.0, now=100.0)
    assert (first.host, first.token, first.expires_at, first.live) == ("h1", 1, 110.0, True)
    with pytest.raises(LeaseHeld) as held:
        acquire(backend, "s", "h2", now=105.0)
    assert (held.value.host, held.value.token, held.value.seconds_left) == ("h1", 1, 5.0)
    assert acquire(backend, "s", "h1", now=106.0).token == 2  # re-activation: a new token
    taken = acquire(backend, "s", "h2", now=116.0)  # expired at 116 (granted at 106 + 10)
    assert (taken.host, taken.token) == ("h2", 3)
    assert run(backend, leases.find, sm.FindLease("s"), 120.0).expires_in == 6.0


def test_a_stale_token_is_fenced_and_writes_nothing(backend: Backend) -> None:
    old = acquire(backend, "s", "h1")
    assert begin(backend, "s", 0, old.token).version == 1
    new = acquire(backend, "s", "h2", now=200.0)  # h1's lease expired at 110
    with pytest.raises(Fenced) as fenced:
        begin(backend, "s", 1, old.token, now=201.0)
    assert (fenced.value.reason, fenced.value.token, fenced.value.current) == ("stale", 1, 2)
    assert backend.record("s").version == 1  # type: ignore[union-attr]
    repaired = run(backend, ops.repair, sm.RepairInterrupted("s", "t0", fence=new.token), 201.0)
    assert repaired.status == "interrupted"


@pytest.mark.parametrize("case", ["none", "released", "expired", "future"])
def test_a_write_without_a_live_lease_of_its_token_is_fenced(backend: Backend, case: str) -> None:
    token = 1
    if case != "none":
        token = acquire(backend, "s", "h1").token
    if case == "released":
        run(backend, leases.release, sm.ReleaseLeases(host="h1", leases=[("s", token)]))
    now = 110.0 if case == "expired" else 100.0  # expires_at is 110: expired at 110
    fence = token + 1 if case == "future" else token
    with pytest.raises(Fenced) as fenced:
        begin(backend, "s", 0, fence, now)
    assert fenced.value.reason == ("stale" if case == "future" else case)
    assert backend.record("s") is None


def test_an_unfenced_write_ignores_leases(backend: Backend) -> None:
    acquire(backend, "s", "h1")
    assert begin(backend, "s", 0, None).version == 1


def test_tokens_outlive_release_expiry_and_the_sessions_deletion(backend: Backend) -> None:
    token = acquire(backend, "s", "h1").token
    begin(backend, "s", 0, token)
    assert run(backend, leases.release, sm.ReleaseLeases(host="h1", leases=[("s", token)])) == (
        sm.ReleasedLeases(["s"])
    )
    assert run(backend, ops.delete, sm.DeleteSessions(["s"])) == sm.Deleted(["s"])
    assert acquire(backend, "s", "h2").token == token + 1
    assert acquire(backend, "s", "h3", now=1000.0).token == token + 2


def test_renew_keeps_only_live_leases_of_the_host_with_their_token(backend: Backend) -> None:
    run(backend, leases.register, sm.RegisterHost(host="h1", address="x", ttl=1.0))
    a = acquire(backend, "a", "h1", ttl=10.0)
    b = acquire(backend, "b", "h1", ttl=1.0)  # expires at 101
    c = acquire(backend, "c", "h2", ttl=10.0)  # another host's
    refs = [("a", a.token), ("b", b.token), ("c", c.token), ("d", 1), ("a", a.token + 5)]
    got = run(backend, leases.renew, sm.RenewLeases(host="h1", ttl=30.0, leases=refs), 105.0)
    assert got == sm.RenewedLeases(
        renewed=["a"], lost=["b", "c", "d"], expires_at=135.0, heartbeat=True
    )
    assert run(backend, leases.find, sm.FindLease("a"), 105.0).expires_at == 135.0
    hosts = run(backend, leases.list_hosts, sm.ListHosts(), 105.0).hosts
    assert [(h.host, h.expires_at, h.alive) for h in hosts] == [("h1", 135.0, True)]


def test_hosts_register_beat_and_die_by_the_stores_clock(backend: Backend) -> None:
    run(backend, leases.register, sm.RegisterHost(host="h2", address="a2", ttl=5.0), 100.0)
    run(backend, leases.register, sm.RegisterHost(host="h1", address="a1", ttl=5.0), 100.0)
    beat = run(backend, leases.heartbeat, sm.HostHeartbeat(host="h1", ttl=5.0), 103.0)
    assert (beat.registered_at, beat.expires_at, beat.expires_in) == (100.0, 108.0, 5.0)
    hosts = run(backend, leases.list_hosts, sm.ListHosts(), 106.0).hosts
    got = [(h.host, h.address, h.alive) for h in hosts]
    assert got == [("h1", "a1", True), ("h2", "a2", False)]
    assert run(backend, leases.unregister, sm.UnregisterHost("h2")) == sm.Deleted(["h2"])
    assert run(backend, leases.unregister, sm.UnregisterHost("h2")) == sm.Deleted([])
    with pytest.raises(HostNotFound):
        run(backend, leases.heartbeat, sm.HostHeartbeat(host="h2", ttl=5.0))


@pytest.mark.parametrize(
    "msg",
    [
        sm.AcquireLease(session="s", host="h", ttl=0.0),
        sm.AcquireLease(session="s", host="h", ttl=-1.0),
        sm.AcquireLease(session="s", host="h", ttl=math.nan),
        sm.AcquireLease(session="s", host="h", ttl=math.inf),
        sm.AcquireLease(session="", host="h", ttl=1.0),
        sm.AcquireLease(session="s", host="", ttl=1.0),
        sm.RenewLeases(host="h", ttl=1.0, leases=[("", 1)]),
        sm.RenewLeases(host="", ttl=1.0, leases=[]),
        sm.RegisterHost(host="h", address="", ttl=1.0),
        sm.RegisterHost(host="h", address="a", ttl=0.0),
    ],
)
def test_bad_lease_requests_are_refused_and_change_nothing(backend: Backend, msg: Any) -> None:
    ops_by_name: dict[str, Any] = {
        "AcquireLease": leases.acquire,
        "RenewLeases": leases.renew,
        "RegisterHost": leases.register,
    }
    op = ops_by_name[type(msg).__name__]
    with pytest.raises(InvalidRequest):
        run(backend, op, msg)
    assert backend.lease("s", lock=False) is None
    assert backend.hosts() == []


def test_a_grant_and_a_stale_write_in_one_batch_keep_their_order(backend: Backend) -> None:
    old = acquire(backend, "s", "h1", ttl=1.0)
    grant = sm.AcquireLease(session="s", host="h2", ttl=10.0)
    write = sm.BeginTurn(
        session="s", turn="t", expected_version=0, messages=[user()], fence=old.token
    )
    got = backend.run_batch(
        [lambda: leases.acquire(backend, grant, 200.0), lambda: ops.begin(backend, write, 200.0)],
        write=True,
    )
    assert got[0].unwrap().token == 2
    with pytest.raises(Fenced):
        got[1].unwrap()
    assert backend.record("s") is None


# -- many hosts at once ---------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_concurrent_acquirers_get_at_most_one_live_lease_per_session(
    kind: str, tmp_path: Path, mock_clock: trio.testing.MockClock, request: pytest.FixtureRequest
) -> None:
    """30 hosts (trio tasks) race for 4 sessions (150 rounds each; 50 on SQLite), acquiring,
    writing fenced and releasing, some acquires cancelled at random checkpoints: a
    session is never granted to a host while another host's lease on it is live, tokens
    are distinct, and no fenced write is accepted once a newer token was granted."""
    config: SessionBackendConfig
    if kind == "memory":
        config = InMemorySessions()
    elif kind == "sqlite":
        config = SqliteSessions(str(tmp_path / "s.db"))
    else:  # on virtual time: the store's clock is the actor's
        config = PostgresSessions(request.getfixturevalue("postgres_url"), lease_clock="local")
    # Virtual time, but it jumps only once every task waits on the clock for 10 ms of
    # real time: not while a batch is being written in the store's thread (which would
    # expire every lease before its write).
    mock_clock.autojump_threshold = 0.0 if kind == "memory" else 0.01
    rounds = 150 if kind == "memory" else 50
    rng = random.Random(7)
    #: session -> token -> (granted at, expires at, host), on the store's clock.
    grants: dict[str, dict[int, tuple[float, float, str]]] = {s: {} for s in "abcd"}
    released: dict[tuple[str, int], float] = {}
    accepted: list[tuple[str, int, float]] = []  # (session, token, sent at)
    async with ActorSystem(strict=True, seed=0) as system:
        # Virtual time jumps while SQLite opens its file in a thread: no start timeout.
        spec = session_store_spec("sessions", backend=config, clock=trio.current_time)
        store = await system.root.start_child(attrs.evolve(spec, start_timeout=math.inf))

        async def host(name: str) -> None:
            held: dict[str, int] = {}
            for _ in range(rounds):
                session = rng.choice("abcd")
                ttl = rng.choice([0.5, 2.0, 5.0])
                with trio.move_on_after(rng.choice([0, 0.001, 5.0, 5.0, 5.0, 5.0])):
                    try:
                        got = await store.ask(sm.AcquireLease(session=session, host=name, ttl=ttl))
                    except LeaseHeld:
                        pass
                    else:
                        grants[session][got.token] = (got.expires_at - ttl, got.expires_at, name)
                        held[session] = got.token
                for session, token in list(held.items()):  # write what it holds
                    sent = trio.current_time()
                    loaded = await store.ask(sm.LoadSession(session, missing_ok=True))
                    try:
                        await store.ask(
                            sm.UpdateSession(
                                session=session,
                                expected_version=loaded.record.version,
                                agent=name,
                                fence=token,
                            )
                        )
                    except Fenced:
                        del held[session]
                    except Conflict:
                        pass  # a racing writer's version: only possible with a stale lease
                    else:
                        accepted.append((session, token, sent))
                if held and rng.random() < 0.2:
                    at = trio.current_time()
                    gone = await store.ask(sm.ReleaseLeases(host=name, leases=list(held.items())))
                    released.update({(s, held[s]): at for s in gone.released})
                    held.clear()
                await trio.sleep(rng.choice([0, 0.1, 0.4]))

        async with trio.open_nursery() as nursery:
            for i in range(30):
                nursery.start_soon(host, f"h{i}")
    eps = 1e-9
    overlaps_checked = 0
    for session, by_token in grants.items():
        for token, (start, _, owner) in by_token.items():
            before = by_token.get(token - 1)
            if before is None or before[2] == owner:
                continue  # unknown (a cancelled asker's grant) or a re-activation
            ended = min(before[1], released.get((session, token - 1), math.inf))
            assert start >= ended - eps, (session, token, by_token)
            overlaps_checked += 1
    for session, token, sent in accepted:
        newer = [g for t, g in grants[session].items() if t > token and g[0] < sent - eps]
        assert not newer, (session, token, sent, newer)
        assert grants[session][token][1] > sent - eps  # live when sent (no renewals here)
    assert len(accepted) >= 30 and overlaps_checked >= 5, (len(accepted), overlaps_checked)


def test_a_delete_with_a_stale_token_is_fenced_and_deletes_nothing(backend: Backend) -> None:
    old = acquire(backend, "s", "h1")
    begin(backend, "s", 0, old.token)
    new = acquire(backend, "s", "h2", now=200.0)  # h1's lease expired at 110
    with pytest.raises(Fenced) as fenced:
        run(backend, ops.delete, sm.DeleteSessions(["s"], fence=old.token), 201.0)
    assert (fenced.value.reason, fenced.value.current) == ("stale", new.token)
    assert backend.record("s") is not None
    with pytest.raises(InvalidRequest):  # a token is one session's
        run(backend, ops.delete, sm.DeleteSessions(["s", "t"], fence=new.token), 201.0)
    done = run(backend, ops.delete, sm.DeleteSessions(["s"], fence=new.token), 201.0)
    assert done == sm.Deleted(["s"])
    assert backend.record("s") is None


def test_a_turn_retried_under_the_next_owner_is_refused_not_run_twice(backend: Backend) -> None:
    old = acquire(backend, "s", "h1")
    begin(backend, "s", 0, old.token)  # turn "t0" begins on h1, which dies
    new = acquire(backend, "s", "h2", now=200.0)
    repair = sm.RepairInterrupted("s", "t0", fence=new.token)
    assert run(backend, ops.repair, repair, 201.0).version == 2
    again = sm.BeginTurn(
        session="s", turn="t0", expected_version=2, messages=[user()], fence=new.token
    )
    with pytest.raises(TurnExists) as exists:
        run(backend, ops.begin, again, 202.0)
    assert (exists.value.session, exists.value.turn) == ("s", "t0")
    assert backend.record("s").version == 2  # type: ignore[union-attr]
    other = sm.BeginTurn(
        session="s", turn="t1", expected_version=2, messages=[user()], fence=new.token
    )
    assert run(backend, ops.begin, other, 202.0).version == 3
