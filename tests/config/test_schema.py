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
from agcore_actors.config._runtime import HOST_RENAMES, library_config
from agcore_actors.llm import RetryConfig, Timeouts

PAIRS: list[tuple[type[Any], type[Any], dict[str, str]]] = [
    (AgentConfig, AgentSettings, {}),
    (HostConfig, HostSettings, HOST_RENAMES),
    (RetryConfig, RetrySettings, {}),
    (Timeouts, TimeoutSettings, {}),
]


@pytest.mark.parametrize(("library", "table", "renames"), PAIRS)
def test_every_library_field_has_its_key_with_the_librarys_default(
    library: type[Any], table: type[Any], renames: dict[str, str]
) -> None:
    keys = {field.name: field for field in attrs.fields(table)}
    for field in attrs.fields(library):
        key = keys.get(renames.get(field.name, field.name))
        assert key is not None, f"{library.__name__}.{field.name} has no key in {table.__name__}"
        expected = math.inf if field.default is None else field.default
        assert key.default == expected, field.name


@pytest.mark.parametrize(("library", "table", "renames"), PAIRS)
def test_a_table_maps_onto_its_class_field_by_field(
    library: type[Any], table: type[Any], renames: dict[str, str]
) -> None:
    # Every value changed from its default (a distinct one per field), and "inf" where the
    # library takes None: each arrives in its own field.
    changed: dict[str, Any] = {}
    for n, field in enumerate(attrs.fields(library), start=1):
        key = renames.get(field.name, field.name)
        default: Any = attrs.fields_dict(table)[key].default
        changed[key] = math.inf if "None" in str(field.type) else type(default)(default + n)
    if table is RetrySettings:
        changed["jitter"] = 0.5
    made = library_config(library, table(**changed), renames)
    for field in attrs.fields(library):
        value = changed[renames.get(field.name, field.name)]
        assert getattr(made, field.name) == (None if value == math.inf else value), field.name
