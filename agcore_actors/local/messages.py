"""The LocalModelServer actor's protocol.

::

    GetEndpoint() -> Endpoint    where to send OpenAI-compatible requests, now

Cancelling the asker of ``GetEndpoint`` withdraws the request; nothing else happens.
Asked while the server (re)starts, it waits in the mailbox and is answered by the
incarnation that comes up, so its reply always names a server that answered its
readiness probe — though one asked just as the server dies may be answered by the
incarnation that has not yet seen the death: after a connection error, ask again. A base
URL and API key stay the same across restarts (the URL whenever the port is still free);
``pid`` and ``restarts`` change.
"""

from __future__ import annotations

import msgspec

from .._exports import publish
from ..actor import Request

__all__ = ["Endpoint", "GetEndpoint", "LocalModelMsg"]


class Endpoint(msgspec.Struct, frozen=True, kw_only=True):
    """A running local model server."""

    #: OpenAI-compatible base URL, ending in ``/v1`` (``{base_url}/chat/completions``).
    base_url: str
    #: Bearer token the server requires on ``/v1`` routes ("" when it requires none).
    api_key: str = ""
    #: The model name the server reports and accepts in ``model``.
    model: str = ""
    #: The GGUF file it serves.
    path: str = ""
    #: Context window of the server, in tokens.
    n_ctx: int = 0
    #: The server process (also its process group).
    pid: int = 0
    #: How many times the actor has been restarted so far.
    restarts: int = 0
    #: Headers to send with every request. Today ``Connection: close``: after a streamed
    #: response the server may close a kept-alive connection just as the client reuses
    #: it ("Server disconnected without sending a response"); a new connection per
    #: request costs little on loopback.
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    #: The directory the server saves and restores slots in ("": no prefix cache).
    prefix_dir: str = ""
    #: The served model's identity for prefix cache keys (file, template, context).
    identity: str = ""


class GetEndpoint(Request[Endpoint], frozen=True):
    """Where the running server listens, with what it serves."""


LocalModelMsg = GetEndpoint

publish(__name__, __all__)
