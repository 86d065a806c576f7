"""Counting with a model server's own tokenizer (llama-cpp-python's server).

``POST {base_url}/extras/tokenize/count`` with ``{"input": text, "model": m}``
answers ``{"count": n}``; the text is the conversation in ChatML framing (see
:func:`chatml`), which is the chat template of SmolLM2 and Qwen models, and
close to others; by default followed by the assistant's generation prompt,
which the server counts in ``prompt_tokens`` too. Non-text parts add their
flat :class:`PartCosts`.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx2
import trio

from ..llm import Message
from ._errors import TokenizerTimeout, TokenizerUnavailable
from ._render import chatml, non_text_tokens
from ._tokens import DEFAULT_PART_COSTS, PartCosts


class ServerTokenizer:
    """A :class:`TokenEstimator` that asks a server to tokenize.

    Each ``count`` is one request, bounded by ``timeout`` seconds on trio's
    clock; an unreachable server, an error status or a malformed answer
    raises :class:`TokenizerUnavailable`. The caller owns ``client`` (it is
    not closed here).
    """

    def __init__(
        self,
        client: httpx2.AsyncClient,
        base_url: str,
        *,
        model: str = "",
        timeout: float = 10.0,
        costs: PartCosts = DEFAULT_PART_COSTS,
        path: str = "/extras/tokenize/count",
        generation_prompt: bool = True,
    ) -> None:
        self.client = client
        self.url = base_url.rstrip("/").removesuffix("/v1") + path
        self.model = model
        self.timeout = timeout
        self.costs = costs
        self.generation_prompt = generation_prompt

    @property
    def name(self) -> str:
        return f"server:{self.url}"

    async def count_text(self, text: str) -> int:
        """The server's token count of ``text`` (special tokens recognised)."""
        body = {"input": text, "model": self.model} if self.model else {"input": text}
        try:
            with trio.fail_after(self.timeout):
                response = await self.client.post(self.url, json=body)
        except trio.TooSlowError:
            raise TokenizerTimeout(self.name, self.timeout) from None
        except httpx2.HTTPError as exc:
            raise TokenizerUnavailable(self.name, f"{type(exc).__name__}: {exc}") from exc
        if response.status_code != 200:
            raise TokenizerUnavailable(
                self.name, f"HTTP {response.status_code}: {response.text[:200]}"
            )
        try:
            count = response.json()["count"]
        except (ValueError, KeyError, TypeError) as exc:
            raise TokenizerUnavailable(
                self.name, f"unexpected answer {response.text[:200]!r}"
            ) from exc
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise TokenizerUnavailable(self.name, f"unexpected count {count!r}")
        return count

    async def count(self, messages: Sequence[Message]) -> int:
        if not messages:
            return 0
        text = chatml(messages, generation_prompt=self.generation_prompt)
        return await self.count_text(text) + non_text_tokens(messages, self.costs)
