"""Local text embeddings for hybrid retrieval (the ``embeddings`` extra).

:class:`WordLlamaEmbedder` loads WordLlama's static token embeddings (256
dimensions, about 30 MB) from the files its wheel carries: no hub, no network, no
torch. Without the extra, building one raises ``ModuleNotFoundError`` with one line
naming it (``pip install 'agcore-actors[embeddings]'``).

An :class:`Embedder` answers one question, the cosine similarity of a query with
each of some texts. :class:`WordLlamaEmbedder` keeps the vectors of the last
``cache_size`` texts it embedded (keyed by the text itself, so an edited page is
embedded again and a cached vector is never stale), and is safe to call from
several threads at once (one embeds at a time). A call has no cancellation point:
it runs to the end (in the MemoryStore actor, in a worker thread for SQLite and
PostgreSQL).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = ["EXTRA_HINT", "Embedder", "WordLlamaEmbedder", "import_wordllama"]

#: The line that names the extra to install.
EXTRA_HINT = "local embeddings need wordllama: pip install 'agcore-actors[embeddings]'"


@runtime_checkable
class Embedder(Protocol):
    """What hybrid retrieval needs from an embedding model."""

    @property
    def name(self) -> str:
        """The model's name (shown in a repr and in the benchmark's output)."""
        ...

    def similarities(self, query: str, texts: Sequence[str]) -> list[float]:
        """The cosine similarity of ``query`` with each of ``texts``, in [-1, 1]."""
        ...


def import_wordllama() -> Any:
    """The wordllama module, or one clear line naming the extra to install."""
    try:
        import wordllama
    except ImportError:
        raise ModuleNotFoundError(EXTRA_HINT, name="wordllama") from None
    return wordllama


class WordLlamaEmbedder:
    """WordLlama (``l2_supercat``, 256 dimensions) from the files of its wheel.

    ``cache_size`` texts' vectors are kept (least recently used go first). Loading
    takes about a second; it reads nothing but the package's own files.
    """

    def __init__(self, *, cache_size: int = 10_000) -> None:
        wordllama = import_wordllama()
        # The wheel holds the weights in wordllama/weights/ and the tokenizer in
        # wordllama/tokenizers/, which is where load() looks when that folder is its
        # cache; disable_download makes a missing file an error, never a fetch.
        package = Path(wordllama.__file__).parent
        # Only the 256-dimension weights are in the wheel (others would be a download).
        self._model = wordllama.WordLlama.load(cache_dir=package, dim=256, disable_download=True)
        # Texts are embedded one by one (see _mean_pooled): padding them to a common
        # length would only cost (this instance's WordLlama.embed is never called).
        self._model.tokenizer.no_padding()
        self._numpy = import_numpy()
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return "wordllama-l2_supercat-256"

    def __repr__(self) -> str:
        return f"WordLlamaEmbedder(cache_size={self._cache_size})"

    def similarities(self, query: str, texts: Sequence[str]) -> list[float]:
        np = self._numpy
        if not texts:
            return []
        with self._lock:
            q = self._vectors([query])[0]
            vectors = self._vectors(texts)
        sims = np.stack(vectors) @ q
        return [float(s) for s in np.clip(sims, -1.0, 1.0)]

    def _mean_pooled(self, texts: list[str]) -> Any:
        """The mean token embedding of each text (WordLlama's own pooling), one text
        at a time: ``WordLlama.embed`` pads a batch to its longest text, so one long
        page in a batch of short ones costs them all."""
        np = self._numpy
        table = self._model.embedding
        out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
        encodings = self._model.tokenizer.encode_batch(texts, add_special_tokens=False)
        for row, encoding in enumerate(encodings):
            ids = np.asarray(encoding.ids, dtype=np.int64)
            ids = ids[np.asarray(encoding.attention_mask, dtype=bool)]  # no padding
            ids = np.clip(ids, 0, table.shape[0] - 1)
            if ids.size:
                out[row] = table[ids].astype(np.float32).mean(axis=0)
        return out

    def _vectors(self, texts: Sequence[str]) -> list[Any]:
        """Unit vectors of ``texts`` (zero for a text of no known token), cached."""
        cache = self._cache
        missing = list(dict.fromkeys(t for t in texts if t not in cache))
        if missing:
            np = self._numpy
            embedded = self._mean_pooled(missing)
            norms = np.linalg.norm(embedded, axis=1, keepdims=True)
            unit = np.divide(embedded, norms, out=np.zeros_like(embedded), where=norms > 0)
            for text, vector in zip(missing, unit, strict=True):
                cache[text] = vector
        out = []
        for text in texts:
            cache.move_to_end(text)
            out.append(cache[text])
        while len(cache) > self._cache_size:
            cache.popitem(last=False)
        return out


def import_numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise ModuleNotFoundError(EXTRA_HINT, name="numpy") from None
    return numpy
