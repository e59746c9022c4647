"""What sieve-cp's look ahead costs under two-batch overlap (docs/schedulers.md).

Under two-batch overlap sieve-cp rates its scan's split and a few other prefixes of the same
order by continuing the step's list schedule to both micro-batches' next decisions
(:meth:`sieve.system.dag.Schedule.lookahead`). This script runs the same points with
``sieve-cp`` and ``sieve-cp-nolook`` (the scan alone) in interleaved pairs in one process and
reports per method the min / median / max CPU seconds per run, the scheduling stage's seconds,
and from the stage counters the decisions, looks and task placements the looks made (per look
and per decision). The simulated decision time is the seed's for both (the look is not
charged: docs/schedulers.md says why and what that means).

    python benchmarks/bench_look.py [--pairs 3]   # ~3 min on 2 cores

``--methods a,b,c``: other methods in the same rounds (e.g. ``sieve-cp-look2``, whose look
watches two layers on and rates each saving by a second, one-layer look).
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from sieve.stages import collect
from sieve.system.run import RunConfig, simulate_run

#: (label, RunConfig fields): one GPU (Qwen3-30B-A3B) and eight in EP (Qwen3.5-397B-A17B),
#: the validation's setting (8 sampled layers, 1 warm-up and 1 measured step).
POINTS = [
    ("qwen3-30b-a3b 1xb200 MATH-500 B=16",
     dict(model="qwen3-30b-a3b", system="1xb200", batch=16, workload="math-500")),
    ("qwen3.5-397b-a17b 8xb200 HH-RLHF B=256",
     dict(model="qwen3.5-397b-a17b", system="8xb200", batch=256, workload="hh-rlhf")),
]
METHODS = ("sieve-cp-nolook", "sieve-cp")


def _once(method: str, kw: dict) -> dict:
    cfg = RunConfig(method=method, overlap="tbo", layers=8, steps=1, warmup=1, **kw)
    t = time.process_time()
    with collect() as st:
        row = simulate_run(cfg).row
    return {"cpu": time.process_time() - t, "sched": st.seconds.get("scheduling", 0.0),
            "decisions": st.calls.get("scheduling", 0), "looks": st.counts.get("looks", 0),
            "placed": st.counts.get("look_placements", 0),
            "tok": row["throughput_tok_s_gpu"]}


def _mmm(xs) -> str:
    return " / ".join(f"{v:.2f}" for v in (min(xs), float(np.median(xs)), max(xs)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--methods", default=",".join(METHODS),
                    help=f"comma-separated (default {','.join(METHODS)})")
    args = ap.parse_args(argv)
    methods = tuple(args.methods.split(","))
    print(f"Machine: {platform.machine()}, Python {platform.python_version()}; "
          f"{args.pairs} interleaved rounds per point.\n")
    print("| point | method | CPU s per run (min / median / max) | scheduling s (median) "
          "| decisions | looks | placements per look | placements per decision | tok/s/GPU |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, kw in POINTS:
        runs = {m: [] for m in methods}
        for i in range(args.pairs):
            for m in (methods if i % 2 == 0 else methods[::-1]):
                runs[m].append(_once(m, kw))
        for m in methods:
            r = runs[m]
            last = r[-1]
            per_look = last["placed"] / last["looks"] if last["looks"] else 0.0
            per_dec = last["placed"] / last["decisions"] if last["decisions"] else 0.0
            print(f"| {label} | {m} | {_mmm([x['cpu'] for x in r])} | "
                  f"{np.median([x['sched'] for x in r]):.2f} | {last['decisions']} | "
                  f"{int(last['looks'])} | {per_look:.0f} | {per_dec:.0f} | "
                  f"{last['tok']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
