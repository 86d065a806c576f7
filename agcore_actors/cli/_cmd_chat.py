"""``agcore-actors chat``: an interactive session with an agent.

Each line is a turn, streamed (live markdown and spinners on a terminal, plain text
otherwise), its tool calls shown as they run; a tool that needs approval is asked about
inline (``y`` allows), and an MCP server's question (elicitation) is answered field by
field (see :mod:`._elicit_form`). Every turn is stored, so ``--session ID`` (or ``run --session``)
continues it later.

Keys: Ctrl-C during a turn cancels that turn (stored as cancelled; the program goes on);
Ctrl-C twice in a row at the prompt quits with status 130; Ctrl-D at the prompt quits
with status 0. Commands: ``/reset`` (a new session), ``/usage``, ``/agent [NAME]``,
``/sessions``, ``/help``, ``/quit``, and each MCP server's prompts as
``/SERVER:PROMPT [arguments]`` (see :mod:`._mcp_prompts`): the filled-in prompt is the
turn's text. A line that names image or PDF files (a path pasted or dragged in) attaches
them to its turn (see :mod:`._paste`).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import trio

from .._errors import AgcoreError
from ..agent import messages as am
from ..mcp import messages as mm
from ..store import messages as sm
from ._cmd_run import new_session_id
from ._common import INTERRUPTED, OK, add_command, examples
from ._elicit_form import prompting_elicitor
from ._mcp_prompts import McpPromptCommand, load_prompts, prompt_arguments, prompt_text, usage
from ._paste import pasted_media
from ._render import PlainView, RichView, View
from ._runtime import Runtime, RuntimeOptions, add_runtime_flags, open_runtime
from ._turns import LineReader, TurnRunner, prompting

__all__ = ["register"]

HELP = """commands:
  /reset         start a new session (the old one stays stored)
  /usage         tokens used by this session
  /agent [NAME]  show the agents, or switch to NAME from the next turn
  /sessions      the stored sessions, most recent last
  /quit          leave (also Ctrl-D)
