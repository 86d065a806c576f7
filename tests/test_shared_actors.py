"""Every shared actor of a runtime (the provider, the tool executor, the compactor, the
session store, the memory store) is isolated by its spec's default: one that keeps
crashing is parked with a typed error to its askers, never taking its supervisor, the
host and every session down with it (issue 26, symptom 10). The behaviour is tested per
actor (tests/llm/test_actor_isolation.py, tests/memory/test_actor_isolation.py,
tests/agent/test_session_bugs.py) and in tests/actor/test_isolation.py; this keeps the
defaults so."""

from __future__ import annotations

from typing import Any

from agcore_actors.actor import DEFAULT_ISOLATION, ChildSpec
from agcore_actors.context import compactor_spec
from agcore_actors.llm import ProviderRegistry, provider_spec
from agcore_actors.memory import memory_store_spec
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.tools import ToolRegistry, tool_executor_spec


def test_every_shared_actor_spec_isolates_by_default() -> None:
    specs: list[ChildSpec[Any]] = [
        provider_spec("llm", registry=ProviderRegistry()),
        tool_executor_spec("tools", registry=ToolRegistry()),
        compactor_spec("compactor"),
        session_store_spec("store", backend=InMemorySessions()),
        memory_store_spec("memory"),
    ]
    assert [spec.isolate for spec in specs] == [DEFAULT_ISOLATION] * len(specs)


def test_isolation_can_be_turned_off_per_spec() -> None:
    assert session_store_spec("store", backend=InMemorySessions(), isolate=None).isolate is None
    assert tool_executor_spec("tools", registry=ToolRegistry(), isolate=None).isolate is None
    assert compactor_spec("compactor", isolate=None).isolate is None
