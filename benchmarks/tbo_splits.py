"""Each micro-batch's split, layer by layer, under two-batch overlap: where sieve-cp's drifts.

Runs one point (1 warm-up + 1 measured step, 8 sampled layers unless ``--layers``; every
layer with ``--layers 0``) for each method and prints, for the measured step on GPU 0, every
decision in the order it was made: layer, micro-batch, experts on the GPU of those activated,
and whether the other micro-batch had decided that layer already. Then the throughput per GPU
of each method. The drift docs/system.md §5 describes shows as one micro-batch's GPU experts
growing along the step while the other's shrink (Duplex's stay level).

``--window A:B`` (simulated layers A < B) adds the steady state between the first-deciding
micro-batch's decisions of layers A and B: the period per layer and, per layer, the time each
lane of GPU 0 and the inter-GPU link was busy (the union of its tasks' spans: a shared HBM
lane counts once while several loads run) and the time of each kind of task. A lane busy for
less than the period waited on a dependency (docs/system.md §5, *Where the period goes*).

    PYTHONPATH=. python benchmarks/tbo_splits.py --model qwen3-30b-a3b --system 1xb200 \\
        --batch 256 [--workload hh-rlhf] [--colocated] [--methods duplex,sieve-cp]
    PYTHONPATH=. python benchmarks/tbo_splits.py --layers 0 --window 10:40 --quiet
"""

from __future__ import annotations

import argparse

from sieve.system.run import RunConfig, simulate_run


def splits(cfg: RunConfig) -> tuple[float, list[dict], object]:
    """(throughput per GPU, the measured step's decisions on GPU 0 in decision order, the
    measured step)."""
    r = simulate_run(cfg, keep_steps=True)
    parts = sorted((p for p in r.steps[-1].partitions if p["gpu"] == 0),
                   key=lambda p: p["decided_ns"])
    return r.row["throughput_tok_s_gpu"], parts, r.steps[-1]


def steady_state(step, parts: list[dict], a: int, b: int) -> dict:
    """Per layer between the first-deciding micro-batch's decisions of layers ``a`` and ``b``
    on GPU 0: the period, each lane kind's busy time (union of spans; GPU 0's lanes and the
    inter-GPU link, whose collectives hold every GPU's link lane), each task name's time
    (its spans clipped to the window, summed) and each micro-batch's mean GPU experts over
    the layers ``a <= layer < b``, the first to decide first."""
    first = parts[0]["mb"]
    at = {p["layer"]: p["decided_ns"] for p in parts if p["mb"] == first}
    if a not in at or b not in at or b <= a:
        raise SystemExit(f"tbo_splits: --window {a}:{b}: layers not simulated (simulated: "
                         f"{', '.join(map(str, sorted(at)))})")
    w0, w1 = at[a], at[b]
    n = sum(1 for x in at if a <= x < b)
    tasks = [t for t in step.tasks if (t.get("gpu") == 0 or t.get("kind") == "link")
             and t["end_ns"] > w0 and t["start_ns"] < w1]
    lanes: dict[str, float] = {}
    for kind in sorted({t["kind"] for t in tasks}):
        spans = sorted((max(t["start_ns"], w0), min(t["end_ns"], w1)) for t in tasks
                       if t["kind"] == kind)
        busy, cur = 0.0, None
        for s0, s1 in spans:
            if cur is None or s0 > cur[1]:
                busy += 0.0 if cur is None else cur[1] - cur[0]
                cur = [s0, s1]
            else:
                cur[1] = max(cur[1], s1)
        busy += 0.0 if cur is None else cur[1] - cur[0]
        lanes[kind] = busy / n
    names: dict[str, float] = {}
    for t in tasks:
        names[t["name"]] = names.get(t["name"], 0.0) + (min(t["end_ns"], w1)
                                                        - max(t["start_ns"], w0)) / n
    gpu_experts = {}
    for m in (first, 1 - first):
        mine = [p["experts_gpu"] for p in parts if p["mb"] == m and a <= p["layer"] < b]
        gpu_experts[m] = sum(mine) / max(len(mine), 1)
    return {"period_ns": (w1 - w0) / n, "lanes": lanes, "names": names,
            "gpu_experts": gpu_experts}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen3-30b-a3b")
    ap.add_argument("--system", default="1xb200")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--workload", default="hh-rlhf")
    ap.add_argument("--colocated", action="store_true")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--methods", default="duplex,sieve-cp")
    ap.add_argument("--window", default=None, help="A:B, the steady state between layers")
    ap.add_argument("--quiet", action="store_true", help="no per-decision table")
    args = ap.parse_args(argv)
    for method in args.methods.split(","):
        cfg = RunConfig(model=args.model, system=args.system, method=method, batch=args.batch,
                        workload=args.workload, colocated=args.colocated, steps=1, warmup=1,
                        layers=args.layers or None, overlap="tbo")
        tput, parts, step = splits(cfg)
        print(f"## {method}: {tput:.1f} tok/s/GPU")
        if not args.quiet:
            print("| layer | micro-batch | GPU experts / activated | other had decided |")
            print("|---|---|---|---|")
            seen: set[tuple[int, int]] = set()
            for p in parts:
                other = (p["layer"], 1 - p["mb"]) in seen
                seen.add((p["layer"], p["mb"]))
                print(f"| {p['layer']} | {p['mb']} | {p['experts_gpu']} / "
                      f"{p['experts_active']} | {'yes' if other else 'no'} |")
        if args.window:
            a, b = (int(x) for x in args.window.split(":"))
            ss = steady_state(step, parts, a, b)
            order = ("first", "second")
            print(f"layers {a}-{b}: period {ss['period_ns'] / 1e3:.1f} us/layer; GPU experts, "
                  "mean: " + ", ".join(f"micro-batch {m} (decides {order[i]}) {v:.1f}"
                                       for i, (m, v) in enumerate(ss["gpu_experts"].items())))
            print("  lanes busy [us/layer]: " + ", ".join(
                f"{k} {v / 1e3:.1f}" for k, v in ss["lanes"].items()))
            top = sorted(ss["names"].items(), key=lambda kv: -kv[1])[:8]
            print("  tasks [us/layer]: " + ", ".join(f"{k} {v / 1e3:.1f}" for k, v in top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
