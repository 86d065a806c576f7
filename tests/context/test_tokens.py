"""Pluggable estimators: tiktoken (offline only), a server's tokenizer, fallback."""

from __future__ import annotations

import base64
import json
import socket
from pathlib import Path

import httpx2
import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.context import (
    HeuristicEstimator,
    ServerTokenizer,
    TiktokenEstimator,
    TokenEstimator,
    TokenizerUnavailable,
    compactor_spec,
)
from agcore_actors.context.messages import Compact
from agcore_actors.context.policy import estimate_tokens
from agcore_actors.llm import Message, SystemMessage, UserMessage


def test_tiktoken_named_encoding_without_a_cached_copy_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tiktoken downloads encodings on first use; this machine has no network and
    no cached copy, and the estimator never downloads: a typed error says so."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(TokenizerUnavailable) as info:
        TiktokenEstimator.load("cl100k_base")
    assert info.value.tokenizer == "tiktoken:cl100k_base"
    assert "not available offline" in info.value.reason
    assert str(tmp_path) in info.value.reason
    with pytest.raises(TokenizerUnavailable, match="unknown encoding"):
        TiktokenEstimator.load("no_such_encoding")
    with pytest.raises(TokenizerUnavailable, match="cannot read"):
        TiktokenEstimator.load("mine", path=str(tmp_path / "missing.tiktoken"))


def write_bpe(path: Path) -> None:
    """A real (tiny) tiktoken BPE file: every byte, then merges up to 'hello'."""
    ranks = {bytes([b]): b for b in range(256)}
    for token in (b"he", b"ll", b"llo", b"hello"):
        ranks[token] = len(ranks)
    lines = [f"{base64.b64encode(t).decode()} {r}" for t, r in ranks.items()]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


async def test_tiktoken_from_a_local_bpe_file(tmp_path: Path) -> None:
    path = tmp_path / "tiny.tiktoken"
    write_bpe(path)
    est = TiktokenEstimator.load("tiny", path=str(path))
    assert isinstance(est, TokenEstimator) and est.name == "tiktoken:tiny"
    assert est.count_text("hello") == 1
    assert est.count_text("hello hello") == 3  # "hello", " ", "hello"
    assert est.count_text("hey") == 2  # "he", "y"
    assert est.count_text("你") == 3  # three UTF-8 bytes, no merges
    msgs: list[Message] = [SystemMessage("hello"), UserMessage("hello")]
    n = await est.count(msgs)
    assert n == est.count_text(
        "<|im_start|>system\nhello<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n"
    )
    assert await est.count([]) == 0


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_server_tokenizer_unreachable_is_a_typed_error() -> None:
    async with httpx2.AsyncClient() as client:
        tok = ServerTokenizer(client, f"http://127.0.0.1:{closed_port()}")
        with pytest.raises(TokenizerUnavailable, match="ConnectError"):
            await tok.count([UserMessage("hi")])


Routes = dict[str, tuple[int, bytes]]


