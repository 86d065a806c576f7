"""The media of stored messages, kept once by content hash.

A backend writes a message through :meth:`BlobShelf.encode` and reads it through
:meth:`BlobShelf.decode`. Guarantees:

- an image or file part of at least :data:`BLOB_THRESHOLD` decoded bytes is stored as a
  reference (``blob:sha256:<hex>;<media type>``) in the message body and its bytes once
  in the backend's ``blobs`` table (raw bytes, not base64), however many messages,
  turns or sessions carry the same data; smaller parts stay inline;
- a read gives the message back with the same data (as a ``data:`` URL of canonical
  base64); a :class:`BlobCache`, bounded in bytes, keeps the data URLs of the blobs
  written or read last, so loading a history again neither reads the blob nor builds
  a new 13 MB string: every load shares one string per blob while it is cached
  (:attr:`BlobCache.reads` counts the reads that missed);
- ``blob_refs (session, hash)`` says which sessions refer to a blob; deleting a session
  removes the blobs no other session refers to;
- a message written before the blob tables existed (its data inline) reads as it was.

Content-addressed data never changes, so the cache needs no invalidation: a rolled
back write leaves at most a cached entry nothing refers to.
"""

from __future__ import annotations

import collections
from collections.abc import Callable

from ..llm import InvalidContent, Message
from ..llm.wire import Blob, blob_data_url, join_blobs, parse_ref, split_blobs
from ._backend import decode_message, encode_message
from ._errors import InvalidRequest, StoreStorageError

__all__ = ["BLOB_THRESHOLD", "BlobCache", "BlobShelf"]

#: Parts of at least this many decoded bytes are stored as blobs.
BLOB_THRESHOLD = 16 * 1024
#: Bytes of data URLs a :class:`BlobCache` keeps by default.
DEFAULT_BLOB_CACHE_BYTES = 256 * 1024 * 1024


class BlobCache:
    """Data URLs by blob reference, least recently used dropped past ``max_bytes``."""

    __slots__ = ("_urls", "max_bytes", "reads", "size")

    def __init__(self, max_bytes: int = DEFAULT_BLOB_CACHE_BYTES) -> None:
        self._urls: collections.OrderedDict[str, str] = collections.OrderedDict()
        self.max_bytes = max_bytes
        self.size = 0
        #: Blob reads from storage (cache misses) since the cache was made.
        self.reads = 0

    def get(self, ref: str) -> str | None:
        url = self._urls.get(ref)
        if url is not None:
            self._urls.move_to_end(ref)
        return url

    def put(self, ref: str, url: str) -> None:
        if ref in self._urls or len(url) > self.max_bytes:
            return
        self._urls[ref] = url
        self.size += len(url)
        while self.size > self.max_bytes:
            _, dropped = self._urls.popitem(last=False)
            self.size -= len(dropped)


class BlobShelf:
    """Encodes and decodes a backend's messages, its blobs through ``fetch`` (a blob's
    bytes by hash, None if missing) and written by the backend from :meth:`encode`'s
    list."""

    __slots__ = ("cache", "fetch", "threshold")

    def __init__(
        self,
        fetch: Callable[[str], bytes | None],
        *,
        cache: BlobCache | None = None,
        threshold: int = BLOB_THRESHOLD,
    ) -> None:
        self.fetch = fetch
        self.cache = BlobCache() if cache is None else cache
        self.threshold = threshold

    def encode(self, message: Message) -> tuple[bytes, list[Blob]]:
        """The body of ``message`` and the blobs it refers to (to be written)."""
        try:
            stored, taken = split_blobs(message, self.threshold)
        except InvalidContent as exc:
            raise InvalidRequest(str(exc)) from None
        for ref, _, url in taken:
            self.cache.put(ref, url)  # the writer's own string: no copy
        return encode_message(stored), [blob for _, blob, _ in taken]

    def _data_url(self, ref: str) -> str:
        url = self.cache.get(ref)
        if url is not None:
            return url
        digest, media = parse_ref(ref)
        data = self.fetch(digest)
        if data is None:
            raise StoreStorageError(f"a stored message refers to blob {digest}, which is gone")
        self.cache.reads += 1
        url = blob_data_url(media, data)
        self.cache.put(ref, url)
        return url

    def decode(self, body: bytes | str) -> Message:
        """The message of a stored ``body``, its blobs put back."""
        return join_blobs(decode_message(body), self._data_url)
