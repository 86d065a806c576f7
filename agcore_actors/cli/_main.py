"""Entry point of the ``agcore-actors`` command."""

from __future__ import annotations

import argparse
import sys


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agcore-actors", description="LLM agents as supervised trio actors."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run a small supervised actor tree")
    demo.add_argument("--jobs", type=int, default=40, help="jobs to send (default 40)")
    demo.add_argument(
        "--crash-every", type=int, default=9, help="the worker crashes on every N-th job"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command == "demo":
        if args.jobs < 1 or args.crash_every < 1:
            print("agcore-actors demo: --jobs and --crash-every must be >= 1", file=sys.stderr)
            return 2
        from ._demo import main as demo

        demo(args.jobs, args.crash_every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
