"""PIM mode protocols: the DRAM command sequences a host issues around every PIM kernel.

This module owns the *data* of a mode protocol (which bank, which row, which command, in which
order); the engine (``sieve/_dram_pim.pxi``) expands a kernel with these sequences and times
every command like any other, and :mod:`sieve.dram.checker` checks the protocol (rule 6). It
simulates nothing.

Protocols (``spec.pim.modes``, :data:`MODE_PROTOCOLS`):

``"none"``
    The PIM commands are commands of their own (ACTAB, MACAB, GWRITE, RDRES), accepted at any
    time: AttAcc's HBM3-PIM adds them to the command set with no mode register (its SETM /
    SETH configuration commands have no timing rows: scale-snu/attacc_simulator
    ``pim_ramulator_src/HBM3-PIM.cpp``), as SK hynix AiM does (pim-simulators.md §1). The
    AttAcc and B200-style presets use it.

``"hbm-pim"``
    Samsung HBM-PIM (Aquabolt-XL), as SAITPublic/PIMSimulator's host kernels drive it
    (``src/tests/PIMKernel.cpp`` ``executeGemv``, ``changePIMMode``, ``programCrf``,
    ``parkIn``/``parkOut``; the device side in ``src/Rank.cpp`` and ``src/PIMRank.cpp``). The
    DRAM starts in single-bank mode (SB, a normal HBM2). Per kernel:

    1. park-in (``pim.park``): a read of column 0 of row 0x1000 in every bank (ACT, RD, PRE);
    2. SB -> all-bank (HAB): a write (ACT, WR column 0x1f) to the ABMR row 0x17ff in banks 0
       and 1 of bank groups 0 and 2 (PIMSimulator switches when the fourth is activated,
       ``Rank::execute``), then PRE;
    3. program the CRF: ACT the register row 0x3fff in bank 1, WR ``pim.crf_bursts`` bursts at
       columns 4.. (8 x 32-bit instructions per burst; the GEMV microkernel MAC, JUMP, MAC,
       JUMP, NOP, EXIT is one burst, ``PIMCmdGen.h``);
    4. per input vector: HAB -> HAB_PIM: WR to column 0 of the register row (PIM_OP_MODE = 1,
       which also zeroes GRF_B, ``PIMRank::controlPIM``); the GEMV: per input chunk the GRF_A
       writes (``grf_a``: WRs to columns 8.. of the register row in bank 1 of bank group 0,
       ``computeGemv``'s WRIO_TO_GRF; they replace GWRITE, so the MAC row is closed and
       reopened around them, PIMSimulator's open-page controller does the same), then ACTAB,
       MACAB; the GRF_B -> bank writes (``grf_b``: one WR per GRF_B register to bank 1 of bank
       group 0 at the row after the kernel's weights, ``executeGemv``'s GRFB_TO_BANK); HAB_PIM
       -> HAB: WR to column 0 (PIM_OP_MODE = 0); the results (RDRES);
    5. HAB -> SB: a write (ACT, WR column 0x1f) to the SBMR row 0x1fff in banks 0 and 1 of
       bank group 0, then PRE (PIMSimulator switches back when both are precharged);
    6. park-out (``pim.park``): as park-in.

    In all-bank mode PIMSimulator broadcasts an ACT/WR/PRE of bank 0 (1) to every even (odd)
    bank; sieve times it as the one bank command it is on the bus and leaves the other banks'
    state alone (the register and mode rows are not array rows, and the sequences close every
    row they open). The register row that a step leaves open is closed when the next command
    needs the bank (PRE, or PREA before an all-bank activation), as PIMSimulator's open-page
    controller does.

The sequences are lists of steps ``(op, sid, bankgroup, bank, row, col)``; an ``ACT`` step is
skipped when its row is already open, a ``PRE`` step when the bank is closed, and ``RD``/``WR``
steps open their row first when needed (after a refresh closed it, say).
"""

from __future__ import annotations

from sieve.dram.spec import HBM_PIM_REG_ROW, MODE_PROTOCOLS, DramSpec
from sieve.lazy import numpy as np

