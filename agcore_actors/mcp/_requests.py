"""Requests a server sends the client: elicitation, sampling, roots.

A client answers only the methods it was given a handler for, and offers the matching
capability at ``initialize`` (:func:`client_capabilities`); anything else gets -32601.
A handler is ``async (server, params) -> result``: it runs in a task of its own under
``ClientOptions.server_request_timeout``; an ``elicitation/create`` that runs out of
time is declined (``{"action": "decline"}``), any other method answers a JSON-RPC
error; a handler that raises ``ValueError`` or ``LookupError`` answers -32602 (invalid
params) with its message, ``PermissionError`` answers -1 (the spec's "user rejected")
with its message, any other exception -32603 without one (it may hold secrets).

:func:`roots_handler` answers ``roots/list`` from a fixed list of directories or URIs.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import trio

from ._jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, JsonRpcError, JsonRpcResponse

log = logging.getLogger("agcore_actors.mcp")

#: ``async (server name, params) -> result`` for one server-to-client method.
ServerRequestHandler = Callable[[str, Any], Awaitable[Any]]
ServerRequests = Mapping[str, ServerRequestHandler]
#: ``(progress, total, message)`` of one ``notifications/progress`` of a call.
ProgressCallback = Callable[[float, "float | None", "str | None"], None]
#: ``(session, call id, server, progress, total, message)``: a tool call's progress, for
#: the session whose turn made the call (``ConnectionConfig.progress``).
ProgressHandler = Callable[[str, str, str, float, "float | None", "str | None"], None]

#: Set in the task answering a server request: the session whose tool call it belongs to.
REQUESTING_SESSION: contextvars.ContextVar[str] = contextvars.ContextVar(
    "REQUESTING_SESSION", default=""
)

#: Set beside it: the turn's id of that tool call, when the request is known to be that
#: call's ("" otherwise).
REQUESTING_CALL: contextvars.ContextVar[str] = contextvars.ContextVar("REQUESTING_CALL", default="")

INTERNAL_ERROR = -32603
#: The code of a request the person (or the policy standing for them) refused.
USER_REJECTED = -1
ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"
ROOTS = "roots/list"

_CAPABILITIES: dict[str, tuple[str, dict[str, Any]]] = {
    ELICIT: ("elicitation", {"form": {}}),
    SAMPLE: ("sampling", {}),
    ROOTS: ("roots", {"listChanged": False}),
}


def requesting_session() -> str:
    """Inside a server-request handler: the session whose tool call the request belongs
    to: the call whose response stream carried it (streamable HTTP), else whose progress
    token it names, else the one session with calls in flight on the connection; else ""
    (no call of a session related, or calls of several sessions in flight: ambiguous)."""
    return REQUESTING_SESSION.get()


def requesting_call() -> str:
    """Inside a server-request handler: the turn's id of the tool call the request
    belongs to (as :func:`requesting_session` finds it; with the one-session fallback,
    only when that session has exactly one call in flight); else ""."""
    return REQUESTING_CALL.get()


def client_capabilities(handlers: ServerRequests) -> dict[str, Any]:
    """The ``capabilities`` object offered at ``initialize`` for ``handlers``."""
    return dict(_CAPABILITIES[method] for method in handlers if method in _CAPABILITIES)


def roots_handler(roots: Sequence[str]) -> ServerRequestHandler:
    """A ``roots/list`` handler: each entry a ``file://`` URI, or a directory made one."""
    listed = [
        {"uri": root if "://" in root else Path(root).resolve().as_uri(), "name": root}
        for root in roots
    ]

    async def answer(server: str, params: Any) -> Any:
        return {"roots": listed}

    return answer


async def answer(
    server: str,
    handlers: ServerRequests,
    method: str,
    request_id: int | str,
    params: Any,
    timeout: float,
) -> JsonRpcResponse:
    """The response to one server request (see the module docstring); never raises
    but for cancellation."""
    handler = handlers.get(method)
    if handler is None:
        error = JsonRpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        return JsonRpcResponse(id=request_id, error=error)
    try:
        with trio.move_on_after(timeout):
            return JsonRpcResponse(id=request_id, result=await handler(server, params))
    except (ValueError, LookupError) as exc:
        return JsonRpcResponse(id=request_id, error=JsonRpcError(INVALID_PARAMS, str(exc)))
    except PermissionError as exc:
        return JsonRpcResponse(id=request_id, error=JsonRpcError(USER_REJECTED, str(exc)))
    except Exception as exc:
        log.warning("[%s] the %s handler failed: %s", server, method, type(exc).__name__)
        error = JsonRpcError(INTERNAL_ERROR, f"the client could not answer {method}")
        return JsonRpcResponse(id=request_id, error=error)
    if method == ELICIT:
        return JsonRpcResponse(id=request_id, result={"action": "decline"})
    error = JsonRpcError(INTERNAL_ERROR, f"the client did not answer {method} in time")
    return JsonRpcResponse(id=request_id, error=error)
