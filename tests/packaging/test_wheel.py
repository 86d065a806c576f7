"""The package as a user gets it: the built wheel, installed apart from this checkout.

One wheel is built per test session (``pip wheel --no-deps``; hatchling comes from the
package index into pip's isolated build environment) and installed into a fresh venv
with ``pip install --no-deps --target``; the venv sees the dependencies through a
``.pth`` line naming this interpreter's site-packages, so nothing is downloaded but the
build backend, and the checkout (an editable install) is not on its path. Checked there:
the wheel carries ``py.typed`` and LICENSE, ``mypy --strict`` passes on a script in the
README's style against the installed package, and the installed CLI serves ``--stdio``
and fails ``--http`` with one line when the ``serve`` extra is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", str(ROOT), "-w", str(out)],
        check=True,
        timeout=300,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    (built,) = out.glob("agcore_actors-*.whl")
    return built


@pytest.fixture(scope="module")
def python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python of a fresh venv with the wheel installed (see the module doc)."""
    home = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(home)
    python = home / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", site,
         str(wheel)],
        check=True,
        timeout=300,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )  # fmt: skip
    # The dependencies: this interpreter's site-packages, after the venv's own (a line of
    # a .pth file is a plain path entry: the editable install's own .pth is not read).
    paths = sysconfig.get_paths()
    deps = dict.fromkeys([paths["purelib"], paths["platlib"]])  # one line each, in order
    Path(site, "zz_agcore_test_deps.pth").write_text("".join(f"{d}\n" for d in deps))
    return python


def _where(python: Path) -> str:
    code = "import agcore_actors; print(agcore_actors.__file__)"
    return subprocess.run(
        [str(python), "-c", code], check=True, capture_output=True, text=True, cwd="/"
    ).stdout.strip()


def test_the_wheel_carries_py_typed_and_the_license(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "agcore_actors/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names[-10:]
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)


def test_the_installed_package_is_the_wheel_not_the_checkout(python: Path) -> None:
    assert not _where(python).startswith(str(ROOT))


USER_SCRIPT = '''
from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, SessionHost
from agcore_actors.agent import messages as am
from agcore_actors.tools import FunctionTool, ToolRegistry, function_tool, tool_executor_spec
from agcore_actors.testing import ScriptedProvider


@function_tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


tool: FunctionTool = add


async def main() -> None:
    async with ActorSystem() as system:
        tools = ToolRegistry([add])
        executor = await system.root.start_child(tool_executor_spec("tools", registry=tools))
        builder = AgentBuilder().tools(executor, tools)
        bundle = builder.agent(Agent(name="calculator", instructions="Use add.")).build()
        async with SessionHost(system, bundle) as host:
            async with host.submit("chat-1", "What is 17 + 25?") as events:
                async for event in events:
                    if isinstance(event, am.TextDelta):
                        print(event.text, end="")
'''


def _mypy(python: Path, directory: Path, script: str) -> subprocess.CompletedProcess[str]:
    (directory / "bot.py").write_text(textwrap.dedent(script))
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--python-executable", str(python), "--config-file", os.devnull, "bot.py"],
        capture_output=True,
        text=True,
        cwd=directory,
        timeout=600,
    )  # fmt: skip


def test_mypy_strict_passes_on_a_user_script_against_the_installed_wheel(
    python: Path, tmp_path: Path
) -> None:
    done = _mypy(python, tmp_path, USER_SCRIPT + "\nreveal_type(add)\n")
    assert done.returncode == 0, done.stdout + done.stderr
    # A decorated tool is a FunctionTool to the user's checker, not Any.
    assert 'Revealed type is "agcore_actors.tools.' in done.stdout, done.stdout
    assert "FunctionTool" in done.stdout


def test_a_misuse_of_a_decorated_tool_is_a_type_error(python: Path, tmp_path: Path) -> None:
    done = _mypy(python, tmp_path, USER_SCRIPT + "\nwrong: int = add\n")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Incompatible types in assignment" in done.stdout, done.stdout


TYPED_CALLS = """

@function_tool(name="multiply", timeout=5.0)
def mul(a: int, b: int = 2) -> int:
    \"\"\"Multiply two integers.\"\"\"
    return a * b


async def use() -> None:
    total: int = await add(1, 2)
    product: int = mul(3) + mul(3, b=4)
    typed: FunctionTool[[int, int], int] = mul
    print(total, product, typed.name)
    await add(1, "2")  # error: str is not int
    mul(3, c=4)  # error: no parameter c
    wrong: str = mul(3)  # error: int is not str
"""


def test_a_decorated_tool_is_called_as_its_function_is_typed(python: Path, tmp_path: Path) -> None:
    done = _mypy(python, tmp_path, USER_SCRIPT + TYPED_CALLS)
    assert done.returncode == 1, done.stdout + done.stderr
    errors = [line for line in done.stdout.splitlines() if ": error: " in line]
    script = (USER_SCRIPT + TYPED_CALLS).splitlines()
    # mypy numbers lines from 1, after textwrap.dedent (which keeps the line count).
    flagged = sorted(script[int(line.split(":")[1]) - 1].strip() for line in errors)
    assert flagged == [
        'await add(1, "2")  # error: str is not int',
        "mul(3, c=4)  # error: no parameter c",
        "wrong: str = mul(3)  # error: int is not str",
    ], done.stdout


def _cli(python: Path, cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    # The serve extra's modules are made unimportable, as in an install without it.
    code = (
        "import sys; sys.modules['hypercorn'] = None; sys.modules['prometheus_client'] = None; "
        "from agcore_actors.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    return subprocess.run(
        [str(python), "-c", code, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,  # not the checkout: ``-c`` puts the working directory first on the path
    )


def test_installed_serve_http_without_the_serve_extra_is_one_line_exit_2(
    python: Path, tmp_path: Path
) -> None:
    done = _cli(
        python, tmp_path, "serve", "--http", "127.0.0.1:0", "--store", str(tmp_path / "s.db")
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "pip install 'agcore-actors[serve]'" in lines[0]


def test_installed_serve_stdio_runs_without_the_serve_extra(python: Path, tmp_path: Path) -> None:
    config = tmp_path / "agcore.toml"
    config.write_text(
        '[providers.fake]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    done = _cli(python, tmp_path, "serve", "--stdio", "--config", str(config),
                "--store", str(tmp_path / "s.db"), stdin="")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "ModuleNotFoundError" not in done.stderr
    assert done.stdout == ""  # no input, no events


def test_installed_bench_says_it_needs_a_checkout_in_one_line(python: Path, tmp_path: Path) -> None:
    done = _cli(python, tmp_path, "bench", "list")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("agcore-actors bench list: usage: no benchmarks directory: ")
    assert "source checkout" in line and "--dir" in line
