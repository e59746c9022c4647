"""What `sieve dram --log` costs: the same run without a log, with ``--log x.npy`` and with
``--log x.csv``, as whole processes, interleaved (one of each per round, --rounds rounds), with
wall time, CPU time (user + system of the child) and peak resident memory; the log's cost is
reported as commands per second of *added* CPU time against the no-log run of the same round,
min/median/max over the rounds.

    python benchmarks/bench_log.py [--requests N] [--rounds R] [--write docs/performance.md]

``--write`` replaces the ``perf:log`` section of docs/performance.md with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

BEGIN = "<!-- perf:log:begin (benchmarks/bench_log.py --write docs/performance.md) -->"
END = "<!-- perf:log:end -->"


#: The child reports its own peak (RUSAGE_CHILDREN's ru_maxrss is the largest of all children).
_CHILD = ("import resource, sys\nfrom sieve.cli import main\nrc = main(sys.argv[1:])\n"
          "sys.stderr.write('PEAK_KB %d\\n' % resource.getrusage(resource.RUSAGE_SELF)"
          ".ru_maxrss)\nsys.exit(rc)\n")


def _run(args: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        raise SystemExit(out.stderr)
    peak = [ln for ln in out.stderr.splitlines() if ln.startswith("PEAK_KB")][-1]
    return {"wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime)
            + (after.ru_stime - before.ru_stime), "peak_mb": int(peak.split()[1]) / 1024,
            "result": json.loads(out.stdout)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--write", help="replace the perf:log section of this Markdown file")
    args = ap.parse_args(argv)
    base = ["dram", "--spec", "hbm3-6400", "--pattern", "rand", "--write-fraction", "0.25",
            "--requests", str(args.requests), "--json"]
    rows: dict[str, list[dict]] = {"none": [], ".npy": [], ".csv": []}
    with tempfile.TemporaryDirectory() as d:
        for _ in range(args.rounds):
            for kind in rows:
                extra = [] if kind == "none" else ["--log", os.path.join(d, "log" + kind)]
                r = _run(base + extra)
                if kind != "none":
                    r["bytes"] = os.path.getsize(extra[1])
                rows[kind].append(r)
    commands = sum(rows["none"][0]["result"]["command_counts"].values())
    lines = [f"`python benchmarks/bench_log.py --requests {args.requests} --rounds "
             f"{args.rounds}` ({platform.machine()}, {os.cpu_count()} CPUs, Python "
             f"{platform.python_version()}): `sieve dram --spec hbm3-6400 --pattern rand "
             f"--write-fraction 0.25 --requests {args.requests}`, {commands:,} commands; "
             "whole processes, interleaved, min / median / max over the rounds.", "",
             "| log | wall s | CPU s | peak MB | file MB | log Mcmd/s of added CPU |",
             "|---|---|---|---|---|---|"]

    def mmm(v):
        return f"{min(v):.2f} / {statistics.median(v):.2f} / {max(v):.2f}"

    for kind, rs in rows.items():
        cpu = [r["cpu_s"] for r in rs]
        rate = "-" if kind == "none" else mmm(
            [commands / max(r["cpu_s"] - n["cpu_s"], 1e-9) / 1e6
             for r, n in zip(rs, rows["none"])])
        size = "-" if kind == "none" else f"{rs[0]['bytes'] / 2**20:.0f}"
        lines.append(f"| {kind} | {mmm([r['wall_s'] for r in rs])} | {mmm(cpu)} | "
                     f"{max(r['peak_mb'] for r in rs):.0f} | {size} | {rate} |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        from sieve.outputs import write_section

        write_section(args.write, BEGIN, END, f"{BEGIN}\n{text}\n{END}",
                      heading="Command logs (`sieve dram --log`)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
