"""The engine's hierarchy levels and command set: data, not code.

Each command is a :class:`CommandDef` row (scope, command bus, effect on bank state, row
buffer). The compiled engine knows the commands by index; ``sieve/_dram.pxd`` declares the
same order and :mod:`sieve.dram.engine` asserts it at import. Adding a command means adding a
row here, timing rows in :mod:`sieve.dram.constraints` and (for a new kind of bank-state
effect) a case in the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BUNDLE_COMMANDS",
    "BUFFER_NORMAL",
    "BUFFER_PIM",
    "BUS_COL",
    "BUS_ROW",
    "COMMANDS",
    "COMMAND_INDEX",
    "LEVELS",
    "LEVEL_INDEX",
    "PARITY_COMMANDS",
    "PIM_COMMANDS",
    "CommandDef",
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
KIND_MAC = 8  # PIM MAC: every bank it addresses (the PC's, one SID's or one parity's) holds
#               the row open

BUS_ROW = 0
BUS_COL = 1

BUFFER_NORMAL = 0
BUFFER_PIM = 1


@dataclass(frozen=True, slots=True)
class CommandDef:
    """One command of the engine's command set (data, not code)."""

    name: str
    scope: str  # lowest level the command addresses ("bank", "sid" or "pseudochannel")
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
    # Bundled PIM rows (pim.bundles > 1; Duplex Logic-PIM's bank bundles, one per SID here):
    # the PUs read one bundle's banks at a time, so a bundle can switch rows while another
    # streams. Appended after RDRES so the ids of every other command stay as they were.
    CommandDef(
        "ACTSB", "sid", BUS_ROW, KIND_OPEN, BUFFER_PIM,
        doc="PIM bundle activate: the same row in every bank of one SID (bank bundle)",
    ),
    CommandDef(
        "MACSB", "sid", BUS_COL, KIND_MAC, BUFFER_PIM,
        doc="PIM bundle MAC: every PU reads one burst of its bank(s) in one SID",
    ),
    CommandDef(
        "PRESB", "sid", BUS_ROW, KIND_CLOSE, BUFFER_PIM,
        doc="PIM bundle precharge: closes the PIM rows of one SID",
    ),
    # Bank-parity PIM rows (pim.bank_parity; Samsung HBM-PIM's all-bank mode, as PIMSimulator
    # src/Rank.cpp times it: in that mode an ACT, RD or PRE to bank 0 (1) of bank group 0 acts
    # on every even (odd) bank of the PC). Addressed through that bank, which carries their
    # bank-level timing; appended after PRESB so every other command keeps its id.
    CommandDef(
        "ACTPB", "bank", BUS_ROW, KIND_OPEN, BUFFER_PIM,
        doc="PIM parity activate: the same row in every bank of one parity (bank 0: even, "
            "1: odd)",
    ),
    CommandDef(
        "MACPB", "bank", BUS_COL, KIND_MAC, BUFFER_PIM,
        doc="PIM parity MAC: every PU reads one burst of its bank of one parity",
    ),
    CommandDef(
        "PREPB", "bank", BUS_ROW, KIND_CLOSE, BUFFER_PIM,
        doc="PIM parity precharge: closes the rows of every bank of one parity",
    ),
)
COMMAND_INDEX = {c.name: i for i, c in enumerate(COMMANDS)}
#: Commands of the bundled PIM rows (only in specs with pim.bundles > 1).
BUNDLE_COMMANDS = ("ACTSB", "MACSB", "PRESB")
#: Commands of the bank-parity PIM rows (only in specs with pim.bank_parity).
PARITY_COMMANDS = ("ACTPB", "MACPB", "PREPB")
PIM_COMMANDS = ("ACTAB", "MACAB", "PREAB", "GWRITE", "RDRES") + BUNDLE_COMMANDS + PARITY_COMMANDS
