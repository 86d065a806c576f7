"""Fixtures of the LLM tests: the fault server and a provider helper."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fault_server import FaultServer


@pytest.fixture(scope="session")
def fault_server() -> Iterator[FaultServer]:
    server = FaultServer().start()
    yield server
    server.stop()
