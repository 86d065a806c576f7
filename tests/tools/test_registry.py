"""The registry: unique names, atomic bulk registration, OpenAI definitions."""

from __future__ import annotations

from typing import Any

import pytest

from agcore_actors.tools import (
    DuplicateTool,
    ExecutionFailed,
    ToolRegistry,
    function_tool,
)


def add_tool(base: int) -> Any:
    @function_tool(name="add", description="addition")
    async def add(n: int = 0) -> dict[str, int]:
        return {"result": base + n}

    return add


@function_tool(name="fail", description="always fails")
async def fail() -> None:
    raise ExecutionFailed("fail", "boom")


def test_register_and_get() -> None:
    reg = ToolRegistry([add_tool(0)])
    assert reg.get("add") is not None
    assert reg.get("nonexistent") is None


def test_register_duplicate() -> None:
    reg = ToolRegistry([add_tool(0)])
    with pytest.raises(DuplicateTool):
        reg.register(add_tool(1))


def test_register_all_is_atomic() -> None:
    reg = ToolRegistry()
    with pytest.raises(DuplicateTool):
        reg.register_all([add_tool(0), fail, add_tool(1)])
    assert reg.names() == []  # nothing was half-registered


def test_unregister() -> None:
    reg = ToolRegistry([add_tool(0)])
    assert reg.unregister("add") is not None
    assert reg.get("add") is None


def test_list_tools() -> None:
    assert sorted(ToolRegistry([add_tool(0), fail]).names()) == ["add", "fail"]


def test_definitions() -> None:
    (definition,) = ToolRegistry([add_tool(0)]).definitions()
    assert definition["type"] == "function"
    assert definition["function"]["name"] == "add"
    assert definition["function"]["description"] == "addition"
    assert definition["function"]["parameters"]["type"] == "object"
