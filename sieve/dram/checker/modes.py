"""PIM mode protocol replay for :mod:`sieve.dram.checker` (rule 6 of docs/checker.md).

For specs whose PIM units follow the ``"hbm-pim"`` protocol (Samsung HBM-PIM), each
pseudo-channel is replayed through the mode register as SAITPublic/PIMSimulator's device side
changes it (``src/Rank.cpp`` ``Rank::execute``, ``src/PIMRank.cpp`` ``writeHab`` /
``controlPIM``):

* it starts in single-bank mode (SB);
* SB -> all-bank mode (HAB) once banks 0 and 1 of bank groups 0 and 2 have all been activated
  at the ABMR row 0x17ff (the fourth activation switches);
* HAB <-> all-bank PIM mode (HAB_PIM) with every write to column 0 of the register row 0x3fff
  (PIM_OP_MODE; the log has no data, so each such write toggles);
* HAB -> SB once banks 0 and 1 of bank group 0 have both been *precharged* while open at the
  SBMR row 0x1fff (PIMSimulator switches on the precharge, not on the activation).

ACTAB, PREAB, the bank-parity ACTPB / PREPB, GWRITE and writes to the GRF registers (WR to the
register row 0x3fff at columns 8..15, GRF_A, or 24..31, GRF_B: ``PIMRank::writeHab``; in SB they
are plain writes) need HAB or HAB_PIM, MACAB / MACPB need HAB_PIM; a pseudo-channel that left
SB must be back in SB at the end of the log (a kernel that never leaves PIM mode). The row
addresses are restated here from PIMSimulator on purpose, not imported from the engine's
:mod:`sieve.dram.pimmode`: the checker shares only the spec and the log format with the
engine. This module owns no timing rule.
"""

from __future__ import annotations

import numpy as np

from sieve.dram.checker.core import Collector, LogView
from sieve.dram.commands import COMMAND_INDEX
from sieve.dram.spec import DramSpec

__all__ = ["check_modes"]

# Reserved rows of PIMSimulator's HBM-PIM (src/Rank.cpp, src/PIMRank.cpp, src/tests/PIMKernel.cpp)
_ROW_ABMR = 0x17FF
_ROW_SBMR = 0x1FFF
_ROW_REG = 0x3FFF

_ACT, _WR, _PRE = COMMAND_INDEX["ACT"], COMMAND_INDEX["WR"], COMMAND_INDEX["PRE"]
_PREA, _PREAB = COMMAND_INDEX["PREA"], COMMAND_INDEX["PREAB"]
_RDA, _WRA = COMMAND_INDEX["RDA"], COMMAND_INDEX["WRA"]
_MACS = [COMMAND_INDEX[n] for n in ("MACAB", "MACPB")]
_PREPB = COMMAND_INDEX["PREPB"]
_NEEDS_AB = [COMMAND_INDEX[n] for n in ("ACTAB", "PREAB", "GWRITE", "MACAB", "ACTPB", "MACPB",
                                        "PREPB")]
_SB, _HAB, _HAB_PIM = 0, 1, 2
_MODE_NAMES = ("single-bank mode (SB)", "all-bank mode (HAB)", "all-bank PIM mode (HAB_PIM)")
_ABMR_BANKS = ((0, 0), (2, 0), (0, 1), (2, 1))  # (bank group, bank), sid 0
_SBMR_BANKS = ((0, 0), (0, 1))
# event kinds of the replay
_EV_ABMR, _EV_SBMR, _EV_MODE = 0, 1, 2


def _bit(bg: np.ndarray, bank: np.ndarray, banks: tuple[tuple[int, int], ...]) -> np.ndarray:
    """1 << i for the i-th (bank group, bank) of ``banks``, 0 for the others."""
    out = np.zeros(bg.shape, dtype=np.int64)
    for i, (g, b) in enumerate(banks):
        out[(bg == g) & (bank == b)] = 1 << i
    return out


