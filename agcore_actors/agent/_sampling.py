"""An MCP server's ``sampling/createMessage`` answered by the session's own provider.

:func:`session_sampler` is the handler given to MCP connections
(``ConnectionConfig(requests={"sampling/createMessage": session_sampler(system, llm)})``).
A request is answered only for the session whose tool call it belongs to
(``requesting_session()``), under a :data:`SamplingPolicy`:

- ``"ask"`` (the default): the session asks its person as it asks for a tool call's
  approval: an ``ApprovalRequested`` event named ``sampling:{server}``, its arguments
  the request (``messages``, ``systemPrompt``, ``maxTokens``), answered with
  ``SessionHost.approve`` like any approval; no answer within ``approval_timeout``
  refuses;
- ``"allow"``: answered without asking;
- ``"deny"``: refused without asking.

A refused request, or one no session's call owns, answers the JSON-RPC error -1 ("user
rejected", with the reason); a request the provider cannot take (non-text content, no
messages) answers -32602. The model is the provider's default (the server's
``modelPreferences`` are hints the spec lets a client ignore); ``maxTokens`` is capped at
``max_tokens``. Pure conversions (:func:`chat_request`, :func:`sampling_result`) are
beside the handler.
"""

from __future__ import annotations

from typing import Any, Literal

from .._ids import new_id
from ..actor import ActorRef, ActorSystem
from ..llm import AssistantMessage, ChatRequest, Message, SystemMessage, UserMessage
from ..llm import messages as lm
from ..tools import ApprovalDecision, ApprovalRequest
from ._bundle import session_name

__all__ = ["SamplingPolicy", "chat_request", "sampling_result", "session_sampler"]

SamplingPolicy = Literal["ask", "allow", "deny"]

#: MCP's stop reasons by our finish reasons (others pass as they are).
_STOP = {"stop": "endTurn", "length": "maxTokens"}


def _text(content: Any) -> str:
    blocks = content if isinstance(content, list) else [content]
    texts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict) or block.get("type") != "text":
            kind = block.get("type") if isinstance(block, dict) else type(block).__name__
            raise ValueError(f"sampling takes text content only, not {kind!r}")
        texts.append(str(block.get("text", "")))
    return "".join(texts)


def chat_request(params: Any, *, max_tokens: int) -> ChatRequest:
    """The provider request of a ``sampling/createMessage``'s ``params``; ValueError when
    they are not a text conversation."""
    if not isinstance(params, dict) or not isinstance(params.get("messages"), list):
        raise ValueError("sampling/createMessage needs a list of messages")
    messages: list[Message] = []
    system = params.get("systemPrompt")
    if isinstance(system, str) and system:
        messages.append(SystemMessage(content=system))
    for message in params["messages"]:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise ValueError("each sampling message needs the role user or assistant")
        text = _text(message.get("content"))
        if message["role"] == "user":
            messages.append(UserMessage(content=text))
        else:
            messages.append(AssistantMessage(content=text))
    if not any(isinstance(m, UserMessage) for m in messages):
        raise ValueError("sampling/createMessage needs a user message")
    asked = params.get("maxTokens")
    tokens = min(asked, max_tokens) if isinstance(asked, int) and asked > 0 else max_tokens
    temperature = params.get("temperature")
    stop = params.get("stopSequences")
    return ChatRequest(
        messages=messages,
        max_tokens=tokens,
        temperature=float(temperature) if isinstance(temperature, int | float) else None,
        stop=[str(s) for s in stop] if isinstance(stop, list) and stop else None,
    )


def sampling_result(response: lm.ChatResponse) -> dict[str, Any]:
    """The ``CreateMessageResult`` of a provider's reply."""
    reason = response.finish_reason or "stop"
    return {
        "role": "assistant",
        "content": {"type": "text", "text": response.text},
        "model": response.model,
        "stopReason": _STOP.get(reason, reason),
    }


def session_sampler(
    system: ActorSystem,
    provider: ActorRef[Any],
    *,
    policy: SamplingPolicy = "ask",
    max_tokens: int = 1024,
) -> Any:
    """A ``sampling/createMessage`` handler for MCP connections (see the module doc)."""

    async def sample(server: str, params: Any) -> dict[str, Any]:
        from ..mcp._requests import requesting_session

        session = requesting_session()
        if not session:
            raise PermissionError("no session's tool call made this request")
        if policy == "deny":
            raise PermissionError("sampling is not allowed for this client")
        request = chat_request(params, max_tokens=max_tokens)
        if policy == "ask":
            try:
                ref = system.lookup(session_name(session))
            except LookupError:
                raise PermissionError(f"session {session!r} is not running") from None
            ask = ApprovalRequest(
                call_id=new_id(),
                tool=f"sampling:{server}",
                arguments={
                    "messages": params["messages"],
                    "systemPrompt": params.get("systemPrompt"),
                    "maxTokens": request.max_tokens,
                },
                session_id=session,
                description=f"MCP server {server!r} asks the model",
            )
            decision: ApprovalDecision = await ref.ask(ask)
            if not decision.allow:
                raise PermissionError(f"the user rejected the request: {decision.reason}")
        response: lm.ChatResponse = await provider.ask(lm.Chat(request))
        return sampling_result(response)

    return sample
