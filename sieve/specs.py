"""DRAM and HBM-PIM specifications: organisation, timing, PIM units, timing-constraint rows.

This module owns the *data* that the cycle-accurate engine (:mod:`sieve.dram`, ``sieve._dram``)
runs on. It must not simulate anything. A :class:`DramSpec` is frozen; variants are made with
:meth:`DramSpec.override` (or :func:`load_spec` from a JSON/TOML file), never by mutation.

Conventions
    * ``n*`` timing fields are in memory-clock cycles (CK), as in JEDEC and Ramulator; ``tCK_ps``
      is the CK period in picoseconds. Values in nanoseconds appear only in the derivation
      helpers and are converted by :func:`ns_to_ck` (JEDEC rounding: ceil).
    * The engine works in *ticks*: ``ticks_per_ck`` ticks per CK (2 for HBM3/HBM3E, which issue
      row commands on both clock edges; 1 for HBM2). :meth:`DramSpec.resolved_constraints` is the
      single place where CK become ticks.
    * A command is recorded at its first tick. A command that occupies its command bus for
      several ticks takes effect on its last tick, so a constraint between a multi-tick
      preceding command ``p`` and following command ``f`` is adjusted by ``(occ(p) - 1) -
      (occ(f) - 1)`` ticks (the Ramulator 2.1 convention, ``python/ramulator/dram/spec.py``).
    * Timing constraints are declarative rows ``(level, preceding, following, latency, window,
      sibling)``: after ``p`` issues at a node of ``level``, ``f`` may not issue at that node
      (or, with ``sibling=True``, at its sibling nodes) until ``latency`` ticks after the
      ``window``-th most recent ``p``. Adding a command means adding rows here, not engine code.

Sources are cited next to every preset value; the reference notes are shared/reference/
hardware.md (§2, §5), ramulator2.md (§2-§4) and pim-simulators.md (§2).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import tomllib

from sieve.errors import ConfigError, choices, lookup

__all__ = [
    "COMMANDS",
    "LEVELS",
    "PRESETS",
    "CommandDef",
    "DramOrg",
    "DramSpec",
    "DramTiming",
    "PimConfig",
    "ResolvedConstraint",
    "TimingConstraint",
    "get_spec",
    "load_spec",
    "ns_to_ck",
]

# --------------------------------------------------------------------------------------------
# Hierarchy and command set
# --------------------------------------------------------------------------------------------

#: Levels of the DRAM hierarchy, top to bottom. "sid" is the HBM3 stack-ID (rank-like) level;
#: HBM2 has one SID per pseudo-channel.
LEVELS = ("channel", "pseudochannel", "sid", "bankgroup", "bank")
LEVEL_INDEX = {name: i for i, name in enumerate(LEVELS)}

# Command kinds: what a command does to bank state (engine switch; see _dram.pxd).
KIND_NONE = 0  # no bank-state effect (GWRITE, RDRES)
KIND_OPEN = 1  # ACT-like: bank(s) must be closed; opens a row
KIND_CLOSE = 2  # PRE-like: closes the row(s) of its buffer
KIND_READ = 3  # column read: the addressed row must be open
KIND_WRITE = 4  # column write: the addressed row must be open
KIND_READ_AP = 5  # read with auto-precharge
KIND_WRITE_AP = 6  # write with auto-precharge
KIND_REFRESH = 7  # bank(s) must be closed in every buffer
KIND_MAC = 8  # all-bank PIM MAC: every bank of the PC must hold the addressed row open

BUS_ROW = 0
BUS_COL = 1

BUFFER_NORMAL = 0
BUFFER_PIM = 1


@dataclass(frozen=True, slots=True)
class CommandDef:
    """One command of the engine's command set (data, not code)."""

    name: str
    scope: str  # lowest level the command addresses ("bank" or "pseudochannel")
    bus: int  # BUS_ROW or BUS_COL: which command bus of the channel carries it
    kind: int  # KIND_*: effect on bank state
    buffer: int = BUFFER_NORMAL  # which row buffer it uses (PIM buffer with dual row buffers)
    doc: str = ""


#: The command set. DRAM commands follow JESD238 (HBM3) naming as used by Ramulator 2.1; the
#: PIM commands are the union of AttAcc's (ACTAB, MACAB, WRGB) and NeuPIMs/NewtonSim's
#: (GWRITE, READRES) command sets (pim-simulators.md §1, "Design choices to imitate" 2).
COMMANDS: tuple[CommandDef, ...] = (
    CommandDef("ACT", "bank", BUS_ROW, KIND_OPEN, doc="activate a row in one bank"),
    CommandDef("PRE", "bank", BUS_ROW, KIND_CLOSE, doc="precharge one bank"),
    CommandDef("PREA", "pseudochannel", BUS_ROW, KIND_CLOSE, doc="precharge all banks of a PC"),
    CommandDef("RD", "bank", BUS_COL, KIND_READ, doc="read one burst"),
    CommandDef("WR", "bank", BUS_COL, KIND_WRITE, doc="write one burst"),
    CommandDef("RDA", "bank", BUS_COL, KIND_READ_AP, doc="read with auto-precharge"),
    CommandDef("WRA", "bank", BUS_COL, KIND_WRITE_AP, doc="write with auto-precharge"),
    CommandDef("REFab", "pseudochannel", BUS_ROW, KIND_REFRESH, doc="all-bank refresh of a PC"),
    CommandDef("REFpb", "bank", BUS_ROW, KIND_REFRESH, doc="per-bank refresh"),
    CommandDef(
        "ACTAB", "pseudochannel", BUS_ROW, KIND_OPEN, BUFFER_PIM,
        doc="PIM all-bank activate: the same row in every bank of the PC",
    ),
    CommandDef(
        "MACAB", "pseudochannel", BUS_COL, KIND_MAC, BUFFER_PIM,
        doc="PIM all-bank MAC: every PU reads one burst of its bank(s) and accumulates",
    ),
    CommandDef(
        "PREAB", "pseudochannel", BUS_ROW, KIND_CLOSE, BUFFER_PIM,
        doc="PIM all-bank precharge (closes the PIM row buffers)",
    ),
    CommandDef(
        "GWRITE", "pseudochannel", BUS_COL, KIND_NONE, BUFFER_PIM,
        doc="write one burst of the input vector into the PC's global buffer",
    ),
    CommandDef(
        "RDRES", "pseudochannel", BUS_COL, KIND_NONE, BUFFER_PIM,
        doc="read one burst of PU results back to the host",
    ),
)
COMMAND_INDEX = {c.name: i for i, c in enumerate(COMMANDS)}
PIM_COMMANDS = ("ACTAB", "MACAB", "PREAB", "GWRITE", "RDRES")


@dataclass(frozen=True, slots=True)
class TimingConstraint:
    """One declarative timing row. ``latency`` is an expression over timing names (in CK)."""

    level: str
    preceding: tuple[str, ...]
    following: tuple[str, ...]
    latency: str
    window: int = 1
    sibling: bool = False


