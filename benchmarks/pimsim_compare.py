"""sieve's samsung-hbm2-pim GEMV next to Samsung's PIMSimulator on the same shapes.

The PIMSimulator numbers are not computed here: they are the cycle counts its own benchmark
printed (``PIMBenchFixture``: ``executeGemv`` + ``runPIM`` on ``system_hbm_64ch.ini``, 64 pCH,
1 GHz; no result read-back in the count), built from SAITPublic/PIMSimulator@b464dde
(``scons``; gcc 12 needed ``#include <iterator>`` in lib/npy.h) with one local gtest case
that takes the shape from the environment (benchmarks/pimsim_build.sh builds it so;
benchmarks/pimsim_trace.py runs a shape and prints its cycles and channel 0's tiles).
docs/validation.md (*PIM mode protocol against PIMSimulator*) gives the commands and the
per-phase trace of one channel.

Run: ``PYTHONPATH=. python benchmarks/pimsim_compare.py``
"""

from __future__ import annotations

import numpy as np

from sieve import pim
from sieve.dram import get_spec, run_pim
from sieve.dram.commands import COMMAND_INDEX

# (out_rows, in_cols, batch) -> PIMSimulator cycles (1 CK = 1 ns), PIMBenchFixture at b464dde
PIMSIM_CYCLES = {
    (4096, 4096, 1): 13166,  # also upstream's own PIMBenchFixture.gemv (2.74x over 36082)
    (4096, 1024, 1): 3662,
    (8192, 4096, 1): 26337,
    (4096, 4096, 4): 51941,
    (1024, 4096, 1): 13166,  # PIMSimulator pads every PIM block to 8 output rows (GRF_B)
    (4096, 128, 1): 750,  # one input tile (even banks only)
    (4096, 384, 1): 1479,  # three input tiles: two even-bank, one odd-bank
}
# PIMSimulator's mode overheads on channel 0 of the 4096 x 4096 run (DEBUG_CMD_TRACE ticks):
# park-in 2 -> first ABMR ACT 77; SB->HAB 77 -> last ABMR PRE 143; CRF write at 157;
# HAB_PIM at 168; HAB at 12971 (after GRFB_TO_BANK); SB at 13057; park-out ends 13162
PIMSIM_MODE_CYCLES_4096 = {"park_in": 75, "sb_to_hab": 66, "crf": 14, "hab_to_pim": 11,
                           "pim_to_hab": 11, "hab_to_sb": 86, "park_out": 105}
# The GEMV body on channel 0 of the same trace: GRF_B -> bank (last MAC 12905 -> last
# GRFB_TO_BANK write 12960); one input tile (8 GRF_A writes + 64 MACs), first GRF_A ACT to the
# next: even-bank tiles 341 CK (838 -> 1179: bank 1's register row opens while bank 0 MACs,
# 2 rows of 32 MACs), odd-bank tiles 388 CK (6737 -> 7125: bank 1's MAC row closed and
# reopened around the writes); last MAC to the next tile's first MAC: 62 / 110 CK
# (re-read 2026-12-05 from a fresh build of the same commit: last MAC -> next tile's first MAC
# is 62 on even-bank tiles, 109 on odd-bank ones, 97 from the last even tile to the first odd
# one; each of the 3 refreshes of rank 0 inside the body adds 364 CK to its tile: the REF
# issues 1 CK after the PRE that closes the row, CommandQueue::isIssuable(REF) being true
# without tRP, then tRFC 350)
PIMSIM_BODY_CYCLES_4096 = {"grf_b": 55, "tile_even": 341, "tile_odd": 388,
                           "gap_even": 62, "gap_odd": 109, "gap_transition": 97,
                           "refresh_extra": 364}


#: The layouts compared: (column label, gemv_layout keywords). PIMSimulator's own is the last:
#: output rows over 64 pCH x 8 PIM blocks (row-only), 8 output rows per block and input pass
#: (its 8 GRF_B registers; more rows repeat the pass, fewer are padded).
LAYOUTS = (("default layout (col_groups auto)", {}),
           ("row-only layout (col_groups 1)", {"col_groups": 1}),
           ("PIMSimulator's layout (col_groups 1, tile_rows 8)",
            {"col_groups": 1, "tile_rows": 8}))


