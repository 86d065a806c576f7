"""Summarizers that ask a model: through a ProviderActor, or over plain HTTP.

Both are :class:`~agcore_actors.context.Summarizer` s; the compactor bounds
each call with its ``summary_timeout`` and cancels it when the time is up.
"""

from __future__ import annotations

from typing import Any

import httpx2
import msgspec

from ..actor import ActorRef
from ..llm import Chat, ChatRequest, Message, ProviderMsg


class ProviderSummarizer:
    """Asks a :class:`~agcore_actors.llm.ProviderActor` (``Chat``) for the summary.

    ``provider`` names a registered provider (None: the default one);
    ``model`` overrides the provider's model (empty: its configured one).
    The provider's own retry policy applies inside the compactor's timeout.
    Errors of the provider propagate (the compactor counts them as failures).
    """

    def __init__(
        self,
        ref: ActorRef[ProviderMsg],
        *,
        provider: str | None = None,
        model: str = "",
        temperature: float | None = 0.0,
    ) -> None:
        self.ref = ref
        self.provider = provider
        self.model = model
        self.temperature = temperature

    async def __call__(self, messages: list[Message], *, max_tokens: int) -> str:
        request = ChatRequest(
            messages, model=self.model, max_tokens=max_tokens, temperature=self.temperature
        )
        response = await self.ref.ask(Chat(request, self.provider))
        return response.text


class HttpSummarizer:
    """POSTs an OpenAI-style ``/v1/chat/completions`` request with httpx.

    For servers without a ProviderActor in front (tests, tools). Raises
    ``httpx2.HTTPStatusError`` on a non-2xx answer and ``ValueError`` on a
    body without a message. The caller owns ``client``.
    """

    def __init__(
        self,
        client: httpx2.AsyncClient,
        base_url: str,
        *,
        model: str = "",
        api_key: str | None = None,
        temperature: float | None = 0.0,
    ) -> None:
        self.client = client
        root = base_url.rstrip("/")
        self.url = root + ("/chat/completions" if root.endswith("/v1") else "/v1/chat/completions")
        self.model = model
        self.api_key = api_key
        self.temperature = temperature

    async def __call__(self, messages: list[Message], *, max_tokens: int) -> str:
        body: dict[str, Any] = {
            "model": self.model or "default",
            "messages": msgspec.to_builtins(messages),
            "max_tokens": max_tokens,
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        response = await self.client.post(self.url, json=body, headers=headers)
        response.raise_for_status()
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ValueError(f"no message in the answer: {response.text[:200]!r}") from exc
        return content if isinstance(content, str) else ""
