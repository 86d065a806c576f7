"""``agcore-actors chat`` driven in a real pseudo-terminal (pexpect) against the fault
server: a turn streams with its tool call shown, Ctrl-C mid-turn cancels the turn and not
the program, the next turn sees the history, approvals are answered inline, and the
slash commands and exit keys work."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect  # type: ignore[import-untyped]  # no stubs in the dev environment
import pytest

from tests.cli.agent_server import model_env, sent_messages, text, tool_call
from tests.peers.fault_server import FaultServer, Scenario

PROMPT = "you> "


def spawn(url: str, tmp_path: Path, *argv: str) -> pexpect.spawn:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agcore_actors.cli", "chat", "--store", str(tmp_path / "s.db"), *argv],
        env=model_env(url, TERM="xterm-256color"),
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 160),
    )
    child.expect(PROMPT)
    return child


@pytest.fixture
def children() -> Iterator[list[pexpect.spawn]]:
    spawned: list[pexpect.spawn] = []
    yield spawned
    for child in spawned:
        child.close(force=True)


def wait_for_requests(scenario: Scenario, count: int, child: pexpect.spawn) -> None:
    """Until the server has seen ``count`` requests (reading the terminal meanwhile)."""
    for _ in range(600):
        if len(scenario.requests) >= count:
            return
        try:
            child.expect(pexpect.TIMEOUT, timeout=0.1)
        except pexpect.EOF:
            break
    raise AssertionError(f"{len(scenario.requests)} requests, not {count}")


def test_a_turn_streams_ctrl_c_cancels_the_next_turn_sees_the_history(
    fault_server: FaultServer, tmp_path: Path, children: list[pexpect.spawn]
) -> None:
    url, scenario = fault_server.script(
        tool_call("calculate", {"expression": "6 * 7"}),
        text("The answer ", "is 42."),
        text("Once upon a time", stall=60),  # a turn that only Ctrl-C ends
        text("You asked about 6 * 7."),
    )
    child = spawn(url, tmp_path)
    children.append(child)
    child.sendline("What is 6 * 7?")
    child.expect_exact('calculate({"expression": "6 * 7"})')
    child.expect_exact("→ ok")
    child.expect_exact("is 42.")
    child.expect(PROMPT)

    child.sendline("Tell me a long story")
    child.expect_exact("Once upon a time")
    wait_for_requests(scenario, 3, child)
    child.sendintr()
    child.expect_exact("(turn cancelled)")
    child.expect(PROMPT)
    assert child.isalive()  # Ctrl-C cancelled the turn, not the program

    child.sendline("What did I ask first?")
    child.expect_exact("You asked about 6 * 7.")
    child.expect(PROMPT)
    history = [(m["role"], m.get("content")) for m in sent_messages(scenario.requests[3].body)]
    assert ("user", "What is 6 * 7?") in history
    assert ("tool", "6 * 7 = 42") in history
    assert ("assistant", "The answer is 42.") in history
    assert ("user", "Tell me a long story") in history  # the cancelled turn is stored too
    # ... with the words the user saw, marked as cut short.
    assert ("assistant", "Once upon a time\n\n[interrupted]") in history
    assert history[-1] == ("user", "What did I ask first?")

    child.sendeof()  # Ctrl-D at the prompt: exit 0
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    store = ["--store", str(tmp_path / "s.db")]
    listed = sessions_cli(tmp_path, "list", "--json", *store)
    [session] = [record["id"] for record in json.loads(listed)]
    shown = sessions_cli(tmp_path, "show", session, *store)
    assert "you> Tell me a long story\n\nOnce upon a time\n\n[interrupted]\n" in shown


def sessions_cli(tmp_path: Path, *argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "agcore_actors.cli", "sessions", *argv],
        env=model_env(""),
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def test_an_approval_is_asked_inline_and_the_answer_decides(
    fault_server: FaultServer, tmp_path: Path, children: list[pexpect.spawn]
) -> None:
    write = tool_call("write_file", {"path": "a.txt", "content": "hello"})
    url, scenario = fault_server.script(write, text("Written."), write, text("Not written."), write)
    child = spawn(url, tmp_path)
    children.append(child)
    child.sendline("Write a.txt")
    child.expect_exact("allow write_file(")
    child.expect_exact("[y/N]")
    child.sendline("y")
    child.expect_exact("Written.")
    child.expect(PROMPT)
    assert (tmp_path / "a.txt").read_text() == "hello"
    (tmp_path / "a.txt").unlink()
    child.sendline("Write it again")
    child.expect_exact("[y/N]")
    child.sendline("n")
    child.expect_exact("→ denied")
    child.expect(PROMPT)
    assert not (tmp_path / "a.txt").exists()
    assert json.dumps("the user said no")[1:-1] in json.dumps(scenario.requests[-1].body)
    child.sendline("Write it once more")
    child.expect_exact("[y/N]")
    child.sendintr()  # Ctrl-C at the question: no answer needed, the turn is cancelled
    child.expect_exact("(turn cancelled)")
    child.expect(PROMPT)
    assert child.isalive() and not (tmp_path / "a.txt").exists()


def test_slash_commands_and_two_ctrl_c_at_the_prompt_exit_130(
    fault_server: FaultServer, tmp_path: Path, children: list[pexpect.spawn]
) -> None:
    url, scenario = fault_server.script(text("Hi."))
    child = spawn(url, tmp_path, "--plain")
    children.append(child)
    child.sendline("Hello")
    child.expect_exact("Hi.")
    child.expect(PROMPT)
    child.sendline("/usage")
    child.expect(r"1 turns, 30 input \+ 6 output = 36 tokens")
    child.sendline("/agent")
    child.expect_exact("agents: assistant (current), plain")
    child.sendline("/agent plain")
    child.expect_exact("agent assistant -> plain from the next turn")
    child.expect(PROMPT)
    child.sendline("Again")
    child.expect_exact("Hi.")
    child.expect(PROMPT)
    assert "tools" not in scenario.requests[-1].body  # the plain agent offers none
    child.sendline("/sessions")
    child.expect(r"\* \S+  plain  2 turns")
    child.sendline("/reset")
    child.expect("new session")
    child.expect(PROMPT)
    child.sendintr()
    child.expect(PROMPT)
    assert child.isalive()  # one Ctrl-C at the prompt does not quit
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130


def test_a_pasted_image_path_goes_with_the_line(
    fault_server: FaultServer, tmp_path: Path, children: list[pexpect.spawn]
) -> None:
    (tmp_path / "my cat.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    url, scenario = fault_server.script(text("A cat."))
    child = spawn(url, tmp_path)
    children.append(child)
    child.sendline("what is this? my\\ cat.png")
    child.expect_exact("attached my cat.png (image/png, 8 bytes)")
    child.expect_exact("A cat.")
    child.expect(PROMPT)
    assert sent_messages(scenario.requests[0].body)[-1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is this? my\\ cat.png"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ],
    }
