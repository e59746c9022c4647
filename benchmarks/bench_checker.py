"""Speed of the independent timing checker (sieve.dram.checker.check_log).

The checker must verify long command logs in seconds; this is measured here, not asserted in a
test (tests/test_checker.py only checks that a million-command log is judged correctly).

Logs: the engine's own command logs of uniform-random 64 B read traces (with 1 in 4 writes) on
all 16 channels of hbm3-6400 and on b200-hbm3e-pim (one stack's 16 channels), each of
--requests requests; every log is checked in full (all rows, all channels). Each point is the
best of --repeat runs in one process (the machine is shared and noisy).

    python benchmarks/bench_checker.py [--requests N] [--repeat R] [--json FILE]
"""

from __future__ import annotations

import argparse
import platform
import resource
import time

from sieve import dram
from sieve.dram import memtrace
from sieve.dram.checker import check_log


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="also write the results to this JSON file")
    args = ap.parse_args(argv)
    print(f"machine: {platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}")
    print(f"{'log':<50} {'commands':>9} {'wall s':>7} {'Mcmd/s':>7}  result")
    rows = []
    trace = memtrace.synthetic_trace("rand", args.requests, write_fraction=0.25, seed=1)
    for spec in ("hbm3-6400", "b200-hbm3e-pim"):
        res = dram.simulate_requests(spec, trace, channels=16, log=True)
        log = res.log
        best, rep = float("inf"), None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            rep = check_log(log, spec)
            best = min(best, time.perf_counter() - t0)
        name = f"{spec}, rand 64 B, 16 channels, engine log"
        print(f"{name:<50} {len(log):>9} {best:7.3f} {len(log) / best / 1e6:7.2f}  "
              f"{'ok' if rep.ok else rep.summary()}")
        rows.append({"case": name, "commands": len(log), "wall_s": best,
                     "commands_per_s": len(log) / best, "ok": rep.ok})
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak_mb:.0f} MB")
    if args.json:
        from sieve.outputs import write_json

        write_json(args.json, {"rows": rows, "peak_rss_mb": peak_mb})
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
