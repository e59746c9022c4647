"""The request scheduler's decisions, pinned command for command.

The FR-FCFS scheduler of the request front end (sieve/_dram_requests.pxi) is incremental: it
keeps per-pseudo-channel candidate lists and cached bests instead of rescanning every queued
request. Such caches must never change a decision, so these tests pin the full command log
(tick, command, address of every command, and the request type of each), the per-request
latencies and the result counters of a spread of configurations - both lifecycles, both page
policies, reads and writes, refresh (all-bank and per-bank), 1-4 channels, PIM presets with
dual row buffers, rate-limited injection, 64 B requests, idle gaps - to digests computed with
the engine as it was before the incremental scheduler (commit c5a15e7, a full scan of every
bank with queued requests at each decision). A deliberate change of scheduling policy must
regenerate them (``python tests/test_dram_scheduler.py`` prints the table); the debug build
also checks every incremental decision against a full scan (``_check_look``).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from sieve.dram import ControllerConfig, simulate_requests
from sieve.dram.memtrace import RequestTrace, synthetic_trace
from sieve.dram.presets import get_spec

N = 1500


def _trace(kind: str) -> RequestTrace:
    if kind == "rand_w30":
        return synthetic_trace("rand", N, stride_bytes=32, write_fraction=0.3, seed=2)
    if kind == "rand":
        return synthetic_trace("rand", N, stride_bytes=64, seed=1)
    if kind == "seq_w20":
        return synthetic_trace("seq", N, stride_bytes=32, write_fraction=0.2, seed=3)
    rng = np.random.default_rng(4)
    if kind == "hot_w50":  # 2 MiB: many row hits and conflicts, many requests per bank
        return RequestTrace(rng.integers(0, 1 << 16, size=N).astype(np.int64) * 32,
                            rng.random(N) < 0.5, None, "hot")
    assert kind == "spaced"  # arrivals with idle gaps: refresh of idle PCs, watermarks
    arr = np.cumsum(rng.integers(0, 40, size=N)).astype(np.int64)
    return RequestTrace(rng.integers(0, 1 << 24, size=N).astype(np.int64) * 32,
                        rng.random(N) < 0.25, arr, "spaced")


# (spec, spec overrides, trace, lifecycle, page policy, channels, mapping, queue,
#  inject_per_tick, request bytes) -> digest
CASES = {
    ('hbm3-6400', '', 'rand_w30', 'sieve', 'open', 2, 'sieve', 16, 0, 32):
        "b63d22ef8df0e74aca05",
    ('hbm3-6400', '', 'rand_w30', 'sieve', 'closed', 2, 'sieve', 16, 0, 32):
        "18256ad57be414045382",
    ('hbm3-6400', '', 'rand_w30', 'ramulator2', 'open', 2, 'sieve', 16, 0, 32):
        "156b193829e72a2d7c04",
    ('hbm3-6400', '', 'rand_w30', 'ramulator2', 'closed', 2, 'sieve', 16, 0, 32):
        "f2f17e6a53440c48a83e",
    ('hbm3-6400', '', 'hot_w50', 'sieve', 'open', 2, 'sieve', 16, 0, 32):
        "6d7e9cca35acbea7104b",
    ('hbm3-6400', '', 'hot_w50', 'sieve', 'closed', 2, 'sieve', 16, 0, 32):
        "01dd8fb3310aadde7c56",
    ('hbm3-6400', '', 'hot_w50', 'ramulator2', 'open', 2, 'sieve', 16, 0, 32):
        "a5802acff8c90c0ff5d4",
    ('hbm3-6400', '', 'hot_w50', 'ramulator2', 'closed', 2, 'sieve', 16, 0, 32):
        "c1ce2c92bb276c5b3c30",
    ('hbm3-6400', '', 'seq_w20', 'sieve', 'open', 2, 'sieve', 16, 0, 32):
        "61232412f5845311357f",
    ('hbm3-6400', '', 'seq_w20', 'sieve', 'closed', 2, 'sieve', 16, 0, 32):
        "e996f93fe47c6315ad08",
    ('hbm3-6400', '', 'seq_w20', 'ramulator2', 'open', 2, 'sieve', 16, 0, 32):
        "b86f2ccce1ff53644492",
    ('hbm3-6400', '', 'seq_w20', 'ramulator2', 'closed', 2, 'sieve', 16, 0, 32):
        "96a7e6d0c1b4411e3462",
    ('hbm3-6400', '', 'spaced', 'sieve', 'open', 2, 'sieve', 16, 0, 32):
        "91d96165ef69bbc24cd5",
    ('hbm3-6400', '', 'spaced', 'sieve', 'closed', 2, 'sieve', 16, 0, 32):
        "10e27bd8a5aca1671c38",
    ('hbm3-6400', '', 'spaced', 'ramulator2', 'open', 2, 'sieve', 16, 0, 32):
        "97c90ec189e57f4026fb",
    ('hbm3-6400', '', 'spaced', 'ramulator2', 'closed', 2, 'sieve', 16, 0, 32):
        "57d1ca8edd78592ac0fb",
    ('hbm3-6400', 'perbank', 'rand_w30', 'sieve', 'closed', 4, 'sieve', 32, 0, 32):
        "05057fabf8dd061560f1",
    ('hbm3-6400', 'perbank', 'hot_w50', 'ramulator2', 'open', 4, 'sieve', 32, 0, 32):
        "11fd41259585144bda97",
    ('b200-hbm3e-pim', '', 'rand_w30', 'sieve', 'closed', 4, 'sieve', 32, 0, 32):
        "722e654d2232229dd9ee",
    ('b200-hbm3e-pim', '', 'hot_w50', 'ramulator2', 'open', 4, 'sieve', 32, 0, 32):
        "4b51b3c7c191141e4391",
    # (random traffic reaches HBM-PIM's reserved rows, refused under its mode protocol:
    # 'plain' turns the protocol off, which the request engine never reads; same digest)
    ('samsung-hbm2-pim', 'plain', 'rand_w30', 'sieve', 'closed', 4, 'sieve', 32, 0, 32):
        "6e678df677dc019af2bd",
    ('samsung-hbm2-pim', '', 'hot_w50', 'ramulator2', 'open', 4, 'sieve', 32, 0, 32):
        "cb3df056bcbdba7ade26",
    # ('old': the preset's RD -> PRE 5 and RD -> WR 16 CK from before they were read as
    # PIMSimulator applies them, 3 and 15: the digests pinned before the bank-parity commands
    # went into the engine, unchanged)
    ('samsung-hbm2-pim', 'plain-old', 'rand_w30', 'sieve', 'closed', 4, 'sieve', 32, 0, 32):
        "b964e8f55201c969be7d",
    ('samsung-hbm2-pim', 'old', 'hot_w50', 'ramulator2', 'open', 4, 'sieve', 32, 0, 32):
        "a71e04c4c3b4f0a2fc18",
    ('hbm2-2000', '', 'rand_w30', 'sieve', 'closed', 4, 'sieve', 32, 0, 32):
        "b8e9a1514a269bb56d34",
    ('hbm2-2000', '', 'hot_w50', 'ramulator2', 'open', 4, 'sieve', 32, 0, 32):
        "ed40427b910d2aee704b",
    ('hbm3-6400', '', 'rand', 'sieve', 'open', 1, 'RoBaRaCoCh', 32, 0, 32):
        "171263ff957c37e624cd",
    ('hbm3-6400', '', 'hot_w50', 'sieve', 'open', 1, 'RoBaRaCoCh', 8, 1, 64):
        "f4c068a7f84dd83e9d93",
    ('hbm3-6400', 'perbank', 'spaced', 'sieve', 'closed', 2, 'RoBaRaCoCh', 64, 2, 64):
        "221f6363eeea85160315",
    ('hbm3-6400', '', 'rand', 'ramulator2', 'open', 1, 'RoBaRaCoCh', 32, 0, 32):
        "c2e2d698843b39bba1f7",
    ('hbm3-6400', '', 'hot_w50', 'ramulator2', 'open', 1, 'RoBaRaCoCh', 8, 1, 64):
        "b5728f5e5bb66995c843",
    ('hbm3-6400', 'perbank', 'spaced', 'ramulator2', 'closed', 2, 'RoBaRaCoCh', 64, 2, 64):
        "0a32143782c112c1912f",
}


def _digest(r) -> str:
    h = hashlib.sha256()
    for a in (r.log, r.log_type, r.latency_ns, r.pc_bursts):
        h.update(np.ascontiguousarray(a).tobytes())
    scalars = (r.cycles, r.time_ns, r.latency_mean_ns, r.latency_p99_ns, r.row_hits,
               r.row_misses, r.row_conflicts, r.accept_cycles, r.refreshes,
               sorted(r.command_counts.items()))
    h.update(repr(scalars).encode())
    return h.hexdigest()[:20]


def _run(case):
    spec, over, kind, lc, page, ch, mapping, q, inj, rb = case
    overrides = ({"pim.modes": None, "pim.park": False, "pim.crf_bursts": 0}
                 if over.startswith("plain") else {"refresh": over}
                 if over and "old" not in over else {})
    if "old" in over:
        overrides.update(nRTP=5, nRTW=16)
    cfg = ControllerConfig(queue_size=q, page_policy=page, lifecycle=lc, inject_per_tick=inj)
    return simulate_requests(get_spec(spec, overrides), _trace(kind), channels=ch,
                             mapping=mapping, request_bytes=rb, controller=cfg, log=True)


@pytest.mark.parametrize("case", list(CASES), ids=lambda c: "-".join(map(str, c)))
def test_scheduler_decisions_are_pinned(case):
    assert _digest(_run(case)) == CASES[case]


if __name__ == "__main__":  # print the table (after a deliberate policy change)
    for c in CASES:
        print(f"    {c!r}: {_digest(_run(c))!r},")
