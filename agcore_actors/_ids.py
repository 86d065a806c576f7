"""Fresh ids for turns and plans: one format everywhere."""

from __future__ import annotations

import uuid


def new_id() -> str:
    """A fresh random id: 32 lowercase hex digits (a version 4 UUID)."""
    return uuid.uuid4().hex
