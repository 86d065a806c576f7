"""/metrics over a real server on 127.0.0.1: the set of series is bounded, whatever the
number of sessions or the length of their ids; sessions show only in aggregates."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from tests.serve.runtime import served

LONG = "s" * 20_000  # session ids are free text: a long one must not reach a label


def series(text: str) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    """Each sample's name and labels (its series), values left out."""
    return {
        (sample.name, tuple(sorted(sample.labels.items())))
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_the_series_do_not_grow_with_the_number_of_live_sessions() -> None:
    async with served() as s, s.client() as client:
        for i in range(10):
            await s.host.run(f"{LONG}{i}", "hi")
        few = (await client.get("/metrics")).text
        for i in range(10, 300):
            await s.host.run(f"{LONG}{i}", "hi")
        many = (await client.get("/metrics")).text
        assert s.host.snapshot().live == 300
    assert series(few) == series(many)
    assert LONG[:100] not in many and len(many) < 20_000
    families = {f.name: f for f in text_string_to_metric_families(many)}
    by_state = {x.labels["state"]: x.value for x in families["agcore_sessions_actors"].samples}
    assert by_state["running"] == 300 and sum(by_state.values()) == 300


async def test_no_counter_is_split_by_state() -> None:
    async with served() as s, s.client() as client:
        await s.host.run("a", "hi")
        families = list(text_string_to_metric_families((await client.get("/metrics")).text))
    counters = [f for f in families if f.type in ("counter", "histogram")]
    assert counters
    for family in counters:
        assert all("state" not in x.labels for x in family.samples), family.name


async def test_each_model_response_is_one_genai_token_and_duration_observation() -> None:
    async with served() as s, s.client() as client:
        # "add": a tool call, then the answer: two model responses of 20 in / 5 out;
        # "hi": one response that reports no usage, hence no observation
        for text in ("add", "hi"):
            r = await client.post(
                "/v1/sessions/a/turns", json={"text": text}, headers={"accept": "application/json"}
            )
            assert r.json()["status"] == "completed"
        families = {
            f.name: f for f in text_string_to_metric_families((await client.get("/metrics")).text)
        }
    tokens = {
        (x.name, x.labels["gen_ai_token_type"]): x.value
        for x in families["gen_ai_client_token_usage"].samples
        if x.name.endswith(("_count", "_sum"))
    }
    assert tokens == {
        ("gen_ai_client_token_usage_count", "input"): 2,
        ("gen_ai_client_token_usage_sum", "input"): 40,
        ("gen_ai_client_token_usage_count", "output"): 2,
        ("gen_ai_client_token_usage_sum", "output"): 10,
    }
    duration = families["gen_ai_client_operation_duration_seconds"].samples
    count = next(x for x in duration if x.name.endswith("_count"))
    assert count.labels == {"gen_ai_operation_name": "chat"} and count.value == 2
