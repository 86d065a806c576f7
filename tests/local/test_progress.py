"""Progress lines on stderr: one per stage, joins every 20 % and at the end."""

from __future__ import annotations

import io

from agcore_actors.local import ProgressEvent, StderrProgress


def test_stderr_progress_prints_each_stage_and_joins_in_steps() -> None:
    out = io.StringIO()
    progress = StderrProgress(out)
    mb = 1024 * 1024
    progress(ProgressEvent(stage="download", model="m", detail="6 parts"))
    for done in range(0, 101, 5):
        progress(ProgressEvent(stage="join", model="m", done=done * mb, total=100 * mb))
    progress(ProgressEvent(stage="start", model="m"))
    progress(ProgressEvent(stage="ready", model="m", seconds=2.34, detail="http://h:1/v1"))
    assert out.getvalue().splitlines() == [
        "agcore-actors: downloading the parts of m (6 parts)",
        "agcore-actors: joining m: 20% (20/100 MB)",
        "agcore-actors: joining m: 40% (40/100 MB)",
        "agcore-actors: joining m: 60% (60/100 MB)",
        "agcore-actors: joining m: 80% (80/100 MB)",
        "agcore-actors: joining m: 100% (100/100 MB)",
        "agcore-actors: starting the local model server (m)",
        "agcore-actors: local model m ready in 2.3 s at http://h:1/v1",
    ]
