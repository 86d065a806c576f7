"""The code blocks of the guides (docs/tools.md, sessions.md, memory.md, mcp.md,
observability.md) are included from tests/docs/snippets/, and run here: a guide cannot
show code that does not work."""

from __future__ import annotations

import importlib.util
import logging
import re
from pathlib import Path

import pytest
import trio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agcore_actors import ActorSystem
from agcore_actors.agent import HostConfig, SessionHost
from agcore_actors.agent import messages as am
from agcore_actors.config import load_settings
from agcore_actors.llm import ProviderRegistry, provider_spec
from agcore_actors.mcp import HttpServer, StdioServer, load_config
from agcore_actors.memory import messages as mm
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.testing import (
    ScriptedProvider,
    ScriptedReply,
    ScriptedToolCall,
    ScriptItem,
    run_virtual,
    scripted_host,
)
from agcore_actors.tools import Tool
from tests.docs.snippets import host, memory, observe, tools

SNIPPETS = Path(__file__).resolve().parent / "snippets"


def calls(*tool_calls: ScriptedToolCall) -> ScriptedReply:
    return ScriptedReply(tool_calls=list(tool_calls))


def test_tools_guide_the_tools_run_and_an_unapproved_call_is_denied(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("one\ntwo\nthree\n")
    script: list[ScriptItem] = [
        calls(
            ScriptedToolCall("get_weather", {"city": "Paris"}),
            ScriptedToolCall("get_weather", {"city": "Atlantis"}),
            ScriptedToolCall("count_lines", {"path": str(notes)}),
            ScriptedToolCall("send_email", {"to": "a@b.c", "subject": "s", "body": "b"}),
        ),
        "done",
    ]

    async def scenario() -> am.TurnResult:
        used: list[Tool] = [tools.get_weather, tools.send_email, tools.count_lines]
        async with scripted_host(script, tools=used) as bot:
            return await tools.run_with_approvals(bot, "s1", "go", tools.always_no)

    # Real time: count_lines is a sync tool (a worker thread; see scripted_host's doc).
    result = trio.run(scenario)
    assert (result.status, result.text, result.tool_calls) == ("completed", "done", 4)
    assert tools.SENT == []  # denied, so never run


def test_tools_guide_results_reach_the_model(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("one\ntwo\n")
    model = ScriptedProvider(
        [
            calls(
                ScriptedToolCall("get_weather", {"city": "Atlantis"}),
                ScriptedToolCall("count_lines", {"path": str(notes)}),
            ),
            "done",
        ]
    )

    async def scenario() -> None:
        async with scripted_host(model, tools=[tools.get_weather, tools.count_lines]) as bot:
            await bot.run("s1", "go")

    trio.run(scenario)
    results = [str(m) for m in model.requests[1].messages[-2:]]
    assert "no data for 'Atlantis'" in results[0]
    assert "content='2'" in results[1]


def test_sessions_guide_a_host_over_sqlite(tmp_path: Path) -> None:
    lines = trio.run(host.main, ScriptedProvider(["Hi, I am here."]), tmp_path)
    assert lines == ["completed: Hi, I am here. (1 turn(s) stored)", "live: 1"]
    assert (tmp_path / "bot.db").exists()


def test_memory_guide_pages_are_retrieved_and_offered_as_the_retrieve_tool(
    tmp_path: Path,
) -> None:
    model = ScriptedProvider(
        [calls(ScriptedToolCall("retrieve", {"query": "refund days"})), "30 days."]
    )

    async def scenario() -> tuple[list[str], am.TurnResult]:
        async with ActorSystem() as system:
            store_ref, titles = await memory.fill(system, tmp_path)
            llm = await system.root.start_child(
                provider_spec("llm", registry=ProviderRegistry().register(model))
            )
            store = await system.root.start_child(
                session_store_spec("store", backend=InMemorySessions())
            )
            bundle = await memory.knowledge_bot(system, llm, store, store_ref)

            async with SessionHost(system, bundle) as bot:
                result = await bot.run("s1", "How long do I have for a refund?")
            pinned = await store_ref.ask(mm.Get("knowledge_refunds"))
            assert pinned is not None and pinned.pinned
            return titles, result

    titles, result = trio.run(scenario)
    assert len(titles) == 1 and titles[0].startswith("Refund policy (")
    assert (result.status, result.text, result.tool_calls) == ("completed", "30 days.", 1)
    assert "within 30 days" in str(model.requests[1].messages[-1])


def test_memory_guide_local_embeddings_rank_by_meaning() -> None:
    async def scenario() -> list[str]:
        async with ActorSystem() as system:
            return await memory.with_embeddings(system)

    assert trio.run(scenario) == ["pets", "money"]


def test_mcp_guide_both_configuration_files_load() -> None:
    servers = load_config(SNIPPETS / "mcp.json")
    assert isinstance(servers["time"], StdioServer) and isinstance(servers["docs"], HttpServer)
    settings = load_settings(SNIPPETS / "mcp.toml", env={})
    assert set(settings.mcp_servers) == {"time", "docs"}
    assert settings.agents["assistant"].mcp_servers == ("time",)


def test_observability_guide_hooks_refuse_and_record(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> list[am.TurnResult]:
        async with scripted_host(["hello"], hooks=observe.HOOKS) as bot:
            return [await bot.run("s1", "   "), await bot.run("s1", "hi")]

    with caplog.at_level(logging.INFO, logger="my_bot"):
        refused, ran = run_virtual(scenario)
    assert (refused.status, refused.error_kind) == ("failed", "hook_blocked")
    assert ran.status == "completed"
    assert [r.getMessage() for r in caplog.records if r.name == "my_bot"] == [
        f"turn {ran.turn} of s1: completed, 1 model call(s), 0 tokens"
    ]


def test_observability_guide_the_reporter_logs_the_host(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        async with scripted_host(["hello"], config=HostConfig(idle_ttl=100.0)) as bot:
            await bot.run("s1", "hi")
            with trio.move_on_after(25):
                await observe.report_every(10.0, bot.system, bot)

    with caplog.at_level(logging.INFO, logger="my_bot"):
        run_virtual(scenario)
    lines = [r.getMessage() for r in caplog.records if r.name == "my_bot"]
    assert lines == ["sessions live=1 busy=0 parked=0"] * 3


def test_observability_guide_a_host_of_your_own_makes_spans() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = observe.traced_host(provider)

    async def scenario() -> None:
        async with scripted_host(["hello"]) as bot:
            await observe.traced_turn(bot, tracer, "s1", "hi")

    run_virtual(scenario)
    spans = {span.name: span.attributes for span in exporter.get_finished_spans()}
    assert set(spans) == {"invoke_agent bot", "chat gpt-4o"}, set(spans)
    chat = spans["chat gpt-4o"]
    assert chat is not None and chat["gen_ai.provider.name"] == "openai"


ROOT = SNIPPETS.parents[2]
GUIDES = ["getting-started", "tools", "mcp", "memory", "sessions", "testing", "observability"]


def section(path: Path, name: str) -> list[str]:
    """The lines of ``path`` between its ``--8<-- [start:name]`` and ``[end:name]``
    markers, without the blank lines around them."""
    text = path.read_text()
    start, end = f"# --8<-- [start:{name}]\n", f"# --8<-- [end:{name}]"
    body = text[text.index(start) + len(start) : text.index(end)]
    return body.strip("\n").splitlines()


@pytest.mark.parametrize("example", ["test_retry_policy", "test_eviction_policy"])
def test_the_testing_guides_property_tests_stay_under_20_lines(example: str) -> None:
    lines = section(ROOT / "examples" / f"{example}.py", "test")
    assert 10 <= len(lines) <= 20, "\n".join(lines)
    assert any(line.startswith("def test_my_") for line in lines)


def test_the_builtin_tools_table_names_the_builtin_tools() -> None:
    from agcore_actors.tools.builtin import builtin_tools

    text = (ROOT / "docs" / "tools.md").read_text()
    table = text.split("## The built-in tools of `run` and `chat`")[1].split("\n## ")[0]
    rows = [r.split("|")[1:-1] for r in table.splitlines() if r.startswith("| `")]
    listed = [(name.strip().strip("`"), asks.strip()) for name, _, asks in rows]
    actual = [(t.name, "yes" if t.requires_approval else "no") for t in builtin_tools(ROOT)]
    assert listed == actual


def test_the_cli_page_lists_every_command_of_the_parser() -> None:
    spec = importlib.util.spec_from_file_location(
        "cli_reference", ROOT / "docs" / "hooks" / "cli_reference.py"
    )
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    leaves = {
        " ".join(path)
        for path, parser in hook._commands(hook._parser(), ("agcore-actors",))
        if len(path) > 1 and not parser._subparsers
    }
    text = (ROOT / "docs" / "cli.md").read_text()
    listed = set()
    for row in text.splitlines():
        if row.startswith("| `agcore-actors "):
            words = row.split("`")[1].split()
            listed.add(" ".join(w for w in words if not w.isupper()))
    assert listed == leaves


@pytest.mark.parametrize("guide", GUIDES)
def test_every_file_a_guide_names_exists(guide: str) -> None:
    text = (ROOT / "docs" / f"{guide}.md").read_text()
    named = set(re.findall(r"`((?:examples|tests)/[\w/.]+\.(?:py|json|toml))", text))
    named |= set(re.findall(r'--8<-- "([\w/.]+?)(?::\w+)?"', text))
    assert named, guide
    assert [p for p in sorted(named) if not (ROOT / p).is_file()] == []
