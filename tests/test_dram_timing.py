"""Tight timing gates: every constraint family is refused at clk-1 and legal at clk.

Expected ticks are computed here from the preset's JEDEC-style numbers (CK) and command-bus
occupancy, not from the engine or its compiled rows: ``ticks = n * ticks_per_ck + (occ(p) - 1)
- (occ(f) - 1)`` (a multi-tick command takes effect on its last tick; see sieve/specs.py), then
column commands move to the next rising edge. Each gate also replays the sequence with the
following command forced one tick early and shows the independent checker flags it.
"""

from __future__ import annotations

import math

import pytest

from sieve.dram import Address, DramDevice, checker
from sieve.dram.commands import COMMAND_INDEX, COMMANDS
from sieve.dram.presets import get_spec
from sieve.errors import ConfigError, TimingViolation

COL_BUS = {c.name for c in COMMANDS if c.bus == 1}


def occ(spec, cmd: str) -> int:
    """Command-bus occupancy in ticks, from the preset's bus_ck table."""
    return int(round(spec.bus_ck.get(cmd, 1.0) * spec.timing.ticks_per_ck))


def lat(spec, ck: int, p: str, f: str) -> int:
    """A constraint of `ck` cycles between p and f, in ticks."""
    return ck * spec.timing.ticks_per_ck + (occ(spec, p) - 1) - (occ(spec, f) - 1)


def edge(spec, cmd: str, t: int) -> int:
    tpc = spec.timing.ticks_per_ck
    return math.ceil(t / tpc) * tpc if cmd in COL_BUS else t


class Seq:
    """A command sequence on a fresh device, kept so it can be replayed with a fault."""

    def __init__(self, spec_name: str, channels: int = 2):
        self.spec = get_spec(spec_name)
        self.channels = channels
        self.dev = DramDevice(self.spec, channels=channels, log=True)
        self.cmds: list[tuple[str, Address, int]] = []

    def at(self, cmd: str, addr: Address, t: int | None = None) -> int:
        """Issue `cmd` at tick t (default: its earliest legal tick); returns the tick."""
        if t is None:
            t = self.dev.earliest(cmd, addr)
        self.dev.issue(cmd, addr, t)
        self.cmds.append((cmd, addr, t))
        return t

    def gate(self, cmd: str, addr: Address, expected_raw: int) -> int:
        """Assert the earliest tick of `cmd` is exactly `expected_raw` (then edge-aligned)."""
        dev = self.dev
        assert dev.earliest(cmd, addr, aligned=False) == expected_raw
        t = edge(self.spec, cmd, expected_raw)
        assert dev.earliest(cmd, addr) == t
        assert dev.probe(cmd, addr, t)
        assert not dev.probe(cmd, addr, t - 1)
        with pytest.raises(TimingViolation):
            dev.issue(cmd, addr, expected_raw - 1)
        # the same sequence with the command forced one tick early is flagged by the checker
        bad = DramDevice(self.spec, channels=self.channels, log=True)
        for c, a, tt in self.cmds:
            bad.issue(c, a, tt)
        early = expected_raw - 1
        if cmd in COL_BUS:  # keep the early command on a rising edge: a pure timing fault
            early = t - self.spec.timing.ticks_per_ck
        bad.force_issue(cmd, addr, early)
        rep = checker.check_log(bad.log(), self.spec, check_refresh=False)
        assert not rep.ok, f"checker missed {cmd} at {early}"
        dev.issue(cmd, addr, t)
        self.cmds.append((cmd, addr, t))
        return t


A = Address(0, 0, 0, 0, 0, row=7, col=0)


def bank(ch=0, pc=0, sid=0, bg=0, ba=0, row=7, col=0) -> Address:
    return Address(ch, pc, sid, bg, ba, row, col)