@dataclass(frozen=True, slots=True)
class ResolvedConstraint:
    """A timing row for one (preceding, following) pair with its latency in engine ticks."""

    level: int
    preceding: int
    following: int
    latency: int  # ticks
    window: int
    sibling: bool
    source: str  # the latency expression it came from (for checker messages)


def _names(x: str | tuple[str, ...]) -> tuple[str, ...]:
    return (x,) if isinstance(x, str) else tuple(x)


def _row(level, preceding, following, latency, window=1, sibling=False) -> TimingConstraint:
    return TimingConstraint(level, _names(preceding), _names(following), latency, window,
                            sibling)


_RD = ("RD", "RDA")
_WR = ("WR", "WRA")

# ---- Standard DRAM rows (HBM2/HBM3/HBM3E) ------------------------------------------------------
# Structure follows Ramulator 2.1 python/ramulator/dram/hbm3.py (HEAD c5b1c3a), which cites
# JESD238; additions are marked. Row-bus/column-bus occupancy rows are generated separately.
DRAM_CONSTRAINTS: tuple[TimingConstraint, ...] = (
    # ---- PseudoChannel: data bus, turnarounds, RAS/REF (JESD238 "per pseudo channel") ----
    _row("pseudochannel", _RD, _RD, "nBL"),  # data-bus occupancy
    _row("pseudochannel", _WR, _WR, "nBL"),
    _row("pseudochannel", _RD, _WR, "nRTW"),  # read-to-write turnaround
    _row("pseudochannel", _WR, _RD, "nCWL + nBL + nWTRS"),  # write-to-read, other BG
    _row("pseudochannel", "RD", "PREA", "nRTP"),
    _row("pseudochannel", "WR", "PREA", "nCWL + nBL + nWR"),
    _row("pseudochannel", "ACT", "ACT", "nRRDS"),
    _row("pseudochannel", "ACT", "ACT", "nFAW", window=4),  # four-activate window
    _row("pseudochannel", "ACT", "PREA", "nRAS"),
    _row("pseudochannel", "PREA", "ACT", "nRP"),
    _row("pseudochannel", ("PRE", "PREA"), ("PRE", "PREA"), "nPPD"),  # tPPD, new in HBM3
    _row("pseudochannel", "ACT", "REFab", "nRC"),
    _row("pseudochannel", ("PRE", "PREA"), "REFab", "nRP"),
    _row("pseudochannel", "RDA", "REFab", "nRP + nRTP"),
    _row("pseudochannel", "WRA", "REFab", "nCWL + nBL + nWR + nRP"),
    _row("pseudochannel", "REFab", ("ACT", "PREA", "REFab", "REFpb"), "nRFC"),  # +REFab/REFpb
    _row("pseudochannel", "REFpb", ("REFpb", "ACT"), "nRREFD"),  # tRREFD, other bank
    _row("pseudochannel", "ACT", "REFpb", "nRRDS"),
    # ---- SID: column spacing inside one SID, tCCD_R between SIDs ----
    _row("sid", _RD, _RD, "nCCDS"),
    _row("sid", _WR, _WR, "nCCDS"),
    _row("sid", _RD, _RD, "nCCDR", sibling=True),
    _row("sid", _WR, _WR, "nCCDR", sibling=True),
    # ---- BankGroup ----
    _row("bankgroup", _RD, _RD, "nCCDL"),
    _row("bankgroup", _WR, _WR, "nCCDL"),
    _row("bankgroup", _WR, _RD, "nCWL + nBL + nWTRL"),
    _row("bankgroup", "ACT", "ACT", "nRRDL"),
    # ---- Bank ----
    _row("bank", "ACT", "ACT", "nRC"),
    _row("bank", "ACT", _RD, "nRCDRD"),
    _row("bank", "ACT", _WR, "nRCDWR"),
    _row("bank", "ACT", "PRE", "nRAS"),
    _row("bank", "PRE", "ACT", "nRP"),
    _row("bank", "RD", "PRE", "nRTP"),
    _row("bank", "WR", "PRE", "nCWL + nBL + nWR"),
    _row("bank", "RDA", "ACT", "nRTP + nRP"),
    _row("bank", "WRA", "ACT", "nCWL + nBL + nWR + nRP"),
    _row("bank", "REFpb", "ACT", "nRFCpb"),
    _row("bank", "ACT", "REFpb", "nRC"),
    _row("bank", "PRE", "REFpb", "nRP"),
    # Added (Ramulator issue #272 lists these RDA/WRA->REFpb edges as missing for HBM3):
    _row("bank", "RDA", "REFpb", "nRTP + nRP"),
    _row("bank", "WRA", "REFpb", "nCWL + nBL + nWR + nRP"),
)

# ---- PIM rows ----------------------------------------------------------------------------------
# All-bank PIM commands address a pseudo-channel, so their rows live at the pseudo-channel level
# (the engine checks a command only at the levels on its path, as Ramulator does). Values follow
# AttAcc's HBM3-PIM "PIM-MAC-All-Bank" rows (scale-snu/attacc_simulator pim_ramulator_src/
# HBM3-PIM.cpp), moved from AttAcc's channel level (which broadcasts to both PCs) to the PC, since
# sieve's PIM channel is a pseudo-channel (seed §6: "all PIM channels" = PCs of the GPU's stacks).
PIM_CONSTRAINTS: tuple[TimingConstraint, ...] = (
    _row("pseudochannel", "ACTAB", "ACTAB", "nRC"),
    _row("pseudochannel", "ACTAB", "MACAB", "nRCDRD"),
    _row("pseudochannel", "ACTAB", "PREAB", "nRAS"),
    _row("pseudochannel", "MACAB", "PREAB", "nRTP"),
    _row("pseudochannel", "PREAB", "ACTAB", "nRP"),
    _row("pseudochannel", "MACAB", "MACAB", "nCCDAB"),  # power-limited all-bank MAC spacing
    _row("pseudochannel", "ACTAB", "REFab", "nRC"),
    _row("pseudochannel", "PREAB", "REFab", "nRP"),
    _row("pseudochannel", "REFab", "ACTAB", "nRFC"),
    _row("pseudochannel", ("ACT", "ACTAB"), ("ACT", "ACTAB"), "nRRDS"),  # activation power
    # Global-buffer write and result readback use the PC data bus like WR / RD (AttAcc "Data
    # Movement" rows) ...
    _row("pseudochannel", ("GWRITE",) + _WR, ("GWRITE",) + _WR, "nBL"),
    _row("pseudochannel", ("RDRES",) + _RD, ("RDRES",) + _RD, "nBL"),
    _row("pseudochannel", "GWRITE", "GWRITE", "nCCDS"),
    _row("pseudochannel", "RDRES", "RDRES", "nCCDS"),
    _row("pseudochannel", ("RDRES",) + _RD, ("GWRITE",) + _WR, "nRTW"),
    _row("pseudochannel", ("GWRITE",) + _WR, ("RDRES",) + _RD, "nCWL + nBL + nWTRS"),
    # ... and the data has to be in the buffer before a MAC uses it (write latency + burst);
    # results leave the PU pipeline nMACRD cycles after the last MAC.
    _row("pseudochannel", "GWRITE", "MACAB", "nCWL + nBL"),
    _row("pseudochannel", "MACAB", "RDRES", "nMACRD"),
)

