"""Two source trees of sieve, `sieve dram --trace` timed side by side (an engine change's A/B).

Each tree is a checkout with its extensions built in place (``git worktree add /tmp/old REV``,
copy or build its ``.so`` files). For every round, trace and lifecycle, both trees run the same
command as whole processes, in an order that alternates between rounds; the first round warms
the file and bytecode caches and is not counted. Reported per trace and lifecycle: each tree's
CPU time (user + system of the child) min / median / max, and the per-round ratio A / B (> 1:
B is faster). Both trees run with OpenBLAS pinned to one thread and byte-compiled modules (a
cache directory per tree), so neither pays for what the other does not.

    python benchmarks/bench_ab.py --a /tmp/old --b . --rounds 5 \\
        --trace seq=/tmp/seq2m.trace --trace rand=/tmp/rand2m.trace

The traces are any LoadStore files (benchmarks/bench_trace.py makes the 2 M-line ones it uses:
``--workdir DIR`` keeps them). The simulated cycles of the two trees are compared too: an
engine change that is meant to be exact must not move them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ARGS = ["dram", "--spec", "hbm3-6400", "--mapping", "RoBaRaCoCh", "--request-bytes", "32",
        "--channels", "1", "--queue", "32", "--json"]


def run(tree: Path, trace: Path, lifecycle: str, cache: Path) -> tuple[float, int]:
    """One whole `sieve dram` process of ``tree``: (CPU seconds, simulated cycles)."""
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1",
               PYTHONPYCACHEPREFIX=str(cache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-m", "sieve", *ARGS, "--lifecycle", lifecycle,
                          "--trace", str(trace)], env=env, cwd=tree, capture_output=True,
                         text=True, check=True).stdout
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return cpu, int(json.loads(out)["cycles"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", type=Path, required=True, help="tree A (e.g. the old revision)")
    ap.add_argument("--b", type=Path, required=True, help="tree B (e.g. the change)")
    ap.add_argument("--trace", action="append", required=True, metavar="NAME=FILE")
    ap.add_argument("--lifecycles", default="sieve,ramulator2")
    ap.add_argument("--rounds", type=int, default=5, help="rounds, the first not counted")
    args = ap.parse_args(argv)
    traces = dict(t.split("=", 1) for t in args.trace)
    trees = {"A": args.a.resolve(), "B": args.b.resolve()}
    caches = {k: Path(tempfile.mkdtemp(prefix=f"sieve-ab-{k}-")) for k in trees}
    cpu: dict[tuple, list[float]] = {}
    cycles: dict[tuple, set[int]] = {}
    for rnd in range(args.rounds):
        for name, path in traces.items():
            for lc in args.lifecycles.split(","):
                for who in (("A", "B") if rnd % 2 == 0 else ("B", "A")):
                    t, c = run(trees[who], Path(path), lc, caches[who])
                    cycles.setdefault((name, lc), set()).add(c)
                    if rnd:
                        cpu.setdefault((name, lc, who), []).append(t)
    print(f"A = {trees['A']}\nB = {trees['B']}\n{args.rounds - 1} counted rounds, CPU s "
          f"min / median / max\n")
    print("| trace | lifecycle | A | B | A / B per round | same cycles |")
    print("|---|---|---|---|---|---|")
    for name in traces:
        for lc in args.lifecycles.split(","):
            a, b = cpu[(name, lc, "A")], cpu[(name, lc, "B")]
            r = sorted(x / y for x, y in zip(a, b))

            def f(v):
                return f"{min(v):.3f} / {statistics.median(v):.3f} / {max(v):.3f}"

            print(f"| {name} | {lc} | {f(a)} | {f(b)} | {f(r)} | "
                  f"{'yes' if len(cycles[(name, lc)]) == 1 else 'NO'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
