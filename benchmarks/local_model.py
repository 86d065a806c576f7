"""Full-turn correctness of the embedded local model with tools (not a timed test).

Starts the local model server (the ``LocalModelServer`` actor, our chat template) and
drives it with raw OpenAI-compatible HTTP requests (httpx), running the tools itself:

- a **tool turn** is correct when the model's first answer calls the right tool with the
  right arguments, and, after the tool's result, its final answer is plain text that uses
  the result (contains its key figure or words). Up to 4 model calls per turn, like an
  agent's tool loop; an HTTP error (e.g. the 500 for an invented tool name) fails the turn.
- a **no-tool turn** is correct when the model answers in plain text without a tool call.

Every request has ``tool_choice: "auto"``, all the tools, and temperature 0.

    python benchmarks/local_model.py --model small              # 0.5B, 24 + 12 prompts
    python benchmarks/local_model.py --model default --stream   # 1.5B, streamed requests
    python benchmarks/local_model.py --quick                    # 2 + 1 prompts (smoke)
    python benchmarks/local_model.py --model default --first-token  # first-token times
    python benchmarks/local_model.py --model small --tool-calls     # 500s, parallel calls

``--first-token``: first-token time of a first run, a second run and a chat follow-up,
with the prompt prefix cache (and threads from the free cores) beside the old behaviour
(no cache, one thread), measured in the same process (``_local_first_token.py``).
``--tool-calls``: a fixed set of 30 questions through the provider, with the one-call
template and with the several-calls one (``_local_tool_calls.py``). The
machine may be shared: compare the ratios, not the seconds.

``--python`` names an interpreter with xllamacpp (default: .peers/xllamacpp if present,
else this one); ``--cache-dir`` where catalog models are joined (default: .peers/models
for ``small``, the per-user cache otherwise).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import trio

from agcore_actors import ActorSystem
from agcore_actors.local import (
    CatalogModel,
    GgufFile,
    LocalModelConfig,
    ModelSource,
    local_model_spec,
    qwen_tool_template,
)
from agcore_actors.local.messages import Endpoint, GetEndpoint

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / ".peers"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the parts beside this script

# -- the tools, with fixed data the model cannot know ------------------------------------

WEATHER = {
    "paris": "18°C, sunny",
    "london": "12°C, light rain",
    "tokyo": "22°C, cloudy",
    "sydney": "27°C, clear sky",
    "berlin": "9°C, fog",
    "new york": "15°C, windy",
}
RATES = {("USD", "EUR"): 0.9, ("EUR", "USD"): 1.1, ("GBP", "USD"): 1.25, ("USD", "JPY"): 150.0}
STOCKS = {"AAPL": 187.42, "MSFT": 411.07, "NVDA": 903.56}
USERS = {
    42: {"name": "Ada Lovelace", "email": "ada@example.com"},
    7: {"name": "Alan Turing", "email": "alan@example.com"},
}


def _num(value: Any) -> float:
    return float(value)


def run_tool(name: str, args: dict[str, Any]) -> str:
    """The tools' implementations; a KeyError/ValueError becomes an error result."""
    match name:
        case "get_weather":
            return WEATHER.get(str(args["city"]).strip().lower(), "unknown city")
        case "add":
            return _fmt(_num(args["a"]) + _num(args["b"]))
        case "multiply":
            return _fmt(_num(args["a"]) * _num(args["b"]))
        case "convert_currency":
            key = (str(args["from_currency"]).upper(), str(args["to_currency"]).upper())
            return _fmt(round(_num(args["amount"]) * RATES[key], 2))
        case "get_stock_price":
            return _fmt(STOCKS[str(args["symbol"]).upper()])
        case "lookup_user":
            return json.dumps(USERS[int(args["user_id"])])
        case "count_words":
            return str(len(str(args["text"]).split()))
        case "reverse_text":
            return str(args["text"])[::-1]
        case "km_to_miles":
            return _fmt(round(_num(args["km"]) * 0.621371, 2))
        case "get_time":
            return "14:05"
    raise KeyError(name)


def _fmt(x: float) -> str:
    return str(int(x)) if x == int(x) else str(x)


def _tool(name: str, description: str, **props: tuple[str, str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {k: {"type": t, "description": d} for k, (t, d) in props.items()},
                "required": list(props),
            },
        },
    }


