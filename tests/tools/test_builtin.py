"""The built-in demo tools: what they compute, what they refuse, and which permissions
gate them (shell and delete stay denied)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agcore_actors.tools import (
    SHELL,
    ExecutionFailed,
    PermissionChecker,
    PermissionDenied,
    ToolContext,
    function_tool,
)
from agcore_actors.tools.builtin import CLI_PERMISSIONS, MAX_READ_BYTES, builtin_tools


async def call(root: Path, name: str, **args: object) -> object:
    tool = {t.name: t for t in builtin_tools(root)}[name]
    return await tool.call(args, ToolContext())


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("1234 * 5678 + 90", "7006742"),
        ("(17 * 23 + 4) / 3", "131.66666666666666"),
        ("2^10", "1024"),
        ("sqrt(16) + abs(-2) + max(1, 7)", "13"),
        ("7 // 2 + 7 % 2", "4"),
    ],
)
async def test_calculate_evaluates_arithmetic(tmp_path: Path, expression: str, value: str) -> None:
    assert await call(tmp_path, "calculate", expression=expression) == f"{expression} = {value}"


@pytest.mark.parametrize(
    "expression", ["__import__('os').system('true')", "open('x')", "2 ** 100000", "1 / 0", "a + 1"]
)
async def test_calculate_refuses_anything_but_arithmetic(tmp_path: Path, expression: str) -> None:
    with pytest.raises(ExecutionFailed, match="cannot evaluate"):
        await call(tmp_path, "calculate", expression=expression)


async def test_current_time_names_its_zone_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    assert str(await call(tmp_path, "current_time")).endswith(", UTC)")
    assert "Asia/Tokyo" in str(await call(tmp_path, "current_time", timezone="Asia/Tokyo"))
    with pytest.raises(ExecutionFailed, match="unknown time zone"):
        await call(tmp_path, "current_time", timezone="Mars/Base")


async def test_file_tools_stay_under_their_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha")
    (tmp_path / "secret.txt").write_text("no")
    (root / "link").symlink_to(tmp_path / "secret.txt")
    assert await call(root, "read_file", path="a.txt") == "alpha"
    assert await call(root, "list_files") == "a.txt\nlink\nsub/"
    for path in ("../secret.txt", str(tmp_path / "secret.txt"), "link"):
        with pytest.raises(ExecutionFailed, match="outside the working directory"):
            await call(root, "read_file", path=path)
    with pytest.raises(ExecutionFailed, match="outside the working directory"):
        await call(root, "write_file", path="../x.txt", content="x")
    assert not (tmp_path / "x.txt").exists()
    assert await call(root, "write_file", path="sub/b.txt", content="beta") == (
        "wrote 4 bytes to sub/b.txt"
    )
    assert (root / "sub" / "b.txt").read_text() == "beta"


async def test_read_file_cuts_a_long_file(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * (MAX_READ_BYTES + 10))
    text = str(await call(tmp_path, "read_file", path="big.txt"))
    assert text.endswith(f"[cut at {MAX_READ_BYTES} bytes]")
    assert text.count("x") == MAX_READ_BYTES


def test_the_cli_permissions_allow_the_builtins_and_deny_shell_and_delete(tmp_path: Path) -> None:
    checker = PermissionChecker(CLI_PERMISSIONS)
    for tool in builtin_tools(tmp_path):
        checker.check(tool.name, tool.required_permissions)
    (writer,) = [t for t in builtin_tools(tmp_path) if t.name == "write_file"]
    assert writer.requires_approval

    @function_tool(permissions=(SHELL,))
    def shell(command: str) -> str:
        """Run a shell command."""
        return command

    with pytest.raises(PermissionDenied):
        checker.check(shell.name, shell.required_permissions)
    with pytest.raises(PermissionDenied):
        checker.check("rm", ["Delete"])


def _descriptions(schema: object) -> list[str]:
    if isinstance(schema, dict):
        own = [schema["description"]] if isinstance(schema.get("description"), str) else []
        return own + [text for value in schema.values() for text in _descriptions(value)]
    if isinstance(schema, list):
        return [text for value in schema for text in _descriptions(value)]
    return []


def test_no_builtin_schema_shows_a_worked_example_a_small_model_could_copy(
    tmp_path: Path,
) -> None:
    # Issue 29.3: "(17 * 23 + 4) / 2" in calculate's description was copied by the 1.5B
    # model into its call for "What is 17 * 23?" (answering 197.5, 3 runs of 3).
    for tool in builtin_tools(tmp_path):
        for text in [tool.description, *_descriptions(dict(tool.parameters))]:
            assert not re.search(r"\d\s*[-+*/^%]\s*[\d(]", text), (tool.name, text)
