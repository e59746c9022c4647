"""Interleaved A/B of two schedulers' decision time on bench_scheduler.py's layer, in one process.

The seed's Sieve and sieve-cp (or any two registered methods) alternate decision by decision
on the same 256-expert layer (1-8 tokens each, seeded; the layer's timing as a step gives it),
under the seed's roofline at spec peaks and at the calibrated achievable rates (the runs'
default estimator). Prints min / median / p90 per method and the ratios of the second to the
first: on a noisy machine the same-run ratio is the number to quote (docs/performance.md).

    python benchmarks/bench_sched_ab.py [--pair sieve,sieve-cp] [--repeat 20000] [--experts 256]
                                        [--refill]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from sieve import hw
from sieve.hw.cost import Gemm
from sieve.hw.layer_ops import expert_shape
from sieve.model import get_model
from sieve.sched.estimator import Estimator
from sieve.sched.methods import get_method
from sieve.sched.partition import LayerLoad, LayerTiming


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", default="sieve,sieve-cp")
    ap.add_argument("--repeat", type=int, default=20000)
    ap.add_argument("--experts", type=int, default=256)
    ap.add_argument("--refill", action="store_true",
                    help="every estimator's table has observations (counts 1-8) and is updated "
                         "before every decision (untimed), as in a run where each layer's PIM "
                         "program feeds it: sieve-cp reads it with unobserved counts filled")
    args = ap.parse_args(argv)
    names = args.pair.split(",")
    shape = expert_shape(get_model("gpt-oss-120b"))
    counts = np.random.default_rng(0).integers(1, 9, args.experts)
    load = LayerLoad(counts, shape, pim_busy_ns=1e4, comm_ns=5e3,
                     gpu_fixed=(Gemm(64, 5120, 2880),),
                     timing=LayerTiming(hbm_ready_ns=3e3, dispatch_ns=2e4, pim_ready_ns=1e4,
                                        combine_ready_ns=2e4))
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()};"
          f" {args.repeat} interleaved decisions per method, {args.experts} experts")
    for ach in (False, True):
        cost = hw.RooflineCostModel("4xb200", achievable=ach)
        ms = [(n, get_method(n), Estimator(cost, shape, pim="ema")) for n in names]
        tables = []
        if args.refill:
            for _, _, e in ms:
                e.observe(np.arange(1, 9), 900.0 * np.arange(1, 9) + 3000.0)
                tables.append(e.table("tp"))
        t = {n: np.empty(args.repeat) for n in names}
        for _ in range(200):  # warm caches
            for _, m, e in ms:
                m(load, e)
        clock = time.perf_counter_ns
        for i in range(args.repeat):
            for tb in tables:  # a new table state (not timed)
                tb.updates += 1
            for n, m, e in ms:
                a = clock()
                m(load, e)
                t[n][i] = clock() - a
        label = "achievable" if ach else "spec peaks"
        for n in names:
            x = t[n] / 1e3
            print(f"{label:<10} {n:<12} min {x.min():7.2f}  median {np.median(x):7.2f}  "
                  f"p90 {np.percentile(x, 90):7.2f} us")
        a, b = (t[n] for n in names)
        print(f"{label:<10} {names[1]} / {names[0]}: min {b.min() / a.min():.2f}x, median "
              f"{np.median(b) / np.median(a):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
