"""One question, one answer: the smallest use of the LLM layer.

The model is any OpenAI-compatible endpoint (see ``_model.py``)::

    OPENAI_BASE_URL=https://api.deepseek.com/v1 OPENAI_API_KEY=sk-... \
    OPENAI_MODEL=deepseek-chat python examples/simple_visit.py

A :class:`~agcore_actors.llm.ProviderActor` owns the HTTP client; ``ask(Chat(...))``
sends one request through its retry loop and returns the typed reply. A failure is a
typed :class:`~agcore_actors.llm.LlmError` (its ``kind`` says which): printed to stderr,
exit status 1.
"""

from __future__ import annotations

import sys

import trio

from agcore_actors import ActorSystem
from agcore_actors.llm import ChatRequest, LlmError, system, user
from agcore_actors.llm import messages as lm

from _model import llm_spec

QUESTION = "Introduce yourself."


async def main(question: str) -> list[str]:
    async with ActorSystem() as actors:
        # The provider actor lives under the root supervisor: a crash restarts it.
        llm = await actors.root.start_child(llm_spec())
        request = ChatRequest(
            messages=[
                system("You are a concise assistant: answer in one sentence."),
                user(question),
            ],
            temperature=1.3,
            max_tokens=1024,
        )
        reply = await llm.ask(lm.Chat(request))
    usage = reply.usage
    return [
        f"reply: {reply.text}",
        f"usage: {usage.total_input_tokens} input, {usage.output_tokens} output tokens",
    ]


if __name__ == "__main__":
    print("sending the request...")
    try:
        lines = trio.run(main, sys.argv[1] if len(sys.argv) > 1 else QUESTION)
    except LlmError as error:
        print(f"request failed ({error.kind}): {error}", file=sys.stderr)
        sys.exit(1)
    print("\n".join(lines))
