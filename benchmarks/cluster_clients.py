"""The clients of the cluster benchmark: one task per session submitting its turns, each
with a unique turn id, through a random host, retrying on any failure with the same id.

A turn is acknowledged when the client reads its ``turn_completed`` event. A failure is
anything else before that: no connection, an error status (503 while a host is down or
a session changes hands), a stream cut before its final event, no byte for
``read_timeout`` seconds (a stopped host holds connections open). The retry goes to a
random host again (not the one that just failed to answer), the same turn id and text,
after a short backoff, or after the ``Retry-After`` of a 503 (as HTTP asks). With a
:class:`Balancer` (the chaos run's default), every attempt goes to a random host among
those the balancer takes as up, as behind the load balancer of docs/deployment.md, which
checks ``GET /healthz``. A turn that ends
``turn_failed`` or ``turn_cancelled`` is also retried with its id (the server decides
whether that id already ran); a 409 ``turn_exists`` (or a turn that failed with
``store_turn_exists``: the id was stored by another host after the server checked it)
ends the retries (the id is stored already: the turn ran, or began before its host died,
and will not run again), without an acknowledgement. One not acknowledged after
``give_up`` seconds is abandoned. Every attempt is logged for the failover and cost
figures.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Sequence

import attrs
import httpx2
import trio

FINAL = ("turn_completed", "turn_failed", "turn_cancelled")


@attrs.define
class Turn:
    session: str
    turn: str
    #: trio clock times: first attempt sent, acknowledgement read, and the final answer
    #: read (the acknowledgement, or 409 ``turn_exists``: the turn ran or began already).
    first_try: float
    acked_at: float | None = None
    answered_at: float | None = None
    attempts: int = 0
    outcome: str = "pending"
    #: Which host (its index in the url list) each attempt went to.
    via: list[int] = attrs.field(factory=list)
    #: Each attempt: (sent, answered, host index, outcome), trio clock times (to tell
    #: where a slow failover spent its time).
    tries: list[tuple[float, float, int, str]] = attrs.field(factory=list)


@attrs.define
class ClientConfig:
    token: str
    turns: int
    #: Seconds between the starts of two turns of a session (0: back to back).
    every: float = 0.0
    read_timeout: float = 3.0
    connect_timeout: float = 1.0
    give_up: float = 60.0
    #: Which host each session's attempts go to: None for a random one each time.
    route: Callable[[str, int], int] | None = None


@attrs.define
class Balancer:
    """A load balancer's view of the hosts, set up as docs/deployment.md says (health
    check ``GET /healthz``): an active check of each host every ``interval`` seconds,
    given ``timeout`` seconds to answer (one failure takes the host out, one success
    brings it back: HAProxy's ``check inter 500ms fall 1 rise 1``), and a passive one
    (an attempt that could not connect takes its host out until its next good check, as
    nginx's ``max_fails=1``; the client's own 3 s read timeout is no sign of a dead host
    here, as nginx's read timeout is 60 s: a host may hold a request that long while it
    waits for a dead owner's lease). Nothing else is known to it: a host that answers
    its checks and then fails a turn stays in."""

    urls: Callable[[], Sequence[str]]
    interval: float = 0.5
    timeout: float = 0.5
    down: set[int] = attrs.field(factory=set)
    #: How many times a host was taken out (by a check, by an attempt).
    outs: Counter[str] = attrs.field(factory=Counter)

    async def run(self) -> None:
        """Check every host until cancelled."""
        async with httpx2.AsyncClient(timeout=self.timeout) as client, trio.open_nursery() as n:
            for index in range(len(self.urls())):
                n.start_soon(self._check, client, index)

    async def _check(self, client: httpx2.AsyncClient, index: int) -> None:
        while True:
            try:
                ok = (await client.get(f"{self.urls()[index]}/healthz")).status_code == 200
            except httpx2.HTTPError:
                ok = False
            if ok:
                self.down.discard(index)
            elif index not in self.down:
                self.down.add(index)
                self.outs["check"] += 1
            await trio.sleep(self.interval)

    def failed(self, index: int) -> None:
        if index not in self.down:
            self.down.add(index)
            self.outs["attempt"] += 1

    def pick(self, count: int, avoid: int | None) -> int:
        """A random host that is up and not ``avoid``; failing that, any but ``avoid``."""
        hosts = [i for i in range(count) if i != avoid] or list(range(count))
        up = [i for i in hosts if i not in self.down]
        return random.choice(up or hosts)


@attrs.define
class Clients:
    """Runs the sessions' turns against ``urls()`` (the hosts' current addresses),
    through ``balancer`` when there is one."""

    urls: Callable[[], Sequence[str]]
    config: ClientConfig
    balancer: Balancer | None = None
    log: list[Turn] = attrs.field(factory=list)
    errors: Counter[str] = attrs.field(factory=Counter)

    async def run(self, sessions: Sequence[str], first: int = 0) -> None:
        limits = httpx2.Limits(max_connections=4096, max_keepalive_connections=1024)
        timeout = httpx2.Timeout(self.config.read_timeout, connect=self.config.connect_timeout)
        headers = {"authorization": f"Bearer {self.config.token}"}
        async with (
            httpx2.AsyncClient(limits=limits, timeout=timeout, headers=headers) as client,
            trio.open_nursery() as nursery,
        ):
            for session in sessions:
                nursery.start_soon(self._session, client, session, first)

    async def _session(self, client: httpx2.AsyncClient, session: str, first: int) -> None:
        # With ``every``, the session's turns start on a schedule (one each ``every``
        # seconds from a random offset; a late turn makes the next start at once), so the
        # sessions keep asking until about ``turns * every`` seconds from now.
        every = self.config.every
        start = trio.current_time() + random.uniform(0, every)
        for i, k in enumerate(range(first, first + self.config.turns)):
            if every:
                await trio.sleep_until(start + i * every)
            await self.turn(client, session, f"{session}-t{k}")

    async def turn(self, client: httpx2.AsyncClient, session: str, turn_id: str) -> Turn:
        record = Turn(session, turn_id, trio.current_time())
        self.log.append(record)
        body = {"text": f"turn {turn_id}", "turn": turn_id}
        avoid: int | None = None
        while trio.current_time() - record.first_try < self.config.give_up:
            urls = self.urls()
            route, balancer = self.config.route, self.balancer
            if route:
                index = route(session, record.attempts)
            elif balancer:
                index = balancer.pick(len(urls), avoid)
            else:  # a retry goes to another host than the one that just failed to answer
                others = [i for i in range(len(urls)) if i != avoid] or list(range(len(urls)))
                index = random.choice(others)
            record.attempts += 1
            record.via.append(index)
            sent = trio.current_time()
            outcome, retry_after = await self._attempt(client, urls[index], session, body)
            record.tries.append((sent, trio.current_time(), index, outcome))
            if outcome == "turn_completed":
                record.acked_at, record.outcome = trio.current_time(), "acked"
                record.answered_at = record.acked_at
                return record
            # It ran (or began) already: not again. The turn's own refusal says the same
            # when another host stored the id between the server's check and the start.
            if outcome in ("http_409_turn_exists", "turn_failed_store_turn_exists"):
                record.answered_at, record.outcome = trio.current_time(), "exists"
                return record
            self.errors[outcome] += 1
            avoid = index if not outcome.startswith(("http_", "turn_")) else None
            if balancer and outcome in ("ConnectError", "ConnectTimeout"):
                balancer.failed(index)
            await trio.sleep(max(retry_after, random.uniform(0.05, 0.25)))
        record.outcome = "abandoned"
        return record

    async def _attempt(
        self, client: httpx2.AsyncClient, url: str, session: str, body: dict[str, str]
    ) -> tuple[str, float]:
        """The final event's kind (also when the connection broke after it), or why there
        was none; and the seconds a 503's ``Retry-After`` asks to wait (else 0)."""
        final = "cut_stream"
        try:
            async with client.stream(
                "POST", f"{url}/v1/sessions/{session}/turns", json=body,
                headers={"accept": "text/event-stream"},
            ) as response:  # fmt: skip
                if response.status_code != 200:
                    await response.aread()
                    try:
                        reason = str(response.json().get("error_kind", ""))
                    except ValueError:
                        reason = ""
                    asked = response.headers.get("retry-after", "0")
                    wait = float(asked) if response.status_code == 503 and asked.isdigit() else 0
                    return f"http_{response.status_code}_{reason}", wait
                # Read to the end of the stream (the server ends it after the final
                # event): httpx2's nested line/text/byte generators then finish on their
                # own, where leaving them early would leave the inner ones to the GC.
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        event = json.loads(line[5:])
                        if event.get("event") in FINAL:
                            final = str(event["event"])
                            if final != "turn_completed":
                                final += "_" + str(event.get("error_kind", ""))
                return final, 0.0
        except (httpx2.TimeoutException, httpx2.TransportError) as exc:
            return (final if final != "cut_stream" else type(exc).__name__), 0.0
