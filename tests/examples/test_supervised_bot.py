"""examples/supervised_bot.py: an idle session is evicted and resumes from SQLite with its
history, within one run and across runs of the bot."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.examples.model import EXAMPLES, ROOT, answer, bodies
from tests.peers.fault_server import FaultServer


@contextmanager
def running_bot(base: str, db: Path) -> Iterator[subprocess.Popen[str]]:
    """The bot as a child process; on exit its input ends, and it must stop cleanly."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_BASE_URL": base}
    argv = [sys.executable, str(EXAMPLES / "supervised_bot.py"), str(db), "--idle-ttl", "0.5"]
    pipe = subprocess.PIPE
    with subprocess.Popen(argv, stdin=pipe, stdout=pipe, stderr=pipe, text=True, env=env) as bot:
        try:
            yield bot
        finally:
            assert bot.stdin is not None and bot.stderr is not None
            bot.stdin.close()  # end of input: the bot drains and stops
            try:
                code = bot.wait(timeout=30)
            except subprocess.TimeoutExpired:
                bot.kill()
                raise
            assert code == 0, bot.stderr.read()


def say(bot: subprocess.Popen[str], line: str, last: str = "bot -> ") -> list[str]:
    """Send ``line``; what the bot prints up to the line starting with ``last``."""
    assert bot.stdin is not None and bot.stdout is not None
    bot.stdin.write(line + "\n")
    bot.stdin.flush()
    printed = [bot.stdout.readline().rstrip("\n")]
    while not printed[-1].startswith(last) and printed[-1]:
        printed.append(bot.stdout.readline().rstrip("\n"))
    return printed


def test_an_evicted_session_resumes_from_sqlite(fault_server: FaultServer, tmp_path: Path) -> None:
    base, scenario = fault_server.script(answer("Hello Ann!"), answer("You are Ann."))
    db = tmp_path / "bot.db"
    with running_bot(base, db) as bot:
        assert say(bot, "ann: Hi, I am Ann.") == ["bot -> ann (activated): Hello Ann!"]
        time.sleep(1.5)  # three idle TTLs: the sweeper evicts ann
        status = say(bot, "/status", last="  sessions: ")
        assert "  supervisor runtime: running, restarts=0" in status
        assert "  actor store: running, restarts=0" in status
        assert status[-1] == "  sessions: 0 live, 1 evicted idle"
        assert say(bot, "ann: What is my name?") == ["bot -> ann (activated): You are Ann."]
    history = [m["content"] for m in bodies(scenario)[1]["messages"][1:]]
    assert history == ["Hi, I am Ann.", "Hello Ann!", "What is my name?"]

    # A new process on the same file: the conversation goes on.
    with running_bot(base, db) as bot:
        assert say(bot, "ann: Still there?") == ["bot -> ann (activated): You are Ann."]
    history = [m["content"] for m in bodies(scenario)[2]["messages"][1:]]
    assert history[-2:] == ["You are Ann.", "Still there?"] and len(history) == 5
