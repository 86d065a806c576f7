"""Actor runtime benchmark: agcore_actors against pykka threads and a plain trio channel ask.

Three implementations of the same tiny actor (an ask of ``Ping(n)`` returns ``n``; a told
``Note`` is counted; an ask of ``Count()`` returns the count) are measured for:

- asks/s: one client asking one actor sequentially;
- tells/s: one client telling one actor N messages, then one ``Count`` ask as a flush,
  timed until the actor has handled all of them;
- the cost of agcore_actors' own variants of one ask, as µs per ask: a serial actor (the
  figure above), the same actor declared ``Actor[Any]`` (no message type check at the
  sender), and the same actor spawned with ``max_concurrency=16`` (a task per request);
  and the message type check alone (one ``isinstance`` against the cached tuple), timed
  with ``timeit``;
- bytes per idle actor: N actors are spawned, each is asked once (so it is warmed up and
  parked), then memory is measured, in a fresh subprocess per implementation. Two figures:
  the traced Python heap (``tracemalloc``) and the resident set size (``/proc/self/statm``).
  The actors' name strings are created inside the measured region, so they are counted.

The implementations are measured in interleaved rounds (ours, chan, pykka, ours, ...) and
the median of the rounds is reported, so a burst of machine noise cannot decide a ratio.

Run from the repository root::

    python benchmarks/actors.py            # full run, about a minute on 2 cores
    python benchmarks/actors.py --quick    # smoke test, a few seconds
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the implementations live beside this script

from _actors_impls import (  # noqa: E402
    IDLE,
    RATES,
    VARIANT_LABELS,
    VARIANTS,
    Probe,
    type_check_ns,
    variant_ask_rate,
)

#: Implementation keys, in the order every round measures them.
IMPLS = ("ours", "chan", "pykka")
#: Where threads can be pinned, pykka's throughput is also measured with its two threads
#: on one CPU: handing a message to a thread asleep on another (virtual) CPU is what
#: makes pykka slow on an idle multi-core machine, and a busy machine often avoids that.
CAN_PIN = hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > 1
THROUGHPUT = (*IMPLS, "pykka1") if CAN_PIN else IMPLS
LABELS = {
    "ours": "agcore_actors",
    "chan": "trio channel ask",
    "pykka": "pykka ThreadingActor",
    "pykka1": "pykka, threads pinned to 1 CPU",
}

#: Targets for agcore_actors.
ASK_VS_PYKKA = 2.5
ASK_VS_CHAN = 2.0
MAX_IDLE_BYTES = 3072


def memory_child(impl: str, n: int) -> dict[str, float]:
    """In a fresh process: RSS bytes per idle actor, then tracemalloc bytes per actor.

    RSS comes first, while the process is untouched by tracemalloc's own bookkeeping.
    """
    rss = IDLE[impl](n, Probe(traced=False))
    traced = IDLE[impl](n, Probe(traced=True))
    return {"rss": rss / n, "traced": traced / n}


def run_memory_child(impl: str, n: int) -> dict[str, float]:
    """Run :func:`memory_child` in a subprocess and return its result."""
    script = str(Path(__file__).resolve())
    cmd = [sys.executable, script, "--memory-child", impl, "--actors", str(n)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"memory measurement of {impl} failed:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# -- running rounds and reporting -----------------------------------------------


@dataclass
class Samples:
    """Every round's figures for one implementation."""

    asks: list[float]
    tells: list[float]
    traced: list[float]
    rss: list[float]


@dataclass
class VariantSamples:
    """Every round's ask rates of the agcore_actors variants, and the check's cost."""

    asks: dict[str, list[float]]
    check_ns: list[float]


def run_rounds(args: argparse.Namespace) -> tuple[dict[str, Samples], VariantSamples]:
    """Measure every implementation once per round, interleaved; return all samples."""
    samples = {impl: Samples([], [], [], []) for impl in THROUGHPUT}
    variants = VariantSamples({v: [] for v in VARIANTS}, [])
    for r in range(args.rounds):
        for variant in VARIANTS:
            variants.asks[variant].append(variant_ask_rate(variant, args.asks))
        variants.check_ns.append(type_check_ns())
        for impl in THROUGHPUT:
            rates = RATES[impl](args.asks, args.tells)
            s = samples[impl]
            s.asks.append(rates.asks)
            s.tells.append(rates.tells)
            if impl in IMPLS:
                memory = run_memory_child(impl, idle_actors(impl, args))
                s.traced.append(memory["traced"])
                s.rss.append(memory["rss"])
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    return samples, variants


