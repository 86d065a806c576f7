"""Budget arithmetic, the failure breaker, and the token estimate."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.context import CompactConfig, InvalidCompactConfig
from agcore_actors.context._breaker import SummaryBreaker
from agcore_actors.context.policy import (
    MAX_CONSECUTIVE_FAILURES,
    MESSAGE_OVERHEAD,
    estimate_message_tokens,
    estimate_text_tokens,
    estimate_tokens,
    should_compact,
)
from agcore_actors.llm import (
    AssistantMessage,
    AudioPart,
    FilePart,
    FunctionCall,
    ImagePart,
    ImageUrl,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
)


def test_threshold_defaults_to_95000() -> None:
    assert CompactConfig().threshold() == 95_000
    assert should_compact(95_000, 95_000) and not should_compact(94_999, 95_000)


@pytest.mark.parametrize(
    "window, budget", [(32_000, 23_750), (128_000, 95_000), (200_000, 167_000)]
)
def test_the_defaults_leave_a_usable_budget_for_common_windows(window: int, budget: int) -> None:
    config = CompactConfig(context_window=window)
    assert config.threshold() == budget
    assert window // 2 < config.threshold() < window


def test_a_config_without_a_usable_budget_is_a_typed_error() -> None:
    # It used to give a budget of 0: every conversation "did not fit".
    with pytest.raises(InvalidCompactConfig, match="no budget") as info:
        CompactConfig(context_window=8_192, reserved_tokens=20_000)
    assert isinstance(info.value, ValueError)


def test_config_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="keep_tool_result"):
        CompactConfig(keep_tool_result=-2)
    with pytest.raises(ValueError, match="max_failures"):
        CompactConfig(max_failures=0)
    with pytest.raises(ValueError, match="keep_recent"):
        CompactConfig(keep_recent=-1)


# -- the breaker (the shared CircuitBreaker, as the compactor configures it) --------------

events = st.lists(st.booleans(), max_size=30)  # True = success, False = failure


@given(events)
def test_breaker_opens_after_3_consecutive_failures_and_closes_on_success(
    outcomes: list[bool],
) -> None:
    breaker = SummaryBreaker(MAX_CONSECUTIVE_FAILURES, 60.0)
    run = 0
    for t, ok in enumerate(outcomes):
        if ok:
            breaker.succeeded()
            run = 0
        else:
            breaker.failed(float(t))
            run += 1
        assert breaker.consecutive_failures == run
        assert breaker.is_open() == (run >= 3)
        # Open: no trial before the cooldown, one after it.
        if breaker.is_open():
            assert not breaker.allows(float(t) + 59.0)
            assert breaker.allows(float(t) + 60.0)
        else:
            assert breaker.allows(float(t))


def test_breaker_three_failures_then_a_failed_trial_reopens_from_its_own_time() -> None:
    b = SummaryBreaker(3, 300.0)
    b.failed(0.0)
    b.failed(0.0)
    assert not b.is_open()
    b.failed(0.0)
    assert b.is_open() and not b.allows(299.0) and b.allows(300.0)
    # A failed half-open trial re-opens from its own time.
    b.failed(500.0)
    assert not b.allows(501.0) and not b.allows(799.0) and b.allows(800.0)
    b.succeeded()
    assert not b.is_open() and b.consecutive_failures == 0 and b.allows(801.0)


# -- the estimate ------------------------------------------------------------------------


def test_estimate_examples() -> None:
    assert estimate_text_tokens("") == 0
    assert estimate_message_tokens(UserMessage("")) == MESSAGE_OVERHEAD
    assert estimate_message_tokens(UserMessage([TextPart("")])) == MESSAGE_OVERHEAD
    # English: about a token per short word, punctuation one each.
    assert estimate_text_tokens("The cat sat on the mat.") == 7
    # CJK: one per character (the seed's chars/4 said 2 for this).
    assert estimate_text_tokens("今天天气很好") == 6
    assert estimate_text_tokens("こんにちは") == 5
    # JSON is mostly punctuation.
    assert estimate_text_tokens('{"a": 1}') == 7


def test_estimate_counts_tool_calls_names_and_parts() -> None:
    plain = estimate_message_tokens(AssistantMessage("ok"))
    call = ToolCall("call_abc", FunctionCall("get_weather", '{"city": "Paris"}'))
    with_call = estimate_message_tokens(AssistantMessage("ok", tool_calls=[call]))
    assert with_call >= plain + 8 + estimate_text_tokens('{"city": "Paris"}')
    assert estimate_message_tokens(UserMessage("hi", name="alice")) > estimate_message_tokens(
        UserMessage("hi")
    )
    assert estimate_message_tokens(ToolMessage("", "call_abc")) > MESSAGE_OVERHEAD
    img = UserMessage([ImagePart(ImageUrl("data:,", detail="low"))])
    assert estimate_message_tokens(img) == MESSAGE_OVERHEAD + 85
    hi = UserMessage([ImagePart(ImageUrl("data:,", detail="high"))])
    assert estimate_message_tokens(hi) == MESSAGE_OVERHEAD + 765
    audio_part = {"type": "input_audio", "input_audio": {"data": "A" * 400_000, "format": "wav"}}
    audio = UserMessage([msgspec.convert(audio_part, AudioPart)])
    assert estimate_message_tokens(audio) > 200
    doc = UserMessage([msgspec.convert({"type": "file", "file": {"file_id": "f1"}}, FilePart)])
    assert estimate_message_tokens(doc) == MESSAGE_OVERHEAD + 1000


@given(st.text(), st.text())
def test_estimate_is_subadditive_enough_and_monotone(a: str, b: str) -> None:
    # Appending text never lowers the estimate by more than the one merged
    # piece at the seam, and a message always costs at least its overhead.
    assert estimate_text_tokens(a + b) >= estimate_text_tokens(a) - 1
    assert estimate_text_tokens(a + b) <= estimate_text_tokens(a) + estimate_text_tokens(b) + 1
    assert estimate_tokens([UserMessage(a)]) >= MESSAGE_OVERHEAD
