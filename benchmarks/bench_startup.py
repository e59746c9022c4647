"""Start-up cost of sieve commands: whole-process CPU time of short commands, per source tree.

A command that does little work (print a model, refuse a bad argument, simulate a 1,000-line
trace) costs what the interpreter, numpy and sieve's own imports cost. Each round runs every
command of every tree once as a whole process, in an order that alternates between rounds,
beside two anchors run in the same rounds (``python -c pass`` and ``python -c "import numpy"``);
the first round warms the file and bytecode caches and is not counted. Reported per command and
tree: CPU time (user + system of the child) min / median / max, and, with two trees, the
per-round ratio A / B (> 1: B starts faster). Every run has OpenBLAS pinned to one thread and
byte-compiled modules (a cache directory per tree).

    python benchmarks/bench_startup.py --tree . --rounds 15
    python benchmarks/bench_startup.py --tree /tmp/old --tree . --rounds 15   # an A/B

A tree is a checkout with its extensions built in place (``git worktree add /tmp/old REV``,
then copy or build its ``.so`` files). Exit codes are checked: a refusal must exit 2, the rest 0.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_trace import make_trace  # (this folder is on sys.path when run as a script)

#: (label, sieve arguments, expected exit code); TRACE is replaced by a 1,000-line trace file.
COMMANDS = [
    ("model", ["model", "qwen3-30b-a3b"], 0),
    ("run, unknown --pim (refused)", ["run", "--pim", "nosuch"], 2),
    ("dram, 1,000-line trace", ["dram", "--spec", "hbm3-6400", "--mapping", "RoBaRaCoCh",
                                "--request-bytes", "32", "--channels", "1", "--queue", "32",
                                "--json", "--trace", "TRACE"], 0),
]


def cpu_of(cmd: list[str], env: dict, want_rc: int, cwd: Path) -> float:
    """CPU seconds (user + system) of one child process, run in ``cwd`` (a tree's root: ``-m
    sieve`` imports the package of the working folder before PYTHONPATH's); checks its exit
    code."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, check=False)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != want_rc:
        raise SystemExit(f"bench_startup: {' '.join(cmd)} exited {proc.returncode}, expected "
                         f"{want_rc}: {proc.stderr.decode(errors='replace')[-500:]}")
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def fmt(v: list[float], digits: int = 3) -> str:
    return " / ".join(f"{x:.{digits}f}" for x in (min(v), statistics.median(v), max(v)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", type=Path, required=True,
                    help="a sieve source tree with its extensions built (give one or two)")
    ap.add_argument("--rounds", type=int, default=15, help="counted rounds (default 15)")
    args = ap.parse_args(argv)
    if not 1 <= len(args.tree) <= 2 or args.rounds < 1:
        ap.error("give one or two --tree and --rounds >= 1")
    work = Path(tempfile.mkdtemp(prefix="sieve-bench-startup-"))
    trace = work / "r1k.trace"
    make_trace("rand", 1000, trace)  # bench_trace.py's uniform random 64 B-aligned reads
    base = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    trees = [t.resolve() for t in args.tree]
    envs = [dict(base, PYTHONPATH=str(t), PYTHONPYCACHEPREFIX=str(work / f"pyc{i}"))
            for i, t in enumerate(trees)]
    py = sys.executable
    anchors = [("python -c pass", [py, "-c", "pass"]),
               ("python -c 'import numpy'", [py, "-c", "import numpy"])]
    cells: dict[tuple[str, int], list[float]] = {}
    for rnd in range(args.rounds + 1):
        order = list(range(len(trees)))
        if rnd % 2:
            order.reverse()
        for label, cmd in anchors:
            t = cpu_of(cmd, base, 0, work)
            if rnd:
                cells.setdefault((label, -1), []).append(t)
        for label, sargs, rc in COMMANDS:
            sargs = [str(trace) if a == "TRACE" else a for a in sargs]
            for i in order:
                t = cpu_of([py, "-m", "sieve", *sargs], envs[i], rc, trees[i])
                if rnd:
                    cells.setdefault((label, i), []).append(t)
    print(f"Machine: {os.uname().machine}, CPython {sys.version.split()[0]}, {os.cpu_count()} "
          f"CPUs; {args.rounds} counted rounds; CPU s min / median / max")
    head = "| command | " + " | ".join(f"tree {chr(65 + i)}" for i in range(len(trees)))
    head += " | ratio A / B |" if len(trees) == 2 else " |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for label, _ in anchors:
        print(f"| {label} | " + " | ".join([fmt(cells[(label, -1)])] * len(trees))
              + (" | |" if len(trees) == 2 else " |"))
    for label, _, _ in COMMANDS:
        row = [fmt(cells[(label, i)]) for i in range(len(trees))]
        if len(trees) == 2:
            ratio = [a / b for a, b in zip(cells[(label, 0)], cells[(label, 1)])]
            row.append(fmt(ratio, digits=2))
        print(f"| {label} | " + " | ".join(row) + " |")
    for i, t in enumerate(trees):
        print(f"tree {chr(65 + i)}: {t}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