# Extra rows when PIM and normal accesses share one row buffer per bank (no dual row buffers):
# PIM row commands then open/close the same rows as ACT/PRE, so they obey each other's RAS
# timing (conservatively, at PC level).
SHARED_BUFFER_CONSTRAINTS: tuple[TimingConstraint, ...] = (
    _row("pseudochannel", ("PRE", "PREA"), "ACTAB", "nRP"),
    _row("pseudochannel", "PREAB", ("ACT", "REFpb"), "nRP"),
    _row("pseudochannel", "ACT", "ACTAB", "nRC"),
    _row("pseudochannel", "ACTAB", ("ACT", "REFpb"), "nRC"),
    _row("pseudochannel", "ACT", "PREAB", "nRAS"),
    _row("pseudochannel", "ACTAB", ("PRE", "PREA"), "nRAS"),
    _row("pseudochannel", "ACTAB", _RD, "nRCDRD"),
    _row("pseudochannel", "ACTAB", _WR, "nRCDWR"),
    _row("pseudochannel", "RD", "PREAB", "nRTP"),
    _row("pseudochannel", "WR", "PREAB", "nCWL + nBL + nWR"),
    _row("pseudochannel", "MACAB", ("PRE", "PREA"), "nRTP"),
)


# --------------------------------------------------------------------------------------------
# Spec dataclasses
# --------------------------------------------------------------------------------------------


def ns_to_ck(ns: float, tCK_ps: int) -> int:
    """Convert a time in ns to CK cycles with JEDEC rounding (round up, 1 ps tolerance)."""
    return max(0, math.ceil((ns * 1000.0 - 1.0) / tCK_ps))


@dataclass(frozen=True, slots=True)
class DramOrg:
    """Organisation of the memory system. Counts are per parent level."""

    stacks: int  # HBM stacks attached to one GPU
    channels: int  # independent channels per stack
    pseudochannels: int  # pseudo-channels per channel (each has its own 32/64-bit data bus)
    sids: int  # stack IDs (rank-like) per pseudo-channel; 1 for HBM2 and 4-Hi HBM3
    bankgroups: int  # bank groups per SID
    banks: int  # banks per bank group
    rows: int  # rows per bank
    columns: int  # column (burst) addresses per row
    access_bytes: int  # bytes moved by one column command (one burst)
    dq_bits: int  # data-bus width of one pseudo-channel

    @property
    def total_channels(self) -> int:
        return self.stacks * self.channels

    @property
    def total_pseudochannels(self) -> int:
        return self.total_channels * self.pseudochannels

    @property
    def banks_per_pc(self) -> int:
        return self.sids * self.bankgroups * self.banks

    @property
    def row_bytes(self) -> int:
        return self.columns * self.access_bytes

    @property
    def capacity_bytes(self) -> int:
        return self.total_pseudochannels * self.banks_per_pc * self.rows * self.row_bytes


# Timing fields in CK cycles (JEDEC names). nCCDAB and nMACRD are PIM-only (0 = no PIM).
_TIMING_DOC = {
    "nBL": "burst length on the data bus",
    "nCL": "read latency (RL)",
    "nCWL": "write latency (WL)",
    "nRCDRD": "ACT to RD",
    "nRCDWR": "ACT to WR",
    "nRP": "PRE to ACT",
    "nRAS": "ACT to PRE",
    "nRC": "ACT to ACT, same bank",
    "nWR": "write recovery",
    "nRTP": "RD to PRE",
    "nCCDS": "column to column, different bank group",
    "nCCDL": "column to column, same bank group",
    "nCCDR": "column to column, different SID",
    "nRRDS": "ACT to ACT, different bank group",
    "nRRDL": "ACT to ACT, same bank group",
    "nFAW": "four-activate window",
    "nWTRS": "write to read, different bank group",
    "nWTRL": "write to read, same bank group",
    "nRTW": "read to write turnaround",
    "nPPD": "PRE to PRE",
    "nRFC": "all-bank refresh cycle",
    "nRFCpb": "per-bank refresh cycle",
    "nREFI": "all-bank refresh interval",
    "nREFIpb": "per-bank refresh interval",
    "nRREFD": "REFpb to REFpb/ACT, other bank",
    "nCCDAB": "PIM all-bank MAC to MAC (power-limited)",
    "nMACRD": "last MAC to result readback (PU pipeline)",
}