def main() -> None:
    spec = get_spec("samsung-hbm2-pim")
    print("Each sieve cell: time with read-back / without read-back [ns] (ratio of the latter "
          "to PIMSimulator's count, which has no read-back)\n")
    print("| GEMV (fp16) | batch | PIMSimulator [CK] | "
          + " | ".join(f"sieve, {name}" for name, _ in LAYOUTS)
          + " | sieve mode + CRF [ns] |")
    print("|---|---|---|" + "---|" * len(LAYOUTS) + "---|")
    for (r, c, b), ref in PIMSIM_CYCLES.items():
        cells = []
        for _, kw in LAYOUTS:
            lay = pim.gemv_layout(spec, r, c, b, **kw)
            res = run_pim(spec, lay.kernels())
            no_rb = res.time_ns - res.overhead_ns["readback"]
            cells.append(f"{res.time_ns:.0f} / {no_rb:.0f} ({no_rb / ref:.3f})")
        o = res.overhead_ns  # the last layout's, per kernel
        mode = (res.mode_switch_ns + o["crf"]) / lay.output_tiles
        print(f"| {r} x {c} | {b} | {ref} | " + " | ".join(cells) + f" | {mode:.1f} |")
    lay = pim.gemv_layout(spec, 4096, 4096, 1, col_groups=1)
    o = run_pim(spec, [lay.kernel]).overhead_ns
    print("\n| span (4096 x 4096, 1 vector) | PIMSimulator ch0 [CK] | sieve mean per PC [ns] |")
    print("|---|---|---|")
    for k, v in PIMSIM_MODE_CYCLES_4096.items():
        print(f"| {k} | {v} | {o[k]:.1f} |")
    tot = sum(PIMSIM_MODE_CYCLES_4096.values())
    print(f"| total | {tot} | {sum(o[k] for k in PIMSIM_MODE_CYCLES_4096):.1f} |")
    # the GEMV body: one PC of channel 0 (every PC runs the same stream); with bank-parity
    # rows the first half of the input tiles are in the even banks, the rest in the odd ones
    r = run_pim(spec, [lay.kernel], log=True)
    log = r.log
    pc0 = log[(log["ch"] == 0) & (log["pc"] == 0)]
    pc0 = pc0[np.lexsort((pc0["seq"], pc0["tick"]))]
    macs = pc0["tick"][pc0["cmd"] == COMMAND_INDEX[spec.pim_mac_command]].astype(np.int64)
    k = lay.kernel
    per = k.rows_per_chunk * k.macs_per_row  # MACs per chunk (input tile)
    starts, ends = macs[::per], macs[per - 1::per]
    ne = -(-k.n_chunks // 2) if spec.pim.bank_parity else k.n_chunks
    tile = {"even": np.diff(starts[:ne]), "odd": np.diff(starts[ne:])}
    gap = {"even": starts[1:ne] - ends[:ne - 1], "odd": starts[ne + 1:] - ends[ne:-1]}
    p = PIMSIM_BODY_CYCLES_4096

    def med(x):  # the median tile (tiles with a refresh in them are the few long ones)
        return f"{np.median(x):.0f}" if x.size else "-"

    print("\n| GEMV body (4096 x 4096, 1 vector) | PIMSimulator ch0 [CK] | sieve PC 0 [ns] |")
    print("|---|---|---|")
    print(f"| input tile (8 GRF_A writes + 64 MACs) | {p['tile_even']} even bank / "
          f"{p['tile_odd']} odd bank | {med(tile['even'])} even / {med(tile['odd'])} odd |")
    print(f"| last MAC -> next tile's first MAC | {p['gap_even']} / {p['gap_odd']} | "
          f"{med(gap['even'])} / {med(gap['odd'])} |")
    if spec.pim.bank_parity and ne < k.n_chunks:
        print(f"| last even tile's last MAC -> first odd tile's first MAC | "
              f"{p['gap_transition']} | {starts[ne] - ends[ne - 1]} |")
    # a tile with a refresh in it, over the median tile of its parity
    extra = [int(d - np.median(tile[par])) for par in ("even", "odd") for d in tile[par]
             if d > 1.5 * np.median(tile[par])]
    print(f"| a refresh inside a tile, extra time | {p['refresh_extra']} each (3) | "
          f"{', '.join(map(str, extra))} |")
    print(f"| grf_b (GRF_B -> bank, 8 WRs) | {p['grf_b']} | {o['grf_b']:.1f} |")


if __name__ == "__main__":
    main()