# ---------------------------------------------------------------------------------------------
# Bank level
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm2-2000", "hbm3e-8000"])
def test_act_to_read_and_write_use_nrcd(name):
    s = Seq(name)
    t0 = s.at("ACT", A, 0)
    s.gate("RD", A, t0 + lat(s.spec, s.spec.timing.nRCDRD, "ACT", "RD"))
    s2 = Seq(name)
    s2.at("ACT", A, 0)
    s2.gate("WR", A, lat(s2.spec, s2.spec.timing.nRCDWR, "ACT", "WR"))


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm2-2000"])
def test_act_to_pre_same_bank_uses_nras(name):
    s = Seq(name)
    s.at("ACT", A, 0)
    s.gate("PRE", A, lat(s.spec, s.spec.timing.nRAS, "ACT", "PRE"))


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm2-2000"])
def test_pre_to_act_same_bank_uses_nrp(name):
    s = Seq(name)
    s.at("ACT", A, 0)
    tp = s.at("PRE", A, 400)  # long after tRAS, so tRC cannot bind
    s.gate("ACT", A, tp + lat(s.spec, s.spec.timing.nRP, "PRE", "ACT"))


def test_act_to_act_same_bank_uses_nrc_when_ras_plus_rp_is_shorter():
    s = Seq("hbm3-6400")
    t = s.spec.timing
    assert t.nRAS + t.nRP < t.nRC  # 45 + 26 < 72: tRC is the binding bound here
    s.at("ACT", A, 0)
    tp = s.at("PRE", A)  # at tRAS
    expected = max(lat(s.spec, t.nRC, "ACT", "ACT"), tp + lat(s.spec, t.nRP, "PRE", "ACT"))
    assert expected == lat(s.spec, t.nRC, "ACT", "ACT")
    s.gate("ACT", A, expected)


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm2-2000"])
def test_read_to_pre_uses_nrtp_and_write_to_pre_uses_nwr(name):
    s = Seq(name)
    t = s.spec.timing
    s.at("ACT", A, 0)
    tr = s.at("RD", A, 300)
    s.gate("PRE", A, tr + lat(s.spec, t.nRTP, "RD", "PRE"))
    s2 = Seq(name)
    s2.at("ACT", A, 0)
    tw = s2.at("WR", A, 300)
    s2.gate("PRE", A, tw + lat(s2.spec, t.nCWL + t.nBL + t.nWR, "WR", "PRE"))


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm2-2000"])
def test_auto_precharge_read_to_act_uses_nrtp_plus_nrp(name):
    s = Seq(name)
    t = s.spec.timing
    s.at("ACT", A, 0)
    tr = s.at("RDA", A, 300)
    s.gate("ACT", A, tr + lat(s.spec, t.nRTP + t.nRP, "RDA", "ACT"))


# ---------------------------------------------------------------------------------------------
# Bank group / SID / pseudo-channel level
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm2-2000", "hbm3e-8000"])
def test_act_to_act_other_bank_group_uses_nrrds_and_same_group_nrrdl(name):
    s = Seq(name)
    t = s.spec.timing
    s.at("ACT", bank(bg=0), 0)
    s.gate("ACT", bank(bg=1), lat(s.spec, t.nRRDS, "ACT", "ACT"))
    s2 = Seq(name)
    s2.at("ACT", bank(bg=0, ba=0), 0)
    s2.gate("ACT", bank(bg=0, ba=1), lat(s2.spec, t.nRRDL, "ACT", "ACT"))


