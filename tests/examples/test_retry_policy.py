"""examples/test_retry_policy.py: its property test passes, and fails for a runtime that
does not keep the policy's promise."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from agcore_actors.llm import ProviderConfig
from tests.examples.model import import_example, run_example_alone


def test_the_example_property_test_passes_as_a_script() -> None:
    done = run_example_alone("test_retry_policy")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the retry policy keeps its promises\n"


@pytest.mark.parametrize(
    "broken",
    [{"max_retries": 1}, {"base_delay": 8.0, "max_delay": 30.0}, {"max_retry_after": 120.0}],
    ids=["retries-less", "waits-longer-than-the-cap", "waits-for-too-long-a-retry-after"],
)
def test_the_property_catches_a_runtime_that_breaks_the_policy(
    monkeypatch: pytest.MonkeyPatch, broken: dict[str, Any]
) -> None:
    example = import_example(monkeypatch, "test_retry_policy", "retry_example")
    runtime_policy = attrs.evolve(example.MY_RETRY, **broken)
    monkeypatch.setattr(example, "MY_CONFIG", ProviderConfig(retry=runtime_policy))
    with pytest.raises(AssertionError):
        example.test_my_retry_policy()
