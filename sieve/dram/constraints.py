"""Declarative timing-constraint rows and the latency-expression evaluator.

A row ``(level, preceding, following, latency, window, sibling)`` says: after ``p`` issues at
a node of ``level``, ``f`` may not issue at that node (or, with ``sibling=True``, at its
sibling nodes) until ``latency`` ticks after the ``window``-th most recent ``p``. Latencies are
expressions over timing names in CK (``"nCWL + nBL + nWR"``), evaluated by a small ``ast``
evaluator that allows only ``+ - * //``, integers and timing names. Adding a command means
adding rows here, not engine code. :meth:`sieve.dram.spec.DramSpec.resolved_constraints` turns
them into ticks.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from sieve.errors import ConfigError, choices

__all__ = [
    "DRAM_CONSTRAINTS",
    "PARITY_CONSTRAINTS",
    "PIM_CONSTRAINTS",
    "SHARED_BUFFER_CONSTRAINTS",
    "ResolvedConstraint",
    "TimingConstraint",
    "evaluate_latency",
]


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
    # ---- Bundled PIM rows (pim.bundles > 1: ACTSB / MACSB / PRESB address one SID) ----
    # A bundle's own row cycle: AttAcc's all-bank values above, at the SID (bundle) level ...
    _row("sid", "ACTSB", "ACTSB", "nRC"),
    _row("sid", "ACTSB", "MACSB", "nRCDRD"),
    _row("sid", "ACTSB", "PRESB", "nRAS"),
    _row("sid", "MACSB", "PRESB", "nRTP"),
    _row("sid", "PRESB", "ACTSB", "nRP"),
    # ... one bundle read at a time over the PC's PIM datapath (Duplex: 512 b per tCCD_L from
    # one bank bundle), the activation power spacing of every activate ...
    _row("pseudochannel", "MACSB", "MACSB", "nCCDAB"),
    _row("pseudochannel", "ACTSB", ("ACT", "ACTAB", "ACTSB"), "nRRDS"),
    _row("pseudochannel", ("ACT", "ACTAB"), "ACTSB", "nRRDS"),
    # ... input writes before the MACs that use them, results after the last MAC ...
    _row("pseudochannel", "GWRITE", "MACSB", "nCWL + nBL"),
    _row("pseudochannel", "MACSB", "RDRES", "nMACRD"),
    # ... and against the PC-wide commands that close or refresh every bank (the bundle that
    # was activated or read last sets them, conservatively at the PC level)
    _row("pseudochannel", "ACTSB", ("PREAB", "REFab"), "nRAS"),
    _row("pseudochannel", "ACTSB", "REFab", "nRC"),
    _row("pseudochannel", "MACSB", "PREAB", "nRTP"),
    _row("pseudochannel", "PRESB", "REFab", "nRP"),
    _row("pseudochannel", ("PREAB", "REFab"), "ACTSB", "nRP"),
    _row("pseudochannel", "REFab", "ACTSB", "nRFC"),
    _row("pseudochannel", "ACTAB", "ACTSB", "nRC"),
    _row("pseudochannel", "ACTSB", "ACTAB", "nRC"),
    _row("pseudochannel", "MACAB", "PRESB", "nRTP"),
    _row("pseudochannel", "PRESB", "ACTAB", "nRP"),
)

# ---- Bank-parity PIM rows (pim.bank_parity: ACTPB / MACPB / PREPB) ----------------------------
# Samsung HBM-PIM's all-bank mode as SAITPublic/PIMSimulator src/Rank.cpp times it: a command to
# bank 0 (1) acts on every even (odd) bank (checkBank / updateState loop over `bank % 2 ==
# packet->bank`), every bank counts as one bank group (updateBank(..., true): tRRD_L between
# activations, tCCD_L between column commands, tWTR_L after writes) and a MAC is a READ. Rows
# at the bank level hold at every bank of the command's parity (the engine folds them into
# each; the checker checks them per (PC, parity)): the parity's own row cycle and its rows with
# per-bank commands to those banks. Activation spacing, turnarounds and the PC-wide commands
# at the PC. Only with one shared row buffer (validated).
PARITY_CONSTRAINTS: tuple[TimingConstraint, ...] = (
    _row("bank", "ACTPB", "ACTPB", "nRC"),
    _row("bank", "ACTPB", "MACPB", "nRCDRD"),
    _row("bank", "ACTPB", "PREPB", "nRAS"),
    _row("bank", "MACPB", "PREPB", "nRTP"),
    _row("bank", "PREPB", "ACTPB", "nRP"),
    # ... with ACT / PRE / RD / WR / REFpb of a bank of the parity
    _row("bank", "ACT", "ACTPB", "nRC"),
    _row("bank", "ACTPB", ("ACT", "REFpb"), "nRC"),
    _row("bank", "ACT", "PREPB", "nRAS"),
    _row("bank", "ACTPB", "PRE", "nRAS"),
    _row("bank", "PRE", "ACTPB", "nRP"),
    _row("bank", "PREPB", ("ACT", "REFpb"), "nRP"),
    _row("bank", "ACTPB", _RD, "nRCDRD"),
    _row("bank", "ACTPB", _WR, "nRCDWR"),
    _row("bank", "RD", "PREPB", "nRTP"),
    _row("bank", "WR", "PREPB", "nCWL + nBL + nWR"),
    _row("bank", "MACPB", "PRE", "nRTP"),
    _row("bank", "RDA", "ACTPB", "nRTP + nRP"),
    _row("bank", "WRA", "ACTPB", "nCWL + nBL + nWR + nRP"),
    _row("bank", "REFpb", "ACTPB", "nRFCpb"),
    # ... activations tRRD_L apart, MACs tCCD_L (nCCDAB) apart, a MAC a read of the data path
    _row("pseudochannel", "ACTPB", ("ACT", "ACTAB", "ACTPB"), "nRRDL"),
    _row("pseudochannel", ("ACT", "ACTAB"), "ACTPB", "nRRDL"),
    _row("pseudochannel", "MACPB", "MACPB", "nCCDAB"),
    _row("pseudochannel", "MACPB", _RD, "nCCDL"),
    _row("pseudochannel", _RD, "MACPB", "nCCDL"),
    _row("pseudochannel", "MACPB", ("GWRITE",) + _WR, "nRTW"),
    _row("pseudochannel", ("GWRITE",) + _WR, "MACPB", "nCWL + nBL + nWTRL"),
    _row("pseudochannel", "MACPB", "RDRES", "nMACRD"),
    # ... and the PC-wide commands that close or refresh every bank
    _row("pseudochannel", "ACTPB", ("PREA", "PREAB"), "nRAS"),
    _row("pseudochannel", "ACTPB", "REFab", "nRC"),
    _row("pseudochannel", "MACPB", ("PREA", "PREAB"), "nRTP"),
    _row("pseudochannel", "PREPB", "REFab", "nRP"),
    _row("pseudochannel", ("PREA", "PREAB"), "ACTPB", "nRP"),
    _row("pseudochannel", "REFab", "ACTPB", "nRFC"),
    _row("pseudochannel", "ACTAB", "ACTPB", "nRC"),
    _row("pseudochannel", "ACTPB", "ACTAB", "nRC"),
    _row("pseudochannel", "MACAB", "PREPB", "nRTP"),
    _row("pseudochannel", "PREPB", "ACTAB", "nRP"),
)

# Extra rows when PIM and normal accesses share one row buffer per bank (no dual row buffers):
# PIM row commands then open/close the same rows as ACT/PRE, so they obey each other's RAS
# timing (conservatively, at PC level).
SHARED_BUFFER_CONSTRAINTS: tuple[TimingConstraint, ...] = (
    _row("pseudochannel", ("PRE", "PREA"), ("ACTAB", "ACTSB"), "nRP"),
    _row("pseudochannel", ("PREAB", "PRESB"), ("ACT", "REFpb"), "nRP"),
    _row("pseudochannel", "ACT", ("ACTAB", "ACTSB"), "nRC"),
    _row("pseudochannel", ("ACTAB", "ACTSB"), ("ACT", "REFpb"), "nRC"),
    _row("pseudochannel", "ACT", ("PREAB", "PRESB"), "nRAS"),
    _row("pseudochannel", ("ACTAB", "ACTSB"), ("PRE", "PREA"), "nRAS"),
    _row("pseudochannel", ("ACTAB", "ACTSB"), _RD, "nRCDRD"),
    _row("pseudochannel", ("ACTAB", "ACTSB"), _WR, "nRCDWR"),
    _row("pseudochannel", "RD", ("PREAB", "PRESB"), "nRTP"),
    _row("pseudochannel", "WR", ("PREAB", "PRESB"), "nCWL + nBL + nWR"),
    _row("pseudochannel", ("MACAB", "MACSB"), ("PRE", "PREA"), "nRTP"),
)



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
