"""Pluggable estimators: tiktoken (offline only), a server's tokenizer, fallback."""

from __future__ import annotations

import base64
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


async def serve_once(listener: trio.SocketListener, status: int, body: bytes) -> None:
    stream = await listener.accept()
    async with stream:
        data = b""
        while b"\r\n\r\n" not in data:
            data += await stream.receive_some(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(
            next(
                line.split(b":")[1]
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
        )
        while len(rest) < length:
            rest += await stream.receive_some(65536)
        await stream.send_all(
            b"HTTP/1.1 %d X\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (status, len(body), body)
        )


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (200, b'{"count": 42}', 42),
        (500, b"boom", "HTTP 500"),
        (200, b'{"tokens": []}', "unexpected answer"),
        (200, b'{"count": -1}', "unexpected count"),
    ],
)
async def test_server_tokenizer_against_a_real_http_server(
    status: int, body: bytes, expected: int | str
) -> None:
    (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listener.socket.getsockname()[1]
    async with trio.open_nursery() as nursery, httpx2.AsyncClient() as client:
        nursery.start_soon(serve_once, listener, status, body)
        tok = ServerTokenizer(client, f"http://127.0.0.1:{port}/v1", model="m")
        assert tok.url == f"http://127.0.0.1:{port}/extras/tokenize/count"
        if isinstance(expected, int):
            assert await tok.count([UserMessage("hi")]) == expected
        else:
            with pytest.raises(TokenizerUnavailable, match=expected):
                await tok.count([UserMessage("hi")])
    await listener.aclose()


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
