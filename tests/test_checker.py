"""Tests for sieve.dram.checker: tight gates per timing row, state, alignment, address, refresh,
log format, agreement with a naive reference model, and speed."""

from __future__ import annotations

import numpy as np
import pytest
from checker_reference import Builder, prepare, random_legal_log, ref_check, report_set

from sieve.dram.checker import LOG_DTYPE, CheckReport, check_log, constraint_family, make_log
from sieve.dram.commands import (
    BUS_COL,
    COMMAND_INDEX,
    COMMANDS,
    LEVEL_INDEX,
    LEVELS,
    PARITY_COMMANDS,
)
from sieve.dram.presets import get_spec
from sieve.errors import ConfigError, TimingViolation, TraceFormatError

PRESETS = ["hbm3-6400", "hbm2-2000", "b200-hbm3e-pim", "samsung-hbm2-pim", "attacc-hbm3-pim"]
SCOPE = [LEVEL_INDEX[c.scope] for c in COMMANDS]
ROW = 7  # the row every hand-built sequence uses


def families(report: CheckReport) -> set[str]:
    return {v.family for v in report.violations}


# ---------------------------------------------------------------------------------------------
# One tight gate per resolved constraint row, generated from the spec
# ---------------------------------------------------------------------------------------------

def _candidates(spec, level: int):
    """Banks under node (0, 0, ...) at ``level``, deeper levels varying slowest, so that
    consecutive candidates differ as high up as possible (isolating the row's level)."""
    o = spec.org
    counts = [o.total_channels, o.pseudochannels, o.sids, o.bankgroups, o.banks]
    ranges = [range(counts[lv]) if lv > level else [0] for lv in range(5)]
    cands = [(c, p, s, g, b) for b in ranges[4] for g in ranges[3] for s in ranges[2]
             for p in ranges[1] for c in ranges[0]]
    return cands


def _cut(addr, cmd, spec):
    if COMMANDS[cmd].name in PARITY_COMMANDS:
        # addressed through bank 0 / 1 of bank group 0: the parity of addr's bank in its PC
        o = spec.org
        return tuple(addr[:2]) + (0, 0, ((addr[2] * o.bankgroups + addr[3]) * o.banks
                                         + addr[4]) % 2)
    return tuple(addr[:2]) if SCOPE[cmd] < 4 else tuple(addr)


def _row_cases():
    cases = []
    for name in PRESETS:
        spec = get_spec(name)
        seen = set()
        for i, r in enumerate(spec.resolved_constraints()):
            if SCOPE[r.preceding] < r.level or SCOPE[r.following] < r.level:
                continue
            key = (r.level, r.preceding, r.following, r.latency, r.window, r.sibling, r.source)
            if key in seen:
                continue
            seen.add(key)
            rid = (f"{name}-{LEVELS[r.level]}-{COMMANDS[r.preceding].name}-"
                   f"{COMMANDS[r.following].name}-{r.source.replace(' ', '')}"
                   f"{f'-w{r.window}' if r.window > 1 else ''}{'-sib' if r.sibling else ''}")
            cases.append(pytest.param(name, i, id=rid))
    return cases


