"""Errors of the test kit: the ``KitError`` branch of the tree.

::

    KitError            a test-kit failure (never raised itself)
    ├── StepTimeout     (TimeoutError) a TrioDriver step overran its real-time limit
    ├── TrioRunEnded    (RuntimeError) the TrioDriver's run is over
    └── ProbeCrash      what a Probe raises when told to Crash (a deliberate crash)
"""

from __future__ import annotations

from typing import ClassVar

from .._errors import AgcoreError


class KitError(AgcoreError):
    """Base class of the errors the test kit raises."""

    kind: ClassVar[str] = "test_kit"


class StepTimeout(KitError, TimeoutError):
    """A step did not finish within its real-time limit of ``seconds``.

    Typical causes: the step waits for something that never happens (with an
    autojumping clock and no pending deadline, virtual time cannot help), or
    it loops without blocking. The driver is unusable afterwards except for
    :meth:`TrioDriver.close`.
    """

    kind: ClassVar[str] = "step_timeout"

    def __init__(self, what: str, seconds: float) -> None:
        super().__init__(f"{what} did not finish within {seconds:g} real seconds")
        self.what = what
        self.seconds = seconds


class TrioRunEnded(KitError, RuntimeError):
    """The driver's trio run is over (closed, or ended by an earlier failure)."""

    kind: ClassVar[str] = "trio_run_ended"


class ProbeCrash(KitError):
    """What a probe raises when told to :class:`Crash`: a deliberate, abnormal exit."""

    kind: ClassVar[str] = "probe_crash"
