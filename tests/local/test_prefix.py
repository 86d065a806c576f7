"""The prompt prefix cache against a fake llama.cpp server on 127.0.0.1 (its slot routes
write and read files as the real one does), and its key, a pure function."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx2
import trio
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.llm import (
    ChatRequest,
    FunctionDefinition,
    OpenAICompatibleProvider,
    OpenAIConfig,
    ToolDefinition,
    assistant,
    system,
    user,
)
from agcore_actors.local import PrefixCache, ProgressEvent, prefix_key, prefix_of
from tests.peers.fault_server import FaultServer, Reply, completion, error_reply, json_reply

TOOLS = [ToolDefinition(FunctionDefinition("f", "F.", {"type": "object"}))]
REQUEST = ChatRequest(messages=[system("Be brief."), user("hi")], tools=TOOLS)


class FakeSlots:
    """Answers chat with "ok", and ``/slots`` save/restore with files in ``directory``
    (a restore of a missing file or one ``refuse``-d is the real server's 400)."""

    def __init__(self, directory: Path, refuse: bool = False) -> None:
        self.directory = directory
        self.refuse = refuse
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, body: Any) -> Reply:
        with self._lock:
            if "filename" in body:
                path = self.directory / body["filename"]
                if "warm" in self.calls[-1:] and not path.exists():
                    self.calls.append("save")
                    path.write_bytes(b"kv" * 1000)
                    return json_reply({"n_saved": 3})
                self.calls.append("restore")
                if self.refuse or not path.exists():
                    return error_reply(400, "Unable to restore slot")
                return json_reply({"n_restored": 3})
            self.calls.append("warm" if body.get("max_tokens") == 1 else "chat")
            return json_reply(completion("ok"))


def cache(url: str, directory: Path, events: list[ProgressEvent] | None = None) -> PrefixCache:
    inner = OpenAICompatibleProvider(OpenAIConfig(name="local", base_url=url, model="m"))
    progress = None if events is None else events.append
    return PrefixCache(
        inner, server_url=url.removesuffix("/v1"), api_key="k", identity="model-1",
        directory=directory, progress=progress,
    )  # fmt: skip


async def ask(prefix_cache: PrefixCache, request: ChatRequest = REQUEST) -> str:
    async with httpx2.AsyncClient() as client:
        return (await prefix_cache.chat(client, request)).message.text


async def test_the_first_server_warms_and_saves_the_next_restores_without_warming(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    slots = FakeSlots(tmp_path)
    url, scenario = fault_server.respond(slots, record=True)
    events: list[ProgressEvent] = []
    first = cache(url, tmp_path, events)
    assert await ask(first) == "ok" and await ask(first) == "ok"
    assert slots.calls == ["warm", "save", "chat", "chat"]
    warm = scenario.requests[0].body
    assert [m["role"] for m in warm["messages"]] == ["system", "user"]
    assert warm["messages"][1]["content"] == "." and warm["tools"]  # no user text kept
    assert scenario.requests[1].headers["authorization"] == "Bearer k"
    assert [e.detail for e in events] == ["warming", "warmed"]

    slots.calls.clear()
    events.clear()
    assert await ask(cache(url, tmp_path, events)) == "ok"  # a new server
    assert slots.calls == ["restore", "chat"]
    assert [e.detail for e in events] == ["restored"]


def corrupt(directory: Path) -> Path:
    (saved,) = directory.glob("*.bin")
    saved.write_bytes(b"kv" * 999 + b"xx")
    return saved


async def test_a_corrupt_or_foreign_file_is_never_restored_but_deleted_and_warmed_again(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    slots = FakeSlots(tmp_path)
    url, _ = fault_server.respond(slots)
    await ask(cache(url, tmp_path))
    saved = corrupt(tmp_path)  # the checksum no longer matches
    slots.calls.clear()
    assert await ask(cache(url, tmp_path)) == "ok"
    assert slots.calls == ["warm", "save", "chat"]  # no restore of the corrupt file

    saved.with_suffix(".sha256").unlink()  # foreign: a file with no checksum of ours
    slots.calls.clear()
    assert await ask(cache(url, tmp_path)) == "ok"
    assert slots.calls == ["warm", "save", "chat"]


async def test_a_refused_restore_warms_again_and_every_cache_failure_leaves_the_request(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    slots = FakeSlots(tmp_path)
    url, _ = fault_server.respond(slots)
    await ask(cache(url, tmp_path))
    slots.refuse = True
    slots.calls.clear()
    assert await ask(cache(url, tmp_path)) == "ok"
    assert slots.calls[:2] == ["restore", "warm"] and slots.calls[-1] == "chat"

    gone = cache(url, tmp_path / "missing")  # the save fails (no directory): still answers
    assert await ask(gone) == "ok"


async def test_many_requests_at_once_warm_the_prefix_once(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    slots = FakeSlots(tmp_path)
    url, _ = fault_server.respond(slots)
    prefix_cache = cache(url, tmp_path)
    async with trio.open_nursery() as nursery:
        for _ in range(8):
            nursery.start_soon(ask, prefix_cache)
    assert slots.calls.count("warm") == 1 and slots.calls.count("chat") == 8


async def test_a_request_with_no_system_message_and_no_tools_is_sent_as_is(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    slots = FakeSlots(tmp_path)
    url, _ = fault_server.respond(slots)
    assert await ask(cache(url, tmp_path), ChatRequest(messages=[user("hi")])) == "ok"
    assert slots.calls == ["chat"]


texts = st.text(max_size=30)


@given(tail=st.lists(texts, max_size=4), other=st.lists(texts, max_size=4))
def test_the_key_depends_on_the_prefix_only_not_on_the_conversation(
    tail: list[str], other: list[str]
) -> None:
    def request(turns: list[str]) -> ChatRequest:
        said = [assistant(t) if i % 2 else user(t) for i, t in enumerate(turns)]
        return ChatRequest(messages=[system("S"), *said, user("q")], tools=TOOLS)

    a, b = prefix_of(request(tail)), prefix_of(request(other))
    assert a is not None and b is not None
    assert prefix_key("m", a) == prefix_key("m", b)


@given(prompt=texts, other=texts)
def test_a_changed_prompt_tools_or_model_changes_the_key(prompt: str, other: str) -> None:
    def key(text: str, tools: list[ToolDefinition] | None = TOOLS, model: str = "m") -> str:
        prefix = prefix_of(ChatRequest(messages=[system(text), user("q")], tools=tools))
        assert prefix is not None
        return prefix_key(model, prefix)

    assert (key(prompt) == key(other)) == (prompt == other)
    assert key(prompt) != key(prompt, tools=None)
    two = [*TOOLS, ToolDefinition(FunctionDefinition("g", "G.", {"type": "object"}))]
    assert key(prompt) != key(prompt, tools=two)
    assert key(prompt) != key(prompt, model="m2")
