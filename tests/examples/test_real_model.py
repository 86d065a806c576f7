"""The same example scripts against a real model: the embedded llama.cpp server with
Qwen2.5-Coder-0.5B (the test peer), named only by ``OPENAI_BASE_URL`` and friends."""

from __future__ import annotations

import re

import pytest

from agcore_actors.local.messages import Endpoint
from tests.examples.model import run_example

pytestmark = pytest.mark.slow


def real(endpoint: Endpoint) -> dict[str, str]:
    return {"OPENAI_API_KEY": endpoint.api_key, "OPENAI_MODEL": endpoint.model}


def test_simple_visit_against_a_real_model(local_model: Endpoint) -> None:
    done = run_example("simple_visit", local_model.base_url, env=real(local_model), timeout=300)
    assert done.returncode == 0, done.stderr
    _, reply, usage = done.stdout.splitlines()
    assert reply.startswith("reply: ") and len(reply) > len("reply: ")
    found = re.fullmatch(r"usage: (\d+) input, (\d+) output tokens", usage)
    assert found is not None and int(found[1]) > 0 and int(found[2]) > 0


def test_tool_loop_against_a_real_model(local_model: Endpoint) -> None:
    """A small model does not always pick the tool (or a real tool name): the script must
    still end its turn cleanly, with an answer or a typed failure on its last line."""
    done = run_example("tool_loop", local_model.base_url, env=real(local_model), timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    if any(line.startswith("answer: ") for line in lines):
        assert re.fullmatch(r"\d+ model call\(s\), \d+ tool call\(s\)", lines[-1]), lines
    else:
        assert re.fullmatch(r"turn (failed|cancelled): \w+ .*", lines[-1]), lines
