"""The ToolExecutor protocol: keyword-only structs, and one reply type per request."""

from __future__ import annotations

import inspect

import msgspec

from agcore_actors.tools import messages as tm


def test_structs_of_more_than_two_fields_are_keyword_only() -> None:
    for name in tm.__all__:
        cls = getattr(tm, name)
        is_struct = isinstance(cls, type) and issubclass(cls, msgspec.Struct)
        if is_struct and len(cls.__struct_fields__) > 2:
            params = inspect.signature(cls).parameters.values()
            assert all(p.kind is p.KEYWORD_ONLY for p in params), name


def test_results_survive_the_wire() -> None:
    call = tm.ToolCall(id="a", name="t", arguments='{"x": 1}')
    result = tm.ToolResult(call_id="a", name="t", status=tm.ToolStatus.OK, content="1", value=1)
    batch = tm.ToolResults("b", [result])
    assert msgspec.json.decode(msgspec.json.encode(batch), type=tm.ToolResults) == batch
    assert msgspec.json.decode(msgspec.json.encode(call), type=tm.ToolCall) == call
