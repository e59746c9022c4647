"""Layer sampling against every layer: a step simulated on K sampled layers and scaled to the
model (sieve.system.step, ``_sampled_layers`` and ``_scaled_layers_ns``) against the same step
on every layer, under two-batch overlap and in the sequential mode.

The sample keeps the model's first and last layers and gives every layer class (token mixer, MoE
or dense FFN) its share of the sample, at least one layer; each class's sampled layers stand for
its layers in the model. Under two-batch overlap a step's span holds a pipeline fill (in the
first layer) and drain (in the last) paid once, so the layers not simulated are added at their
class's mean time between the first and last sampled layer; in the sequential mode each sampled
layer's time is scaled by its class's layers over its samples. One measured step after one
warm-up, seed 0, as in ``sieve run --paper``; throughput per GPU (tok/s), in brackets the same
sampled step under the scaling sieve used before (the time to the last sampled layer times
``n_layers / K``, whatever the classes; ``_uniform_scaled_ns``), and per point the ratio of
sieve-cp to the other method named.

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
#: points also run in the sequential mode (indices into CASES)
SEQUENTIAL = (0, 3)


def _uniform_scaled_ns(st) -> float:
    """The scaling sieve used before: the time to the last sampled layer's end times
    ``n_layers / K``, plus what follows the layers (LM head)."""
    return st.layers_ns * st.n_layers / st.layers_simulated + (st.makespan_ns - st.layers_ns)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="the first point only (two-batch overlap and sequential)")
    ap.add_argument("--sampled-only", action="store_true",
                    help="skip the all-layer runs (the long ones)")
    args = ap.parse_args(argv)
    print("| point | layers | " + " | ".join(["method: tok/s/GPU (former scaling)"] * 3)
          + " | sieve-cp / other (former scaling) |")
    print("|---|---|---|---|---|---|")
    cases = [(label, fields, methods, "tbo") for label, fields, methods in CASES]
    cases += [(CASES[i][0] + ", sequential", CASES[i][1], CASES[i][2], "none")
              for i in SEQUENTIAL]
    for label, fields, methods, overlap in ([cases[0], cases[len(CASES)]] if args.quick
                                            else cases):
        for layers in (4, 8, 16, None):
            if layers is None and args.sampled_only:
                continue
            t0 = time.time()
            tput, former = {}, {}
            for m in methods:
                cfg = RunConfig(method=m, overlap=overlap, microbatches=2 if overlap == "tbo"
                                else 1, steps=1, warmup=1, layers=layers, **fields)
                res = simulate_run(cfg, keep_steps=True)
                tput[m] = res.row["throughput_tok_s_gpu"]
                st = res.steps[0]
                former[m] = tput[m] * st.step_ns / _uniform_scaled_ns(st)
            other = methods[-2]
            cells = [f"{m}: {tput[m]:.1f} ({former[m]:.1f})" for m in methods] + [""] * (
                3 - len(methods))
            print(f"| {label} | {layers or 'all'} | " + " | ".join(cells)
                  + f" | {tput['sieve-cp'] / tput[other]:.3f} "
                  + f"({former['sieve-cp'] / former[other]:.3f}) {other} |"
                  + f" <!-- {time.time() - t0:.0f} s -->", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
