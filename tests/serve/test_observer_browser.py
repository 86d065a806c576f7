"""The observer page in headless Chromium (Debian's ``chromium``) while 50 sessions run:
the counts and the tree it renders match ``system.snapshot()`` and the host's snapshot;
a screenshot is saved under the test's temporary directory."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import httpx2
import pytest
import trio

from tests.serve.runtime import served
from tests.serve.test_observer import busy

CHROMIUM = shutil.which("chromium") or "chromium"
pytestmark = pytest.mark.slow


async def hold(client: httpx2.AsyncClient, session: str) -> None:
    r = await client.post(
        f"/v1/sessions/{session}/turns",
        json={"text": "hold"},
        headers={"accept": "application/json"},
    )
    assert r.json()["status"] == "cancelled"


async def chromium(*args: str) -> str:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=4000"]
    result = await trio.run_process(
        [CHROMIUM, *flags, *args], capture_stdout=True, capture_stderr=True
    )
    return result.stdout.decode()


async def test_the_page_in_chromium_shows_the_snapshots_while_50_sessions_run(
    tmp_path: Path,
) -> None:
    async with served() as s, s.client(timeout=60) as client:
        async with trio.open_nursery() as nursery:
            for i in range(50):
                nursery.start_soon(hold, client, f"s{i}")
            with trio.fail_after(10):
                await busy(s.host, 50)
            page = f"{s.url}/observer#access_token={s.config.token}"
            dom = await chromium("--dump-dom", page)
            shot = tmp_path / "observer.png"
            await chromium(f"--screenshot={shot}", "--window-size=1200,1400", page)
            tree = s.host.system.snapshot()
            host = s.host.snapshot()
            for i in range(50):
                await client.post(f"/v1/sessions/s{i}/cancel")
        assert 'data-loaded="yes"' in dom

        def count(name: str) -> int:
            match = re.search(rf'id="count-{name}" data-value="(\d+)"', dom)
            assert match, name
            return int(match.group(1))

        assert count("live") == host.live == 50
        assert count("busy") == host.busy == 50
        assert count("idle") == 0
        shown = re.search(r'id="tree-count">(\d+)<', dom)
        assert shown and int(shown.group(1)) == len(tree)
        rows = re.findall(r'<tr class="kind-(actor|supervisor)">', dom)
        assert len(rows) == len(tree)
        assert sum(r.kind == "supervisor" for r in tree) == rows.count("supervisor")
        assert shot.stat().st_size > 10_000
