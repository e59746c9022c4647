"""Samsung HBM-PIM's mode protocol (spec ``pim.modes = "hbm-pim"``, sieve.dram.pimmode).

Pins: the order of the transitions a kernel issues (park-in, SB->HAB, CRF writes, HAB<->HAB_PIM
per vector, HAB->SB, park-out), the CRF write count against the GEMV microkernel's instruction
count, the exact tick of every mode-sequence command and of every overhead span for one PC
computed by hand from the spec's timings, the lane partial-sum read-back without an adder
tree, unchanged results on presets without a protocol, and the independent checker's rule 6
(it accepts the engine's logs and flags a missing or misordered transition).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sieve import pim
from sieve.dram import get_spec
from sieve.dram.checker import check_log
from sieve.dram.commands import COMMAND_INDEX as CI
from sieve.dram.device import GemvKernel, run_pim
from sieve.dram.pimmode import (
    OVERHEADS,
    ROW_ABMR,
    ROW_PARK,
    ROW_REG,
    ROW_SBMR,
    mode_sequences,
    reserved_rows,
)
from sieve.errors import ConfigError

SAMSUNG = "samsung-hbm2-pim"
# PIMSimulator src/tests/PIMCmdGen.h, GemvPIMKernel (GEMV, no adder tree): MAC, JUMP, MAC,
# JUMP, NOP, then EXIT = 6 32-bit instructions; a CRF burst holds 8 (src/PIMRank.h)
GEMV_MICROKERNEL_INSTRUCTIONS = 6
SMALL = GemvKernel(n_vectors=2, n_chunks=1, gw_per_chunk=2, rows_per_chunk=1, macs_per_row=2,
                   n_res=2)


def _one_pc(spec, kernels):
    """Program where only PC 0 of channel 0 runs ``kernels`` (no bus sharing: hand-timeable)."""
    n = spec.org.total_channels * spec.org.pseudochannels
    return [list(kernels)] + [[] for _ in range(n - 1)]


def _pc_log(log, ch=0, pc=0):
    m = log[(log["ch"] == ch) & (log["pc"] == pc)]
    return m[np.lexsort((m["seq"], m["tick"]))]


def _is(e, cmd, row=None, col=None, bg=None, bank=None):
    return (e["cmd"] == CI[cmd] and (row is None or e["row"] == row)
            and (col is None or e["col"] == col) and (bg is None or e["bg"] == bg)
            and (bank is None or e["bank"] == bank))


# --- the sequence ---------------------------------------------------------------------------

def test_samsung_preset_declares_the_protocol():
    p = get_spec(SAMSUNG).pim
    assert (p.modes, p.park, p.adder_tree) == ("hbm-pim", True, False)
    assert p.crf_bursts == math.ceil(GEMV_MICROKERNEL_INSTRUCTIONS / 8)
    assert reserved_rows(get_spec(SAMSUNG)) == (ROW_PARK, ROW_ABMR, ROW_SBMR, ROW_REG)
    for name in ("b200-hbm3e-pim", "attacc-hbm3-pim"):
        s = get_spec(name)
        assert s.pim.modes == "none" and reserved_rows(s) == ()
        steps, ptr = mode_sequences(s)
        assert ptr[-1] == 0  # every sequence empty


def test_transition_order_and_counts_per_kernel():
    spec = get_spec(SAMSUNG)
    o = spec.org
    n_banks = o.bankgroups * o.banks
    k = GemvKernel(n_vectors=3, n_chunks=2, gw_per_chunk=2, rows_per_chunk=2, macs_per_row=4,
                   n_res=3)
    r = run_pim(spec, [k, k], log=True)
    ev = _pc_log(r.log, ch=1, pc=1)
    # classify every command of the PC's stream into the phase it belongs to
    phases = []
    for e in ev:
        if e["row"] == ROW_PARK:
            tag = "park"
        elif _is(e, "ACT", row=ROW_ABMR):
            tag = "abmr"
        elif _is(e, "ACT", row=ROW_SBMR):
            tag = "sbmr"
        elif _is(e, "WR", row=ROW_REG) and e["col"] >= 4:
            tag = "crf"
        elif _is(e, "WR", row=ROW_REG, col=0):
            tag = "mode"
        elif e["cmd"] in (CI["GWRITE"], CI["ACTAB"], CI["MACAB"]):
            tag = "gemv"
        elif e["cmd"] == CI["RDRES"]:
            tag = "res"
        else:
            continue  # PRE / PREA / PREAB / the register-row ACTs / refresh
        if not phases or phases[-1][0] != tag:
            phases.append([tag, 0])
        phases[-1][1] += 1
    per_vector = [["mode", 1], ["gemv", k.n_chunks * (k.gw_per_chunk + k.rows_per_chunk
                                                       * (1 + k.macs_per_row))],
                  ["mode", 1], ["res", k.n_res]]
    kernel = ([["park", 2 * n_banks], ["abmr", 4], ["crf", spec.pim.crf_bursts]]
              + per_vector * k.n_vectors + [["sbmr", 2], ["park", 2 * n_banks]])
    # kernel 1's park-out and kernel 2's park-in are adjacent: one run of 4 x n_banks commands
    assert phases == kernel[:-1] + [["park", 4 * n_banks]] + kernel[1:]
    # SB -> HAB in PIMSimulator's bank order (bank groups 0, 2 alternating), HAB -> SB in 0, 1
    abmr = [(int(e["bg"]), int(e["bank"])) for e in ev if _is(e, "ACT", row=ROW_ABMR)]
    assert abmr == [(0, 0), (2, 0), (0, 1), (2, 1)] * 2
    sbmr = [(int(e["bg"]), int(e["bank"])) for e in ev if _is(e, "ACT", row=ROW_SBMR)]
    assert sbmr == [(0, 0), (0, 1)] * 2
    # park: one read of column 0 of the park row in every bank, each bank once per park
    park_rd = [(int(e["bg"]), int(e["bank"])) for e in ev if _is(e, "RD", row=ROW_PARK, col=0)]
    assert len(park_rd) == 4 * n_banks and len(set(park_rd[:n_banks])) == n_banks
    # the CRF writes go to bank 1 of bank group 0, columns 4.. (PIMKernel::programCrf)
    crf = [(int(e["bg"]), int(e["bank"]), int(e["col"])) for e in ev
           if _is(e, "WR", row=ROW_REG) and e["col"] >= 4]
    assert crf == [(0, 1, 4 + i) for i in range(spec.pim.crf_bursts)] * 2
    # every PC of every channel issues the same (symmetric program), all kernels counted
    c = r.command_counts
    n_pcs = o.total_channels * o.pseudochannels
    assert c["WR"] == n_pcs * 2 * (spec.pim.crf_bursts + 2 * k.n_vectors)
    assert c["RD"] == n_pcs * 2 * 2 * n_banks
    assert c["RDRES"] == n_pcs * 2 * k.n_vectors * k.n_res
    assert check_log(r.log, spec).ok


@pytest.mark.parametrize("bursts", [1, 2, 4])
def test_crf_write_count_follows_crf_bursts(bursts):
    spec = get_spec(SAMSUNG, {"pim.crf_bursts": bursts})
    r = run_pim(spec, _one_pc(spec, [SMALL]), log=True, symmetric=False)
    ev = _pc_log(r.log)
    crf = [int(e["col"]) for e in ev if _is(e, "WR", row=ROW_REG) and e["col"] >= 4]
    assert crf == list(range(4, 4 + bursts))
    t = spec.timing
    # back-to-back writes to one bank: tCCD_L apart; the first as with one burst (below)
    assert r.pc_overhead_ns[0, OVERHEADS.index("crf")] == (t.nRP + t.nRCDWR - t.nRRDS
                                                 + (bursts - 1) * t.nCCDL)


# --- exact timing of the spans ---------------------------------------------------------------

def test_overhead_spans_hand_computed_one_pc():
    """Every mode-sequence command of one PC (no other PC on the bus) at the tick the spec's
    timings give, and every overhead span equal to the sum of those terms (HBM2: 1 tick = 1 CK
    = 1 ns; ACT occupies the row bus 2 CK, so a latency from an ACT grows by 1 and one to an
    ACT shrinks by 1: the folding rule of docs/checker.md rule 1)."""
    spec = get_spec(SAMSUNG)
    t = spec.timing
    assert t.ticks_per_ck == 1 and spec.tick_ns == 1.0
    a = spec.bus_ticks("ACT") - 1
    assert a == 1
    k = SMALL
    r = run_pim(spec, _one_pc(spec, [k]), log=True, symmetric=False)
    ev = _pc_log(r.log)
    tick = {}  # name -> list of ticks, in order

    def at(name, pred):
        tick[name] = [int(e["tick"]) for e in ev if pred(e)]
        return tick[name]

    # park-in: 16 ACTs at row 0x1000, bank groups rotating (tRRD_S; nFAW <= 4 nRRDS), the
    # last bank precharged tRAS after its ACT
    assert t.nFAW <= 4 * t.nRRDS
    park_act = at("park_act", lambda e: _is(e, "ACT", row=ROW_PARK))
    n_banks = spec.org.bankgroups * spec.org.banks
    assert park_act[:n_banks] == [i * t.nRRDS for i in range(n_banks)]
    park_in_end = park_act[n_banks - 1] + t.nRAS + a
    # SB -> HAB: ACT x4 one CK after the last park PRE, tRRD_S apart, each PRE tRAS later
    abmr = at("abmr", lambda e: _is(e, "ACT", row=ROW_ABMR))
    assert abmr == [park_in_end + 1 + i * t.nRRDS for i in range(4)]
    abmr_pre = [abmr[i] + t.nRAS + a for i in range(4)]
    # CRF: ACT the register row in bank (0,1) tRP after its PRE (the third), WR tRCDWR later
    crf_act = abmr_pre[2] + t.nRP - a
    crf_wr = crf_act + t.nRCDWR + a
    assert at("crf", lambda e: _is(e, "WR", row=ROW_REG, bank=1)) == [crf_wr]
    # vector 0: HAB -> HAB_PIM: ACT (0,0) at the register row with the CRF write (in-order
    # stream), its WR tRCDWR later
    mode = at("mode", lambda e: _is(e, "WR", row=ROW_REG, col=0))
    assert len(mode) == 2 * k.n_vectors
    assert mode[0] == crf_wr + t.nRCDWR + a
    # the GEMV: ACTAB after PREA (tRP), MACs tRCDRD later, tCCDAB apart; HAB_PIM -> HAB: PREAB
    # tRAS after ACTAB, ACT (0,0) at the register row, WR tRCDWR later
    actab = at("actab", lambda e: _is(e, "ACTAB"))
    macs = at("mac", lambda e: _is(e, "MACAB"))
    assert macs[:2] == [actab[0] + t.nRCDRD + a, actab[0] + t.nRCDRD + a + t.nCCDAB]
    assert mode[1] == actab[0] + t.nRAS + a + t.nRP - a + t.nRCDWR + a
    # read-back: RDRES tWTR_S after the mode write's data, then tBL apart
    res = at("res", lambda e: _is(e, "RDRES"))
    wtr = t.nCWL + t.nBL + t.nWTRS
    assert res[:2] == [mode[1] + wtr, mode[1] + wtr + t.nBL]
    # vector 1: HAB -> HAB_PIM is one WR (the register row is still open), tRTW after the read
    assert mode[2] == res[1] + t.nRTW
    assert mode[3] == actab[1] + t.nRAS + t.nRP + t.nRCDWR + a
    assert res[2:] == [mode[3] + wtr, mode[3] + wtr + t.nBL]
    # HAB -> SB: PRE (0,0) tWR after the mode write; ACT SBMR in (0,0), then (0,1) tRRD_L
    # later (same bank group), each PRE tRAS after its ACT
    sbmr = at("sbmr", lambda e: _is(e, "ACT", row=ROW_SBMR))
    pre_reg = mode[3] + t.nCWL + t.nBL + t.nWR
    assert sbmr == [pre_reg + t.nRP - a, pre_reg + t.nRP - a + t.nRRDL]
    sbmr_pre = [s + t.nRAS + a for s in sbmr]
    # park-out: the first ACT tRP after bank (0,0)'s SBMR PRE, then as park-in
    park_out = park_act[n_banks:]
    assert park_out[0] == sbmr_pre[0] + t.nRP - a
    assert park_out == [park_out[0] + i * t.nRRDS for i in range(n_banks)]
    end = park_out[-1] + t.nRAS + a
    assert r.time_ns == end + 1  # the kernel ends one CK after its last command

    ov = r.pc_overhead_ns[0]
    got = dict(zip(OVERHEADS, ov.tolist(), strict=True))
    assert got == {
        "park_in": park_in_end - 0,
        "sb_to_hab": abmr_pre[3] - park_in_end,
        "crf": crf_wr - abmr_pre[3],
        "hab_to_pim": (mode[0] - crf_wr) + (mode[2] - res[1]),
        "pim_to_hab": (mode[1] - macs[k.macs_per_row - 1]) + (mode[3] - macs[-1]),
        "hab_to_sb": sbmr_pre[1] - res[-1],
        "park_out": end - sbmr_pre[1],
        "readback": (res[1] - mode[1]) + (res[3] - mode[3]),
    }
    # the spans never overlap and lie inside the PC's busy time
    assert ov.sum() <= r.pc_busy_ns[0]
    # the result's means are over every PC (the others idle: zero)
    n_pcs = spec.org.total_channels * spec.org.pseudochannels
    assert r.mode_switch_ns * n_pcs == pytest.approx(sum(v for n, v in got.items()
                                                         if n not in ("crf", "readback")))
    assert r.to_dict()["overhead_ns"] == r.overhead_ns
    assert check_log(r.log, spec).ok


def test_overheads_zero_without_protocol():
    for name in ("b200-hbm3e-pim", "attacc-hbm3-pim"):
        spec = get_spec(name)
        r = run_pim(spec, [SMALL], log=True)
        # no mode sequence; the read-back span is timed for every kernel
        assert all(v == 0.0 for n, v in r.overhead_ns.items() if n != "readback")
        assert r.overhead_ns["readback"] > 0
        assert r.mode_switch_ns == 0.0
        rows = set(r.log["row"][r.log["row"] >= 0].tolist())
        assert not rows & {ROW_PARK, ROW_ABMR, ROW_SBMR, ROW_REG}
        assert r.command_counts.get("RD", 0) == 0 and r.command_counts.get("WR", 0) == 0


def test_protocol_on_other_preset_only_adds_time():
    """The same kernel on b200-hbm3e-pim with pim.modes=hbm-pim: the GEMV's own commands are
    unchanged, and the run takes longer than without the protocol by at least the sum of the
    mode spans that cannot overlap the GEMV of an in-order stream."""
    base = run_pim("b200-hbm3e-pim", [SMALL])
    spec = get_spec("b200-hbm3e-pim", {"pim.modes": "hbm-pim", "pim.park": True,
                                       "pim.crf_bursts": 1})
    r = run_pim(spec, [SMALL], log=True)
    for c in ("GWRITE", "MACAB", "RDRES"):
        assert r.command_counts[c] == base.command_counts[c]
    assert r.time_ns > base.time_ns + r.overhead_ns["park_in"] + r.overhead_ns["park_out"]
    assert check_log(r.log, spec).ok


# --- partial sums ------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4096, 1024), (1000, 3000), (64, 64)])
def test_lane_partial_readback_without_adder_tree(shape):
    out_rows, in_cols = shape
    spec = get_spec(SAMSUNG)
    tree = get_spec(SAMSUNG, {"pim.adder_tree": True})
    lay, lay_t = pim.gemv_layout(spec, out_rows, in_cols, 2), pim.gemv_layout(tree, *shape, 2)
    p, o = spec.pim, spec.org
    assert lay.lane_partials == p.lanes and lay_t.lane_partials == 1
    # one 16-lane FP16 burst of partial sums per output row and PC (PIMSimulator readResult
    # reads output_dim bursts; the host's fp16ReduceSum adds the lanes)
    assert lay.kernel.n_res == math.ceil(lay.rows_per_pc * p.lanes * lay.out_bytes
                                         / o.access_bytes)
    assert lay_t.kernel.n_res == math.ceil(lay_t.rows_per_pc * lay_t.out_bytes / o.access_bytes)
    assert lay.readback_bytes == lay.n_pcs * lay.kernel.n_res * o.access_bytes
    assert lay.reduce_bytes == lay.readback_bytes  # every read-back byte is a partial sum
    r = run_pim(spec, [lay.kernel])
    n_pcs = o.total_channels * o.pseudochannels
    assert r.command_counts["RDRES"] == n_pcs * 2 * lay.kernel.n_res
    rt = run_pim(tree, [lay_t.kernel])
    assert rt.command_counts["RDRES"] == n_pcs * 2 * lay_t.kernel.n_res
    if lay.kernel.n_res > lay_t.kernel.n_res:
        assert r.overhead_ns["readback"] > rt.overhead_ns["readback"]


def test_reserved_rows_refused_for_weights():
    spec = get_spec(SAMSUNG)
    k = GemvKernel(n_vectors=1, n_chunks=1, gw_per_chunk=1, rows_per_chunk=2, macs_per_row=1,
                   n_res=1, base_row=ROW_PARK - 1)
    with pytest.raises(ConfigError, match=r"reserves \(reserved: 0x1000, 0x17ff, 0x1fff, "
                                          r"0x3fff\); use base_row"):
        run_pim(spec, [k])
    # the same rows are fine on a preset without a protocol
    run_pim("b200-hbm3e-pim", [k])


# --- the checker's rule 6 -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def samsung_log():
    spec = get_spec(SAMSUNG)
    r = run_pim(spec, [SMALL, SMALL], log=True)
    return spec, r.log


def _without(log, pred, which):
    idx = np.flatnonzero(pred(log))
    return np.delete(log, idx[which])


def _pc0(log):
    return (log["ch"] == 0) & (log["pc"] == 0)


def test_checker_accepts_engine_logs(samsung_log):
    spec, log = samsung_log
    assert check_log(log, spec).ok
    # several kernels with refreshes in between, expert-parallel programs (some PCs idle)
    lay = pim.gemv_layout(spec, 2048, 2048, 3)
    n = spec.org.total_channels * spec.org.pseudochannels
    prog = [[lay.kernel] * 3 if q % 3 else [] for q in range(n)]
    r = run_pim(spec, prog, log=True, symmetric=False)
    assert r.refreshes > 0
    rep = check_log(r.log, spec)
    assert rep.ok, rep.summary()


def test_checker_flags_missing_hab_pim_entry(samsung_log):
    spec, log = samsung_log
    bad = _without(log, lambda x: _pc0(x) & (x["cmd"] == CI["WR"]) & (x["row"] == ROW_REG)
                   & (x["col"] == 0), 0)
    rep = check_log(bad, spec)
    fam = rep.by_family()
    assert set(fam) == {"mode"}
    first = rep.violations[0]
    assert first.constraint.startswith("MACAB needs the pseudo-channel in all-bank PIM mode")
    assert "it is in all-bank mode (HAB)" in first.constraint
    # the toggles are now out of phase: the PC ends in HAB_PIM
    assert "the log ends with the pseudo-channel in all-bank PIM mode" in \
        rep.violations[-1].constraint


def test_checker_flags_missing_abmr_activation(samsung_log):
    spec, log = samsung_log
    bad = _without(log, lambda x: _pc0(x) & (x["cmd"] == CI["ACT"]) & (x["row"] == ROW_ABMR),
                   3)
    rep = check_log(bad, spec)
    assert set(rep.by_family()) == {"mode"}
    texts = {v.constraint for v in rep.violations}
    assert ("GWRITE needs the pseudo-channel in all-bank mode (HAB or HAB_PIM); it is in "
            "single-bank mode (SB)") in texts
    assert any(t.startswith("ACTAB needs") for t in texts)


def test_checker_flags_missing_exit(samsung_log):
    spec, log = samsung_log
    # the last kernel's HAB -> SB: drop the PRE that closes the SBMR row in bank (0,1)
    sbmr_act = np.flatnonzero(_pc0(log) & (log["cmd"] == CI["ACT"]) & (log["row"] == ROW_SBMR)
                              & (log["bank"] == 1))[-1]
    pres = np.flatnonzero(_pc0(log) & (log["cmd"] == CI["PRE"]) & (log["bg"] == 0)
                          & (log["bank"] == 1) & (log["tick"] > log["tick"][sbmr_act]))
    bad = np.delete(log, pres[0])
    rep = check_log(bad, spec, check_refresh=False)
    assert rep.by_family().get("mode") == 1
    modes = [v for v in rep.violations if v.family == "mode"]
    assert modes[0].constraint.startswith(
        "the log ends with the pseudo-channel in all-bank mode (HAB)")


def test_checker_flags_misordered_transition(samsung_log):
    """The first HAB -> HAB_PIM write and the vector's first MACAB swapped (issue slots
    exchanged): that MACAB now runs in HAB."""
    spec, log = samsung_log
    bad = log.copy()
    w = np.flatnonzero(_pc0(bad) & (bad["cmd"] == CI["WR"]) & (bad["row"] == ROW_REG)
                       & (bad["col"] == 0))[0]
    m = np.flatnonzero(_pc0(bad) & (bad["cmd"] == CI["MACAB"]))[0]
    for f in ("tick", "seq"):
        bad[f][w], bad[f][m] = log[f][m], log[f][w]
    rep = check_log(bad, spec, check_refresh=False)
    modes = [v for v in rep.violations if v.family == "mode"]
    assert modes and modes[0].index == m and modes[0].tick == log["tick"][w]
    assert modes[0].constraint == ("MACAB needs the pseudo-channel in all-bank PIM mode "
                                   "(HAB_PIM); it is in all-bank mode (HAB)")


def test_checker_protocol_rule_only_for_hbm_pim():
    """The same log against a spec without the protocol: no mode rule applies (PIM commands
    are accepted at any time, as AttAcc's)."""
    spec = get_spec(SAMSUNG)
    r = run_pim(spec, [SMALL], log=True)
    log = r.log[~np.isin(r.log["row"], [ROW_ABMR])]
    assert "mode" in check_log(log, spec, check_refresh=False).by_family()
    none = get_spec(SAMSUNG, {"pim.modes": "none", "pim.park": False, "pim.crf_bursts": 0})
    assert "mode" not in check_log(log, none, check_refresh=False).by_family()
