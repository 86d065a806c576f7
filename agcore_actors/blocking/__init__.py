"""The runtime for scripts, notebooks and threaded programs: blocking calls.

::

    with open_host(build) as host:            # build: as for agcore_actors.asyncio
        print(host.run("chat-1", "Hello").text)
        for event in host.submit("chat-1", "And now?"):
            ...

:func:`open_host` runs the actors on a thread of its own; :class:`BlockingHost`'s
methods mirror :class:`~agcore_actors.agent.SessionHost`'s, with the same results and
errors, callable from many threads at once. ``docs/embedding.md`` tells more.
"""

from .._exports import publish
from ._host import BlockingHost, BlockingTurnStream, open_host

__all__ = ["BlockingHost", "BlockingTurnStream", "open_host"]

publish(__name__, __all__)