def build_gate(spec, r):
    """A state-legal sequence prefix + P (xW) + fixes, and F's address.

    Returns (builder, index of the designated P, F name, F addr, earliest legal F tick).
    """
    p_name, f_name = COMMANDS[r.preceding].name, COMMANDS[r.following].name
    cands = _candidates(spec, r.level)
    if r.sibling:
        f_addr = [0, 0, 0, 0, 0]
        f_addr[r.level] = 1
        p_addrs = [cands[0]]
    else:
        p_addrs = cands[:r.window]
        f_addr = cands[r.window] if len(cands) > r.window else cands[0]
        if r.level == 4:
            f_addr = cands[0]
    f_addr = _cut(f_addr, r.following, spec)
    p_addrs = [_cut(a, r.preceding, spec) for a in p_addrs]
    if (r.level < 4 and f_name in PARITY_COMMANDS and p_name in PARITY_COMMANDS
            and not r.sibling):
        f_addr = f_addr[:4] + (1 - p_addrs[0][4],)  # the other parity: this row alone binds
    b = Builder(spec)
    gap = max(x.latency for x in spec.resolved_constraints()) + 16
    # F's own prerequisites first (as long ago as possible), then P's.
    prepare(b, f_name, f_addr, ROW)
    p_index = None
    for k, pa in enumerate(p_addrs):
        prepare(b, p_name, pa, ROW)
        floor = b.now + gap if k == 0 else None
        at = max(b.model.earliest(p_name, pa), floor if floor is not None else b.now)
        tpc = spec.timing.ticks_per_ck
        if COMMANDS[r.preceding].bus == BUS_COL:
            at = -(-at // tpc) * tpc
        elif k == 0 and COMMANDS[r.following].bus == BUS_COL and (at + r.latency) % tpc:
            at += tpc - (at + r.latency) % tpc  # make P + latency a rising edge
        idx = len(b.records)
        b.add(p_name, pa, row=ROW, at=at)
        if k == 0:
            p_index = idx
    # F's prerequisites again if P undid them (e.g. P = ACTAB opened F's bank)
    prepare(b, f_name, f_addr, ROW)
    earliest = max(b.model.earliest(f_name, f_addr), b.now)
    if COMMANDS[r.following].bus == BUS_COL:
        tpc = spec.timing.ticks_per_ck
        earliest = -(-earliest // tpc) * tpc
    return b, p_index, f_name, f_addr, earliest


def _with_f(b, f_name, f_addr, tick):
    log = b.log()
    full = tuple(f_addr) + (-1,) * (5 - len(f_addr))
    col = 0 if COMMANDS[COMMAND_INDEX[f_name]].bus == BUS_COL else -1
    rec = np.array([(tick, len(log), COMMAND_INDEX[f_name], *full, ROW, col)], dtype=LOG_DTYPE)
    return np.concatenate([log, rec])


@pytest.mark.parametrize("preset, row_index", _row_cases())
def test_timing_row_tight_gate(preset, row_index):
    """F at its earliest legal tick passes; F at (P + latency - 1) violates exactly this row."""
    spec = get_spec(preset)
    r = spec.resolved_constraints()[row_index]
    b, p_index, f_name, f_addr, earliest = build_gate(spec, r)
    p_tick = int(b.records[p_index][0])
    bound = p_tick + r.latency
    assert earliest >= bound

    legal = _with_f(b, f_name, f_addr, earliest)
    # a two-command gate does not follow a PIM mode protocol (rule 6 has its own tests)
    rep = check_log(legal, spec, check_modes=False)
    assert rep.ok, rep.summary()

    early = _with_f(b, f_name, f_addr, bound - 1)
    rep = check_log(early, spec, check_modes=False)
    fam = constraint_family(r.source)
    f_index = len(early) - 1
    hits = [v for v in rep.violations if v.index == f_index and v.prev_index == p_index
            and v.family == fam and v.required_tick == bound and r.source in v.constraint]
    assert hits, rep.summary(50)
    # the vectorised checker agrees with the naive reference on every timing/state violation
    assert report_set(rep) == ref_check(early, spec)
    if bound == earliest:
        # the row is the binding one: everything reported is this row or an exact tie
        # (plus "alignment" when F is a column command one tick off its edge)
        extra = [v for v in rep.violations
                 if v.family != "alignment" and v.required_tick != bound]
        assert not extra, rep.summary(50)
        if COMMANDS[r.following].bus != BUS_COL or spec.timing.ticks_per_ck == 1:
            assert "alignment" not in families(rep)


def test_gates_isolate_most_rows():
    """Most rows bind on their own in the generated gate (a dominated row is still checked
    above, but only at P + latency - 1); guards against the gate builder degrading."""
    total = isolated = 0
    for preset in PRESETS:
        spec = get_spec(preset)
        for r in spec.resolved_constraints():
            if SCOPE[r.preceding] < r.level or SCOPE[r.following] < r.level:
                continue
            b, p_index, _, _, earliest = build_gate(spec, r)
            total += 1
            isolated += earliest == int(b.records[p_index][0]) + r.latency
    assert isolated >= 0.8 * total, (isolated, total)


def test_every_family_of_every_preset_is_named():
    for preset in PRESETS:
        spec = get_spec(preset)
        fams = {constraint_family(r.source) for r in spec.resolved_constraints()}
        assert fams <= {"bus", "PIM", "tBL", "tCCD", "tRTW", "tWTR", "tRTP", "tWR", "tRRD",
                        "tFAW", "tRAS", "tRP", "tRC", "tPPD", "tRFC", "tRREFD", "tRCD",
                        "tCWL"}, fams


@pytest.mark.parametrize("source, family", [
    ("nRCDRD", "tRCD"), ("nRCDWR", "tRCD"), ("nCCDR", "tCCD"), ("nRRDL", "tRRD"),
    ("nCWL + nBL + nWTRS", "tWTR"), ("nCWL + nBL + nWR", "tWR"), ("nRTP + nRP", "tRTP"),
    ("nRP + nRTP", "tRTP"), ("nCWL + nBL + nWR + nRP", "tWR"), ("nRFCpb", "tRFC"),
    ("nFAW", "tFAW"), ("nBL", "tBL"), ("nCCDAB", "PIM"), ("nMACRD", "PIM"),
    ("row command bus (ACT)", "bus"), ("nRREFD", "tRREFD"), ("nPPD", "tPPD"),
])
def test_constraint_family_from_source(source, family):
    assert constraint_family(source) == family


# ---------------------------------------------------------------------------------------------
# Hand-written physics gates (numbers from the presets, so a wrong table fails here too)
# ---------------------------------------------------------------------------------------------

def test_hbm3_act_to_read_uses_nrcdrd_plus_act_bus_cycles():
    # nRCDRD 31 CK x 2 ticks + (ACT: 3 bus ticks - 1) - (RD: 2 bus ticks - 1) = 63 ticks
    spec = get_spec("hbm3-6400")
    ok = make_log([(1, "ACT", 0, 0, 0, 0, 0, 5), (64, "RD", 0, 0, 0, 0, 0, 5, 0)])
    assert check_log(ok, spec).ok
    bad = make_log([(2, "ACT", 0, 0, 0, 0, 0, 5), (64, "RD", 0, 0, 0, 0, 0, 5, 0)])
    rep = check_log(bad, spec)
    assert rep.by_family() == {"tRCD": 1}
    v = rep.violations[0]
    assert (v.index, v.prev_index, v.tick, v.required_tick) == (1, 0, 64, 65)
    assert v.constraint == "bank ACT->RD nRCDRD (63 ticks)"


def test_hbm3_tfaw_window_counts_the_fourth_most_recent_act():
    # nRRDS 4 CK = 8 ticks, nFAW 24 CK = 48 ticks (ACT->ACT: bus adjustments cancel)
    spec = get_spec("hbm3-6400")
    acts = [(8 * k, "ACT", 0, 0, 0, k, 0, 1) for k in range(4)]  # four bank groups
    ok = make_log(acts + [(48, "ACT", 0, 0, 0, 0, 1, 1)])
    assert check_log(ok, spec).ok
    bad = make_log(acts + [(47, "ACT", 0, 0, 0, 0, 1, 1)])
    rep = check_log(bad, spec)
    assert rep.by_family() == {"tFAW": 1}
    assert rep.violations[0].prev_index == 0 and rep.violations[0].required_tick == 48


def test_hbm2_tfaw_is_implied_by_nrrds():
    # HBM2-2000: nFAW 15 CK < 4 x nRRDS 16 CK, so four ACTs at nRRDS never trip tFAW
    spec = get_spec("hbm2-2000")
    acts = [(4 * k, "ACT", 0, 0, 0, k, 0, 1) for k in range(4)]
    assert check_log(make_log(acts + [(16, "ACT", 0, 0, 0, 0, 1, 1)]), spec).ok
    rep = check_log(make_log(acts + [(15, "ACT", 0, 0, 0, 0, 1, 1)]), spec)
    assert rep.by_family() == {"tRRD": 1}


def test_hbm3_other_sid_read_spacing_is_nccdr_sibling():
    spec = get_spec("hbm3-6400")  # nCCDR 3 CK = 6 ticks between SIDs; nBL 2 CK = 4 ticks per PC
    pre = [(0, "ACT", 0, 0, 0, 0, 0, 1), (8, "ACT", 0, 0, 1, 0, 0, 1)]
    ok = make_log(pre + [(100, "RD", 0, 0, 0, 0, 0, 1, 0), (106, "RD", 0, 0, 1, 0, 0, 1, 0)])
    assert check_log(ok, spec).ok
    bad = make_log(pre + [(100, "RD", 0, 0, 0, 0, 0, 1, 0), (104, "RD", 0, 0, 1, 0, 0, 1, 0)])
    rep = check_log(bad, spec)
    assert rep.by_family() == {"tCCD": 1}
    assert "nCCDR" in rep.violations[0].constraint and "other sid" in rep.violations[0].constraint


def test_same_tick_commands_are_ordered_by_seq():
    spec = get_spec("hbm2-2000")
    log = make_log([(0, "ACT", 0, 0, 0, 0, 0, 1), (0, "ACT", 0, 1, 0, 0, 0, 1)])
    rep = check_log(log, spec)  # same channel, other PC: only the 2-CK row-bus occupancy
    assert rep.by_family() == {"bus": 1}
    assert rep.violations[0].index == 1 and rep.violations[0].prev_index == 0


def test_channels_are_independent_and_log_order_does_not_matter(rng):
    spec = get_spec("hbm3-6400")
    log = random_legal_log(spec, 800, rng, channels=(0, 3))
    log["tick"][100] -= 3  # one violation somewhere
    ref = check_log(log, spec)
    perm = rng.permutation(len(log))
    shuffled = check_log(log[perm], spec)
    assert ref.n_violations == shuffled.n_violations > 0
    assert sorted((perm[v.index], v.family) for v in shuffled.violations) == \
        sorted((v.index, v.family) for v in ref.violations)


# ---------------------------------------------------------------------------------------------
# Bank state
# ---------------------------------------------------------------------------------------------

def _state_only(log, spec):
    rep = check_log(log, spec, check_modes=False)
    return [v for v in rep.violations if v.family == "state"], rep


def test_read_to_closed_bank_and_wrong_row():
    spec = get_spec("hbm2-2000")
    st, _ = _state_only(make_log([(0, "RD", 0, 0, 0, 0, 0, 3, 0)]), spec)
    assert len(st) == 1 and "closed" in st[0].constraint and st[0].prev_index == -1
    st, _ = _state_only(make_log([(0, "ACT", 0, 0, 0, 0, 0, 3),
                                  (100, "RD", 0, 0, 0, 0, 0, 4, 0)]), spec)
    assert len(st) == 1 and "row 3 is open" in st[0].constraint and st[0].prev_index == 0


def test_act_to_open_bank_and_refab_with_open_bank():
    spec = get_spec("hbm2-2000")
    st, _ = _state_only(make_log([(0, "ACT", 0, 0, 0, 0, 0, 3), (100, "ACT", 0, 0, 0, 0, 0, 4),
                                    (1000, "REFab", 0, 0)]), spec)
    assert [v.index for v in st] == [1, 2]
    assert "REFab needs every bank closed" in st[1].constraint
    # after PRE the bank is closed again: no state violation
    st, _ = _state_only(make_log([(0, "ACT", 0, 0, 0, 0, 0, 3), (100, "PRE", 0, 0, 0, 0, 0),
                                  (1000, "REFab", 0, 0)]), spec)
    assert st == []


def test_rda_closes_and_refpb_needs_closed():
    spec = get_spec("hbm2-2000")
    st, _ = _state_only(make_log([(0, "ACT", 0, 0, 0, 0, 0, 3), (20, "RDA", 0, 0, 0, 0, 0, 3, 0),
                                  (60, "RD", 0, 0, 0, 0, 0, 3, 0)]), spec)
    assert [v.index for v in st] == [2]
    st, _ = _state_only(make_log([(0, "ACT", 0, 0, 0, 0, 1, 3), (100, "REFpb", 0, 0, 0, 0, 1)]),
                        spec)
    assert [v.index for v in st] == [1]


def test_macab_needs_actab():
    spec = get_spec("b200-hbm3e-pim")
    st, _ = _state_only(make_log([(0, "MACAB", 0, 0, -1, -1, -1, 2, 0)]), spec)
    assert len(st) == 1 and "MACAB row 2 needs every bank open" in st[0].constraint
    st, _ = _state_only(make_log([(0, "ACTAB", 0, 0, -1, -1, -1, 2),
                                  (200, "MACAB", 0, 0, -1, -1, -1, 2, 0),
                                  (300, "MACAB", 0, 0, -1, -1, -1, 3, 0)]), spec)
    assert [v.index for v in st] == [2]


def test_bundles_need_their_own_rows():
    """Bank bundles (ACTSB / MACSB / PRESB address one SID): a bundle's MAC needs its own SID
    open at its row, whatever the other bundle holds; ACTSB needs the SID's banks closed; a
    bank-level PRE inside a bundle breaks that bundle's next MAC only; an all-bank ACTAB opens
    both bundles; REFab needs both closed."""
    spec = get_spec("duplex-logic-pim")  # one row buffer shared by PIM and normal commands
    b = [(0, "ACTSB", 0, 0, 0, -1, -1, 2), (10, "ACTSB", 0, 0, 1, -1, -1, 3)]
    st, _ = _state_only(make_log(b[:1] + [(200, "MACSB", 0, 0, 0, -1, -1, 2, 0),
                                          (300, "MACSB", 0, 0, 1, -1, -1, 2, 0)]), spec)
    assert [v.index for v in st] == [2]
    assert "every bank of the SID is closed" in st[0].constraint
    st, _ = _state_only(make_log(b + [(200, "MACSB", 0, 0, 0, -1, -1, 2, 0),
                                      (204, "MACSB", 0, 0, 1, -1, -1, 3, 0),
                                      (300, "ACTSB", 0, 0, 0, -1, -1, 4)]), spec)
    assert [v.index for v in st] == [4] and "needs every bank closed" in st[0].constraint
    st, _ = _state_only(make_log(b + [(100, "PRE", 0, 0, 1, 2, 1),
                                      (300, "MACSB", 0, 0, 0, -1, -1, 2, 0),
                                      (310, "MACSB", 0, 0, 1, -1, -1, 3, 0)]), spec)
    assert [v.index for v in st] == [4]
    assert "bank 9 of the SID is closed" in st[0].constraint and st[0].prev_index == 2
    st, _ = _state_only(make_log([(0, "ACTAB", 0, 0, -1, -1, -1, 5),
                                  (200, "MACSB", 0, 0, 1, -1, -1, 5, 0),
                                  (300, "PRESB", 0, 0, 1, -1, -1),
                                  (400, "MACSB", 0, 0, 0, -1, -1, 5, 0),
                                  (500, "MACSB", 0, 0, 1, -1, -1, 5, 0)]), spec)
    assert [v.index for v in st] == [4]
    st, _ = _state_only(make_log(b[:1] + [(2000, "REFab", 0, 0)]), spec)
    assert len(st) == 1 and "bank 0 of the PC has row 2 open" in st[0].constraint


def test_dual_row_buffers_separate_pim_and_normal_rows():
    # ACTAB then RD at the same row: with dual buffers the normal buffer is still closed
    seq = [(0, "ACTAB", 0, 0, -1, -1, -1, 2), (200, "RD", 0, 0, 0, 0, 0, 2, 0)]
    st, _ = _state_only(make_log(seq), get_spec("b200-hbm3e-pim"))
    assert len(st) == 1 and "normal buffer; the bank is closed" in st[0].constraint
    shared = get_spec("samsung-hbm2-pim").override({"pim.bank_parity": False})
    st, rep = _state_only(make_log(seq), shared)
    assert st == [] and rep.ok, rep.summary()
    # ACT in one bank, then ACTAB: fine with dual buffers, a conflict with a shared buffer
    seq = [(0, "ACT", 0, 0, 0, 0, 0, 1), (200, "ACTAB", 0, 0, -1, -1, -1, 2)]
    st, _ = _state_only(make_log(seq), get_spec("b200-hbm3e-pim"))
    assert st == []
    st, _ = _state_only(make_log(seq), shared)
    assert len(st) == 1 and "bank 0 of the PC has row 1 open" in st[0].constraint
    # a PRE of one bank after ACTAB (shared buffer) breaks the next MACAB only
    seq = [(0, "ACTAB", 0, 0, -1, -1, -1, 2), (60, "PRE", 0, 0, 0, 1, 2),
           (200, "MACAB", 0, 0, -1, -1, -1, 2, 0)]
    st, _ = _state_only(make_log(seq), shared)
    assert len(st) == 1 and "bank 6 of the PC is closed" in st[0].constraint
    assert st[0].prev_index == 1


def test_bank_parity_rows_open_and_close_one_parity():
    """ACTPB / PREPB through bank 0 (1) open / close every even (odd) bank of the PC (one
    shared buffer): the normal commands see those rows; the other parity stays closed."""
    spec = get_spec("samsung-hbm2-pim")
    # ACTPB even, then RD of bank 6 (bank group 1, bank 2: even) at that row: legal; of bank 5
    # (odd): closed
    seq = [(0, "ACTPB", 0, 0, 0, 0, 0, 2), (200, "RD", 0, 0, 0, 1, 2, 2, 0),
           (300, "RD", 0, 0, 0, 1, 1, 2, 0)]
    st, _ = _state_only(make_log(seq), spec)
    assert len(st) == 1 and st[0].index == 2 and "the bank is closed" in st[0].constraint
    # ACT of an odd bank, then ACTPB odd: a conflict, named by bank within the PC
    seq = [(0, "ACT", 0, 0, 0, 2, 3, 1), (200, "ACTPB", 0, 0, 0, 0, 1, 2)]
    st, _ = _state_only(make_log(seq), spec)
    assert len(st) == 1 and "bank 11 of the parity has row 1 open" in st[0].constraint
    # a PRE of one even bank after ACTPB even breaks the next MACPB even, not MACPB odd
    seq = [(0, "ACTPB", 0, 0, 0, 0, 0, 2), (10, "ACTPB", 0, 0, 0, 0, 1, 2),
           (60, "PRE", 0, 0, 0, 3, 2), (200, "MACPB", 0, 0, 0, 0, 0, 2, 0),
           (204, "MACPB", 0, 0, 0, 0, 1, 2, 0)]
    st, _ = _state_only(make_log(seq), spec)
    assert len(st) == 1 and st[0].index == 3 and "bank 14 of the parity is closed" in \
        st[0].constraint
    assert st[0].prev_index == 2
    # PREPB odd closes the odd banks only: ACT of an odd bank is then legal, of an even one not
    seq = [(0, "ACTPB", 0, 0, 0, 0, 0, 2), (10, "ACTPB", 0, 0, 0, 0, 1, 2),
           (100, "PREPB", 0, 0, 0, 0, 1), (200, "ACT", 0, 0, 0, 2, 3, 4),
           (300, "ACT", 0, 0, 0, 2, 2, 4)]
    st, _ = _state_only(make_log(seq), spec)
    assert len(st) == 1 and st[0].index == 4


def test_refab_needs_pim_buffers_closed_too():
    spec = get_spec("b200-hbm3e-pim")
    st, _ = _state_only(make_log([(0, "ACTAB", 0, 0, -1, -1, -1, 2), (2000, "REFab", 0, 0)]),
                        spec)
    assert len(st) == 1 and "PIM buffer" in st[0].constraint


# ---------------------------------------------------------------------------------------------
# Alignment, address, command set, order
# ---------------------------------------------------------------------------------------------

def test_misaligned_column_command():
    spec = get_spec("hbm3-6400")
    rep = check_log(make_log([(1, "ACT", 0, 0, 0, 0, 0, 1), (67, "RD", 0, 0, 0, 0, 0, 1, 0)]),
                    spec)
    assert rep.by_family() == {"alignment": 1}
    assert rep.violations[0].required_tick == 68
    # row commands may use either edge
    assert check_log(make_log([(1, "ACT", 0, 0, 0, 0, 0, 1)]), spec).ok


@pytest.mark.parametrize("field, value", [("ch", 16), ("pc", 2), ("sid", 2), ("bg", 4),
                                          ("bank", -1), ("row", 8192), ("col", 32)])
def test_address_out_of_range(field, value):
    spec = get_spec("hbm3-6400")
    log = make_log([(0, "ACT", 0, 0, 0, 0, 0, 1), (64, "RD", 0, 0, 0, 0, 0, 1, 0)])
    log[1][field] = value
    rep = check_log(log, spec)
    assert rep.by_family().get("address") == 1
    v = next(v for v in rep.violations if v.family == "address")
    assert v.index == 1 and f"{field}={value}" in v.constraint


def test_pc_scope_commands_ignore_lower_fields_and_pim_needs_pim_spec():
    log = make_log([(0, "PREA", 0, 1, 5, 9, 9)])  # sid/bg/bank are don't-care for PREA
    assert check_log(log, "hbm3-6400").ok
    rep = check_log(make_log([(0, "GWRITE", 0, 0, -1, -1, -1, -1, 0)]), "hbm3-6400")
    assert rep.by_family() == {"command": 1}
    assert check_log(make_log([(0, "GWRITE", 0, 0, -1, -1, -1, -1, 0)]), "b200-hbm3e-pim").ok


def test_tick_going_back_in_seq_order_is_reported():
    log = make_log([(100, "ACT", 0, 0, 0, 0, 0, 1), (50, "ACT", 0, 1, 0, 0, 0, 1)])
    rep = check_log(log, "hbm2-2000")
    assert rep.by_family() == {"order": 1}


# ---------------------------------------------------------------------------------------------
# Refresh
# ---------------------------------------------------------------------------------------------

def test_missing_refresh_is_reported_per_pseudochannel():
    spec = get_spec("hbm2-2000")  # nREFI 3900 ticks, limit 9 x 3900 = 35100
    limit = 9 * 3900
    log = make_log([(0, "REFab", 0, 0), (0 + 400, "REFab", 0, 1),
                    (limit, "REFab", 0, 0), (limit + 400, "REFab", 0, 1),
                    (2 * limit + 1, "REFab", 0, 0), (2 * limit + 400, "REFab", 0, 1)])
    rep = check_log(log, spec)
    assert rep.by_family() == {"refresh": 1}
    v = rep.violations[0]
    assert (v.index, v.prev_index, v.required_tick) == (4, 2, 2 * limit)
    assert check_log(log, spec, check_refresh=False).ok
    # a long log with no refresh at all: both PCs, from tick 0 to the end of the span
    rep = check_log(make_log([(limit + 5, "ACT", 0, 0, 0, 0, 0, 1)]), spec)
    assert rep.by_family() == {"refresh": 2}
    assert all(v.index == -1 and v.tick == limit + 5 for v in rep.violations)


def test_per_bank_refresh_mode_needs_every_bank():
    spec = get_spec("hbm2-2000").override(refresh="perbank")
    limit = 9 * 3900
    refs = [(k * 10, "REFpb", 0, 0, 0, k // 4, k % 4) for k in range(16)]
    refs += [(200, "REFab", 0, 1)]
    log = make_log(refs + [(limit + 5, "ACT", 0, 0, 0, 0, 0, 1)])
    rep = check_log(log, spec)
    # 15 banks of PC 0 (REFpb at 10..150) and all 16 of PC 1 (REFab at 200) are still fine;
    # bank 0 of PC 0 was refreshed at tick 0 -> limit + 5 - 0 > limit
    assert rep.by_family() == {"refresh": 1}
    assert rep.violations[0].prev_index == 0 and rep.violations[0].index == -1
    # the same log in all-bank mode: PC 0 never got a REFab
    rep = check_log(log, get_spec("hbm2-2000"))
    assert rep.by_family() == {"refresh": 1}


# ---------------------------------------------------------------------------------------------
# Log format errors, report API
# ---------------------------------------------------------------------------------------------

def test_wrong_dtype_names_missing_fields():
    bad = np.zeros(3, dtype=[("tick", np.int64), ("cmd", np.int16)])
    with pytest.raises(TraceFormatError, match="seq, ch, pc, sid, bg, bank, row, col"):
        check_log(bad, "hbm3-6400")
    with pytest.raises(TraceFormatError, match="structured array"):
        check_log(np.zeros((3, 10)), "hbm3-6400")
    log = make_log([(0, "ACT", 0, 0, 0, 0, 0, 1)])
    log["cmd"][0] = 99
    with pytest.raises(TraceFormatError, match="cmd 99"):
        check_log(log, "hbm3-6400")
    log = make_log([(0, "ACT", 0, 0, 0, 0, 0, 1), (10, "ACT", 0, 0, 0, 0, 1, 1)])
    log["seq"] = 4
    with pytest.raises(TraceFormatError, match="share seq"):
        check_log(log, "hbm3-6400")
    with pytest.raises(ConfigError, match="unknown"):
        check_log(log, "hbm9")
    with pytest.raises(TraceFormatError, match="unknown command"):
        make_log([(0, "NOP", 0, 0)])


def test_empty_log_and_extra_fields_are_fine():
    assert check_log(np.zeros(0, dtype=LOG_DTYPE), "hbm3-6400").ok
    dt = np.dtype(LOG_DTYPE.descr + [("extra", np.float32)])
    log = np.zeros(1, dtype=dt)
    log["cmd"] = COMMAND_INDEX["PREA"]
    assert check_log(log, "hbm3-6400").ok


def test_report_truncation_summary_and_raise():
    spec = get_spec("hbm2-2000")
    log = make_log([(0, "RD", 0, 0, 0, 0, 0, 1, 0)] + [
        (10 * k, "RD", 0, 0, 0, 0, 0, 1, 0) for k in range(1, 20)])
    rep = check_log(log, spec, max_reports=5)
    assert rep.n_violations == 20 and len(rep.violations) == 5 and rep.truncated
    assert rep.by_family() == {"state": 20}
    assert "20 violations (state 20)" in rep.summary()
    with pytest.raises(TimingViolation, match="state"):
        rep.raise_if_violated()
    ok = check_log(make_log([(0, "ACT", 0, 0, 0, 0, 0, 1)]), spec)
    assert ok.raise_if_violated() is ok and ok.summary().endswith("OK")
    assert ok.n_checked_pairs == 0 and ok.n_commands == 1


# ---------------------------------------------------------------------------------------------
# Agreement with the naive reference on random legal logs and their mutations
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("preset", PRESETS)
def test_random_logs_agree_with_reference(preset, rng):
    spec = get_spec(preset)
    log = random_legal_log(spec, 1200, rng)
    rep = check_log(log, spec, check_modes=False)  # random commands, no mode protocol
    assert rep.ok, rep.summary()
    assert rep.n_checked_pairs > 10 * len(log)
    found = 0
    for _ in range(25):
        m = log.copy()
        for i in rng.choice(len(m), int(rng.integers(1, 5)), replace=False):
            op = rng.integers(3)
            if op == 0:
                m["tick"][i] = max(0, int(m["tick"][i]) - int(rng.integers(1, 40)))
            elif op == 1 and m["row"][i] >= 0:
                m["row"][i] = (m["row"][i] + 1) % spec.org.rows
            else:
                m["tick"][i] = max(0, int(m["tick"][i]) - 1)
        rep = check_log(m, spec, check_modes=False)
        expected = ref_check(m, spec)
        assert report_set(rep) == expected
        found += len(expected)
    assert found > 0


# ---------------------------------------------------------------------------------------------
# A million commands (speed is measured by benchmarks/bench_checker.py, not here)
# ---------------------------------------------------------------------------------------------

def _million_command_log(spec):
    base = random_legal_log(spec, 16000, np.random.default_rng(3), channels=(0,),
                            close_at_end=True)
    tpc = spec.timing.ticks_per_ck
    period = (int(base["tick"].max()) // tpc + 4000) * tpc
    parts = []
    for rep in range(4):
        for ch in range(16):
            p = base.copy()
            p["tick"] += rep * period
            p["seq"] += rep * len(base)
            p["ch"] = ch
            parts.append(p)
    return np.concatenate(parts)


@pytest.mark.slow
def test_million_command_log_is_checked():
    spec = get_spec("b200-hbm3e-pim")
    log = _million_command_log(spec)
    assert len(log) >= 1_000_000
    rep = check_log(log, spec)
    assert rep.ok, rep.summary()
    # and one early command in the middle is found
    log["tick"][len(log) // 2 + 7] -= 1
    assert not check_log(log, spec).ok


# ---------------------------------------------------------------------------------------------
# The spec is the only source of rows; Ramulator 2.0 traces
# ---------------------------------------------------------------------------------------------

def test_new_row_in_spec_is_enforced_without_checker_code(monkeypatch):
    from sieve.dram import spec as spec_module
    from sieve.dram.constraints import DRAM_CONSTRAINTS, TimingConstraint

    extra = (TimingConstraint("bankgroup", ("ACT",), ("PRE",), "nRAS + 100"),
             TimingConstraint("bank", ("PREA",), ("ACT",), "nRP + 1000"))
    # DramSpec.constraints() reads the rows from sieve.dram.spec's namespace
    monkeypatch.setattr(spec_module, "DRAM_CONSTRAINTS", DRAM_CONSTRAINTS + extra)
    spec = get_spec("hbm2-2000")  # nRAS 34 CK; ACT->PRE adds 1 tick for the 2-CK ACT
    log = make_log([(0, "ACT", 0, 0, 0, 1, 0, 1), (134, "PRE", 0, 0, 0, 1, 2)])
    rep = check_log(log, spec)
    assert rep.by_family() == {"tRAS": 1} and rep.violations[0].required_tick == 135
    assert "bankgroup ACT->PRE nRAS + 100" in rep.violations[0].constraint
    # a bank-level row never applies to PREA, whose scope is the pseudo-channel
    log = make_log([(0, "PREA", 0, 0), (20, "ACT", 0, 0, 0, 0, 0, 1)])
    assert check_log(log, spec).ok


def test_read_ramulator2_trace_recorder_lines(tmp_path):
    from sieve.dram.checker import read_ramulator_cmd_trace

    spec = get_spec("hbm2-2000")
    lines = ["1, ACT, 0, 1, 2, 3, 100, -1", "", "15, RD, 0, 1, 2, 3, 100, 5",
             "30, REFsb, 0, 1, 2, 0, -1, -1"]
    path = tmp_path / "cmd.ch0"
    path.write_text("\n".join(lines) + "\n")
    log = read_ramulator_cmd_trace(path, spec)
    assert log.dtype == LOG_DTYPE and len(log) == 3
    assert [COMMANDS[c].name for c in log["cmd"]] == ["ACT", "RD", "REFpb"]
    assert log[1].tolist() == (15, 1, COMMAND_INDEX["RD"], 0, 1, 0, 2, 3, 100, 5)
    rep = check_log(log, spec)
    # ACT->RD is nRCDRD 14 CK + 1 (the 2-CK ACT takes effect on its last CK) = 15 ticks
    assert rep.by_family() == {"tRCD": 1} and rep.violations[0].required_tick == 16
    with pytest.raises(TraceFormatError, match="line 1: unknown command 'NOP'"):
        read_ramulator_cmd_trace(["3, NOP, 0, 0, 0, 0, -1, -1"], spec)
    with pytest.raises(TraceFormatError, match="line 2: expected clk"):
        read_ramulator_cmd_trace(["3, PRE, 0, 0, 0, 0, -1, -1", "4, PRE, 0"], spec)