# (hbm2-2000 and samsung-hbm2-pim have nFAW <= 4 x nRRDS: tFAW can never bind there)
@pytest.mark.parametrize("name", ["hbm3-6400", "hbm3e-8000", "attacc-hbm3-pim"])
def test_fifth_activate_waits_for_nfaw(name):
    s = Seq(name)
    t = s.spec.timing
    ticks = [s.at("ACT", bank(bg=g)) for g in range(4)]  # each at tRRD_S spacing
    assert ticks == [i * lat(s.spec, t.nRRDS, "ACT", "ACT") for i in range(4)]
    faw = lat(s.spec, t.nFAW, "ACT", "ACT")
    assert faw > ticks[3] + lat(s.spec, t.nRRDS, "ACT", "ACT")  # tFAW binds, not tRRD
    s.gate("ACT", bank(bg=0, ba=1), ticks[0] + faw)


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm2-2000", "hbm3e-8000"])
def test_column_spacing_other_group_nccds_same_group_nccdl(name):
    s = Seq(name)
    t = s.spec.timing
    for bg, ba in ((0, 0), (1, 0), (0, 1)):
        s.at("ACT", bank(bg=bg, ba=ba))
    t0 = s.at("RD", bank(bg=0, ba=0), 400)
    s.gate("RD", bank(bg=1), t0 + lat(s.spec, max(t.nCCDS, t.nBL), "RD", "RD"))
    s2 = Seq(name)
    for bg, ba in ((0, 0), (0, 1)):
        s2.at("ACT", bank(bg=bg, ba=ba))
    t0 = s2.at("RD", bank(bg=0, ba=0), 400)
    s2.gate("RD", bank(bg=0, ba=1), t0 + lat(s2.spec, t.nCCDL, "RD", "RD"))


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm3e-8000"])
def test_hbm3_diff_sid_column_spacing_uses_nccdr(name):
    s = Seq(name)
    t = s.spec.timing
    assert t.nCCDR > t.nCCDS
    s.at("ACT", bank(sid=0))
    s.at("ACT", bank(sid=1, bg=1))
    t0 = s.at("RD", bank(sid=0), 400)
    s.gate("RD", bank(sid=1, bg=1), t0 + lat(s.spec, t.nCCDR, "RD", "RD"))


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm2-2000"])
def test_write_to_read_uses_nwtrs_and_nwtrl(name):
    s = Seq(name)
    t = s.spec.timing
    s.at("ACT", bank(bg=0))
    s.at("ACT", bank(bg=1))
    tw = s.at("WR", bank(bg=0), 400)
    s.gate("RD", bank(bg=1), tw + lat(s.spec, t.nCWL + t.nBL + t.nWTRS, "WR", "RD"))
    s2 = Seq(name)
    s2.at("ACT", bank(bg=0, ba=0))
    s2.at("ACT", bank(bg=0, ba=1))
    tw = s2.at("WR", bank(bg=0, ba=0), 400)
    s2.gate("RD", bank(bg=0, ba=1), tw + lat(s2.spec, t.nCWL + t.nBL + t.nWTRL, "WR", "RD"))


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm2-2000"])
def test_read_to_write_turnaround_uses_nrtw(name):
    s = Seq(name)
    t = s.spec.timing
    s.at("ACT", bank(bg=0))
    s.at("ACT", bank(bg=1))
    tr = s.at("RD", bank(bg=0), 400)
    s.gate("WR", bank(bg=1), tr + lat(s.spec, t.nRTW, "RD", "WR"))


def test_hbm3_pre_to_pre_uses_nppd():
    s = Seq("hbm3-6400")
    t = s.spec.timing
    s.at("ACT", bank(bg=0))
    s.at("ACT", bank(bg=1))
    tp = s.at("PRE", bank(bg=0), 300)
    s.gate("PRE", bank(bg=1), tp + lat(s.spec, t.nPPD, "PRE", "PRE"))


def test_hbm2_has_no_tppd():
    s = Seq("hbm2-2000")
    s.at("ACT", bank(bg=0))
    s.at("ACT", bank(bg=1))
    tp = s.at("PRE", bank(bg=0), 300)
    # only the row command bus separates them (one CK)
    s.gate("PRE", bank(bg=1), tp + occ(s.spec, "PRE"))


