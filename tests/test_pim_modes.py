"""Samsung HBM-PIM's mode protocol (spec ``pim.modes = "hbm-pim"``, sieve.dram.pimmode).

Pins: the order of the transitions a kernel issues (park-in, SB->HAB, CRF writes, HAB<->HAB_PIM
per vector, GRF_A writes per chunk, GRF_B writes per vector, HAB->SB, park-out), the CRF write
count against the GEMV microkernel's instruction count, the exact tick of every mode-sequence
command (the mode switches as write transactions, the GRF_A writes with bank 1's register row
ACT/PRE and the MAC row's PREAB/PREA around them, the GRF_B writebacks) and of every overhead
span for one PC computed by hand from the spec's timings, the GRF_B row's bounds, the lane
partial-sum read-back without an adder tree, unchanged results on presets without a protocol,
and the independent checker's rule 6 (it accepts the engine's logs and flags a missing or
misordered transition, GRF writes outside all-bank mode).
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
    HBM_PIM_GRF,
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
# the same protocol with all-bank rows (ACTAB opens both banks of every PU; the hand-computed
# spans below follow that path, the bank-parity one has its own tests)
AB = {"pim.bank_parity": False}
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


@pytest.mark.parametrize("parity", [True, False])
def test_transition_order_and_counts_per_kernel(parity):
    spec = get_spec(SAMSUNG, {"pim.bank_parity": parity})
    o = spec.org
    n_banks = o.bankgroups * o.banks
    k = GemvKernel(n_vectors=3, n_chunks=2, gw_per_chunk=2, rows_per_chunk=2, macs_per_row=4,
                   n_res=3)
    r = run_pim(spec, [k, k], log=True)
    ev = _pc_log(r.log, ch=1, pc=1)
    # GRF_B -> bank, after the weights (with parity rows: the even chunks' rows)
    result_row = k.base_row + k.dram_rows(parity=parity)
    n_grf = HBM_PIM_GRF  # 8 GRF_A / GRF_B registers per PIM block (PIMBlock.h)
    assert n_grf * spec.org.access_bytes == spec.pim.gbuf_bytes
    # classify every command of the PC's stream into the phase it belongs to
    phases = []
    for e in ev:
        if e["row"] == ROW_PARK:
            tag = "park"
        elif _is(e, "ACT", row=ROW_ABMR):
            tag = "abmr"
        elif _is(e, "ACT", row=ROW_SBMR):
            tag = "sbmr"
        elif _is(e, "WR", row=ROW_REG) and 4 <= e["col"] < 8:
            tag = "crf"
        elif _is(e, "WR", row=ROW_REG) and e["col"] >= 8:
            tag = "grfa"
        elif _is(e, "WR", row=result_row, bg=0, bank=1):
            tag = "grfb"
        elif _is(e, "WR", row=ROW_REG, col=0):
            tag = "mode"
        elif e["cmd"] in ((CI["MACPB"],) if parity else (CI["ACTAB"], CI["MACAB"])):
            tag = "gemv"  # (parity rows: ACTPB may open the row behind the GRF_A writes)
        elif e["cmd"] == CI["RDRES"]:
            tag = "res"
        else:
            continue  # PRE / PREA / PREAB / the register-row ACTs / refresh
        if not phases or phases[-1][0] != tag:
            phases.append([tag, 0])
        phases[-1][1] += 1
    # the input of every chunk as WRs to the register row (no GWRITE), the GRF_B writes after
    # the vector's last MAC
    per_vector = ([["mode", 1]]
                  + [["grfa", k.gw_per_chunk],
                     ["gemv", k.rows_per_chunk * (k.macs_per_row + (not parity))]]
                  * k.n_chunks
                  + [["grfb", n_grf], ["mode", 1], ["res", k.n_res]])
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
           if _is(e, "WR", row=ROW_REG) and 4 <= e["col"] < 8]
    assert crf == [(0, 1, 4 + i) for i in range(spec.pim.crf_bursts)] * 2
    # GRF_A: bank 1 of bank group 0, columns 8.. (PIMKernel::computeGemv's WRIO_TO_GRF)
    grfa = [(int(e["bg"]), int(e["bank"]), int(e["col"])) for e in ev
            if _is(e, "WR", row=ROW_REG) and e["col"] >= 8]
    assert grfa == [(0, 1, 8 + i) for i in range(k.gw_per_chunk)] * (2 * k.n_vectors
                                                                     * k.n_chunks)
    # every PC of every channel issues the same (symmetric program), all kernels counted
    c = r.command_counts
    n_pcs = o.total_channels * o.pseudochannels
    assert c.get("GWRITE", 0) == 0
    # per kernel: 4 ABMR + 2 SBMR writes, the CRF, 2 mode writes per vector, GRF_A, GRF_B
    assert c["WR"] == n_pcs * 2 * (6 + spec.pim.crf_bursts + 2 * k.n_vectors + k.n_vectors
                                   * (k.n_chunks * k.gw_per_chunk + n_grf))
    assert c["RD"] == n_pcs * 2 * 2 * n_banks
    assert c["RDRES"] == n_pcs * 2 * k.n_vectors * k.n_res
    assert check_log(r.log, spec).ok


@pytest.mark.parametrize("bursts", [1, 2, 4])
def test_crf_write_count_follows_crf_bursts(bursts):
    spec = get_spec(SAMSUNG, {"pim.crf_bursts": bursts})
    r = run_pim(spec, _one_pc(spec, [SMALL]), log=True, symmetric=False)
    ev = _pc_log(r.log)
    crf = [int(e["col"]) for e in ev if _is(e, "WR", row=ROW_REG) and 4 <= e["col"] < 8]
    assert crf == list(range(4, 4 + bursts))
    t = spec.timing
    # back-to-back writes to one bank: tCCD_L apart; the first as with one burst (below: the
    # span starts at the last ABMR PRE, tRCDWR + 1 after bank (0,1)'s, which the CRF ACT
    # follows tRP - 1 later)
    a = spec.bus_ticks("ACT") - 1
    assert r.pc_overhead_ns[0, OVERHEADS.index("crf")] == (t.nRP - a
                                                 + (bursts - 1) * t.nCCDL)


# --- exact timing of the spans ---------------------------------------------------------------

def test_overhead_spans_hand_computed_one_pc():
    """Every mode-sequence command of one PC (no other PC on the bus) at the tick the spec's
    timings give, and every overhead span equal to the sum of those terms (HBM2: 1 tick = 1 CK
    = 1 ns; ACT occupies the row bus 2 CK, so a latency from an ACT grows by 1 and one to an
    ACT shrinks by 1: the folding rule of docs/checker.md rule 1). All-bank rows (ACTAB)."""
    spec = get_spec(SAMSUNG, AB)
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
    # SB -> HAB, PIMSimulator's write transactions in its trace order: ACT x3 one CK after
    # the last park PRE, tRRD_S apart (bank groups 0, 2, 0: tRRD_L = 6 < 2 tRRD_S); their WRs
    # (column 0x1f) tRCDWR after each ACT; the fourth ACT with the third WR (in order; tFAW
    # has passed), its WR tRCDWR later; each PRE tWR after its bank's WR (> tRAS)
    wr = t.nCWL + t.nBL + t.nWR  # WR -> PRE of its bank
    abmr = at("abmr", lambda e: _is(e, "ACT", row=ROW_ABMR))
    abmr_wr = at("abmr_wr", lambda e: _is(e, "WR", row=ROW_ABMR, col=0x1F))
    assert abmr[:3] == [park_in_end + 1 + i * t.nRRDS for i in range(3)]
    assert t.nRRDL <= 2 * t.nRRDS
    assert abmr_wr[:3] == [abmr[i] + t.nRCDWR + a for i in range(3)]
    assert abmr_wr[2] >= abmr[0] + t.nFAW
    assert abmr[3] == abmr_wr[2]
    assert abmr_wr[3] == abmr[3] + t.nRCDWR + a
    abmr_pre = [abmr_wr[i] + wr for i in range(4)]
    assert all(abmr_pre[i] >= abmr[i] + t.nRAS + a for i in range(4))
    assert at("abmr_pre", lambda e: _is(e, "PRE") and e["tick"] > abmr[0])[:4] == abmr_pre
    # CRF: ACT the register row in bank (0,1) tRP after its PRE (the third), WR tRCDWR later
    crf_act = abmr_pre[2] + t.nRP - a
    crf_wr = crf_act + t.nRCDWR + a
    assert at("crf", lambda e: _is(e, "WR", row=ROW_REG, bank=1) and e["col"] < 8) == [crf_wr]
    # vector 0: HAB -> HAB_PIM: ACT (0,0) at the register row with the CRF write (in-order
    # stream), its WR tRCDWR later
    mode = at("mode", lambda e: _is(e, "WR", row=ROW_REG, col=0))
    assert len(mode) == 2 * k.n_vectors
    assert mode[0] == crf_wr + t.nRCDWR + a
    # GRF_A (PIMSimulator's WRIO_TO_GRF): WRs to columns 8.. of the register row in bank
    # (0,1), still open from the CRF write: tCCD_L after the mode write (same bank group),
    # then tCCD_L apart
    grfa = at("grfa", lambda e: _is(e, "WR", row=ROW_REG, bg=0, bank=1) and e["col"] >= 8)
    assert [int(e["col"]) for e in ev if _is(e, "WR", row=ROW_REG) and e["col"] >= 8] == [
        8, 9] * k.n_vectors
    assert grfa[:2] == [mode[0] + t.nCCDL, mode[0] + 2 * t.nCCDL]
    # the GEMV: PREA (the register rows are open) tWR after the last GRF_A write, ACTAB tRP
    # later, MACs tRCDRD later, tCCDAB apart
    actab = at("actab", lambda e: _is(e, "ACTAB"))
    assert actab[0] == grfa[1] + wr + t.nRP - a
    macs = at("mac", lambda e: _is(e, "MACAB"))
    assert macs[:2] == [actab[0] + t.nRCDRD + a, actab[0] + t.nRCDRD + a + t.nCCDAB]
    # GRF_B -> bank (GRFB_TO_BANK): PREAB tRAS after ACTAB, ACT (0,1) at the row after the
    # weights tRP later, 8 WRs (one per GRF_B register, columns 0..7) tRCDWR later, tCCD_L
    # apart
    res_row = k.base_row + k.n_chunks * k.rows_per_chunk
    grfb = at("grfb", lambda e: _is(e, "WR", row=res_row, bg=0, bank=1))
    grfb_act = actab[0] + t.nRAS + a + t.nRP - a
    assert at("grfb_act", lambda e: _is(e, "ACT", row=res_row, bg=0, bank=1))[0] == grfb_act
    assert [int(e["col"]) for e in ev if _is(e, "WR", row=res_row)][:HBM_PIM_GRF] == list(
        range(HBM_PIM_GRF))
    assert grfb[:HBM_PIM_GRF] == [grfb_act + t.nRCDWR + a + i * t.nCCDL
                                  for i in range(HBM_PIM_GRF)]
    # HAB_PIM -> HAB: ACT (0,0) at the register row with the last GRF_B write (in-order
    # stream; tRRD_L after (0,1)'s ACT has long passed), its WR tRCDWR later
    assert mode[1] == grfb[HBM_PIM_GRF - 1] + t.nRCDWR + a
    # read-back: RDRES tWTR_S after the mode write's data, then tBL apart
    res = at("res", lambda e: _is(e, "RDRES"))
    wtr = t.nCWL + t.nBL + t.nWTRS
    assert res[:2] == [mode[1] + wtr, mode[1] + wtr + t.nBL]
    # vector 1: HAB -> HAB_PIM is one WR (the register row is still open), tRTW after the read
    assert mode[2] == res[1] + t.nRTW
    # GRF_A: bank (0,1) holds the GRF_B row: PRE with the mode write (its tWR has passed),
    # ACT the register row tRP later, WRs tRCDWR later
    assert grfb[HBM_PIM_GRF - 1] + wr <= mode[2]
    assert grfa[2:] == [mode[2] + t.nRP - a + t.nRCDWR + a + i * t.nCCDL for i in range(2)]
    assert actab[1] == grfa[3] + wr + t.nRP - a
    assert macs[2:] == [actab[1] + t.nRCDRD + a, actab[1] + t.nRCDRD + a + t.nCCDAB]
    assert grfb[HBM_PIM_GRF:] == [actab[1] + t.nRAS + t.nRP + t.nRCDWR + a + i * t.nCCDL
                                  for i in range(HBM_PIM_GRF)]
    assert mode[3] == grfb[-1] + t.nRCDWR + a
    assert res[2:] == [mode[3] + wtr, mode[3] + wtr + t.nBL]
    # HAB -> SB (write transactions, PIMSimulator's trace order): PRE (0,0) tWR after the mode
    # write; ACT SBMR in (0,0), its WR (column 0x1f) tRCDWR later; bank (0,1) still holds the
    # GRF_B row: its PRE with that WR (in order; its tWR has long passed), its SBMR ACT tRP
    # later, WR tRCDWR later; each SBMR PRE tWR after its bank's WR (> tRAS)
    sbmr = at("sbmr", lambda e: _is(e, "ACT", row=ROW_SBMR))
    sbmr_wr = at("sbmr_wr", lambda e: _is(e, "WR", row=ROW_SBMR, col=0x1F))
    pre_reg = mode[3] + wr
    assert sbmr[0] == pre_reg + t.nRP - a
    assert sbmr_wr[0] == sbmr[0] + t.nRCDWR + a
    assert sbmr[1] == sbmr_wr[0] + t.nRP - a
    assert sbmr[1] - sbmr[0] >= t.nRRDL
    assert sbmr_wr[1] == sbmr[1] + t.nRCDWR + a
    sbmr_pre = [w + wr for w in sbmr_wr]
    assert all(sbmr_pre[i] >= sbmr[i] + t.nRAS + a for i in range(2))
    # park-out: the first ACT tRP after bank (0,0)'s SBMR PRE, and after (0,1)'s (in order,
    # one CK on the row bus), then as park-in
    park_out = park_act[n_banks:]
    assert park_out[0] == max(sbmr_pre[0] + t.nRP - a, sbmr_pre[1] + 1)
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
        # from the PC's previous command: the mode write, the last MAC, the last GRF_B write
        "grf_a": (grfa[1] - mode[0]) + (grfa[3] - mode[2]),
        "grf_b": (grfb[HBM_PIM_GRF - 1] - macs[1]) + (grfb[-1] - macs[3]),
        "pim_to_hab": (mode[1] - grfb[HBM_PIM_GRF - 1]) + (mode[3] - grfb[-1]),
        "hab_to_sb": sbmr_pre[1] - res[-1],
        "park_out": end - sbmr_pre[1],
        "readback": (res[1] - mode[1]) + (res[3] - mode[3]),
    }
    # the spans never overlap and lie inside the PC's busy time
    assert ov.sum() <= r.pc_busy_ns[0]
    # the result's means are over every PC (the others idle: zero)
    n_pcs = spec.org.total_channels * spec.org.pseudochannels
    assert r.mode_switch_ns * n_pcs == pytest.approx(sum(v for n, v in got.items()
                                                         if n not in ("crf", "grf_a", "grf_b",
                                                                      "readback")))
    assert r.to_dict()["overhead_ns"] == r.overhead_ns
    assert check_log(r.log, spec).ok


def test_grf_a_writes_at_chunk_boundaries_hand_computed():
    """Between two input chunks the MAC row is open in every bank: the GRF_A writes (WRs to
    the register row of bank (0,1), PIMSimulator's WRIO_TO_GRF) close it (PREAB, tRTP after
    the last MAC), open the register row (tRP), write tCCD_L apart (tRCDWR), close it (PREA,
    tWR) and reopen the next MAC row (tRP, then tRCDRD to the first MAC): on this preset 109
    CK from the last MAC of a chunk to the first of the next, PIMSimulator's odd-bank tiles'
    109 CK (docs/validation.md). All-bank rows (ACTAB); the parity rows' tiles below."""
    spec = get_spec(SAMSUNG, AB)
    t = spec.timing
    a = spec.bus_ticks("ACT") - 1
    k = GemvKernel(n_vectors=1, n_chunks=3, gw_per_chunk=8, rows_per_chunk=1, macs_per_row=64,
                   n_res=1)
    r = run_pim(spec, _one_pc(spec, [k]), log=True, symmetric=False)
    ev = _pc_log(r.log)
    macs = [int(e["tick"]) for e in ev if _is(e, "MACAB")]
    assert macs[1:64] == [macs[0] + i * t.nCCDAB for i in range(1, 64)]
    for c in (1, 2):
        last, first = macs[64 * c - 1], macs[64 * c]
        chunk = [e for e in ev if last < e["tick"] < first]
        assert [(int(e["cmd"]), int(e["bg"]), int(e["bank"]), int(e["row"]))
                for e in chunk] == ([(CI["PREAB"], -1, -1, -1), (CI["ACT"], 0, 1, ROW_REG)]
                                    + [(CI["WR"], 0, 1, ROW_REG)] * 8
                                    + [(CI["PREA"], -1, -1, -1), (CI["ACTAB"], -1, -1, c)])
        ticks = [int(e["tick"]) for e in chunk]
        preab = last + t.nRTP
        act = preab + t.nRP - a
        wrs = [act + t.nRCDWR + a + i * t.nCCDL for i in range(8)]
        prea = wrs[-1] + t.nCWL + t.nBL + t.nWR
        actab = prea + t.nRP - a
        assert ticks == [preab, act, *wrs, prea, actab]
        assert [int(e["col"]) for e in chunk if e["cmd"] == CI["WR"]] == list(range(8, 16))
        assert first == actab + t.nRCDRD + a
    assert macs[64] - macs[63] == 109
    assert check_log(r.log, spec).ok