__all__ = [
    "HBM_PIM_GRF",
    "MODE_PROTOCOLS",
    "OP_ACT",
    "OP_PRE",
    "OP_RD",
    "OP_WR",
    "OVERHEADS",
    "ROW_ABMR",
    "ROW_AFTER_WEIGHTS",
    "ROW_PARK",
    "ROW_REG",
    "ROW_SBMR",
    "SEQUENCES",
    "mode_sequences",
    "reserved_rows",
    "result_rows",
]

# Step operations (the engine's SEQ_OP_* values)
OP_ACT = 0
OP_PRE = 1
OP_RD = 2
OP_WR = 3

#: Reserved row addresses of the "hbm-pim" protocol (PIMSimulator ``PIMKernel.cpp`` /
#: ``Rank.cpp``: ABMR 0x17ff, SBMR 0x1fff, the PIM register row 0x3fff; park row 1 << 12).
ROW_ABMR = 0x17FF
ROW_SBMR = 0x1FFF
ROW_REG = HBM_PIM_REG_ROW
ROW_PARK = 1 << 12
#: Step row meaning "the row after the running kernel's weights" (the engine resolves it:
#: base_row + n_chunks x rows_per_chunk, with bank-parity rows base_row + ceil(n_chunks / 2)
#: x rows_per_chunk); PIMSimulator's GRFB_TO_BANK writes there
#: (``executeGemv``: column past the weights' columns of the odd bank).
ROW_AFTER_WEIGHTS = -2
#: GRF_A and GRF_B registers per PIM block (8 x 256-bit each: PIMSimulator src/PIMBlock.h,
#: ``num_grfA_ = num_grfB_ = 8`` in PIMKernel.h); the samsung-hbm2-pim preset's gbuf_bytes
#: (256 B) is GRF_A's size.
HBM_PIM_GRF = 8
#: Column the ABMR / SBMR mode-switch writes address (PIMKernel::changePIMMode: 0x1f).
MODE_COL = 0x1F

#: The sequences, in the order a kernel meets them (the engine's SEQ_* ids). ``hab_to_pim``
#: and ``pim_to_hab`` run once per input vector, the others once per kernel.
#: ``grf_a`` is issued once per input chunk (its first ``gw_per_chunk`` steps, wrapping), in
#: place of the GWRITEs; ``grf_b`` once per vector after its last MAC.
SEQUENCES = ("park_in", "sb_to_hab", "crf", "hab_to_pim", "grf_a", "grf_b", "pim_to_hab",
             "hab_to_sb", "park_out")

#: What :attr:`sieve.dram.PimResult.overhead_ns` reports: the sequences, then ``readback``
#: (the RDRES bursts of every vector).
OVERHEADS = SEQUENCES + ("readback",)

#: Step fields: op, sid, bankgroup, bank, row, col.
STEP_FIELDS = 6


def _park(spec: DramSpec) -> list[tuple[int, ...]]:
    """One read of column 0 of the park row in every bank, banks in PIMSimulator's order
    (bank 0 of bank groups 0..3, then bank 1, ...). Its FR-FCFS controller overlaps them:
    four activations ahead, each read followed by the next activation, a bank precharged
    after the read eight banks later (its trace: ACT, ACT, ACT, ACT, RD, ACT, RD, ..., PRE);
    an in-order stream gets that overlap only in that order."""
    o = spec.org
    banks = [(bg, ba) for ba in range(o.banks) for bg in range(o.bankgroups)]
    ahead, lag = o.bankgroups, 2 * o.bankgroups
    steps = [(OP_ACT, 0, bg, ba, ROW_PARK, -1) for bg, ba in banks[:ahead]]
    for i, (bg, ba) in enumerate(banks):
        steps.append((OP_RD, 0, bg, ba, ROW_PARK, 0))
        if i + ahead < len(banks):
            steps.append((OP_ACT, 0, *banks[i + ahead], ROW_PARK, -1))
        if i >= lag:
            steps.append((OP_PRE, 0, *banks[i - lag], -1, -1))
    steps += [(OP_PRE, 0, bg, ba, -1, -1) for bg, ba in banks[max(len(banks) - lag, 0):]]
    return steps


