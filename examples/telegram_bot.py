"""A Telegram bot on aiogram, one agent session per chat, the host in aiogram's loop.

    TELEGRAM_TOKEN=... python examples/telegram_bot.py

Every chat is a session of an :class:`~agcore_actors.asyncio.AsyncioHost` (named after
the chat), so each conversation keeps its own history; aiogram handles each update as a
task of its own, so chats are answered concurrently, within the host's limits.
``TELEGRAM_API_URL`` points the bot at another Bot API server (a local one, or the
tests' fake). Ctrl-C or SIGTERM: aiogram stops polling, then the host drains (turns in
flight finish or are cancelled and committed) and stops the actors.

Needs the ``examples`` extra: ``pip install 'agcore-actors[examples]'``.
"""

from __future__ import annotations

import asyncio
import os
import sys

try:
    from aiogram import Bot, Dispatcher
    from aiogram.client.session.aiohttp import AiohttpSession
    from aiogram.client.telegram import PRODUCTION, TelegramAPIServer
    from aiogram.types import Message
except ModuleNotFoundError as missing:
    sys.exit(f"{missing.name} is missing: pip install 'agcore-actors[examples]'")

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, HostConfig, StoreTurns
from agcore_actors.asyncio import AsyncioHost
from agcore_actors.store import InMemorySessions, session_store_spec

from _model import llm_spec

LIMITS = HostConfig(max_sessions=1000, max_turns_in_flight=64)


async def build(system: ActorSystem) -> AgentBuilder:
    """The actors, started in the host's trio run."""
    llm = await system.root.start_child(llm_spec())
    store = await system.root.start_child(session_store_spec("store", backend=InMemorySessions()))
    agent = Agent(name="chat", instructions="You are a friendly Telegram bot. Be brief.")
    return AgentBuilder().provider(llm).store(StoreTurns(store)).agent(agent)


async def main() -> None:
    base = os.environ.get("TELEGRAM_API_URL")
    api = TelegramAPIServer.from_base(base) if base else PRODUCTION
    bot = Bot(os.environ["TELEGRAM_TOKEN"], session=AiohttpSession(api=api))
    dispatcher = Dispatcher()

    async with AsyncioHost(build, LIMITS) as host:

        @dispatcher.message()
        async def reply(message: Message) -> None:
            result = await host.run(f"chat-{message.chat.id}", message.text or "")
            await message.answer(result.text or f"({result.status})")

        print("polling", flush=True)
        await dispatcher.start_polling(bot, polling_timeout=1)
        print("polling stopped", flush=True)
    print("host stopped", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