def idle_actors(impl: str, args: argparse.Namespace) -> int:
    """How many idle actors the memory measurement of ``impl`` spawns."""
    count: int = args.pykka_actors if impl == "pykka" else args.actors
    return count


def package_version(name: str) -> str:
    """Installed version of ``name``, or "?"."""
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo, or the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def machine_facts() -> list[str]:
    """Lines describing the machine and the software measured."""
    return [
        f"- nproc: {os.cpu_count()} ({cpu_model()}, {platform.machine()})",
        f"- python: {platform.python_implementation()} {platform.python_version()}"
        f" on {platform.system()} {platform.release()}",
        f"- trio {package_version('trio')}, msgspec {package_version('msgspec')},"
        f" pykka {package_version('pykka')}, agcore-actors {package_version('agcore-actors')}",
        f"- load average at start: {load_average()} (other work on the machine skews every figure)",
    ]


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, or "?" where the platform has none."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table: first column left-aligned, the others right-aligned."""
    align = ["---", *["---:"] * (len(header) - 1)]
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(align) + " |",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def med(values: Sequence[float]) -> float:
    """The median of ``values``."""
    return statistics.median(values)


def median_cell(values: Sequence[float]) -> str:
    """The median of ``values``, thousands separated; "-" if nothing was measured."""
    return f"{med(values):,.0f}" if values else "-"


def spread(values: Sequence[float]) -> str:
    """``min-max`` of ``values``, thousands separated; "-" if nothing was measured."""
    return f"{min(values):,.0f}-{max(values):,.0f}" if values else "-"


def result_tables(samples: dict[str, Samples], args: argparse.Namespace) -> list[str]:
    """The figures table (medians) and the spread table."""
    figures = []
    ranges = []
    for impl in THROUGHPUT:
        s = samples[impl]
        measured = impl in IMPLS
        figures.append(
            [
                LABELS[impl],
                median_cell(s.asks),
                median_cell(s.tells),
                median_cell(s.traced) + (" *" if impl == "pykka" else ""),
                median_cell(s.rss),
                f"{idle_actors(impl, args):,}" if measured else "-",
            ]
        )
        ranges.append(
            [LABELS[impl], spread(s.asks), spread(s.tells), spread(s.traced), spread(s.rss)]
        )
    header = [
        "implementation",
        "asks/s",
        "tells/s",
        "bytes/idle actor (tracemalloc)",
        "bytes/idle actor (RSS)",
        "idle actors",
    ]
    lines = [f"### Results (median of {args.rounds} interleaved rounds)", ""]
    lines += table(header, figures)
    lines += [
        "",
        "tracemalloc = growth of the traced Python heap; RSS = growth of the resident set"
        " (/proc/self/statm), each divided by the number of idle actors, in a fresh"
        " process per implementation.",
        "\\* pykka's tracemalloc figure misses its thread stacks and interpreter thread"
        " state; its RSS figure is the fair one.",
        "The pinned pykka row is throughput only: the client thread and the actor thread"
        " share one CPU, which removes the cost of waking a thread on another CPU.",
        "",
        f"### Spread (min-max over {args.rounds} rounds)",
        "",
    ]
    lines += table(header[:5], ranges)
    return lines + wide_spread_notes(samples)


def wide_spread_notes(samples: dict[str, Samples], limit: float = 1.5) -> list[str]:
    """A note for every throughput whose rounds differ by more than ``limit`` times."""
    notes = []
    for impl in THROUGHPUT:
        s = samples[impl]
        for figure, values in (("asks/s", s.asks), ("tells/s", s.tells)):
            if min(values) > 0 and max(values) / min(values) > limit:
                notes.append(
                    f"- note: {LABELS[impl]} {figure} varied {max(values) / min(values):.1f}x"
                    " across rounds; the median is less certain than usual."
                )
    return ["", *notes] if notes else []


def ratio_table(samples: dict[str, Samples]) -> list[str]:
    """Ratios of the medians: ours over pykka (also pinned) and over the channel ask."""
    ours = samples["ours"]
    rows = []
    for other in ("pykka", "pykka1", "chan"):
        if other not in samples:
            continue
        o = samples[other]
        rows.append(
            [
                f"agcore_actors / {LABELS[other]}",
                f"{med(ours.asks) / med(o.asks):.2f}x",
                f"{med(ours.tells) / med(o.tells):.2f}x",
            ]
        )
    return ["### Ratios (of the medians)", "", *table(["ratio", "asks/s", "tells/s"], rows)]


