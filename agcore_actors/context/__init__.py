"""Context management: the Compactor actor, its configuration, token estimators.

::

    spec = compactor_spec(
        "compactor",
        config=CompactConfig(context_window=32_000),
        summarizer=ProviderSummarizer(llm),
    )
    compactor = await system.root.start_child(spec)
    result = await compactor.ask(cm.Compact(messages=history, scratch="time: 12:00"))
    send(result.messages); history = result.history

with ``from agcore_actors.context import messages as cm`` (the protocol). Two
public submodules go further: :mod:`agcore_actors.context.policy` (the pure
steps, the budget arithmetic and the heuristic estimate, usable without an actor)
and :mod:`agcore_actors.context.lowlevel` (the summary call and the ChatML text
that tokenizers count).
"""

from .._exports import publish
from . import messages as messages  # the protocol: import it qualified
from ._actor import Compactor, compactor_spec
from ._errors import (
    CompactError,
    ContextOverflow,
    InvalidCompactConfig,
    InvalidCompactRequest,
    SummaryFailed,
    SummaryTimeout,
    TokenizerTimeout,
    TokenizerUnavailable,
)
from ._policy import CompactConfig
from ._server_tokens import ServerTokenizer
from ._summarizers import HttpSummarizer, ProviderSummarizer
from ._summary import Summarizer
from ._tiktoken import TiktokenEstimator
from ._tokens import HeuristicEstimator, PartCosts, TokenEstimator

__all__ = [
    "CompactConfig",
    "CompactError",
    "Compactor",
    "ContextOverflow",
    "HeuristicEstimator",
    "HttpSummarizer",
    "InvalidCompactConfig",
    "InvalidCompactRequest",
    "PartCosts",
    "ProviderSummarizer",
    "ServerTokenizer",
    "Summarizer",
    "SummaryFailed",
    "SummaryTimeout",
    "TiktokenEstimator",
    "TokenEstimator",
    "TokenizerTimeout",
    "TokenizerUnavailable",
    "compactor_spec",
]

publish(__name__, __all__)
