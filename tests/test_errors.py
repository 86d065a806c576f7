"""One error tree: every error class of the library is under ``AgcoreError``, has a
stable ``kind`` of its own, and follows the builtin-mixin rules; docs/errors.md draws
the tree as built.

Regenerate the drawing with ``python -m tests.test_errors``.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest

from agcore_actors import AgcoreError
from tests.library import all_modules

DOC = Path(__file__).resolve().parents[1] / "docs" / "errors.md"
BEGIN, END = "<!-- tree: begin -->", "<!-- tree: end -->"


def error_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module in all_modules():
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, BaseException)
                and obj.__module__.startswith("agcore_actors")
            ):
                found[obj.__qualname__ + "@" + obj.__module__] = obj
    return sorted(set(found.values()), key=lambda c: (c.__module__, c.__qualname__))


ERRORS = error_classes()


def _id(cls: type) -> str:
    return cls.__qualname__


@pytest.mark.parametrize("cls", ERRORS, ids=_id)
def test_every_error_is_an_agcore_error_with_its_own_kind(cls: type[BaseException]) -> None:
    assert issubclass(cls, AgcoreError), f"{cls.__module__}.{cls.__qualname__}"
    assert "kind" in vars(cls), f"{cls.__qualname__} does not declare its own kind"
    assert isinstance(vars(cls)["kind"], str) and vars(cls)["kind"]


def test_kinds_are_unique() -> None:
    owners: dict[str, list[str]] = {}
    for cls in ERRORS:
        owners.setdefault(str(vars(cls).get("kind")), []).append(cls.__qualname__)
    shared = {kind: names for kind, names in owners.items() if len(names) > 1}
    assert not shared, f"kinds used by more than one class: {shared}"


@pytest.mark.parametrize("cls", [c for c in ERRORS if "Timeout" in c.__name__], ids=_id)
def test_every_timeout_is_a_timeout_error_with_seconds(cls: type[BaseException]) -> None:
    assert issubclass(cls, TimeoutError)
    takes_seconds = "seconds" in inspect.signature(cls).parameters
    assert takes_seconds or isinstance(getattr(cls, "seconds", None), property)


@pytest.mark.parametrize(
    "cls", [c for c in ERRORS if "NotFound" in c.__name__ or "NoSuch" in c.__name__], ids=_id
)
def test_every_not_found_is_a_lookup_error(cls: type[BaseException]) -> None:
    assert issubclass(cls, LookupError)


def draw_tree() -> str:
    """The tree of error classes, one line per class: name, kind, public module."""
    lines: list[str] = []

    def walk(cls: type[BaseException], prefix: str, last: bool, root: bool) -> None:
        mixins = [b.__name__ for b in cls.__bases__ if not issubclass(b, AgcoreError)]
        extra = f" ({', '.join(mixins)})" if mixins else ""
        label = f"{cls.__name__}{extra}  `{vars(cls).get('kind')}`  {cls.__module__}"
        lines.append(label if root else prefix + ("└── " if last else "├── ") + label)
        children = [c for c in ERRORS if cls in c.__bases__]
        children.sort(key=lambda c: (c.__module__, c.__name__))
        inner = "" if root else prefix + ("    " if last else "│   ")
        for i, child in enumerate(children):
            walk(child, inner, i == len(children) - 1, False)

    walk(AgcoreError, "", True, True)
    return "\n".join(lines)


def _doc_tree(text: str) -> str:
    start, end = text.index(BEGIN), text.index(END)
    return text[start + len(BEGIN) : end].strip().removeprefix("```").removesuffix("```").strip()


def test_docs_draw_the_tree_as_built() -> None:
    assert _doc_tree(DOC.read_text()) == draw_tree(), "run: python -m tests.test_errors"


if __name__ == "__main__":
    text = DOC.read_text()
    start, end = text.index(BEGIN), text.index(END)
    DOC.write_text(text[: start + len(BEGIN)] + f"\n```\n{draw_tree()}\n```\n" + text[end:])
    sys.exit(0)
