"""Counting with a model server's own tokenizer (llama.cpp's server, llama-cpp-python's).

Two dialects are understood:

- llama.cpp's server (also the embedded model's, :mod:`agcore_actors.local`):
  ``POST {root}/tokenize`` with ``{"content": text, "add_special": true}``
  answers ``{"tokens": [...]}``;
- llama-cpp-python's server: ``POST {root}/extras/tokenize/count`` with
  ``{"input": text, "model": m}`` answers ``{"count": n}``.

With the default ``path=None`` the first count tries llama.cpp's path and, when
the server answers 404 there, llama-cpp-python's; the path that answered is kept
for every later count. The text is the conversation in ChatML framing (see
:func:`chatml`), which is the chat template of SmolLM2 and Qwen models, and
close to others; by default followed by the assistant's generation prompt,
which the server counts in ``prompt_tokens`` too. Non-text parts add their
flat :class:`PartCosts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx2
import trio

from ..llm import Message
from ._errors import TokenizerTimeout, TokenizerUnavailable
from ._render import chatml, non_text_tokens
from ._tokens import DEFAULT_PART_COSTS, PartCosts

#: llama.cpp's server (the embedded model's runtime).
LLAMA_CPP_PATH = "/tokenize"
#: llama-cpp-python's server.
LLAMA_CPP_PYTHON_PATH = "/extras/tokenize/count"


class ServerTokenizer:
    """A :class:`TokenEstimator` that asks a server to tokenize.

    Each ``count`` is one request (two on the first count while the path is
    detected), bounded as a whole by ``timeout`` seconds on trio's clock; an
    unreachable server, an error status or a malformed answer raises
    :class:`TokenizerUnavailable`, no answer in time :class:`TokenizerTimeout`.
    ``path`` fixes the endpoint (its dialect follows from it: a path ending in
    ``/count`` is llama-cpp-python's, any other llama.cpp's). ``api_key`` is
    sent as a bearer token. The caller owns ``client`` (it is not closed here).
    """

    def __init__(
        self,
        client: httpx2.AsyncClient,
        base_url: str,
        *,
        model: str = "",
        timeout: float = 10.0,
        costs: PartCosts = DEFAULT_PART_COSTS,
        path: str | None = None,
        generation_prompt: bool = True,
        api_key: str | None = None,
    ) -> None:
        self.client = client
        self.root = base_url.rstrip("/").removesuffix("/v1")
        self.model = model
        self.timeout = timeout
        self.costs = costs
        self.generation_prompt = generation_prompt
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._path = path  # None until detected

    @property
    def url(self) -> str:
        """The tokenize endpoint in use (llama.cpp's until another was detected)."""
        return self.root + (self._path or LLAMA_CPP_PATH)

    @property
    def name(self) -> str:
        return f"server:{self.root}" if self._path is None else f"server:{self.url}"

    async def count_text(self, text: str) -> int:
        """The server's token count of ``text`` (special tokens recognised)."""
        try:
            with trio.fail_after(self.timeout):
                if self._path is None:
                    count = await self._count(LLAMA_CPP_PATH, text, probing=True)
                    if count is not None:
                        self._path = LLAMA_CPP_PATH
                        return count
                    self._path = LLAMA_CPP_PYTHON_PATH
                count = await self._count(self._path, text, probing=False)
                assert count is not None  # only a probe answers None
                return count
        except trio.TooSlowError:
            raise TokenizerTimeout(self.name, self.timeout) from None

    async def count(self, messages: Sequence[Message]) -> int:
        if not messages:
            return 0
        text = chatml(messages, generation_prompt=self.generation_prompt)
        return await self.count_text(text) + non_text_tokens(messages, self.costs)

    async def _count(self, path: str, text: str, *, probing: bool) -> int | None:
        """The count at ``path``; None only when ``probing`` and the path is not served."""
        counting = path.endswith("/count")
        body: dict[str, Any]
        if counting:
            body = {"input": text, "model": self.model} if self.model else {"input": text}
        else:
            body = {"content": text, "add_special": True, "parse_special": True}
        try:
            response = await self.client.post(self.root + path, json=body, headers=self._headers)
        except httpx2.HTTPError as exc:
            raise TokenizerUnavailable(self.name, f"{type(exc).__name__}: {exc}") from exc
        if probing and response.status_code == 404:
            return None
        if response.status_code != 200:
            raise TokenizerUnavailable(
                self.name, f"HTTP {response.status_code}: {response.text[:200]}"
            )
        try:
            answer = response.json()
            count = answer["count"] if counting else len(answer["tokens"])
        except (ValueError, KeyError, TypeError) as exc:
            raise TokenizerUnavailable(
                self.name, f"unexpected answer {response.text[:200]!r}"
            ) from exc
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise TokenizerUnavailable(self.name, f"unexpected count {count!r}")
        return count
