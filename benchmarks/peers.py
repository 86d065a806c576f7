"""agcore-actors next to openai-agents and pydantic-ai, and a raw-client floor.

The same workload for every client (see benchmarks/_peers_frameworks.py for how each
is used): C concurrent sessions (1, 100, 1,000), each of 3 turns LLM → one function
tool → LLM with the history kept, streamed and not, against one fast fake OpenAI
server (benchmarks/fake_openai.py) in its own process. Every measured run is its own
subprocess (the peers in their own venvs), rounds interleave the clients, and the
median of the rounds is reported:

- client CPU per turn: ``time.process_time`` of the client process / turns;
- wall time of the measured part, and the process's peak RSS;
- memory per idle session: RSS added per session with 10,000 sessions, each after one
  completed turn, kept.

The peers' venvs are made under ``--venvs`` (pip from the configured index, versions
pinned below) unless ``--no-install``; a client whose venv is missing is left out and
the run says so: a partial run is never presented as a full one.

    .venv/bin/python benchmarks/peers.py                        # full run, ~30 min on 2 cores
    .venv/bin/python benchmarks/peers.py --venvs /tmp/peer-venvs --rounds 5
    .venv/bin/python benchmarks/peers.py --quick --no-install   # smoke: ours and the floor
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RUNNER = HERE / "_peers_run.py"

#: Pinned peers: venv name -> (framework, requirements). ``openai`` is pinned for both so
#: they talk through the same SDK (which, like agcore-actors here, uses httpx2).
PEERS: dict[str, tuple[str, list[str]]] = {
    "openai-agents": ("openai-agents", ["openai-agents==0.24.0", "openai==3.54.0"]),
    "pydantic-ai": ("pydantic-ai", ["pydantic-ai-slim[openai]==2.68.0", "openai==3.54.0"]),
}
OURS = ["raw", "raw-asyncio", "agcore"]
ORDER = ["raw", "raw-asyncio", "agcore", "openai-agents", "pydantic-ai"]
PEER_NAMES = list(PEERS)


def default_venvs() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "agcore-actors" / "peer-venvs"


def venv_python(venvs: Path, name: str) -> Path | None:
    """The peer's interpreter, making its venv first when allowed; None when absent."""
    path = venvs / name
    python = path / "bin" / "python"
    pins = "\n".join(PEERS[name][1])
    marker = path / "pins.txt"
    if python.exists() and marker.exists() and marker.read_text() == pins:
        return python
    return None


def make_venv(venvs: Path, name: str) -> Path | None:
    path = venvs / name
    print(f"making the {name} venv in {path} ...", file=sys.stderr, flush=True)
    base = getattr(sys, "_base_executable", sys.executable)
    try:
        subprocess.run([base, "-m", "venv", "--clear", str(path)], check=True)
        pip = [str(path / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, *PEERS[name][1]], check=True)
    except (subprocess.CalledProcessError, OSError) as error:
        print(f"could not make the {name} venv: {error}", file=sys.stderr)
        return None
    (path / "pins.txt").write_text("\n".join(PEERS[name][1]))
    return path / "bin" / "python"


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    server = subprocess.Popen(
        [sys.executable, str(HERE / "fake_openai.py")], stdout=subprocess.PIPE
    )
    assert server.stdout is not None
    line = server.stdout.readline().decode()
    if not line.startswith("PORT "):
        server.kill()
        raise RuntimeError(f"the fake server did not start: {line!r}")
    return server, f"http://127.0.0.1:{int(line.split()[1])}/v1"


