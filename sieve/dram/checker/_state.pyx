# The bank-state replay of the independent checker (sieve.dram.checker.state), one compiled
# pass over the log in per-channel issue order for one row buffer.
#
# Each bank buffer's state before a command is the latest of its bank's, its SID's and its
# PC's setters (the same rule as the numpy version state.py keeps as the reference the tests
# compare with). The pass keeps, per bank, SID and PC, the last setter's position and value,
# and per SID and PC the position of the last setter below it, so a SID or PC check is uniform
# (one lookup) when nothing below it changed since its own last setter, and looks at each of
# its banks otherwise. Checks read the state before the command; its own setter applies after,
# even when its check failed. Commands outside the focus set state but are not checked. Shares
# nothing with the engine.

from libc.stdint cimport int8_t, int64_t
from libc.stdlib cimport free, malloc

import numpy as np

cdef enum:  # scope classes of a command (per position)
    C_NONE = 0
    C_BANK = 1
    C_SID = 2
    C_PC = 3
    C_PAR = 4  # a bank parity: every other bank of the PC from bank_id (ACTPB/MACPB/PREPB)

SCOPE_NONE, SCOPE_BANK, SCOPE_SID, SCOPE_PC, SCOPE_PAR = C_NONE, C_BANK, C_SID, C_PC, C_PAR


include "_found.pxi"


cdef inline int _check_failed(Found* f, int64_t what, int64_t pos, int64_t st, int64_t setter,
                              int64_t bank) noexcept nogil:
    """Record one failed check: its kind (0 bank, 1 SID, 2 PC, 3 parity), position, the
    offending state and its setter, the first offending bank of the unit (-1: all)."""
    cdef int64_t rec[5]
    rec[0] = what
    rec[1] = pos
    rec[2] = st
    rec[3] = setter
    rec[4] = bank
    return _push(f, rec)


cdef inline void _bank_state(int64_t bank, int64_t bps, int64_t bpp, const int64_t* bpos,
                             const int64_t* bval, const int64_t* spos, const int64_t* sval,
                             const int64_t* ppos, const int64_t* pval, int64_t* st,
                             int64_t* at) noexcept nogil:
    """(open row or -1, setter position or -1) of a bank: the latest of its bank's, SID's and
    PC's setters."""
    cdef int64_t s = bank // bps, p = bank // bpp
    cdef int64_t sp = spos[s], pp = ppos[p], bp = bpos[bank]
    cdef int64_t val = sval[s] if sp > pp else pval[p]
    cdef int64_t a = sp if sp > pp else pp
    if bp > a:
        st[0] = bval[bank]
        at[0] = bp
    else:
        st[0] = val
        at[0] = a


