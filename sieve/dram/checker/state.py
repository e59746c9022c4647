"""Bank-state replay for :mod:`sieve.dram.checker` (rule 3 of docs/checker.md).

:func:`check_state` is one compiled pass per row buffer (``_state.pyx``);
:func:`check_state_reference` is the same rule vectorised in numpy, as described here, and the
reference the tests hold the compiled pass to.

Each bank has one row buffer per buffer kind (two with PIM dual row buffers, else one shared
buffer). The state of a bank buffer before a command is fixed by the most recent *setter* of
that buffer: a bank-scope setter (ACT opens ``row``; PRE, RDA, WRA close), a SID setter of its
SID (a PIM bank bundle: ACTSB opens ``row`` in every bank of the SID, PRESB closes them) or a
pseudo-channel setter of its PC (ACTAB opens ``row`` in every bank; PREA/PREAB close every
bank). The latest wins; no setter at all means closed. Checks (ACT needs closed, RD/WR need
``row`` open, REFpb/REFab need closed in every buffer, ACTAB / ACTSB need every bank of the PC /
SID closed, MACAB / MACSB need every bank of the PC / SID open at ``row``) then compare that
state with the requirement, all with searchsorted over keys ``id * (n + 1) + position``. A
setter's effect applies even when its own check failed.

PC checks (ACTAB, MACAB, REFab) and SID checks (ACTSB, MACSB) take a fast path when nothing
below them (bank or SID setters) touched the PC or SID since its last setter of the whole (the
state of all its banks is then uniform); only the others are expanded to every bank. This
module owns no timing rule and never imports the engine.
"""

from __future__ import annotations

import numpy as np

from sieve.dram.checker.core import Collector, LogView, command_buffers, stable_order
from sieve.dram.commands import (
    COMMANDS,
    KIND_CLOSE,
    KIND_MAC,
    KIND_OPEN,
    KIND_READ,
    KIND_READ_AP,
    KIND_REFRESH,
    KIND_WRITE,
    KIND_WRITE_AP,
    LEVEL_INDEX,
    PARITY_COMMANDS,
)
from sieve.dram.spec import DramSpec

try:
    from sieve.dram.checker import _state
except ImportError as exc:  # pragma: no cover - exercised by hand on an unbuilt checkout
    from sieve.errors import NotBuiltError

    raise NotBuiltError.of("checker state replay", "sieve.dram.checker._state", exc) from None

__all__ = ["check_state", "check_state_reference"]

_KIND = np.array([c.kind for c in COMMANDS], dtype=np.int64)
_BANK_SCOPE = np.array([LEVEL_INDEX[c.scope] == LEVEL_INDEX["bank"] for c in COMMANDS])
_SID_SCOPE = np.array([LEVEL_INDEX[c.scope] == LEVEL_INDEX["sid"] for c in COMMANDS])
#: Bank-parity commands: addressed through bank 0 / 1, acting on every bank of that parity.
_PAR_SCOPE = np.array([c.name in PARITY_COMMANDS for c in COMMANDS])
_NAMES = [c.name for c in COMMANDS]
_BUFNAME = ("normal", "PIM")