# ---------------------------------------------------------------------------------------------
# Refresh
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm2-2000", "hbm3e-8000"])
def test_refab_blocks_activate_for_nrfc(name):
    s = Seq(name)
    t = s.spec.timing
    tr = s.at("REFab", bank(), 10)
    s.gate("ACT", bank(bg=2), tr + lat(s.spec, t.nRFC, "REFab", "ACT"))


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm2-2000"])
def test_refpb_blocks_its_bank_for_nrfcpb_and_others_for_nrrefd(name):
    s = Seq(name)
    t = s.spec.timing
    tr = s.at("REFpb", bank(bg=1, ba=2), 10)
    s.gate("ACT", bank(bg=1, ba=2), tr + lat(s.spec, t.nRFCpb, "REFpb", "ACT"))
    s2 = Seq(name)
    tr = s2.at("REFpb", bank(bg=1, ba=2), 10)
    s2.gate("ACT", bank(bg=3, ba=0), tr + lat(s2.spec, t.nRREFD, "REFpb", "ACT"))


def test_refresh_needs_closed_banks_and_activate_needs_a_closed_bank():
    dev = DramDevice("hbm3-6400", channels=1)
    dev.issue("ACT", A, 0)
    assert not dev.state_ok("REFab", A)
    with pytest.raises(TimingViolation, match="every bank closed"):
        dev.issue("REFab", A, 10_000)
    with pytest.raises(TimingViolation, match="open row"):
        dev.issue("ACT", A, 10_000)
    with pytest.raises(TimingViolation, match="different row"):
        dev.issue("RD", A._replace(row=8), 10_000)
    with pytest.raises(TimingViolation, match="bank is closed"):
        dev.issue("RD", bank(bg=3), 10_000)
    dev.issue("PREA", A, 10_000)
    assert dev.state_ok("REFab", A)


# ---------------------------------------------------------------------------------------------
# Command buses and channels
# ---------------------------------------------------------------------------------------------


def test_row_command_bus_is_shared_by_the_pseudo_channels_of_a_channel():
    s = Seq("hbm3-6400")
    assert occ(s.spec, "ACT") == 3 and occ(s.spec, "PRE") == 1  # 1.5 CK and 0.5 CK
    s.at("ACT", bank(pc=0), 0)
    s.gate("ACT", bank(pc=1), 3)  # other PC: only the row bus separates them
    s2 = Seq("hbm3-6400")
    s2.at("ACT", bank(pc=0), 0)
    s2.at("ACT", bank(pc=0, bg=1), 400)
    tp = s2.at("PRE", bank(pc=0), 500)
    s2.gate("ACT", bank(pc=1), tp + 1)


def test_column_command_bus_and_rising_edges():
    s = Seq("hbm3-6400")
    s.at("ACT", bank(pc=0))
    s.at("ACT", bank(pc=1), 3)
    t0 = s.at("RD", bank(pc=0), 400)
    assert t0 % 2 == 0
    s.gate("RD", bank(pc=1), t0 + occ(s.spec, "RD"))  # one column command per CK per channel


def test_channels_are_independent():
    dev = DramDevice("hbm3-6400", channels=2)
    dev.issue("ACT", bank(ch=0), 0)
    assert dev.earliest("ACT", bank(ch=1)) == 0
    dev.issue("ACT", bank(ch=1), 0)


# ---------------------------------------------------------------------------------------------
# PIM commands
# ---------------------------------------------------------------------------------------------


PC0 = Address(0, 0, row=5, col=0)
# samsung-hbm2-pim with all-bank rows (ACTAB / MACAB); the preset's own rows are one bank
# parity at a time (test_pim_parity_gates)
SAMSUNG_AB = get_spec("samsung-hbm2-pim", {"pim.bank_parity": False})


@pytest.mark.parametrize("name", ["b200-hbm3e-pim", SAMSUNG_AB, "attacc-hbm3-pim"],
                         ids=["b200-hbm3e-pim", "samsung-ab", "attacc-hbm3-pim"])
