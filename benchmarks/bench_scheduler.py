"""Speed of one scheduling decision, called from Python (issue 9: Sieve <= 10 us for 256
activated experts, <= 25 us for 512; issue 15: sieve-cp <= 10 us for 256; the seed reports
~20 us on a B200 GPU).

One line per (method, activated experts): the median and the 10th/90th percentile of single
decisions in microseconds, and the ratio to ``noexp`` (a method that only builds its
partition and estimates: the framework's own cost) measured in the same run. Every expert is
activated with 1-8 tokens (seeded), PIM holds 10 us of attention and the layer 5 us of
communication, under the runs' default estimator (the seed's roofline at the calibrated
achievable rates, so sieve-cp prices its GPU experts with the calibration's p-norm and tiles)
for gpt-oss-120b's expert shape on 4xb200 (the shape does not change the work of the
algorithm); sieve-cp also gets the layer's timing
(HBM free after 3 us, the dispatch after 20 us, PIM after 10 us), as a step gives it.
``sieve-cp*`` is sieve-cp with a table that has observations and was updated before every
decision (so nothing cached from the table's last state helps it), as in a run where every
layer's PIM program feeds the table.

    python benchmarks/bench_scheduler.py [--repeat 2000] [--experts 64,128,256,512]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from sieve import hw
from sieve.hw.cost import ExpertShape, Gemm
from sieve.sched.estimator import Estimator
from sieve.sched.methods import SCHEDULERS
from sieve.sched.partition import LayerLoad, LayerTiming


def _median_us(fn, repeat: int, setup=None) -> tuple[float, float, float]:
    for _ in range(50):  # warm caches (estimator tables, GPU affine form)
        fn()
    t = np.empty(repeat)
    clock = time.perf_counter_ns
    for i in range(repeat):
        if setup is not None:  # not timed
            setup()
        t0 = clock()
        fn()
        t[i] = clock() - t0
    t /= 1e3
    return float(np.median(t)), float(np.percentile(t, 10)), float(np.percentile(t, 90))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2000)
    ap.add_argument("--experts", default="64,128,256,512")
    args = ap.parse_args(argv)
    shape = ExpertShape(2880, 2880)
    cost = hw.RooflineCostModel("4xb200", achievable=True)  # StepOptions.estimator's default
    rng = np.random.default_rng(0)
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}"
          f", numpy {np.__version__}; median of {args.repeat} single decisions")
    print(f"{'method':<15} {'experts':>7} {'median_us':>10} {'p10_us':>8} {'p90_us':>8} "
          f"{'x_noexp':>8}")
    for n in (int(x) for x in args.experts.split(",")):
        counts = rng.integers(1, 9, n)
        fixed = (Gemm(64, 5120, 2880),)
        load = LayerLoad(counts, shape, pim_busy_ns=1e4, comm_ns=5e3, gpu_fixed=fixed,
                         timing=LayerTiming(hbm_ready_ns=3e3, dispatch_ns=2e4,
                                            pim_ready_ns=1e4, combine_ready_ns=2e4))
        base = None
        for name in ("noexp", "sieve", "sieve-cp", "sieve-cp*", "sieve-noattn",
                     "sieve-roofline", "allexp", "duplex", "pimoe"):
            m = SCHEDULERS[name.rstrip("*")]
            est = Estimator(cost, shape, pim=m.pim_source or "ema")
            setup = None
            if name.endswith("*"):  # as in a run: a table with observations, updated before
                table = est.table("tp")  # every decision (sieve-cp re-reads it: filled())
                est.observe(np.arange(1, 9), 900.0 * np.arange(1, 9) + 3000.0)

                def setup(table=table):
                    table.updates += 1
            med, p10, p90 = _median_us(lambda m=m, est=est, ld=load: m(ld, est), args.repeat,
                                       setup)
            base = base or med
            print(f"{name:<15} {n:>7} {med:>10.2f} {p10:>8.2f} {p90:>8.2f} {med / base:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