def _last_before(keys: np.ndarray, ids: np.ndarray, pos: np.ndarray, stride: int):
    """Index into ``keys`` of the last entry with the same id and position < ``pos``, or -1."""
    r = np.searchsorted(keys, ids * stride + pos, side="left") - 1
    rc = np.maximum(r, 0)
    hit = (r >= 0) & (keys[rc] // stride == ids) if keys.size else np.zeros(ids.shape, bool)
    return np.where(hit, r, -1)


class _Setters:
    """Setters of one buffer at one granularity (bank or PC), sorted by (id, position)."""

    def __init__(self, ids: np.ndarray, pos: np.ndarray, value: np.ndarray, stride: int):
        k = ids * stride + pos
        o = stable_order(ids)  # positions come in increasing order: by (id, position)
        self.keys, self.pos, self.value = k[o], pos[o], value[o]
        self.stride = stride

    def last(self, ids: np.ndarray, pos: np.ndarray):
        """(position, value) of the last setter before ``pos`` at ``ids``; (-1, -1) if none."""
        r = _last_before(self.keys, ids, pos, self.stride)
        rc = np.maximum(r, 0)
        has = r >= 0
        if not self.keys.size:
            return np.full(ids.shape, -1, np.int64), np.full(ids.shape, -1, np.int64)
        return np.where(has, self.pos[rc], -1), np.where(has, self.value[rc], -1)


def _state_of_banks(bank_set: _Setters, sid_set: _Setters, pc_set: _Setters, banks, sids,
                    pcs, pos):
    """(open row or -1, setter position or -1) of each bank buffer just before ``pos``: the
    latest of its bank's, its SID's (bank bundles) and its PC's setters."""
    bp, bv = bank_set.last(banks, pos)
    sp, sv = sid_set.last(sids, pos)
    pp, pv = pc_set.last(pcs, pos)
    val, at = np.where(sp > pp, sv, pv), np.maximum(sp, pp)
    use_bank = bp > at
    return np.where(use_bank, bv, val), np.where(use_bank, bp, at)


def check_state(v: LogView, spec: DramSpec, out: Collector) -> None:
    """Replay row-buffer state per bank and buffer; add "state" violations to ``out``.

    One compiled pass per buffer (``_state.pyx``: each bank's, SID's and PC's last setter
    kept as the log is walked); :func:`check_state_reference` is the numpy version (module
    docstring) the tests hold it to, violation for violation."""
    n = v.n
    if n == 0:
        return
    org = spec.org
    bpp = org.banks_per_pc
    bps = org.bankgroups * org.banks
    bufs = command_buffers(spec)
    nbuf = int(bufs.max()) + 1
    cmd = np.where(v.valid, v.cmd, 0)
    kind = np.ascontiguousarray(np.where(v.valid, _KIND[cmd], -1), dtype=np.int64)
    scope = np.where(~v.valid, _state.SCOPE_NONE,
                     np.where(_PAR_SCOPE[cmd], _state.SCOPE_PAR,
                              np.where(_BANK_SCOPE[cmd], _state.SCOPE_BANK,
                                       np.where(_SID_SCOPE[cmd], _state.SCOPE_SID,
                                                _state.SCOPE_PC))))
    scope = np.ascontiguousarray(scope, dtype=np.int8)
    focus = np.ascontiguousarray(v.focus, dtype=bool).view(np.int8)
    buf = np.ascontiguousarray(bufs[cmd], dtype=np.int64)
    cols = [np.ascontiguousarray(x, dtype=np.int64) for x in (v.node[4], v.node[2], v.node[1],
                                                              v.row)]
    n_banks = v.n_nodes(len(v.counts) - 1)
    tick_req = v.tick
    for b in range(nbuf):
        what, p, st, setter, bank = _state.replay(
            kind, buf, scope, focus, *cols, b, n_banks, bps, bpp, org.sids, KIND_OPEN,
            KIND_CLOSE, KIND_READ, KIND_WRITE, KIND_READ_AP, KIND_WRITE_AP, KIND_MAC,
            KIND_REFRESH)
        m = what == 0
        k = kind[p[m]]
        _report_bank(out, v, p[m], st[m], setter[m], (k != KIND_OPEN) & (k != KIND_REFRESH),
                     b, tick_req)
        m = what == 3
        pm = p[m]
        _report_pc(out, v, pm, np.where(kind[pm] == KIND_MAC, v.row[pm], -1), st[m], setter[m],
                   bank[m], b, tick_req, unit="parity")
        for code, unit in ((1, "SID"), (2, "PC")):
            for uniform in (True, False):
                m = (what == code) & ((bank == -1) == uniform)
                pm = p[m]
                want = np.where(kind[pm] == KIND_MAC, v.row[pm], -1)
                _report_pc(out, v, pm, want, st[m], setter[m], bank[m], b, tick_req,
                           unit=unit)


def check_state_reference(v: LogView, spec: DramSpec, out: Collector) -> None:
    """:func:`check_state` in numpy, with searchsorted over the setters (module docstring)."""
    n = v.n
    if n == 0:
        return
    stride = n + 1
    org = spec.org
    bpp = org.banks_per_pc
    bps = org.bankgroups * org.banks  # banks of one SID (a PIM bank bundle)
    bufs = command_buffers(spec)
    nbuf = int(bufs.max()) + 1
    cmd = np.where(v.valid, v.cmd, 0)
    kind = np.where(v.valid, _KIND[cmd], -1)
    par_scope = _PAR_SCOPE[cmd] & v.valid
    bank_scope = _BANK_SCOPE[cmd] & v.valid & ~par_scope
    sid_scope = _SID_SCOPE[cmd] & v.valid
    pc_scope = ~_BANK_SCOPE[cmd] & ~_SID_SCOPE[cmd] & v.valid
    focus = v.focus  # checks only for these; setters from every record
    buf = bufs[cmd]
    bank_id, sid_id, pc_id = v.node[4], v.node[2], v.node[1]
    pos_all = np.arange(n, dtype=np.int64)
    opens = kind == KIND_OPEN
    closes = (kind == KIND_CLOSE) | (kind == KIND_READ_AP) | (kind == KIND_WRITE_AP)
    value = np.where(opens, v.row, -1)
    tick_req = v.tick  # state rules have no "required tick": report the command's own tick

    half = bpp // 2
    for b in range(nbuf):
        in_buf = buf == b
        bset = bank_scope & in_buf & (opens | closes)
        sset = sid_scope & in_buf & (opens | closes)
        pset = pc_scope & in_buf & (opens | closes)
        # a parity setter sets every bank of its parity: expanded into bank setters
        qs = np.flatnonzero(par_scope & in_buf & (opens | closes))
        par_banks = (np.repeat((bank_id[qs] // bpp) * bpp + bank_id[qs] % 2, half)
                     + np.tile(2 * np.arange(half), qs.size))
        b_ids = np.concatenate([bank_id[bset], par_banks])
        b_pos = np.concatenate([pos_all[bset], np.repeat(qs, half)])
        b_val = np.concatenate([value[bset], np.repeat(value[qs], half)])
        o = np.argsort(b_pos, kind="stable")
        b_ids, b_pos, b_val = b_ids[o], b_pos[o], b_val[o]
        bank_set = _Setters(b_ids, b_pos, b_val, stride)
        sid_set = _Setters(sid_id[sset], pos_all[sset], value[sset], stride)
        pc_set = _Setters(pc_id[pset], pos_all[pset], value[pset], stride)
        # setters below the PC keyed by their PC, and bank setters keyed by their SID, for
        # "did any part change since the last setter of the whole"
        sub_pc = np.sort(np.concatenate([(b_ids // bpp) * stride + b_pos,
                                         (sid_id[sset] // org.sids) * stride + pos_all[sset]]))
        bank_sid = np.sort((b_ids // bps) * stride + b_pos)

        def state(banks, pos, sets=(bank_set, sid_set, pc_set)):
            # bank ids nest: its SID is bank // bps, its PC bank // bpp
            return _state_of_banks(*sets, banks, banks // bps, banks // bpp, pos)

        # ---- bank-scope checks: OPEN (closed), column access (row open), REFpb (closed) ----
        bchk = bank_scope & focus & (((kind == KIND_OPEN) | (kind == KIND_READ)
                                      | (kind == KIND_WRITE) | (kind == KIND_READ_AP)
                                      | (kind == KIND_WRITE_AP)) & in_buf
                                     | (kind == KIND_REFRESH))
        p = pos_all[bchk]
        st, setter = state(bank_id[p], p)
        k = kind[p]
        need_open = (k != KIND_OPEN) & (k != KIND_REFRESH)
        bad = np.where(need_open, st != v.row[p], st != -1)
        _report_bank(out, v, p[bad], st[bad], setter[bad], need_open[bad], b, tick_req)

        # ---- parity checks: ACTPB needs every bank of its parity closed, MACPB open at row,
        # each looked up ----
        qchk = par_scope & focus & ((kind == KIND_OPEN) | (kind == KIND_MAC)) & in_buf
        p = pos_all[qchk]
        if p.size:
            want = np.where(kind[p] == KIND_MAC, v.row[p], -1)
            first_bank = (bank_id[p] // bpp) * bpp + bank_id[p] % 2
            banks = np.repeat(first_bank, half) + np.tile(2 * np.arange(half), p.size)
            st, setter = state(banks, np.repeat(p, half))
            wrong = (st != np.repeat(want, half)).reshape(p.size, half)
            j = wrong.argmax(axis=1)
            sel = np.flatnonzero(wrong.any(axis=1))
            flat = sel * half + j[sel]
            _report_pc(out, v, p[sel], want[sel], st[flat], setter[flat],
                       bank_id[p[sel]] % 2 + 2 * j[sel], b, tick_req, unit="parity")

        # ---- SID-scope checks (bank bundles): ACTSB needs the SID's banks closed, MACSB
        # open at row ----
        qchk = sid_scope & focus & ((kind == KIND_OPEN) | (kind == KIND_MAC)) & in_buf
        p = pos_all[qchk]
        if p.size:
            sids = sid_id[p]
            ssp, ssv = sid_set.last(sids, p)
            psp, psv = pc_set.last(sids // org.sids, p)
            _check_units(out, v, p, sids, np.maximum(ssp, psp), np.where(ssp > psp, ssv, psv),
                         bank_sid, stride, bps, state, b, tick_req, "SID")

        # ---- PC-scope checks: ACTAB / REFab need all closed, MACAB needs all open at row ----
        pchk = pc_scope & focus & ((((kind == KIND_OPEN) | (kind == KIND_MAC)) & in_buf)
                                   | (kind == KIND_REFRESH))
        p = pos_all[pchk]
        if p.size:
            pcs = pc_id[p]
            sp, sv = pc_set.last(pcs, p)
            _check_units(out, v, p, pcs, sp, sv, sub_pc, stride, bpp, state, b, tick_req, "PC")


def _check_units(out, v, p, units, sp, sv, sub, stride, n_banks, state, b, tick_req, unit):
    """Checks of every bank of a unit (a PC, or a SID of bank bundles) at positions ``p``: the
    unit's last setter ``(sp, sv)`` decides where nothing below it (``sub``: setters below the
    unit keyed by unit) changed since; elsewhere every bank of the unit is looked up. MAC
    commands need ``row`` open in every bank, the others every bank closed."""
    kind = _KIND[v.cmd[p]]
    want = np.where(kind == KIND_MAC, v.row[p], -1)
    lo = np.searchsorted(sub, units * stride + sp + 1, side="left")
    hi = np.searchsorted(sub, units * stride + p, side="left")
    uniform = hi == lo
    bad_u = uniform & (sv != want)
    _report_pc(out, v, p[bad_u], want[bad_u], sv[bad_u], sp[bad_u],
               np.full(int(bad_u.sum()), -1), b, tick_req, unit=unit)
    slow = np.flatnonzero(~uniform)
    if slow.size == 0:
        return
    ps = np.repeat(p[slow], n_banks)
    banks = np.repeat(units[slow] * n_banks, n_banks) + np.tile(np.arange(n_banks), slow.size)
    st, setter = state(banks, ps)
    wrong = (st != np.repeat(want[slow], n_banks)).reshape(slow.size, n_banks)
    first = wrong.argmax(axis=1)
    sel = np.flatnonzero(wrong.any(axis=1))
    flat = sel * n_banks + first[sel]
    _report_pc(out, v, p[slow][sel], want[slow][sel], st[flat], setter[flat], first[sel], b,
               tick_req, unit=unit)


def _index(v: LogView, pos: np.ndarray) -> np.ndarray:
    return np.where(pos >= 0, v.order[np.maximum(pos, 0)], -1)


def _report_bank(out, v, p, st, setter, need_open, b, tick_req) -> None:
    if p.size == 0:
        return
    for c in np.unique(v.cmd[p]):
        name = _NAMES[c]
        for need in (True, False):
            for closed in (True, False):
                m = (v.cmd[p] == c) & (need_open == need) & ((st == -1) == closed)
                if not m.any():
                    continue
                if need:
                    text = (f"{name} row {{b}} needs the row open in the {_BUFNAME[b]} buffer; "
                            + ("the bank is closed" if closed else "row {a} is open"))
                else:
                    text = (f"{name} needs the bank closed in the {_BUFNAME[b]} buffer; "
                            "row {a} is open")
                pm = p[m]
                out.add(out.code("state", text), pm, _index(v, setter[m]), v.ch[pm],
                        v.tick[pm], tick_req[pm], a=st[m], b=v.row[pm])


def _report_pc(out, v, p, want, st, setter, bank, b, tick_req, unit: str = "PC") -> None:
    """Report checks of every bank of a PC (``unit`` "PC") or of a SID (a PIM bank bundle,
    "SID"); ``bank`` is the first offending bank in it (-1: all)."""
    if p.size == 0:
        return
    bank = np.asarray(bank)
    whole = {"PC": "pseudo-channel", "SID": "SID", "parity": "parity"}[unit]
    for c in np.unique(v.cmd[p]):
        name = _NAMES[c]
        need = (f"{name} row {{b}} needs every bank open at that row" if _KIND[c] == KIND_MAC
                else f"{name} needs every bank closed")
        for closed in (True, False):
            for uniform in (True, False):
                m = (v.cmd[p] == c) & ((st == -1) == closed) & ((bank == -1) == uniform)
                if not m.any():
                    continue
                who = f"every bank of the {whole}" if uniform else f"bank {{c}} of the {unit}"
                state = "is closed" if closed else "has row {a} open"
                text = f"{need} in the {_BUFNAME[b]} buffer; {who} {state}"
                pm = p[m]
                out.add(out.code("state", text), pm, _index(v, setter[m]), v.ch[pm],
                        v.tick[pm], tick_req[pm], a=st[m], b=want[m], c=bank[m])
