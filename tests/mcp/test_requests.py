"""Server requests (elicitation, sampling, roots): what the client answers."""

from __future__ import annotations

from typing import Any

import trio

from agcore_actors.mcp._requests import answer, client_capabilities, roots_handler


async def slow(server: str, params: Any) -> Any:
    await trio.sleep(3600)


async def secret_failure(server: str, params: Any) -> Any:
    raise RuntimeError("token sk-123 rejected")


async def bad_params(server: str, params: Any) -> Any:
    raise ValueError("no 'message'")


def test_capabilities_are_offered_for_the_handled_methods_only() -> None:
    assert client_capabilities({}) == {}
    handlers = {"elicitation/create": slow, "roots/list": slow, "x/other": slow}
    assert client_capabilities(handlers) == {
        "elicitation": {"form": {}},
        "roots": {"listChanged": False},
    }


async def test_an_elicitation_out_of_time_is_declined(autojump_clock: Any) -> None:
    reply = await answer("s", {"elicitation/create": slow}, "elicitation/create", 7, {}, 30.0)
    assert reply.id == 7 and reply.result == {"action": "decline"}
    assert trio.current_time() >= 30.0


async def test_other_methods_out_of_time_answer_an_error(autojump_clock: Any) -> None:
    reply = await answer("s", {"sampling/createMessage": slow}, "sampling/createMessage", 1, {}, 5)
    assert reply.error.code == -32603  # type: ignore[union-attr]


async def test_a_failing_handler_answers_without_its_message() -> None:
    reply = await answer("s", {"roots/list": secret_failure}, "roots/list", 1, {}, 5)
    assert reply.error.code == -32603 and "sk-123" not in reply.error.message  # type: ignore[union-attr]
    reply = await answer("s", {"roots/list": bad_params}, "roots/list", 2, {}, 5)
    assert reply.error.code == -32602 and reply.error.message == "no 'message'"  # type: ignore[union-attr]
    reply = await answer("s", {}, "roots/list", 3, {}, 5)
    assert reply.error.code == -32601  # type: ignore[union-attr]


async def test_roots_come_from_the_configured_list(tmp_path: Any) -> None:
    handler = roots_handler([str(tmp_path), "file:///srv/data"])
    result = await handler("s", None)
    assert [r["uri"] for r in result["roots"]] == [tmp_path.as_uri(), "file:///srv/data"]
