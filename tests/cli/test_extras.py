"""A missing extra is one line naming the extra to install, exit 2; never a traceback.

The commands run in a child Python where the extra's modules cannot be imported
(``sys.modules[name] = None``, as in an install without the extra). The installed
wheel is checked the same way by tests/packaging.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agcore_actors.cli._common import report
from agcore_actors.cli._extras import EXTRAS

ROOT = Path(__file__).resolve().parents[2]


def cli(
    blocked: tuple[str, ...], *argv: str, cwd: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    code = (
        f"import sys\nfor name in {list(blocked)!r}: sys.modules[name] = None\n"
        "from agcore_actors.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize("module", ["hypercorn", "prometheus_client"])
def test_serve_http_without_the_serve_extra_is_one_line_naming_it(
    module: str, tmp_path: Path
) -> None:
    done = cli((module,), "serve", "--http", "127.0.0.1:0", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"agcore-actors serve: missing_extra: serve --http needs the 'serve' extra"
        f" ({module} is not installed): pip install 'agcore-actors[serve]'"
    ]
    assert list(tmp_path.iterdir()) == []  # checked before any work


def test_serve_stdio_runs_without_the_serve_extra(tmp_path: Path) -> None:
    config = tmp_path / "agcore.toml"
    config.write_text(
        '[providers.fake]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    argv = ("serve", "--stdio", "--store", str(tmp_path / "s.db"))
    done = cli(("hypercorn", "prometheus_client"), *argv, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, ""), done.stderr


def test_memory_search_with_embeddings_but_without_the_extra_is_one_line_exit_2(
    tmp_path: Path,
) -> None:
    (tmp_path / "memory.db").write_bytes(b"")
    done = cli(
        ("wordllama",),
        "memory",
        "search",
        str(tmp_path / "memory.db"),
        "query",
        "--mode",
        "bm25_embeddings",
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "agcore-actors memory search: missing_extra: memory search --mode bm25_embeddings"
        " needs the 'embeddings' extra (wordllama is not installed):"
        " pip install 'agcore-actors[embeddings]'"
    ]


@pytest.mark.parametrize("module", sorted(EXTRAS))
def test_an_extra_module_missing_anywhere_is_one_line_exit_2(
    module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    exc = ModuleNotFoundError(f"No module named '{module}'", name=f"{module}.sub")
    assert report("agcore-actors serve", exc) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("agcore-actors serve: missing_extra: serve needs the ")
    assert line.endswith(f"pip install 'agcore-actors[{EXTRAS[module]}]'")


def test_a_module_of_no_extra_missing_keeps_its_traceback() -> None:
    exc = ModuleNotFoundError("No module named 'nope'", name="nope")
    assert report("agcore-actors run", exc) is None
