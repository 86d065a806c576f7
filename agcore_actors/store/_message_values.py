"""A reply shared by the store's two protocol modules (:mod:`agcore_actors.store.messages`
and its ownership part, ``_ownership_messages``); here so that neither imports the other
in a cycle. Re-exported, and named, by :mod:`agcore_actors.store.messages`."""

from __future__ import annotations

import msgspec

__all__ = ["Deleted"]


class Deleted(msgspec.Struct, frozen=True):
    """The ids of the sessions that were there and are now gone."""

    ids: list[str]
