"""The compactor against the real local model server (llama.cpp's server from xllamacpp,
Qwen2.5-Coder-0.5B: the session's shared ``local_model``).

The server runs with a 4,096-token window. A conversation of about 5,000
tokens is refused by it; the compactor, counting with the server's own
tokenizer and summarising through a real ProviderActor, makes it fit, and
the server accepts the result.
"""

from __future__ import annotations

import attrs
import httpx2
import msgspec
import pytest

from agcore_actors import ActorSystem
from agcore_actors.context import (
    CompactConfig,
    ProviderSummarizer,
    ServerTokenizer,
    compactor_spec,
)
from agcore_actors.context.messages import Compact, CompactAfterOverflow
from agcore_actors.context.policy import SUMMARY_PREFIX, estimate_text_tokens
from agcore_actors.llm import (
    AssistantMessage,
    Chat,
    ChatRequest,
    ContextLengthError,
    FunctionCall,
    Message,
    OpenAICompatibleProvider,
    ProviderRegistry,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    content_text,
    provider_actor,
)
from agcore_actors.local.messages import Endpoint
from agcore_actors.prompt import validate_messages
from tests.context.conversations import pairing_errors
from tests.peers.local_model import N_CTX, openai_config

pytestmark = pytest.mark.slow

CITIES = [
    "Paris", "Berlin", "Madrid", "Rome", "Vienna", "Prague",
    "Lisbon", "Dublin", "Oslo", "Athens", "Warsaw", "Brussels",
    "Helsinki", "Budapest", "Zagreb", "Sofia", "Riga", "Vilnius",
    "Tallinn", "Bern", "Ljubljana", "Bratislava", "Belgrade", "Bucharest",
]  # fmt: skip

ENGLISH = (
    "The committee met on Tuesday to review the quarterly budget. After a long discussion "
    "about travel costs, software licences and the new office lease, the members agreed to "
    "postpone the decision on hiring until the next meeting, scheduled for the first week "
    "of March. The chair thanked everyone for their patience and closed the session at 5 pm."
)
CHINESE = (
    "委员会于星期二开会审查季度预算。经过关于差旅费用、软件许可和新办公室租约的长时间讨论\uff0c"
    "成员们同意将招聘决定推迟到下次会议\uff0c下次会议定于三月的第一周举行。主席感谢大家的耐心\uff0c"
    "并于下午五点结束了会议。"
)


def long_conversation() -> list[Message]:
    msgs: list[Message] = [
        SystemMessage("You are a travel assistant. Use the weather tool, answer briefly."),
        UserMessage("Plan a week in Europe: check the weather in each city I name."),
    ]
    for n, city in enumerate(CITIES):
        call = ToolCall(f"call_{n}", FunctionCall("get_weather", f'{{"city": "{city}"}}'))
        msgs.append(AssistantMessage("", tool_calls=[call]))
        report = (
            f"Weather report for {city}: mostly sunny, highs of {18 + n} degrees, lows of "
            f"{8 + n} degrees, light wind from the west, humidity {50 + n} percent. "
        ) * 2
        msgs.append(ToolMessage(report, f"call_{n}"))
        note = (
            f"Noted {city} at {18 + n} degrees. I would like to visit the old town, a "
            "museum and a good restaurant there, and I prefer to walk rather than take "
            "the bus when the weather is fine. "
        )
        msgs.append(UserMessage(note * 2 + "Next city, please."))
    return msgs


def local_registry(endpoint: Endpoint) -> ProviderRegistry:
    return ProviderRegistry().register(OpenAICompatibleProvider(openai_config(endpoint)))


def tokenizer(client: httpx2.AsyncClient, endpoint: Endpoint) -> ServerTokenizer:
    return ServerTokenizer(client, endpoint.base_url, api_key=endpoint.api_key)


def config() -> CompactConfig:
    # Budget: 4096 - 2848 - 248 = 1000 prompt tokens (small prompts keep the test quick on a
    # 2-core machine); the summariser's own request (instructions + at most 500 tokens of
    # transcript + 120 out) fits the window too.
    return CompactConfig(
        context_window=N_CTX,
        reserved_tokens=2848,
        buffer_tokens=248,
        keep_recent=3,
        protect_head=1,
        summary_input_tokens=500,
        summary_message_chars=300,
        summary_max_tokens=120,
        summary_timeout=120.0,
    )


