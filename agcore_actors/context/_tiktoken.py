"""Counting with tiktoken, when an encoding is available without a network.

tiktoken downloads its encodings on first use and caches them (in
``TIKTOKEN_CACHE_DIR``). This module never downloads: :meth:`TiktokenEstimator.load`
reads an encoding from that cache, or from a ``.tiktoken`` file given by
path, and otherwise raises :class:`TokenizerUnavailable` saying what is
missing. tiktoken itself is an optional dependency (``pip install tiktoken``).

Counts follow OpenAI's chat accounting: the messages' text (ChatML-framed,
see :func:`chatml`) plus the flat costs of non-text parts.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from typing import Any

from ..llm import Message
from ._errors import TokenizerUnavailable
from ._render import chatml, non_text_tokens
from ._tokens import DEFAULT_PART_COSTS, PartCosts

#: The split pattern of cl100k_base (tiktoken_ext.openai_public), for files loaded by path.
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "p50k_base": "https://openaipublic.blob.core.windows.net/encodings/p50k_base.tiktoken",
    "r50k_base": "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken",
}


def _tiktoken() -> Any:
    try:
        import tiktoken
    except ImportError:
        raise TokenizerUnavailable("tiktoken", "the tiktoken package is not installed") from None
    return tiktoken


def cache_path(encoding: str) -> str:
    """Where tiktoken keeps a downloaded encoding (its own cache layout)."""
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if cache_dir is None:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return os.path.join(cache_dir, hashlib.sha1(_URLS[encoding].encode()).hexdigest())


class TiktokenEstimator:
    """A :class:`TokenEstimator` over a tiktoken ``Encoding``."""

    def __init__(self, encoding: Any, *, costs: PartCosts = DEFAULT_PART_COSTS) -> None:
        self.encoding = encoding
        self.costs = costs

    @property
    def name(self) -> str:
        return f"tiktoken:{self.encoding.name}"

    @classmethod
    def load(cls, encoding: str = "cl100k_base", *, path: str | None = None) -> TiktokenEstimator:
        """An estimator for a named encoding, from tiktoken's cache or ``path``.

        Never touches the network: without a cached copy (or the file at
        ``path``) this raises :class:`TokenizerUnavailable`. ``path`` is a
        ``.tiktoken`` file (base64 token and rank per line); its split pattern
        is cl100k's.
        """
        tiktoken = _tiktoken()
        if path is None:
            if encoding not in _URLS:
                raise TokenizerUnavailable(
                    f"tiktoken:{encoding}", f"unknown encoding (known: {', '.join(_URLS)})"
                )
            cached = cache_path(encoding)
            if not os.path.exists(cached):
                raise TokenizerUnavailable(
                    f"tiktoken:{encoding}",
                    f"the encoding is not available offline (no cached copy at {cached}; "
                    "set TIKTOKEN_CACHE_DIR to a directory that has it)",
                )
            try:
                # Served from the cache checked above: no download.
                return cls(tiktoken.get_encoding(encoding))
            except (OSError, ValueError) as exc:
                raise TokenizerUnavailable(f"tiktoken:{encoding}", str(exc)) from exc
        try:
            from tiktoken.load import load_tiktoken_bpe

            ranks = load_tiktoken_bpe(path)
        except (OSError, ValueError) as exc:
            raise TokenizerUnavailable(
                f"tiktoken:{encoding}", f"cannot read {path}: {exc}"
            ) from exc
        special = {"<|endoftext|>": max(ranks.values(), default=-1) + 1}
        enc = tiktoken.Encoding(
            encoding, pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens=special
        )
        return cls(enc)

    def count_text(self, text: str) -> int:
        return len(self.encoding.encode(text, disallowed_special=()))

    async def count(self, messages: Sequence[Message]) -> int:
        if not messages:
            return 0
        return self.count_text(chatml(messages)) + non_text_tokens(messages, self.costs)
