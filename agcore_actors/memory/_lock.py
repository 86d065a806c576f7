"""One writer per store file: an exclusive advisory lock on ``<file>-lock``.

Two writers on one file would break the store's bounds: each keeps its capacity
count, its sequence counter and its pending use statistics for itself (a
``Capacity(200)`` shared by two processes ended with 374 items, and one LRU
evicted what the other had just used). So a :class:`SqliteBackend` takes this
lock for as long as it is open, and a second one, in this process or another,
is refused at once with :class:`StoreInUse`. Readers do not take it (WAL lets
them read while the writer writes).

The lock is ``flock(2)`` on a file of its own beside the database (never on the
database, whose POSIX locks are SQLite's), so it goes with its holder: on close,
or when the process dies, however it dies. Where ``fcntl`` does not exist (not a
POSIX system) there is no lock.

A lock file that cannot be created (a missing directory, no permission, a
read-only file system) is :class:`StorageUnavailable`, as SQLite's own "cannot
open" is: the typed error, never a raw :class:`OSError`.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ._errors import StorageUnavailable, StoreInUse

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]


class WriterLock:
    """Held from construction to :meth:`release` (idempotent)."""

    def __init__(self, database: Path) -> None:
        self.path = Path(f"{database}-lock")
        self._fd: int | None = None
        if fcntl is None or str(database) in ("", ":memory:"):
            return
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StorageUnavailable(
                f"cannot open the lock file {self.path}: {exc.strerror or exc}"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreInUse(
                f"{database} is open for writing elsewhere (in this process or another); "
                "one store per file"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)  # closing the descriptor releases the lock
