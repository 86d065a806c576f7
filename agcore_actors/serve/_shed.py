"""How long a refused client is told to wait: ``Retry-After`` that grows while refusals
outpace the turns that complete, and shrinks back once they do not.

Pure policy on plain numbers (no trio, no I/O): the HTTP server calls :meth:`Backoff.refused`
for each 429/503 and :meth:`Backoff.completed` for each turn that ends, with the time.
A refusal is cheap but not free; thousands of clients each retrying every second would
spend the server's CPU on refusals and slow the turns it admitted. Within each window of
``window`` seconds: more refusals than completions doubles the wait (up to ``ceiling``),
fewer than a quarter of them halves it (down to ``floor``). Waits handed out are spread
over [wait/2, wait*3/2) so refused clients do not come back in one burst.
"""

from __future__ import annotations

import math

import attrs

__all__ = ["Backoff"]


@attrs.define
class Backoff:
    """See the module docstring."""

    #: Shortest wait, seconds.
    floor: int = 1
    #: Longest wait, seconds.
    ceiling: int = 60
    #: Seconds over which refusals and completions are compared.
    window: float = 1.0
    wait: float = attrs.field(default=0.0)
    _refused: int = 0
    _completed: int = 0
    _since: float | None = None
    _handed: int = 0

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.floor <= self.ceiling:
            raise ValueError(f"need 1 <= floor <= ceiling, not {self.floor}, {self.ceiling}")
        self.wait = max(self.wait, float(self.floor))

    def _roll(self, now: float) -> None:
        if self._since is None:
            self._since = now
            return
        if now - self._since < self.window:
            return
        if self._refused > self._completed:
            self.wait = min(self.wait * 2, float(self.ceiling))
        elif self._refused * 4 < self._completed or not self._refused:
            self.wait = max(self.wait / 2, float(self.floor))
        self._refused = self._completed = 0
        self._since = now

    def refused(self, now: float) -> int:
        """Count a refusal at ``now``; the whole seconds its client should wait."""
        self._roll(now)
        self._refused += 1
        self._handed += 1
        spread = 0.5 + (self._handed % 8) / 8  # 0.5 .. 1.375
        return max(self.floor, min(self.ceiling, math.ceil(self.wait * spread)))

    def completed(self, now: float) -> None:
        """Count a turn that ended at ``now``."""
        self._roll(now)
        self._completed += 1
