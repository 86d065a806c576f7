"""One owner per session across hosts sharing one store (virtual time): racing
activations leave one owner, the others are told who and where it is; a stalled owner
stops serving before its lease can expire, another host takes the session over and
repairs its interrupted turn, and the stalled host's late writes are refused."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from agcore_actors import ActorSystem
from agcore_actors.agent import messages as am
from agcore_actors.agent import transcript_errors
from agcore_actors.cluster import LeaseLost, Local, Remote, SessionOwnedElsewhere, Unowned
from agcore_actors.store import Fenced
from agcore_actors.store import messages as sm
from tests.agent.fakes import echo
from tests.agent.stores import transcript
from tests.cluster.rig import MARGIN, RENEW, TTL, fast_clock, node, start_store


async def test_two_hosts_racing_for_one_session_leave_one_owner_and_name_it(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store = await start_store(system)
    async with node(store, "a") as a, node(store, "b") as b:
        outcomes: dict[str, Any] = {}

        async def turn(n: Any) -> None:
            try:
                outcomes[n.id] = await n.host.run("s", f"hi from {n.id}")
            except SessionOwnedElsewhere as exc:
                outcomes[n.id] = exc

        async with trio.open_nursery() as nursery:
            nursery.start_soon(turn, a)
            nursery.start_soon(turn, b)
        refused = [e for e in outcomes.values() if isinstance(e, SessionOwnedElsewhere)]
        assert len(refused) == 1
        owner = a if a.host.is_live("s") else b
        other = b if owner is a else a
        assert not other.host.is_live("s")
        assert outcomes[owner.id].status == "completed"
        assert (refused[0].host, refused[0].address) == (owner.id, f"http://{owner.id}.test")
        assert await owner.host.locate("s") == Local()
        where = await other.host.locate("s")
        assert isinstance(where, Remote) and (where.host, where.address) == (
            owner.id,
            f"http://{owner.id}.test",
        )
        assert await other.host.locate("never") == Unowned()
        # The owner closes it: the lease goes back at once, the other host may take it.
        await owner.host.close("s")
        assert await other.host.locate("s") == Unowned()
        assert (await other.host.run("s", "moved")).status == "completed"
        assert await owner.host.locate("s") == Remote(
            host=other.id, address=f"http://{other.id}.test", seconds_left=TTL
        )
        log = await transcript(store, "s")
        assert transcript_errors(log) == [] and len(log) == 4
        assert owner.keeper.snapshot().takeovers == other.keeper.snapshot().takeovers == 0


async def test_leases_are_kept_while_renewals_succeed(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store = await start_store(system)
    async with node(store, "a") as a, node(store, "b") as b:
        await a.host.run("s", "hi")
        await trio.sleep(TTL * 5)  # many renewals: the lease never lapses
        assert a.host.is_live("s")
        with pytest.raises(SessionOwnedElsewhere):
            await b.host.run("s", "mine?")
        renewals = a.link.sent.count("RenewLeases")
        assert TTL * 5 / RENEW - 1 <= renewals <= TTL * 5 / RENEW + 1
        snap = a.host.snapshot().cluster
        assert snap is not None and snap.leases_held == 1 and snap.self_fences == 0


async def test_renewals_answered_later_than_their_interval_keep_the_leases(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    """A store that answers every renewal 1.5 intervals after it was sent (but well
    before the deadline it was sent for): each reply still counts, the next renewal is
    not held up by it, and the host never stops serving."""
    store = await start_store(system)
    async with node(store, "a") as a, node(store, "b") as b:
        await a.host.run("s", "hi")
        a.link.delays["RenewLeases"] = 1.5 * RENEW
        await trio.sleep(TTL * 5)
        assert a.host.is_live("s") and a.keeper.holds("s")
        with pytest.raises(SessionOwnedElsewhere):
            await b.host.run("s", "mine?")
        renewals = a.link.sent.count("RenewLeases")
        assert TTL * 5 / RENEW - 2 <= renewals <= TTL * 5 / RENEW + 1
        snap = a.keeper.snapshot()
        assert snap.self_fences == snap.renewal_failures == 0
        assert snap.slowest_renewal == pytest.approx(1.5 * RENEW)
        assert (await a.host.run("s", "still mine")).status == "completed"


async def test_renewals_in_flight_are_bounded_when_the_store_answers_none(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    """A store that holds every renewal: at most ``(TTL - MARGIN) / RENEW`` wait at
    once, and the host self-fences at its deadline as before."""
    store = await start_store(system)
    async with node(store, "a") as a:
        start = trio.current_time()
        await a.host.run("s", "hi")
        a.link.delays["RenewLeases"] = TTL * 100
        waiting: list[int] = []
        for _ in range(40):
            await trio.sleep(RENEW / 2)
            waiting.append(a.keeper._in_flight)
        assert max(waiting) == (TTL - MARGIN) / RENEW
        assert not a.host.is_live("s")
        assert a.keeper.snapshot().self_fences == 1
        assert a.keeper.last_renewed is not None
        assert a.keeper.last_renewed <= start + TTL - MARGIN


async def test_a_stalled_owner_self_fences_before_expiry_and_its_late_commit_is_refused(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    """A's turn is committing when A is cut off from the store (its commit and renewals
    wait in the link). A stops serving at its own deadline, before the lease expires in
    the store; B takes the session over once it has, repairing the open turn; when A's
    link comes back, its commit is refused as fenced and A drops the session without
    writing again: its caller is told so by that refusal (the commit was sent, so only
    the store's answer says whether the turn is stored)."""
    store = await start_store(system)
    async with node(store, "a", model=echo(5.0)) as a, node(store, "b") as b:
        start = trio.current_time()
        result: list[Any] = []

        async def a_turn() -> None:
            try:
                result.append(await a.host.run("s", "from a"))
            except Exception as exc:
                result.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(a_turn)
            await trio.sleep(1.0)  # A has its lease and has begun the turn
            assert a.host.is_live("s")
            a.link.pause()
            # A's last successful renewal was sent at start + 0 at the latest: it stops
            # serving by start + TTL - MARGIN, before the store's expiry (start + TTL).
            await trio.sleep_until(start + TTL - MARGIN - 0.01)
            assert a.host.is_live("s") and a.keeper.holds("s")  # not before its time
            await trio.sleep_until(start + TTL - MARGIN + 0.01)
            assert not a.host.is_live("s") and not a.keeper.holds("s")
            assert a.host.snapshot().cluster.self_fences == 1  # type: ignore[union-attr]
            # Until the store's lease expires, B is told A owns it.
            with pytest.raises(SessionOwnedElsewhere) as held:
                await b.host.run("s", "from b")
            assert held.value.host == "a"
            await trio.sleep_until(start + TTL + 0.1)
            assert (await b.host.run("s", "from b")).status == "completed"
            assert b.keeper.snapshot().takeovers == 1
            before = len(a.link.sent)
            a.link.resume()
            await trio.sleep(1.0)  # what waited on the link is delivered
        [outcome] = result
        # A's commit, already sent, reached the store late and was refused there: its
        # caller heard that refusal.
        assert isinstance(outcome, Fenced) and outcome.reason == "stale"
        assert a.link.late == []
        assert "CommitTurn" in a.link.sent[before:]
        log = await transcript(store, "s")
        assert transcript_errors(log) == []
        texts = [m.content for m in log]
        # ... and was refused: A's turn is only its user message and the repair's answer.
        assert "from a" in texts and "echo: from a" not in texts
        assert texts[-2:] == ["from b", "echo: from b"]
        lease = await store.ask(sm.FindLease("s"))
        assert lease is not None and lease.host == "b" and lease.token == 2
        # A writes nothing more for the session: a new message there is refused by B's lease.
        with pytest.raises(SessionOwnedElsewhere):
            await a.host.run("s", "again from a")


async def test_a_commit_in_flight_at_self_fencing_is_answered_by_the_store_not_cut(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    """A's link stalls while its turn's commit is on the way; A self-fences (its lease
    still lives in the store for ``MARGIN`` more seconds), and the link delivers the
    commit before the store's expiry, where A's token is still the live one: the turn
    is stored, so A's caller is told it completed, not that it failed (a caller told
    it failed would run it again: stored twice)."""
    store = await start_store(system)
    async with node(store, "a", model=echo(1.0)) as a:
        result: list[Any] = []

        async def a_turn() -> None:
            try:
                result.append(await a.host.run("s", "once"))
            except Exception as exc:
                result.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(a_turn)
            await trio.sleep(0.5)  # begun; the model answers at 1 s, then the commit
            lease = await store.ask(sm.FindLease("s"))
            assert lease is not None and lease.host == "a"
            a.link.pause()
            # A fences by its own clock MARGIN before the store's expiry.
            await trio.sleep_until(lease.expires_at - MARGIN + 0.01)
            assert not a.keeper.holds("s") and a.keeper.snapshot().self_fences == 1
            a.link.resume()  # the commit reaches the store under A's live token
            await trio.sleep(1.0)
        [outcome] = result
        assert not isinstance(outcome, Exception), outcome
        assert outcome.status == "completed" and outcome.text == "echo: once"
        assert a.link.late == []  # answered, not cut and delivered behind A's back
        log = await transcript(store, "s")
        assert transcript_errors(log) == []
        assert [m.content for m in log] == ["once", "echo: once"]
        assert not a.host.is_live("s")  # dropped all the same: A no longer holds it


async def test_self_fencing_cuts_a_running_turn_and_writes_nothing_more(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store = await start_store(system)
    async with node(store, "a", model=echo(100.0)) as a:
        result: list[Any] = []

        async def a_turn() -> None:
            try:
                result.append(await a.host.run("s", "long"))
            except Exception as exc:
                result.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(a_turn)
            await trio.sleep(1.0)
            a.link.pause()
            paused_at = len(a.link.sent)
            await trio.sleep(TTL - MARGIN)  # A self-fences at 8 s: the turn is cut now
            assert result and isinstance(result[0], LeaseLost)
            assert not a.host.is_live("s")
            a.link.resume()
            await trio.sleep(RENEW * 2)
        # Nothing of the session went to the store after the pause: the cut turn's commit
        # was refused by A itself.
        assert set(a.link.sent[paused_at:]) <= {"RenewLeases", "RegisterHost"}
        log = await transcript(store, "s")
        assert [m.content for m in log] == ["long"]  # open: repaired by the next owner
        # A itself may serve it again: the lease is re-granted with a new token, and the
        # open turn is repaired first.
        assert (await a.host.run("s", "back")).status == "completed"
        log = await transcript(store, "s")
        assert transcript_errors(log) == []
        lease = await store.ask(sm.FindLease("s"))
        assert lease is not None and lease.host == "a" and lease.token == 2


async def test_a_lease_the_store_reports_lost_is_dropped_and_its_writes_fenced(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    """The store's clock runs twice as fast as the hosts' (beyond what the margin
    absorbs), so A's lease expires there while A still believes it holds it: the
    fencing token still keeps A's writes out, and A's next renewal learns the loss."""
    store = await start_store(system, clock=fast_clock(2.0))
    async with node(store, "a", model=echo(3.0)) as a, node(store, "b") as b:
        result: list[Any] = []

        async def a_turn() -> None:
            try:
                result.append(await a.host.run("s", "from a"))
            except Exception as exc:
                result.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(a_turn)
            await trio.sleep(0.5)
            a.link.pause()  # A's renewals stop reaching the store
            await trio.sleep(5.0)  # 10 s of the store's clock: A's lease has expired there
            assert a.host.is_live("s") and a.keeper.holds("s")  # A does not know yet
            assert (await b.host.run("s", "from b")).status == "completed"
            a.link.resume()  # A's commit, then a renewal, reach the store
            await trio.sleep(RENEW * 2)
        assert not a.host.is_live("s") and not a.keeper.holds("s")
        snap = a.keeper.snapshot()
        assert snap.fenced_writes + snap.lease_losses >= 1 and snap.self_fences == 0
        [outcome] = result
        assert isinstance(outcome, Fenced | LeaseLost)
        log = await transcript(store, "s")
        assert transcript_errors(log) == []
        texts = [m.content for m in log]
        assert "echo: from a" not in texts and texts[-2:] == ["from b", "echo: from b"]


async def test_self_fencing_cuts_a_write_in_flight_at_once(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    """A's link stalls while its turn's begin is on the way: at A's deadline the begin is
    cut (the caller hears at once, not after the session's stop grace), and the begin,
    delivered later, is refused by the store once the lease lapsed there."""
    store = await start_store(system)
    async with node(store, "a") as a:
        await a.host.run("s", "first")
        a.link.pause()
        start = a.keeper.last_renewed  # the deadline counts from here
        assert start is not None and trio.current_time() - start < RENEW
        with pytest.raises(LeaseLost):
            await a.host.run("s", "stuck")
        assert trio.current_time() - start <= TTL - MARGIN + 0.01
        assert not a.host.is_live("s")
        await trio.sleep_until(start + TTL + 1.0)
        a.link.resume()
        await trio.sleep(RENEW)
        [(begin, answer)] = a.link.late
        assert begin.startswith("BeginTurn") and answer == "store_fenced"
        log = await transcript(store, "s")
        assert [m.content for m in log] == ["first", "echo: first"]  # "stuck" was refused


async def test_hosts_register_keep_alive_by_renewing_and_leave_when_stopped(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store = await start_store(system)
    async with node(store, "a") as a:
        async with node(store, "b") as b:
            hosts = {h.host: h for h in await a.keeper.hosts()}
            assert set(hosts) == {"a", "b"} and hosts["b"].address == "http://b.test"
            assert all(h.alive for h in hosts.values())
            await trio.sleep(TTL * 3)  # renewals keep both alive
            assert all(h.alive for h in await a.keeper.hosts())
            b.link.pause()  # b's heartbeat stops reaching the store
            await trio.sleep(TTL + RENEW)
            alive = {h.host: h.alive for h in await a.keeper.hosts()}
            assert alive == {"a": True, "b": False}
            b.link.resume()
            await trio.sleep(RENEW * 2)
            assert all(h.alive for h in await a.keeper.hosts())
        assert [h.host for h in await a.keeper.hosts()] == ["a"]  # b unregistered


async def test_a_lease_past_its_deadline_refuses_writes_even_before_the_watchdog_runs(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    """The event loop was held up past the deadline (a long blocking call): the first
    write after it is refused locally, whatever ran first."""
    store = await start_store(system)
    async with node(store, "a") as a:
        handle = await a.keeper.acquire("s")
        assert handle.check() == 1
        autojump_clock.jump(TTL - MARGIN)  # no task ran meanwhile: no renewal, no watchdog
        with pytest.raises(LeaseLost):
            handle.check()
        assert not a.keeper.holds("s") and handle.revoked == "self_fenced"


async def test_a_session_served_elsewhere_is_not_deleted_under_its_owner(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store = await start_store(system)
    async with node(store, "a") as a, node(store, "b") as b:
        await a.host.run("s", "hi")
        with pytest.raises(SessionOwnedElsewhere) as owner:
            await b.host.delete("s")
        assert owner.value.host == "a"
        assert [m.content for m in await transcript(store, "s")] == ["hi", "echo: hi"]
        assert await a.host.delete("s") is True
        assert not a.keeper.holds("s") and await b.host.locate("s") == Unowned()
        assert (await b.host.run("s", "anew")).status == "completed"
        assert [m.content for m in await transcript(store, "s")] == ["anew", "echo: anew"]


async def test_a_delete_that_reaches_the_store_after_its_lease_was_lost_deletes_nothing(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    """A's delete is in transit (granted, then held up by a link that stalls) while its
    lease lapses and B takes the session over: A's delete carries its token, so when it
    arrives the store refuses it, and B's session stays whole."""
    store = await start_store(system)
    async with node(store, "a") as a, node(store, "b") as b:
        await a.host.run("s", "hi")
        a.link.delays["DeleteSessions"] = RENEW / 2

        async def delete() -> None:
            with pytest.raises(LeaseLost):
                await a.host.delete("s")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(delete)
            await trio.sleep(RENEW / 4)  # granted, the delete on its way
            a.link.pause()
            await trio.sleep(TTL * 2)
            assert (await b.host.run("s", "anew")).status == "completed"
            a.link.resume()
        await trio.sleep(RENEW)
        assert ("DeleteSessions", "store_fenced") in a.link.late
        contents = [m.content for m in await transcript(store, "s")]
        assert contents == ["hi", "echo: hi", "anew", "echo: anew"]


async def test_a_streamed_turn_cut_by_self_fencing_ends_with_a_lease_lost_event(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store = await start_store(system)
    async with node(store, "a", model=echo(100.0)) as a:
        kinds: list[str] = []
        async with a.host.submit("s", "long") as events:
            async for event in events:
                kinds.append(type(event).__name__)
                if isinstance(event, am.TurnStarted):
                    a.link.pause()
                final = event
        assert kinds[0] == "TurnStarted" and isinstance(final, am.TurnFailed)
        assert final.result.error_kind == "cluster_lease_lost"
        assert not a.host.is_live("s") and a.keeper.snapshot().self_fences == 1
        a.link.resume()