def _sbmr_closes(v: LogView, spec: DramSpec, pc: np.ndarray) -> np.ndarray:
    """Bit (as :func:`_bit` over ``_SBMR_BANKS``) for each command that closes bank 0 or 1 of
    bank group 0 (sid 0) while it is open at the SBMR row: PRE of the bank, RDA/WRA to it,
    PREA of its PC, or PREAB / PREPB of its parity when PIM and normal commands share the row
    buffer."""
    ok = v.valid
    dual = bool(spec.pim.dual_row_buffer)
    out = np.zeros(v.n, dtype=np.int64)
    pc_close = ok & ((v.cmd == _PREA) | ((v.cmd == _PREAB) & (not dual)))
    for i, (g, b) in enumerate(_SBMR_BANKS):
        at = ok & (v.sid == 0) & (v.bg == g) & (v.bank == b)
        acts = np.flatnonzero(at & (v.cmd == _ACT))
        if acts.size == 0:
            continue
        par_close = (ok & (v.cmd == _PREPB) & (v.bank % 2 == (g * spec.org.banks + b) % 2)
                     & (not dual))
        closes = np.flatnonzero((at & np.isin(v.cmd, (_PRE, _RDA, _WRA))) | pc_close
                                | par_close)
        if closes.size == 0:
            continue
        # per PC, in sorted position order: key = pc * stride + position
        stride = v.n + 1
        ka = pc[acts] * stride + acts
        kc = pc[closes] * stride + closes
        oa, oc = np.argsort(ka, kind="stable"), np.argsort(kc, kind="stable")
        ka, acts = ka[oa], acts[oa]
        kc_sorted = kc[oc]
        # the last ACT of this bank before each close, and the last close before that close
        ia = np.searchsorted(ka, kc, side="left") - 1
        ic = np.searchsorted(kc_sorted, kc, side="left") - 1
        iac = np.maximum(ia, 0)
        has_act = (ia >= 0) & (ka[iac] // stride == pc[closes])
        act_pos = np.where(has_act, acts[iac], -1)
        icc = np.maximum(ic, 0)
        prev_close = np.where((ic >= 0) & (kc_sorted[icc] // stride == pc[closes]),
                              kc_sorted[icc] % stride, -1)
        is_open = has_act & (act_pos > prev_close)
        hit = is_open & (v.row[np.maximum(act_pos, 0)] == _ROW_SBMR)
        out[closes[hit]] |= 1 << i
    return out


def check_modes(v: LogView, spec: DramSpec, out: Collector) -> None:
    """Replay each PC's mode; add "mode" violations for PIM commands issued in the wrong one
    and for PCs that end the log outside single-bank mode."""
    p = spec.pim
    if p is None or p.modes != "hbm-pim" or v.n == 0:
        return
    ok = v.valid
    pc = v.node[1]
    ab = np.where(ok & (v.cmd == _ACT) & (v.row == _ROW_ABMR) & (v.sid == 0),
                  _bit(v.bg, v.bank, _ABMR_BANKS), 0)
    sb = _sbmr_closes(v, spec, pc)
    md = ok & (v.cmd == _WR) & (v.row == _ROW_REG) & (v.col == 0)
    # the few protocol events, replayed in order (positions are per-channel (tick, seq) order)
    mode: dict[int, list[int]] = {}  # pc -> [mode, ABMR banks seen, SBMR banks seen]
    last: dict[int, int] = {}  # pc -> position of its last protocol event
    ch_pc, ch_pos, ch_val = [], [], []
    events = np.flatnonzero((ab > 0) | (sb > 0) | md)
    for i, q, a, s, m in zip(events.tolist(), pc[events].tolist(), ab[events].tolist(),
                             sb[events].tolist(), md[events].tolist(), strict=True):
        st = mode.setdefault(q, [_SB, 0, 0])
        last[q] = i
        before = st[0]
        if st[0] == _SB:
            if a:
                st[1] |= a
                if st[1] == (1 << len(_ABMR_BANKS)) - 1:
                    st[0], st[1] = _HAB, 0
        elif st[0] == _HAB and s:
            st[2] |= s
            if st[2] == (1 << len(_SBMR_BANKS)) - 1:
                st[0], st[2] = _SB, 0
        elif m:
            st[0] = _HAB_PIM if st[0] == _HAB else _HAB
        if st[0] != before:
            ch_pc.append(q)
            ch_pos.append(i)
            ch_val.append(st[0])
    # a PC left outside SB at the end of the log: reported at its last command
    for q, st in mode.items():
        if st[0] != _SB:
            mine = np.flatnonzero(pc == q)
            pos = int(mine[-1]) if mine.size else last[q]
            out.add(out.code("mode", f"the log ends with the pseudo-channel in "
                                     f"{_MODE_NAMES[st[0]]}; a PIM kernel must return it to "
                                     f"single-bank mode (HAB -> SB: precharge the SBMR row "
                                     f"{_ROW_SBMR:#x} in banks 0 and 1 of bank group 0)"),
                    pos, -1, v.ch[pos], v.tick[pos], v.tick[pos])
    grf = (ok & (v.cmd == _WR) & (v.row == _ROW_REG)
           & (((v.col >= 8) & (v.col <= 15)) | ((v.col >= 24) & (v.col <= 31))))
    chk = np.flatnonzero((ok & np.isin(v.cmd, _NEEDS_AB)) | grf)
    if chk.size == 0:
        return
    stride = v.n + 1
    keys = np.array(ch_pc, dtype=np.int64) * stride + np.array(ch_pos, dtype=np.int64)
    vals = np.array(ch_val, dtype=np.int64)
    o = np.argsort(keys, kind="stable")
    keys, vals = keys[o], vals[o]
    q = pc[chk]
    if keys.size:
        r = np.searchsorted(keys, q * stride + chk, side="left") - 1
        rc = np.maximum(r, 0)
        has = (r >= 0) & (keys[rc] // stride == q)
        cur = np.where(has, vals[rc], _SB)
    else:
        cur = np.full(chk.shape, _SB, dtype=np.int64)
    need_pim = np.isin(v.cmd[chk], _MACS)
    bad = (cur == _SB) | (need_pim & (cur != _HAB_PIM))
    kind = np.where(grf[chk], -1, v.cmd[chk])  # -1: a GRF write
    for c in np.unique(kind[bad]):
        m = bad & (kind == c)
        name = ("WR to a GRF register (register row 0x3fff, column 8..15 or 24..31)" if c < 0
                else next(k for k, i in COMMAND_INDEX.items() if i == c))
        need = _MODE_NAMES[_HAB_PIM] if c in _MACS else "all-bank mode (HAB or HAB_PIM)"
        for val in np.unique(cur[m]):
            pos = chk[m & (cur == val)]
            out.add(out.code("mode", f"{name} needs the pseudo-channel in {need}; it is in "
                                     f"{_MODE_NAMES[int(val)]}"),
                    pos, -1, v.ch[pos], v.tick[pos], v.tick[pos])
