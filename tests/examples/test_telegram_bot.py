"""examples/telegram_bot.py: an aiogram bot against a fake Telegram Bot API server on
127.0.0.1 (real HTTP, real getUpdates/sendMessage shapes), 100 chats at once, one
session per chat; SIGTERM stops polling, then the host, in order."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.examples.model import EXAMPLES, ROOT, answer, bodies
from tests.examples.telegram_api import TOKEN, telegram_api
from tests.peers.fault_server import FaultServer

CHATS = 100


def test_a_hundred_chats_at_once_one_session_each(fault_server: FaultServer) -> None:
    base, scenario = fault_server.script(answer("Hi", " there!", pause=0.02))
    with telegram_api() as api:
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "OPENAI_BASE_URL": base,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_MODEL": "test-model",
            "TELEGRAM_TOKEN": TOKEN,
            "TELEGRAM_API_URL": api.url,
        }
        child = subprocess.Popen(
            [sys.executable, str(EXAMPLES / "telegram_bot.py")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            for chat in range(1, CHATS + 1):
                api.say(chat, f"first from {chat}")
            first = api.wait_sent(CHATS, timeout=60)
            assert len(first) == CHATS, child.poll() or "the bot answered too few"
            for chat in range(1, CHATS + 1):
                api.say(chat, f"second from {chat}")
            sent = api.wait_sent(2 * CHATS, timeout=60)
            assert len(sent) == 2 * CHATS
            child.send_signal(signal.SIGTERM)
            out, err = child.communicate(timeout=60)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
    assert child.returncode == 0, err
    assert out.splitlines() == ["polling", "polling stopped", "host stopped"]
    assert sorted(m["chat"]["id"] for m in sent) == sorted(list(range(1, CHATS + 1)) * 2)
    assert {m["text"] for m in sent} == {"Hi there!"}
    # Concurrency: the model saw many turns at once.
    assert scenario.max_active > 10
    # One session per chat: each chat's second turn shows the model that chat only.
    for chat in range(1, CHATS + 1):
        body = next(
            b for b in bodies(scenario) if b["messages"][-1]["content"] == f"second from {chat}"
        )
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        assert users == [f"first from {chat}", f"second from {chat}"]
