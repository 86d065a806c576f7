"""``ClusterConfig``: every bad value is refused with a typed error naming its field."""

from __future__ import annotations

import math
from typing import Any

import attrs
import hypothesis.strategies as st
import pytest
from hypothesis import given

from agcore_actors import ActorSystem, AgcoreError
from agcore_actors.agent import SessionHost
from agcore_actors.cluster import ClusterConfig, ClusterConfigError
from agcore_actors.config import ClusterSettings, ConfigError, open_runtime, parse_settings
from agcore_actors.config._runtime import cluster_config
from agcore_actors.testing import ScriptedProvider, ScriptedReply


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


def test_the_cluster_table_loads_into_a_cluster_config() -> None:
    text = (
        '[cluster]\nenabled = true\nhost_id = "h1"\naddress = "http://10.0.0.2:8080"\n'
        "lease_ttl = 6.0\nrenew_interval = 1.0\nfence_margin = 1.5\n"
    )
    config = cluster_config(parse_settings(text))
    assert config == ClusterConfig(
        host_id="h1",
        address="http://10.0.0.2:8080",
        lease_ttl=6.0,
        renew_interval=1.0,
        fence_margin=1.5,
    )
    assert cluster_config(parse_settings("")) is None  # one process (SQLite, memory)
    # ``--store postgresql://...`` (as serve sets it): a shared store, on by default.
    settings = parse_settings("")
    on_postgres = attrs.evolve(
        settings, store=attrs.evolve(settings.store, path="postgresql://db/agcore")
    )
    assert cluster_config(on_postgres) is not None
    off = attrs.evolve(on_postgres, cluster=ClusterSettings(enabled=False))
    assert cluster_config(off) is None
    generated = cluster_config(parse_settings("[cluster]\nenabled = true\n"))
    assert generated is not None and generated.host_id.startswith("host-")


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ("fence_margin = 20.0", "fence_margin"),
        ("renew_interval = 9.0", "renew_interval"),
        ('host_id = "two words"', "host_id"),
        ("lease_ttl = -1.0", "lease_ttl"),
    ],
)
def test_a_cluster_setting_that_cannot_work_is_a_config_error_naming_it(
    body: str, key: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings(f"[cluster]\nenabled = true\n{body}\n")
    assert "cluster" in str(info.value) and key in str(info.value)


async def test_an_enabled_cluster_table_makes_the_runtime_give_a_lease_keeper() -> None:
    text = (
        '[providers.p]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        '[agents.a]\nprovider = "p"\n'
        '[cluster]\nenabled = true\nhost_id = "h1"\naddress = "http://h1.test"\n'
    )
    providers = {"p": ScriptedProvider([ScriptedReply(text="done")], name="p")}
    async with (
        ActorSystem(strict=True, seed=0) as system,
        open_runtime(parse_settings(text), system=system, providers=providers) as runtime,
    ):
        keeper = runtime.lease_keeper()
        assert keeper is not None and keeper.host == "h1"
        async with SessionHost(system, runtime.bundle, cluster=keeper) as host:
            assert (await host.run("s", "hi")).status == "completed"
            snap = host.snapshot().cluster
            assert snap is not None and (snap.host, snap.leases_held) == ("h1", 1)
            assert [h.host for h in await keeper.hosts()] == ["h1"]
