"""The summary step's pure parts: a clipped summary costs what it keeps."""

from __future__ import annotations

import time

import pytest

from agcore_actors.context.policy import clip_summary, estimate_text_tokens


@pytest.mark.exclusive
def test_clipping_a_huge_summary_costs_what_it_keeps() -> None:
    # A model that ignores max_tokens can answer megabytes.
    huge = "Progress: the committee met and decided things.\n" * 85_000  # ~4 MB
    start = time.perf_counter()
    clipped = clip_summary(huge, 1_024)
    elapsed = time.perf_counter() - start
    assert estimate_text_tokens(clipped) <= 1_024
    assert estimate_text_tokens(clipped) > 900 and clipped.endswith("things.")
    assert elapsed < 0.5, f"{elapsed:.2f} s for a 4 MB summary"


def test_a_summary_within_the_bound_is_kept_whole() -> None:
    text = "Goal: add numbers.\nOpen: nothing."
    assert clip_summary(text, 1_024) == text