async def test_server_tokenizer_matches_the_servers_prompt_count(local_model: Endpoint) -> None:
    msgs: list[Message] = [SystemMessage("You are terse."), UserMessage("Name three colours.")]
    async with httpx2.AsyncClient(timeout=60) as client:
        tok = tokenizer(client, local_model)
        counted = await tok.count(msgs)
        assert tok.url.endswith("/tokenize")  # llama.cpp's dialect, detected
        body = {"messages": msgspec.to_builtins(msgs), "max_tokens": 1}
        headers = {"Authorization": f"Bearer {local_model.api_key}", **local_model.headers}
        url = f"{local_model.base_url}/chat/completions"
        reply = await client.post(url, json=body, headers=headers)
        reply.raise_for_status()
        assert counted == reply.json()["usage"]["prompt_tokens"]


async def test_heuristic_against_the_model_tokenizer(local_model: Endpoint) -> None:
    """The heuristic's documented behaviour, measured: conservative for English, and
    for Chinese too with Qwen's vocabulary (about 1.6 characters per token; an
    English-centric vocabulary such as SmolLM2's needs more tokens than the heuristic's
    one per character, which the Compactor's calibration absorbs)."""
    async with httpx2.AsyncClient(timeout=60) as client:
        tok = tokenizer(client, local_model)
        english = await tok.count_text(ENGLISH)
        chinese = await tok.count_text(CHINESE)
    ratio_en = estimate_text_tokens(ENGLISH) / english
    ratio_zh = estimate_text_tokens(CHINESE) / chinese
    assert 1.0 <= ratio_en <= 1.6, ratio_en
    assert 1.0 <= ratio_zh <= 2.0, ratio_zh


async def test_summary_compaction_is_accepted_by_the_real_server(
    local_model: Endpoint, system: ActorSystem
) -> None:
    llm = await system.spawn(provider_actor(local_registry(local_model)), name="llm")
    conv = long_conversation()
    async with httpx2.AsyncClient(timeout=60) as client:
        tok = tokenizer(client, local_model)
        assert await tok.count(conv) > N_CTX
        # As it is, the server refuses the conversation.
        with pytest.raises(ContextLengthError):
            await llm.ask(Chat(ChatRequest(conv, max_tokens=20)), timeout=120)

        cfg = config()
        compactor = await system.root.start_child(
            compactor_spec(
                "compactor", config=cfg, summarizer=ProviderSummarizer(llm), estimator=tok
            )
        )
        result = await compactor.ask(
            Compact(messages=conv, scratch="Today is Monday."), timeout=300
        )
        report = result.report
        assert [s.name for s in report.steps] == ["microcompact", "summary"], report
        assert report.steps[-1].error is None
        assert report.fits and report.tokens_after < cfg.threshold() == report.budget
        history = result.history
        assert history[:2] == conv[:2]
        assert content_text(history[2].content).startswith(SUMMARY_PREFIX)
        assert history[-3:] == conv[-3:]
        assert pairing_errors(history) == []
        validate_messages(result.messages)
        assert result.messages[-1] == SystemMessage("Today is Monday.")

        # The server accepts the compacted conversation, within the budget.
        reply = await llm.ask(Chat(ChatRequest(result.messages, max_tokens=5)), timeout=120)
        # Our ChatML count writes the tool calls out as JSON (the server's template no longer).
        assert reply.usage.total_input_tokens <= report.tokens_after
        assert reply.usage.total_input_tokens < cfg.threshold()


async def test_reactive_compaction_after_the_servers_refusal(
    local_model: Endpoint, system: ActorSystem
) -> None:
    llm = await system.spawn(provider_actor(local_registry(local_model)), name="llm")
    conv = long_conversation()
    async with httpx2.AsyncClient(timeout=60) as client:
        tok = tokenizer(client, local_model)
        # A compactor that believes in a big window: its own estimate says "fits".
        cfg = attrs.evolve(config(), context_window=128_000, reserved_tokens=20_000)
        compactor = await system.root.start_child(
            compactor_spec(
                "compactor", config=cfg, summarizer=ProviderSummarizer(llm), estimator=tok
            )
        )
        first = await compactor.ask(Compact(messages=conv), timeout=300)
        assert first.report.steps == [] and first.report.fits
        with pytest.raises(ContextLengthError) as refused:
            await llm.ask(Chat(ChatRequest(first.messages, max_tokens=20)), timeout=120)
        assert refused.value.limit == N_CTX and refused.value.actual > N_CTX
        request = CompactAfterOverflow.from_error(first.history, refused.value)
        result = await compactor.ask(request, timeout=300)
        assert result.report.reactive and result.report.steps
        # The configured 20,000-token reserve does not fit the server's window: half of it.
        assert result.report.budget == N_CTX // 2
        assert result.report.fits
        assert pairing_errors(result.history) == []
        reply = await llm.ask(Chat(ChatRequest(result.messages, max_tokens=5)), timeout=120)
        assert reply.usage.total_input_tokens < N_CTX // 2
