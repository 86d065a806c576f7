"""Errors of the embedded local model: making its file, starting and running its server.

::

    LocalModelError                  local_model
    ├── LocalModelNotFound           (LookupError) no file, no parts, no download
    ├── LocalModelIntegrityError     (ValueError) a part or the joined file fails its pins
    ├── LocalRuntimeMissing          (LookupError) the Python has no xllamacpp
    ├── LocalServerStartFailed       the server process exited before it was ready
    ├── LocalServerStartTimeout      (TimeoutError) not ready within ``seconds``
    └── LocalServerExited            the running server process died

Each is raised out of the actor's start (or, for :class:`LocalServerExited`, out of its
watcher), so it is a crash: the supervisor restarts the actor with backoff, and gives
up after its restart intensity. A missing model or runtime will not come back by
itself, so those two are not retryable.
"""

from __future__ import annotations

from .._errors import AgcoreError


class LocalModelError(AgcoreError):
    """Base of every error of :mod:`agcore_actors.local`."""

    kind = "local_model"


class LocalModelNotFound(LocalModelError, LookupError):
    """The model file is missing and cannot be made (no parts installed, download off
    or failed)."""

    kind = "local_model_not_found"

    def __init__(self, model: str, detail: str) -> None:
        super().__init__(f"local model {model}: {detail}")
        self.model = model
        self.detail = detail


class LocalModelIntegrityError(LocalModelError, ValueError):
    """A downloaded part or the joined file does not match its pinned size or sha256."""

    kind = "local_model_integrity"

    def __init__(self, model: str, detail: str) -> None:
        super().__init__(f"local model {model}: {detail}")
        self.model = model
        self.detail = detail


class LocalRuntimeMissing(LocalModelError, LookupError):
    """The configured Python cannot import xllamacpp (install ``agcore-actors[local]``)."""

    kind = "local_runtime_missing"

    def __init__(self, python: str, detail: str = "") -> None:
        hint = "install it with: pip install 'agcore-actors[local]'"
        super().__init__(
            f"{python} cannot import xllamacpp ({hint}){': ' + detail if detail else ''}"
        )
        self.python = python


class LocalServerStartFailed(LocalModelError):
    """The server process exited before it was ready; ``stderr`` is the tail of its
    output."""

    kind = "local_server_start_failed"

    def __init__(self, returncode: int | None, stderr: str) -> None:
        super().__init__(f"the local model server exited with status {returncode}: {stderr}")
        self.returncode = returncode
        self.stderr = stderr

    def is_retryable(self) -> bool:
        return True


class LocalServerStartTimeout(LocalModelError, TimeoutError):
    """The server was not ready (``GET /health`` answering 200) within ``seconds``."""

    kind = "local_server_start_timeout"

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the local model server was not ready within {seconds:g} s")
        self.seconds = seconds

    def is_retryable(self) -> bool:
        return True


class LocalServerExited(LocalModelError):
    """The running server process died (killed, crashed); the actor crashes with it and
    its supervisor starts a new one."""

    kind = "local_server_exited"

    def __init__(self, pid: int, returncode: int | None, stderr: str = "") -> None:
        tail = f": {stderr}" if stderr else ""
        super().__init__(
            f"the local model server (pid {pid}) exited with status {returncode}{tail}"
        )
        self.pid = pid
        self.returncode = returncode
        self.stderr = stderr

    def is_retryable(self) -> bool:
        return True
