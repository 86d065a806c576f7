"""How many CPU threads the local model server runs: the cores free to it, now.

llama.cpp's threads meet at a barrier after every layer, so one thread descheduled by
another process stalls them all: on a busy machine more threads than free cores is
slower than one. :func:`pick_threads` is the policy (pure); :func:`free_cpu_threads`
reads the machine (the cores this process may run on, the load average).
"""

from __future__ import annotations

import math
import os


def pick_threads(cores: int, load: float) -> int:
    """The threads to run on ``cores`` usable cores while ``load`` runnable tasks (the
    1-minute load average) compete for them: the cores left free, rounded to the
    nearest, at least 1 and at most ``cores``.

    A nan or negative load counts as 0 (an idle machine); fewer than 1 core as 1.
    """
    cores = max(1, cores)
    if not load >= 0:  # nan, or negative
        load = 0.0
    free = cores - min(load, float(cores))
    return max(1, min(cores, math.floor(free + 0.5)))


def free_cpu_threads() -> int:
    """:func:`pick_threads` for this process's CPU affinity and the 1-minute load."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return pick_threads(cores, load)
