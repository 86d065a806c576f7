"""Tool-call robustness of the embedded model through the provider: a fixed set of
questions (single calls, the choice among 10 tools, parallel calls, irrelevant tools),
one streamed request each, ``parallel_tool_calls`` on, both behind ``ToolCallRecovery``
(a parser refusal becomes a retry without tools):

- **one call per reply**: the ``bare_json`` template for the 0.5B, ``json_block`` for
  the 1.5B or a file of your own;
- **several calls per reply**: the ``json_array`` template (a reply's calls are one JSON
  array in a json code block).

Counted: requests that ended in an HTTP 500 at the caller, parallel questions whose
reply held all their calls (right names and arguments), single questions answered right
(a tool not offered: plain text), and irrelevant questions answered in plain text.
"""

from __future__ import annotations

import json
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import attrs
import httpx2
from _local_first_token import tool_definitions

from agcore_actors import ActorSystem
from agcore_actors.llm import (
    ChatRequest,
    LlmError,
    OpenAICompatibleProvider,
    OpenAIConfig,
    Provider,
    RequestError,
    user,
)
from agcore_actors.llm.wire import NO_READ_LIMITS
from agcore_actors.local import (
    CatalogModel,
    GetEndpoint,
    GgufFile,
    LocalModelConfig,
    TemplateStyle,
    ToolCallRecovery,
    is_malformed_tool_call,
    local_model_spec,
    prepare_model,
    qwen_tool_template,
)


@dataclass(frozen=True)
class Case:
    kind: str  # single | parallel | irrelevant
    prompt: str
    #: The calls a right reply holds: (tool, {argument: value}) ; none for irrelevant.
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()


def _single(prompt: str, tool: str, **args: Any) -> Case:
    return Case("single", prompt, ((tool, args),))


def _parallel(prompt: str, *calls: tuple[str, dict[str, Any]]) -> Case:
    return Case("parallel", prompt, calls)


W = "get_weather"
CASES = [
    _single("What is the weather in Paris?", W, city="Paris"),
    _single("Is it raining in London right now?", W, city="London"),
    _single("Add 17 and 25.", "add", a=17, b=25),
    _single("What is 12 times 34?", "multiply", a=12, b=34),
    _single(
        "Convert 100 USD to EUR.",
        "convert_currency",
        amount=100,
        from_currency="USD",
        to_currency="EUR",
    ),
    _single("What's the current price of AAPL stock?", "get_stock_price", symbol="AAPL"),
    _single("Who is user 42?", "lookup_user", user_id=42),
    _single("Reverse the text 'agcore actors'.", "reverse_text", text="agcore actors"),
    _single("How many miles is 10 km?", "km_to_miles", km=10),
    _single("What time is it in Tokyo?", "get_time", timezone="Tokyo"),
    _single("Send an email to bob@example.com saying hi.", "none"),  # no such tool offered
    _single("Book a table for two at 8 pm using the booking tool.", "none"),
    _single("Translate 'hello' to German with the translate tool.", "none"),
    _single("Delete the file notes.txt with the file tool.", "none"),
    _parallel(
        "What is the weather in Paris and in London?",
        (W, {"city": "Paris"}),
        (W, {"city": "London"}),
    ),
    _parallel(
        "Get the weather for Tokyo and for Sydney.", (W, {"city": "Tokyo"}), (W, {"city": "Sydney"})
    ),
    _parallel(
        "What are the share prices of AAPL and MSFT?",
        ("get_stock_price", {"symbol": "AAPL"}),
        ("get_stock_price", {"symbol": "MSFT"}),
    ),
    _parallel(
        "Who are users 42 and 7?", ("lookup_user", {"user_id": 42}), ("lookup_user", {"user_id": 7})
    ),
    _parallel(
        "Add 2 and 3, and also multiply 4 by 5.",
        ("add", {"a": 2, "b": 3}),
        ("multiply", {"a": 4, "b": 5}),
    ),
    _parallel(
        "Convert 5 km and 20 km to miles.", ("km_to_miles", {"km": 5}), ("km_to_miles", {"km": 20})
    ),
    _parallel(
        "What is the weather in Berlin, and what time is it there?",
        (W, {"city": "Berlin"}),
        ("get_time", {"timezone": "Berlin"}),
    ),
    _parallel(
        "Reverse 'abc' and count the words in 'one two three'.",
        ("reverse_text", {"text": "abc"}),
        ("count_words", {"text": "one two three"}),
    ),
    *(
        Case("irrelevant", p)
        for p in (
            "Write a haiku about the sea.",
            "Say hello in French.",
            "What does HTTP stand for?",
            "Suggest a name for a pet turtle.",
            "What is the opposite of 'cold'?",
            "Thank you, that was helpful!",
            "Explain recursion in one sentence.",
            "What colour is the sky on a clear day?",
        )
    ),
]


@dataclass
class Tally:
    errors_500: int = 0
    other_errors: int = 0
    parallel_all: int = 0
    single_right: int = 0
    irrelevant_plain: int = 0


