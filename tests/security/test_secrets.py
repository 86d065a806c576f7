"""API keys and configured MCP secrets never appear anywhere we write: logs, reprs,
errors, tool messages, transcripts, exports, spans or metrics.

One served host is set up with recognisable secrets — the model API key, a sensitive
configured header, an MCP server's configured environment value — against a model server
that echoes the key back in its errors and an MCP server that tries to leak its secret
every way it can. Turns run over HTTP, succeeding and failing, with logging (every
logger, DEBUG, both formats), tracing (OpenTelemetry's in-memory exporter) and metrics
on; then the store is exported and everything captured is searched for the secrets.
"""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, SessionHost, StoreTurns
from agcore_actors.llm import (
    OpenAICompatibleProvider,
    OpenAIConfig,
    ProviderConfig,
    ProviderRegistry,
    RetryConfig,
    ToolMessage,
    provider_spec,
)
from agcore_actors.mcp import HttpServer, StdioServer, servers_spec, wait_ready
from agcore_actors.serve import HttpConfig, JsonFormatter, TextFormatter, serve_http
from agcore_actors.serve.tracing import TurnTracer
from agcore_actors.store import SqliteSessions, session_store_spec
from agcore_actors.store import messages as sm
from agcore_actors.tools import ToolRegistry, tool_executor_spec
from tests.peers.fault_server import FaultServer, Reply, chunk, sse, sse_reply

API_KEY = "sk-SECRETapikey4f1d9a7c"
HEADER_SECRET = "hdrSECRET77aa31e0"
MCP_SECRET = "mcpSECRETenv5b2c8d"
MCP_HEADER_SECRET = "mcpSECREThdr0c9e44"
SERVE_TOKEN = "serveSECRETtoken91be2f7d"
SECRETS = {"api key": API_KEY, "header": HEADER_SECRET, "mcp env": MCP_SECRET,
           "mcp header": MCP_HEADER_SECRET, "serve token": SERVE_TOKEN}  # fmt: skip
LEAKY = Path(__file__).resolve().parent / "leaky_server.py"


def _tool_call(name: str) -> list[bytes | float]:
    call = {"index": 0, "id": f"call-{name}", "type": "function",
            "function": {"name": name, "arguments": "{}"}}  # fmt: skip
    return sse(chunk({"role": "assistant", "tool_calls": [call]}), chunk({}, "tool_calls"))


def _text(text: str) -> list[bytes | float]:
    return sse(chunk({"role": "assistant", "content": text}), chunk({}, "stop"))


def _echoing_error(status: int) -> Reply:
    message = f"Incorrect API key provided: {API_KEY} (header {HEADER_SECRET})"
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}})
    return Reply(status=status, body=[body.encode()])


def script() -> list[Reply]:
    """The model's answers, in order: two turns that call the leaky tools, then three
    that fail with the key echoed back (401, 500, an error event mid-stream)."""
    event = json.dumps({"error": {"message": f"overloaded; your key {API_KEY}"}})
    return [
        sse_reply(*_tool_call("leaky-leak")),
        sse_reply(*_text("leak done")),
        sse_reply(*_tool_call("leaky-fail")),
        sse_reply(*_text("fail done")),
        _echoing_error(401),
        _echoing_error(500),
        sse_reply(b"event: error\ndata: " + event.encode() + b"\n\n"),
    ]


@asynccontextmanager
async def host_with_everything(
    base_url: str, db: Path, tracer: TurnTracer
) -> AsyncIterator[tuple[str, Any, OpenAIConfig, StdioServer]]:
    config = OpenAIConfig(name="openai", base_url=base_url, api_key=API_KEY, model="m",
                          headers={"x-api-token": HEADER_SECRET})  # fmt: skip
    mcp = StdioServer(command=sys.executable, args=[str(LEAKY)], env={"MCP_TOKEN": MCP_SECRET})
    async with ActorSystem() as system:
        root = system.root
        registry = ProviderRegistry().register(OpenAICompatibleProvider(config))
        llm = await root.start_child(
            provider_spec("llm", registry=registry,
                          config=ProviderConfig(retry=RetryConfig(max_retries=0)))
        )  # fmt: skip
        tools = ToolRegistry()
        await system.start_supervisor(servers_spec({"leaky": mcp}, registry=tools))
        await wait_ready(system.lookup("mcp:leaky"), timeout=30)
        executor = await root.start_child(tool_executor_spec("tools", registry=tools))
        store = await root.start_child(session_store_spec("store", backend=SqliteSessions(str(db))))
        bundle = (
            AgentBuilder().provider(llm).tools(executor, tools).store(StoreTurns(store))
            .agent(Agent(name="bot")).build()
        )  # fmt: skip
        async with SessionHost(system, bundle) as host, trio.open_nursery() as nursery:
            stop = trio.Event()

            async def serve(task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
                config = HttpConfig(port=0, token=SERVE_TOKEN)
                await serve_http(host, config, shutdown=stop.wait, tracer=tracer,
                                 task_status=task_status)  # fmt: skip

            url = await nursery.start(serve)
            yield url, store, config, mcp
            stop.set()


@pytest.fixture
def captured_logs() -> Iterator[io.StringIO]:
    """Every record of every logger at DEBUG, in both of our formats."""
    out = io.StringIO()
    handlers = [logging.StreamHandler(out), logging.StreamHandler(out)]
    handlers[0].setFormatter(TextFormatter())
    handlers[1].setFormatter(JsonFormatter())
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.DEBUG)
    for handler in handlers:
        root.addHandler(handler)
    try:
        yield out
    finally:
        for handler in handlers:
            root.removeHandler(handler)
        root.setLevel(level)


