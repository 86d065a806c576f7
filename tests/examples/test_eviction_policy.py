"""examples/test_eviction_policy.py: its property test passes, and fails for a host
that does not keep the policy's promises (over the cap, idle sessions kept, a
conversation forgotten)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import ModuleType
from typing import Any

import attrs
import pytest

from agcore_actors.agent import HostConfig, SessionHost
from agcore_actors.testing import Visit, scripted_host
from tests.examples.model import import_example, run_example_alone


def test_the_example_property_test_passes_as_a_script() -> None:
    done = run_example_alone("test_eviction_policy")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the eviction policy keeps its promises\n"


def break_the_host(monkeypatch: pytest.MonkeyPatch, **broken: Any) -> ModuleType:
    """The example, its bot run by a host whose limits are ``broken``."""
    example = import_example(monkeypatch, "test_eviction_policy", "eviction_example")

    @asynccontextmanager
    async def host_breaking_it(
        model: Any, *, config: HostConfig, **kw: Any
    ) -> AsyncIterator[SessionHost]:
        async with scripted_host(model, config=attrs.evolve(config, **broken), **kw) as host:
            yield host

    monkeypatch.setattr(example, "scripted_host", host_breaking_it)
    return example


FOUR_AT_ONCE = [Visit("s0", 0.0), Visit("s1", 0.0), Visit("s2", 0.0), Visit("s3", 0.0)]
TWICE = [Visit("s0", 0.0), Visit("s0", 1.0)]
BACK_AFTER_EVICTION = [Visit("s0", 0.0), Visit("s0", 600.0)]


@pytest.mark.parametrize(
    ("broken", "traffic"),
    [
        ({"max_sessions": 5}, FOUR_AT_ONCE),
        ({"idle_ttl": 3000.0}, TWICE),
        ({"history_tail": 1}, BACK_AFTER_EVICTION),
    ],
    ids=["over-the-cap", "keeps-idle-sessions", "forgets-history"],
)
def test_the_property_catches_a_host_that_breaks_the_policy(
    monkeypatch: pytest.MonkeyPatch, broken: dict[str, Any], traffic: list[Visit]
) -> None:
    right = import_example(monkeypatch, "test_eviction_policy", "eviction_example")
    right.test_my_eviction_policy.hypothesis.inner_test(traffic=traffic)
    broken_example = break_the_host(monkeypatch, **broken)
    with pytest.raises(AssertionError):
        broken_example.test_my_eviction_policy.hypothesis.inner_test(traffic=traffic)


def test_hypothesis_finds_a_host_that_forgets_on_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    example = break_the_host(monkeypatch, history_tail=1)
    with pytest.raises(AssertionError):
        example.test_my_eviction_policy()