def replay(const int64_t[::1] kind, const int64_t[::1] buf, const int8_t[::1] scope,
           const int8_t[::1] focus, const int64_t[::1] bank_id, const int64_t[::1] sid_id,
           const int64_t[::1] pc_id, const int64_t[::1] row, int64_t b, int64_t n_banks,
           int64_t bps, int64_t bpp, int64_t sids_per_pc, int64_t k_open, int64_t k_close,
           int64_t k_read, int64_t k_write, int64_t k_read_ap, int64_t k_write_ap,
           int64_t k_mac, int64_t k_refresh):
    """Replay buffer ``b`` (module comment); every check that fails, in position order.

    Args:
        kind: command kind per sorted position (-1: not valid, never checked or a setter).
        buf: row buffer each command uses; scope: SCOPE_* class; focus: checked (1) or
            context only (0).
        bank_id, sid_id, pc_id: flat node ids at the bank, SID and PC levels (-1 where the
            command's scope does not reach them).
        row: the command's row.
        n_banks: bank ids are in [0, n_banks); bps: banks per SID, bpp: banks per PC (a
            multiple of bps); sids_per_pc: SIDs per PC.
        k_*: the command kinds (sieve.dram.commands.KIND_*).

    Returns:
        ``(what, pos, state, setter, bank)`` int64 arrays: ``what`` 0 for a bank check, 1 a SID
        check, 2 a PC check, 3 a parity check; ``state``/``setter`` the offending open row (-1:
        closed) and the sorted position of the setter that made it (-1: none); ``bank`` the
        first offending bank in the SID / PC (index within it) or parity (index within the PC;
        -1: every bank, the unit's state was uniform; a parity is looked up bank by bank).
        A parity command (SCOPE_PAR) addresses bank ``bank_id`` and acts on every other bank
        of its PC from it: its check is each of those banks', and as a setter it sets each.
    """
    cdef Py_ssize_t n = kind.shape[0], i, j
    cdef int64_t n_sids, n_pcs, k, bk, s, p, st, at, want, unit, nb, sp, sv, first_st = 0
    cdef int64_t first_at = 0, first = -1, sub, b0
    cdef bint opens, closes, check
    if (buf.shape[0] != n or scope.shape[0] != n or focus.shape[0] != n
            or bank_id.shape[0] != n or sid_id.shape[0] != n or pc_id.shape[0] != n
            or row.shape[0] != n):
        raise ValueError("replay: columns must have one length")
    if bps < 1 or bpp < bps or bpp % bps or n_banks < 0 or n_banks % bpp or sids_per_pc < 1:
        raise ValueError("replay: bank counts must nest (banks per SID, per PC, total)")
    for i in range(n):
        if scope[i] == C_PAR and kind[i] >= 0 and bpp % 2:
            raise ValueError("replay: parity commands need an even number of banks per PC")
    n_sids = n_banks // bps
    n_pcs = n_banks // bpp
    if n_sids != n_pcs * sids_per_pc:
        raise ValueError("replay: SIDs per PC do not match the bank counts")
    for i in range(n):
        if kind[i] < 0 or scope[i] == C_NONE:
            continue
        if not (0 <= pc_id[i] < n_pcs) or (scope[i] != C_PC and not (
                0 <= sid_id[i] < n_sids and sid_id[i] // sids_per_pc == pc_id[i])) or (
                (scope[i] == C_BANK or scope[i] == C_PAR) and not (
                    0 <= bank_id[i] < n_banks and bank_id[i] // bps == sid_id[i])):
            raise ValueError("replay: node ids out of range or not nested")
    cdef int64_t* mem = <int64_t*>malloc(max(2 * n_banks + 3 * n_sids + 3 * n_pcs, 1)
                                         * sizeof(int64_t))
    if mem == NULL:
        raise MemoryError("replay: cannot allocate the bank state")
    cdef int64_t* bpos = mem
    cdef int64_t* bval = bpos + n_banks
    cdef int64_t* spos = bval + n_banks
    cdef int64_t* sval = spos + n_sids
    cdef int64_t* ssub = sval + n_sids
    cdef int64_t* ppos = ssub + n_sids
    cdef int64_t* pval = ppos + n_pcs
    cdef int64_t* psub = pval + n_pcs
    cdef Found found
    _found_init(&found, 5)
    cdef int err = 0
    with nogil:
        for j in range(2 * n_banks + 3 * n_sids + 3 * n_pcs):
            mem[j] = -1
        for i in range(n):
            k = kind[i]
            if k < 0 or scope[i] == C_NONE:
                continue
            # ---- the check, on the state before the command ----
            if focus[i]:
                if scope[i] == C_BANK:
                    check = ((k == k_open or k == k_read or k == k_write or k == k_read_ap
                              or k == k_write_ap) and buf[i] == b) or k == k_refresh
                    if check:
                        _bank_state(bank_id[i], bps, bpp, bpos, bval, spos, sval, ppos, pval,
                                    &st, &at)
                        if (st != -1) if (k == k_open or k == k_refresh) else (st != row[i]):
                            err = _check_failed(&found, 0, i, st, at, -1)
                elif scope[i] == C_PAR:
                    if (k == k_open or k == k_mac) and buf[i] == b:
                        want = row[i] if k == k_mac else -1
                        b0 = (bank_id[i] // bpp) * bpp + bank_id[i] % 2
                        for j in range(bpp // 2):
                            _bank_state(b0 + 2 * j, bps, bpp, bpos, bval, spos, sval, ppos,
                                        pval, &st, &at)
                            if st != want:
                                err = _check_failed(&found, 3, i, st, at,
                                                    bank_id[i] % 2 + 2 * j)
                                break
                else:
                    if scope[i] == C_SID:
                        check = (k == k_open or k == k_mac) and buf[i] == b
                    else:
                        check = ((k == k_open or k == k_mac) and buf[i] == b) or k == k_refresh
                    if check:
                        want = row[i] if k == k_mac else -1
                        if scope[i] == C_SID:
                            unit = sid_id[i]
                            p = unit // sids_per_pc
                            sp = spos[unit] if spos[unit] > ppos[p] else ppos[p]
                            sv = sval[unit] if spos[unit] > ppos[p] else pval[p]
                            sub = ssub[unit]
                            nb = bps
                        else:
                            unit = pc_id[i]
                            sp = ppos[unit]
                            sv = pval[unit]
                            sub = psub[unit]
                            nb = bpp
                        if sub <= sp:  # nothing below the unit changed since its setter
                            if sv != want:
                                err = _check_failed(&found, 1 if scope[i] == C_SID else 2,
                                                    i, sv, sp, -1)
                        else:
                            first = -1
                            for j in range(nb):
                                _bank_state(unit * nb + j, bps, bpp, bpos, bval, spos, sval,
                                            ppos, pval, &st, &at)
                                if st != want:
                                    first = j
                                    first_st = st
                                    first_at = at
                                    break
                            if first >= 0:
                                err = _check_failed(&found, 1 if scope[i] == C_SID else 2,
                                                    i, first_st, first_at, first)
                if err:
                    break
            # ---- the command as a setter of this buffer ----
            if buf[i] != b:
                continue
            opens = k == k_open
            closes = k == k_close or k == k_read_ap or k == k_write_ap
            if not (opens or closes):
                continue
            if scope[i] == C_BANK:
                bk = bank_id[i]
                bpos[bk] = i
                bval[bk] = row[i] if opens else -1
                ssub[bk // bps] = i
                psub[bk // bpp] = i
            elif scope[i] == C_PAR:
                b0 = (bank_id[i] // bpp) * bpp + bank_id[i] % 2
                for j in range(bpp // 2):
                    bk = b0 + 2 * j
                    bpos[bk] = i
                    bval[bk] = row[i] if opens else -1
                    ssub[bk // bps] = i
                psub[b0 // bpp] = i
            elif scope[i] == C_SID:
                s = sid_id[i]
                spos[s] = i
                sval[s] = row[i] if opens else -1
                psub[s // sids_per_pc] = i
            else:
                p = pc_id[i]
                ppos[p] = i
                pval[p] = row[i] if opens else -1
    free(mem)
    if err:
        free(found.cols)
        raise MemoryError("replay: cannot grow the violation buffer")
    return _columns(&found)