def run_one(python: Path, framework: str, base: str, *args: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [str(python), str(RUNNER), framework, "--base", base, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{framework} {args} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def median(runs: list[dict[str, Any]], key: str, per_turn: bool = False) -> float:
    return float(statistics.median(r[key] / (r["turns"] if per_turn else 1) for r in runs))


def _cell(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def report(
    pythons: dict[str, Path],
    sizes: list[int],
    results: dict[tuple[str, int, str], list[dict[str, Any]]],
    idle: dict[str, dict[str, Any]],
    idle_n: int,
) -> list[str]:
    """Print the tables; return the goals missed (or not measurable)."""
    names = [n for n in ORDER if n in pythons]
    peers = [n for n in PEER_NAMES if n in pythons]
    missed: list[str] = []

    def cpu(name: str, c: int, mode: str) -> float | None:
        runs = results.get((name, c, mode))
        return median(runs, "cpu", per_turn=True) * 1000 if runs else None

    print("Client CPU per turn, ms (median of rounds; lower is better):\n")
    print("| sessions | mode | " + " | ".join(names) + " | agcore ÷ best peer | agcore ÷ raw |")
    print("|---:|---|" + "---:|" * (len(names) + 2))
    for c in sizes:
        for mode in ("plain", "streamed"):
            figures = [cpu(n, c, mode) for n in names]
            agcore, floor = cpu("agcore", c, mode), cpu("raw", c, mode)
            best = min((v for n in peers if (v := cpu(n, c, mode)) is not None), default=None)
            vs_peer = agcore / best if agcore is not None and best else None
            vs_raw = agcore / floor if agcore is not None and floor else None
            shown = " | ".join(_cell(v, ".2f") for v in figures)
            print(
                f"| {c:,} | {mode} | {shown} | {_cell(vs_peer, '.3f')} | {_cell(vs_raw, '.2f')} |"
            )
            if vs_peer is None:
                missed.append(f"CPU vs peers at {c} {mode}: no peer measured")
            elif vs_peer > 0.25:
                missed.append(f"CPU vs best peer at {c} {mode}: {vs_peer:.3f} > 0.25")
            if vs_raw is not None and vs_raw > 1.5:
                missed.append(f"CPU vs raw floor at {c} {mode}: {vs_raw:.2f} > 1.5")

    print("\nWall time of the measured part, s, and peak RSS of the client process, MB:\n")
    print("| sessions | mode | " + " | ".join(f"{n} wall | {n} RSS" for n in names) + " |")
    print("|---:|---|" + "---:|---:|" * len(names))
    for c in sizes:
        for mode in ("plain", "streamed"):
            cells = []
            for n in names:
                runs = results.get((n, c, mode))
                wall = median(runs, "wall") if runs else None
                peak = max(r["peak_rss"] for r in runs) / 1e6 if runs else None
                cells += [_cell(wall, ".2f"), _cell(peak, ".0f")]
            print(f"| {c:,} | {mode} | " + " | ".join(cells) + " |")
    top = max(sizes)
    peak = {
        n: max(r["peak_rss"] for m in ("plain", "streamed") for r in results.get((n, top, m), []))
        for n in names
        if any(results.get((n, top, m)) for m in ("plain", "streamed"))
    }
    best_peak = min((peak[n] for n in peers if n in peak), default=None)
    if "agcore" in peak and best_peak is not None and peak["agcore"] >= best_peak:
        missed.append(f"peak RSS at {top}: agcore {peak['agcore'] / 1e6:.0f} MB >= best peer")

    if idle:
        print(f"\nMemory per idle session, {idle_n:,} sessions after one turn each, kept:\n")
        print("| client | bytes per session | what a session is |")
        print("|---|---:|---|")
        rows = [
            r for name in names for r in ([name, "agcore evicted"] if name == "agcore" else [name])
        ]
        for row in rows:
            if row in idle:
                kept = idle[row].get("kept", "")
                print(f"| {row} | {idle[row]['idle_per_session']:,.0f} | {kept} |")
        best_idle = min((idle[n]["idle_per_session"] for n in peers if n in idle), default=None)
        for ours in ("agcore", "agcore evicted"):
            if (
                ours in idle
                and best_idle is not None
                and idle[ours]["idle_per_session"] >= best_idle
            ):
                missed.append(f"memory per idle session: {ours} >= best peer")
    return missed


KEPT = {
    "raw": "the message list (dicts)",
    "raw-asyncio": "the message list (dicts)",
    "agcore": "a live Session actor in the SessionHost + its stored transcript",
    "agcore evicted": "its stored transcript (deactivated, as after the idle TTL)",
    "openai-agents": "result.to_input_list()",
    "pydantic-ai": "result.all_messages()",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="agcore-actors vs openai-agents, pydantic-ai")
    parser.add_argument("--venvs", type=Path, default=default_venvs(), help="peer venvs here")
    parser.add_argument("--no-install", action="store_true", help="use existing venvs only")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="1,100,1000", help="concurrent sessions")
    parser.add_argument("--idle", type=int, default=10_000, help="idle sessions (0: skip)")
    parser.add_argument("--only", default="", help="comma-separated clients to run")
    parser.add_argument("--quick", action="store_true", help="smoke: sizes 1,5, 1 round, tiny")
    parser.add_argument("--save", type=Path, help="append each run's JSON line to this file")
    parser.add_argument("--load", type=Path, nargs="*", default=[], help="report saved runs")
    args = parser.parse_args(argv)
    sizes = [1, 5] if args.quick else [int(s) for s in args.sizes.split(",")]
    rounds = 1 if args.quick else args.rounds
    idle_n = 50 if args.quick else args.idle
    least = ["--min-sessions", "5"] if args.quick else []
    wanted = set(args.only.split(",")) if args.only else set(ORDER)

    pythons: dict[str, Path] = {n: Path(sys.executable) for n in OURS if n in wanted}
    absent: list[str] = []
    for name in PEER_NAMES:
        if name not in wanted:
            continue
        python = venv_python(args.venvs, name)
        if python is None and not args.no_install:
            python = make_venv(args.venvs, name)
        if python is None:
            absent.append(name)
        else:
            pythons[name] = python

    print("## agcore-actors and its peers (benchmarks/peers.py)\n")
    print(f"Python {platform.python_version()}, {os.cpu_count()} cores; HTTP stack httpx2 for all;")
    print("pins: " + "; ".join(" ".join(reqs) for _, reqs in PEERS.values()) + "\n")
    if absent:
        print(f"**PARTIAL RUN**: {', '.join(absent)} not measured (no venv under {args.venvs};")
        print("run without --no-install to make it). Goals against the peers are not shown.\n")

    results: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    idle: dict[str, dict[str, Any]] = {}
    if args.load:
        return _report_saved(args.load, pythons, absent)
    server, base = start_server()

    def keep(run: dict[str, Any]) -> dict[str, Any]:
        if args.save is not None:
            with args.save.open("a") as f:
                f.write(json.dumps(run) + "\n")
        return run

    try:
        names = [n for n in ORDER if n in pythons]
        for r in range(rounds):
            order = names[r % len(names) :] + names[: r % len(names)]  # rotate who goes first
            for c in sizes:
                for mode in ("plain", "streamed"):
                    for name in order:
                        options = ["--sessions", str(c), "--mode", mode, *least]
                        run = keep(run_one(pythons[name], name, base, *options))
                        results.setdefault((name, c, mode), []).append(run)
                        print(f"  round {r + 1} {name} C={c} {mode}: "
                              f"{run['cpu'] / run['turns'] * 1000:.2f} ms/turn",
                              file=sys.stderr, flush=True)  # fmt: skip
        if idle_n:
            for name in names:
                if name == "raw-asyncio":
                    continue
                idle[name] = keep(run_one(pythons[name], name, base, "--idle", str(idle_n)))
                idle[name]["kept"] = KEPT[name]
                if name == "agcore":
                    evicted = run_one(pythons[name], name, base, "--idle", str(idle_n), "--evict")
                    idle["agcore evicted"] = keep({**evicted, "evicted": True})
                    idle["agcore evicted"]["kept"] = KEPT["agcore evicted"]
    finally:
        server.kill()
        server.wait()
        if server.stdout is not None:
            server.stdout.close()

    print(f"{rounds} round(s); {', '.join(f'C={c}' for c in sizes)}; 3 turns per session.\n")
    return _goals(report(pythons, sizes, results, idle, idle_n), absent)


def _report_saved(paths: list[Path], pythons: dict[str, Path], absent: list[str]) -> int:
    """The tables of runs saved with ``--save`` (one JSON line per run)."""
    results: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    idle: dict[str, dict[str, Any]] = {}
    idle_n = 0
    for path in paths:
        for line in path.read_text().splitlines():
            run = json.loads(line)
            if "idle_per_session" in run:
                name = "agcore evicted" if run.get("evicted") else run["framework"]
                idle[name] = {**run, "kept": KEPT[name]}
                idle_n = run["sessions"] if run["sessions"] > 1 else idle_n
            else:
                results.setdefault((run["framework"], run["sessions"], run["mode"]), []).append(run)
    sizes = sorted({c for _, c, _ in results})
    rounds = max((len(v) for v in results.values()), default=0)
    print(f"Saved runs from {', '.join(map(str, paths))}: up to {rounds} round(s) per cell.\n")
    return _goals(report(pythons, sizes, results, idle, idle_n), absent)


def _goals(missed: list[str], absent: list[str]) -> int:
    print("\n### Goals (issue 18)\n")
    if absent:
        print("Not checked against the peers: partial run.")
    for line in missed:
        if not absent or "peer" not in line:
            print(f"- MISSED: {line}")
    if not missed:
        print("- all met: CPU at most 1/4 of the best peer and 1.5x the raw floor everywhere, "
              "less peak RSS and less memory per idle session")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
