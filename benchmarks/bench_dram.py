"""Speed of the DRAM/PIM engine.

Measures, in one process:
  * requests/s of sequential and uniform-random 64 B read traces on HBM3 (hbm3-6400, one
    channel, 32-entry queues, open page, FR-FCFS), in two configurations:
      - "ramulator": the conditions of Ramulator 2.1's measurement (shared/reference/
        ramulator2.md §1): LD addresses 64 B apart, each one 32 B transaction (2.1's HBM3
        transaction size, one BL8 burst), RoBaRaCoCh mapping - the same trace and preset;
      - "sieve": sieve's defaults, 64 B requests (two bursts each) and the `sieve` mapping;
  * commands/s and wall time of a 4096 x 4096 fp16 GEMV on samsung-hbm2-pim over 64
    pseudo-channels (one simulated channel, and every channel simulated);
  * peak resident memory of the process.

Wall times exclude trace generation (as Ramulator's "wall_sim" excludes parsing) but include
address mapping and result statistics. Each point is the best of --repeat runs (the machine is
shared and noisy; best-of is the least noisy estimate of the cost).

    python benchmarks/bench_dram.py [--requests N] [--repeat R] [--json FILE]
"""

from __future__ import annotations

import argparse
import platform
import resource
import time

from sieve import dram, memtrace, pim

# Ramulator 2.1, HBM3_6400Mbps, 1 channel, 5 M requests, measured on a 2-core machine of this
# workplace (shared/reference/ramulator2.md §1, table rows "2.1 HBM3 1 seq/rand"): requests/s
# and simulated memory cycles per request.
RAMULATOR_21_REQ_PER_S = {"seq": 245e3, "rand": 120e3}
RAMULATOR_21_CK_PER_REQ = {"seq": 11.34e6 / 5e6, "rand": 16.89e6 / 5e6}


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="also write the results to this JSON file")
    args = ap.parse_args(argv)

    rows = []
    print(f"machine: {platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}, engine debug build: {dram.DEBUG_BUILD}")
    print(f"{'case':<52} {'wall s':>7} {'Mreq/s':>7} {'Mcmd/s':>7} {'CK/req':>7} "
          f"{'vs Ramulator 2.1':>17}")
    for pattern in ("seq", "rand"):
        trace = memtrace.synthetic_trace(pattern, args.requests, seed=1)
        for label, mapping, rbytes in (("ramulator", "RoBaRaCoCh", 32), ("sieve", "sieve", 64)):
            wall, res = best_of(lambda t=trace, m=mapping, b=rbytes: dram.simulate_requests(
                "hbm3-6400", t, channels=1, mapping=m, request_bytes=b), args.repeat)
            n_cmd = sum(res.command_counts.values())
            rps = len(trace) / wall
            ck = res.cycles / len(trace)
            name = f"hbm3-6400 {pattern}, {label} ({mapping}, {rbytes} B/request)"
            vs = (f"{rps / RAMULATOR_21_REQ_PER_S[pattern]:6.1f}x speed, CK/req "
                  f"{ck / RAMULATOR_21_CK_PER_REQ[pattern]:.3f}x" if label == "ramulator"
                  else "(not comparable)")
            print(f"{name:<52} {wall:7.3f} {rps / 1e6:7.2f} {n_cmd / wall / 1e6:7.2f} "
                  f"{ck:7.3f}  {vs}")
            rows.append({"case": name, "wall_s": wall, "requests_per_s": rps,
                         "commands_per_s": n_cmd / wall, "ck_per_request": ck,
                         "bandwidth_utilization": res.bandwidth_utilization,
                         "speed_vs_ramulator_21": (rps / RAMULATOR_21_REQ_PER_S[pattern]
                                                   if label == "ramulator" else None)})

    kernel = pim.gemv_kernel("samsung-hbm2-pim", 4096, 4096, 1, col_groups=1)  # row-only
    for symmetric in ("auto", False):
        wall, res = best_of(lambda s=symmetric: dram.run_pim("samsung-hbm2-pim", [kernel],
                                                             symmetric=s), args.repeat)
        n_cmd = sum(res.command_counts.values())
        simulated = n_cmd * res.simulated_channels // 32  # commands the engine really issued
        name = (f"GEMV 4096x4096 fp16, samsung-hbm2-pim, 64 PC, "
                f"{'1 channel' if res.simulated_channels == 1 else 'all 32 ch'}")
        print(f"{name:<52} {wall:7.4f} {'':>7} {simulated / wall / 1e6:7.2f} {'':>7}  "
              f"{n_cmd} commands reported, {simulated} simulated")
        rows.append({"case": name, "wall_s": wall, "commands_reported": n_cmd,
                     "commands_simulated": simulated, "commands_per_s": simulated / wall,
                     "gemv_time_ns": res.time_ns})
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak_mb:.0f} MB")
    if args.json:
        from sieve.outputs import write_json

        write_json(args.json, {"rows": rows, "peak_rss_mb": peak_mb,
                               "debug_build": dram.DEBUG_BUILD})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