def _matches(got: list[tuple[str, str]], want: tuple[tuple[str, dict[str, Any]], ...]) -> bool:
    parsed = []
    for name, arguments in got:
        try:
            parsed.append((name, json.loads(arguments or "{}")))
        except ValueError:
            return False
    return len(parsed) == len(want) and all(
        any(name == w_name and _same(args, w_args) for name, args in parsed)
        for w_name, w_args in want
    )


def _same(got: Any, want: dict[str, Any]) -> bool:
    if not isinstance(got, dict) or set(got) != set(want):
        return False
    for key, value in want.items():
        if isinstance(value, str):
            if str(got[key]).strip().lower() != value.lower():
                return False
        elif not isinstance(got[key], int | float) or abs(float(got[key]) - value) > 1e-6:
            return False
    return True


async def ask(provider: Provider, request: ChatRequest) -> tuple[str, list[tuple[str, str]]]:
    text: list[str] = []
    calls: dict[int, list[str]] = {}
    async with (
        httpx2.AsyncClient(timeout=600, trust_env=False) as client,
        aclosing(provider.stream(client, request, NO_READ_LIMITS)) as deltas,
    ):
        async for delta in deltas:
            text.append(delta.content or "")
            for call in delta.tool_calls or []:
                slot = calls.setdefault(call.index, ["", ""])
                slot[0] += call.name or ""
                slot[1] += call.arguments or ""
    return "".join(text), [(n, a) for n, a in (calls[i] for i in sorted(calls))]


async def run_set(
    base: LocalModelConfig, tools: list[dict[str, Any]], *, style: TemplateStyle, cases: list[Case]
) -> Tally:
    prepared = await prepare_model(attrs.evolve(base, progress=None, prefix_cache=False))
    source = prepared.source
    assert isinstance(source, GgufFile)
    template = qwen_tool_template(style)
    config = attrs.evolve(prepared, source=attrs.evolve(source, chat_template=template))
    definitions = tool_definitions(tools)
    tally = Tally()
    async with ActorSystem() as actors:
        server = await actors.root.start_child(local_model_spec(config=config))
        endpoint = await server.ask(GetEndpoint())
        bare = OpenAICompatibleProvider(
            OpenAIConfig(
                name="local",
                base_url=endpoint.base_url,
                api_key=endpoint.api_key,
                model=endpoint.model,
                headers=dict(endpoint.headers),
            )
        )
        provider: Provider = ToolCallRecovery(bare)
        for case in cases:
            request = ChatRequest(
                messages=[user(case.prompt)],
                tools=definitions,
                temperature=0.0,
                max_tokens=128,
                parallel_tool_calls=True,
            )
            try:
                text, calls = await ask(provider, request)
            except RequestError as exc:
                if exc.status == 500 or is_malformed_tool_call(exc):
                    tally.errors_500 += 1
                else:
                    tally.other_errors += 1
                continue
            except LlmError:
                tally.other_errors += 1
                continue
            if case.kind == "parallel" and _matches(calls, case.calls):
                tally.parallel_all += 1
            elif case.kind == "single" and (
                _matches(calls, case.calls) or (case.calls[0][0] == "none" and not calls and text)
            ):
                tally.single_right += 1
            elif case.kind == "irrelevant" and not calls and text.strip():
                tally.irrelevant_plain += 1
    return tally


async def measure(base: LocalModelConfig, tools: list[dict[str, Any]], quick: bool) -> str:
    cases = CASES[:2] + CASES[14:15] + CASES[-1:] if quick else CASES
    # The one-call template the model had before json_array: the 0.5B's bare_json, else
    # json_block (the 1.5B's).
    one_call: TemplateStyle = (
        "bare_json"
        if isinstance(base.source, CatalogModel) and base.source.entry.name.endswith("0.5b")
        else "json_block"
    )
    before = await run_set(base, tools, style=one_call, cases=cases)
    after = await run_set(base, tools, style="json_array", cases=cases)
    count = {k: sum(c.kind == k for c in cases) for k in ("single", "parallel", "irrelevant")}
    lines = [
        f"{len(cases)} questions: {count['single']} single (4 ask for a tool not offered), "
        f"{count['parallel']} parallel, {count['irrelevant']} irrelevant; 10 tools offered",
        "",
        "| | HTTP 500 at the caller | other errors | parallel: all calls | single right "
        "| irrelevant: plain text |",
        "|---|---|---|---|---|---|",
    ]
    for name, t in (
        (f"one call per reply ({one_call})", before),
        ("several calls per reply (json_array)", after),
    ):
        lines.append(
            f"| {name} | {t.errors_500}/{len(cases)} | {t.other_errors} "
            f"| {t.parallel_all}/{count['parallel']} | {t.single_right}/{count['single']} "
            f"| {t.irrelevant_plain}/{count['irrelevant']} |"
        )
    return "\n".join(lines)
