"""JSON-RPC 2.0 wire types for MCP, on msgspec."""

from __future__ import annotations

from typing import Any

import msgspec

#: Protocol versions this client speaks, newest first.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_PROTOCOL_VERSION = PROTOCOL_VERSIONS[0]

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


class JsonRpcRequest(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: int | str
    method: str
    params: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


class JsonRpcNotification(msgspec.Struct, kw_only=True):
    """``params`` is omitted when unset (the seed sent ``"params": null``)."""

    jsonrpc: str = "2.0"
    method: str
    params: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


class JsonRpcError(msgspec.Struct):
    code: int
    message: str
    data: Any = None


class JsonRpcResponse(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: int | str | None
    result: Any = msgspec.UNSET
    error: JsonRpcError | msgspec.UnsetType = msgspec.UNSET


class Incoming(msgspec.Struct):
    """Any message from the server: a response, a request or a notification."""

    jsonrpc: str = "2.0"
    id: int | str | None = None
    method: str | None = None
    params: Any = None
    result: Any = msgspec.UNSET
    error: JsonRpcError | None = None

    @property
    def is_response(self) -> bool:
        return self.method is None and self.id is not None


_encoder = msgspec.json.Encoder()
_incoming = msgspec.json.Decoder(Incoming | list[Incoming])


def encode(message: JsonRpcRequest | JsonRpcNotification | JsonRpcResponse) -> bytes:
    return _encoder.encode(message)


def decode(data: bytes | str) -> list[Incoming]:
    """One message or a batch; raises ``msgspec.DecodeError`` on bad input."""
    msg = _incoming.decode(data)
    return msg if isinstance(msg, list) else [msg]