TOOLS = [
    _tool("get_weather", "Get the current weather in a city.", city=("string", "City name")),
    _tool("add", "Add two numbers.", a=("number", "First"), b=("number", "Second")),
    _tool("multiply", "Multiply two numbers.", a=("number", "First"), b=("number", "Second")),
    _tool(
        "convert_currency",
        "Convert an amount of money between currencies at today's rate.",
        amount=("number", "Amount"),
        from_currency=("string", "ISO code, e.g. USD"),
        to_currency=("string", "ISO code, e.g. EUR"),
    ),
    _tool("get_stock_price", "Current share price of a stock.", symbol=("string", "Ticker")),
    _tool("lookup_user", "Look up a user's record by id.", user_id=("integer", "User id")),
    _tool("count_words", "Count the words in a text.", text=("string", "The text")),
    _tool("reverse_text", "Reverse a text character by character.", text=("string", "Text")),
    _tool("km_to_miles", "Convert kilometres to miles.", km=("number", "Kilometres")),
    _tool("get_time", "Current local time in a time zone.", timezone=("string", "Zone or city")),
]

# -- the prompts ----------------------------------------------------------------------------

Check = Callable[[dict[str, Any]], bool]


def eq(**want: Any) -> Check:
    def check(args: dict[str, Any]) -> bool:
        if set(args) != set(want):
            return False
        for key, value in want.items():
            got = args[key]
            if isinstance(value, str):
                if not isinstance(got, str) or got.strip().lower() != value.lower():
                    return False
            elif not isinstance(got, int | float) or abs(float(got) - value) > 1e-6:
                return False
        return True

    return check


def contains(key: str, word: str) -> Check:
    def check(args: dict[str, Any]) -> bool:
        return set(args) == {key} and word.lower() in str(args[key]).lower()

    return check


@dataclass(frozen=True)
class ToolCase:
    prompt: str
    tool: str
    args: Check
    answer: tuple[str, ...]  # each must appear in the final answer (case-insensitive)


TOOL_CASES = [
    ToolCase("What is the weather in Paris?", "get_weather", eq(city="Paris"), ("18",)),
    ToolCase("Is it raining in London right now?", "get_weather", eq(city="London"), ("rain",)),
    ToolCase("How warm is it in Sydney today?", "get_weather", eq(city="Sydney"), ("27",)),
    ToolCase("Tell me the weather in Berlin.", "get_weather", eq(city="Berlin"), ("9",)),
    ToolCase("What's the weather like in Tokyo?", "get_weather", eq(city="Tokyo"), ("22",)),
    ToolCase("What is 1234 plus 4321? Use the add tool.", "add", eq(a=1234, b=4321), ("5555",)),
    ToolCase("Add 17 and 25.", "add", eq(a=17, b=25), ("42",)),
    ToolCase("What is 12 times 34?", "multiply", eq(a=12, b=34), ("408",)),
    ToolCase("Multiply 7.5 by 4.", "multiply", eq(a=7.5, b=4), ("30",)),
    ToolCase(
        "Convert 100 USD to EUR.",
        "convert_currency",
        eq(amount=100, from_currency="USD", to_currency="EUR"),
        ("90",),
    ),
    ToolCase(
        "How many US dollars is 50 GBP?",
        "convert_currency",
        eq(amount=50, from_currency="GBP", to_currency="USD"),
        ("62.5",),
    ),
    ToolCase(
        "What's the current price of AAPL stock?",
        "get_stock_price",
        eq(symbol="AAPL"),
        ("187.42",),
    ),
    ToolCase("Look up the share price of MSFT.", "get_stock_price", eq(symbol="MSFT"), ("411",)),
    ToolCase("Who is user 42?", "lookup_user", eq(user_id=42), ("Ada",)),
    ToolCase(
        "Find the email address of user 7.", "lookup_user", eq(user_id=7), ("alan@example.com",)
    ),
    ToolCase(
        "How many words are in the text 'the quick brown fox jumps over the lazy dog'?",
        "count_words",
        contains("text", "quick brown fox"),
        ("9",),
    ),
    ToolCase(
        "Reverse the text 'agcore actors'.",
        "reverse_text",
        eq(text="agcore actors"),
        ("srotca erocga",),
    ),
    ToolCase("How many miles is 42.195 km?", "km_to_miles", eq(km=42.195), ("26.22",)),
    ToolCase("Convert 10 kilometres to miles.", "km_to_miles", eq(km=10), ("6.21",)),
    ToolCase("What time is it in Tokyo?", "get_time", contains("timezone", "tokyo"), ("14:05",)),
    ToolCase("What is the time in UTC now?", "get_time", contains("timezone", "utc"), ("14:05",)),
    ToolCase(
        "Convert 20 USD to JPY.",
        "convert_currency",
        eq(amount=20, from_currency="USD", to_currency="JPY"),
        ("3000",),
    ),
    ToolCase("What is the NVDA share price?", "get_stock_price", eq(symbol="NVDA"), ("903.56",)),
    ToolCase("Who is the user with id 7?", "lookup_user", eq(user_id=7), ("Turing",)),
]

