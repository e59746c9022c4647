# Front end 2 of the engine: PIM programs (GEMV kernels expanded to commands here, never in
# Python). Included by _dram.pyx (module level); only sieve/dram.py calls it.


def run_pim(Engine eng, const int64_t[:, ::1] kernels, const int64_t[::1] prog_ptr,
            const int32_t[::1] prog_kern, int64_t[::1] k_start, int64_t[::1] k_end,
            int64_t[::1] pc_busy, int64_t[::1] pc_finish, int64_t[::1] n_refresh):
    """Run one in-order PIM command stream per pseudo-channel; returns the final tick.

    The stream of PC q is the kernels prog_kern[prog_ptr[q]:prog_ptr[q+1]]. A GEMV kernel
    expands to
        for each vector: for each chunk: GWRITE x gw; for each row: [PREAB] ACTAB,
        MACAB x macs; then RDRES x n_res
    where the PREAB/ACTAB pair is issued only when the needed row is not the open one
    (rows stay open across GWRITEs, vectors and kernels while they are reused). Each PC
    issues its next command at the earliest legal tick and never before its previous
    command; the PCs of a channel share its command buses, so the channel issues the
    earliest command of its PCs (on a tie the PC served least recently). Channels are independent.
    Refresh is always on: when a PC's REFab is due before its next command, PIM work
    yields (PREAB if a row is open, REFab) and the needed row is re-activated after it.

    Outputs: k_start / k_end (per prog_kern slot) get the tick of the kernel's first
    command and of its last result (last RDRES + read latency); pc_busy the sum of kernel
    durations; pc_finish the last result tick; n_refresh the REFab count per PC.
    """
    cdef int n_ch = eng.cnt[0]
    cdef int n_pc_ch = eng.cnt[1]
    cdef int64_t n_pcs = eng.n_nodes[1]
    st_a = np.zeros((n_pcs, P_NFIELDS), dtype=np.int64)
    cdef int64_t[:, ::1] st = st_a
    cdef int nodes[5]
    cdef int64_t q
    cdef int c, cmd, best_cmd, best_pl, pl, rs
    cdef tick_t e, best_e, final = 0
    cdef int rc = E_OK

    eng.status = E_OK
    if kernels.shape[1] != K_NFIELDS:
        raise ValueError("kernel descriptors need %d fields" % K_NFIELDS)
    for q in range(n_pcs):
        st[q, P_SLOT] = prog_ptr[q]
        st[q, P_END] = prog_ptr[q + 1]
        st[q, P_PH] = PH_GW if prog_ptr[q] < prog_ptr[q + 1] else PH_DONE
        st[q, P_OPEN] = -1
        st[q, P_NREF] = eng.nREFI
        if st[q, P_PH] != PH_DONE:
            st[q, P_READY] = kernels[prog_kern[prog_ptr[q]], K_GAP]
    k_start[:] = -1
    k_end[:] = -1
    with nogil:
        for c in range(n_ch):
            while True:
                best_e = T_INF
                best_cmd = -1
                best_pl = -1
                for pl in range(n_pc_ch):
                    q = <int64_t>c * n_pc_ch + pl
                    eng._nodes(c, pl, 0, 0, 0, nodes)
                    rs = <int>st[q, P_REF]
                    if rs == 1:
                        cmd = C_PREAB
                    elif rs == 2:
                        cmd = C_REFAB
                    else:
                        cmd = _pim_next(eng, kernels, prog_kern, st, q, k_end)
                        if cmd < 0:
                            continue
                    e = _max(eng._earliest(cmd, nodes), st[q, P_LAST])
                    if rs == 0:
                        e = eng._align(cmd, _max(e, st[q, P_READY]))
                        if st[q, P_NREF] <= e:
                            # refresh is due first: PIM work yields to it
                            st[q, P_REF] = 1 if st[q, P_OPEN] >= 0 else 2
                            cmd = C_PREAB if st[q, P_REF] == 1 else C_REFAB
                            e = _max(eng._earliest(cmd, nodes), st[q, P_LAST])
                    e = eng._align(cmd, e)
                    # earliest command first; on a tie the command bus goes to the PC that
                    # was served least recently (round robin)
                    if e < best_e or (e == best_e and
                                      st[q, P_LSEQ] < st[c * n_pc_ch + best_pl, P_LSEQ]):
                        best_e = e
                        best_cmd = cmd
                        best_pl = pl
                if best_cmd < 0:
                    break
                q = <int64_t>c * n_pc_ch + best_pl
                eng._nodes(c, best_pl, 0, 0, 0, nodes)
                rc = _pim_issue(eng, kernels, prog_kern, st, q, nodes, best_cmd, best_e,
                                     k_start, k_end, pc_busy, pc_finish, n_refresh)
                if rc != E_OK:
                    eng.status = rc
                    break
            if eng.status != E_OK:
                break
    if eng.status != E_OK:
        return -1
    for q in range(n_pcs):
        if pc_finish[q] > final:
            final = pc_finish[q]
    return final

cdef inline int _pim_row(Engine eng, const int64_t[:, ::1] kernels, int64_t kk, int64_t k,
                         int64_t r) noexcept nogil:
    return <int>((kernels[kk, K_BASE] + k * kernels[kk, K_ROWS] + r) % eng.n_rows)

