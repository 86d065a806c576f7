"""docs/feature-map.md names real things: every dotted ``agcore_actors...`` name resolves to
an object of the code, and every ``examples/`` or ``tests/`` path exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import attrs
import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "feature-map.md"
TEXT = PAGE.read_text()
NAMES = sorted(set(re.findall(r"`(agcore_actors(?:\.\w+)+)`", TEXT)))
PATHS = sorted(set(re.findall(r"`((?:examples|tests)/[\w/.]+)`", TEXT)))


def resolve(dotted: str) -> Any:
    """The object ``dotted`` names: the longest importable module, then attributes (a
    field of an attrs class or msgspec Struct counts as an attribute)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            if hasattr(obj, name):
                obj = getattr(obj, name)
            elif attrs.has(obj) and name in attrs.fields_dict(obj):
                obj = attrs.fields_dict(obj)[name]
            elif name in getattr(obj, "__struct_fields__", ()):
                obj = (obj, name)
            else:
                raise AttributeError(f"{dotted}: no {name!r}")
        return obj
    raise ModuleNotFoundError(dotted)


def test_the_page_names_things() -> None:
    assert len(NAMES) > 100 and len(PATHS) >= 5


@pytest.mark.parametrize("dotted", NAMES)
def test_every_name_on_the_feature_map_exists(dotted: str) -> None:
    resolve(dotted)


@pytest.mark.parametrize("path", PATHS)
def test_every_path_on_the_feature_map_exists(path: str) -> None:
    assert (ROOT / path).exists()


def test_a_missing_name_is_caught() -> None:
    with pytest.raises(AttributeError):
        resolve("agcore_actors.agent.NoSuchThing")
    with pytest.raises(AttributeError):
        resolve("agcore_actors.llm.OpenAIConfig.no_such_field")
