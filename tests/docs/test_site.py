"""The documentation site builds with ``mkdocs build --strict`` (any warning fails it: a
broken link or anchor, a page missing from the nav, a docstring mkdocstrings cannot parse),
and the generated parts are there: the API reference of every public module, the CLI
reference, the examples' code."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.library import public_modules

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    return out


def page(site: Path, name: str) -> str:
    return (site / name / "index.html").read_text()


def test_every_public_module_has_an_api_reference_page() -> None:
    documented = set()
    for api_page in (DOCS / "api").glob("*.md"):
        documented |= set(re.findall(r"^::: ([\w.]+)$", api_page.read_text(), re.M))
    public = {m.__name__ for m in public_modules()}
    missing, stale = sorted(public - documented), sorted(documented - public)
    assert not missing, f"add `::: NAME` to docs/api/<package>.md (and the nav): {missing}"
    assert not stale, f"docs/api documents modules that are not public: {stale}"


@pytest.mark.slow
def test_the_site_builds_strictly_with_every_generated_part(site: Path) -> None:
    agent = page(site, "api/agent")
    assert 'id="agcore_actors.agent.SessionHost"' in agent
    assert 'id="agcore_actors.agent.messages.SubmitTurn"' in agent
    # Sphinx roles in docstrings became code (and links where the target is documented).
    assert not any(":class:<code>" in page(site, f"api/{p.stem}") for p in DOCS.glob("api/*.md"))
    assert 'href="#agcore_actors.agent.messages"' in agent
    cli = page(site, "cli")
    assert "<code>agcore-actors llm complete</code>" in cli and "usage: agcore-actors" in cli
    examples = page(site, "examples")
    assert "get_weather" in examples and "test_my_retry_policy" in examples
    # A page's link to a source file points at the package's API page instead.
    assert 'href="../api/store/"' in page(site, "store")