cdef int _pim_next(Engine eng, const int64_t[:, ::1] kernels, const int32_t[::1] prog_kern,
                   int64_t[:, ::1] st, int64_t q, int64_t[::1] k_end) noexcept nogil:
    """Next command of PC q's stream (-1 when it is finished).

    Moves the stream past finished loops (which depends on counters only, never on time),
    so calling it again without an issue returns the same command.
    """
    cdef int64_t kk, row
    cdef tick_t end
    while True:
        if st[q, P_PH] == PH_DONE:
            return -1
        kk = prog_kern[st[q, P_SLOT]]
        if st[q, P_PH] == PH_GW:
            if st[q, P_CNT] < kernels[kk, K_GW]:
                return C_GWRITE
            st[q, P_PH] = PH_ROW
            st[q, P_R] = 0
            st[q, P_CNT] = 0
        elif st[q, P_PH] == PH_ROW:
            if st[q, P_R] < kernels[kk, K_ROWS] and kernels[kk, K_MACS] > 0:
                row = _pim_row(eng, kernels, kk, st[q, P_K], st[q, P_R])
                if st[q, P_OPEN] != row:
                    return C_PREAB if st[q, P_OPEN] >= 0 else C_ACTAB
                if st[q, P_CNT] < kernels[kk, K_MACS]:
                    return C_MACAB
                st[q, P_R] += 1
                st[q, P_CNT] = 0
                continue
            st[q, P_K] += 1
            st[q, P_CNT] = 0
            if st[q, P_K] < kernels[kk, K_NCHUNK]:
                st[q, P_PH] = PH_GW
            else:
                st[q, P_PH] = PH_RES
        elif st[q, P_PH] == PH_RES:
            if st[q, P_CNT] < kernels[kk, K_NRES]:
                return C_RDRES
            st[q, P_V] += 1
            st[q, P_K] = 0
            st[q, P_CNT] = 0
            if st[q, P_V] < kernels[kk, K_NVEC]:
                st[q, P_PH] = PH_GW
                continue
            # kernel finished
            if k_end[st[q, P_SLOT]] < 0:
                # no readback: it ends with its last command (+1 CK)
                k_end[st[q, P_SLOT]] = st[q, P_LAST] + eng.tpc
            end = k_end[st[q, P_SLOT]]
            st[q, P_SLOT] += 1
            st[q, P_V] = 0
            if st[q, P_SLOT] >= st[q, P_END]:
                st[q, P_PH] = PH_DONE
            else:
                st[q, P_PH] = PH_GW
                st[q, P_READY] = end + kernels[prog_kern[st[q, P_SLOT]], K_GAP]

cdef int _pim_issue(Engine eng, const int64_t[:, ::1] kernels, const int32_t[::1] prog_kern,
                    int64_t[:, ::1] st, int64_t q, const int* nodes, int cmd, tick_t now,
                    int64_t[::1] k_start, int64_t[::1] k_end, int64_t[::1] pc_busy,
                    int64_t[::1] pc_finish, int64_t[::1] n_refresh) noexcept nogil:
    """Issue `cmd` for PC q at `now` and advance its stream counters."""
    cdef int64_t slot = st[q, P_SLOT]
    cdef int64_t kk
    cdef int row = -1, col = -1, rc
    cdef tick_t done_t
    if st[q, P_REF] == 1:  # refresh: close the PIM rows
        rc = eng._issue(C_PREAB, nodes, -1, -1, now)
        st[q, P_OPEN] = -1
        st[q, P_REF] = 2
    elif st[q, P_REF] == 2:
        rc = eng._issue(C_REFAB, nodes, -1, -1, now)
        st[q, P_REF] = 0
        st[q, P_NREF] += eng.nREFI
        n_refresh[q] += 1
    else:
        kk = prog_kern[slot]
        if k_start[slot] < 0:
            k_start[slot] = now
        if cmd == C_ACTAB:
            row = _pim_row(eng, kernels, kk, st[q, P_K], st[q, P_R])
        elif cmd == C_MACAB:
            row = <int>st[q, P_OPEN]
            col = <int>(st[q, P_CNT] % eng.n_cols)
        elif cmd == C_GWRITE or cmd == C_RDRES:
            col = <int>(st[q, P_CNT] % eng.n_cols)  # burst index in the buffer / results
        rc = eng._issue(cmd, nodes, row, col, now)
        if cmd == C_ACTAB:
            st[q, P_OPEN] = row
        elif cmd == C_PREAB:
            st[q, P_OPEN] = -1
        else:
            st[q, P_CNT] += 1
            if (cmd == C_RDRES and st[q, P_CNT] == kernels[kk, K_NRES]
                    and st[q, P_V] + 1 == kernels[kk, K_NVEC]):
                done_t = now + eng.read_lat
                k_end[slot] = done_t
                pc_busy[q] += done_t - k_start[slot]
                if done_t > pc_finish[q]:
                    pc_finish[q] = done_t
    st[q, P_LAST] = now
    st[q, P_LSEQ] = eng.seq
    return rc