def test_pim_all_bank_gates(name):
    spec = get_spec(name)
    t = spec.timing
    s = Seq(name)
    ta = s.at("ACTAB", PC0, 0)
    tm = s.gate("MACAB", PC0, ta + lat(spec, t.nRCDRD, "ACTAB", "MACAB"))
    tm2 = s.gate("MACAB", PC0, tm + lat(spec, t.nCCDAB, "MACAB", "MACAB"))
    s.gate("RDRES", PC0, tm2 + lat(spec, t.nMACRD, "MACAB", "RDRES"))
    s2 = Seq(name)
    s2.at("ACTAB", PC0, 0)
    tm = s2.at("MACAB", PC0, 400)
    tp = s2.gate("PREAB", PC0, tm + lat(spec, t.nRTP, "MACAB", "PREAB"))
    s2.gate("ACTAB", PC0, tp + lat(spec, t.nRP, "PREAB", "ACTAB"))


@pytest.mark.parametrize("name", ["duplex-logic-pim", "b200-logic-pim"])
def test_pim_bundle_gates(name):
    """Bank bundles (pim.bundles = SIDs): each bundle's own row cycle at the SID level (tRCD,
    tRAS, tRTP, tRP, tRC), one MAC per nCCDAB on the PC whichever bundle it reads, and the
    other bundle free to switch rows while one streams: only the activation spacing tRRD_S
    separates two bundles' activates."""
    spec = get_spec(name)
    t = spec.timing
    b0, b1 = Address(0, 0, sid=0, row=5, col=0), Address(0, 0, sid=1, row=7, col=0)
    s = Seq(name)
    ta = s.at("ACTSB", b0, 0)
    # bundle 1 may activate right away: tRRD_S after bundle 0's ACTSB, not tRC or tRAS
    t1 = s.gate("ACTSB", b1, ta + lat(spec, t.nRRDS, "ACTSB", "ACTSB"))
    tm = s.gate("MACSB", b0, ta + lat(spec, t.nRCDRD, "ACTSB", "MACSB"))
    tm2 = s.gate("MACSB", b0, tm + lat(spec, t.nCCDAB, "MACSB", "MACSB"))
    # one bundle read at a time: bundle 1's MAC after bundle 0's by nCCDAB (PC level) and its
    # own tRCD
    s.gate("MACSB", b1, max(tm2 + lat(spec, t.nCCDAB, "MACSB", "MACSB"),
                            t1 + lat(spec, t.nRCDRD, "ACTSB", "MACSB")))
    # bundle 0 switches rows (tRTP after its last MAC, and tRAS after its ACT) while
    # bundle 1's row stays open
    tp = s.gate("PRESB", b0, max(tm2 + lat(spec, t.nRTP, "MACSB", "PRESB"),
                                 ta + lat(spec, t.nRAS, "ACTSB", "PRESB")))
    s.gate("ACTSB", b0._replace(row=6), max(tp + lat(spec, t.nRP, "PRESB", "ACTSB"),
                                           ta + lat(spec, t.nRC, "ACTSB", "ACTSB")))


def test_bundle_macs_need_their_bundles_row():
    dev = DramDevice("duplex-logic-pim", channels=1)
    b0 = Address(0, 0, sid=0, row=5, col=0)
    with pytest.raises(TimingViolation, match="every bank"):
        dev.issue("MACSB", b0, 100)
    dev.issue("ACTSB", b0, 0)
    with pytest.raises(TimingViolation, match="every bank"):  # the other bundle is closed
        dev.issue("MACSB", b0._replace(sid=1), 100)
    with pytest.raises(TimingViolation, match="not part of this spec"):  # no all-bank MAC
        dev.issue("MACAB", b0, 100)
    dev.issue("MACSB", b0, 100)
    with pytest.raises(TimingViolation, match="open row"):  # ACTSB needs the bundle closed
        dev.issue("ACTSB", b0._replace(row=6), 1000)
    dev.issue("PRESB", b0, 1000)
    dev.issue("ACTSB", b0._replace(row=6), 2000)
    assert dev.open_rows(buffer=0)[0] == 6


