# Front end 1 of the engine: memory requests through per-channel FR-FCFS controllers.
# Included by _dram.pyx (module level); only sieve/dram/device.py calls it.


cdef inline tick_t _bank_tick(Engine eng, BankSt* bk, int cmd, tick_t now) noexcept nogil:
    """Earliest legal tick of a bank's candidate: cached below-channel part, channel level,
    not before `now`, aligned to a rising edge for column commands (alignment is monotone,
    so aligning the parts separately is exact)."""
    return _max(bk.ae, eng._align(cmd, _max(eng.ready[bk.base[0] + cmd], now)))


def _check_requests(Engine eng, arrays, int bursts, int qsize, int wr_high, int wr_low,
                    outs, int64_t n_pc_out):
    """Refuse inputs that would make run_requests index outside its arrays."""
    n = arrays[0].shape[0]
    if any(a.shape[0] != n for a in arrays) or any(o.shape[0] != n for o in outs):
        raise ValueError("run_requests: every request array must have one entry per request")
    if n_pc_out != eng.n_nodes[1]:
        raise ValueError("run_requests: out_pc_bursts needs one entry per pseudo-channel")
    # (arrival ticks are only compared, never used as an index: any value is safe)
    for a, lv in zip(arrays[1:6], range(N_LEVELS)):
        # one pass per level: negative values are huge when read as unsigned
        if n and np.any(np.asarray(a).view(np.uint32) >= eng.cnt[lv]):
            raise ValueError(f"run_requests: address level {lv} out of range [0, {eng.cnt[lv]})")
    if bursts < 1 or qsize < 1 or wr_high < 1 or wr_low < 0:
        raise ValueError("run_requests: bursts, queue size and write high watermark must be "
                         ">= 1, the low watermark >= 0")


