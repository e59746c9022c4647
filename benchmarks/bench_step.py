"""Speed of the step simulator (``simulate_run``): what the shared HBM lane costs.

Since 2026-12-03 the HBM lane of each GPU is shared by concurrent weight loads (processor
sharing, docs/system.md §1): a load's end is a projection that later arrivals move, so a step's
list scheduling handles more events than with the former FIFO lane (one load at a time). This
script times the same runs both ways in one process, in interleaved pairs (shared, FIFO), and
reports per point the min / median / max of wall and CPU seconds per run and the median ratio
of the pairs (shared over FIFO). The FIFO lane is ``Schedule(shared=())`` patched into the step
for the FIFO runs; its results differ (it is the former model), only its speed is compared.
Every point runs once each way before timing (PIM program memos, cost tables).

    python benchmarks/bench_step.py [--pairs 5]   # ~10 min on 2 cores
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import time

import numpy as np

import sieve.system.step as step_mod
from sieve.system.dag import Schedule
from sieve.system.run import RunConfig, simulate_run

#: (label, RunConfig fields): the sequential mode, two-batch overlap (where loads of the two
#: micro-batches overlap) and a colocated batch under it.
POINTS = [
    ("qwen3-30b-a3b 1xb200 duplex B=64, sequential, 4 layers",
     dict(model="qwen3-30b-a3b", system="1xb200", method="duplex", batch=64)),
    ("qwen3-30b-a3b 1xb200 sieve-cp B=64, tbo, 8 layers",
     dict(model="qwen3-30b-a3b", system="1xb200", method="sieve-cp", batch=64, overlap="tbo")),
    ("qwen3-30b-a3b 1xb200 sieve B=64 colocated stress, tbo, 8 layers",
     dict(model="qwen3-30b-a3b", system="1xb200", method="sieve", batch=64, overlap="tbo",
          colocated=True, n_prefill=8)),
]


@contextlib.contextmanager
def _fifo_lane():
    """The step's schedules with no shared lane (the HBM lane FIFO, as before 2026-12-03)."""
    orig = step_mod.Schedule
    step_mod.Schedule = lambda shared=(): Schedule(shared=())
    try:
        yield
    finally:
        step_mod.Schedule = orig


def _timed(cfg: RunConfig, fifo: bool) -> tuple[float, float]:
    with _fifo_lane() if fifo else contextlib.nullcontext():
        w0, c0 = time.perf_counter(), time.process_time()
        simulate_run(cfg)
        return time.perf_counter() - w0, time.process_time() - c0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    args = ap.parse_args(argv)
    print(f"# {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, numpy {np.__version__}; {args.pairs} interleaved pairs "
          "per point, 1 measured step after 1 warm-up, seed 0")
    print("| point | shared lane: wall s (min / median / max) | CPU s | FIFO lane: wall s | "
          "CPU s | shared / FIFO (median of pairs: wall, CPU) |")
    print("|---|---|---|---|---|---|")
    for label, fields in POINTS:
        cfg = RunConfig(steps=1, warmup=1, **fields)
        _timed(cfg, False)
        _timed(cfg, True)
        t = {False: [], True: []}
        for _ in range(args.pairs):
            for fifo in (False, True):
                t[fifo].append(_timed(cfg, fifo))
        a, b = np.array(t[False]), np.array(t[True])

        def mmm(x):
            return f"{x.min():.2f} / {np.median(x):.2f} / {x.max():.2f}"

        r = np.median(a / b, axis=0)
        print(f"| {label} | {mmm(a[:, 0])} | {mmm(a[:, 1])} | {mmm(b[:, 0])} | "
              f"{mmm(b[:, 1])} | {r[0]:.2f}, {r[1]:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