@dataclass(frozen=True, slots=True)
class DramTiming:
    """Timing parameters in CK cycles plus the clock period and tick resolution."""

    tCK_ps: int
    ticks_per_ck: int
    nBL: int
    nCL: int
    nCWL: int
    nRCDRD: int
    nRCDWR: int
    nRP: int
    nRAS: int
    nRC: int
    nWR: int
    nRTP: int
    nCCDS: int
    nCCDL: int
    nCCDR: int
    nRRDS: int
    nRRDL: int
    nFAW: int
    nWTRS: int
    nWTRL: int
    nRTW: int
    nPPD: int
    nRFC: int
    nRFCpb: int
    nREFI: int
    nREFIpb: int
    nRREFD: int
    nCCDAB: int = 0
    nMACRD: int = 0

    def values(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class PimConfig:
    """Processing units attached to the banks of every pseudo-channel."""

    banks_per_pu: int  # 1: one PU per bank; 2: one PU per bank pair (Samsung Aquabolt-XL)
    lanes: int  # SIMD lanes per PU
    dtype_bytes: int  # operand size (2 = FP16/BF16)
    gbuf_bytes: int  # global (input-vector) buffer per pseudo-channel
    dual_row_buffer: bool  # PIM and normal accesses have separate row buffers (NeuPIMs)
    pu_dtype: str = "bf16"

    def pus_per_pc(self, org: DramOrg) -> int:
        return org.banks_per_pc // self.banks_per_pu


@dataclass(frozen=True)
class DramSpec:
    """A complete memory (and optional PIM) specification. Frozen; see :meth:`override`."""

    name: str
    description: str
    org: DramOrg
    timing: DramTiming
    bus_ck: Mapping[str, float]  # command-bus occupancy in CK for commands other than 1 CK
    pim: PimConfig | None = None
    refresh: str = "allbank"  # "allbank" (REFab per PC every nREFI) or "perbank"
    sources: Mapping[str, str] = field(default_factory=dict)

    # ---- derived quantities --------------------------------------------------------------
    @property
    def tCK_ns(self) -> float:
        return self.timing.tCK_ps / 1000.0

    @property
    def tick_ns(self) -> float:
        return self.timing.tCK_ps / 1000.0 / self.timing.ticks_per_ck

    @property
    def pc_peak_bytes_per_ns(self) -> float:
        """Peak data-bus bandwidth of one pseudo-channel (one burst per nBL)."""
        return self.org.access_bytes / (self.timing.nBL * self.tCK_ns)

    @property
    def peak_bandwidth_gbs(self) -> float:
        """Peak external bandwidth of all pseudo-channels, GB/s (decimal)."""
        return self.pc_peak_bytes_per_ns * self.org.total_pseudochannels

    @property
    def pim_internal_bandwidth_gbs(self) -> float:
        """Peak PIM bandwidth (all PUs read one burst per nCCDAB), GB/s, all PCs."""
        if self.pim is None:
            return 0.0
        per_mac = self.pim.pus_per_pc(self.org) * self.org.access_bytes
        return per_mac / (self.timing.nCCDAB * self.tCK_ns) * self.org.total_pseudochannels

    @property
    def pim_peak_tflops(self) -> float:
        """Peak PIM throughput: 2 FLOP per weight element at the internal bandwidth."""
        if self.pim is None:
            return 0.0
        return self.pim_internal_bandwidth_gbs / self.pim.dtype_bytes * 2 / 1e3

    # ---- constraint rows -------------------------------------------------------------------
    def constraints(self) -> tuple[TimingConstraint, ...]:
        """The declarative timing rows that apply to this spec (bus rows not included)."""
        rows = DRAM_CONSTRAINTS
        if self.pim is not None:
            rows = rows + PIM_CONSTRAINTS
            if not self.pim.dual_row_buffer:
                rows = rows + SHARED_BUFFER_CONSTRAINTS
        return rows

    def command_names(self) -> tuple[str, ...]:
        names = tuple(c.name for c in COMMANDS)
        if self.pim is None:
            names = tuple(n for n in names if n not in PIM_COMMANDS)
        return names

    def bus_ticks(self, cmd: str) -> int:
        """Ticks the command occupies its command bus."""
        tpc = self.timing.ticks_per_ck
        occ = self.bus_ck.get(cmd, 1.0) * tpc
        if abs(occ - round(occ)) > 1e-9:
            raise ConfigError(
                f"DRAM spec {self.name!r}: bus occupancy of {cmd} ({self.bus_ck.get(cmd)} CK) is "
                f"not a whole number of ticks at ticks_per_ck={tpc}"
            )
        return int(round(occ))

    def resolved_constraints(self) -> list[ResolvedConstraint]:
        """All rows as (level, prev, next, latency in ticks, window, sibling), bus rows first.

        This is the single place where CK are converted to ticks.
        """
        values = self.timing.values()
        tpc = self.timing.ticks_per_ck
        known = set(self.command_names())
        out: list[ResolvedConstraint] = []
        # Command-bus occupancy: a command blocks every command on the same bus of its channel.
        for bus in (BUS_ROW, BUS_COL):
            on_bus = [c for c in COMMANDS if c.bus == bus and c.name in known]
            for p in on_bus:
                occ = self.bus_ticks(p.name)
                for f in on_bus:
                    out.append(ResolvedConstraint(
                        0, COMMAND_INDEX[p.name], COMMAND_INDEX[f.name], occ, 1, False,
                        f"{'row' if bus == BUS_ROW else 'column'} command bus ({p.name})",
                    ))
        for tc in self.constraints():
            nominal = evaluate_latency(tc.latency, values, self.name) * tpc
            for p in tc.preceding:
                if p not in known:
                    continue
                for f in tc.following:
                    if f not in known:
                        continue
                    lat = nominal + (self.bus_ticks(p) - 1) - (self.bus_ticks(f) - 1)
                    if lat <= 0:
                        continue  # a zero timing (e.g. nPPD on HBM2) means "no constraint"
                    out.append(ResolvedConstraint(
                        LEVEL_INDEX[tc.level], COMMAND_INDEX[p], COMMAND_INDEX[f], lat,
                        tc.window, tc.sibling, tc.latency,
                    ))
        return out

    # ---- engine arrays ---------------------------------------------------------------------
    def to_arrays(self) -> dict[str, Any]:
        """Flat int arrays for ``sieve._dram`` (the spec -> engine boundary).

        Returns a dict with level counts, per-command metadata, the constraint table in CSR form
        keyed by (level, preceding command) and the scalar timings the controllers need (ticks).
        """
        self.validate()
        org, t = self.org, self.timing
        tpc = t.ticks_per_ck
        n_cmd = len(COMMANDS)
        rows = self.resolved_constraints()
        # Rows with the same (level, preceding, following, window, sibling) collapse to the
        # largest latency (max-folding them one by one gives the same ready times). Within a
        # (level, preceding) group the plain rows (window 1, not sibling) come first, so the
        # engine's hot loop can fold them without branches (cons_nplain counts them).
        merged: dict[tuple[int, int, int, int, bool], int] = {}
        for r in rows:
            key = (r.level, r.preceding, r.following, r.window, r.sibling)
            merged[key] = max(merged.get(key, 0), r.latency)
        keyed: dict[tuple[int, int], list[tuple[int, int, int, bool]]] = {}
        for (lv, p, f, w, sb), latency in merged.items():
            keyed.setdefault((lv, p), []).append((f, latency, w, sb))
        ptr = np.zeros(len(LEVELS) * n_cmd + 1, dtype=np.int32)
        nplain = np.zeros(len(LEVELS) * n_cmd, dtype=np.int32)
        nxt, lat, win, sib = [], [], [], []
        for lv in range(len(LEVELS)):
            for c in range(n_cmd):
                group = sorted(keyed.get((lv, c), []), key=lambda g: (g[2] > 1 or g[3], g[0]))
                nplain[lv * n_cmd + c] = sum(1 for g in group if g[2] == 1 and not g[3])
                for f, latency, w, sb in group:
                    nxt.append(f)
                    lat.append(latency)
                    win.append(w)
                    sib.append(int(sb))
                ptr[lv * n_cmd + c + 1] = len(nxt)
        # History slots: (level, cmd) pairs that precede a windowed row keep their last W issues.
        hist_slot = np.full(len(LEVELS) * n_cmd, -1, dtype=np.int32)
        n_slots = np.zeros(len(LEVELS), dtype=np.int32)
        max_window = max([r.window for r in rows] + [1])
        for r in rows:
            if r.window > 1 and hist_slot[r.level * n_cmd + r.preceding] < 0:
                hist_slot[r.level * n_cmd + r.preceding] = n_slots[r.level]
                n_slots[r.level] += 1
        align = np.array(
            [tpc if c.bus == BUS_COL else 1 for c in COMMANDS], dtype=np.int32
        )  # column commands issue on a rising clock edge only (Ramulator 2.1 HBM3 controller)
        pim_on = self.pim is not None
        return {
            "counts": np.array(
                [org.total_channels, org.pseudochannels, org.sids, org.bankgroups, org.banks],
                dtype=np.int32,
            ),
            "rows": int(org.rows),
            "columns": int(org.columns),
            "n_cmd": n_cmd,
            "cmd_scope": np.array([LEVEL_INDEX[c.scope] for c in COMMANDS], dtype=np.int32),
            "cmd_kind": np.array([c.kind for c in COMMANDS], dtype=np.int32),
            "cmd_buffer": np.array(
                [c.buffer if (pim_on and self.pim.dual_row_buffer) else 0 for c in COMMANDS],
                dtype=np.int32,
            ),
            "cmd_align": align,
            "cmd_enabled": np.array(
                [int(c.name in self.command_names()) for c in COMMANDS], dtype=np.int32
            ),
            "cons_ptr": ptr,
            "cons_nplain": nplain,
            "cons_next": np.array(nxt, dtype=np.int32),
            "cons_lat": np.array(lat, dtype=np.int64),
            "cons_win": np.array(win, dtype=np.int32),
            "cons_sib": np.array(sib, dtype=np.int32),
            "hist_slot": hist_slot,
            "n_slots": n_slots,
            "max_window": int(max_window),
            "ticks_per_ck": int(tpc),
            "read_latency": int((t.nCL + t.nBL) * tpc),
            "write_latency": int((t.nCWL + t.nBL) * tpc),
            "nREFI": int(t.nREFI * tpc),
            "nREFIpb": int(t.nREFIpb * tpc),
            "refresh_perbank": int(self.refresh == "perbank"),
        }

    # ---- validation and overrides ----------------------------------------------------------
    def validate(self) -> DramSpec:
        """Reject impossible values; returns self so calls can be chained."""
        who = f"DRAM spec {self.name!r}"
        for f_ in fields(DramOrg):
            v = getattr(self.org, f_.name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"{who}: org.{f_.name} must be a positive integer, got {v!r}")
        for name in ("pseudochannels", "sids", "bankgroups", "banks", "rows", "columns",
                     "access_bytes"):
            v = getattr(self.org, name)
            if v & (v - 1):
                raise ConfigError(f"{who}: org.{name} must be a power of two, got {v}")
        for name, v in self.timing.values().items():
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise ConfigError(f"{who}: timing {name} must be an integer, got {v!r}")
            if v < 0:
                raise ConfigError(f"{who}: timing {name} must be >= 0 cycles, got {v}")
        t = self.timing
        for name in ("tCK_ps", "ticks_per_ck", "nBL", "nCL", "nREFI", "nRFC"):
            if getattr(t, name) < 1:
                raise ConfigError(f"{who}: timing {name} must be >= 1, got {getattr(t, name)}")
        if t.nRFC >= t.nREFI:
            raise ConfigError(
                f"{who}: impossible refresh timing: nRFC ({t.nRFC}) >= nREFI ({t.nREFI})"
            )
        if self.refresh not in ("allbank", "perbank"):
            raise ConfigError(f"{who}: refresh must be 'allbank' or 'perbank', got "
                              f"{self.refresh!r}")
        if self.refresh == "perbank" and t.nREFIpb < 1:
            raise ConfigError(f"{who}: per-bank refresh needs nREFIpb >= 1")
        for cmd, ck in self.bus_ck.items():
            if cmd not in COMMAND_INDEX:
                raise ConfigError(f"{who}: bus_ck names unknown command {cmd!r} "
                                  f"(known: {choices(COMMAND_INDEX)})")
            if ck <= 0:
                raise ConfigError(f"{who}: bus occupancy of {cmd} must be > 0 CK, got {ck}")
            self.bus_ticks(cmd)
        if self.pim is not None:
            p = self.pim
            if p.banks_per_pu < 1 or self.org.banks_per_pc % p.banks_per_pu:
                raise ConfigError(f"{who}: pim.banks_per_pu ({p.banks_per_pu}) must divide the "
                                  f"{self.org.banks_per_pc} banks of a pseudo-channel")
            for name in ("lanes", "dtype_bytes", "gbuf_bytes"):
                if getattr(p, name) < 1:
                    raise ConfigError(f"{who}: pim.{name} must be >= 1")
            if p.gbuf_bytes % self.org.access_bytes:
                raise ConfigError(f"{who}: pim.gbuf_bytes ({p.gbuf_bytes}) must be a multiple of "
                                  f"the {self.org.access_bytes}-byte burst")
            if t.nCCDAB < 1:
                raise ConfigError(f"{who}: a PIM spec needs nCCDAB >= 1")
        for tc in self.constraints():
            evaluate_latency(tc.latency, t.values(), self.name)
        return self

    def override(self, values: Mapping[str, Any] | None = None, **kw: Any) -> DramSpec:
        """Return a copy with some values replaced.

        Keys are timing names (``nRCDRD``, ``tCK_ps``, ...), organisation names (``stacks``,
        ``channels``, ``rows``, ...), PIM names prefixed with ``pim.`` (``pim.gbuf_bytes``), or
        ``name``, ``description``, ``refresh``, ``pim`` (``None`` removes the PIM units) and
        ``bus_ck.<CMD>``. Unknown keys raise :class:`ConfigError` listing the valid ones.
        """
        items = dict(values or {})
        items.update(kw)
        org_kw, tim_kw, pim_kw, top_kw, bus = {}, {}, {}, {}, dict(self.bus_ck)
        org_names = {f.name for f in fields(DramOrg)}
        tim_names = {f.name for f in fields(DramTiming)}
        pim_names = {f.name for f in fields(PimConfig)}
        for key, v in items.items():
            if key in tim_names:
                tim_kw[key] = v
            elif key in org_names:
                org_kw[key] = v
            elif key.startswith("pim.") and key[4:] in pim_names:
                pim_kw[key[4:]] = v
            elif key.startswith("bus_ck."):
                bus[key[7:]] = v
            elif key in ("name", "description", "refresh", "pim"):
                top_kw[key] = v
            else:
                valid = (sorted(tim_names) + sorted(org_names)
                         + [f"pim.{n}" for n in sorted(pim_names)]
                         + ["bus_ck.<CMD>", "description", "name", "pim", "refresh"])
                raise ConfigError(f"DRAM spec {self.name!r}: unknown override {key!r} "
                                  f"(valid: {', '.join(valid)})")
        pim = top_kw.pop("pim", self.pim)
        if pim_kw:
            if pim is None:
                raise ConfigError(f"DRAM spec {self.name!r}: has no PIM units, cannot set "
                                  f"{', '.join('pim.' + k for k in pim_kw)}")
            pim = replace(pim, **pim_kw)
        new = replace(
            self,
            org=replace(self.org, **org_kw),
            timing=replace(self.timing, **tim_kw),
            pim=pim,
            bus_ck=bus,
            **top_kw,
        )
        return new.validate()

    def describe(self) -> list[tuple[str, str, str]]:
        """Rows (name, value with unit, meaning) for ``sieve specs NAME``."""
        o, t = self.org, self.timing
        rows: list[tuple[str, str, str]] = [
            ("name", self.name, self.description),
            ("stacks", str(o.stacks), "HBM stacks per GPU"),
            ("channels", str(o.channels), "channels per stack"),
            ("pseudochannels", str(o.pseudochannels), "pseudo-channels per channel"),
            ("sids", str(o.sids), "stack IDs per pseudo-channel"),
            ("bankgroups", str(o.bankgroups), "bank groups per SID"),
            ("banks", str(o.banks), "banks per bank group"),
            ("rows", str(o.rows), "rows per bank"),
            ("columns", str(o.columns), "burst columns per row"),
            ("access_bytes", f"{o.access_bytes} B", "bytes per burst"),
            ("dq_bits", f"{o.dq_bits} bit", "pseudo-channel data width"),
            ("row size", f"{o.row_bytes} B", "derived"),
            ("capacity", f"{o.capacity_bytes / 2**30:.1f} GiB", "derived"),
            ("tCK_ps", f"{t.tCK_ps} ps", "CK period"),
            ("ticks_per_ck", str(t.ticks_per_ck), "engine ticks per CK"),
        ]
        for name, v in t.values().items():
            if name in ("tCK_ps", "ticks_per_ck"):
                continue
            if self.pim is None and name in ("nCCDAB", "nMACRD"):
                continue
            rows.append((name, f"{v} CK = {v * t.tCK_ps / 1000:.2f} ns", _TIMING_DOC[name]))
        rows.append(("refresh", self.refresh, "refresh mode"))
        rows.append(("peak bandwidth", f"{self.peak_bandwidth_gbs:.1f} GB/s", "derived, all PCs"))
        if self.pim is not None:
            p = self.pim
            rows += [
                ("pim.banks_per_pu", str(p.banks_per_pu), "banks sharing one PU"),
                ("pim.PUs per PC", str(p.pus_per_pc(o)), "derived"),
                ("pim.lanes", str(p.lanes), f"SIMD lanes ({p.pu_dtype})"),
                ("pim.gbuf_bytes", f"{p.gbuf_bytes} B", "global buffer per PC"),
                ("pim.dual_row_buffer", str(p.dual_row_buffer), "separate PIM row buffers"),
                ("PIM internal bandwidth", f"{self.pim_internal_bandwidth_gbs / 1e3:.1f} TB/s",
                 f"derived, {self.pim_internal_bandwidth_gbs / self.peak_bandwidth_gbs:.1f}x "
                 "external"),
                ("PIM peak", f"{self.pim_peak_tflops:.1f} TFLOPS", "derived"),
            ]
        return rows

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (recorded next to results)."""
        d = dataclasses.asdict(self)
        d["bus_ck"] = dict(self.bus_ck)
        d["sources"] = dict(self.sources)
        return d


# --------------------------------------------------------------------------------------------
# Latency expressions: a tiny, safe evaluator (+, -, *, //, integers, timing names)
# --------------------------------------------------------------------------------------------


def evaluate_latency(expr: str, values: Mapping[str, int], who: str = "spec") -> int:
    """Evaluate a latency expression such as ``"nCWL + nBL + nWR"`` over timing values."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ConfigError(f"DRAM spec {who!r}: bad latency expression {expr!r}") from exc

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in values:
                raise ConfigError(f"DRAM spec {who!r}: unknown timing {node.id!r} in {expr!r} "
                                  f"(known: {choices(values)})")
            return int(values[node.id])
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult,
                                                                 ast.FloorDiv)):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            return a // b
        raise ConfigError(f"DRAM spec {who!r}: unsupported syntax in latency {expr!r}")

    return ev(tree)


