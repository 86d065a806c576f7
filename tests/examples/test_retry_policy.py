"""examples/test_retry_policy.py: its property test passes, and fails for a runtime that
does not keep the policy's promise."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

import attrs
import pytest

from agcore_actors.llm import ProviderConfig
from tests.examples.model import EXAMPLES, ROOT


def load_example(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(
        "retry_example", EXAMPLES / "test_retry_policy.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_property_test_passes_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "test_retry_policy.py")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the retry policy keeps its promises\n"


def test_the_property_catches_a_runtime_that_retries_less(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    example = load_example(monkeypatch)
    retries_less = attrs.evolve(example.MY_RETRY, max_retries=1)
    monkeypatch.setattr(example, "MY_CONFIG", ProviderConfig(retry=retries_less))
    with pytest.raises(AssertionError):
        example.test_my_retry_policy()
