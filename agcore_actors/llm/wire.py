"""The wire tier: JSON shapes of the OpenAI and Anthropic APIs, SSE pieces, and the
mechanics a provider is built from.

For writing or debugging a provider; a user of the :class:`~agcore_actors.llm.ProviderActor`
does not need this module. A provider turns its wire format into :class:`ChatDelta` s
honouring :class:`ReadLimits`; :class:`StreamAssembler` turns deltas into stream
events and one reply; :class:`Caller` is the retry loop the actor runs every call
through (usable without an actor).
"""

from __future__ import annotations

from .._exports import publish
from ._anthropic_wire import (
    AnthropicBlock,
    AnthropicDelta,
    AnthropicErrorDetail,
    AnthropicEvent,
    AnthropicMessage,
    AnthropicUsage,
    anthropic_request_body,
    response_from_message,
)
from ._call import Caller
from ._http import default_client
from ._media import (
    BLOB_PREFIX,
    Blob,
    blob_data_url,
    blob_refs,
    join_blobs,
    media_of,
    parse_ref,
    split_blobs,
)
from ._media_wire import ALL_MEDIA, anthropic_blocks, openai_messages
from ._openai import delta_from_chunk, delta_from_response, openai_request_body
from ._openai_wire import (
    ChatCompletion,
    ChatCompletionChunk,
    Choice,
    ChunkChoice,
    CompletionTokensDetails,
    Delta,
    ErrorBody,
    ErrorDetail,
    FunctionCallDelta,
    PromptTokensDetails,
    ResponseMessage,
    ResponseToolCall,
    ToolCallDelta,
    WireUsage,
    response_from_completion,
)
from ._provider import NO_READ_LIMITS, ReadLimits, output_mode_of
from ._request import StreamOptions
from ._sse import DEFAULT_MAX_EVENT_BYTES, SseDecoder, SseEvent
from ._stream import ChatDelta, DeltaToolCall, StreamAssembler, merge_chunks
from ._types import finish_reason

__all__ = [
    "ALL_MEDIA",
    "BLOB_PREFIX",
    "DEFAULT_MAX_EVENT_BYTES",
    "NO_READ_LIMITS",
    "AnthropicBlock",
    "AnthropicDelta",
    "AnthropicErrorDetail",
    "AnthropicEvent",
    "AnthropicMessage",
    "AnthropicUsage",
    "Blob",
    "Caller",
    "ChatCompletion",
    "ChatCompletionChunk",
    "ChatDelta",
    "Choice",
    "ChunkChoice",
    "CompletionTokensDetails",
    "Delta",
    "DeltaToolCall",
    "ErrorBody",
    "ErrorDetail",
    "FunctionCallDelta",
    "PromptTokensDetails",
    "ReadLimits",
    "ResponseMessage",
    "ResponseToolCall",
    "SseDecoder",
    "SseEvent",
    "StreamAssembler",
    "StreamOptions",
    "ToolCallDelta",
    "WireUsage",
    "anthropic_blocks",
    "anthropic_request_body",
    "blob_data_url",
    "blob_refs",
    "default_client",
    "delta_from_chunk",
    "delta_from_response",
    "finish_reason",
    "join_blobs",
    "media_of",
    "merge_chunks",
    "openai_messages",
    "openai_request_body",
    "output_mode_of",
    "parse_ref",
    "response_from_completion",
    "response_from_message",
    "split_blobs",
]

publish(__name__, __all__)