def database_text(directory: Path) -> str:
    """The SQLite files (database, WAL) as text."""
    files = sorted(p for p in directory.iterdir() if p.name.startswith("sessions.db"))
    return b"".join(p.read_bytes() for p in files).decode("utf-8", "replace")


def _spans_text(exporter: InMemorySpanExporter) -> str:
    parts = []
    for span in exporter.get_finished_spans():
        parts.append(f"{span.name} {dict(span.attributes or {})} {span.status.description}")
        for event in span.events:
            parts.append(f"{event.name} {dict(event.attributes or {})}")
    return "\n".join(parts)


async def test_no_secret_appears_in_anything_captured(
    fault_server: FaultServer, tmp_path: Path, captured_logs: io.StringIO
) -> None:
    url, _ = fault_server.script(*script())
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = TurnTracer(provider.get_tracer("test"), provider="openai", model="m")
    captured: dict[str, str] = {}
    db = tmp_path / "sessions.db"
    async with host_with_everything(url, db, tracer) as (base, store, config, mcp):
        auth = {"authorization": f"Bearer {SERVE_TOKEN}"}
        async with httpx2.AsyncClient(base_url=base, timeout=60, headers=auth) as client:
            json_only = {"accept": "application/json"}
            statuses = []
            for text in ["leak", "fail", "auth", "server error", "stream error"]:
                r = await client.post("/v1/sessions/s/turns", json={"text": text},
                                      headers=json_only)  # fmt: skip
                captured[f"turn {text!r}"] = r.text
                statuses.append(r.json()["status"])
            # An SSE stream of a turn too (the last reply repeats: it fails).
            r = await client.post("/v1/sessions/t/turns", json={"text": "streamed"})
            captured["sse turn"] = r.text
            for path in ["/v1/sessions/s", "/v1/sessions/t", "/v1/sessions", "/metrics",
                         "/observer/state"]:  # fmt: skip
                captured[path] = (await client.get(path)).text
        snapshot = await store.ask(sm.ExportSession("s"))
        captured["export"] = repr(snapshot)
        captured["reprs"] = " ".join(
            repr(x) for x in (config, mcp, HttpServer(url=f"http://u:{MCP_HEADER_SECRET}@x:8/mcp",
                              headers={"Authorization": f"Bearer {MCP_HEADER_SECRET}"}))
        )  # fmt: skip
    assert statuses == ["completed", "completed", "failed", "failed", "failed"], captured
    tool_messages = [e.message for e in snapshot.entries if isinstance(e.message, ToolMessage)]
    assert len(tool_messages) == 2  # the leaky tools did run and answer
    captured["tool messages"] = repr(tool_messages)
    captured["logs"] = captured_logs.getvalue()
    captured["spans"] = _spans_text(exporter)
    captured["database"] = database_text(tmp_path)
    # The secrets did reach us (and were redacted), so the search below means something.
    assert "provided: *** (header ***)" in captured["turn 'auth'"], captured["turn 'auth'"]
    assert "[redacted]" in captured["tool messages"] and "[redacted]" in captured["logs"]
    leaks = [
        f"{what} in {where}: ...{text[max(0, i - 80) : i + 40]!r}..."
        for where, text in captured.items()
        for what, secret in SECRETS.items()
        if (i := text.find(secret)) >= 0
    ]
    assert not leaks, "\n".join(leaks)
