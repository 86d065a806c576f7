"""``agcore-actors bench list|run``: the scripts in ``benchmarks/``.

The benchmarks are scripts of the source tree, not of the installed package (the wheel
does not ship them): they are looked up in ``--dir``, else ``benchmarks/`` of the checkout
this package runs from (an editable install: a ``pyproject.toml`` beside the package),
else ``./benchmarks``. Without any, the command says so in one line (exit 2): run it in a
checkout, or pass ``--dir``. ``list`` names each with the first line of its
docstring; ``run NAME [-- ARGS...]`` runs ``python benchmarks/NAME.py ARGS`` with this
Python, its output passed through, and exits with its status (130 after Ctrl-C, which
reaches the script too: it shares the terminal's process group).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

from ._common import OK, add_command, add_group, examples, print_json
from ._errors import UsageError

__all__ = ["benchmark_dir", "benchmarks", "register"]

#: Scripts of benchmarks/ that are helpers of the others, not benchmarks.
_HELPERS = frozenset({"fake_openai", "soak_check", "soak_driver", "soak_rig"})


def benchmark_dir(given: Path | None) -> Path:
    """The benchmarks directory (see the module doc); :class:`UsageError` if none."""
    candidates = [given] if given is not None else []
    if given is None:
        checkout = Path(__file__).resolve().parents[2]
        # Installed, the package's grandparent is site-packages, where another
        # distribution's top-level ``benchmarks`` must not be taken for ours.
        if (checkout / "pyproject.toml").is_file():
            candidates.append(checkout / "benchmarks")
        candidates.append(Path.cwd() / "benchmarks")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    where = ", ".join(str(c) for c in candidates)
    raise UsageError(
        "no benchmarks directory: bench runs the scripts of a source checkout's benchmarks/,"
        f" which the installed package does not ship; run it in a checkout or pass --dir"
        f" (looked in {where})"
    )


def benchmarks(directory: Path) -> dict[str, str]:
    """Name → the first line of the script's docstring, sorted by name."""
    found: dict[str, str] = {}
    for path in sorted(directory.glob("*.py")):
        if path.stem.startswith("_") or path.stem in _HELPERS:
            continue
        try:
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        except (SyntaxError, UnicodeDecodeError):
            doc = ""
        found[path.stem] = doc.strip().splitlines()[0] if doc.strip() else ""
    return found


def _list(args: argparse.Namespace) -> int:
    found = benchmarks(benchmark_dir(args.dir))
    if args.json:
        print_json(found)
        return OK
    width = max((len(name) for name in found), default=0)
    for name, line in found.items():
        print(f"{name:{width}}  {line}")
    return OK


def _run(args: argparse.Namespace) -> int:
    directory = benchmark_dir(args.dir)
    found = benchmarks(directory)
    if args.name not in found:
        raise UsageError(f"no benchmark {args.name!r}; there are: {', '.join(found)}")
    command = [sys.executable, str(directory / f"{args.name}.py"), *args.args]
    process = subprocess.Popen(command)
    try:
        return process.wait()
    except KeyboardInterrupt:
        process.wait()  # it got the same SIGINT from the terminal
        raise


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = add_group(
        commands,
        "bench",
        help="list and run the benchmarks of benchmarks/",
        epilog=examples(
            "agcore-actors bench list",
            "agcore-actors bench run actors -- --quick",
            "agcore-actors bench run local_model -- --model small",
        ),
    )
    listing = add_command(group, "list", _list, help="the benchmarks, one line each")
    listing.add_argument("--json", action="store_true", help="name → description as JSON")
    listing.add_argument("--dir", type=Path, help="the benchmarks directory")
    run = add_command(group, "run", _run, help="run one benchmark by name", trailing="args")
    run.add_argument("name", help="the benchmark (see bench list)")
    run.add_argument("args", nargs="*", help="arguments for the script (after --)")
    run.add_argument("--dir", type=Path, help="the benchmarks directory")
