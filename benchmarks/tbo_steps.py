"""The two-batch-overlap points where sieve-cp was below 0.99x the best other method on every
layer, over several measured steps instead of one.

`sieve run --paper` and docs/validation.md's tables measure one step after one warm-up step. The
15 points below 0.99x on every layer (docs/validation.md, *The points below on every layer*:
sieve-cp before 2026-12-07, now ``sieve-cp-pimskip``; kept as the list so that the runs before
and after sieve-cp's skips could run all on the GPU compare point by point) are run here again
on every layer with one warm-up and ``--steps`` measured steps (step ``s`` draws its own batch
and routing from ``(seed, s)``, so the first measured step is the one-step tables' step), for
sieve-cp and the method that was best there. Printed per point: the ratio of sieve-cp's
throughput to that method's in each measured step, over all of them (each method's tokens over
its time), and how many of sieve-cp's decisions each step skipped (``sched/amortize.py``: a rule
for a steady state of many steps, which one measured step shows only in part).

    python benchmarks/tbo_steps.py --steps 5 --jobs 2 [--out FILE.jsonl]   # ~45 min, 2 cores

``--out`` appends one JSON line per run (a resumable record: runs already in it are not run
again). ``--one-gpu`` runs only the one-GPU points (Qwen3-30B-A3B on one B200): for a change of
sieve-cp that acts only where no other GPU's decision enters its look (``skip_gpu``,
docs/schedulers.md), under which the two eight-GPU points cannot move. ``--multi-gpu`` runs only
the two eight-GPU points: for a change that acts only under expert parallelism (the skip rule's
pooled load gate, docs/schedulers.md, *The load gate under expert parallelism*).
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

Q3 = ("qwen3-30b-a3b", "1xb200")
Q35 = ("qwen3.5-397b-a17b", "8xb200")
#: (PIM preset, (model, system), dataset, B, the best other method on every layer with one
#: measured step): the 15 points of docs/validation.md, *The points below on every layer*
POINTS = [
    ("attacc-hbm3-pim", Q3, "math-500", 2, "allexp"),
    ("attacc-hbm3-pim", Q3, "math-500", 8, "duplex"),
    ("attacc-hbm3-pim", Q3, "math-500", 128, "noexp"),
    ("attacc-hbm3-pim", Q3, "math-500", 256, "noexp"),
    ("b200-hbm3e-pim", Q3, "math-500", 64, "noexp"),
    ("b200-hbm3e-pim", Q3, "math-500", 128, "noexp"),
    ("b200-hbm3e-pim", Q3, "math-500", 256, "noexp"),
    ("neupims-hbm2-pim", Q3, "math-500", 16, "allexp"),
    ("neupims-hbm2-pim", Q3, "math-500", 128, "noexp"),
    ("neupims-hbm2-pim", Q3, "math-500", 256, "noexp"),
    ("neupims-hbm2-pim", Q35, "math-500", 16, "allexp"),
    ("neupims-hbm2-pim", Q35, "hh-rlhf", 16, "allexp"),
    ("b200-logic-pim", Q3, "math-500", 8, "allexp"),
    ("b200-logic-pim", Q3, "hh-rlhf", 8, "allexp"),
    ("duplex-logic-pim", Q3, "hh-rlhf", 8, "sieve"),
]


def _key(preset: str, model: str, workload: str, batch: int, method: str) -> tuple:
    return (preset, model, workload, batch, method)


def run_one(job: tuple) -> dict:
    """One run, two-batch overlap, 1 warm-up + ``steps`` measured steps; ``job`` = (preset,
    (model, system), workload, batch, method, steps, layers), layers None: every layer."""
    preset, (model, system), workload, batch, method, steps, layers = job
    from sieve.system.run import RunConfig, simulate_run

    cfg = RunConfig(model=model, system=system, batch=batch, workload=workload, method=method,
                    overlap="tbo", layers=layers, steps=steps, warmup=1,
                    system_overrides=(("memory", preset),))
    t0 = time.process_time()
    res = simulate_run(cfg, keep_steps=True)
    n = res.row["n_gpus"]
    return {"preset": preset, "model": model, "system": system, "workload": workload,
            "batch": batch, "method": method, "steps": steps, "layers": layers,
            "throughput_tok_s_gpu": res.row["throughput_tok_s_gpu"],
            "per_step_tok_s_gpu": [s.decode_tokens / s.step_ns * 1e9 / n for s in res.steps],
            "skipped": [sum(bool(p.get("decision_skipped")) for p in s.partitions)
                        for s in res.steps],
            "decisions": [len(s.partitions) for s in res.steps],
            "cpu_s": time.process_time() - t0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=5, help="measured steps (default 5)")
    ap.add_argument("--jobs", type=int, default=1, help="processes")
    ap.add_argument("--out", type=Path, help="JSON lines record (resumable)")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--one-gpu", action="store_true", help="only the one-GPU points")
    which.add_argument("--multi-gpu", action="store_true", help="only the eight-GPU points")
    args = ap.parse_args(argv)
    points = [p for p in POINTS if not (args.one_gpu and p[1] != Q3)
              and not (args.multi_gpu and p[1] == Q3)]
    if args.steps < 1 or args.jobs < 1:
        ap.error("--steps and --jobs must be at least 1")
    done: dict[tuple, dict] = {}
    if args.out is not None and args.out.exists():
        for line in args.out.read_text().splitlines():
            r = json.loads(line)
            if r["steps"] == args.steps and r.get("layers") is None:
                done[_key(r["preset"], r["model"], r["workload"], r["batch"], r["method"])] = r
    jobs = [(p, ms, wl, b, m, args.steps, None) for p, ms, wl, b, other in points
            for m in ("sieve-cp", other) if _key(p, ms[0], wl, b, m) not in done]
    # the long runs first, so that two workers end together
    jobs.sort(key=lambda j: -j[3] * (8 if j[1] == Q35 else 1))
    with ProcessPoolExecutor(args.jobs) as ex:
        for r in ex.map(run_one, jobs):
            done[_key(r["preset"], r["model"], r["workload"], r["batch"], r["method"])] = r
            if args.out is not None:
                with open(args.out, "a") as f:
                    f.write(json.dumps(r) + "\n")
    print(f"Two-batch overlap, every layer, 1 warm-up + {args.steps} measured steps: sieve-cp "
          "over the best other method of the one-step run, per measured step and over all\n")
    print("| preset | point | other | per step | all steps | sieve-cp's decisions skipped, "
          "per step |")
    print("|---|---|---|---|---|---|")
    above = 0
    for preset, (model, system), wl, b, other in points:
        cp = done[_key(preset, model, wl, b, "sieve-cp")]
        ot = done[_key(preset, model, wl, b, other)]
        per = [a / o for a, o in zip(cp["per_step_tok_s_gpu"], ot["per_step_tok_s_gpu"])]
        whole = cp["throughput_tok_s_gpu"] / ot["throughput_tok_s_gpu"]
        above += whole >= 0.99
        print(f"| {preset} | {model} {system} {wl} B={b} | {other} | "
              f"{' '.join(f'{x:.3f}' for x in per)} | {whole:.3f} | "
              f"{' '.join(str(s) for s in cp['skipped'])} of {cp['decisions'][0]} |")
    print(f"\n{len(points)} points; at 0.99x or above over all steps: {above}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
