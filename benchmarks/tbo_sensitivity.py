"""How far a two-batch-overlap point moves when an input moves a little (docs/validation.md,
"How far a point moves").

``--perturb collectives`` (default): every two-batch-overlap point of ``sieve run --paper`` on
the default preset with more than one GPU (36 of the 66 of validate_methods.py's ``sieve-cp``
section: gpt-oss-120b on four B200s and Qwen3.5-397B-A17B on eight; one GPU runs no
collective; 8 sampled layers, 1 warm-up + 1 measured step, seed 0) is run for each method
twice: as is, and with every collective's time (all-gather, dispatch, combine, all-reduce:
``_Builder.link``) multiplied by ``1 + eps``. ``--perturb decisions``: every point (one GPU
included) twice, as is and with every dynamic method's decision time (the seed's 20 us per 256
activated experts, ``step.DEFAULT_SCHEDULER_NS``) multiplied by ``1 + eps``; the static methods
(NoExp, AllExp) decide nothing and do not move. Without the list schedule's order changes a
throughput would move by at most about ``eps``; the table gives, per method, the median, 90th
percentile and largest ``|change|`` over the points, how many moved by more than 1 %, and the
point that moved most. ``--pim PRESET`` runs the points on another PIM preset.

The runs go through a pool of forked processes of this script (the perturbation is set in
the parent before the fork, so every worker has it); nothing in sieve is changed.

    PYTHONPATH=. python benchmarks/tbo_sensitivity.py [--eps 0.001] [--methods sieve-cp,duplex]
        [--models gpt-oss-120b] [--perturb collectives|decisions] [--pim PRESET] [--jobs 2]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from dataclasses import replace

import numpy as np

METHODS = ("noexp", "allexp", "pimoe", "duplex", "sieve", "sieve-cp")


def _configs(methods, models, multi_only=True, pim=None):
    from sieve.experiments.points import paper_points
    from sieve.hw.system import get_system
    from sieve.system.step import sampled_layers_default

    pts = paper_points(list(methods), steps=1, warmup=1,
                       layers=sampled_layers_default(1, "tbo"))
    over = {"system_overrides": (("memory", pim),)} if pim else {}
    cfgs = [replace(p.config, overlap="tbo", **over) for p in pts]
    # (collectives: one GPU runs none, the perturbation would not touch it)
    return [c for c in cfgs
            if (get_system(c.system).n_gpus > 1 or not multi_only)
            and (not models or c.model in models)]


def _throughput(cfg) -> float:
    from sieve.system.run import simulate_run

    return simulate_run(cfg).row["throughput_tok_s_gpu"]


def _run(cfgs, eps: float, jobs: int, perturb: str = "collectives") -> list[float]:
    import sieve.system.step as step

    orig = step._Builder.link
    orig_ns = step.DEFAULT_SCHEDULER_NS
    if eps and perturb == "collectives":
        def link(self, name, dur, *a, **k):
            return orig(self, name, dur * (1.0 + eps), *a, **k)

        step._Builder.link = link
    elif eps:
        step.DEFAULT_SCHEDULER_NS = orig_ns * (1.0 + eps)
    try:
        with mp.get_context("fork").Pool(jobs) as pool:
            return pool.map(_throughput, cfgs, chunksize=1)
    finally:
        step._Builder.link = orig
        step.DEFAULT_SCHEDULER_NS = orig_ns


def _key(c) -> str:
    coloc = f" colocated n_prefill={c.n_prefill}" if c.colocated else ""
    return f"{c.model} {c.system} {c.workload}{coloc} B={c.batch}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eps", type=float, default=0.001)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--models", default="", help="comma-separated; default every model")
    ap.add_argument("--perturb", choices=("collectives", "decisions"), default="collectives")
    ap.add_argument("--pim", default=None, help="PIM preset (default: the system's own)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    methods = args.methods.split(",")
    models = [m for m in args.models.split(",") if m]
    cfgs = _configs(methods, models, args.perturb == "collectives", args.pim)
    if not cfgs:
        print("tbo_sensitivity: no point matches", file=sys.stderr)
        return 2
    t = time.time()
    base = _run(cfgs, 0.0, args.jobs)
    pert = _run(cfgs, args.eps, args.jobs, args.perturb)
    print(f"{len(cfgs)} runs twice, {args.perturb} x (1 + {args.eps}), "
          f"PIM {args.pim or 'default'}, {time.time() - t:.0f} s\n")
    print("| method | points | median abs change | 90th percentile | largest | moved > 1 % "
          "| moved most |")
    print("|---|---|---|---|---|---|---|")
    for m in methods:
        rows = [(100.0 * (p / b - 1.0), c) for c, b, p in zip(cfgs, base, pert)
                if c.method == m]
        d = np.abs([x for x, _ in rows])
        worst = max(rows, key=lambda x: abs(x[0]))
        print(f"| {m} | {d.size} | {np.median(d):.3f} % | {np.percentile(d, 90):.2f} % "
              f"| {d.max():.2f} % | {(d > 1.0).sum()} | {_key(worst[1])}: {worst[0]:+.2f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
