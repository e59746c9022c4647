"""Command-line interface: a thin argparse layer over the library.

``main(argv) -> int``. Each subcommand parses its arguments, calls one library function and
prints or writes the result. A :class:`sieve.errors.SieveError` becomes one line on stderr and
exit code 2 (argparse usage errors also exit 2); nothing is half-written (sieve.outputs).
"""

from __future__ import annotations

import argparse
import sys

from sieve.errors import SieveError

__all__ = ["main", "build_parser"]


def _cmd_specs(args: argparse.Namespace) -> int:
    from sieve import specs

    if args.name is None:
        width = max(len(n) for n in specs.PRESETS)
        for name, spec in specs.PRESETS.items():
            mark = "*" if name == specs.DEFAULT_SPEC else " "
            print(f"{mark} {name:<{width}}  {spec.description}")
        print("(* = default; `sieve specs NAME` shows every value with its unit and source)")
        return 0
    spec = specs.get_spec(args.name)
    rows = spec.describe()
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    for name, value, meaning in rows:
        print(f"{name:<{w0}}  {value:<{w1}}  {meaning}")
    if spec.sources:
        print("\nsources:")
        for k, v in spec.sources.items():
            print(f"  {k}: {v}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sieve",
        description="Cycle-accurate simulation of MoE serving on GPUs with HBM-PIM.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("specs", help="list DRAM/PIM presets, or show one with units")
    p.add_argument("name", nargs="?", help="preset name or .json/.toml spec file")
    p.set_defaults(func=_cmd_specs)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SieveError as exc:
        print(f"sieve: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        print("sieve: interrupted", file=sys.stderr)
        return 130