PLAIN_CASES = [
    "Write a haiku about the sea.",
    "What is a Python list comprehension? Answer in one sentence.",
    "Say hello in French.",
    "Explain what a linked list is in two sentences.",
    "Suggest a name for a pet turtle.",
    "What does HTTP stand for?",
    "Write a Python function that returns the square of a number.",
    "Summarize the plot of Romeo and Juliet in one sentence.",
    "What is the opposite of 'cold'?",
    "Tell me a fun fact about octopuses.",
    "Thank you, that was helpful!",
    "What is the difference between a list and a tuple in Python?",
]

# -- driving the server -------------------------------------------------------------------


@dataclass
class Outcome:
    correct: bool
    first_call_ok: bool = False
    calls: list[str] = field(default_factory=list)
    answer: str = ""
    error: str = ""
    seconds: float = 0.0
    #: Text that came with a tool call (e.g. a code fence the parser did not take).
    leaked: str = ""


async def complete(
    client: httpx2.AsyncClient, endpoint: Endpoint, messages: list[dict[str, Any]], stream: bool
) -> dict[str, Any]:
    """One chat completion; returns the assistant message (streams assembled by index)."""
    body: dict[str, Any] = {
        "model": endpoint.model,
        "messages": messages,
        "tools": TOOLS,
        "tool_choice": "auto",
        "temperature": 0,
        "max_tokens": 256,
    }
    url = endpoint.base_url + "/chat/completions"
    if not stream:
        response = await client.post(url, json=body)
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
        message: dict[str, Any] = response.json()["choices"][0]["message"]
        return message
    body["stream"] = True
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    async with client.stream("POST", url, json=body) as response:
        if response.status_code != 200:
            raise RuntimeError(f"HTTP {response.status_code}: {(await response.aread())[:200]!r}")
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if "error" in chunk:
                raise RuntimeError(f"stream error: {chunk['error']}")
            for choice in chunk.get("choices", []):
                delta = choice.get("delta", {})
                content.append(delta.get("content") or "")
                for piece in delta.get("tool_calls") or []:
                    call = calls.setdefault(
                        piece["index"], {"id": "", "type": "function", "function": {}}
                    )
                    call["id"] = piece.get("id") or call["id"]
                    function = piece.get("function", {})
                    if function.get("name"):
                        call["function"]["name"] = function["name"]
                    call["function"]["arguments"] = call["function"].get(
                        "arguments", ""
                    ) + function.get("arguments", "")
    assembled: dict[str, Any] = {"role": "assistant", "content": "".join(content)}
    if calls:
        assembled["tool_calls"] = [calls[i] for i in sorted(calls)]
    return assembled


async def tool_turn(
    client: httpx2.AsyncClient, endpoint: Endpoint, case: ToolCase, stream: bool
) -> Outcome:
    messages: list[dict[str, Any]] = [{"role": "user", "content": case.prompt}]
    outcome = Outcome(correct=False)
    for round_ in range(4):
        message = await complete(client, endpoint, messages, stream)
        calls = message.get("tool_calls") or []
        if not calls:
            outcome.answer = message.get("content") or ""
            break
        outcome.leaked += (message.get("content") or "").strip()
        messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        for call in calls:
            name = call["function"]["name"]
            try:
                args = json.loads(call["function"]["arguments"] or "{}")
            except ValueError:
                args = None
            outcome.calls.append(f"{name}({call['function']['arguments']})")
            if round_ == 0 and call is calls[0]:
                outcome.first_call_ok = (
                    name == case.tool and isinstance(args, dict) and case.args(args)
                )
            try:
                result = run_tool(name, args if isinstance(args, dict) else {})
            except (KeyError, ValueError, TypeError) as exc:
                result = f"error: {type(exc).__name__}: {exc}"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    answer = outcome.answer.replace(",", "").lower()
    uses_result = bool(outcome.answer) and all(w.lower() in answer for w in case.answer)
    outcome.correct = outcome.first_call_ok and len(outcome.calls) == 1 and uses_result
    return outcome


async def plain_turn(
    client: httpx2.AsyncClient, endpoint: Endpoint, prompt: str, stream: bool
) -> Outcome:
    message = await complete(client, endpoint, [{"role": "user", "content": prompt}], stream)
    calls = message.get("tool_calls") or []
    answer = message.get("content") or ""
    return Outcome(
        correct=not calls and bool(answer.strip()),
        calls=[f"{c['function']['name']}({c['function']['arguments']})" for c in calls],
        answer=answer,
    )