def run_requests(Engine eng, const int64_t[::1] arrive, const int32_t[::1] r_ch,
                 const int32_t[::1] r_pc, const int32_t[::1] r_sid, const int32_t[::1] r_bg,
                 const int32_t[::1] r_ba, const int32_t[::1] r_row, const int32_t[::1] r_col,
                 const int8_t[::1] r_write, int bursts, int qsize, int wr_high, int wr_low,
                 bint closed_page, int64_t[::1] out_inject, int64_t[::1] out_depart,
                 int8_t[::1] out_class, int64_t[::1] out_pc_bursts):
    """Simulate a request trace to completion; returns the final tick (-1 on error).

    Controller knobs (sieve.dram.device.ControllerConfig): ``qsize`` read and write queue
    entries per channel; write mode is entered when the write queue holds ``>= wr_high``
    requests (or the read queue is empty) and left when it holds ``<= wr_low`` and reads are
    waiting (or it is empty); ``closed_page`` auto-precharges.

    Requests enter their channel's read or write queue in trace order (the front end stalls on
    a full queue, like Ramulator's LoadStoreTrace) no earlier than `arrive`. Each channel's
    controller issues at most one command per command bus per tick, chosen by FR-FCFS: among
    the commands that can issue at the earliest tick, refresh first, then row hits, then the
    oldest request. A row is not precharged while a queued request still hits it. Writes are
    drained in bursts between the two watermarks. Refresh (the engine's refresh manager, whose
    due times carry over between runs): REFab per pseudo-channel every nREFI (or REFpb
    round-robin every nREFIpb); requests to a PC (bank) with a due refresh wait until it is
    done. Row class per request: 0 hit, 1 miss (bank closed), 2 conflict (other row open), by
    the first command issued for it.

    Watchdog: a channel with queued requests that issues no column command for
    ``8 * (refresh period + 16 * largest constraint latency)`` ticks is livelocked (e.g. a
    refresh closes every row before its first read); the run stops with E_STALL. Every 2**16
    loop iterations the GIL is taken to run Python's signal handlers (Ctrl-C).

    Event-driven and exact: the controller state only changes at injections, refresh due times
    and issues, so the loop jumps between those; at every decision it evaluates what a
    tick-by-tick FR-FCFS controller would see at that tick. Caches (all exact):
      * per bank, its candidate (command, request) until its queue or state changes, and the
        candidate's earliest tick below the channel level until its pseudo-channel's epoch
        changes (an issue changes `ready` only on its own address path);
      * per pseudo-channel, its best candidate while nothing in the PC changed and that
        candidate's tick under the current channel-level values is unchanged (every other
        candidate's tick can only have grown: ready values and `now` never decrease);
      * per channel, its best command until anything in the channel changes.
    """
    cdef int64_t N = arrive.shape[0]
    cdef int n_ch = eng.cnt[0]
    cdef int n_pc_ch = eng.cnt[1]
    cdef int64_t n_pcs = eng.n_nodes[1]
    cdef int64_t NB = eng.n_nodes[4]
    cdef int BPC = eng.banks_per_ch
    cdef int bpp = eng.banks_per_pc
    cdef int Q = qsize
    cdef int hi = wr_high
    cdef int lo = wr_low
    cdef int n_cmd = eng.n_cmd
    cdef bint perbank = eng.perbank_refresh
    _check_requests(eng, (arrive, r_ch, r_pc, r_sid, r_bg, r_ba, r_row, r_col, r_write),
                    bursts, qsize, wr_high, wr_low, (out_inject, out_depart, out_class),
                    out_pc_bursts.shape[0])
    cdef tick_t stall_limit = 8 * (max(eng.nREFI, eng.nREFIpb * eng.banks_per_pc)
                                   + 16 * eng.max_lat)

    # request lists per (queue type, bank), linked through r_next; 0 = read, 1 = write
    r_next_a = np.full(max(N, 1), -1, dtype=np.int32)
    issued_a = np.zeros(max(N, 1), dtype=np.int32)
    bhead_a = np.full(2 * NB, -1, dtype=np.int32)
    btail_a = np.full(2 * NB, -1, dtype=np.int32)
    # banks with queued requests, per (queue type, PC)
    pact_list_a = np.zeros(2 * NB, dtype=np.int32)
    pact_pos_a = np.full(2 * NB, -1, dtype=np.int32)
    pact_n_a = np.zeros(2 * n_pcs, dtype=np.int32)
    qlen_a = np.zeros(2 * n_ch, dtype=np.int32)
    wmode_a = np.zeros(n_ch, dtype=np.int8)
    # per-PC best candidate cache
    pv_a = np.zeros(n_pcs, dtype=np.int8)
    pt_a = np.zeros(n_pcs, dtype=np.int64)
    pcmd_a = np.full(n_pcs, -1, dtype=np.int32)
    preq_a = np.zeros(n_pcs, dtype=np.int32)
    pbank_a = np.zeros(n_pcs, dtype=np.int64)
    phit_a = np.zeros(n_pcs, dtype=np.int8)
    # epochs per (PC, command): bumped for the commands whose ready times an issue in the PC
    # can change at levels 1..4 (the following commands of its rows there)
    pc_epoch_a = np.zeros(n_pcs * n_cmd, dtype=np.int64)
    ptr = np.asarray(eng.cons_ptr)
    nxt = np.asarray(eng.cons_next)
    # (levels 1..3 only: a bank-level row changes only the issued bank, whose cache is reset
    # directly after every issue)
    follows = [sorted({int(nxt[k]) for lv in range(1, LV_BANK)
                       for k in range(ptr[lv * n_cmd + x], ptr[lv * n_cmd + x + 1])})
               for x in range(n_cmd)]
    fl_ptr_a = np.zeros(n_cmd + 1, dtype=np.int32)
    fl_ptr_a[1:] = np.cumsum([len(f) for f in follows])
    fl_cmd_a = np.array([f for fs in follows for f in fs] + [0], dtype=np.int32)
    # per-channel best command cache
    cv_a = np.zeros(n_ch, dtype=np.int8)
    ct_a = np.zeros(n_ch, dtype=np.int64)
    ccmd_a = np.zeros(n_ch, dtype=np.int32)
    creq_a = np.zeros(n_ch, dtype=np.int32)
    cbank_a = np.zeros(n_ch, dtype=np.int64)
    # refresh: due times and round-robin banks are the engine's (carried across runs)
    ref_pend_a = np.zeros(n_pcs, dtype=np.int8)
    pend_bank_a = np.full(n_pcs, -1, dtype=np.int32)
    # watchdog: per channel, tick of its last column command (or since it has queued work)
    prog_a = np.zeros(n_ch, dtype=np.int64)
    pc_sib = bool(np.any(np.asarray(eng.cons_sib)[
        eng.cons_ptr[LV_PC * n_cmd]:eng.cons_ptr[(LV_PC + 1) * n_cmd]]))

    cdef int32_t[::1] r_next = r_next_a
    cdef int32_t[::1] issued = issued_a
    cdef int32_t[::1] bhead = bhead_a
    cdef int32_t[::1] btail = btail_a
    cdef int32_t[::1] pact_list = pact_list_a
    cdef int32_t[::1] pact_pos = pact_pos_a
    cdef int32_t[::1] pact_n = pact_n_a
    cdef int32_t[::1] qlen = qlen_a
    cdef int8_t[::1] wmode = wmode_a
    cdef int8_t[::1] pv = pv_a
    cdef int64_t[::1] pt = pt_a
    cdef int32_t[::1] pcmd = pcmd_a
    cdef int32_t[::1] preq = preq_a
    cdef int64_t[::1] pbank = pbank_a
    cdef int8_t[::1] phit = phit_a
    cdef int64_t[::1] pc_epoch = pc_epoch_a
    cdef int32_t[::1] fl_ptr = fl_ptr_a
    cdef int32_t[::1] fl_cmd = fl_cmd_a
    cdef int k
    cdef int8_t[::1] cv = cv_a
    cdef int64_t[::1] ct = ct_a
    cdef int32_t[::1] ccmd = ccmd_a
    cdef int32_t[::1] creq = creq_a
    cdef int64_t[::1] cbank = cbank_a
    cdef int64_t[::1] next_ref = eng.ref_due
    cdef int8_t[::1] ref_pend = ref_pend_a
    cdef int32_t[::1] pend_bank = pend_bank_a
    cdef int32_t[::1] rr = eng.ref_rr
    cdef int64_t[::1] prog = prog_a
    cdef bint pc_sibling_rows = pc_sib

    cdef int nodes[5]
    cdef int64_t b, q, q0, r, r2, prev, i, j, lst
    cdef int c, l, cmd, typ, hit, bhit, kind, bcmd
    cdef int64_t breq, bbank
    cdef tick_t now = 0, e, bt, best_t, t_inj, next_ref_min = T_INF
    cdef int64_t it = 0
    cdef int best_c
    cdef int64_t p = 0, done = 0, last_depart = 0
    cdef int rc = E_OK
    cdef bint last, better
    cdef int64_t* R = &eng.ready[0]
    cdef int64_t nready = eng.ready.shape[0]
    cdef BankSt* bk
    cdef BankSt* bs = <BankSt*>malloc(max(NB, 1) * sizeof(BankSt))
    if bs == NULL:
        raise MemoryError("run_requests: bank state")
    for b in range(NB):
        nodes[4] = <int>b
        nodes[3] = <int>(b // eng.cnt[4])
        nodes[2] = nodes[3] // eng.cnt[3]
        nodes[1] = nodes[2] // eng.cnt[2]
        nodes[0] = nodes[1] // eng.cnt[1]
        for l in range(N_LEVELS):
            bs[b].base[l] = eng.lvl_off[l] + <int64_t>nodes[l] * n_cmd
            bs[b].node[l] = nodes[l]
        bs[b].ae = 0
        bs[b].ep = -1
        bs[b].cmd = -1
        bs[b].req = -1
        bs[b].pcq = nodes[1]
        bs[b].valid = 0
        bs[b].hit = 0
    for q in range(n_pcs):
        if next_ref[q] < next_ref_min:
            next_ref_min = next_ref[q]
    eng.status = E_OK

    with nogil:
        while done < N:
            it += 1
            if (it & SIGNAL_MASK) == 0 and _check_signals() != E_OK:
                eng.status = E_INTERRUPT
                break
            # ---- 1. inject requests that have arrived, in order, until a queue is full
            while p < N and arrive[p] <= now:
                c = r_ch[p]
                typ = 1 if r_write[p] else 0
                if qlen[typ * n_ch + c] >= Q:
                    break
                if qlen[c] + qlen[n_ch + c] == 0:
                    prog[c] = now  # the channel has work from now on (watchdog)
                q = <int64_t>c * n_pc_ch + r_pc[p]
                b = ((q * eng.cnt[2] + r_sid[p]) * eng.cnt[3] + r_bg[p]) * eng.cnt[4] + r_ba[p]
                SIEVE_CHECK_INDEX(b, NB)
                j = typ * NB + b
                if bhead[j] == -1:
                    bhead[j] = <int32_t>p
                    lst = typ * n_pcs + q
                    pact_pos[j] = pact_n[lst]
                    pact_list[typ * NB + q * bpp + pact_n[lst]] = <int32_t>b
                    pact_n[lst] += 1
                else:
                    r_next[btail[j]] = <int32_t>p
                btail[j] = <int32_t>p
                qlen[typ * n_ch + c] += 1
                out_inject[p] = now
                out_class[p] = -1
                bs[b].valid = 0
                pv[q] = 0
                cv[c] = 0
                p += 1

            # ---- 2. refreshes that have become due
            if next_ref_min <= now:
                next_ref_min = T_INF
                for q in range(n_pcs):
                    if ref_pend[q] == 0 and next_ref[q] <= now:
                        ref_pend[q] = 1
                        if perbank:
                            pend_bank[q] = rr[q]
                        for i in range(bpp):
                            bs[q * bpp + i].valid = 0
                        pv[q] = 0
                        cv[q // n_pc_ch] = 0
                    if ref_pend[q] == 0 and next_ref[q] < next_ref_min:
                        next_ref_min = next_ref[q]

            # ---- 3. each channel's best command
            best_t = T_INF
            best_c = -1
            for c in range(n_ch):
                if not cv[c]:
                    # write-mode hysteresis
                    if wmode[c]:
                        if qlen[n_ch + c] == 0 or (qlen[n_ch + c] <= lo and qlen[c] > 0):
                            wmode[c] = 0
                            _invalidate_channel(bs, pv, c, n_pc_ch, bpp)
                    elif qlen[n_ch + c] >= hi or (qlen[c] == 0 and qlen[n_ch + c] > 0):
                        wmode[c] = 1
                        _invalidate_channel(bs, pv, c, n_pc_ch, bpp)
                    typ = wmode[c]
                    bt = T_INF
                    bcmd = -1
                    breq = -1
                    bhit = -1
                    bbank = -1
                    q0 = <int64_t>c * n_pc_ch
                    for q in range(q0, q0 + n_pc_ch):
                        # refresh commands of a due pseudo-channel (priority over requests)
                        if ref_pend[q]:
                            cmd = eng._ref_cmd(q, &b)
                            e = 0
                            for l in range(eng.cmd_scope[cmd] + 1):
                                e = _max(e, R[bs[b].base[l] + cmd])
                            e = eng._align(cmd, _max(e, now))
                            if e < bt or (e == bt and bhit < 2):
                                bt = e
                                bcmd = cmd
                                breq = -1
                                bhit = 2
                                bbank = b
                        # the PC's best bank candidate: cached unless something changed
                        if pv[q] and pcmd[q] >= 0:
                            if _bank_tick(eng, &bs[pbank[q]], pcmd[q], now) != pt[q]:
                                pv[q] = 0
                        if not pv[q]:
                            _scan_pc(eng, bs, q, typ, now, pact_list, pact_n, bhead, r_next,
                                     r_row, ref_pend, pend_bank, pc_epoch, pt, pcmd, preq,
                                     pbank, phit)
                            pv[q] = 1
                        if pcmd[q] >= 0:
                            e = pt[q]
                            better = (e < bt) | ((e == bt) & ((phit[q] > bhit) | (
                                (phit[q] == bhit) & (preq[q] < breq))))
                            if better:
                                bt = e
                                bcmd = pcmd[q]
                                breq = preq[q]
                                bhit = phit[q]
                                bbank = pbank[q]
                    cv[c] = 1
                    ct[c] = bt
                    ccmd[c] = bcmd
                    creq[c] = <int32_t>breq
                    cbank[c] = bbank
                if ct[c] < best_t:
                    best_t = ct[c]
                    best_c = c

            # ---- 4. the next event: injection, refresh due, or a command issue
            t_inj = T_INF
            if p < N:
                c = r_ch[p]
                typ = 1 if r_write[p] else 0
                if qlen[typ * n_ch + c] < Q:
                    t_inj = _max(arrive[p], now)
            if t_inj <= best_t and t_inj < T_INF:
                now = t_inj
                continue
            if next_ref_min <= best_t and next_ref_min < T_INF:
                now = _max(next_ref_min, now)
                continue
            if best_c < 0:
                eng.status = E_STALL  # nothing can ever issue: should not happen
                break

            # ---- 5. issue the chosen command
            now = best_t
            c = best_c
            cmd = ccmd[c]
            r = creq[c]
            b = cbank[c]
            SIEVE_CHECK_INDEX(b, NB)
            for l in range(N_LEVELS):
                nodes[l] = bs[b].node[l]
            q = nodes[1]
            cv[c] = 0
            bs[b].ep = -1  # bank-level rows of this command changed this bank only
            kind = eng.cmd_kind[cmd]
            if kind == K_READ or kind == K_WRITE:
                prog[c] = now
            elif now - prog[c] > stall_limit and qlen[c] + qlen[n_ch + c] > 0:
                eng.status = E_STALL  # livelock: queued requests, no column command for long
                break
            if r < 0:
                # refresh sequence of pseudo-channel q
                rc = eng._issue(cmd, nodes, -1, -1, now)
                if cmd == C_REFAB or cmd == C_REFPB:
                    ref_pend[q] = 0
                    eng._ref_done(q)
                    pend_bank[q] = -1
                    if next_ref[q] < next_ref_min:
                        next_ref_min = next_ref[q]
                for i in range(bpp):
                    bs[q * bpp + i].valid = 0
            else:
                typ = 1 if r_write[r] else 0
                if out_class[r] == -1:
                    out_class[r] = 0 if (kind == K_READ or kind == K_WRITE) else (
                        1 if cmd == C_ACT else 2)
                if kind == K_READ or kind == K_WRITE:
                    last = issued[r] + 1 == bursts
                    if closed_page and last:
                        # auto-precharge unless another queued request hits this row
                        r2 = bhead[b]
                        while r2 != -1 and (r2 == r or r_row[r2] != r_row[r]):
                            r2 = r_next[r2]
                        if r2 == -1:
                            r2 = bhead[NB + b]
                            while r2 != -1 and (r2 == r or r_row[r2] != r_row[r]):
                                r2 = r_next[r2]
                        if r2 == -1:
                            cmd = C_WRA if typ else C_RDA
                            bs[b].valid = 0
                    rc = eng._issue(cmd, nodes, r_row[r], r_col[r] + issued[r], now)
                    issued[r] += 1
                    out_pc_bursts[q] += 1
                    if last:
                        out_depart[r] = now + (eng.write_lat if typ else eng.read_lat)
                        if out_depart[r] > last_depart:
                            last_depart = out_depart[r]
                        done += 1
                        # unlink r from its bank list
                        j = typ * NB + b
                        prev = -1
                        r2 = bhead[j]
                        while r2 != r:
                            prev = r2
                            r2 = r_next[r2]
                        if prev == -1:
                            bhead[j] = r_next[r]
                        else:
                            r_next[prev] = r_next[r]
                        if btail[j] == r:
                            btail[j] = <int32_t>prev
                        r_next[r] = -1
                        qlen[typ * n_ch + c] -= 1
                        if bhead[j] == -1:
                            # the bank leaves its PC's active list (swap-remove)
                            lst = typ * n_pcs + q
                            i = pact_pos[j]
                            pact_n[lst] -= 1
                            j = pact_list[typ * NB + q * bpp + pact_n[lst]]
                            pact_list[typ * NB + q * bpp + i] = <int32_t>j
                            pact_pos[typ * NB + j] = <int32_t>i
                            pact_pos[typ * NB + b] = -1
                        bs[b].valid = 0
                else:
                    rc = eng._issue(cmd, nodes, r_row[r], -1, now)
                    bs[b].valid = 0
            # the issue changed ready times of the followers of `cmd` in this PC (and in its
            # sibling PCs if PC-level sibling rows exist): their cached ticks are stale
            for q0 in range(<int64_t>c * n_pc_ch, <int64_t>(c + 1) * n_pc_ch):
                if q0 == q or pc_sibling_rows:
                    for k in range(fl_ptr[cmd], fl_ptr[cmd + 1]):
                        pc_epoch[q0 * n_cmd + fl_cmd[k]] += 1
                    pv[q0] = 0
            if rc != E_OK:
                eng.status = rc
                break
    free(bs)
    if eng.status == E_INTERRUPT:
        _reraise()
    if eng.status != E_OK:
        return -1
    return last_depart


cdef inline void _invalidate_channel(BankSt* bs, int8_t[::1] pv, int c, int n_pc_ch,
                                     int bpp) noexcept nogil:
    """Forget every cached candidate of channel c (its queue type changed)."""
    cdef int64_t q, i
    for q in range(<int64_t>c * n_pc_ch, <int64_t>(c + 1) * n_pc_ch):
        pv[q] = 0
        for i in range(bpp):
            bs[q * bpp + i].valid = 0


cdef inline void _scan_pc(Engine eng, BankSt* bs, int64_t q, int typ, tick_t now,
                          int32_t[::1] pact_list, int32_t[::1] pact_n, int32_t[::1] bhead,
                          int32_t[::1] r_next, const int32_t[::1] r_row,
                          int8_t[::1] ref_pend, int32_t[::1] pend_bank,
                          int64_t[::1] pc_epoch, int64_t[::1] pt, int32_t[::1] pcmd,
                          int32_t[::1] preq, int64_t[::1] pbank, int8_t[::1] phit) noexcept nogil:
    """Best bank candidate of pseudo-channel q for queue type `typ` (FR-FCFS order)."""
    cdef int64_t n_pcs = eng.n_nodes[1]
    cdef int64_t NB = eng.n_nodes[4]
    cdef int bpp = eng.banks_per_pc
    cdef int n_cmd = eng.n_cmd
    cdef int64_t i, b, r, r2, n_act
    cdef int cmd, g, bhit = -1, bcmd = -1
    cdef int64_t breq = -1, bbank = -1
    cdef tick_t e, bt = T_INF
    cdef int64_t* R = &eng.ready[0]
    cdef int64_t chbase = eng.lvl_off[0] + <int64_t>(q // eng.cnt[1]) * n_cmd
    cdef int gcmd[3]
    cdef int64_t gep[3]
    cdef tick_t gclamp[3]
    cdef BankSt* bk
    cdef bint better
    if ref_pend[q] and not eng.perbank_refresh:
        n_act = 0  # the whole PC waits for its refresh
    else:
        n_act = pact_n[typ * n_pcs + q]
    # per command group: the command, the PC epoch of its ready times, the channel-level clamp
    gcmd[0] = C_ACT
    gcmd[1] = C_PRE
    gcmd[2] = C_WR if typ else C_RD
    for g in range(3):
        gep[g] = pc_epoch[q * n_cmd + gcmd[g]]
        gclamp[g] = eng._align(gcmd[g], _max(R[chbase + gcmd[g]], now))
    for i in range(n_act):
        b = pact_list[typ * NB + q * bpp + i]
        SIEVE_CHECK_INDEX(b, NB)
        bk = &bs[b]
        if not bk.valid:
            bk.valid = 1
            bk.cmd = -1
            bk.ep = -1
            if not (ref_pend[q] and pend_bank[q] == b - q * bpp):
                r = bhead[typ * NB + b]
                if eng.open_row[b] == -1:
                    bk.cmd = C_ACT
                    bk.grp = 0
                    bk.req = <int32_t>r
                else:
                    # oldest request that hits the open row, else precharge
                    r2 = r
                    while r2 != -1 and r_row[r2] != eng.open_row[b]:
                        r2 = r_next[r2]
                    if r2 != -1:
                        bk.cmd = gcmd[2]
                        bk.grp = 2
                        bk.req = <int32_t>r2
                    else:
                        bk.cmd = C_PRE
                        bk.grp = 1
                        bk.req = <int32_t>r
                bk.hit = 1 if bk.grp == 2 else 0
        cmd = bk.cmd
        if cmd < 0:
            continue
        g = bk.grp
        if bk.ep != gep[g]:
            bk.ae = eng._align(cmd, _max(_max(R[bk.base[1] + cmd], R[bk.base[2] + cmd]),
                                         _max(R[bk.base[3] + cmd], R[bk.base[4] + cmd])))
            bk.ep = gep[g]
        e = _max(bk.ae, gclamp[g])
        better = (e < bt) | ((e == bt) & ((bk.hit > bhit) | (
            (bk.hit == bhit) & (bk.req < breq))))
        if better:
            bt = e
            bcmd = cmd
            breq = bk.req
            bhit = bk.hit
            bbank = b
    pt[q] = bt
    pcmd[q] = bcmd
    preq[q] = <int32_t>breq
    pbank[q] = bbank
    phit[q] = <int8_t>bhit
