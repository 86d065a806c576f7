"""State shared by every actor of one system: options, names, dead letters."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ._deadletters import DeadLetters
from ._errors import DuplicateName

if TYPE_CHECKING:
    from ._node import Node

log = logging.getLogger("agcore_actors.actor")


class Runtime:
    """One per :class:`ActorSystem`; every cell and supervisor holds it."""

    __slots__ = ("dead_letters", "names", "strict")

    def __init__(self, *, strict: bool) -> None:
        self.strict = strict
        self.dead_letters = DeadLetters()
        self.names: dict[str, Node] = {}

    def register(self, node: Node) -> None:
        if node.name in self.names:
            raise DuplicateName(node.name)
        self.names[node.name] = node

    def unregister(self, node: Node) -> None:
        if self.names.get(node.name) is node:
            del self.names[node.name]
