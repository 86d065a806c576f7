"""The code of docs/observability.md, run by tests/docs/test_snippets.py."""

from __future__ import annotations

import logging
import uuid

import trio
from opentelemetry.sdk.trace import TracerProvider

from agcore_actors import ActorSystem
from agcore_actors.agent import PromptContext, SessionHost, TurnHooks
from agcore_actors.agent import messages as am
from agcore_actors.serve.tracing import TurnTracer

log = logging.getLogger("my_bot")


# --8<-- [start:hooks]
async def refuse_empty(context: PromptContext, text: str) -> str | None:
    return "empty message" if not text.strip() else None  # a string refuses the turn


async def record(result: am.TurnResult) -> None:  # after the turn is committed
    log.info(
        "turn %s of %s: %s, %d model call(s), %d tokens",
        result.turn,
        result.session,
        result.status,
        result.model_calls,
        result.usage.total_tokens,
    )


HOOKS = TurnHooks(on_turn_start=refuse_empty, on_turn_end=record)  # AgentBuilder().hooks(HOOKS)
# --8<-- [end:hooks]


# --8<-- [start:snapshot]
async def report_every(seconds: float, system: ActorSystem, host: SessionHost) -> None:
    while True:
        counts = host.snapshot()  # HostSnapshot: live, busy, evicted_idle, crashes, ...
        troubled = [
            f"{a.name}: {a.state.value} ({a.restarts} restarts)"
            for a in system.snapshot()  # every actor and supervisor, depth first
            if a.state.value != "running" or a.degraded
        ]
        log.info("sessions live=%d busy=%d parked=%d", counts.live, counts.busy, counts.parked)
        for line in troubled:
            log.warning("actor %s", line)
        await trio.sleep(seconds)


# --8<-- [end:snapshot]


# --8<-- [start:tracing]
def traced_host(tracer_provider: TracerProvider) -> TurnTracer:
    # The provider and model a call is assumed to ask until its events name them.
    return TurnTracer(tracer_provider.get_tracer("my_bot"), provider="openai", model="gpt-4o")


async def traced_turn(host: SessionHost, tracer: TurnTracer, session: str, text: str) -> None:
    turn = uuid.uuid4().hex
    tracer.begin(turn)  # its spans go under the span current here
    async with host.submit(session, text, turn=turn) as events:
        async for event in events:
            tracer.observe(session, turn, event)  # ended by the turn's final event
            ...  # your own handling of the event


# --8<-- [end:tracing]