@pytest.mark.parametrize("name", ["b200-hbm3e-pim", SAMSUNG_AB], ids=["b200", "samsung-ab"])
def test_gwrite_data_reaches_the_buffer_before_mac(name):
    spec = get_spec(name)
    t = spec.timing
    s = Seq(name)
    s.at("ACTAB", PC0, 0)
    tg = s.at("GWRITE", PC0, 300)
    tg2 = s.gate("GWRITE", PC0, tg + lat(spec, max(t.nBL, t.nCCDS), "GWRITE", "GWRITE"))
    s.gate("MACAB", PC0, tg2 + lat(spec, t.nCWL + t.nBL, "GWRITE", "MACAB"))


def test_pim_parity_gates():
    """Bank-parity rows (samsung-hbm2-pim: PIMSimulator's all-bank mode), addressed through
    bank 0 (even) / 1 (odd) of bank group 0: each parity's own row cycle (tRCD, tRAS, tRTP,
    tRP, tRC), the other parity only tRRD_L away, one MAC per tCCD_L, a MAC timed as a read
    against writes (tWTR_L, tRTW), and a parity command's bank rows at every bank of its
    parity (an ACT of bank 6, even, tRP after PREPB of the even banks; of bank 5, odd, not)."""
    name = "samsung-hbm2-pim"
    spec = get_spec(name)
    t = spec.timing
    ev, od = Address(0, 0, bank=0, row=5, col=0), Address(0, 0, bank=1, row=7, col=0)
    s = Seq(name)
    ta = s.at("ACTPB", ev, 0)
    t1 = s.gate("ACTPB", od, ta + lat(spec, t.nRRDL, "ACTPB", "ACTPB"))
    tm = s.gate("MACPB", ev, ta + lat(spec, t.nRCDRD, "ACTPB", "MACPB"))
    s.gate("MACPB", od, max(tm + lat(spec, t.nCCDAB, "MACPB", "MACPB"),
                            t1 + lat(spec, t.nRCDRD, "ACTPB", "MACPB")))
    # the even banks switch rows while the odd ones stream
    tp = s.gate("PREPB", ev, max(tm + lat(spec, t.nRTP, "MACPB", "PREPB"),
                                 ta + lat(spec, t.nRAS, "ACTPB", "PREPB")))
    s.gate("ACTPB", ev._replace(row=6), max(tp + lat(spec, t.nRP, "PREPB", "ACTPB"),
                                            ta + lat(spec, t.nRC, "ACTPB", "ACTPB")))
    # MAC against writes: WR to an odd bank's open row tRTW after a MAC, then MACPB of the
    # even banks tWTR_L after the write
    s4 = Seq(name)
    ta = s4.at("ACTPB", ev, 0)
    t1 = s4.at("ACTPB", od)
    tm = s4.at("MACPB", ev, 100)
    tw = s4.gate("WR", Address(0, 0, bg=2, bank=1, row=7, col=3),
                 max(tm + lat(spec, t.nRTW, "MACPB", "WR"),
                     t1 + lat(spec, t.nRCDWR, "ACTPB", "WR")))
    s4.gate("MACPB", ev, tw + lat(spec, t.nCWL + t.nBL + t.nWTRL, "WR", "MACPB"))
    # PREPB of the even banks binds an ACT of every even bank (tRP), not of an odd one
    s2 = Seq(name)
    s2.at("ACTPB", ev, 0)
    tp = s2.at("PREPB", ev, 200)
    s2.gate("ACT", Address(0, 0, bg=1, bank=2, row=9), tp + lat(spec, t.nRP, "PREPB", "ACT"))
    s3 = Seq(name)
    s3.at("ACTPB", ev, 0)
    tp = s3.at("PREPB", ev, 200)
    assert s3.dev.earliest("ACT", Address(0, 0, bg=1, bank=1, row=9)) < tp + t.nRP - 1


