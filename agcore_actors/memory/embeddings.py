"""Local embeddings for hybrid retrieval (the ``embeddings`` extra).

::

    from agcore_actors.memory.embeddings import WordLlamaEmbedder

    config = MemoryStoreConfig(
        path="memory.db",
        embedder=WordLlamaEmbedder(),
        retriever=RetrieverConfig(mode=RetrievalMode.BM25_EMBEDDINGS),
    )

Importing this module needs nothing; building a :class:`WordLlamaEmbedder` without
the extra raises ``ModuleNotFoundError`` with one line naming it.
"""

from .._exports import publish
from ._embeddings import EXTRA_HINT, Embedder, WordLlamaEmbedder

__all__ = ["EXTRA_HINT", "Embedder", "WordLlamaEmbedder"]

publish(__name__, __all__)