# --------------------------------------------------------------------------------------------
# Presets
# --------------------------------------------------------------------------------------------

_HBM3_BUS = {"ACT": 1.5, "ACTAB": 1.5, "PRE": 0.5, "PREA": 0.5, "PREAB": 0.5,
             "REFab": 0.5, "REFpb": 0.5}
"""HBM3 command-bus occupancy in CK: ACT is R-F-R = 1.5 CK, other row commands half a CK,
column commands 1 CK (Ramulator 2.1 hbm3.py ``command_cycles``)."""

_HBM2_BUS = {"ACT": 2.0, "ACTAB": 2.0}
"""HBM2 row commands: ACT takes 2 CK on the row bus (Ramulator 2.1 hbm2.py; AttAcc
HBM3-PIM.cpp "2-cycle ACT command")."""


def _hbm3_6400() -> DramSpec:
    # Ramulator 2.1 HBM3_6400Mbps timing preset with the HBM3_8Gb_8hi organisation
    # (ramulator2.md §2-3; CMU-SAFARI/ramulator2 python/ramulator/dram/hbm3.py @c5b1c3a).
    tck = 625  # 6.4 Gb/s per pin, CK = rate / 4 = 1.6 GHz
    timing = DramTiming(
        tCK_ps=tck, ticks_per_ck=2,  # half-CK ticks: row commands on both edges
        nBL=2, nCL=20, nCWL=10, nRCDRD=31, nRCDWR=15, nRP=26, nRAS=45, nRC=72, nWR=33,
        nRTP=9, nCCDS=2, nCCDL=4, nCCDR=3, nRRDS=4, nRRDL=5, nFAW=24, nWTRS=7, nWTRL=10,
        nRTW=20, nPPD=2,
        nRFC=ns_to_ck(260, tck),  # 8 Gb die / 2 SIDs = 4 Gb per channel -> 260 ns (JESD238 T84)
        nRFCpb=320, nREFI=6240,  # preset values (200 ns, 3.9 us)
        nREFIpb=ns_to_ck(3900 / 32, tck),  # tREFI / banks per PC = 195
        nRREFD=8,  # preset value (the max(3 CK, 8 ns) formula would give 13; ramulator2.md §2)
    )
    org = DramOrg(stacks=1, channels=16, pseudochannels=2, sids=2, bankgroups=4, banks=4,
                  rows=8192, columns=32, access_bytes=32, dq_bits=32)
    return DramSpec(
        name="hbm3-6400",
        description="HBM3 6.4 Gb/s, 8-Hi 8 Gb dies (= Ramulator 2.1 HBM3_6400Mbps/HBM3_8Gb_8hi)",
        org=org, timing=timing, bus_ck=_HBM3_BUS,
        sources={
            "timing": "Ramulator 2.1 hbm3.py HBM3_6400Mbps (ramulator2.md §2)",
            "org": "Ramulator 2.1 HBM3_8Gb_8hi, JESD238 Table 4 (ramulator2.md §3)",
            "nRFC": "JESD238 Table 84 via Ramulator resolver: 4 Gb/channel -> 260 ns",
            "bus": "Ramulator 2.1 command_cycles (ACT 1.5 CK, PRE/REF 0.5 CK)",
        },
    )