def variant_table(variants: VariantSamples) -> list[str]:
    """µs per ask of each agcore_actors variant, against the serial actor of the same rounds."""
    serial_us = 1e6 / med(variants.asks["serial"])
    rows = []
    for variant in VARIANTS:
        us = 1e6 / med(variants.asks[variant])
        rows.append(
            [
                VARIANT_LABELS[variant],
                median_cell(variants.asks[variant]),
                f"{us:.2f}",
                f"{us / serial_us:.2f}x",
            ]
        )
    check = med(variants.check_ns)
    rows.append(
        [
            "message type check alone (timeit)",
            "-",
            f"{check / 1000:.3f}",
            f"{check / 1000 / serial_us:.3f}x",
        ]
    )
    header = ["agcore_actors ask", "asks/s", "µs per ask", "vs serial"]
    return [
        "### agcore_actors variants (median of the same rounds)",
        "",
        *table(header, rows),
    ]


def target_table(samples: dict[str, Samples]) -> list[str]:
    """Each target of agcore_actors with the measured value and PASS/FAIL.

    The targets compare medians. The pinned-pykka row, where measured, is an extra,
    stricter reading of the first target, not a target of its own.
    """
    ours = samples["ours"]
    checks: list[tuple[str, str, bool]] = []
    for other, label in (("pykka", "pykka"), ("pykka1", "pykka pinned to 1 CPU (extra)")):
        if other in samples:
            ratio = med(ours.asks) / med(samples[other].asks)
            name = f"ask throughput >= {ASK_VS_PYKKA}x {label}"
            checks.append((name, f"{ratio:.2f}x", ratio >= ASK_VS_PYKKA))
    ratio = med(ours.asks) / med(samples["chan"].asks)
    name = f"ask throughput >= {ASK_VS_CHAN}x plain channel ask"
    checks.append((name, f"{ratio:.2f}x", ratio >= ASK_VS_CHAN))
    for kind, values in (("tracemalloc", ours.traced), ("RSS", ours.rss)):
        name = f"memory per idle actor <= {MAX_IDLE_BYTES} B ({kind})"
        checks.append((name, f"{med(values):,.0f} B", med(values) <= MAX_IDLE_BYTES))
    rows = [[name, value, "PASS" if ok else "FAIL"] for name, value, ok in checks]
    return ["### Targets (agcore_actors)", "", *table(["target", "measured", "result"], rows)]


# -- command line ---------------------------------------------------------------


#: Sizes of a full run and of a ``--quick`` smoke run; an explicit option wins over both.
FULL = {"rounds": 5, "asks": 20_000, "tells": 50_000, "actors": 2000, "pykka_actors": 300}
QUICK = {"rounds": 1, "asks": 200, "tells": 500, "actors": 50, "pykka_actors": 20}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the command line; ``--quick`` shrinks the sizes not given explicitly."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, help=f"interleaved rounds (default {FULL['rounds']})")
    parser.add_argument("--asks", type=int, help=f"timed asks per round (default {FULL['asks']})")
    parser.add_argument(
        "--tells", type=int, help=f"timed tells per round (default {FULL['tells']})"
    )
    parser.add_argument(
        "--actors", type=int, help=f"idle trio-based actors (default {FULL['actors']})"
    )
    parser.add_argument(
        "--pykka-actors", type=int, help=f"idle pykka actors (default {FULL['pykka_actors']})"
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    parser.add_argument("--memory-child", choices=IMPLS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if min(args.rounds, args.asks, args.tells, args.actors, args.pykka_actors) < 1:
        parser.error("every size must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the Markdown report; returns the exit status."""
    args = parse_args(argv)
    if args.memory_child:
        print(json.dumps(memory_child(args.memory_child, args.actors)))
        return 0
    started = time.perf_counter()
    lines = ["## Actor runtime benchmark", "", *machine_facts()]
    lines.append(
        f"- sizes: {args.rounds} rounds, {args.asks:,} asks, {args.tells:,} tells,"
        f" {args.actors:,} idle trio actors, {args.pykka_actors:,} idle pykka actors"
    )
    print("\n".join(lines), flush=True)
    samples, variants = run_rounds(args)
    report = ["", *result_tables(samples, args), "", *ratio_table(samples)]
    report += ["", *variant_table(variants)]
    report += ["", *target_table(samples)]
    report += [
        "",
        f"Total wall time: {time.perf_counter() - started:.1f} s;"
        f" load average at the end: {load_average()}",
    ]
    print("\n".join(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
