"""How much a point's throughput moves with the phase of the PIM devices' refreshes.

A PIM device refreshes every pseudo-channel once per tREFI on its own clock (all-bank, on
schedule: ``sieve.system.step.PIM_IDLE``), whatever the step is doing, so a program meets a
refresh or not depending on when on that clock it runs. The measured step of a run starts
when the warm-up steps end, which differs from method to method (their decisions, splits and
layer times differ), so two methods that run the same splits can differ by the refreshes their
programs meet. This script runs each method with the measured step started ``d`` later on the
device clock (``simulate_run(..., idle_before_ns=d)``) for ``--phases`` values of ``d`` spread
over one tREFI of the preset, and prints each method's throughput per phase, its spread, and
each method's ratio to the first one at equal phase (docs/validation.md, *Refresh phase*).

    python benchmarks/refresh_phase.py --memory attacc-hbm3-pim --batch 2 --workload math-500 \
        --methods allexp,sieve-cp --overlap tbo --layers every
"""

from __future__ import annotations

import argparse
import statistics
import sys

from sieve.errors import ConfigError
from sieve.system.run import RunConfig, simulate_run


def phase_runs(cfgs: list[RunConfig], phases: int) -> tuple[float, list[float], list[list[float]]]:
    """(tREFI in ns, the idle times, per config its throughput per idle time)."""
    if phases < 1:
        raise ConfigError(f"refresh_phase: --phases must be >= 1, got {phases}")
    spec = cfgs[0].resolve_system().memory
    trefi = spec.timing.nREFI * spec.tCK_ns
    ds = [trefi * i / phases for i in range(phases)]
    out = [[simulate_run(c, idle_before_ns=d).row["throughput_tok_s_gpu"] for d in ds]
           for c in cfgs]
    return trefi, ds, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen3-30b-a3b")
    ap.add_argument("--system", default="1xb200")
    ap.add_argument("--memory", default=None, help="PIM preset (default: the system's)")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--workload", default="math-500")
    ap.add_argument("--colocated", action="store_true")
    ap.add_argument("--methods", default="allexp,sieve-cp",
                    help="comma-separated; the first is the reference of the ratios")
    ap.add_argument("--overlap", choices=("none", "tbo"), default="tbo")
    ap.add_argument("--layers", default="every",
                    help="sampled layers, or 'every' (default: every layer)")
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--phases", type=int, default=8)
    a = ap.parse_args(argv)
    over = (("memory", a.memory),) if a.memory else ()
    layers = None if a.layers == "every" else int(a.layers)
    methods = a.methods.split(",")
    cfgs = [RunConfig(model=a.model, system=a.system, method=m, batch=a.batch,
                      workload=a.workload, colocated=a.colocated, steps=a.steps,
                      warmup=a.warmup, microbatches=2 if a.overlap == "tbo" else 1,
                      overlap=a.overlap, layers=layers, system_overrides=over)
            for m in methods]
    trefi, ds, out = phase_runs(cfgs, a.phases)
    print(f"{a.model} {a.system} {a.memory or 'system memory'} {a.workload} B={a.batch} "
          f"{'colocated ' if a.colocated else ''}overlap {a.overlap}, layers {a.layers}, "
          f"{a.warmup} warm-up + {a.steps} measured; tREFI {trefi:.1f} ns, "
          f"{a.phases} phases")
    print("| method | tok/s/GPU at idle " + " / ".join(f"{d:.0f}" for d in ds)
          + " ns | min / median / max | spread |")
    print("|---|---|---|---|")
    for m, t in zip(methods, out):
        print(f"| {m} | {' / '.join(f'{x:.1f}' for x in t)} | {min(t):.1f} / "
              f"{statistics.median(t):.1f} / {max(t):.1f} | {max(t) / min(t) - 1:.2%} |")
    ref = out[0]
    for m, t in zip(methods[1:], out[1:]):
        r = [x / y for x, y in zip(t, ref)]
        print(f"{m} / {methods[0]} at equal phase: min {min(r):.4f} median "
              f"{statistics.median(r):.4f} max {max(r):.4f}; at idle 0 (the run as configured) "
              f"{r[0]:.4f}; its median over {methods[0]}'s median "
              f"{statistics.median(t) / statistics.median(ref):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
