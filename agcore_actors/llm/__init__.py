"""The LLM layer: chat types, providers, the ProviderActor and its protocol.

::

    registry = ProviderRegistry().register(OpenAICompatibleProvider(preset("openai", key)))
    async with ActorSystem() as system:
        llm = await system.root.start_child(provider_spec("llm", registry=registry))
        reply = await llm.ask(Chat(ChatRequest([user("Hello")])))
        async with llm.stream(ChatStream(ChatRequest([user("Hi")]))) as events:
            async for event in events:
                ...

The actor's protocol is :mod:`agcore_actors.llm.messages`. Two more tiers: the wire
formats and the mechanics providers are built from in :mod:`agcore_actors.llm.wire`,
the pure policies (retry, error classification, usage arithmetic) in
:mod:`agcore_actors.llm.policy`.
"""

from .._exports import publish
from . import messages as messages
from ._actor import ProviderActor, ProviderConfig, provider_actor, provider_spec
from ._anthropic import AnthropicConfig, AnthropicProvider
from ._errors import (
    AuthenticationError,
    BlockedByHook,
    ContextLengthError,
    InvalidResponseError,
    LlmConfigError,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
    RateLimitError,
    RequestError,
    StreamError,
    UnknownProviderError,
)
from ._hooks import ALLOW, Hook, HookContext, HookEvent, HookExecutor, HookResult, block
from ._openai import (
    OpenAICompatibleProvider,
    OpenAIConfig,
    deepseek_preset,
    openai_preset,
    preset,
    qwen_preset,
)
from ._provider import OutputMode, Provider, ProviderRegistry
from ._retry import RetryConfig, Timeouts
from ._summary import response_summary
from ._types import (
    AssistantMessage,
    AssistantToolCall,
    AudioPart,
    ChatRequest,
    ContentPart,
    DeveloperMessage,
    FileData,
    FilePart,
    FinishReason,
    FunctionCall,
    FunctionDefinition,
    FunctionMessage,
    ImagePart,
    ImageUrl,
    InputAudio,
    JsonSchema,
    Message,
    NamedToolChoice,
    ReasoningBlock,
    RedactedThinkingBlock,
    RefusalPart,
    ResponseFormatJsonObject,
    ResponseFormatJsonSchema,
    ResponseFormatText,
    SystemMessage,
    TextPart,
    ThinkingBlock,
    ToolChoice,
    ToolDefinition,
    ToolMessage,
    UserMessage,
    assistant,
    content_text,
    force_tool,
    message_from_json,
    message_to_json,
    system,
    tool_definition,
    tool_result,
    user,
)
from ._usage import Pricing, Usage
from .messages import (
    Chat,
    ChatResponse,
    ChatStream,
    Content,
    ContentFirst,
    Finish,
    GetUsage,
    ListProviders,
    ProviderList,
    ProviderMsg,
    Refusal,
    ResetUsage,
    Retrying,
    StreamEvent,
    Thinking,
    ToolCallChunk,
    ToolCalls,
    UsageReport,
    UsageUpdate,
)

# The names these had before issue 9, importable for now (not in __all__): `Tool`,
# `ToolCall` and `function_tool` meant other things in agcore_actors.tools.
ToolCall = AssistantToolCall
Tool = ToolDefinition
function_tool = tool_definition

__all__ = [
    "ALLOW",
    "AnthropicConfig",
    "AnthropicProvider",
    "AssistantMessage",
    "AssistantToolCall",
    "AudioPart",
    "AuthenticationError",
    "BlockedByHook",
    "Chat",
    "ChatRequest",
    "ChatResponse",
    "ChatStream",
    "Content",
    "ContentFirst",
    "ContentPart",
    "ContextLengthError",
    "DeveloperMessage",
    "FileData",
    "FilePart",
    "Finish",
    "FinishReason",
    "FunctionCall",
    "FunctionDefinition",
    "FunctionMessage",
    "GetUsage",
    "Hook",
    "HookContext",
    "HookEvent",
    "HookExecutor",
    "HookResult",
    "ImagePart",
    "ImageUrl",
    "InputAudio",
    "InvalidResponseError",
    "JsonSchema",
    "ListProviders",
    "LlmConfigError",
    "LlmConnectionError",
    "LlmError",
    "LlmTimeoutError",
    "Message",
    "NamedToolChoice",
    "OpenAICompatibleProvider",
    "OpenAIConfig",
    "OutputMode",
    "Pricing",
    "Provider",
    "ProviderActor",
    "ProviderConfig",
    "ProviderList",
    "ProviderMsg",
    "ProviderRegistry",
    "RateLimitError",
    "ReasoningBlock",
    "RedactedThinkingBlock",
    "Refusal",
    "RefusalPart",
    "RequestError",
    "ResetUsage",
    "ResponseFormatJsonObject",
    "ResponseFormatJsonSchema",
    "ResponseFormatText",
    "RetryConfig",
    "Retrying",
    "StreamError",
    "StreamEvent",
    "SystemMessage",
    "TextPart",
    "Thinking",
    "ThinkingBlock",
    "Timeouts",
    "ToolCallChunk",
    "ToolCalls",
    "ToolChoice",
    "ToolDefinition",
    "ToolMessage",
    "UnknownProviderError",
    "Usage",
    "UsageReport",
    "UsageUpdate",
    "UserMessage",
    "assistant",
    "block",
    "content_text",
    "deepseek_preset",
    "force_tool",
    "message_from_json",
    "message_to_json",
    "openai_preset",
    "preset",
    "provider_actor",
    "provider_spec",
    "qwen_preset",
    "response_summary",
    "system",
    "tool_definition",
    "tool_result",
    "user",
]

publish(__name__, __all__)
