"""The runtime inside an asyncio program (a bot framework, an ASGI app).

::

    async def build(system: ActorSystem) -> AgentBuilder:      # runs in trio
        llm = await system.root.start_child(provider_spec("llm", registry=...))
        store = await system.root.start_child(session_store_spec("store", ...))
        return AgentBuilder().provider(llm).store(StoreTurns(store)).agent(agent)

    async with AsyncioHost(build) as host:                     # asyncio code
        result = await host.run("chat-1", "Hello")
        async for event in host.submit("chat-1", "And now?"):
            ...

:class:`AsyncioHost` runs the actors on trio's *guest mode* in the asyncio loop's own
thread; its methods mirror :class:`~agcore_actors.agent.SessionHost`'s, with the same
results, errors and cancellation guarantees. ``docs/embedding.md`` tells more.
"""

from .._exports import publish
from ._host import AsyncioHost
from ._stream import AsyncioTurnStream

__all__ = ["AsyncioHost", "AsyncioTurnStream"]

publish(__name__, __all__)
