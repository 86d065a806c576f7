"""Static permissions: the rules by example, and as properties against a model."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.tools import (
    NETWORK,
    READ,
    SHELL,
    WRITE,
    PermissionChecker,
    PermissionConfig,
    PermissionDenied,
)
from agcore_actors.tools.policy import (
    UNSPECIFIED,
    check_permissions,
)


def refused(config: PermissionConfig, perms: list[str]) -> bool:
    try:
        PermissionChecker(config).check("t", perms)
    except PermissionDenied:
        return True
    return False


DEFAULT = PermissionConfig()


@pytest.mark.parametrize(
    ("config", "perms", "denied"),
    [
        (DEFAULT, [READ], False),
        (DEFAULT, [NETWORK], False),
        (DEFAULT, ["Delete"], True),
        (DEFAULT, [SHELL], True),
        (PermissionConfig([READ], [], False), [READ], False),
        (PermissionConfig([READ], [], False), [WRITE], True),
        (PermissionConfig([READ, WRITE], [], False), [WRITE], False),
        (PermissionConfig([SHELL, READ], [SHELL], False), [SHELL], True),
        (PermissionConfig([], [], True), [WRITE], False),
        (PermissionConfig([], [], False), [WRITE], True),
        (PermissionConfig([], [], True), [], False),
        (PermissionConfig([], [], False), [], True),
        (PermissionConfig(["db:read"], ["db:write"], False), ["db:read"], False),
        (PermissionConfig(["db:read"], ["db:write"], False), ["db:write"], True),
        (PermissionConfig([READ, WRITE, NETWORK]), [READ, NETWORK], False),
        (PermissionConfig([READ, NETWORK]), [READ, WRITE], True),
    ],
)
def test_permission_rules(config: PermissionConfig, perms: list[str], denied: bool) -> None:
    assert refused(config, perms) is denied


def test_unspecified_refusal_names_unspecified() -> None:
    with pytest.raises(PermissionDenied) as info:
        PermissionChecker(PermissionConfig([], [], False)).check("t", [])
    assert info.value.permission == UNSPECIFIED


perms = st.sampled_from(["Read", "Write", "Delete", "Network", "Shell", "FileSystem", "db:read"])


configs = st.builds(
    PermissionConfig, st.lists(perms, max_size=4), st.lists(perms, max_size=3), st.booleans()
)


@given(configs, st.lists(perms, max_size=4))
def test_permission_decision_matches_the_rules(
    config: PermissionConfig, declared: list[str]
) -> None:
    refused = check_permissions(config, declared)
    if any(p in config.denied for p in declared):
        assert refused == next(p for p in declared if p in config.denied)  # denied wins, first one
    elif not declared or not config.allowed:
        assert refused == (None if config.allow_unspecified else UNSPECIFIED)
    else:
        missing = [p for p in declared if p not in config.allowed]
        assert refused == (missing[0] if missing else None)


@given(configs, st.lists(perms, max_size=4), perms)
def test_denying_more_never_allows_more(
    config: PermissionConfig, declared: list[str], extra: str
) -> None:
    stricter = PermissionConfig(config.allowed, (*config.denied, extra), config.allow_unspecified)
    if check_permissions(config, declared) is not None:
        assert check_permissions(stricter, declared) is not None
