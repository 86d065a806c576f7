"""The extras: pyproject.toml, the CLI's table of them and docs/extras.md agree."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from agcore_actors.cli._extras import EXTRAS

ROOT = Path(__file__).resolve().parents[2]
OPTIONAL: dict[str, list[str]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
    "optional-dependencies"
]


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0].lower().replace("-", "_")


def test_every_extra_is_a_row_of_the_extras_page() -> None:
    page = (ROOT / "docs" / "extras.md").read_text()
    rows = set(re.findall(r"^\| `([a-z-]+)` \|", page, flags=re.MULTILINE))
    assert rows == set(OPTIONAL)


def test_each_module_the_cli_maps_to_an_extra_is_installed_by_that_extra() -> None:
    for module, extra in EXTRAS.items():
        names = [_name(r) for r in OPTIONAL[extra]]
        assert any(name.startswith(module) for name in names), (module, extra, names)
