"""Command-line interface: a thin argparse layer over the library.

``main(argv) -> int``. Each subcommand parses its arguments, calls one library function and
prints or writes the result. A :class:`sieve.errors.SieveError` becomes one line on stderr and
exit code 2 (argparse usage errors also exit 2); nothing is half-written (sieve.outputs).
"""

from __future__ import annotations

import argparse
import sys

from sieve.errors import ConfigError, SieveError

__all__ = ["build_parser", "main"]


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


def _split_list(text: str, flag: str) -> list[str]:
    items = [x.strip() for x in text.split(",")]
    if not text.strip() or any(not x for x in items):
        raise ConfigError(
            f"{flag}: malformed list {text!r} (comma-separated, e.g. {flag} "
            + ("gpt-oss-120b,qwen3-30b-a3b)" if flag == "--models" else "1,4,16)")
        )
    return items


def _int_list(text: str, flag: str) -> list[int]:
    out = []
    for x in _split_list(text, flag):
        try:
            out.append(int(x))
        except ValueError:
            raise ConfigError(f"{flag}: {x!r} is not an integer (e.g. {flag} 1,4,16,64)") from None
    return out


def _cmd_characterize(args: argparse.Namespace) -> int:
    from sieve.characterize import CharacterizeConfig, run_characterize

    config = CharacterizeConfig(
        models=tuple(_split_list(args.models, "--models")),
        batch_sizes=tuple(_int_list(args.batch, "--batch")),
        n_steps=_int_arg("--steps")(args.steps),
        seed=_int_arg("--seed")(args.seed),
        router_fit=args.router_fit,
    )
    for path in run_characterize(config, args.out):
        print(path)
    return 0


def _int_arg(flag: str):
    def parse(text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"{flag}: {text!r} is not an integer") from None

    return parse


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

    p = sub.add_parser(
        "characterize",
        help="act-ratio and token-count bins per model and batch size (seed Figures 3 and 5)",
        description="Generate synthetic routing traces (sieve.router presets) and write a tidy "
        "CSV, config.json and the Figure 3/5 plots (PNG and PDF) into --out.",
    )
    p.add_argument("--models", required=True, help="comma-separated model names")
    p.add_argument("--batch", required=True, help="comma-separated batch sizes, e.g. 1,4,16,64")
    p.add_argument("--steps", default="16", help="decode steps per trace (default 16)")
    p.add_argument("--seed", default="0", help="RNG seed (default 0)")
    p.add_argument(
        "--router-fit",
        default="joint",
        help="router preset set: joint (seed numbers + real aggregate skew; default) or seed",
    )
    p.add_argument("--out", default="characterize_out", help="output directory")
    p.set_defaults(func=_cmd_characterize)
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
