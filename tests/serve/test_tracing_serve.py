"""``[telemetry] tracing = true`` in the file ``agcore-actors serve --http`` reads: the
spans of a turn reach a real OTLP/HTTP receiver on 127.0.0.1 (the one the standard
``OTEL_EXPORTER_OTLP_ENDPOINT`` names), with the GenAI semantic conventions' attribute
names and the model, provider and server of the call; without the ``otel`` extra the
same file is one line naming it, exit 2."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from tests.serve.helpers import AUTH, commands, fake_openai, lines, serve_env
from tests.serve.test_cmd_serve import url_of
from tests.serve.test_tracing import CONVENTIONS


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, list[ExportTraceServiceRequest]]]:
    """An OTLP/HTTP (protobuf) trace receiver on 127.0.0.1: its base URL and what it got."""
    received: list[ExportTraceServiceRequest] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            ok = self.path == "/v1/traces"
            if ok:
                received.append(ExportTraceServiceRequest.FromString(body))
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200 if ok else 404)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return tuple(value(x) for x in v.array_value.values)
    assert kind is not None
    return getattr(v, kind)


def spans_of(received: list[ExportTraceServiceRequest]) -> dict[str, list[dict[str, Any]]]:
    """Name → the spans of that name, each its attributes (plus ``_status``/``_resource``)."""
    spans: dict[str, list[dict[str, Any]]] = {}
    for request in received:
        for resource in request.resource_spans:
            service = {a.key: value(a.value) for a in resource.resource.attributes}
            for scope in resource.scope_spans:
                for span in scope.spans:
                    attributes = {a.key: value(a.value) for a in span.attributes}
                    attributes["_status"] = span.status.code
                    attributes["_resource"] = service
                    spans.setdefault(span.name, []).append(attributes)
    return spans


def serve(config: Path, env: dict[str, str], how: str = "--http") -> subprocess.Popen[bytes]:
    where = ["127.0.0.1:0"] if how == "--http" else []
    return subprocess.Popen(
        [sys.executable, "-m", "agcore_actors.cli", "serve", "--config", str(config),
         how, *where, "--store", str(config.parent / "s.db")],
        stdin=subprocess.DEVNULL if how == "--http" else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )  # fmt: skip


def test_the_config_key_sends_genai_spans_to_the_otlp_endpoint(tmp_path: Path) -> None:
    config = tmp_path / "agcore.toml"
    config.write_text("[telemetry]\ntracing = true\n")
    with otlp_receiver() as (endpoint, received), fake_openai() as base:
        env = serve_env(base)
        env.update(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_SERVICE_NAME="bot-under-test")
        process = serve(config, env)
        try:
            url = url_of(process)
            for text in ["hi", "again"]:
                r = httpx2.post(
                    f"{url}/v1/sessions/a/turns",
                    json={"text": text},
                    headers={"accept": "application/json", **AUTH},
                )
                assert r.json()["status"] == "completed"
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=30)
        assert process.returncode == 0, err.decode()
        spans = spans_of(received)  # sent on exit at the latest
    port = int(base.split(":")[2].split("/")[0])
    assert sorted(spans) == ["chat fake", "invoke_agent assistant"]
    assert len(spans["invoke_agent assistant"]) == len(spans["chat fake"]) == 2
    for chat in spans["chat fake"]:
        assert chat["_resource"]["service.name"] == "bot-under-test"
        assert chat["_status"] == Status.STATUS_CODE_UNSET
        assert chat["gen_ai.operation.name"] == "chat"
        assert chat["gen_ai.provider.name"] == "openai"
        assert chat["gen_ai.request.model"] == chat["gen_ai.response.model"] == "fake"
        assert chat["gen_ai.response.id"].startswith("chatcmpl-")
        assert chat["gen_ai.response.finish_reasons"] == ("stop",)
        assert chat["server.address"] == "127.0.0.1" and chat["server.port"] == port
        assert chat["gen_ai.usage.input_tokens"] > 0
        assert chat["gen_ai.response.time_to_first_chunk"] >= 0.0  # the agent streams
    for span in [*spans["chat fake"], *spans["invoke_agent assistant"]]:
        names = set(span) - {"_status", "_resource"}
        assert names <= CONVENTIONS, names - CONVENTIONS


def test_serve_stdio_traces_too_a_failed_turn_with_error_status(tmp_path: Path) -> None:
    config = tmp_path / "agcore.toml"
    config.write_text("[telemetry]\ntracing = true\n")
    with otlp_receiver() as (endpoint, received):
        env = serve_env("http://127.0.0.1:9/v1")  # nothing listens: the turn fails
        env.update(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, AGCORE_RETRY__MAX_RETRIES="0")
        process = serve(config, env, "--stdio")
        out, err = process.communicate(commands({"session": "a", "text": "hi"}), timeout=60)
        assert process.returncode == 0, err.decode()
        spans = spans_of(received)
    final = lines(out)[-1]
    assert final["event"] == "turn_failed", final
    assert sorted(spans) == ["chat fake", "invoke_agent assistant"]
    for span in [*spans["chat fake"], *spans["invoke_agent assistant"]]:
        assert span["_status"] == Status.STATUS_CODE_ERROR
        assert span["error.type"] == final["error_kind"]
        assert set(span) - {"_status", "_resource"} <= CONVENTIONS
    (chat,) = spans["chat fake"]
    assert chat["gen_ai.provider.name"] == "openai"
    assert chat["server.address"] == "127.0.0.1" and chat["server.port"] == 9


def test_a_dead_collector_costs_the_export_timeout_at_exit_in_json_log_lines(
    tmp_path: Path,
) -> None:
    config = tmp_path / "agcore.toml"
    config.write_text("[telemetry]\ntracing = true\n")
    with fake_openai() as base:
        env = serve_env(base)
        env.update(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_EXPORTER_OTLP_TIMEOUT="1")
        process = subprocess.Popen(
            [sys.executable, "-m", "agcore_actors.cli", "serve", "--config", str(config),
             "--stdio", "--store", str(tmp_path / "s.db"), "--log-format", "json"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        out, err = process.communicate(commands({"session": "a", "text": "hi"}), timeout=60)
    assert process.returncode == 0, err.decode()
    assert lines(out)[-1]["event"] == "turn_completed"
    records = [json.loads(line) for line in err.decode().splitlines()]  # JSON, every one
    assert any(r["logger"].startswith("opentelemetry.exporter") for r in records), records


def test_the_config_key_without_the_otel_extra_is_one_line_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "agcore.toml"
    config.write_text("[telemetry]\ntracing = true\n")
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        "import sys\nsys.modules['opentelemetry.exporter.otlp.proto.http.trace_exporter'] = None\n"
    )
    env = serve_env("http://127.0.0.1:9/v1")
    env["PYTHONPATH"] = f"{hide}:{env['PYTHONPATH']}"
    process = serve(config, env)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 2
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert "pip install 'agcore-actors[otel]'" in lines[0] and "[telemetry] tracing" in lines[0]
