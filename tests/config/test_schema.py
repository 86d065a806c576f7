"""The file's limits are the library's: every field of AgentConfig, HostConfig,
RetryConfig and Timeouts has its key, with the library's default (``inf`` where the
library says None), and a table maps onto the class field by field."""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest

from agcore_actors.agent import AgentConfig, HostConfig
from agcore_actors.config import AgentSettings, HostSettings, RetrySettings, TimeoutSettings
from agcore_actors.config._library import library_config
from agcore_actors.llm import RetryConfig, Timeouts

PAIRS: list[tuple[type[Any], type[Any], dict[str, str]]] = [
    (AgentConfig, AgentSettings, {}),
    (HostConfig, HostSettings, {}),
    (RetryConfig, RetrySettings, {}),
    (Timeouts, TimeoutSettings, {}),
]


#: Library fields made from several keys of their table (tested below on their own).
COMPOSED = {"budget", "media_limits"}


def fields(library: type[Any]) -> list[Any]:
    return [field for field in attrs.fields(library) if field.name not in COMPOSED]


@pytest.mark.parametrize(("library", "table", "renames"), PAIRS)
def test_every_library_field_has_its_key_with_the_librarys_default(
    library: type[Any], table: type[Any], renames: dict[str, str]
) -> None:
    keys = {field.name: field for field in attrs.fields(table)}
    for field in fields(library):
        key = keys.get(renames.get(field.name, field.name))
        assert key is not None, f"{library.__name__}.{field.name} has no key in {table.__name__}"
        expected = math.inf if field.default is None else field.default
        assert key.default == expected, field.name


#: The fields that are a choice of words, and a value other than their default.
CHOICES = {"approvals": "suspend", "interrupted": "resume", "elicitations": "suspend"}


@pytest.mark.parametrize(("library", "table", "renames"), PAIRS)
def test_a_table_maps_onto_its_class_field_by_field(
    library: type[Any], table: type[Any], renames: dict[str, str]
) -> None:
    # Every value changed from its default (a distinct one per field), and "inf" where the
    # library takes None: each arrives in its own field.
    changed: dict[str, Any] = {}
    for n, field in enumerate(fields(library), start=1):
        key = renames.get(field.name, field.name)
        default: Any = attrs.fields_dict(table)[key].default
        if key in CHOICES:  # a choice of words: its other value
            changed[key] = CHOICES[key]
        else:
            changed[key] = math.inf if "None" in str(field.type) else type(default)(default + n)
    if table is RetrySettings:
        changed["jitter"] = 0.5
    given: dict[str, Any] = {}
    if library is AgentConfig:
        given = {name: getattr(library(), name) for name in COMPOSED}
    made = library_config(library, table(**changed), renames, given=given)
    for field in fields(library):
        value = changed[renames.get(field.name, field.name)]
        assert getattr(made, field.name) == (None if value == math.inf else value), field.name


def test_the_budget_keys_of_an_agent_make_its_budget() -> None:
    from agcore_actors.agent import Budget
    from agcore_actors.config import PriceSettings
    from agcore_actors.config._runtime import agent_config
    from agcore_actors.llm import Pricing

    for field in attrs.fields(Budget):  # every field has its key, with the same default
        key = attrs.fields_dict(AgentSettings)[field.name]
        assert key.default == field.default, field.name
    settings = AgentSettings(
        turn_tokens=1,
        turn_cost=2.0,
        session_tokens=3,
        session_cost=4.0,
        tool_calls_per_turn=5,
        concurrent_tool_calls=6,
        prices={"m": PriceSettings(input=1.0, output=2.0, cache_read=3.0, cache_write=4.0)},
    )
    assert agent_config(settings).budget == Budget(
        turn_tokens=1,
        turn_cost=2.0,
        session_tokens=3,
        session_cost=4.0,
        tool_calls_per_turn=5,
        concurrent_tool_calls=6,
        prices={"m": Pricing(1.0, 2.0, 3.0, 4.0)},
    )
