"""Real summarizers for tests: trio functions, no model."""

from __future__ import annotations

import trio

from agcore_actors.llm import Message, content_text


class Extractive:
    """Keeps the first 60 characters of each user line of the transcript."""

    def __init__(self) -> None:
        self.calls = 0
        self.inputs: list[str] = []

    async def __call__(self, messages: list[Message], *, max_tokens: int) -> str:
        self.calls += 1
        await trio.lowlevel.checkpoint()
        transcript = content_text(messages[-1].content)
        self.inputs.append(transcript)
        lines = [line[:60] for line in transcript.splitlines() if line.startswith("user:")]
        return "Goal and facts:\n" + "\n".join(lines or ["(nothing)"])


class Failing:
    """Fails every call until ``healed``."""

    def __init__(self) -> None:
        self.calls = 0
        self.healed = False

    async def __call__(self, messages: list[Message], *, max_tokens: int) -> str:
        self.calls += 1
        await trio.lowlevel.checkpoint()
        if not self.healed:
            raise ConnectionError("model server down")
        return "short summary"


class Stalling:
    """Never answers; records whether it was cancelled."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.cancelled = False

    async def __call__(self, messages: list[Message], *, max_tokens: int) -> str:
        self.started.set()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            self.cancelled = True
            raise
        raise AssertionError("unreachable")
