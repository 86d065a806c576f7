"""The answer of a turn: validated into the agent's output type, checked by its guardrails.

:class:`TurnAnswer` is a part of :class:`~._turn.Turn` (a mixin: the state is the turn's);
the turn's loop decides when to re-ask. Guarantees:

- an answer is valid only once it decodes into ``output_type`` (in ``prompted`` mode,
  the JSON taken from its text, see :mod:`~._output`); :attr:`Turn.output` is then its
  builtins form, and an invalid one gives the error the model is told;
- in ``tool`` mode, every call of the reply that gave ``final_result`` is answered in
  the transcript: that call with "accepted" or the validation error, the others "not
  run", each between a ``ToolCallStarted`` and a ``ToolCallFinished`` event;
- an output guardrail's replacement is what the transcript keeps and the result says; a
  blocked answer is kept as a note saying so, and :class:`GuardrailBlocked` is raised.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .._decode import DECODE_ERRORS
from ..llm import AssistantMessage, AssistantToolCall, OutputMode, ToolMessage
from ..llm import Message as ChatMessage
from ..tools import RunContext
from . import messages as am
from ._config import Agent
from ._errors import GuardrailBlocked
from ._guards import apply_output_guardrails, blocked_note
from ._output import FINAL_TOOL, extract_json
from ._tool_round import Emit

__all__ = ["TurnAnswer"]


class TurnAnswer:
    """The answer of a :class:`~._turn.Turn` (see the module docstring)."""

    # The turn's state this part uses: fields of Turn, which holds them.
    agent: Agent
    emit: Emit
    messages: list[ChatMessage]
    text: str
    output: object
    run_context: RunContext[Any] | None
    blocked: str | None
    output_mode: OutputMode

    async def _guard_output(self) -> None:
        """Run the output guardrails on the answer: a replacement is what the transcript
        keeps and the result says; a block keeps a note instead and raises."""
        guardrails = self.agent.output_guardrails
        if not guardrails:
            return
        assert self.run_context is not None
        text, reason = await apply_output_guardrails(guardrails, self.run_context, self.text)
        shown = blocked_note(reason) if reason is not None else text
        if shown != self.text:
            self.messages[-1] = AssistantMessage(shown)
            self.text = text if reason is None else ""
        if reason is not None:
            self.blocked = reason
            raise GuardrailBlocked("answer", reason)

    def _output_name(self) -> str:
        assert self.agent.output_type is not None
        return self.agent.output_type.__name__

    def _final_call(self, calls: list[AssistantToolCall]) -> AssistantToolCall | None:
        if self.agent.output_type is None or self.output_mode != "tool":
            return None
        return next((c for c in calls if c.function.name == FINAL_TOOL), None)

    async def _answer_final(
        self, message: AssistantMessage, final: AssistantToolCall
    ) -> str | None:
        """Answer every call of a reply that gave ``final``: the answer is its arguments
        when they are valid (None), else the validation error (the model is told it)."""
        error = self._validate_output(final.function.arguments)
        if error is None:
            self.text = final.function.arguments
        for call in message.tool_calls or []:
            name = call.function.name
            await self.emit(
                am.ToolCallStarted(call_id=call.id, name=name, arguments=call.function.arguments)
            )
            status: am.ToolCallStatus = "ok"
            if call is not final:
                status, content = "error", "Error: not run: the final result was given"
            elif error is None:
                content = "Final result accepted."
            else:
                status, content = "invalid_arguments", f"Error: the result is not valid: {error}"
            self.messages.append(ToolMessage(content, call.id))
            await self.emit(
                am.ToolCallFinished(call_id=call.id, name=name, status=status, content=content)
            )
        return error

    def _validate_output(self, text: str) -> str | None:
        assert self.agent.output_type is not None
        if self.output_mode == "prompted":
            text = extract_json(text)
        try:
            value = msgspec.json.decode(text.strip().encode(), type=self.agent.output_type)
        except DECODE_ERRORS as exc:  # ValidationError is a DecodeError
            return str(exc)
        self.output = msgspec.to_builtins(value)
        return None
