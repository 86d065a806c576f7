"""The real local model server (llama-cpp-python + SmolLM2) for the slow context tests.

Reuses the LLM tests' launcher (tests/llm/llama_server.py: a free port, n_ctx
2048, one thread, stopped when the fixture ends); the peer is installed by
tests/peers/install_llama.sh.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llm.llama_server import llama_server

N_CTX = 2048  # the launcher's --n_ctx


@pytest.fixture(scope="session", name="llama_server")
def llama_server_fixture() -> Iterator[str]:
    """The server's base URL, without ``/v1``."""
    with llama_server() as base:
        yield base.removesuffix("/v1")
