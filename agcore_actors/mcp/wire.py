"""The MCP wire: JSON-RPC 2.0 messages on msgspec, the protocol versions this client
speaks, and how MCP answers map to our types and errors.

Pure (no I/O). What a user of the connection actors needs is in
:mod:`agcore_actors.mcp`; this is for code that speaks MCP itself.
"""

from __future__ import annotations

from .._exports import publish
from ._jsonrpc import (
    INVALID_PARAMS,
    LATEST_PROTOCOL_VERSION,
    METHOD_NOT_FOUND,
    PROTOCOL_VERSIONS,
    Incoming,
    JsonRpcError,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    decode,
    encode,
    map_error,
    parse_tools,
    tool_result,
)

__all__ = [
    "INVALID_PARAMS",
    "LATEST_PROTOCOL_VERSION",
    "METHOD_NOT_FOUND",
    "PROTOCOL_VERSIONS",
    "Incoming",
    "JsonRpcError",
    "JsonRpcNotification",
    "JsonRpcRequest",
    "JsonRpcResponse",
    "decode",
    "encode",
    "map_error",
    "parse_tools",
    "tool_result",
]

publish(__name__, __all__)