async def serve(
    listener: trio.SocketListener, routes: Routes, seen: list[tuple[str, dict[str, object], str]]
) -> None:
    """A minimal HTTP server: each request gets the (status, body) of its path, 404 otherwise;
    ``seen`` records (path, JSON body, authorization header)."""
    while True:
        stream = await listener.accept()
        async with stream:
            data = b""
            while b"\r\n\r\n" not in data:
                data += await stream.receive_some(65536)
            head, _, rest = data.partition(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            pairs = (line.split(": ", 1) for line in lines[1:])
            headers = {name.lower(): value for name, value in pairs}
            while len(rest) < int(headers["content-length"]):
                rest += await stream.receive_some(65536)
            path = lines[0].split()[1]
            seen.append((path, json.loads(rest), headers.get("authorization", "")))
            status, body = routes.get(path, (404, b'{"error": "File Not Found"}'))
            await stream.send_all(
                b"HTTP/1.1 %d X\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                b"connection: close\r\n\r\n%s" % (status, len(body), body)
            )


LLAMA_CPP = "/tokenize"
LLAMA_CPP_PYTHON = "/extras/tokenize/count"


@pytest.mark.parametrize(
    ("routes", "expected", "paths"),
    [
        # llama.cpp's server: found on the first try.
        ({LLAMA_CPP: (200, b'{"tokens": [1, 2, 3]}')}, 3, [LLAMA_CPP, LLAMA_CPP]),
        # llama-cpp-python's server: /tokenize is 404 once, then its own path is kept.
        (
            {LLAMA_CPP_PYTHON: (200, b'{"count": 42}')},
            42,
            [LLAMA_CPP, LLAMA_CPP_PYTHON, LLAMA_CPP_PYTHON],
        ),
        ({LLAMA_CPP: (500, b"boom")}, "HTTP 500", [LLAMA_CPP, LLAMA_CPP]),
        ({LLAMA_CPP: (200, b'{"count": 3}')}, "unexpected answer", [LLAMA_CPP, LLAMA_CPP]),
        (
            {LLAMA_CPP_PYTHON: (200, b'{"tokens": []}')},
            "unexpected answer",
            [LLAMA_CPP, LLAMA_CPP_PYTHON, LLAMA_CPP_PYTHON],
        ),
        (
            {LLAMA_CPP_PYTHON: (200, b'{"count": -1}')},
            "unexpected count",
            [LLAMA_CPP, LLAMA_CPP_PYTHON, LLAMA_CPP_PYTHON],
        ),
        ({}, "HTTP 404", [LLAMA_CPP, LLAMA_CPP_PYTHON, LLAMA_CPP_PYTHON]),
    ],
)
async def test_server_tokenizer_speaks_both_dialects_and_keeps_the_path_that_answered(
    routes: Routes, expected: int | str, paths: list[str]
) -> None:
    (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listener.socket.getsockname()[1]
    seen: list[tuple[str, dict[str, object], str]] = []
    async with trio.open_nursery() as nursery, httpx2.AsyncClient() as client:
        nursery.start_soon(serve, listener, routes, seen)
        tok = ServerTokenizer(client, f"http://127.0.0.1:{port}/v1", model="m", api_key="k1")
        for _ in range(2):
            if isinstance(expected, int):
                assert await tok.count([UserMessage("hi")]) == expected
            else:
                with pytest.raises(TokenizerUnavailable, match=expected):
                    await tok.count([UserMessage("hi")])
        nursery.cancel_scope.cancel()
    await listener.aclose()
    assert [path for path, _, _ in seen] == paths
    text = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    for path, body, authorization in seen:
        assert authorization == "Bearer k1"
        if path == LLAMA_CPP:
            assert body == {"content": text, "add_special": True, "parse_special": True}
        else:
            assert body == {"input": text, "model": "m"}


async def test_server_tokenizer_with_a_fixed_path_never_probes() -> None:
    (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listener.socket.getsockname()[1]
    seen: list[tuple[str, dict[str, object], str]] = []
    routes = {LLAMA_CPP_PYTHON: (200, b'{"count": 7}')}
    async with trio.open_nursery() as nursery, httpx2.AsyncClient() as client:
        nursery.start_soon(serve, listener, routes, seen)
        tok = ServerTokenizer(client, f"http://127.0.0.1:{port}", path=LLAMA_CPP_PYTHON)
        assert tok.url == f"http://127.0.0.1:{port}{LLAMA_CPP_PYTHON}"
        assert await tok.count_text("hi") == 7
        nursery.cancel_scope.cancel()
    await listener.aclose()
    assert seen == [(LLAMA_CPP_PYTHON, {"input": "hi"}, "")]


async def test_compactor_falls_back_to_the_heuristic_and_says_so(system: ActorSystem) -> None:
    async with httpx2.AsyncClient() as client:
        tok = ServerTokenizer(client, f"http://127.0.0.1:{closed_port()}")
        ref = await system.root.start_child(compactor_spec("c", estimator=tok))
        conv: list[Message] = [UserMessage("hello there")]
        result = await ref.ask(Compact(messages=conv))
        assert result.report.estimator.startswith("heuristic (fallback: ConnectError")
        assert result.report.tokens_before == estimate_tokens(conv)


async def test_heuristic_estimator_is_an_estimator() -> None:
    est = HeuristicEstimator()
    assert isinstance(est, TokenEstimator)
    msgs = [UserMessage("The cat sat on the mat.")]
    assert await est.count(msgs) == est.estimate(msgs) == estimate_tokens(msgs)