async def run_cases(
    endpoint: Endpoint, tool_cases: list[ToolCase], plain: list[str], stream: bool, verbose: bool
) -> tuple[list[Outcome], list[Outcome]]:
    headers = dict(endpoint.headers)
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    tools: list[Outcome] = []
    plains: list[Outcome] = []
    async with httpx2.AsyncClient(headers=headers, timeout=300, trust_env=False) as client:
        for case in tool_cases:
            started = time.monotonic()
            try:
                outcome = await tool_turn(client, endpoint, case, stream)
            except RuntimeError as exc:
                outcome = Outcome(correct=False, error=str(exc))
            outcome.seconds = time.monotonic() - started
            tools.append(outcome)
            if verbose:
                _show("tool", case.prompt, outcome)
        for prompt in plain:
            started = time.monotonic()
            try:
                outcome = await plain_turn(client, endpoint, prompt, stream)
            except RuntimeError as exc:
                outcome = Outcome(correct=False, error=str(exc))
            outcome.seconds = time.monotonic() - started
            plains.append(outcome)
            if verbose:
                _show("plain", prompt, outcome)
    return tools, plains


def _show(kind: str, prompt: str, outcome: Outcome) -> None:
    mark = "ok " if outcome.correct else "BAD"
    answer = re.sub(r"\s+", " ", outcome.answer)[:90]
    detail = outcome.error or f"{' '.join(outcome.calls)} -> {answer!r}"
    if outcome.leaked:
        detail += f" (text with the call: {outcome.leaked[:40]!r})"
    print(f"  {mark} {kind:5} {outcome.seconds:5.1f}s  {prompt[:50]!r}: {detail}", flush=True)


def source_for(args: argparse.Namespace) -> ModelSource:
    if args.model in ("default", "small") or args.model.startswith("qwen2.5-coder-"):
        cache = args.cache_dir or (PEERS / "models" if args.model == "small" else None)
        return CatalogModel(name=args.model, cache_dir=cache)
    if args.template in ("json_array", "json_block", "bare_json"):
        template = qwen_tool_template(args.template)
    else:
        template = Path(args.template).read_text()
    return GgufFile(path=args.model, chat_template=template)


async def run(args: argparse.Namespace) -> int:
    tool_cases = TOOL_CASES[:2] if args.quick else TOOL_CASES
    plain = PLAIN_CASES[:1] if args.quick else PLAIN_CASES
    python = args.python or (
        str(PEERS / "xllamacpp/bin/python")
        if (PEERS / "xllamacpp/bin/python").exists()
        else sys.executable
    )
    config = LocalModelConfig(source=source_for(args), python=python, n_ctx=args.n_ctx)
    if args.first_token:
        from _local_first_token import measure as first_token_table

        print(f"## First token: {args.model} model\n")
        print(await first_token_table(config, TOOLS), flush=True)
        return 0
    if args.tool_calls:
        from _local_tool_calls import measure as tool_calls_table

        print(f"## Tool calls through the provider: {args.model} model\n")
        print(await tool_calls_table(config, TOOLS, args.quick), flush=True)
        return 0
    async with ActorSystem() as system:
        started = time.monotonic()
        server = await system.root.start_child(local_model_spec(config=config))
        endpoint = await server.ask(GetEndpoint())
        start_seconds = time.monotonic() - started
        mode = "streamed" if args.stream else "non-streamed"
        print(f"## Local model correctness: {endpoint.model} ({mode})\n")
        print(f"server ready in {start_seconds:.1f} s ({Path(endpoint.path).name})", flush=True)
        tools, plains = await run_cases(endpoint, tool_cases, plain, args.stream, args.verbose)
    ok_tools = sum(o.correct for o in tools)
    first_ok = sum(o.first_call_ok for o in tools)
    ok_plain = sum(o.correct for o in plains)
    errors = sum(bool(o.error) for o in tools + plains)
    seconds = sum(o.seconds for o in tools + plains)
    print()
    print("| model | mode | full tool turns | right first call | no-tool turns | HTTP errors "
          "| mean s/turn |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    mean = seconds / max(1, len(tools) + len(plains))
    print(
        f"| {endpoint.model} | {mode} | {ok_tools}/{len(tools)} | {first_ok}/{len(tools)} "
        f"| {ok_plain}/{len(plains)} | {errors} | {mean:.1f} |"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="small", help="default | small | a GGUF path")
    parser.add_argument(
        "--template",
        default="json_block",
        help="with a GGUF path: json_array, json_block, bare_json, or a template file",
    )
    parser.add_argument("--python", help="a Python with xllamacpp")
    parser.add_argument("--cache-dir", type=Path)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--stream", action="store_true", help="streamed requests")
    parser.add_argument("--quick", action="store_true", help="2 tool and 1 no-tool prompts")
    parser.add_argument("--first-token", action="store_true", help="first-token times")
    parser.add_argument("--tool-calls", action="store_true", help="HTTP 500s, parallel calls")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per turn")
    return trio.run(run, parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
