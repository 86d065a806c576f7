"""LocalModelServer: llama.cpp's OpenAI-compatible server as a supervised child process.

Semantics:

- ``on_start`` finds (or makes) the model file, launches the server in a process
  group of its own, reads its URL and polls ``GET /health`` until it answers 200,
  all within ``start_timeout`` (the file's making is not counted). Until then the
  actor reads no message: a :class:`~.messages.GetEndpoint` waits in the mailbox.
- The spec's own start bound (:func:`start_bound`) is ``start_timeout`` plus a margin,
  plus ``prepare_timeout`` while the model file is still to be made: a catalog model's
  first use (fetch, join, verify: minutes for a 1 GB file) never counts against the
  server's start. :func:`prepare_model` makes the file before the actor starts, with
  progress, and gives a config whose spec has the short bound.
- A watcher task waits for the process: when it exits, the actor crashes with
  :class:`LocalServerExited`, and its supervisor starts a new server after its
  backoff (give :func:`local_model_spec` to a supervisor with the backoff you want).
- Requests in flight to a server that dies fail in the HTTP client that sent them
  (a connection error; the LLM layer raises its typed connection or stream error).
- The port and the API key are chosen once per spec and reused by every restart, so
  a client's base URL stays valid whenever the port is still free.

Cancellation: ``on_stop`` runs for every incarnation that launched a process — a
normal stop, a crash, a failed start, or a cancellation — and terminates the whole
process group and reaps it (:func:`._process.stop_group`, shielded, bounded by
``stop_grace``). The server also exits by itself when our end of its stdin closes,
so it does not outlive this process even after a SIGKILL of it.

Errors: every start failure is a crash of the actor (see :mod:`._errors`); nothing is
an expected error of ``GetEndpoint``, which cannot fail.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import secrets
import sys
from pathlib import Path
from typing import assert_never

import attrs
import httpx2
import trio

from ..actor import Actor, ChildSpec, Restart
from ._errors import LocalServerExited, LocalServerStartTimeout
from ._parts import cached, default_cache_dir
from ._prefix import model_identity
from ._process import ServerProcess, launch, stop_group
from ._progress import Progress, ProgressEvent, StderrProgress
from ._source import CatalogModel, GgufFile, ModelSource, ResolvedModel, resolve_model
from ._threads import free_cpu_threads
from .messages import Endpoint, GetEndpoint, LocalModelMsg

log = logging.getLogger("agcore_actors.local")


def _positive_int(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if not isinstance(value, int) or value < 1:
        raise ValueError(f"{attribute.name} must be an integer >= 1, not {value!r}")


def _seconds(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise ValueError(f"{attribute.name} must be > 0 seconds, not {value!r}")


@attrs.frozen(kw_only=True)
class LocalModelConfig:
    """How to run the local model server."""

    #: The model: a catalog model (default: the 1.5B) or a GGUF file.
    source: ModelSource = attrs.field(factory=CatalogModel)
    #: The Python that runs the server (it must import xllamacpp); None: this one.
    python: str | None = None
    #: Context window in tokens (prompt plus answer); the KV cache is sized for it.
    n_ctx: int = attrs.field(default=8192, validator=_positive_int)
    #: CPU threads for prompt and generation; None: the cores free when the server
    #: starts (:func:`~agcore_actors.local.pick_threads`: 1 on a busy machine).
    threads: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(_positive_int)
    )
    #: Keep the prompt prefix's KV cache (system prompt and tools) across starts, in
    #: ``prefix_dir`` (see :class:`~agcore_actors.local.PrefixCache`).
    prefix_cache: bool = True
    #: Where the saved prefixes live; None: ``prefix/`` beside the per-user model cache.
    prefix_dir: Path | None = None
    #: Address to listen on (keep it on loopback).
    host: str = "127.0.0.1"
    #: Port to listen on; 0: a free one, chosen at the first start and kept.
    port: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    #: Require a random bearer token (in :class:`Endpoint`) on the ``/v1`` routes, so
    #: other local users and web pages cannot use the server.
    require_api_key: bool = True
    #: Seconds from launch until ``GET /health`` must answer 200.
    start_timeout: float = attrs.field(default=120.0, validator=_seconds)
    #: Seconds the first use may take to fetch, join and verify a catalog model in
    #: ``on_start`` (counted in the spec's start bound, never in ``start_timeout``).
    prepare_timeout: float = attrs.field(default=3600.0, validator=_seconds)
    #: Seconds between SIGTERM and SIGKILL when the server is stopped.
    stop_grace: float = attrs.field(default=5.0, validator=_seconds)
    #: llama.cpp's log level on stderr (2: warnings and errors), kept for error messages.
    verbosity: int = 2
    #: Called with each step of the start; None: silent.
    progress: Progress | None = attrs.field(factory=StderrProgress)


@attrs.define
class _Shared:
    """What outlives incarnations of one spec: the port, the key, the resolved file."""

    port: int
    api_key: str
    model: ResolvedModel | None = None


class LocalModelServer(Actor[LocalModelMsg]):
    """See the module doc. Make its spec with :func:`local_model_spec`."""

    background_tasks = True

    def __init__(self, config: LocalModelConfig, shared: _Shared) -> None:
        self.config = config
        self._shared = shared
        self._server: ServerProcess | None = None
        self._endpoint: Endpoint | None = None

    @property
    def _python(self) -> str:
        return self.config.python or sys.executable

    async def on_start(self) -> None:
        config, shared = self.config, self._shared
        if shared.model is None:
            shared.model = await resolve_model(
                config.source, python=self._python, progress=config.progress
            )
        model = shared.model
        self._report(ProgressEvent(stage="start", model=model.alias))
        prefix_dir = self._prefix_dir()
        started = trio.current_time()
        self._server = server = await launch(self._python, self._options(model, prefix_dir))
        self.ctx.nursery.start_soon(server.drain_stderr)
        with trio.move_on_after(config.start_timeout) as scope:
            url = await server.read_url()
            async with httpx2.AsyncClient(timeout=httpx2.Timeout(5.0), trust_env=False) as client:
                await server.wait_healthy(client)
        if scope.cancelled_caught:
            raise LocalServerStartTimeout(config.start_timeout)
        shared.port = int(url.rsplit(":", 1)[1])
        self._endpoint = Endpoint(
            base_url=url + "/v1",
            api_key=shared.api_key,
            model=model.alias,
            path=str(model.path),
            n_ctx=config.n_ctx,
            pid=server.pid,
            restarts=self.ctx.restarts,
            headers={"Connection": "close"},
            prefix_dir="" if prefix_dir is None else str(prefix_dir),
            identity=model_identity(model.path, model.chat_template, config.n_ctx),
        )
        self.ctx.nursery.start_soon(server.drain_stdout)
        self.ctx.nursery.start_soon(self._watch, server)
        elapsed = trio.current_time() - started
        self._report(
            ProgressEvent(stage="ready", model=model.alias, seconds=elapsed, detail=url + "/v1")
        )

    def _prefix_dir(self) -> Path | None:
        """The slot directory, made now; None when the cache is off or cannot be made."""
        config = self.config
        if not config.prefix_cache:
            return None
        directory = config.prefix_dir or default_cache_dir().parent / "prefix"
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            log.warning("no prompt prefix cache: cannot make %s: %s", directory, exc)
            return None
        return directory

    def _options(self, model: ResolvedModel, prefix_dir: Path | None) -> dict[str, object]:
        config = self.config
        threads = config.threads or free_cpu_threads()
        return {
            "model": str(model.path),
            "alias": model.alias,
            "chat_template": model.chat_template,
            "n_ctx": config.n_ctx,
            "threads": threads,
            # llama.cpp joins the path and the file name without a separator
            "slot_save_path": "" if prefix_dir is None else str(prefix_dir) + os.sep,
            "host": config.host,
            "port": self._shared.port,
            "api_key": self._shared.api_key,
            "verbosity": config.verbosity,
        }

    def _report(self, event: ProgressEvent) -> None:
        if self.config.progress is not None:
            self.config.progress(event)

    async def _watch(self, server: ServerProcess) -> None:
        code = await server.process.wait()
        await trio.sleep(0.05)  # let the stderr reader take the last lines
        raise LocalServerExited(server.pid, code, server.tail())

    async def handle(self, msg: LocalModelMsg) -> Endpoint:
        match msg:
            case GetEndpoint():
                return self._on_get_endpoint(msg)
            case _:
                assert_never(msg)

    def _on_get_endpoint(self, msg: GetEndpoint) -> Endpoint:
        assert self._endpoint is not None  # set by on_start, before any message
        return self._endpoint

    async def on_stop(self, reason: BaseException | None) -> None:
        if self._server is not None:
            await stop_group(self._server, self.config.stop_grace)
            self._server = None


#: The actor's start beyond ``start_timeout``: launching the process and its handshake.
START_MARGIN = 10.0


def is_prepared(source: ModelSource) -> bool:
    """Whether ``source``'s file is there to serve (a GGUF file, or a catalog model
    already joined in its cache); a stat, no hashing."""
    if isinstance(source, GgufFile):
        return True
    return cached(source.entry, source.cache_dir or default_cache_dir()) is not None


def start_bound(config: LocalModelConfig) -> float:
    """The spec's ``start_timeout``: ``config.start_timeout`` + :data:`START_MARGIN`, plus
    ``config.prepare_timeout`` when the model file is still to be made."""
    bound = config.start_timeout + START_MARGIN
    return bound if is_prepared(config.source) else bound + config.prepare_timeout


async def prepare_model(config: LocalModelConfig) -> LocalModelConfig:
    """``config`` with its model file made now (fetched, joined and verified the first
    time, reporting to ``config.progress``) and its source that file, so that a spec of
    the result starts within ``start_timeout`` + :data:`START_MARGIN`.

    Raises what :func:`resolve_model` raises.
    """
    if isinstance(config.source, GgufFile):
        return config
    model = await resolve_model(
        config.source, python=config.python or sys.executable, progress=config.progress
    )
    source = GgufFile(path=model.path, chat_template=model.chat_template, alias=model.alias)
    return attrs.evolve(config, source=source)


def local_model_spec(
    name: str = "local-model",
    *,
    config: LocalModelConfig | None = None,
    restart: Restart = Restart.PERMANENT,
) -> ChildSpec[LocalModelMsg]:
    """The child spec of a :class:`LocalModelServer`, with :func:`start_bound` as its
    start timeout.

    Its shutdown grace covers ``stop_grace`` twice over (SIGTERM, then SIGKILL and the
    reap), so a stop never abandons the process group.
    """
    config = config or LocalModelConfig()
    api_key = secrets.token_urlsafe(24) if config.require_api_key else ""
    shared = _Shared(port=config.port, api_key=api_key)
    return ChildSpec(
        name,
        functools.partial(LocalModelServer, config, shared),
        restart=restart,
        start_timeout=start_bound(config),
        shutdown=2 * config.stop_grace + 1 if math.isfinite(config.stop_grace) else math.inf,
    )