def mode_sequences(spec: DramSpec) -> tuple[np.ndarray, np.ndarray]:
    """The step table of ``spec``'s protocol: ``(steps, ptr)`` with ``steps`` an int64 array
    of shape (n, :data:`STEP_FIELDS`) and ``ptr`` the CSR pointer (len(SEQUENCES) + 1) of each
    sequence's steps. Every sequence is empty under ``"none"``."""
    p = spec.pim
    seqs: list[list[tuple[int, ...]]] = [[] for _ in SEQUENCES]
    if p is not None and p.modes == "hbm-pim":
        idx = {name: i for i, name in enumerate(SEQUENCES)}
        if p.park:
            seqs[idx["park_in"]] = _park(spec)
            seqs[idx["park_out"]] = _park(spec)
        # ABMR: PIMSimulator's changePIMMode writes column 0x1f of the ABMR row in banks 0
        # and 1 of bank groups 0 and 2 (ACT, WR, PRE each); its controller issues them as
        # ACT x3 (bank groups alternating, tRRD_S), WR x3, ACT of the fourth (the mode
        # switches), its WR, then the precharges (its command trace); in-order here
        abmr = [(0, 0), (2, 0), (0, 1), (2, 1)]
        seqs[idx["sb_to_hab"]] = (
            [(OP_ACT, 0, bg, ba, ROW_ABMR, -1) for bg, ba in abmr[:3]]
            + [(OP_WR, 0, bg, ba, ROW_ABMR, MODE_COL) for bg, ba in abmr[:3]]
            + [(OP_ACT, 0, *abmr[3], ROW_ABMR, -1), (OP_WR, 0, *abmr[3], ROW_ABMR, MODE_COL)]
            + [(OP_PRE, 0, bg, ba, -1, -1) for bg, ba in abmr])
        seqs[idx["crf"]] = [(OP_WR, 0, 0, 1, ROW_REG, 4 + i) for i in range(p.crf_bursts)]
        seqs[idx["hab_to_pim"]] = [(OP_WR, 0, 0, 0, ROW_REG, 0)]
        # GRF_A at register-row columns 8..15 (PIMKernel::computeGemv; a chunk of more bursts
        # wraps over them), GRF_B written back to the row after the weights, every register
        # once per vector (executeGemv: num_grf_ writes)
        seqs[idx["grf_a"]] = [(OP_WR, 0, 0, 1, ROW_REG, 8 + i) for i in range(HBM_PIM_GRF)]
        seqs[idx["grf_b"]] = [(OP_WR, 0, 0, 1, ROW_AFTER_WEIGHTS, i) for i in range(HBM_PIM_GRF)]
        seqs[idx["pim_to_hab"]] = [(OP_WR, 0, 0, 0, ROW_REG, 0)]
        # SBMR: a write of column 0x1f in banks 0 and 1 of bank group 0 (ACT, WR each), then
        # the precharges, which switch back (PIMSimulator's trace order)
        sbmr = [(0, 0), (0, 1)]
        seqs[idx["hab_to_sb"]] = (
            [st for bg, ba in sbmr for st in ((OP_ACT, 0, bg, ba, ROW_SBMR, -1),
                                               (OP_WR, 0, bg, ba, ROW_SBMR, MODE_COL))]
            + [(OP_PRE, 0, bg, ba, -1, -1) for bg, ba in sbmr])
    ptr = np.zeros(len(SEQUENCES) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(s) for s in seqs])
    flat = [step for s in seqs for step in s]
    steps = np.array(flat if flat else [[0] * STEP_FIELDS], dtype=np.int64).reshape(
        -1, STEP_FIELDS)
    return np.ascontiguousarray(steps), ptr


def result_rows(spec: DramSpec) -> int:
    """Rows after a kernel's weights that its protocol writes (the GRF_B row under
    ``"hbm-pim"``, :data:`ROW_AFTER_WEIGHTS`): 1 under ``"hbm-pim"``, else 0."""
    p = spec.pim
    return 1 if p is not None and p.modes == "hbm-pim" else 0


def reserved_rows(spec: DramSpec) -> tuple[int, ...]:
    """Row addresses the spec's protocol gives a meaning (no PIM weights may live there):
    the park row (with ``pim.park``), ABMR, SBMR and the register row under ``"hbm-pim"``,
    none under ``"none"``. ⚠ PIMSimulator also runs PIM instructions only on rows whose bit
    12 is clear (``PIMRank::isToggleCond``); sieve does not restrict weight rows further."""
    p = spec.pim
    if p is None or p.modes != "hbm-pim":
        return ()
    return ((ROW_PARK,) if p.park else ()) + (ROW_ABMR, ROW_SBMR, ROW_REG)