def test_bank_parity_tiles_hand_computed():
    """Bank-parity rows (the preset's, PIMSimulator's all-bank mode): a PU reads one bank per
    row (32 bursts); the first ceil(n/2) input chunks' weights are in the even banks, the
    rest in the odd ones, each chunk 2 rows from base_row + 2 m. Even chunks: bank (0,1)'s
    register row stays open, so the GRF_A writes follow the last MAC tRTW later, tCCD_L
    apart, while PREPB / ACTPB open the next row behind them; the first MAC waits tWTR_L
    after the last write: 62 CK from the last MAC of a chunk to the first of the next. Odd
    chunks: the register row is in an odd bank: PREPB, ACT, 8 WRs, PRE, ACTPB as with
    all-bank rows: 109 CK. Inside a chunk the row switch costs tRTP + tRP + tRCDRD = 31 CK.
    Tiles of 8 writes + 64 MACs: 341 CK even and 388 CK odd, PIMSimulator's trace of
    channel 0 (docs/validation.md)."""
    spec = get_spec(SAMSUNG)
    assert spec.pim.bank_parity and spec.pim_row_bursts == spec.org.columns
    t = spec.timing
    a = spec.bus_ticks("ACT") - 1
    k = GemvKernel(n_vectors=1, n_chunks=5, gw_per_chunk=8, rows_per_chunk=2, macs_per_row=32,
                   n_res=1)
    assert k.dram_rows(parity=True) == 6
    r = run_pim(spec, _one_pc(spec, [k]), log=True, symmetric=False)
    ev = _pc_log(r.log)
    mac = [e for e in ev if _is(e, "MACPB")]
    macs = [int(e["tick"]) for e in mac]
    # chunks 0-2 in the even banks (bank 0), 3-4 in the odd ones (bank 1), rows 2 m, 2 m + 1
    assert [(int(e["bank"]), int(e["row"])) for e in mac[::32]] == [
        (0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (1, 0), (1, 1), (1, 2), (1, 3)]
    switch = t.nRTP + (t.nRP - a) + (t.nRCDRD + a)
    even = t.nRTW + 7 * t.nCCDL + t.nCWL + t.nBL + t.nWTRL
    wr = t.nCWL + t.nBL + t.nWR
    odd = t.nRTP + (t.nRP - a) + (t.nRCDWR + a) + 7 * t.nCCDL + wr + (t.nRP - a) + (t.nRCDRD + a)
    assert (switch, even, odd) == (31, 62, 109)
    for c in range(5):
        assert macs[64 * c + 32] - macs[64 * c + 31] == switch
    assert [macs[64 * c] - macs[64 * c - 1] for c in (1, 2, 4)] == [even, even, odd]
    # last even chunk -> first odd one: the writes to the open register row, then its PRE
    # and the odd row's ACTPB: 97 CK, as in PIMSimulator's trace
    turn = t.nRTW + 7 * t.nCCDL + wr + (t.nRP - a) + (t.nRCDRD + a)
    assert macs[64 * 3] - macs[64 * 3 - 1] == turn == 97
    tile = 62 * t.nCCDAB + switch
    assert (tile + even, tile + odd) == (341, 388)
    # between two even chunks: the writes to the open register row, PREPB / ACTPB between them
    chunk = [e for e in ev if macs[63] < e["tick"] < macs[64]]
    assert [int(e["cmd"]) for e in chunk if e["cmd"] != CI["WR"]] == [CI["PREPB"], CI["ACTPB"]]
    assert [int(e["tick"]) for e in chunk if e["cmd"] == CI["WR"]] == [
        macs[63] + t.nRTW + i * t.nCCDL for i in range(8)]
    # the even row closes once only odd chunks are left (PIMSimulator precharges a bank no
    # queued command hits): PREPB of bank 0 after the last even MAC, before the first odd
    # one, so the mode switch after the GRF_B writes needs no precharge
    assert [int(e["tick"]) for e in ev if _is(e, "PREPB", bank=0)
            and macs[32 * 6 - 1] < e["tick"]] == [macs[32 * 6 - 1] + t.nRTP]
    rep = check_log(r.log, spec)
    assert rep.ok, rep.summary()


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
    for c in ("MACAB", "RDRES"):
        assert r.command_counts[c] == base.command_counts[c]
    # the input goes to GRF_A as register-row WRs instead of GWRITE
    assert r.command_counts.get("GWRITE", 0) == 0
    assert (r.command_counts["WR"] - base.command_counts.get("WR", 0)
            >= base.command_counts["GWRITE"])
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


def test_grf_b_row_after_the_weights_must_fit():
    """The GRF_B writes go to the row after the weights: a kernel whose weights end at the
    bank's last row is refused under "hbm-pim" (not on a preset without the protocol), and
    so is a kernel whose GRF_B row is a reserved row; the engine refuses it too."""
    spec = get_spec(SAMSUNG)
    n_rows = spec.org.rows
    k = GemvKernel(n_vectors=1, n_chunks=1, gw_per_chunk=1, rows_per_chunk=2, macs_per_row=1,
                   n_res=1, base_row=n_rows - 2)
    with pytest.raises(ConfigError, match=r"its weights and the result row after them need "
                                          rf"rows {n_rows - 2}\.\.{n_rows}"):
        run_pim(spec, [k])
    run_pim("b200-hbm3e-pim", [k])
    k = GemvKernel(n_vectors=1, n_chunks=1, gw_per_chunk=1, rows_per_chunk=2, macs_per_row=1,
                   n_res=1, base_row=ROW_PARK - 2)
    with pytest.raises(ConfigError, match=r"which hold row 0x1000"):
        run_pim(spec, [k])
    from sieve import _dram
    from sieve.dram.device import DramDevice
    eng = DramDevice(spec, 1)._engine
    steps, ptr = mode_sequences(spec)
    n_pcs = spec.org.pseudochannels
    kern = np.array([[1, 1, 1, 2, 1, 1, n_rows - 2, 0, 1]], dtype=np.int64)
    z = np.zeros(n_pcs, dtype=np.int64)
    with pytest.raises(ValueError, match="writes the row after its weights"):
        _dram.run_pim(eng, kern, np.array([0] + [1] * n_pcs, dtype=np.int64),
                      np.zeros(1, dtype=np.int32), np.full(1, -1, dtype=np.int32), 0, 1, 0,
                      np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), z, z.copy(),
                      z.copy(), steps=steps, seq_ptr=ptr)


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
    assert first.constraint.startswith("MACPB needs the pseudo-channel in all-bank PIM mode")
    assert "it is in all-bank mode (HAB)" in first.constraint
    # the toggles are now out of phase: the PC ends in HAB_PIM
    assert "the log ends with the pseudo-channel in all-bank PIM mode" in \
        rep.violations[-1].constraint


