"""The public API: every public module declares ``__all__``, every name there exists and
shows its public path, and no public name means two different objects."""

from __future__ import annotations

from collections import defaultdict
from types import ModuleType

import pytest

from tests.library import PACKAGES, is_public, package_of, public_modules

PUBLIC = public_modules()


@pytest.mark.parametrize("module", PUBLIC, ids=lambda m: m.__name__)
def test_public_module_declares_all_and_every_name_exists(module: ModuleType) -> None:
    names = getattr(module, "__all__", None)
    assert names is not None, f"{module.__name__} has no __all__"
    missing = [name for name in names if not hasattr(module, name)]
    assert not missing, f"{module.__name__}.__all__ names missing objects: {missing}"
    assert len(set(names)) == len(names), f"{module.__name__}.__all__ repeats a name"


@pytest.mark.parametrize("module", PUBLIC, ids=lambda m: m.__name__)
def test_exported_classes_show_a_public_module_path(module: ModuleType) -> None:
    private = [
        f"{name} ({obj.__module__})"
        for name in getattr(module, "__all__", ())
        if isinstance(obj := getattr(module, name), type) and not is_public(obj.__module__)
    ]
    assert not private, f"{module.__name__} exports classes with private paths: {private}"


@pytest.mark.parametrize("package", PACKAGES)
def test_a_public_name_means_one_object_within_a_package(package: str) -> None:
    seen: dict[str, dict[int, str]] = defaultdict(dict)
    for module in PUBLIC:
        if package_of(module) != package:
            continue
        for name in getattr(module, "__all__", ()):
            seen[name][id(getattr(module, name))] = module.__name__
    clashes = {name: sorted(where.values()) for name, where in seen.items() if len(where) > 1}
    assert not clashes, f"names bound to different objects in {package}: {clashes}"


def test_a_top_level_name_means_one_object_across_packages() -> None:
    seen: dict[str, dict[int, str]] = defaultdict(dict)
    for module in PUBLIC:
        if module.__name__.count(".") > 1:  # submodules (messages, wire, policy) are qualified
            continue
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if isinstance(obj, ModuleType):  # ``messages``: used qualified, by design
                continue
            seen[name][id(obj)] = module.__name__
    clashes = {name: sorted(where.values()) for name, where in seen.items() if len(where) > 1}
    assert not clashes, f"top-level names bound to different objects: {clashes}"
