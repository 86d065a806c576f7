"""The prompt prefix's KV cache kept across server starts (llama.cpp slot save/restore).

A CPU model spends most of a first answer reading its prompt, and an agent's prompt
starts with the same system message and tool schemas on every run. :class:`PrefixCache`
wraps the local provider: the first time a request's *prefix* (its leading system
messages and its tools) is seen by a server, it either restores that prefix's saved KV
cache into the server's slot (well under a second), or warms it — one request of the
prefix alone, one token long — and saves the slot; the real request then reuses the
prefix (``cache_prompt``). Only the prefix is saved, never a user's messages.

Guarantees:

- Keyed (:func:`prefix_key`) by the model's identity (file, size, mtime, chat template,
  context size) and the prefix's exact JSON: a changed prompt, tools or model never
  restores another prefix (a restored prefix llama.cpp would also compare token by
  token before reusing it).
- A file is restored only when its SHA-256 matches the one written beside it after the
  save: a corrupt, truncated or foreign file is deleted and the prefix warmed again.
- Every failure of the cache (a refused restore or save, an unreadable directory) is
  logged and ignored: the request is sent as it would be without the cache.
- Cancellation: a cancelled warm or restore leaves at worst a slot to be recomputed by
  the next request; files are written by the server and checked by their checksum, so a
  torn save is ignored at the next start.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from pathlib import Path

import attrs
import httpx2
import msgspec
import trio

from ..llm import ChatRequest, ChatResponse, LlmError, Provider, SystemMessage, user
from ..llm.wire import ChatDelta, ReadLimits
from ._progress import Progress, ProgressEvent

log = logging.getLogger("agcore_actors.local")

#: Bumped when what a key covers changes.
_FORMAT = "agcore-prefix-1"


def prefix_of(request: ChatRequest) -> ChatRequest | None:
    """The request's prefix: its leading system messages and its tools, as a request of
    one token; None when it has neither (nothing worth keeping)."""
    head = []
    for message in request.messages:
        if not isinstance(message, SystemMessage):
            break
        head.append(message)
    if not head and not request.tools:
        return None
    return ChatRequest(
        messages=[*head, user(".")],
        model=request.model,
        tools=request.tools,
        tool_choice=request.tool_choice if request.tools else None,
        max_tokens=1,
        temperature=0.0,
    )


def prefix_key(identity: str, prefix: ChatRequest) -> str:
    """The file name stem for ``prefix`` served by the model ``identity``: a SHA-256 of
    both (see the module doc)."""
    body = {
        "format": _FORMAT,
        "model": identity,
        "messages": msgspec.to_builtins(prefix.messages),
        "tools": msgspec.to_builtins(prefix.tools),
    }
    blob = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:40]


def model_identity(path: Path, chat_template: str | None, n_ctx: int) -> str:
    """What a saved KV cache depends on besides the prompt: the model file (by path,
    size and modification time), the chat template and the context size."""
    stat = path.stat()
    template = hashlib.sha256((chat_template or "").encode()).hexdigest()
    return f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{template}|{n_ctx}"


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def verified(directory: Path, key: str) -> bool:
    """Whether ``key``'s slot file is there and matches its checksum; a file that does
    not (corrupt, truncated, foreign) is deleted with its checksum."""
    data, check = directory / f"{key}.bin", directory / f"{key}.sha256"
    try:
        if check.read_text("ascii").strip() == file_digest(data):
            return True
    except (OSError, UnicodeDecodeError):
        pass
    for stale in (data, check):
        stale.unlink(missing_ok=True)
    return False


@attrs.define
class PrefixCache:
    """Wraps the local model's provider; see the module doc. ``server_url``: the
    server's root (no ``/v1``); ``directory``: its ``slot_save_path``."""

    inner: Provider
    server_url: str
    api_key: str
    identity: str
    directory: Path
    progress: Progress | None = None
    _ready: set[str] = attrs.field(factory=set, init=False)
    _lock: trio.Lock = attrs.field(factory=trio.Lock, init=False)

    @property
    def name(self) -> str:
        return self.inner.name

    async def chat(self, client: httpx2.AsyncClient, request: ChatRequest) -> ChatResponse:
        await self._prepare(client, request)
        return await self.inner.chat(client, request)

    async def stream(
        self, client: httpx2.AsyncClient, request: ChatRequest, limits: ReadLimits
    ) -> AsyncGenerator[ChatDelta, None]:
        await self._prepare(client, request)
        async with aclosing(self.inner.stream(client, request, limits)) as deltas:
            async for delta in deltas:
                yield delta

    async def _prepare(self, client: httpx2.AsyncClient, request: ChatRequest) -> None:
        prefix = prefix_of(request)
        if prefix is None:
            return
        key = prefix_key(self.identity, prefix)
        if key in self._ready:
            return
        async with self._lock:
            if key in self._ready:
                return
            self._ready.add(key)  # one try per prefix and server: a failure is not retried
            started = trio.current_time()
            if await trio.to_thread.run_sync(verified, self.directory, key):
                if await self._slot(client, "restore", key):
                    self._report("restored", started)
                    return
                await trio.to_thread.run_sync(_forget, self.directory, key)
            self._report("warming", started)
            try:
                await self.inner.chat(client, prefix)
            except LlmError as exc:
                log.info("the prompt prefix was not warmed: %s", exc)
                return
            if await self._slot(client, "save", key):
                digest = await trio.to_thread.run_sync(file_digest, self.directory / f"{key}.bin")
                (self.directory / f"{key}.sha256").write_text(digest, "ascii")
            self._report("warmed", started)

    async def _slot(self, client: httpx2.AsyncClient, action: str, key: str) -> bool:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            response = await client.post(
                f"{self.server_url}/slots/0?action={action}",
                json={"filename": f"{key}.bin"},
                headers={**headers, "Connection": "close"},
            )
        except httpx2.HTTPError as exc:  # the cache is optional
            log.info("slot %s of the prompt prefix failed: %r", action, exc)
            return False
        if response.status_code != 200:
            log.info("slot %s of the prompt prefix refused: %s", action, response.text[:200])
            return False
        return True

    def _report(self, what: str, started: float) -> None:
        if self.progress is not None:
            seconds = trio.current_time() - started
            self.progress(ProgressEvent(stage="prefix", model="", seconds=seconds, detail=what))


def _seal(directory: Path, key: str) -> None:
    """Write the checksum of a slot file the server just saved (a failure: no cache)."""
    try:
        digest = file_digest(directory / f"{key}.bin")
        (directory / f"{key}.sha256").write_text(digest, "ascii")
    except OSError as exc:
        log.info("the prompt prefix was not saved: %s", exc)


def _forget(directory: Path, key: str) -> None:
    for suffix in (".bin", ".sha256"):
        (directory / f"{key}{suffix}").unlink(missing_ok=True)