def test_checker_flags_missing_abmr_activation(samsung_log):
    spec, log = samsung_log
    # the fourth ABMR write transaction's ACT and WR (its PRE of a closed bank is a no-op)
    bad = _without(log, lambda x: _pc0(x) & (x["cmd"] == CI["ACT"]) & (x["row"] == ROW_ABMR),
                   3)
    bad = _without(bad, lambda x: _pc0(x) & (x["cmd"] == CI["WR"]) & (x["row"] == ROW_ABMR),
                   3)
    rep = check_log(bad, spec)
    assert set(rep.by_family()) == {"mode"}
    texts = {v.constraint for v in rep.violations}
    # the input goes to GRF_A as register-row WRs, GRF writes only in all-bank mode
    assert ("WR to a GRF register (register row 0x3fff, column 8..15 or 24..31) needs the "
            "pseudo-channel in all-bank mode (HAB or HAB_PIM); it is in single-bank mode (SB)"
            ) in texts
    assert ("ACTPB needs the pseudo-channel in all-bank mode (HAB or HAB_PIM); it is in "
            "single-bank mode (SB)") in texts
    assert any(t.startswith("MACPB needs") for t in texts)


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
    """The first HAB -> HAB_PIM write and the vector's first MACPB swapped (issue slots
    exchanged): that MACPB now runs in HAB."""
    spec, log = samsung_log
    bad = log.copy()
    w = np.flatnonzero(_pc0(bad) & (bad["cmd"] == CI["WR"]) & (bad["row"] == ROW_REG)
                       & (bad["col"] == 0))[0]
    m = np.flatnonzero(_pc0(bad) & (bad["cmd"] == CI["MACPB"]))[0]
    for f in ("tick", "seq"):
        bad[f][w], bad[f][m] = log[f][m], log[f][w]
    rep = check_log(bad, spec, check_refresh=False)
    modes = [v for v in rep.violations if v.family == "mode"]
    assert modes and modes[0].index == m and modes[0].tick == log["tick"][w]
    assert modes[0].constraint == ("MACPB needs the pseudo-channel in all-bank PIM mode "
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


@pytest.mark.parametrize("rows,cols,batch,pimsim_ck", [
    (4096, 4096, 1, 13166), (8192, 4096, 1, 26337), (4096, 4096, 4, 51941),
    (1024, 4096, 1, 13166)])
def test_pimsimulators_layout_within_one_percent_of_pimsimulator(rows, cols, batch, pimsim_ck):
    """In PIMSimulator's layout (row-only, 8 output rows per PIM block and input pass) sieve's
    GEMV without its read-back (PIMSimulator's count has none) is within 1 % of PIMSimulator's
    cycles (SAITPublic/PIMSimulator@b464dde, PIMBenchFixture; docs/validation.md, *PIM mode
    protocol against PIMSimulator*). The row-only layout is not (off by more than 5 %), where
    a block has other than 8 rows: 8192 x 4096 (one pass for 16 rows) and 1024 x 4096 (2
    rows, not padded)."""
    spec = get_spec(SAMSUNG)
    ratio = {}
    for name, kw in (("pimsim", {"tile_rows": 8}), ("row-only", {})):
        lay = pim.gemv_layout(spec, rows, cols, batch, col_groups=1, **kw)
        r = run_pim(spec, lay.kernels())
        ratio[name] = (r.time_ns - r.overhead_ns["readback"]) / pimsim_ck
    assert ratio["pimsim"] == pytest.approx(1.0, abs=0.01)
    if rows != 4096:
        assert abs(ratio["row-only"] - 1.0) > 0.05
