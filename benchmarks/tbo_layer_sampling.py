"""Layer sampling against every layer: a step simulated on K sampled layers and scaled to the
model (sieve.system.step, ``_sampled_layers`` and ``_scaled_layers_ns``) against the same step
on every layer, under two-batch overlap and in the sequential mode.

The sample keeps the model's first and last layers and gives every layer class (token mixer, MoE
or dense FFN) its share of the sample, at least one layer. Under two-batch overlap a layer of
one micro-batch runs beside the next or previous layer of the other, so the sample also keeps
each sampled layer's neighbours' classes, and the layers not simulated are added at the mean
time of the sampled layers between the first and the last with their class and neighbours'
classes (the pipeline fill in the first layer and the drain in the last are paid once); in the
sequential mode each sampled layer's time is scaled by its class's layers over its samples.
One measured step after one warm-up, seed 0, as in ``sieve run --paper``; throughput per GPU
(tok/s) and per point the ratio of sieve-cp to the other method named. Under two-batch overlap,
in brackets: the same step on the sequential mode's sample, which need not keep the neighbours
(the two-batch-overlap sample before 2026-12-03), from the same run of this script.

    python benchmarks/tbo_layer_sampling.py [--quick] [--sampled-only]   # ~35 min on 2 cores
"""

from __future__ import annotations

import argparse
import contextlib
import time

import sieve.system.run as run_mod
import sieve.system.step as step_mod
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
    ("gpt-oss-20b 1xb200 math-500 B=32",
     dict(model="gpt-oss-20b", system="1xb200", batch=32, workload="math-500"),
     ("duplex", "sieve-cp")),
]
#: points also run in the sequential mode (indices into CASES)
SEQUENTIAL = (0, 3)


@contextlib.contextmanager
def _sequential_sample():
    """Two-batch-overlap steps sample the layers as the sequential mode does (neighbours not
    kept: the sample before 2026-12-03); the scaling is the same."""
    orig = step_mod._sampled_layers

    def plain(model, k, allowed=None, neighbours=False):
        return orig(model, k, allowed)

    step_mod._sampled_layers = run_mod._sampled_layers = plain
    try:
        yield
    finally:
        step_mod._sampled_layers = run_mod._sampled_layers = orig


def _sampled(model: str, k: int | None, neighbours: bool) -> list[int] | None:
    from sieve.model import get_model
    return None if k is None else step_mod._sampled_layers(get_model(model), k,
                                                           neighbours=neighbours)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="the first point only (two-batch overlap and sequential)")
    ap.add_argument("--sampled-only", action="store_true",
                    help="skip the all-layer runs (the long ones)")
    args = ap.parse_args(argv)
    print("| point | layers (simulated) | "
          + " | ".join(["method: tok/s/GPU (sequential-mode sample)"] * 3)
          + " | sieve-cp / other (sequential-mode sample) |")
    print("|---|---|---|---|---|---|")
    cases = [(label, fields, methods, "tbo") for label, fields, methods in CASES]
    cases += [(CASES[i][0] + ", sequential", CASES[i][1], CASES[i][2], "none")
              for i in SEQUENTIAL]
    for label, fields, methods, overlap in ([cases[0], cases[len(CASES)]] if args.quick
                                            else cases):
        tbo = overlap == "tbo"
        for layers in (4, 8, 16, None):
            if layers is None and args.sampled_only:
                continue
            t0 = time.time()
            picks = _sampled(fields["model"], layers, tbo)
            plain = _sampled(fields["model"], layers, False)
            both = tbo and layers is not None and picks != plain
            tput, former = {}, {}
            for m in methods:
                cfg = RunConfig(method=m, overlap=overlap, microbatches=2 if tbo else 1,
                                steps=1, warmup=1, layers=layers, **fields)
                tput[m] = simulate_run(cfg).row["throughput_tok_s_gpu"]
                if both:
                    with _sequential_sample():
                        former[m] = simulate_run(cfg).row["throughput_tok_s_gpu"]
            other = methods[-2]
            cells = [f"{m} {tput[m]:.1f}" + (f" ({former[m]:.1f})" if both else "")
                     for m in methods] + [""] * (3 - len(methods))
            ratio = f"{tput['sieve-cp'] / tput[other]:.3f}" + (
                f" ({former['sieve-cp'] / former[other]:.3f})" if both else "")
            shown = "all" if layers is None else (
                f"{layers}" + (f" ({len(picks)})" if len(picks) != layers else ""))
            print(f"| {label} | {shown} | " + " | ".join(cells) + f" | {ratio} {other} |"
                  + f" <!-- {time.time() - t0:.0f} s -->", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
