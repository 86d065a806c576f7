"""Mechanics under the Compactor, for code that builds its own compaction or
estimator: the bounded summary call and the ChatML text tokenizers count."""

from .._exports import publish
from ._render import chatml, non_text_tokens
from ._summary import summarize

__all__ = ["chatml", "non_text_tokens", "summarize"]

publish(__name__, __all__)
