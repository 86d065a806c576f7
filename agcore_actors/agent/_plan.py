"""Plans as plain data: a goal split into steps, each run as one turn.

A :class:`Step` moves one way only: ``pending → running → completed | failed``, or
``pending → skipped``; any other move raises ``ValueError`` and changes nothing. Steps and
plans are frozen msgspec Structs, so a plan crosses actor boundaries and is stored as it is.

:class:`JsonPlanParser` accepts ``{"steps": [{"description": "..."}, ...]}`` (surrounding
white space allowed; extra keys ignored; ``"optional": true`` marks a step whose failure
does not stop the plan) and checks, in this order, with a :class:`PlanParseError` for the
first that fails: the text is JSON; the top level is an object with a ``steps`` array;
every step is an object with a string ``description`` (the first bad one is named by its
0-based position); there is at least one step.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

import msgspec

from .._decode import DECODE_ERRORS
from .._ids import new_id
from ._errors import PlanParseError

__all__ = ["JsonPlanParser", "Plan", "PlanParser", "Step", "StepStatus"]

StepStatus = Literal["pending", "running", "completed", "failed", "skipped"]

_MOVES: dict[StepStatus, frozenset[StepStatus]] = {
    "pending": frozenset({"running", "skipped"}),
    "running": frozenset({"completed", "failed"}),
    "completed": frozenset(),
    "failed": frozenset(),
    "skipped": frozenset(),
}


class Step(msgspec.Struct, frozen=True, kw_only=True):
    """One step: ``description`` is sent to the model as the user's message."""

    index: int
    description: str
    status: StepStatus = "pending"
    #: A failure of an optional step does not stop the plan.
    optional: bool = False
    #: The final answer of a completed step.
    output: str | None = None
    #: ``"<kind>: <message>"`` of the error that failed the step, or why it was skipped.
    error: str | None = None

    @property
    def is_pending(self) -> bool:
        return self.status == "pending"

    @property
    def is_terminal(self) -> bool:
        return self.status in ("completed", "failed", "skipped")

    def _move(self, status: StepStatus, **changes: Any) -> Step:
        if status not in _MOVES[self.status]:
            raise ValueError(f"step {self.index} cannot go from {self.status} to {status}")
        return msgspec.structs.replace(self, status=status, **changes)

    def start(self) -> Step:
        return self._move("running")

    def complete(self, output: str) -> Step:
        return self._move("completed", output=output)

    def fail(self, error: str) -> Step:
        return self._move("failed", error=error)

    def skip(self, reason: str) -> Step:
        return self._move("skipped", error=reason)


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """A goal and its steps, in the order they run."""

    id: str
    goal: str
    steps: tuple[Step, ...]

    def with_step(self, step: Step) -> Plan:
        """This plan with ``step`` replacing the step of the same index."""
        steps = list(self.steps)
        steps[step.index] = step
        return msgspec.structs.replace(self, steps=tuple(steps))

    @property
    def succeeded(self) -> bool:
        """Every step completed, or failed or was skipped while optional."""
        return all(s.status == "completed" or (s.optional and s.is_terminal) for s in self.steps)

    @property
    def failed_step(self) -> Step | None:
        """The first failed step that was not optional (the one that stopped the plan)."""
        return next((s for s in self.steps if s.status == "failed" and not s.optional), None)


class PlanParser(Protocol):
    """Turns the model's plan text into a :class:`Plan` for ``goal``, or raises
    :class:`PlanParseError`."""

    def parse(self, raw: str, goal: str) -> Plan: ...


class JsonPlanParser:
    """The reference parser: ``{"steps": [{"description": "..."}, ...]}``."""

    def parse(self, raw: str, goal: str) -> Plan:
        try:
            data = msgspec.json.decode(raw.strip().encode())
        except DECODE_ERRORS as exc:
            raise PlanParseError(f"invalid JSON: {exc}") from None
        raw_steps = data.get("steps") if isinstance(data, dict) else None
        if not isinstance(raw_steps, list):
            raise PlanParseError("missing 'steps' array")
        steps: list[Step] = []
        for index, item in enumerate(raw_steps):
            description = item.get("description") if isinstance(item, dict) else None
            if not isinstance(description, str):
                raise PlanParseError(f"step {index} has no 'description' string")
            optional = item.get("optional") is True
            steps.append(Step(index=index, description=description, optional=optional))
        if not steps:
            raise PlanParseError("a plan needs at least one step")
        return Plan(id=new_id(), goal=goal, steps=tuple(steps))
