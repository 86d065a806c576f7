"""The Compactor actor: budget, steps, scratch, auto_compress, breaker, reactive."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from agcore_actors import ActorSystem
from agcore_actors.context import (
    CompactConfig,
    ContextOverflow,
    HeuristicEstimator,
    InvalidCompactRequest,
    compactor_spec,
)
from agcore_actors.context.messages import Compact, CompactAfterOverflow, GetCompactorStatus
from agcore_actors.context.policy import OMITTED, PRUNED, SUMMARY_PREFIX, estimate_tokens
from agcore_actors.llm import (
    AssistantMessage,
    ContextLengthError,
    FunctionCall,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    content_text,
)
from tests.context.conversations import conversations, pairing_errors, system_prefix
from tests.context.summarizers import Extractive, Failing, Stalling


def conversation(rounds: int, result_size: int = 400) -> list[Message]:
    msgs: list[Message] = [SystemMessage("You are a calculator."), UserMessage("Add the numbers.")]
    for n in range(rounds):
        call = ToolCall(f"call_{n}", FunctionCall("add", f'{{"a": {n}, "b": {n}}}'))
        msgs.append(AssistantMessage("", tool_calls=[call]))
        msgs.append(ToolMessage(f"result {2 * n} " + "x" * result_size, f"call_{n}"))
        msgs.append(UserMessage(f"Good, number {n} is {2 * n}. Next please."))
    return msgs


async def test_under_budget_is_unchanged_and_scratch_is_never_stored(system: ActorSystem) -> None:
    ref = await system.root.start_child(compactor_spec("compactor"))
    conv = conversation(2)
    result = await ref.ask(Compact(messages=conv, scratch="now: 12:00"))
    assert result.history == conv
    assert result.messages == [*conv, SystemMessage("now: 12:00")]
    report = result.report
    assert report.steps == [] and report.fits and report.budget == 95_000
    assert report.scratch_tokens == estimate_tokens([SystemMessage("now: 12:00")])
    assert report.tokens_before == report.tokens_after == estimate_tokens(result.messages)


async def test_microcompact_when_over_budget(system: ActorSystem) -> None:
    conv = conversation(6)
    budget = estimate_tokens(conv) - 100
    ref = await system.root.start_child(compactor_spec("c", config=CompactConfig(keep_recent=4)))
    result = await ref.ask(Compact(messages=conv, budget=budget))
    report = result.report
    assert [s.name for s in report.steps] == ["microcompact"]
    assert report.fits and report.tokens_after < budget <= report.tokens_before
    assert result.history[-4:] == conv[-4:]
    assert result.history[0] == conv[0]
    assert pairing_errors(result.history) == []
    pruned = [m for m in result.history if isinstance(m, ToolMessage) and m.content == PRUNED]
    assert len(pruned) == 5  # the last tool result is inside the kept window


async def test_keep_window_then_summary(system: ActorSystem) -> None:
    conv = conversation(12)
    summarizer = Extractive()
    config = CompactConfig(keep_recent=3, keep_tool_result=2, protect_head=1)
    ref = await system.root.start_child(compactor_spec("c", config=config, summarizer=summarizer))
    budget = 500
    result = await ref.ask(Compact(messages=conv, budget=budget, scratch="turn 13"))
    names = [s.name for s in result.report.steps]
    assert names == ["keep_tool_results", "microcompact", "summary"]
    assert result.report.fits and result.report.tokens_after < budget
    history = result.history
    assert history[:2] == conv[:2]  # system prompt and the task
    assert content_text(history[2].content).startswith(SUMMARY_PREFIX)
    assert "user: Good, number 0 is 0" in content_text(history[2].content)
    assert history[3:] == conv[-3:]
    assert pairing_errors(history) == []
    assert result.messages[-1] == SystemMessage("turn 13")
    assert SystemMessage("turn 13") not in history
    assert summarizer.calls == 1
    status = await ref.ask(GetCompactorStatus())
    assert status.summaries == 1 and status.consecutive_failures == 0


async def test_keep_window_goes_before_microcompact(system: ActorSystem) -> None:
    conv = conversation(6, result_size=800)
    config = CompactConfig(keep_recent=3, keep_tool_result=3)
    ref = await system.root.start_child(compactor_spec("c", config=config))
    # Omitting the 3 oldest results is enough: the 3 newest stay whole.
    budget = estimate_tokens(conv) - 3 * 150
    result = await ref.ask(Compact(messages=conv, budget=budget))
    assert [s.name for s in result.report.steps] == ["keep_tool_results"]
    assert result.report.fits
    results = [m.content for m in result.history if isinstance(m, ToolMessage)]
    assert results[:3] == [OMITTED] * 3
    assert results[3:] == [m.content for m in conv if isinstance(m, ToolMessage)][3:]
    # Tighter: microcompact prunes every result outside the last 3 messages
    # (the omitted ones too: "[pruned]" is shorter).
    tight = await ref.ask(Compact(messages=conv, budget=budget - 3 * 150))
    assert [s.name for s in tight.report.steps] == ["keep_tool_results", "microcompact"]
    results = [m.content for m in tight.history if isinstance(m, ToolMessage)]
    assert results == [PRUNED] * 5 + [conv[-2].content]
    assert tight.history[-3:] == conv[-3:]
    assert pairing_errors(tight.history) == []


async def test_auto_compress_off_is_a_clear_error(system: ActorSystem) -> None:
    ref = await system.root.start_child(
        compactor_spec("c", config=CompactConfig(auto_compress=False))
    )
    conv = conversation(3)
    with pytest.raises(ContextOverflow) as info:
        await ref.ask(Compact(messages=conv, budget=50))
    assert info.value.budget == 50 and info.value.tokens == estimate_tokens(conv)
    assert "auto_compress is off" in str(info.value)
    # Under budget it still answers, and the actor is alive.
    ok = await ref.ask(Compact(messages=conv))
    assert ok.history == conv
    with pytest.raises(ContextOverflow):
        await ref.ask(CompactAfterOverflow(messages=conv, actual=9000, limit=2048))


async def test_negative_budget_is_refused(system: ActorSystem) -> None:
    ref = await system.root.start_child(compactor_spec("c"))
    with pytest.raises(InvalidCompactRequest):
        await ref.ask(Compact(messages=conversation(1), budget=-1))
    assert (await ref.ask(GetCompactorStatus())).compactions == 0


async def test_breaker_opens_after_three_failures_and_closes_on_success(
    system: ActorSystem, autojump_clock: object
) -> None:
    summarizer = Failing()
    config = CompactConfig(keep_recent=3, breaker_cooldown=60.0)
    ref = await system.root.start_child(compactor_spec("c", config=config, summarizer=summarizer))
    conv = conversation(10)
    for n in range(1, 4):
        result = await ref.ask(Compact(messages=conv, budget=250))
        assert not result.report.fits
        summary = [s for s in result.report.steps if s.name == "summary"]
        assert summary and "model server down" in (summary[0].error or "")
        assert summarizer.calls == n
    status = await ref.ask(GetCompactorStatus())
    assert status.breaker_open and status.consecutive_failures == 3
    # Open: the summary step is skipped, the cheap steps still run.
    result = await ref.ask(Compact(messages=conv, budget=250))
    assert summarizer.calls == 3 and result.report.breaker_open
    assert [s.name for s in result.report.steps] == ["microcompact"]
    # After the cooldown one trial runs; it succeeds and closes the breaker.
    await trio.sleep(60.0)
    summarizer.healed = True
    result = await ref.ask(Compact(messages=conv, budget=250))
    assert summarizer.calls == 4 and result.report.fits and not result.report.breaker_open
    status = await ref.ask(GetCompactorStatus())
    assert not status.breaker_open and status.consecutive_failures == 0


async def test_summary_timeout_is_a_failure_on_virtual_time(
    system: ActorSystem, autojump_clock: object
) -> None:
    stalling = Stalling()
    config = CompactConfig(keep_recent=3, summary_timeout=30.0)
    ref = await system.root.start_child(compactor_spec("c", config=config, summarizer=stalling))
    start = trio.current_time()
    result = await ref.ask(Compact(messages=conversation(8), budget=200))
    assert trio.current_time() - start == pytest.approx(30.0)
    assert stalling.cancelled
    (summary,) = [s for s in result.report.steps if s.name == "summary"]
    assert summary.error == "no summary within 30 s"
    assert (await ref.ask(GetCompactorStatus())).consecutive_failures == 1


async def test_cancelled_ask_cancels_the_summary_and_is_not_a_failure(
    system: ActorSystem,
) -> None:
    stalling = Stalling()
    config = CompactConfig(keep_recent=3)
    ref = await system.root.start_child(compactor_spec("c", config=config, summarizer=stalling))
    async with trio.open_nursery() as nursery:

        async def ask() -> None:
            await ref.ask(Compact(messages=conversation(8), budget=200))

        nursery.start_soon(ask)
        await stalling.started.wait()
        nursery.cancel_scope.cancel()
    assert stalling.cancelled
    status = await ref.ask(GetCompactorStatus())
    assert status.consecutive_failures == 0


async def test_summary_that_does_not_shrink_counts_as_failure(system: ActorSystem) -> None:
    class Verbose:
        async def __call__(self, messages: list[Message], *, max_tokens: int) -> str:
            await trio.lowlevel.checkpoint()
            return "word " * 10_000  # clipped to max_tokens, still bigger than the middle

    conv = conversation(3, result_size=10)
    config = CompactConfig(keep_recent=3, summary_max_tokens=2_000)
    ref = await system.root.start_child(compactor_spec("c", config=config, summarizer=Verbose()))
    result = await ref.ask(Compact(messages=conv, budget=10))
    (summary,) = [s for s in result.report.steps if s.name == "summary"]
    assert "did not shrink" in (summary.error or "")
    assert not any(content_text(m.content).startswith(SUMMARY_PREFIX) for m in result.history)
    assert not result.report.fits


async def test_reactive_compaction_recalibrates_from_the_provider_numbers(
    system: ActorSystem,
) -> None:
    conv = conversation(6)
    estimate = estimate_tokens(conv)
    config = CompactConfig(keep_recent=3)
    ref = await system.root.start_child(compactor_spec("c", config=config, summarizer=Extractive()))
    # Our estimate says it fits; the server says it is twice as long as we think
    # and its window is 1.5 times our estimate.
    assert (await ref.ask(Compact(messages=conv))).report.steps == []
    window = int(1.5 * estimate)
    error = ContextLengthError("llama", actual=2 * estimate, limit=window)
    result = await ref.ask(CompactAfterOverflow.from_error(conv, error))
    report = result.report
    assert report.reactive and report.steps
    assert report.tokens_before >= 2 * estimate  # calibrated
    # The reserve does not fit a window this small: aim at half of it.
    assert report.budget == window // 2
    assert report.fits and report.tokens_after < window // 2
    assert pairing_errors(result.history) == []
    status = await ref.ask(GetCompactorStatus())
    assert status.calibration == pytest.approx(2.0, rel=0.01)
    # Without numbers: it still compacts (by a quarter at least) and raises the calibration.
    again = await ref.ask(CompactAfterOverflow(messages=conv))
    assert again.report.tokens_after <= 0.75 * again.report.tokens_before
    assert (await ref.ask(GetCompactorStatus())).calibration == pytest.approx(2.5, rel=0.01)


@settings(max_examples=40, deadline=None)
@given(conversations(), st.integers(0, 6), st.integers(0, 400), st.integers(-1, 3))
def test_compactor_invariants_for_any_conversation(
    conv: list[Message], keep_recent: int, budget: int, keep_tool_result: int
) -> None:
    """The whole pipeline, through the actor in strict mode, keeps the invariants."""
    config = CompactConfig(keep_recent=keep_recent, keep_tool_result=keep_tool_result)

    async def run() -> None:
        async with ActorSystem(strict=True) as system:
            ref = await system.root.start_child(
                compactor_spec("compactor", config=config, summarizer=Extractive())
            )
            result = await ref.ask(Compact(messages=conv, budget=budget, scratch="note"))
            history = result.history
            assert pairing_errors(history) == []
            assert system_prefix(history) == system_prefix(conv)
            k = min(keep_recent, len(conv))
            assert history[len(history) - k :] == conv[len(conv) - k :]
            assert result.report.tokens_after <= result.report.tokens_before
            assert estimate_tokens(history) <= estimate_tokens(conv)
            assert result.messages == [*history, SystemMessage("note")]

    trio.run(run)


class ReturnsNone:
    """A summarizer with a bug: it answers None."""

    async def __call__(self, messages: list[Message], *, max_tokens: int) -> str:
        await trio.lowlevel.checkpoint()
        return None  # type: ignore[return-value]


async def test_a_summarizer_answering_none_is_a_failed_summary_not_a_crash(
    system: ActorSystem,
) -> None:
    config = CompactConfig(keep_recent=3)
    spec = compactor_spec("c", config=config, summarizer=ReturnsNone())
    ref = await system.root.start_child(spec)
    result = await ref.ask(Compact(messages=conversation(8), budget=200))
    (summary,) = [s for s in result.report.steps if s.name == "summary"]
    assert "NoneType" in (summary.error or "")
    assert (await ref.ask(GetCompactorStatus())).consecutive_failures == 1
    assert next(i for i in system.snapshot() if i.name == "c").restarts == 0


class Breaking(HeuristicEstimator):
    """Counts like the heuristic until ``broken``: then a bug (a crash)."""

    broken = False

    def count_message(self, message: Message) -> int:
        if self.broken:
            raise RuntimeError("estimator bug")
        return super().count_message(message)


async def test_an_open_breaker_stays_open_across_a_restart(
    system: ActorSystem, autojump_clock: object
) -> None:
    estimator = Breaking()
    config = CompactConfig(keep_recent=3, breaker_cooldown=60.0)
    spec = compactor_spec("c", config=config, summarizer=Failing(), estimator=estimator)
    ref = await system.root.start_child(spec)
    for _ in range(3):
        await ref.ask(Compact(messages=conversation(10), budget=250))
    assert (await ref.ask(GetCompactorStatus())).breaker_open
    estimator.broken = True
    with pytest.raises(RuntimeError):
        await ref.ask(Compact(messages=conversation(10), budget=250))
    estimator.broken = False
    status = await ref.ask(GetCompactorStatus())
    assert next(i for i in system.snapshot() if i.name == "c").restarts == 1
    assert status.breaker_open and status.consecutive_failures == 3


class Counting(HeuristicEstimator):
    """The heuristic, counting how often it estimated each message object."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: Counter[int] = Counter()

    def count_message(self, message: Message) -> int:
        self.seen[id(message)] += 1
        return super().count_message(message)

    async def count(self, messages: Sequence[Message]) -> int:
        self.seen.update(id(m) for m in messages)
        return await super().count(messages)


async def test_each_message_is_estimated_once_per_ask(system: ActorSystem) -> None:
    estimator = Counting()
    config = CompactConfig(keep_recent=3, keep_tool_result=2)
    spec = compactor_spec("c", config=config, summarizer=Extractive(), estimator=estimator)
    ref = await system.root.start_child(spec)
    result = await ref.ask(Compact(messages=conversation(12), budget=300, scratch="note"))
    assert [s.name for s in result.report.steps] == [
        "keep_tool_results",
        "microcompact",
        "summary",
    ]
    assert estimator.seen and max(estimator.seen.values()) == 1
