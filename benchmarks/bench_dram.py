"""Speed of the DRAM/PIM engine.

Measures:
  * requests/s of sequential and uniform-random 64 B read traces on HBM3 (hbm3-6400, one
    channel, 32-entry queues, open page, FR-FCFS), in two configurations:
      - "ramulator": the conditions of Ramulator 2.1's measurement (shared/reference/
        ramulator2.md §1): LD addresses 64 B apart, each one 32 B transaction (2.1's HBM3
        transaction size, one BL8 burst), RoBaRaCoCh mapping - the same trace and preset;
      - "sieve": sieve's defaults, 64 B requests (two bursts each) and the `sieve` mapping;
  * commands/s and wall time of a 4096 x 4096 fp16 GEMV on samsung-hbm2-pim over 64
    pseudo-channels (one simulated channel, and every channel simulated);
  * PIM programs back to back on one device (sieve.dram.PimDevice): a step-like sequence of
    TP GEMVs on b200-hbm3e-pim (one simulated channel), and an EP program whose GPU steps
    are group barriers spanning channels (all 128 channels, time-ordered);
  * peak resident memory of the process.

Wall times exclude trace generation (as Ramulator's "wall_sim" excludes parsing) but include
address mapping and result statistics. Each point is the best of --repeat runs (the machine is
shared and noisy; best-of is the least noisy estimate of the cost).

``--baseline DIR`` compares with another build of sieve (a checkout whose ``sieve`` package has
its compiled engine, e.g. ``git worktree add /tmp/sieve-base main`` then ``python setup.py
build_ext --inplace`` there): the cases both builds can run are timed in worker processes,
alternating between the two builds (and their order) on every repeat, and the ratio
new / baseline of the best times is printed with whether both builds gave the same results.

    python benchmarks/bench_dram.py [--requests N] [--repeat R] [--baseline DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

# Ramulator 2.1, HBM3_6400Mbps, 1 channel, 5 M requests (shared/reference/ramulator2.md §1,
# table rows "2.1 HBM3 1 seq/rand"): simulated memory cycles per request, which do not depend
# on the machine. Its speed is not quoted here: a rate measured on another machine is no
# anchor for this one (benchmarks/bench_trace.py times both in one run).
RAMULATOR_21_CK_PER_REQ = {"seq": 11.34e6 / 5e6, "rand": 16.89e6 / 5e6}
REPO = Path(__file__).resolve().parents[1]


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def request_cases(n: int):
    """(name, pattern, label, fn) for the request-trace cases (APIs common to every build)."""
    from sieve import dram
    from sieve.dram import memtrace

    out = []
    for pattern in ("seq", "rand"):
        trace = memtrace.synthetic_trace(pattern, n, seed=1)
        for label, mapping, rbytes in (("ramulator", "RoBaRaCoCh", 32), ("sieve", "sieve", 64)):
            name = f"hbm3-6400 {pattern}, {label} ({mapping}, {rbytes} B/request)"
            out.append((name, pattern, label, trace, (lambda t=trace, m=mapping, b=rbytes:
                                                      dram.simulate_requests(
                                                          "hbm3-6400", t, channels=1,
                                                          mapping=m, request_bytes=b))))
    return out


def gemv_cases():
    from sieve import dram, pim

    kernel = pim.gemv_kernel("samsung-hbm2-pim", 4096, 4096, 1, col_groups=1)  # row-only
    out = []
    for symmetric in ("auto", False):
        name = (f"GEMV 4096x4096 fp16, samsung-hbm2-pim, 64 PC, "
                f"{'1 channel' if symmetric == 'auto' else 'all 32 ch'}")
        out.append((name, lambda s=symmetric: dram.run_pim("samsung-hbm2-pim", [kernel],
                                                           symmetric=s)))
    return out


def device_cases():
    """Cases of the persistent device (builds that have sieve.dram.PimDevice)."""
    from dataclasses import replace

    import numpy as np

    from sieve import pim
    from sieve.dram import PimDevice
    from sieve.pim.ffn import ffn_shape, run_moe_ep

    spec = "b200-hbm3e-pim"
    ks = [pim.gemv_kernel(spec, 1536, 2048, 4), pim.gemv_kernel(spec, 2048, 768, 4)]

    def step():
        dev = PimDevice(spec)
        r = None
        for i in range(16):
            k = replace(ks[i % 2], gap_ns=2500.0 if i % 2 else 0.0, sync="all" if i % 2 else
                        False)
            r = dev.run([k], start_ns=None if r is None else r.end_ns + 1000.0)
        return r

    counts = np.zeros(128, dtype=np.int64)
    counts[:24] = np.arange(24) % 5 + 1

    def ep():
        return run_moe_ep(spec, ffn_shape("qwen3-30b-a3b"), counts, pcs_per_expert=4,
                          order="expert").pim

    return [("PimDevice: 16 TP GEMV programs back to back, b200-hbm3e-pim", step),
            ("EP layer, 4-PC groups (group barriers over 2 channels), all 128 ch", ep)]


def worker(n: int) -> dict:
    """Time every case once in this process (whatever `sieve` is on the path), after an
    untimed warm-up (first-call costs: lazy imports, page faults)."""
    from sieve import dram
    from sieve.dram import memtrace

    dram.simulate_requests("hbm3-6400", memtrace.synthetic_trace("rand", 20000, seed=2),
                           channels=1)
    out = {}
    for name, _, _, _trace, fn in request_cases(n):
        t0 = time.perf_counter()
        res = fn()
        out[name] = {"wall_s": time.perf_counter() - t0, "cycles": res.cycles,
                     "commands": sum(res.command_counts.values())}
    for name, fn in gemv_cases():
        wall, res = best_of(fn, 10)  # milliseconds each: the first call pays one-off setup
        out[name] = {"wall_s": wall, "time_ns": res.time_ns,
                     "commands": sum(res.command_counts.values())}
    return out


def compare(args) -> int:
    base = Path(args.baseline).resolve()
    if not (base / "sieve").is_dir():
        print(f"--baseline {base}: no sieve package there", file=sys.stderr)
        return 2
    best: dict[str, dict[str, float]] = {"base": {}, "new": {}}
    info: dict[str, dict] = {}
    for i in range(args.repeat):
        order = (("base", base), ("new", REPO))
        for tag, root in (order if i % 2 == 0 else order[::-1]):  # no position advantage
            env = dict(os.environ, PYTHONPATH=str(root))
            p = subprocess.run([sys.executable, __file__, "--worker", "--requests",
                                str(args.requests)], capture_output=True, text=True, env=env,
                               check=True)
            for name, d in json.loads(p.stdout).items():
                best[tag][name] = min(best[tag].get(name, float("inf")), d["wall_s"])
                info.setdefault(tag, {})[name] = d
    print(f"{'case':<62} {'base s':>8} {'new s':>8} {'new/base':>9}  same result")
    rows = []
    for name in best["new"]:
        b, n = best["base"][name], best["new"][name]
        same = {k: v for k, v in info["new"][name].items() if k != "wall_s"} == {
            k: v for k, v in info["base"][name].items() if k != "wall_s"}
        print(f"{name:<62} {b:8.4f} {n:8.4f} {n / b:9.3f}  {same}")
        rows.append({"case": name, "base_s": b, "new_s": n, "ratio": n / b, "same": same})
    if args.json:
        sys.path.insert(0, str(REPO))
        from sieve.outputs import write_json

        write_json(args.json, {"compare": rows, "repeat": args.repeat,
                               "requests": args.requests})
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", help="compare with the sieve build in this directory")
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.requests)))
        return 0
    if args.baseline:
        return compare(args)
    sys.path.insert(0, str(REPO))
    from sieve import dram
    from sieve.dram.presets import get_spec

    rows = []
    print(f"machine: {platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}, engine debug build: {dram.DEBUG_BUILD}")
    print(f"{'case':<62} {'wall s':>7} {'Mreq/s':>7} {'Mcmd/s':>7} {'CK/req':>7} "
          f"{'CK/req vs Ramulator 2.1':>24}")
    for name, pattern, label, trace, fn in request_cases(args.requests):
        wall, res = best_of(fn, args.repeat)
        n_cmd = sum(res.command_counts.values())
        rps = len(trace) / wall
        ck = res.cycles / len(trace)
        vs = (f"{ck / RAMULATOR_21_CK_PER_REQ[pattern]:.3f}x" if label == "ramulator"
              else "(not comparable)")
        print(f"{name:<62} {wall:7.3f} {rps / 1e6:7.2f} {n_cmd / wall / 1e6:7.2f} "
              f"{ck:7.3f}  {vs}")
        rows.append({"case": name, "wall_s": wall, "requests_per_s": rps,
                     "commands_per_s": n_cmd / wall, "ck_per_request": ck,
                     "bandwidth_utilization": res.bandwidth_utilization,
                     "ck_per_request_vs_ramulator_21": (
                         ck / RAMULATOR_21_CK_PER_REQ[pattern] if label == "ramulator"
                         else None)})
    for name, fn in gemv_cases() + device_cases():
        wall, res = best_of(fn, args.repeat)
        n_cmd = sum(res.command_counts.values())
        # commands the engine really issued (the rest are copies of a simulated channel)
        simulated = n_cmd * res.simulated_channels // get_spec(res.spec).org.total_channels
        print(f"{name:<62} {wall:7.4f} {'':>7} {simulated / wall / 1e6:7.2f} {'':>7}  "
              f"{n_cmd} commands reported, {simulated} simulated")
        rows.append({"case": name, "wall_s": wall, "commands_reported": n_cmd,
                     "commands_simulated": simulated, "commands_per_s": simulated / wall,
                     "pim_time_ns": res.time_ns})
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak_mb:.0f} MB")
    if args.json:
        from sieve.outputs import write_json

        write_json(args.json, {"rows": rows, "peak_rss_mb": peak_mb,
                               "debug_build": dram.DEBUG_BUILD})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
