"""A first bot: one tool, one question, the model the configuration names.

    python first_bot.py

The model is the one ``agcore-actors run`` would use: ``OPENAI_BASE_URL`` /
``OPENAI_API_KEY`` / ``OPENAI_MODEL`` or ``ANTHROPIC_API_KEY`` when set, else the
``agcore.toml`` of the current directory (or the user's), else the embedded model
(``pip install 'agcore-actors[local]'``). Sessions are kept in memory unless the
configuration's ``[store] path`` names a SQLite file.
"""

from __future__ import annotations

import trio

from agcore_actors.agent import SessionHost
from agcore_actors.config import load_settings, open_runtime
from agcore_actors.tools import function_tool


@function_tool
async def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


async def main() -> None:
    settings = load_settings()  # agcore.toml and the environment; one line per mistake
    async with (
        open_runtime(settings, tools=[word_count]) as runtime,
        SessionHost(runtime.system, runtime.bundle, runtime.host_config) as host,
    ):
        result = await host.run("first", "How many words are in 'the quick brown fox'?")
        print(result.text)
        print(f"{result.model_calls} model call(s), {result.tool_calls} tool call(s)")


if __name__ == "__main__":
    trio.run(main)
