"""A FastAPI app on uvicorn that serves turns from a host embedded in its asyncio loop.

    python examples/fastapi_app.py 8000
    curl -X POST localhost:8000/chats/ann -H 'content-type: application/json' \\
         -d '{"text": "Hello"}'
    curl 'localhost:8000/chats/ann/stream?text=And+now%3F'

The app's lifespan enters an :class:`~agcore_actors.asyncio.AsyncioHost`: the actors
run on trio's guest mode inside uvicorn's own loop, no thread or queue of ours in
between. ``POST /chats/{chat}`` runs a turn and answers its result as JSON;
``GET /chats/{chat}/stream`` streams the answer's text as it comes. A client that hangs
up cancels its turn (committed, every tool call answered). Ctrl-C or SIGTERM: uvicorn
finishes the requests in flight, then the lifespan leaves the host, which drains and
stops the actors.

Needs the ``examples`` extra: ``pip install 'agcore-actors[examples]'``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

try:
    import uvicorn
    from fastapi import FastAPI, Request
    from fastapi.responses import StreamingResponse
    from pydantic import BaseModel
except ModuleNotFoundError as missing:
    sys.exit(f"{missing.name} is missing: pip install 'agcore-actors[examples]'")

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, StoreTurns
from agcore_actors.agent import messages as am
from agcore_actors.asyncio import AsyncioHost
from agcore_actors.store import InMemorySessions, session_store_spec

from _model import llm_spec


async def build(system: ActorSystem) -> AgentBuilder:
    """The actors, started in the host's trio run."""
    llm = await system.root.start_child(llm_spec())
    store = await system.root.start_child(session_store_spec("store", backend=InMemorySessions()))
    agent = Agent(name="assistant", instructions="Answer briefly.")
    return AgentBuilder().provider(llm).store(StoreTurns(store)).agent(agent)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    async with AsyncioHost(build) as host:
        app.state.host = host
        print("host ready", flush=True)
        yield
    print("host stopped", flush=True)


app = FastAPI(lifespan=lifespan)


class Turn(BaseModel):
    text: str


class Answer(BaseModel):
    status: str
    text: str


@app.post("/chats/{chat}")
async def run_turn(chat: str, turn: Turn, request: Request) -> Answer:
    host: AsyncioHost = request.app.state.host
    result = await host.run(chat, turn.text)
    return Answer(status=result.status, text=result.text)


@app.get("/chats/{chat}/stream")
async def stream_turn(chat: str, text: str, request: Request) -> StreamingResponse:
    host: AsyncioHost = request.app.state.host

    async def pieces() -> AsyncIterator[str]:
        async with host.submit(chat, text) as events:
            async for event in events:
                if isinstance(event, am.TextDelta):
                    yield event.text

    return StreamingResponse(pieces(), media_type="text/plain")


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
