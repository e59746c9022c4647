"""DRAM and HBM-PIM specifications: organisation, timing and PIM units (frozen dataclasses).

This module owns the *data* that the cycle-accurate engine (``sieve._dram``, behind
:mod:`sieve.dram.engine`) runs on. It must not simulate anything. A :class:`DramSpec` is
frozen; variants are made with :meth:`DramSpec.override` (or
:func:`sieve.dram.presets.load_spec` from a JSON/TOML file), never by mutation.

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
      ``window``-th most recent ``p`` (rows: :mod:`sieve.dram.constraints`).
"""

from __future__ import annotations

import dataclasses
import math
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from sieve.dram.commands import (
    BUNDLE_COMMANDS,
    BUS_COL,
    BUS_ROW,
    COMMAND_INDEX,
    COMMANDS,
    LEVEL_INDEX,
    LEVELS,
    PARITY_COMMANDS,
    PIM_COMMANDS,
)
from sieve.dram.constraints import (
    DRAM_CONSTRAINTS,
    PARITY_CONSTRAINTS,
    PIM_CONSTRAINTS,
    SHARED_BUFFER_CONSTRAINTS,
    ResolvedConstraint,
    TimingConstraint,
    evaluate_latency,
)
from sieve.errors import ConfigError, choices
from sieve.lazy import numpy as np
from sieve.validate import check_bool, check_int, check_mapping, check_name, check_number

__all__ = ["DramOrg", "DramSpec", "DramTiming", "PimConfig", "ns_to_ck"]

