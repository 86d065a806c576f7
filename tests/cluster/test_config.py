"""``ClusterConfig``: every bad value is refused with a typed error naming its field."""

from __future__ import annotations

import math
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given

from agcore_actors import AgcoreError
from agcore_actors.cluster import ClusterConfig, ClusterConfigError


def test_the_defaults_are_valid_and_each_host_gets_its_own_id() -> None:
    a, b = ClusterConfig(), ClusterConfig()
    assert a.host_id != b.host_id and a.host_id.startswith("host-")
    assert (a.lease_ttl, a.renew_interval, a.fence_margin, a.address) == (10.0, 2.0, 2.0, "")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"host_id": ""}, "host_id"),
        ({"host_id": "has space"}, "host_id"),
        ({"host_id": "x" * 129}, "host_id"),
        ({"host_id": "é"}, "host_id"),
        ({"address": "http://a b"}, "address"),
        ({"lease_ttl": 0}, "lease_ttl"),
        ({"lease_ttl": math.inf}, "lease_ttl"),
        ({"lease_ttl": math.nan}, "lease_ttl"),
        ({"lease_ttl": True}, "lease_ttl"),
        ({"renew_interval": -1}, "renew_interval"),
        ({"fence_margin": -0.1}, "fence_margin"),
        ({"fence_margin": 10.0}, "fence_margin"),
        ({"renew_interval": 8.0}, "renew_interval"),
        ({"lease_ttl": 3.0, "renew_interval": 1.0, "fence_margin": 2.5}, "renew_interval"),
    ],
)
def test_a_bad_setting_is_a_typed_error_naming_it(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(ClusterConfigError) as info:
        ClusterConfig(**fields)
    assert info.value.field == field
    assert isinstance(info.value, ValueError) and isinstance(info.value, AgcoreError)
    assert info.value.kind == "cluster_config"


@given(st.floats(0.01, 1e6), st.floats(0, 1), st.floats(0.001, 1))
def test_a_valid_config_can_always_renew_before_it_fences(
    ttl: float, margin_part: float, interval_part: float
) -> None:
    margin = ttl * margin_part
    interval = (ttl - margin) * interval_part
    try:
        config = ClusterConfig(lease_ttl=ttl, fence_margin=margin, renew_interval=interval)
    except ClusterConfigError:
        # Refused exactly when it could not work.
        assert margin >= ttl or interval >= ttl - margin or not interval > 0
        return
    assert config.renew_interval < config.lease_ttl - config.fence_margin