def _hbm3e_8000() -> DramSpec:
    # HBM3E at 8 Gb/s as on a B200 (hardware.md §1-2: 3996 MHz memory clock, 8 stacks, 16 ch x 2
    # PC, 8-Hi = 2 SIDs x 4 BG x 4 banks, 1 KB rows, 32 B per column). Timings: Ramulator 2.1
    # HBM3_8000Mbps preset (hbm3.py @300e25f: JEDEC ns held constant, CK scaled 1.25x from 6400).
    tck = 500
    timing = DramTiming(
        tCK_ps=tck, ticks_per_ck=2,
        nBL=2, nCL=25, nCWL=13, nRCDRD=39, nRCDWR=19, nRP=33, nRAS=57, nRC=90, nWR=42,
        nRTP=12, nCCDS=2, nCCDL=5, nCCDR=4, nRRDS=5, nRRDL=7, nFAW=30, nWTRS=9, nWTRL=13,
        nRTW=25, nPPD=2,
        # 24 Gb die / 2 SIDs = 12 Gb per channel -> "<= 16 Gb" bucket = 450 ns (hardware.md §2.2
        # suggested B200 set; AttAcc's table would give 410 ns: a sensitivity case).
        nRFC=ns_to_ck(450, tck),
        nRFCpb=400, nREFI=7800,  # 200 ns, 3.9 us (Ramulator preset)
        nREFIpb=ns_to_ck(3900 / 32, tck),  # 122 ns for 32 banks per PC
        nRREFD=8,
    )
    # 24 Gb die, 8-Hi, 24 GB stack: 768 MiB per PC / 32 banks / 1 KB = 24 K rows; the engine
    # needs a power of two, so 32 K row addresses are modelled (only the row count changes).
    org = DramOrg(stacks=8, channels=16, pseudochannels=2, sids=2, bankgroups=4, banks=4,
                  rows=32768, columns=32, access_bytes=32, dq_bits=32)
    return DramSpec(
        name="hbm3e-8000",
        description="HBM3E 8 Gb/s, 8 stacks x 16 ch x 2 PC, 8-Hi (B200-like)",
        org=org, timing=timing, bus_ck=_HBM3_BUS,
        sources={
            "timing": "Ramulator 2.1 hbm3.py HBM3_8000Mbps (JEDEC ns scaled to tCK 0.5 ns)",
            "org": "hardware.md §1-2 (B200: 8 stacks, 16 ch x 2 PC, 8-Hi = 2 SID x 4 BG x 4)",
            "nRFC": "hardware.md §2.2 suggested B200 set: 12 Gb/channel -> 450 ns",
            "rows": "24 K rows derived (hardware.md §2.1), rounded up to 32 K (power of two)",
        },
    )


