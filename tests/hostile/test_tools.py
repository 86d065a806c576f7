"""Hostile tool arguments: every call of a batch gets exactly one result, a tool body only
ever sees arguments of its declared types, and arguments it cannot take are an
``invalid_arguments`` result the model can correct — never a crashed executor.

Driven through a real :class:`ToolExecutor` in a strict actor system (hypothesis on
trio's virtual clock, and the corpus ``corpus/tool_args``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agcore_actors import ActorSystem
from agcore_actors.tools import (
    ExecuteTools,
    ToolCall,
    ToolExecutor,
    ToolRegistry,
    ToolStatus,
    function_tool,
)
from tests.hostile.hostile import corpus, json_values, mangled, shaped, to_bytes


class Point(msgspec.Struct):
    x: int
    y: int


@function_tool
async def typed(
    count: int,
    name: str,
    tags: list[str],
    point: Point,
    mode: Literal["fast", "slow"] = "fast",
    limit: float | None = None,
) -> str:
    """Checks that every argument arrived with its declared type."""
    assert isinstance(count, int) and not isinstance(count, bool)
    assert isinstance(name, str) and all(isinstance(t, str) for t in tags)
    assert isinstance(point, Point) and isinstance(point.x, int) and isinstance(point.y, int)
    assert mode in ("fast", "slow") and (limit is None or isinstance(limit, float))
    return "ok"


@function_tool
def sync_typed(count: int, flags: dict[str, bool]) -> int:
    """A sync tool (runs on a worker thread)."""
    assert isinstance(count, int) and all(isinstance(v, bool) for v in flags.values())
    return len(flags)


@function_tool
async def nothing() -> str:
    """Takes no arguments at all."""
    return "ok"


REGISTRY = ToolRegistry([typed, sync_typed, nothing])
NAMES = ["typed", "sync_typed", "nothing", "missing"]
ACCEPTED = {ToolStatus.OK, ToolStatus.INVALID_ARGUMENTS, ToolStatus.UNKNOWN_TOOL}

_keys = st.sampled_from(["count", "name", "tags", "point", "x", "y", "mode", "limit", "flags"])
_junk = json_values(_keys)
_int = st.integers(-(2**70), 2**70) | st.booleans()
_arguments = shaped(
    {
        "count": _int,
        "name": st.text(max_size=5),
        "tags": [st.text(max_size=3)],
        "point": {"x": _int, "y": _int},
        "mode": st.sampled_from(["fast", "slow", "FAST"]),
        "limit": st.floats(allow_nan=True) | st.none(),
        "flags": st.dictionaries(st.text(max_size=3), st.booleans() | _junk, max_size=3),
    },
    _junk,
)
_texts = mangled(_arguments.map(to_bytes)).map(lambda b: b.decode("utf-8", "replace"))


async def _batch(calls: list[ToolCall]) -> list[Any]:
    async with ActorSystem(strict=True, seed=0) as system:
        executor = await system.spawn(lambda: ToolExecutor(REGISTRY), name="tools")
        with trio.fail_after(60):
            reply = await executor.ask(ExecuteTools(batch_id="b", calls=calls))
            # The executor still works afterwards.
            again = await executor.ask(
                ExecuteTools(batch_id="after", calls=[ToolCall(id="n", name="nothing")])
            )
    assert [r.status for r in again.results] == [ToolStatus.OK]
    return list(reply.results)


def check(calls: list[ToolCall], results: list[Any]) -> None:
    assert [r.call_id for r in results] == [c.id for c in calls]
    for call, result in zip(calls, results, strict=True):
        assert result.status in ACCEPTED, (call, result)
        if result.status == ToolStatus.INVALID_ARGUMENTS:
            assert result.recoverable, result


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(NAMES), _texts),
        min_size=1,
        max_size=4,
    )
)
def test_any_arguments_get_one_result_each_and_never_reach_a_tool_mistyped(
    calls: list[tuple[str, str]],
) -> None:
    batch = [ToolCall(id=f"c{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls)]
    # Real time: a sync tool runs in a worker thread, and an autojumping clock would jump
    # the 60 s bound while the thread works.
    check(batch, trio.run(_batch, batch))


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "replace")


@pytest.mark.parametrize("path", corpus("tool_args"), ids=lambda p: p.name)
async def test_corpus_arguments_are_a_result_or_invalid_arguments(path: Path) -> None:
    text = read(path)
    batch = [ToolCall(id=f"{name}-call", name=name, arguments=text) for name in NAMES]
    results = await _batch(batch)
    check(batch, results)
    assert all(r.status != ToolStatus.OK for r in results[:2]), results
