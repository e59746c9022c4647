"""Two-batch overlap under layer sampling: a step simulated on K sampled layers and scaled by
n_layers / K (sieve.system.step, "Layer sampling") against the same step on every layer.

Under two-batch overlap a step's span holds a pipeline fill and drain (the first micro-batch's
first attention has nothing beside it, the second's last experts neither) that an all-layer
step pays once and a K-layer step pays once too, but scaled by n_layers / K; and the sampled
layers' neighbours (whose work overlaps theirs) are not their neighbours in the model. Both
change with the method, so the sampled comparison between methods can differ from the exact
one. One measured step after one warm-up, seed 0, as in ``sieve run --paper``; throughput per
GPU (tok/s), in brackets the same under a candidate scaling of the sampled step
(``_period_scaled_ns``: the layers not simulated at the mean period between consecutive
sampled layers, the fill and drain paid once), and per point the ratio of sieve-cp to the
other method named; the first point also in sequential mode, where nothing overlaps across
layers.

    python benchmarks/tbo_layer_sampling.py [--quick] [--sampled-only]   # ~30 min on 2 cores
"""

from __future__ import annotations

import argparse
import time

from sieve.system.run import RunConfig, simulate_run

#: (label, RunConfig fields, methods compared; the last is sieve-cp)
CASES = [
    ("qwen3.5-397b-a17b 8xb200 hh-rlhf B=128, duplex-logic-pim",
     dict(model="qwen3.5-397b-a17b", system="8xb200", batch=128,
          system_overrides=(("memory", "duplex-logic-pim"),)),
     ("allexp", "duplex", "sieve-cp")),
    ("qwen3.5-397b-a17b 8xb200 hh-rlhf B=256",
     dict(model="qwen3.5-397b-a17b", system="8xb200", batch=256), ("duplex", "sieve-cp")),
    ("qwen3-30b-a3b 1xb200 hh-rlhf colocated stress B=64",
     dict(model="qwen3-30b-a3b", system="1xb200", batch=64, colocated=True, n_prefill=8),
     ("sieve", "sieve-cp")),
    ("qwen3.5-397b-a17b 8xb200 math-500 B=256",
     dict(model="qwen3.5-397b-a17b", system="8xb200", batch=256, workload="math-500"),
     ("duplex", "sieve-cp")),
]


def _period_scaled_ns(st) -> float:
    """A candidate scaling, reported beside the simulator's: the sampled layers' span to the
    end of the last, plus the layers not simulated at the mean period between consecutive
    sampled layers' ends (so the micro-batches' fill and drain is paid once), plus what follows
    the layers (LM head). Equals the step on an all-layer run."""
    layers = sorted({t["layer"] for t in st.tasks if t.get("layer", -1) >= 0})
    ends = [max(t["end_ns"] for t in st.tasks if t.get("layer") == x) - st.start_ns
            for x in layers]
    k = len(ends)
    rest = st.n_layers - k
    per = (ends[-1] - ends[0]) / (k - 1) if k > 1 else ends[0]
    return ends[-1] + rest * per + (st.makespan_ns - st.layers_ns)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the first point only (two-batch overlap and sequential)")
    ap.add_argument("--sampled-only", action="store_true",
                    help="skip the all-layer runs (the long ones)")
    args = ap.parse_args(argv)
    print("| point | layers | " + " | ".join(["method: tok/s/GPU (period-scaled)"] * 3)
          + " | sieve-cp / other (period-scaled) |")
    print("|---|---|---|---|---|---|")
    cases = [(label, fields, methods, "tbo") for label, fields, methods in CASES]
    # the first point in sequential mode, for comparison
    cases.insert(1, (CASES[0][0] + ", sequential", CASES[0][1], CASES[0][2], "none"))
    for label, fields, methods, overlap in cases[:2] if args.quick else cases:
        for layers in (4, 8, 16, None):
            if layers is None and args.sampled_only:
                continue
            t0 = time.time()
            tput, period = {}, {}
            for m in methods:
                cfg = RunConfig(method=m, overlap=overlap, microbatches=2 if overlap == "tbo"
                                else 1, steps=1, warmup=1, layers=layers, **fields)
                res = simulate_run(cfg, keep_steps=True)
                tput[m] = res.row["throughput_tok_s_gpu"]
                st = res.steps[0]
                period[m] = tput[m] * st.step_ns / _period_scaled_ns(st)
            other = methods[-2]
            cells = [f"{m}: {tput[m]:.1f} ({period[m]:.1f})" for m in methods] + [""] * (
                3 - len(methods))
            print(f"| {label} | {layers or 'all'} | " + " | ".join(cells)
                  + f" | {tput['sieve-cp'] / tput[other]:.3f} "
                  + f"({period['sieve-cp'] / period[other]:.3f}) {other} |"
                  + f" <!-- {time.time() - t0:.0f} s -->", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
