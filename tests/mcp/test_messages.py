"""The McpConnection protocol: enumerations are closed and every state is in them."""

from __future__ import annotations

import inspect
import typing

import msgspec
import pytest

from agcore_actors.mcp import messages as mm


def test_connection_states_are_a_closed_enumeration() -> None:
    assert set(typing.get_args(mm.ConnectionState)) == {"connecting", "connected", "parked"}
    for state in typing.get_args(mm.ConnectionState):
        status = msgspec.convert({"server": "s", "state": state}, mm.McpStatus)
        assert status.state == state
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"server": "s", "state": "sleeping"}, mm.McpStatus)


def test_structs_of_more_than_two_fields_are_keyword_only() -> None:
    for name in mm.__all__:
        cls = getattr(mm, name)
        is_struct = isinstance(cls, type) and issubclass(cls, msgspec.Struct)
        if is_struct and len(cls.__struct_fields__) > 2:
            params = inspect.signature(cls).parameters.values()
            assert all(p.kind is p.KEYWORD_ONLY for p in params), name