a line that names image or PDF files (paste or drag them in) sends them with it"""


@attrs.define
class Terminal:
    """Where the chat writes: through the view, and the prompt itself."""

    view: View
    rich: bool

    def say(self, text: str) -> None:
        self.view.note(text)

    def prompt(self, text: str) -> None:
        self.view.pause()
        if self.rich:
            assert isinstance(self.view, RichView)
            self.view.console.print(text, style="bold green", markup=False, end="")
        else:
            print(text, end="", flush=True)


class Chat:
    """The read-and-turn loop (see the module doc)."""

    def __init__(self, runtime: Runtime, terminal: Terminal, session: str) -> None:
        self.runtime = runtime
        self.terminal = terminal
        self.session = session
        self.reader = LineReader()
        local = runtime.model.startswith("local ")
        approver = prompting(self.reader, terminal.prompt)
        elicitor = prompting_elicitor(self.reader.readline, terminal.prompt, terminal.say)
        self.runner = TurnRunner(runtime, terminal.view, approver, local=local, elicitor=elicitor)
        self.prompts: dict[str, McpPromptCommand] = {}
        self._read: trio.CancelScope | None = None
        self._prompt_interrupts = 0
        self._quit = False

    async def run(self) -> int:
        say = self.terminal.say
        self.prompts = await load_prompts(self.runtime.system, list(self.runtime.mcp_servers))
        say(f"chat with {self.runtime.model}; session {self.session}; /help for commands")
        with trio.open_signal_receiver(signal.SIGINT) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._signals, signals)
                status = await self._loop()
                nursery.cancel_scope.cancel()
        return status

    async def _signals(self, signals: AsyncIterator[int]) -> None:
        async for _ in signals:
            if self.runner.running:
                self.terminal.say("^C: cancelling the turn")
                await self.runner.interrupt()
            elif self._read is not None:
                self._prompt_interrupts += 1
                self._quit = self._prompt_interrupts >= 2
                self._read.cancel()

    async def _loop(self) -> int:
        while True:
            self.terminal.prompt("you> ")
            line: str | None = None
            with trio.CancelScope() as self._read:
                line = await self.reader.readline()
            self._read = None
            if self._quit:
                print(flush=True)
                return INTERRUPTED
            if self._read_cancelled(line):
                continue
            if line is None:
                print(flush=True)
                return OK
            self._prompt_interrupts = 0
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                if await self._command(text):
                    return OK
                continue
            await self._turn(text)

    def _read_cancelled(self, line: str | None) -> bool:
        if line is None and not self.reader.at_eof:
            print(flush=True)  # one Ctrl-C at the prompt: a fresh prompt
            self.terminal.say("(Ctrl-C again or Ctrl-D to quit)")
            return True
        return False

    async def _turn(self, text: str) -> None:
        self._prompt_interrupts = 0
        parts, notes = pasted_media(text, Path.cwd())
        for note in notes:
            self.terminal.say(f"({note})")
        outcome = await self.runner.run(self.session, text, parts)
        result = outcome.result
        if result is None or result.status == "cancelled":
            self.terminal.say("(turn cancelled)")
        elif result.status == "failed":
            self.terminal.say(f"error: {result.error_kind}: {' '.join(result.error.split())}")

    # -- commands -------------------------------------------------------------------------

    async def _command(self, text: str) -> bool:
        """Run a ``/command``; True if it asks to quit."""
        name, _, rest = text.partition(" ")
        say = self.terminal.say
        try:
            match name:
                case "/quit" | "/exit":
                    return True
                case "/help":
                    say("\n".join([HELP, *("  " + usage(p) for p in self.prompts.values())]))
                case "/reset":
                    self.session = new_session_id()
                    say(f"new session {self.session}")
                case "/usage":
                    await self._usage()
                case "/agent":
                    await self._agent(rest.strip())
                case "/sessions":
                    await self._sessions()
                case _ if name in self.prompts:
                    await self._prompt(self.prompts[name], rest)
                case _:
                    say(f"unknown command {name}; /help lists them")
        except AgcoreError as exc:
            say(f"error: {exc.kind}: {exc}")
        return False

    async def _prompt(self, entry: McpPromptCommand, rest: str) -> None:
        try:
            arguments = prompt_arguments(entry, rest)
        except ValueError as exc:
            self.terminal.say(f"error: {exc}")
            return
        connection = self.runtime.system.lookup(f"mcp:{entry.server}")
        rendered = await connection.ask(mm.GetPrompt(entry.prompt.name, arguments))
        await self._turn(prompt_text(rendered))

    async def _usage(self) -> None:
        info: am.SessionInfo = await self.runtime.host.ask(self.session, am.GetSessionInfo())
        usage = info.usage
        self.terminal.say(
            f"session {info.session}: {info.turns} turns, {usage.total_input_tokens} input "
            f"+ {usage.output_tokens} output = {usage.total_tokens} tokens"
        )

    async def _agent(self, name: str) -> None:
        host = self.runtime.host
        info: am.SessionInfo = await host.ask(self.session, am.GetSessionInfo())
        if not name:
            agents = ", ".join(
                f"{a} (current)" if a == info.agent else a for a in self.runtime.agents
            )
            self.terminal.say(f"agents: {agents}")
            return
        if name not in self.runtime.agents:
            self.terminal.say(f"no agent {name!r}; agents: {', '.join(self.runtime.agents)}")
            return
        # Each agent has its own limits, kept by its own host: the session is put away
        # here (its history stays in the store) and taken up by the agent's host.
        await host.close(self.session)
        self.runtime = self.runtime.switch(name)
        self.runner.runtime = self.runtime
        previous: str = await self.runtime.host.ask(self.session, am.SwitchAgent(name))
        self.terminal.say(f"agent {previous} -> {name} from the next turn")

    async def _sessions(self) -> None:
        page: sm.SessionPage = await self.runtime.store.ask(sm.ListSessions(limit=1000))
        rows = page.sessions[-15:]
        if not rows:
            self.terminal.say("no stored sessions")
        for record in rows:
            mark = "*" if record.id == self.session else " "
            self.terminal.say(
                f"{mark} {record.id}  {record.agent or '-'}  {record.turns} turns  "
                f"{record.usage.total_tokens} tokens"
            )


async def _chat(args: argparse.Namespace, terminal: Terminal) -> int:
    options = RuntimeOptions.from_args(args)
    session = args.session or new_session_id()
    async with open_runtime(
        options, progress=terminal.view.progress, session=args.session
    ) as runtime:
        return await Chat(runtime, terminal, session).run()


def _main(args: argparse.Namespace) -> int:
    rich = sys.stdout.isatty() and not args.plain and os.environ.get("TERM") != "dumb"
    view: View = RichView() if rich else PlainView(out=sys.stdout, notes=sys.stdout)
    try:
        status: int = trio.run(_chat, args, Terminal(view, rich))
    finally:
        view.close()
    return status


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    chat = add_command(
        commands,
        "chat",
        _main,
        help="chat with an agent (default model: the embedded local one)",
        epilog=examples(
            "agcore-actors chat",
            "agcore-actors chat --small",
            "agcore-actors chat --session 20261123-101500-ab12",
        ),
    )
    chat.add_argument("--session", metavar="ID", help="continue this stored session")
    chat.add_argument("--plain", action="store_true", help="plain text even on a terminal")
    add_runtime_flags(chat)