def _hbm2_2000() -> DramSpec:
    # Ramulator 2.1 HBM2_2000Mbps (hbm2.py, JESD235D; ramulator2.md §2). HBM2 pseudo-channel
    # mode: 8 channels x 2 PCs of 64 bits, BL4 = 32 B per burst, 4 BG x 4 banks per PC.
    tck = 1000
    timing = DramTiming(
        tCK_ps=tck, ticks_per_ck=1,
        nBL=2, nCL=14, nCWL=5, nRCDRD=14, nRCDWR=12, nRP=14, nRAS=34, nRC=48, nWR=16,
        nRTP=5, nCCDS=2, nCCDL=4, nCCDR=0, nRRDS=4, nRRDL=4, nFAW=15, nWTRS=6, nWTRL=8,
        nRTW=14 + 2 + 2 - 5,  # nCL + nBL + 2 - nCWL (Ramulator 2.0 HBM2 RD->WR, tWPRE = 1 CK)
        nPPD=0,  # HBM2 has no tPPD
        nRFC=350, nRFCpb=160, nREFI=3900, nREFIpb=122, nRREFD=8,
    )
    org = DramOrg(stacks=1, channels=8, pseudochannels=2, sids=1, bankgroups=4, banks=4,
                  rows=16384, columns=32, access_bytes=32, dq_bits=64)
    return DramSpec(
        name="hbm2-2000",
        description="HBM2 2 Gb/s, pseudo-channel mode (= Ramulator 2.1 HBM2_2000Mbps)",
        org=org, timing=timing, bus_ck=_HBM2_BUS,
        sources={
            "timing": "Ramulator 2.1 hbm2.py HBM2_2000Mbps (ramulator2.md §2)",
            "org": "JESD235 pseudo-channel mode; 4 GB 4-Hi stack -> 16 K rows per bank",
            "nRTW": "Ramulator 2.0 HBM2 rule nCL + nBL + 2 - nCWL",
        },
    )


def _samsung_hbm2_pim() -> DramSpec:
    # Samsung HBM2-PIM "Aquabolt-XL" as in SAITPublic/PIMSimulator ini/HBM2_samsung_2M_16B_x64.ini
    # (pim-simulators.md §2; hardware.md §5): tCK 1 ns, BL4 on a 64-bit PC (32 B), 16 banks per
    # PC, one PIM block per 2 banks (8 per PC), 16 FP16 lanes, every PIM op costs tCCD_L.
    tck = 1000
    timing = DramTiming(
        tCK_ps=tck, ticks_per_ck=1,
        nBL=2, nCL=20, nCWL=8, nRCDRD=14, nRCDWR=10, nRP=14, nRAS=33, nRC=47, nWR=16,
        nRTP=5, nCCDS=2, nCCDL=4, nCCDR=0, nRRDS=4, nRRDL=6, nFAW=16, nWTRS=4, nWTRL=9,
        nRTW=20 + 2 + 2 - 8,  # nCL + nBL + 2 - nCWL (no tRTW in the ini)
        nPPD=0, nRFC=350, nRFCpb=160, nREFI=3900, nREFIpb=121, nRREFD=8,
        nCCDAB=4,  # PIMSimulator issue #3: every PIM op is charged tCCD_L
        nMACRD=4,  # ⚠ assumption: one more tCCD_L to drain the PU pipeline before readback
    )
    org = DramOrg(stacks=4, channels=8, pseudochannels=2, sids=1, bankgroups=4, banks=4,
                  rows=16384, columns=32, access_bytes=32, dq_bits=64)
    pim = PimConfig(banks_per_pu=2, lanes=16, dtype_bytes=2, gbuf_bytes=256,
                    dual_row_buffer=False, pu_dtype="fp16")
    return DramSpec(
        name="samsung-hbm2-pim",
        description="Samsung HBM2-PIM Aquabolt-XL: 1 PU per 2 banks, 16-lane FP16, 4 stacks",
        org=org, timing=timing, bus_ck=_HBM2_BUS, pim=pim,
        sources={
            "timing": "SAITPublic/PIMSimulator ini/HBM2_samsung_2M_16B_x64.ini (RL 20, tRCD 14, "
                      "tRP 14, tRAS 33, tRC 47, tFAW 16, tRFC 350, tREFI 3900)",
            "org": "PIMSimulator README: 1 PIM block per 2 banks, 4 banks x 4 BG per PC; "
                   "64-channel system = 4 stacks (system_hbm_64ch.ini)",
            "nCCDAB": "PIMSimulator issue #3: each PIM op costs tCCD_L",
            "pim.gbuf_bytes": "GRF_A 8 x 256-bit per PU (src/PIMBlock.h) = 256 B broadcast",
            "nMACRD": "assumption (one tCCD_L pipeline drain)",
        },
    )


