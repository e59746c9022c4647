"""Speed and memory of the independent timing checker (sieve.dram.checker).

Measured, not asserted (tests/test_checker_stream.py checks the verdicts and one memory bound):

* in memory: ``check_log`` on the engine's own command logs of uniform-random 64 B traces (1 in
  4 writes) on 16 channels of hbm3-6400 and b200-hbm3e-pim, whole (``chunk=0``) and in chunks
  (the default), interleaved, ``--repeat`` rounds, CPU time (``time.process_time``) beside wall;
* from disk: ``sieve check`` in a child process on a long ``.npy`` log (``sieve dram --log``,
  streamed to disk) and on a CSV log of the same run's first ``--csv-commands`` commands: the
  child's CPU time and peak resident memory (``RUSAGE_CHILDREN``).

    python benchmarks/bench_checker.py [--requests N] [--big-requests N] [--repeat R]
        [--write docs/performance.md]
"""

from __future__ import annotations

import argparse
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CMD = "OPENBLAS_NUM_THREADS=1 python benchmarks/bench_checker.py --write docs/performance.md"


def _child(args: list[str]) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak MB, stdout) of one `python -m sieve ...` child process."""
    code = ("import resource, subprocess, sys, time\n"
            "t = time.perf_counter()\n"
            "p = subprocess.run([sys.executable, '-m', 'sieve', *sys.argv[1:]], "
            "capture_output=True, text=True)\n"
            "w = time.perf_counter() - t\n"
            "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(w, r.ru_utime + r.ru_stime, r.ru_maxrss / 1024)\n"
            "print(p.stdout.strip().splitlines()[0] if p.stdout.strip() else p.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    wall, cpu, peak = (float(x) for x in out[0].split())
    return wall, cpu, peak, out[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=300_000)
    ap.add_argument("--big-requests", type=int, default=3_000_000)
    ap.add_argument("--csv-commands", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", type=Path, help="update the checker section of this file")
    args = ap.parse_args(argv)

    from sieve import dram
    from sieve.dram import memtrace
    from sieve.dram.checker import check_log
    from sieve.dram.log import log_to_csv

    rows = []
    trace = memtrace.synthetic_trace("rand", args.requests, write_fraction=0.25, seed=1)
    for spec in ("hbm3-6400", "b200-hbm3e-pim"):
        log = dram.simulate_requests(spec, trace, channels=16, log=True).log
        cpu = {0: [], None: []}
        wall = {0: [], None: []}
        for _ in range(args.repeat):  # interleaved: whole, chunked, whole, chunked, ...
            for chunk in (0, None):
                t, c = time.perf_counter(), time.process_time()
                rep = check_log(log, spec, chunk=chunk)
                wall[chunk].append(time.perf_counter() - t)
                cpu[chunk].append(time.process_time() - c)
                assert rep.ok, rep.summary()
        for chunk, how in ((0, "whole log"), (None, "chunks of 2^17")):
            c = np.array(cpu[chunk])
            rows.append((f"{spec}, in memory, {how}", len(log), float(np.median(wall[chunk])),
                         c.min(), float(np.median(c)), c.max(), None))
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.npy"
        subprocess.run([sys.executable, "-m", "sieve", "dram", "--spec", "hbm3-6400",
                        "--pattern", "rand", "--requests", str(args.big_requests),
                        "--channels", "16", "--log", str(big)], check=True,
                       capture_output=True)
        n = len(np.load(big, mmap_mode="r"))
        w, c, peak, line = _child(["check", str(big), "--spec", "hbm3-6400"])
        assert line.endswith("OK"), line
        rows.append(("hbm3-6400, `sieve check` on the .npy file (streamed)", n, w, c, c, c,
                     peak))
        csv = Path(tmp) / "log.csv"
        head = np.load(big, mmap_mode="r")[:args.csv_commands]
        csv.write_text(log_to_csv(np.asarray(head)))
        w, c, peak, line = _child(["check", str(csv), "--spec", "hbm3-6400",
                                   "--no-refresh-check"])
        assert line.endswith("OK"), line
        rows.append(("hbm3-6400, `sieve check` on a CSV file (streamed)", len(head), w, c, c, c,
                     peak))
    lines = ["| log | commands | wall (s) | CPU s min / median / max | commands/s (median CPU) "
             "| peak memory |", "|---|---|---|---|---|---|"]
    for name, n, w, lo, med, hi, peak in rows:
        mem = f"{peak:.0f} MB (child)" if peak is not None else "-"
        lines.append(f"| {name} | {n:,} | {w:.2f} | {lo:.2f} / {med:.2f} / {hi:.2f} | "
                     f"{n / med / 1e6:.2f} M | {mem} |")
    body = "\n".join([
        f"Machine: {platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}; {args.repeat} interleaved rounds of the in-memory checks "
        "(engine logs of uniform-random 64 B reads, 1 in 4 writes, 16 channels); the file "
        f"checks once each, in a child process. Regenerate: `{CMD}`.", "", *lines, "",
        f"Peak resident memory of this process: "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB (the engine runs "
        "and the in-memory logs included).", ""])
    print(body)
    if args.write:
        from sieve.outputs import write_section

        write_section(args.write, "<!-- perf:checker:begin -->", "<!-- perf:checker:end -->",
                      f"<!-- perf:checker:begin -->\n{body}<!-- perf:checker:end -->")
        print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