def test_parity_rows_open_and_need_one_parity():
    dev = DramDevice("samsung-hbm2-pim", channels=1)
    ev, od = Address(0, 0, bank=0, row=5, col=0), Address(0, 0, bank=1, row=5, col=0)
    with pytest.raises(TimingViolation, match="every bank"):
        dev.issue("MACPB", ev, 100)
    dev.issue("ACTPB", ev, 0)
    with pytest.raises(TimingViolation, match="every bank"):  # the odd banks are closed
        dev.issue("MACPB", od, 100)
    with pytest.raises(TimingViolation, match="not part of this spec"):  # no all-bank MAC
        dev.issue("MACAB", ev, 100)
    dev.issue("MACPB", ev, 100)
    rows = dev.open_rows(buffer=0)[:16]
    assert rows.tolist() == [5, -1] * 8  # every even bank of PC 0, no odd one
    with pytest.raises(TimingViolation, match="open row"):  # an even bank is open
        dev.issue("ACT", Address(0, 0, bg=3, bank=2, row=9), 300)
    dev.issue("ACT", Address(0, 0, bg=3, bank=3, row=9), 300)  # an odd one is not
    with pytest.raises(TimingViolation, match="open row"):  # ACTPB odd: bank 15 is open
        dev.issue("ACTPB", od, 400)
    # the parity commands address bank 0 / 1 of SID 0, bank group 0 only
    with pytest.raises(ValueError, match="bank 0 .even banks. or 1"):
        dev.issue("PREPB", Address(0, 0, bg=1, bank=0), 1000)


def test_pim_work_waits_for_refresh():
    spec = get_spec("b200-hbm3e-pim")
    s = Seq("b200-hbm3e-pim")
    tr = s.at("REFab", PC0, 20)
    s.gate("ACTAB", PC0, tr + lat(spec, spec.timing.nRFC, "REFab", "ACTAB"))


def test_mac_needs_the_row_open_in_every_bank():
    dev = DramDevice(SAMSUNG_AB, channels=1)
    with pytest.raises(TimingViolation, match="every bank"):
        dev.issue("MACAB", PC0, 100)
    dev.issue("ACTAB", PC0, 0)
    with pytest.raises(TimingViolation, match="every bank"):
        dev.issue("MACAB", PC0._replace(row=6), 100)
    dev.issue("MACAB", PC0, 100)


def test_dual_row_buffers_keep_pim_and_normal_rows_apart():
    # b200-hbm3e-pim has dual row buffers: a normal ACT does not disturb the PIM row ...
    dev = DramDevice("b200-hbm3e-pim", channels=1)
    dev.issue("ACTAB", PC0, 0)
    dev.issue("ACT", bank(row=9), 200)  # would be "bank has an open row" with one buffer
    dev.issue("MACAB", PC0, 400)
    dev.issue("RD", bank(row=9, col=3), 400 + 2 * 10)
    dev.issue("PRE", bank(row=9), 2000)
    dev.issue("MACAB", PC0, 2100)  # the PIM row is still open in every bank
    assert dev.open_rows(buffer=1)[0] == 5 and dev.open_rows(buffer=0)[0] == -1
    # ... while samsung-hbm2-pim shares one buffer: the ACT collides with the PIM row
    dev2 = DramDevice(SAMSUNG_AB, channels=1)
    dev2.issue("ACTAB", PC0, 0)
    with pytest.raises(TimingViolation, match="open row"):
        dev2.issue("ACT", bank(row=9), 200)


def test_pim_command_on_plain_dram_is_rejected():
    dev = DramDevice("hbm3-6400", channels=1)
    with pytest.raises(TimingViolation, match="not part of this spec"):
        dev.issue("ACTAB", PC0, 0)


def test_bad_addresses_and_commands():
    dev = DramDevice("hbm3-6400", channels=1)
    with pytest.raises(ConfigError, match="bank=4 out of range"):
        dev.earliest("ACT", bank(ba=4))
    with pytest.raises(ConfigError, match="unknown"):
        dev.earliest("ACTX", A)
    with pytest.raises(ConfigError, match="row 9999999"):
        dev.issue("ACT", A._replace(row=9_999_999), 0)
    assert COMMAND_INDEX["ACT"] == 0
