"""Each micro-batch's split, layer by layer, under two-batch overlap: where sieve-cp's drifts.

Runs one point (1 warm-up + 1 measured step, 8 sampled layers unless ``--layers``) for each
method and prints, for the measured step on GPU 0, every decision in the order it was made:
layer, micro-batch, experts on the GPU of those activated, and whether the other micro-batch
had decided that layer already. Then the throughput per GPU of each method. The drift
docs/system.md §5 describes shows as one micro-batch's GPU experts growing along the step
while the other's shrink (Duplex's stay level).

    PYTHONPATH=. python benchmarks/tbo_splits.py --model qwen3-30b-a3b --system 1xb200 \\
        --batch 256 [--workload hh-rlhf] [--colocated] [--methods duplex,sieve-cp]
"""

from __future__ import annotations

import argparse

from sieve.system.run import RunConfig, simulate_run


def splits(cfg: RunConfig) -> tuple[float, list[dict]]:
    """(throughput per GPU, the measured step's decisions on GPU 0 in decision order)."""
    r = simulate_run(cfg, keep_steps=True)
    parts = sorted((p for p in r.steps[-1].partitions if p["gpu"] == 0),
                   key=lambda p: p["decided_ns"])
    return r.row["throughput_tok_s_gpu"], parts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen3-30b-a3b")
    ap.add_argument("--system", default="1xb200")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--workload", default="hh-rlhf")
    ap.add_argument("--colocated", action="store_true")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--methods", default="duplex,sieve-cp")
    args = ap.parse_args(argv)
    for method in args.methods.split(","):
        cfg = RunConfig(model=args.model, system=args.system, method=method, batch=args.batch,
                        workload=args.workload, colocated=args.colocated, steps=1, warmup=1,
                        layers=args.layers, overlap="tbo")
        tput, parts = splits(cfg)
        print(f"## {method}: {tput:.1f} tok/s/GPU")
        print("| layer | micro-batch | GPU experts / activated | other had decided |")
        print("|---|---|---|---|")
        seen: set[tuple[int, int]] = set()
        for p in parts:
            other = (p["layer"], 1 - p["mb"]) in seen
            seen.add((p["layer"], p["mb"]))
            print(f"| {p['layer']} | {p['mb']} | {p['experts_gpu']} / {p['experts_active']} | "
                  f"{'yes' if other else 'no'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
