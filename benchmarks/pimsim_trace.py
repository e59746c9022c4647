"""Run Samsung's PIMSimulator on a GEMV shape and print its cycles and channel 0's tiles.

The numbers behind ``PIMSIM_*`` in benchmarks/pimsim_compare.py (docs/validation.md, *PIM mode
protocol against PIMSimulator*). Build the simulator first (benchmarks/pimsim_build.sh), then::

    python benchmarks/pimsim_trace.py /tmp/pimsim 4096 4096

It runs ``sim --gtest_filter=PIMBenchFixture.gemv_env`` with the command trace on
(``system_hbm_64ch.ini``: ``SHOW_SIM_OUTPUT=true``; ``DEBUG_CMD_TRACE`` is already true there)
and reads channel 0, rank 0 (the PIM rank): its cycle count; per input tile (8 GRF_A writes +
64 MACs, one tile per 8 GRF_A writes) the first-write-to-next and last-MAC-to-next-first-MAC
times; its refreshes.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__)
        return 2
    root, out, inp = Path(argv[0]), int(argv[1]), int(argv[2])
    ini = root / "system_hbm_64ch.ini"
    ini.write_text(re.sub(r"^SHOW_SIM_OUTPUT=\w+", "SHOW_SIM_OUTPUT=true", ini.read_text(),
                          flags=re.M))
    run = subprocess.run([str(root / "sim"), "--gtest_filter=PIMBenchFixture.gemv_env"],
                         cwd=root, capture_output=True, text=True, check=True,
                         env=dict(os.environ, GEMV_OUT=str(out), GEMV_IN=str(inp)))
    cycles = re.search(r"Cycle : (\d+)", run.stdout)
    print(f"PIMSimulator {out} x {inp}: {cycles.group(1) if cycles else '?'} CK")
    ev = []
    for line in run.stdout.splitlines():
        t = re.search(r"@\s*(\d+)", line)
        if t and re.search(r"\bch0 ", line):
            ev.append((int(t.group(1)), line))
    grfa = [t for t, line in ev if line.startswith("BWRITE_GRF_A") and " ra0 " in line]
    macs = [t for t, line in ev if line.startswith("READ") and "] MAC " in line]
    starts = grfa[::8]
    firsts, lasts = macs[::64], macs[63::64]
    tiles = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    gaps = [b - a for a, b in zip(lasts, firsts[1:], strict=False)]
    print(f"channel 0: {len(starts)} tiles, {len(macs)} MACs, first MAC {macs[0] if macs else '-'}"
          f", last MAC {macs[-1] if macs else '-'}")
    print("tile (first GRF_A write to the next tile's):", tiles)
    print("last MAC -> next tile's first MAC:", gaps)
    half = len(starts) // 2  # even-bank tiles first (executeGemv), then the odd-bank ones
    if half > 1:
        med = statistics.median
        print(f"median tile: even banks {med(tiles[:half - 1])}, odd banks "
              f"{med(tiles[half:])}; median gap: even {med(gaps[:half - 1])}, odd "
              f"{med(gaps[half:])}, even -> odd {gaps[half - 1]}")
    print("refreshes:", [(t, line.split()[2]) for t, line in ev if line.startswith("REF")])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