def _attacc_hbm3_pim(power_constrained: bool) -> DramSpec:
    # AttAcc bank-level HBM3-PIM (scale-snu/attacc_simulator pim_ramulator_src/HBM3-PIM.cpp,
    # preset HBM3_5.2Gbps / _NPC, org HBM3_8Gb_2R; 5 stacks per device as in src/config.py).
    tck = 769  # 1e6 / (5200 / 4)
    ccdab = 6 if power_constrained else 4  # nCCDAB with / without the DRAM power constraint
    timing = DramTiming(
        tCK_ps=tck, ticks_per_ck=1,
        nBL=2, nCL=19, nCWL=6, nRCDRD=19, nRCDWR=19, nRP=19, nRAS=45, nRC=63, nWR=21,
        nRTP=8,  # nRTPL (bank-level RD->PRE)
        nCCDS=2, nCCDL=4, nCCDR=0, nRRDS=2, nRRDL=4, nFAW=39, nWTRS=8, nWTRL=11,
        nRTW=19 + 2 + 2 - 6,  # AttAcc's rank-level RD->WR row: nCL + nBL + 2 - nCWL
        nPPD=0,
        nRFC=ns_to_ck(350, tck),  # AttAcc tRFC table, 8 Gb density -> 350 ns
        nRFCpb=260, nREFI=5070, nREFIpb=ns_to_ck(122, tck),  # 8-Hi tREFISB 122 ns
        nRREFD=11,
        nCCDAB=ccdab,
        nMACRD=4,  # ⚠ assumption: AttAcc's MVSB (move to softmax buffer) takes 4 tCK
    )
    org = DramOrg(stacks=5, channels=16, pseudochannels=2, sids=2, bankgroups=4, banks=4,
                  rows=16384, columns=32, access_bytes=32, dq_bits=32)
    pim = PimConfig(banks_per_pu=1, lanes=16, dtype_bytes=2, gbuf_bytes=2048,
                    dual_row_buffer=False, pu_dtype="fp16")
    suffix = "" if power_constrained else "-npc"
    return DramSpec(
        name=f"attacc-hbm3-pim{suffix}",
        description=("AttAcc bank-level HBM3-PIM 5.2 Gb/s, MAC every "
                     f"{ccdab} CK ({'with' if power_constrained else 'no'} power constraint)"),
        org=org, timing=timing, bus_ck=_HBM2_BUS, pim=pim,
        sources={
            "timing": "attacc_simulator pim_ramulator_src/HBM3-PIM.cpp HBM3_5.2Gbps"
                      + ("" if power_constrained else "_NPC"),
            "org": "AttAcc HBM3_8Gb_2R: 16 ch x 2 PC x 2 ranks x 4 BG x 4 banks; 5 stacks",
            "nCCDAB": "AttAcc nCCDAB 6 (power constraint) / 4 (NPC)",
            "pim.gbuf_bytes": "⚠ assumption: 2 KB global buffer, as SK hynix AiM's per channel",
            "nMACRD": "⚠ assumption: AttAcc trace generator MVSB = 4 tCK",
        },
    )


def _b200_hbm3e_pim(power_constrained: bool) -> DramSpec:
    base = _hbm3e_8000()
    # One 16-lane BF16 PU per bank (bank-level PIM as AttAcc/AiM; hardware.md §5 "B200 HBM3E-PIM
    # variant", derived). Uncapped, every bank delivers a burst per tCCD_L (nCCDAB = nCCDL = 5):
    # 32 banks x 32 B / 2.5 ns = 410 GB/s per PC = 12.8x external. Power-limited: AttAcc's capped
    # / uncapped MAC spacing ratio 6/4 applied to nCCDL -> ceil(7.5) = 8 CK (4 ns), 8x external.
    ccdab = math.ceil(base.timing.nCCDL * 6 / 4) if power_constrained else base.timing.nCCDL
    timing = replace(base.timing, nCCDAB=ccdab,
                     nMACRD=base.timing.nCCDL)  # ⚠ assumption: one tCCD_L pipeline drain
    pim = PimConfig(banks_per_pu=1, lanes=16, dtype_bytes=2, gbuf_bytes=2048,
                    dual_row_buffer=True, pu_dtype="bf16")
    suffix = "" if power_constrained else "-npc"
    return DramSpec(
        name=f"b200-hbm3e-pim{suffix}",
        description=("B200-style HBM3E-PIM: 8 stacks, one 16-lane BF16 PU per bank, all-bank "
                     f"MAC every {ccdab} CK ({'power-limited' if power_constrained else 'no cap'}"
                     "), dual row buffers"),
        org=base.org, timing=timing, bus_ck=base.bus_ck, pim=pim,
        sources={
            **base.sources,
            "nCCDAB": ("derived: AttAcc power-constrained/unconstrained MAC spacing 6/4 x nCCDL"
                       if power_constrained else "derived: nCCDL (one burst per bank per "
                       "tCCD_L)"),
            "pim": "hardware.md §5 derived B200 HBM3E-PIM variant; dual row buffers as NeuPIMs "
                   "(seed §7 'dual row buffers in NeuPIMs')",
            "pim.gbuf_bytes": "⚠ assumption: 2 KB global buffer per PC, as SK hynix AiM",
            "nMACRD": "⚠ assumption: one tCCD_L pipeline drain",
        },
    )


PRESETS: dict[str, DramSpec] = {
    s.name: s
    for s in (
        _b200_hbm3e_pim(True),
        _b200_hbm3e_pim(False),
        _hbm3e_8000(),
        _hbm3_6400(),
        _hbm2_2000(),
        _attacc_hbm3_pim(True),
        _attacc_hbm3_pim(False),
        _samsung_hbm2_pim(),
    )
}
DEFAULT_SPEC = "b200-hbm3e-pim"


def get_spec(name_or_spec: str | DramSpec, overrides: Mapping[str, Any] | None = None
             ) -> DramSpec:
    """Return a preset (or a spec file path ending in .json/.toml), with optional overrides."""
    if isinstance(name_or_spec, DramSpec):
        spec = name_or_spec
    elif isinstance(name_or_spec, str) and name_or_spec.lower().endswith((".json", ".toml")):
        spec = load_spec(name_or_spec)
    else:
        spec = lookup(PRESETS, name_or_spec, "DRAM spec")
    return spec.override(overrides) if overrides else spec


def load_spec(path: str | Path) -> DramSpec:
    """Load a spec from JSON or TOML: ``{"base": "hbm3-6400", "name": ..., "overrides": {...}}``.

    Top-level keys other than ``base`` and ``overrides`` are treated as overrides too.
    """
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError(f"DRAM spec file {str(p)!r}: cannot read ({exc.strerror})") from None
    try:
        data = tomllib.loads(text) if p.suffix.lower() == ".toml" else json.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"DRAM spec file {str(p)!r}: not valid {p.suffix[1:].upper()}: "
                          f"{exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"DRAM spec file {str(p)!r}: expected a table/object at top level")
    data = dict(data)
    base = data.pop("base", None)
    if base is None:
        raise ConfigError(f"DRAM spec file {str(p)!r}: missing 'base' (one of: "
                          f"{choices(PRESETS)})")
    overrides = dict(data.pop("overrides", {}) or {})
    overrides.update(data)
    overrides.setdefault("name", p.stem)
    try:
        return get_spec(base, overrides)
    except ConfigError as exc:
        raise ConfigError(f"DRAM spec file {str(p)!r}: {exc}") from None
