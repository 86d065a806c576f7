"""The real local model server: llama-cpp-python with SmolLM2-135M.

Installed by tests/peers/install_llama.sh into ``.peers/llama`` and ``.peers/models``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tests.peers import free_port, http_ready, installed, running

N_CTX = 2048  # the server's --n_ctx


@contextmanager
def llama_server(*extra: str) -> Iterator[str]:
    """Run the server on a free port until the block ends; yields its ``.../v1`` base URL."""
    python = installed("llama", "bin", "python", installer="install_llama.sh")
    model = installed("models", "SmolLM2-135M-Instruct.Q4_1.gguf", installer="install_llama.sh")
    port = free_port()
    command = [
        str(python), "-m", "llama_cpp.server", "--model", str(model),
        "--host", "127.0.0.1", "--port", str(port), "--model_alias", "smollm2",
        "--n_ctx", str(N_CTX), "--n_threads", "1", "--n_threads_batch", "1",
        "--interrupt_requests", "false", "--verbose", "false", *extra,
    ]  # fmt: skip
    base = f"http://127.0.0.1:{port}/v1"
    with running(command, ready=http_ready(base + "/models"), name="llama server"):
        yield base
