"""Budgets: token and cost limits per turn and per session, tool-call caps, a price table.

Pure functions on frozen data (no trio, no I/O), applied by the turn
(:mod:`~._turn`, :mod:`~._model_call`, :mod:`~._tool_round`) and property-tested against
an independent model.

Accounting:

- a call's tokens are :attr:`~agcore_actors.llm.Usage.total_tokens` (input, cached or
  not, and output); its cost is :func:`~agcore_actors.llm.policy.cost` at the price of
  the model that answered (:func:`price_of`: ``"provider/model"`` first, then
  ``"model"``, for the model the server named and then the one asked for);
- a turn's spend is the sum of its calls; a session's is what its store kept before
  the turn (its usage, and the spend the session keeps with each commit) plus the turn's.

A limit is exceeded when the spend is *over* it (:func:`exceeded`): the turn checks
before each model call (a session already over its limit calls no model) and after
each reply (the reply that went over is kept, the turn fails). A cost limit with a
model that has no price is a configuration error, never a silent zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs
import msgspec

from ..llm import Pricing, Usage
from ..llm.policy import cost

__all__ = ["Budget", "Spend", "exceeded", "price_of", "spend_of"]

#: The session fact that keeps a session's spend in cost units (committed with each
#: turn, so it survives eviction and restarts; never shown to the model).
SPEND_FACT: Final = "agcore.spend"


def _optional_count(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ValueError(f"{attribute.name} must be an integer >= 1 or None, not {value!r}")


def _optional_amount(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (
        not isinstance(value, int | float) or isinstance(value, bool) or not value >= 0
    ):
        raise ValueError(f"{attribute.name} must be a number >= 0 or None, not {value!r}")


def _prices(value: Mapping[str, Pricing]) -> Mapping[str, Pricing]:
    prices = dict(value)
    for name, price in prices.items():
        if not isinstance(price, Pricing):
            raise ValueError(f"prices[{name!r}] must be a Pricing, not {price!r}")
    return prices


@attrs.frozen(kw_only=True)
class Budget:
    """Limits of a turn and of a session (None: no limit), and the price table.

    Every exceeded limit fails the turn with :class:`~._errors.LimitExceeded` naming it
    (``turn_tokens``, ``turn_cost``, ``session_tokens``, ``session_cost``,
    ``tool_calls_per_turn``); ``concurrent_tool_calls`` is not a failure but a cap: the
    calls of a reply beyond it wait for a running one to end.
    """

    #: Tokens (input and output) the model calls of one turn may use.
    turn_tokens: int | None = attrs.field(default=None, validator=_optional_count)
    #: Cost (in the price table's units) of one turn's model calls.
    turn_cost: float | None = attrs.field(default=None, validator=_optional_amount)
    #: Tokens of the whole session, every turn before this one included.
    session_tokens: int | None = attrs.field(default=None, validator=_optional_count)
    #: Cost of the whole session, every turn before this one included.
    session_cost: float | None = attrs.field(default=None, validator=_optional_amount)
    #: Tool calls the model may ask for in one turn (all rounds together).
    tool_calls_per_turn: int | None = attrs.field(default=None, validator=_optional_count)
    #: Tool calls of one reply that run at the same time (the rest wait their turn).
    concurrent_tool_calls: int | None = attrs.field(default=None, validator=_optional_count)
    #: Prices per million tokens by ``"provider/model"`` or ``"model"``.
    prices: Mapping[str, Pricing] = attrs.field(factory=dict, converter=_prices)

    @property
    def needs_prices(self) -> bool:
        """A cost limit is set: every call must have a price."""
        return self.turn_cost is not None or self.session_cost is not None


class Spend(msgspec.Struct, frozen=True, gc=False):
    """Tokens and cost spent (by a call, a turn or a session)."""

    tokens: int = 0
    cost: float = 0.0

    def __add__(self, other: Spend) -> Spend:
        return Spend(self.tokens + other.tokens, self.cost + other.cost)


def price_of(prices: Mapping[str, Pricing], provider: str, *models: str) -> Pricing | None:
    """The price of the first of ``models`` the table has, as ``provider/model`` or as
    ``model``; None when it has none of them."""
    for model in models:
        if not model:
            continue
        found = prices.get(f"{provider}/{model}") or prices.get(model)
        if found is not None:
            return found
    return None


def spend_of(usage: Usage, price: Pricing | None) -> Spend:
    """What one call's ``usage`` spent at ``price`` (no price: its tokens, no cost)."""
    return Spend(usage.total_tokens, 0.0 if price is None else cost(usage, price))


def exceeded(budget: Budget, *, turn: Spend, session: Spend) -> tuple[str, float, float] | None:
    """The first limit ``turn`` or ``session`` spend is over, as ``(name, limit, used)``
    (turn limits first, tokens before cost); None when every one holds."""
    checks: tuple[tuple[str, float | None, float], ...] = (
        ("turn_tokens", budget.turn_tokens, turn.tokens),
        ("turn_cost", budget.turn_cost, turn.cost),
        ("session_tokens", budget.session_tokens, session.tokens),
        ("session_cost", budget.session_cost, session.cost),
    )
    for name, limit, used in checks:
        if limit is not None and used > limit:
            return name, limit, used
    return None