#: Largest timing value (CK, or ps for tCK_ps): latencies are sums of a few timings times
#: ticks_per_ck, and must stay far inside the engine's int64 tick arithmetic (2**61).
MAX_TIMING = 2**31 - 1
#: Largest ticks per CK (a power of two; 2 for HBM3 half-cycle row commands).
MAX_TICKS_PER_CK = 64
#: Largest row / column count (the engine stores rows and columns as int32).
MAX_ORG_INDEX = 2**31 - 1
#: Mode protocols of ``pim.modes`` (sieve.dram.pimmode describes them).
MODE_PROTOCOLS = ("none", "hbm-pim")
#: Highest reserved row of the "hbm-pim" protocol: the PIM register row 0x3fff (PIMSimulator
#: src/PIMRank.cpp writeHab; sieve.dram.pimmode.ROW_REG re-exports it).
HBM_PIM_REG_ROW = 0x3FFF
#: The CRF holds 32 x 32-bit instructions = 4 bursts of 32 B (PIMSimulator src/PIMRank.h).
MAX_CRF_BURSTS = 4
#: Most input vectors one PU column read may feed (pim.vectors_per_read): far above any
#: design (the cited ones feed 1-8), and the engine's per-pass bound (sieve._dram.MAX_VPP).
MAX_VECTORS_PER_READ = 1024
#: Most scores a softmax unit may normalise per CK (pim.softmax_per_ck): far above AttAcc's 8.
MAX_SOFTMAX_PER_CK = 2**20
#: Operand formats a PU may compute in, with their bytes (pim.pu_dtype, pim.dtype_bytes): the
#: cited designs use FP16 or BF16; FP8/INT8 and FP32 PUs are expressible.
PU_DTYPES = {"fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "fp32": 4}
#: Largest global buffer per pseudo-channel (pim.gbuf_bytes): the cited designs hold 256 B-8 KB;
#: 16 MiB is more than a whole HBM3E die's row buffers.
MAX_GBUF_BYTES = 1 << 24
#: Most SIMD lanes per PU (pim.lanes): the cited designs have 16.
MAX_LANES = 1024
#: Largest number of banks in a memory system (the engine's timing tables grow with it;
#: 2**24 banks take about 2 GB; the largest preset has 8192).
MAX_BANKS = 2**24


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
    # Mode protocol around every kernel (sieve.dram.pimmode): "none" (PIM commands accepted
    # at any time, AttAcc/AiM style) or "hbm-pim" (Samsung SB/HAB/HAB_PIM mode switches).
    modes: str = "none"
    park: bool = False  # "hbm-pim": park-in/park-out reads of every bank (PIMSimulator)
    crf_bursts: int = 0  # "hbm-pim": CRF bursts (8 instructions each) written per kernel
    # True: a PU adds its lanes (adder tree), one result per output row; False: lane-wise
    # SIMD MACs leave `lanes` partial sums per row, read back and added by the host
    adder_tree: bool = True
    # Input vectors one column read (MACAB) feeds: 1 = one vector per read (Samsung HBM-PIM,
    # AttAcc, the seed's "serialized GEMV"); v > 1 = v vector registers and v x lanes MAC units
    # per PU, so a pass over the weights serves v vectors (the query heads of a GQA group, the
    # tokens of a skinny GEMM). The global buffer holds a chunk of every vector of a pass.
    vectors_per_read: int = 1
    # Scores one PC's softmax unit normalises per CK (AttAcc's buffer-die SFM, Duplex's
    # logic-die softmax unit); 0 = no unit: attention reads every score back for a GPU softmax.
    softmax_per_ck: int = 0
    # Bank bundles the PUs read one at a time: 1 = every bank of the PC at once (ACTAB /
    # MACAB / PREAB, AttAcc's all-bank commands); n > 1 (= org.sids) = the banks of one SID
    # form a bundle (Duplex Logic-PIM's bank bundles), addressed by ACTSB / MACSB / PRESB, a
    # kernel's rows striped over the bundles so one bundle switches rows while another streams.
    bundles: int = 1
    # True: the PIM rows are opened, read and closed one bank parity at a time (ACTPB / MACPB
    # / PREPB through bank 0 or 1), as Samsung HBM-PIM's all-bank mode does (PIMSimulator
    # src/Rank.cpp: an ACT, RD or PRE to bank 0 (1) in that mode acts on every even (odd)
    # bank); a PU of two banks reads one of them per activation, and a kernel's input chunks
    # alternate between the parities, the even ones first (PIMSimulator PIMKernel.cpp
    # executeGemv / preloadGemv). False: one all-bank row in both banks (ACTAB / MACAB).
    bank_parity: bool = False

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
    def pim_mac_command(self) -> str:
        """The PIM MAC command of this spec: MACAB (every bank at once), MACSB (bank bundles,
        ``pim.bundles`` > 1) or MACPB (one bank parity, ``pim.bank_parity``); "" without PIM
        units."""
        if self.pim is None:
            return ""
        if self.pim.bank_parity:
            return "MACPB"
        return "MACSB" if self.pim.bundles > 1 else "MACAB"

    @property
    def pim_row_bursts(self) -> int:
        """Bursts one PU reads from one activated row: its banks' columns, of one bundle when
        the PUs read bank bundles (``pim.bundles``), of one bank when they read one parity
        (``pim.bank_parity``)."""
        if self.pim is None:
            return 0
        if self.pim.bank_parity:
            return self.org.columns
        return self.pim.banks_per_pu * self.org.columns // self.pim.bundles

    @property
    def pim_peak_tflops(self) -> float:
        """Peak PIM throughput: 2 FLOP per weight element and vector fed at the internal
        bandwidth (``vectors_per_read`` vectors per read)."""
        if self.pim is None:
            return 0.0
        return (self.pim_internal_bandwidth_gbs / self.pim.dtype_bytes * 2
                * self.pim.vectors_per_read / 1e3)

    # ---- constraint rows -------------------------------------------------------------------
    def constraints(self) -> tuple[TimingConstraint, ...]:
        """The declarative timing rows that apply to this spec (bus rows not included)."""
        rows = DRAM_CONSTRAINTS
        if self.pim is not None:
            rows = rows + PIM_CONSTRAINTS
            if not self.pim.dual_row_buffer:
                rows = rows + SHARED_BUFFER_CONSTRAINTS
            if self.pim.bank_parity:
                rows = rows + PARITY_CONSTRAINTS
        return rows

    def command_names(self) -> tuple[str, ...]:
        names = tuple(c.name for c in COMMANDS)
        if self.pim is None:
            names = tuple(n for n in names if n not in PIM_COMMANDS)
        else:
            if self.pim.bundles == 1:
                names = tuple(n for n in names if n not in BUNDLE_COMMANDS)
            if not self.pim.bank_parity:
                names = tuple(n for n in names if n not in PARITY_COMMANDS)
            if self.pim.bundles > 1 or self.pim.bank_parity:
                # bundled or parity rows: the PUs never read every bank at once
                names = tuple(n for n in names if n != "MACAB")
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
        """Flat int arrays for ``sieve._dram`` (the spec -> engine boundary), as numpy arrays.

        Returns a dict with level counts, per-command metadata, the constraint table in CSR form
        keyed by (level, preceding command) and the scalar timings the controllers need (ticks).
        The result is computed once per spec object (specs are frozen) and copied on return.
        :meth:`engine_arrays` is the same table as ``array.array`` buffers, without numpy.
        """
        return {k: (np.array(v, dtype=np.int32 if v.typecode == "i" else np.int64)
                    if isinstance(v, array) else v) for k, v in self.engine_arrays().items()}

    def engine_arrays(self) -> dict[str, Any]:
        """:meth:`to_arrays`'s table with ``array.array`` buffers (int32 ``"i"``, int64
        ``"q"``) in place of numpy arrays: what the front ends hand the engine, so that a
        request run needs no numpy (sieve.lazy). Copied on return."""
        cached = self.__dict__.get("_engine_arrays")
        if cached is None:
            cached = self._compute_arrays()
            object.__setattr__(self, "_engine_arrays", cached)
        return {k: (array(v.typecode, v) if isinstance(v, array) else v)
                for k, v in cached.items()}

    def _compute_arrays(self) -> dict[str, Any]:
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
        ptr = array("i", bytes(4 * (len(LEVELS) * n_cmd + 1)))
        nplain = array("i", bytes(4 * len(LEVELS) * n_cmd))
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
        hist_slot = array("i", [-1] * (len(LEVELS) * n_cmd))
        n_slots = array("i", [0] * len(LEVELS))
        max_window = max([r.window for r in rows] + [1])
        for r in rows:
            if r.window > 1 and hist_slot[r.level * n_cmd + r.preceding] < 0:
                hist_slot[r.level * n_cmd + r.preceding] = n_slots[r.level]
                n_slots[r.level] += 1
        align = array(
            "i", [tpc if c.bus == BUS_COL else 1 for c in COMMANDS]
        )  # column commands issue on a rising clock edge only (Ramulator 2.1 HBM3 controller)
        pim_on = self.pim is not None
        return {
            "counts": array(
                "i", [org.total_channels, org.pseudochannels, org.sids, org.bankgroups, org.banks]
            ),
            "rows": int(org.rows),
            "columns": int(org.columns),
            "n_cmd": n_cmd,
            "cmd_scope": array("i", [LEVEL_INDEX[c.scope] for c in COMMANDS]),
            "cmd_kind": array("i", [c.kind for c in COMMANDS]),
            "cmd_buffer": array(
                "i", [c.buffer if (pim_on and self.pim.dual_row_buffer) else 0 for c in COMMANDS]
            ),
            "cmd_align": align,
            "cmd_enabled": array(
                "i", [int(c.name in self.command_names()) for c in COMMANDS]
            ),
            "cons_ptr": ptr,
            "cons_nplain": nplain,
            "cons_next": array("i", nxt),
            "cons_lat": array("q", lat),
            "cons_win": array("i", win),
            "cons_sib": array("i", sib),
            "hist_slot": hist_slot,
            "n_slots": n_slots,
            "max_window": int(max_window),
            "ticks_per_ck": int(tpc),
            "read_latency": int((t.nCL + t.nBL) * tpc),
            "write_latency": int((t.nCWL + t.nBL) * tpc),
            "nREFI": int(t.nREFI * tpc),
            "nREFIpb": int(t.nREFIpb * tpc),
            "refresh_perbank": int(self.refresh == "perbank"),
            "bundles": int(self.pim.bundles) if pim_on else 1,
            "bank_parity": int(bool(self.pim.bank_parity)) if pim_on else 0,
        }

    # ---- validation and overrides ----------------------------------------------------------
    def validate(self) -> DramSpec:
        """Reject impossible values; returns self so calls can be chained."""
        who = f"DRAM spec {self.name!r}"
        check_name("DRAM spec", "name", self.name)
        if not isinstance(self.description, str):
            raise ConfigError(f"{who}: description must be text, got {self.description!r}")
        for f_ in fields(DramOrg):
            check_int(who, f"org.{f_.name}", getattr(self.org, f_.name), lo=1)
        for name in ("pseudochannels", "sids", "bankgroups", "banks", "rows", "columns",
                     "access_bytes"):
            v = getattr(self.org, name)
            if v & (v - 1):
                raise ConfigError(f"{who}: org.{name} must be a power of two, got {v}")
        o = self.org
        for name in ("rows", "columns"):
            if getattr(o, name) > MAX_ORG_INDEX:
                raise ConfigError(f"{who}: org.{name} must be in [1, {MAX_ORG_INDEX}], got "
                                  f"{getattr(o, name)}")
        banks = o.total_pseudochannels * o.banks_per_pc
        if banks > MAX_BANKS:
            raise ConfigError(f"{who}: {banks} banks in the memory system (stacks x channels x "
                              f"pseudochannels x sids x bankgroups x banks); the engine "
                              f"simulates at most {MAX_BANKS}")
        for name, v in self.timing.values().items():
            check_int(who, f"timing {name}", v, lo=0)
            if v > MAX_TIMING:
                raise ConfigError(f"{who}: timing {name} must be in [0, {MAX_TIMING}] "
                                  f"{'ps' if name == 'tCK_ps' else 'CK'}, got {v}")
        t = self.timing
        for name in ("tCK_ps", "ticks_per_ck", "nBL", "nCL", "nREFI", "nRFC"):
            if getattr(t, name) < 1:
                raise ConfigError(f"{who}: timing {name} must be >= 1, got {getattr(t, name)}")
        if t.ticks_per_ck > MAX_TICKS_PER_CK or t.ticks_per_ck & (t.ticks_per_ck - 1):
            raise ConfigError(f"{who}: timing ticks_per_ck must be a power of two in [1, "
                              f"{MAX_TICKS_PER_CK}], got {t.ticks_per_ck}")
        if t.nRFC >= t.nREFI:
            raise ConfigError(
                f"{who}: impossible refresh timing: nRFC ({t.nRFC}) >= nREFI ({t.nREFI})"
            )
        # A row opened right after a refresh must be usable before the next refresh closes it,
        # or every access livelocks (refresh has priority once due).
        for name in ("nRCDRD", "nRCDWR"):
            if t.nRFC + getattr(t, name) >= t.nREFI:
                raise ConfigError(
                    f"{who}: impossible timing: nRFC ({t.nRFC}) + {name} ({getattr(t, name)}) >= "
                    f"nREFI ({t.nREFI}) CK: a row activated after a refresh could never be "
                    f"accessed before the next refresh closes it")
            if self.refresh == "perbank" and t.nREFIpb >= 1 and t.nRFCpb + getattr(
                    t, name) >= t.nREFIpb * o.banks_per_pc:
                raise ConfigError(
                    f"{who}: impossible timing: nRFCpb ({t.nRFCpb}) + {name} "
                    f"({getattr(t, name)}) >= the per-bank refresh period nREFIpb x banks per "
                    f"pseudo-channel ({t.nREFIpb * o.banks_per_pc} CK)")
        if not isinstance(self.refresh, str) or self.refresh not in ("allbank", "perbank"):
            raise ConfigError(f"{who}: refresh must be 'allbank' or 'perbank', got "
                              f"{self.refresh!r}")
        if self.refresh == "perbank" and t.nREFIpb < 1:
            raise ConfigError(f"{who}: per-bank refresh needs nREFIpb >= 1")
        check_mapping(who, "bus_ck", self.bus_ck)
        for cmd, ck in self.bus_ck.items():
            if cmd not in COMMAND_INDEX:
                raise ConfigError(f"{who}: bus_ck names unknown command {cmd!r} "
                                  f"(known: {choices(COMMAND_INDEX)})")
            if check_number(who, f"bus_ck.{cmd}", ck, lo=None) <= 0:
                raise ConfigError(f"{who}: bus occupancy of {cmd} must be > 0 CK, got {ck}")
            # in CK first: a huge value times ticks_per_ck is infinite, which has no whole
            # number of ticks to check (bus_ticks checks that next)
            if ck * t.ticks_per_ck > MAX_TIMING or self.bus_ticks(cmd) > MAX_TIMING:
                raise ConfigError(f"{who}: bus occupancy of {cmd} must be at most "
                                  f"{MAX_TIMING} ticks ({MAX_TIMING // t.ticks_per_ck} CK at "
                                  f"ticks_per_ck={t.ticks_per_ck}), got {ck} CK")
        if self.pim is not None:
            if not isinstance(self.pim, PimConfig):
                raise ConfigError(f"{who}: pim must be none (no PIM units) or PIM settings; set "
                                  f"single values with pim.<field> (fields: "
                                  f"{choices('pim.' + f.name for f in fields(PimConfig))}), "
                                  f"got {self.pim!r}")
            p = self.pim
            for name, hi in (("banks_per_pu", None), ("lanes", MAX_LANES),
                             ("dtype_bytes", 4), ("gbuf_bytes", MAX_GBUF_BYTES)):
                check_int(who, f"pim.{name}", getattr(p, name), lo=1, hi=hi)
            check_bool(who, "pim.dual_row_buffer", p.dual_row_buffer)
            check_name(who, "pim.pu_dtype", p.pu_dtype)
            if p.pu_dtype not in PU_DTYPES:
                raise ConfigError(f"{who}: pim.pu_dtype {p.pu_dtype!r}: unknown (known: "
                                  f"{choices(PU_DTYPES)})")
            if PU_DTYPES[p.pu_dtype] != p.dtype_bytes:
                raise ConfigError(f"{who}: pim.pu_dtype {p.pu_dtype!r} has "
                                  f"{PU_DTYPES[p.pu_dtype]}-byte operands but pim.dtype_bytes "
                                  f"is {p.dtype_bytes}")
            check_bool(who, "pim.park", p.park)
            check_bool(who, "pim.adder_tree", p.adder_tree)
            check_int(who, "pim.crf_bursts", p.crf_bursts, lo=0, hi=MAX_CRF_BURSTS)
            check_int(who, "pim.vectors_per_read", p.vectors_per_read, lo=1,
                      hi=MAX_VECTORS_PER_READ)
            check_int(who, "pim.softmax_per_ck", p.softmax_per_ck, lo=0, hi=MAX_SOFTMAX_PER_CK)
            if p.vectors_per_read > 1 and p.modes == "hbm-pim":
                raise ConfigError(f"{who}: pim.vectors_per_read must be 1 with pim.modes "
                                  "'hbm-pim' (Samsung's PU holds one input vector in GRF_A)")
            if p.gbuf_bytes < p.vectors_per_read * self.org.access_bytes:
                raise ConfigError(f"{who}: pim.gbuf_bytes ({p.gbuf_bytes}) must hold one "
                                  f"{self.org.access_bytes}-byte burst of each of the "
                                  f"{p.vectors_per_read} vectors a read feeds "
                                  f"(pim.vectors_per_read): at least "
                                  f"{p.vectors_per_read * self.org.access_bytes}")
            if not isinstance(p.modes, str) or p.modes not in MODE_PROTOCOLS:
                raise ConfigError(f"{who}: pim.modes must be one of "
                                  f"{', '.join(MODE_PROTOCOLS)}, got {p.modes!r}")
            if p.modes == "hbm-pim":
                top = HBM_PIM_REG_ROW
                if self.org.rows <= top or self.org.bankgroups < 3 or self.org.banks < 2:
                    raise ConfigError(
                        f"{who}: pim.modes 'hbm-pim' addresses rows up to {top:#x} in "
                        f"banks 0-1 of bank groups 0 and 2; needs rows > {top}, >= 3 bank "
                        f"groups and >= 2 banks per group (has {self.org.rows} rows, "
                        f"{self.org.bankgroups} bank groups, {self.org.banks} banks)")
            elif p.park or p.crf_bursts:
                raise ConfigError(f"{who}: pim.park and pim.crf_bursts are part of the "
                                  f"'hbm-pim' mode protocol; set pim.modes=hbm-pim or leave "
                                  f"them false / 0")
            check_int(who, "pim.bundles", p.bundles, lo=1, hi=self.org.sids)
            if p.bundles > 1:
                if p.bundles != self.org.sids:
                    raise ConfigError(f"{who}: pim.bundles must be 1 (all banks at once) or "
                                      f"org.sids ({self.org.sids}: one bundle per SID), got "
                                      f"{p.bundles}")
                if p.banks_per_pu % p.bundles:
                    raise ConfigError(f"{who}: pim.banks_per_pu ({p.banks_per_pu}) must be a "
                                      f"multiple of pim.bundles ({p.bundles}): a PU reads the "
                                      f"same number of banks in every bundle")
                if p.modes != "none":
                    raise ConfigError(f"{who}: pim.bundles > 1 needs pim.modes 'none' (the "
                                      f"mode protocol switches every bank at once)")
            check_bool(who, "pim.bank_parity", p.bank_parity)
            if p.bank_parity and (p.banks_per_pu != 2 or p.bundles != 1 or p.dual_row_buffer
                                  or self.org.banks % 2):
                raise ConfigError(
                    f"{who}: pim.bank_parity (Samsung HBM-PIM's even/odd all-bank rows) needs "
                    f"pim.banks_per_pu 2 (one bank of each parity per PU; has "
                    f"{p.banks_per_pu}), pim.bundles 1 (has {p.bundles}), one shared row "
                    f"buffer (pim.dual_row_buffer false; has {p.dual_row_buffer}) and an even "
                    f"number of banks per bank group (has {self.org.banks})")
            if self.org.banks_per_pc % p.banks_per_pu:
                raise ConfigError(f"{who}: pim.banks_per_pu ({p.banks_per_pu}) must divide the "
                                  f"{self.org.banks_per_pc} banks of a pseudo-channel")
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
        ``bus_ck.<CMD>``. Unknown keys raise :class:`ConfigError` listing the valid ones; values
        are checked by :meth:`validate` (integers stay integers: ``30.0`` or ``"30"`` is refused,
        booleans must be ``True``/``False``).
        """
        items = check_mapping(f"DRAM spec {self.name!r}", "overrides", values or {})
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
                # `--set pim.modes=none` reads the value none as None: the protocol "none"
                pim_kw[key[4:]] = "none" if key == "pim.modes" and v is None else v
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
            if not isinstance(pim, PimConfig):
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
                ("pim.modes", p.modes, "mode protocol around every kernel"),
                ("pim.park", str(p.park), "park-in/out reads of every bank (hbm-pim)"),
                ("pim.crf_bursts", str(p.crf_bursts), "CRF bursts written per kernel"),
                ("pim.adder_tree", str(p.adder_tree),
                 "PU adds its lanes (else lanes partial sums per row)"),
                ("pim.vectors_per_read", str(p.vectors_per_read),
                 "input vectors one column read feeds (GQA group, skinny GEMM tokens)"),
                ("pim.softmax_per_ck", str(p.softmax_per_ck),
                 "scores a PC's softmax unit handles per CK (0: softmax on the GPU)"),
                ("pim.bundles", str(p.bundles),
                 "bank bundles read one at a time (1: every bank at once; n: one per SID, "
                 "rows switched behind the other bundles' streams)"),
                ("pim.bank_parity", str(p.bank_parity),
                 "PIM rows one bank parity at a time (ACTPB/MACPB/PREPB, Samsung all-bank "
                 "mode)"),
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

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DramSpec:
        """Rebuild a spec from :meth:`to_dict` output (a missing or null ``pim`` = no PIM)."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"DRAM spec: expected a table/object, got {type(d).__name__}")

        def part(kind: type, key: str) -> Any:
            v = d.get(key)
            if not isinstance(v, Mapping):
                raise ConfigError(f"DRAM spec: {key!r} must be a table/object")
            names = {f.name for f in fields(kind)}
            bad = sorted(set(v) - names)
            if bad:
                raise ConfigError(f"DRAM spec: {key} has no field(s) {', '.join(bad)} "
                                  f"(valid: {choices(names)})")
            try:
                return kind(**v)
            except TypeError as exc:
                raise ConfigError(f"DRAM spec: {key}: {exc}") from None

        for key in ("name", "description"):
            if not isinstance(d.get(key), str):
                raise ConfigError(f"DRAM spec: {key!r} must be a string")
        pim = part(PimConfig, "pim") if d.get("pim") is not None else None
        spec = cls(name=d["name"], description=d["description"], org=part(DramOrg, "org"),
                   timing=part(DramTiming, "timing"), bus_ck=dict(d.get("bus_ck") or {}),
                   pim=pim, refresh=d.get("refresh", "allbank"),
                   sources=dict(d.get("sources") or {}))
        return spec.validate()
