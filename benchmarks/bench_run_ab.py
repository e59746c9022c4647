"""Interleaved A/B of whole ``simulate_run`` points between two builds of sieve.

Each pair runs the same points once in a worker process of each build (the baseline build
in ``--baseline DIR``, a checkout with its compiled extensions, e.g. ``git worktree add
/tmp/sieve-base <rev>`` and the ``.so`` files copied or built there; and this checkout), the
order alternating from pair to pair, so that neither build gains from running second. A
worker times every point with ``time.perf_counter`` (wall) and ``time.process_time`` (CPU)
after one unmeasured run of a small point of another model (imports, engine start-up; every
timed point builds its own PIM layouts, as a fresh worker's first run of it does). Both builds
must give the same throughput at every point unless ``--allow-diff`` (a speed change must not
change a result).

Prints, per point and build, wall and CPU seconds (min / median / max over the pairs) and
the median over pairs of the per-pair ratio new / base; on a noisy machine the per-pair ratio
is the number to quote (docs/performance.md).

    python benchmarks/bench_run_ab.py --baseline DIR [--pairs 5] [--allow-diff]
    python benchmarks/bench_run_ab.py --baseline DIR --points look   # sieve-cp's look

``--points look`` times instead the points where sieve-cp's look ahead under two-batch
overlap (:meth:`sieve.system.dag.Schedule.lookahead`) takes most of a run: expert parallelism
over four and eight GPUs at large batches, 8 sampled layers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: The points timed: (label, RunConfig fields); 1 warm-up + 1 measured step each.
POINTS = (
    ("qwen3-30b-a3b 1xb200 sieve B=64, sequential, every layer",
     dict(model="qwen3-30b-a3b", system="1xb200", method="sieve", batch=64, layers=None)),
    ("qwen3-30b-a3b 1xb200 sieve-cp B=32 math-500, tbo, 8 layers",
     dict(model="qwen3-30b-a3b", system="1xb200", method="sieve-cp", batch=32,
          workload="math-500", overlap="tbo", layers=8)),
    ("gpt-oss-120b 4xb200 duplex B=64, sequential, 4 layers",
     dict(model="gpt-oss-120b", system="4xb200", method="duplex", batch=64, layers=4)),
)
#: ``--points look``: sieve-cp under two-batch overlap where its look ahead is most of the run
LOOK_POINTS = (
    ("gpt-oss-120b 4xb200 sieve-cp B=64, tbo, 8 layers",
     dict(model="gpt-oss-120b", system="4xb200", method="sieve-cp", batch=64,
          overlap="tbo", layers=8)),
    ("qwen3.5-397b-a17b 8xb200 sieve-cp B=256, tbo, 8 layers",
     dict(model="qwen3.5-397b-a17b", system="8xb200", method="sieve-cp", batch=256,
          overlap="tbo", layers=8)),
)
POINT_SETS = {"default": POINTS, "look": LOOK_POINTS}


def worker(points=POINTS) -> list[dict]:
    from sieve.system.run import RunConfig, simulate_run

    def cfg(kw):
        return RunConfig(steps=1, warmup=1, **kw)

    # unmeasured: imports and the engine's start-up, on a point none of those timed shares
    # its layouts with (each timed point then builds its own, as the first run of a sweep's
    # point in a fresh worker does)
    simulate_run(RunConfig(model="gpt-oss-20b", system="1xb200", method="allexp", batch=1,
                           steps=1, warmup=0, layers=1))
    out = []
    for label, kw in points:
        w0, c0 = time.perf_counter(), time.process_time()
        row = simulate_run(cfg(kw)).row
        out.append({"point": label, "wall_s": time.perf_counter() - w0,
                    "cpu_s": time.process_time() - c0,
                    "throughput": row["throughput_tok_s_gpu"]})
    return out


def _stats(x) -> str:
    return f"{np.min(x):.2f} / {np.median(x):.2f} / {np.max(x):.2f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", help="the other sieve build's checkout")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--allow-diff", action="store_true",
                    help="do not stop when the two builds' results differ")
    ap.add_argument("--points", choices=sorted(POINT_SETS), default="default",
                    help="which points (default: the module's POINTS; look: sieve-cp's look)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    points = POINT_SETS[args.points]
    if args.worker:
        print(json.dumps(worker(points)))
        return 0
    if not args.baseline or not (Path(args.baseline) / "sieve").is_dir():
        print(f"bench_run_ab: --baseline must name a sieve checkout, got {args.baseline!r}",
              file=sys.stderr)
        return 2
    here = Path(__file__).resolve().parent.parent
    builds = (("base", Path(args.baseline).resolve()), ("new", here))
    got: dict[str, list[list[dict]]] = {"base": [], "new": []}
    for i in range(args.pairs):
        for tag, root in (builds if i % 2 == 0 else builds[::-1]):
            env = dict(os.environ, PYTHONPATH=str(root))
            p = subprocess.run([sys.executable, __file__, "--worker", "--points", args.points],
                               capture_output=True,
                               text=True, env=env, check=True)
            got[tag].append(json.loads(p.stdout))
    print(f"# {platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}, {os.cpu_count()} CPUs; base {builds[0][1]}, new "
          f"{builds[1][1]}; {args.pairs} pairs, order alternating; seconds min / median / max")
    print("| point | base wall s | base CPU s | new wall s | new CPU s | new / base (median of "
          "pairs: wall, CPU) |")
    print("|---|---|---|---|---|---|")
    for j, (label, _) in enumerate(points):
        b = [run[j] for run in got["base"]]
        n = [run[j] for run in got["new"]]
        if not args.allow_diff and any(x["throughput"] != y["throughput"] for x, y in zip(b, n)):
            print(f"bench_run_ab: {label}: the builds' results differ "
                  f"({b[0]['throughput']} vs {n[0]['throughput']}); --allow-diff to time "
                  "them anyway", file=sys.stderr)
            return 1
        rw = np.median([y["wall_s"] / x["wall_s"] for x, y in zip(b, n)])
        rc = np.median([y["cpu_s"] / x["cpu_s"] for x, y in zip(b, n)])
        print(f"| {label} | {_stats([x['wall_s'] for x in b])} | "
              f"{_stats([x['cpu_s'] for x in b])} | {_stats([x['wall_s'] for x in n])} | "
              f"{_stats([x['cpu_s'] for x in n])} | {rw:.2f}, {rc:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
