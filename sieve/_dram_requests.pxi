# Front end 1 of the engine: memory requests through per-channel FR-FCFS controllers.
# Included by _dram.pyx (module level); only sieve/dram/engine.py imports the engine
# (sieve.dram.controller drives RequestRun through it).
#
# A run is a RequestRun object. It takes the trace in chunks (feed), simulates until it has
# injected every request it was given (advance returns RUN_NEED_INPUT) or, once told that no
# more input comes (finish_input), until the last request completed (RUN_DONE). Per-request
# data lives only while a request is in flight (queued or active), in slots that are reused as
# requests complete, so a trace streamed from a file needs memory for the queues, not for the
# trace. The in-memory path (run_requests, sieve.dram.simulate_requests on a RequestTrace) is
# the same object fed in one chunk: both paths make the same decisions, tick for tick.

from libc.stdlib cimport calloc

cdef enum:
    RUN_DONE = 0
    RUN_NEED_INPUT = 1
    RUN_ERROR = -1

# Request lifecycles (sieve.dram.controller.ControllerConfig.lifecycle): the engine code of
# each is its index in LIFECYCLES, and RequestRun._run maps the code to its marker type
# (LcSieve, LcRamulator2 below), which selects the policy functions compiled for it.
cdef enum:
    LC_SIEVE = 0
    LC_RAMULATOR2 = 1

#: The lifecycle registry: names by engine code (sieve.dram.engine.LIFECYCLES).
LIFECYCLES = ("sieve", "ramulator2")

# Latencies (ticks) below this are counted in a flat histogram; longer ones (starved requests)
# are kept one by one. Bounds the histogram at 32 MiB whatever a trace does.
cdef int64_t HIST_FLAT = 1 << 22
cdef int64_t AGE_INF = (<int64_t>1) << 62

# Candidate ranks: at equal ticks the higher rank issues first, then the older request.
#   sieve:      refresh 2 > row hit 1 > any other command 0
#   ramulator2: column command of an active request 4 > column command of a queued request 3
#               > refresh 2 > row command (ACT/PRE) of a queued request 1
# (Ramulator 2.1's HBM3/4 controller fills its column slot before its row slot in each tick,
# looks at the active buffer first, and lets no queued request issue while a refresh waits.)


# ============================================================================================
# Controller policies, chosen once per run
# ============================================================================================
# The request scheduler (_rs_*), the refresh manager (_ref_*) and the row policy (_rp_*) are
# inline functions specialised at compile time on two marker types: the lifecycle (LcSieve,
# LcRamulator2: fused type Lifecycle) and the row policy (OpenPage, ClosedPage: RowPolicy).
# Inside them `if Lifecycle is LcRamulator2:` is resolved by the compiler, so the event loop
# (_request_loop) is compiled once per (lifecycle, row policy) pair and reads no policy flag.
# RequestRun._run picks the pair from the registry entry of the run (LIFECYCLES, closed_page).
# Adding a policy: docs/extending-the-engine.md.

cdef struct LcSieve:
    char unused
cdef struct LcRamulator2:
    char unused
ctypedef fused Lifecycle:
    LcSieve
    LcRamulator2

cdef struct OpenPage:
    char unused
cdef struct ClosedPage:
    char unused
ctypedef fused RowPolicy:
    OpenPage
    ClosedPage

cdef bint _all_below(const int32_t[::1] a, int64_t lim) noexcept:
    """Whether every entry of `a` is in [0, lim) (one pass; a negative entry is huge when read
    as unsigned)."""
    cdef Py_ssize_t i, n = a.shape[0]
    cdef uint32_t ulim = <uint32_t>lim if 0 <= lim < (<int64_t>1 << 32) else 0xFFFFFFFFu
    cdef uint32_t bad = 0
    with nogil:
        for i in range(n):
            bad |= <uint32_t>(<uint32_t>a[i] >= ulim)
    return bad == 0


# ---- refresh manager ---------------------------------------------------------------------
cdef inline tick_t _ref_lead(Lifecycle* lc) noexcept nogil:
    """Ticks a refresh counts as due before Engine.ref_due (ramulator2's clock starts at 1)."""
    if Lifecycle is LcRamulator2:
        return 1
    else:
        return 0


cdef inline void _ref_mark_due(RequestRun run, Lifecycle* lc, int64_t q, int c) noexcept nogil:
    """Pseudo-channel q (of channel c) has just become due: forget the candidates it blocks
    (ramulator2: the refresh joins the channel's FIFO, which blocks every queued request of
    the channel; sieve: it blocks its own PC)."""
    if Lifecycle is LcRamulator2:
        run.n_refs_waiting[c] += 1
        run._inval_channel(c)
    else:
        run._inval_pc(q)


cdef inline int _ref_candidate(RequestRun run, Lifecycle* lc, int64_t q, int64_t* head,
                               int64_t* b) noexcept nogil:
    """The refresh-sequence command of due PC q (its bank in b[0]), or -1 when it may not
    issue now (ramulator2: its PREA would close an active request's row; head[0] = q, the
    head of the refresh FIFO, so no later PC of the channel is looked at)."""
    cdef int cmd
    if Lifecycle is LcRamulator2:
        head[0] = q
    cmd = run.eng._ref_cmd(q, b)
    if Lifecycle is LcRamulator2:
        if run._closes_active(cmd, q, b[0]):
            return -1
    return cmd


cdef inline bint _ref_blocks_pc(RequestRun run, Lifecycle* lc, int64_t q, int c) noexcept nogil:
    """No queued request of PC q (channel c) may issue: a refresh waits (ramulator2: any in
    the channel; sieve: an all-bank refresh of q)."""
    if Lifecycle is LcRamulator2:
        return run.n_refs_waiting[c] != 0
    else:
        return run.ref_pending[q] != 0 and not run.perbank_refresh


cdef inline bint _ref_blocks_bank(RequestRun run, Lifecycle* lc, int64_t q,
                                  int64_t b) noexcept nogil:
    """No queued request of bank b (of PC q) may issue: its per-bank refresh is due (sieve;
    ramulator2 blocks whole channels, _ref_blocks_pc)."""
    if Lifecycle is LcRamulator2:
        return False
    else:
        return run.ref_pending[q] != 0 and run.ref_pending_bank[q] == b - q * run.banks_per_pc


cdef inline void _ref_issued(RequestRun run, Lifecycle* lc, int64_t q, int c,
                             int cmd) noexcept nogil:
    """A command of PC q's refresh sequence issued (cmd: REFab / REFpb ends the refresh)."""
    if Lifecycle is LcRamulator2:
        if cmd == C_REFAB or cmd == C_REFPB:
            run.n_refs_waiting[c] -= 1
        run._inval_channel(c)
    else:
        run._inval_pc(q)


# ---- request scheduler -------------------------------------------------------------------
cdef inline bint _rs_rate_full(RequestRun run, Lifecycle* lc, tick_t now) noexcept nogil:
    """The front end has injected all it may at tick `now` (``inject_per_tick``; one at
    tick 0 in the ramulator2 lifecycle, whose front end ticks once before the first memory
    tick)."""
    if run.inject_per_tick == 0 or run.inject_tick != now:
        return False
    if Lifecycle is LcRamulator2:
        if now == 0:
            return run.inject_count >= 1
    return run.inject_count >= run.inject_per_tick


cdef inline bint _rs_queue_full(RequestRun run, Lifecycle* lc, int64_t j,
                                tick_t now) noexcept nogil:
    """The front end sees queue j (per (type, channel)) full at `now` (ramulator2: a slot
    freed at `now` is seen from now + 1, see RequestRun._freed)."""
    if Lifecycle is LcRamulator2:
        return run.queue_len[j] + (run.n_freed[j] if run.freed_tick[j] == now
                                   else 0) >= run.queue_size
    else:
        return run.queue_len[j] >= run.queue_size


cdef inline bint _rs_may_forward(RequestRun run, Lifecycle* lc, int64_t p) noexcept nogil:
    """Input request p could be served by a queued write (_rs_try_forward can be true): a
    write is queued on its channel (ramulator2 with addresses fed); sieve: never."""
    if Lifecycle is LcRamulator2:
        return run.forward_writes and run.queue_len[run.n_ch + run.in_ch[p]] != 0
    else:
        return False


cdef inline bint _rs_try_forward(RequestRun run, Lifecycle* lc, int64_t p,
                                 int64_t b) noexcept nogil:
    """Input request p (bank b, -1 = compute it) is served by a queued write of its address
    (ramulator2 with addresses fed: RequestRun._buffered_write); sieve: never."""
    # (the call only when a write is queued on its channel: never in a read-only trace)
    return _rs_may_forward(run, lc, p) and run._buffered_write(p, b)


cdef inline void _rs_retire(RequestRun run, Lifecycle* lc, int32_t r, int typ, int64_t b,
                            int64_t q, int c, tick_t now) noexcept nogil:
    """Request r (type typ, bank b, PC q, channel c) had its last burst at `now`: it leaves
    its queue (ramulator2: or the active buffer; a queue slot freed counts from now + 1)."""
    cdef int64_t i, j
    cdef int64_t o = q * run.banks_per_pc
    if Lifecycle is LcRamulator2:
        if run.active_slot[b] == r:
            # retire from the active buffer
            run.active_slot[b] = -1
            i = run.active_bank_pos[b]
            run.n_active_banks[q] -= 1
            j = run.active_banks[o + run.n_active_banks[q]]
            run.active_banks[o + i] = <int32_t>j
            run.active_bank_pos[j] = <int32_t>i
            run.active_bank_pos[b] = -1
            return
    run._unlink(r, typ, b, q)
    run.queue_len[typ * run.n_ch + c] -= 1
    if Lifecycle is LcRamulator2:
        run._freed(typ * run.n_ch + c, now)


cdef inline void _rs_after_row_cmd(RequestRun run, Lifecycle* lc, int32_t r, int typ, int64_t b,
                                   int64_t q, int c, int cmd, tick_t now) noexcept nogil:
    """A row command (ACT / PRE) issued for request r (type typ, bank b, PC q, channel c)."""
    cdef int64_t o = q * run.banks_per_pc
    if Lifecycle is LcRamulator2:
        if cmd == C_ACT:
            # the request moves to the active buffer, freeing its queue slot
            run._unlink(r, typ, b, q)
            run.queue_len[typ * run.n_ch + c] -= 1
            run._freed(typ * run.n_ch + c, now)
            run.active_slot[b] = r
            run.active_bank_pos[b] = run.n_active_banks[q]
            run.active_banks[o + run.n_active_banks[q]] = <int32_t>b
            run.n_active_banks[q] += 1


cdef inline void _rs_row_cmd_ends_tick(RequestRun run, Lifecycle* lc, int c,
                                       tick_t now) noexcept nogil:
    """A non-column command issued in channel c at `now` (ramulator2: Ramulator's controller
    fills its column slot before its row slot in a tick, so no column command in this
    channel this tick)."""
    cdef int k, l
    cdef int64_t i
    cdef int64_t* R
    if Lifecycle is LcRamulator2:
        R = &run.eng.ready[0]
        for k in range(4):
            l = C_RD if k == 0 else C_WR if k == 1 else C_RDA if k == 2 else C_WRA
            i = run.eng.lvl_off[0] + <int64_t>c * run.n_cmd + l
            if R[i] < now + 1:
                R[i] = now + 1


# ---- row policy --------------------------------------------------------------------------
cdef inline bint _rp_may_precharge(RequestRun run, Lifecycle* lc, int64_t b) noexcept nogil:
    """May a queued request that misses bank b's open row precharge it? sieve: yes (the
    oldest queued request goes first). ramulator2: only while no active request (its row
    activated for it, bursts left) waits in the bank, the rule that matches Ramulator 2.1
    command for command (tests/test_dram_scheduler.py)."""
    if Lifecycle is LcRamulator2:
        return run.active_slot[b] == -1
    else:
        return True


cdef inline bint _rp_auto_precharge(RequestRun run, Lifecycle* lc, RowPolicy* rp, int32_t r,
                                    int64_t b) noexcept nogil:
    """Request r's last burst (bank b) closes its row (RDA / WRA instead of RD / WR)? Open
    page: never. Closed page: unless another request in flight hits the row (ramulator2:
    the bank's active request counts too)."""
    cdef int32_t r2, a, row
    if RowPolicy is OpenPage:
        return False
    else:
        row = run.slots[r].row
        r2 = run.queue_head[b]
        while r2 != -1 and (r2 == r or run.slots[r2].row != row):
            r2 = run.slots[r2].next
        if r2 == -1:
            r2 = run.queue_head[run.n_banks + b]
            while r2 != -1 and (r2 == r or run.slots[r2].row != row):
                r2 = run.slots[r2].next
        if Lifecycle is LcRamulator2:
            if r2 == -1:
                a = run.active_slot[b]
                if a != -1 and a != r and run.slots[a].row == row:
                    r2 = a
        return r2 == -1


# ---- request scheduler: candidates (FR-FCFS, see RequestRun) -------------------------------


cdef inline int64_t _fr_key(const RCand* cd) noexcept nogil:
    """A candidate's FR-FCFS key: higher rank first, then older (rank <= 4 and ids < 2**58);
    lower wins at equal ticks."""
    return ((<int64_t>(7 - cd.rank)) << 58) | cd.age


cdef void _check_misses(RequestRun run, int64_t j, int orow, int32_t hit,
                       int32_t non) noexcept nogil:
    """Debug builds: n_miss counts queue j's requests off the open row, and the search found
    its oldest hit and oldest miss (aborts otherwise)."""
    cdef int32_t r2 = run.queue_head[j], h = -1, m = -1, n = 0
    while r2 != -1:
        if run.slots[r2].row != orow:
            n += 1
            if m == -1:
                m = r2
        elif h == -1:
            h = r2
        r2 = run.slots[r2].next
    cdef int bad = n != run.n_miss[j] or h != hit or m != non
    SIEVE_CHECK_INDEX(-bad, 1)  # aborts with a message when the count or the search is wrong


cdef void _rs_build(RequestRun run, Lifecycle* lc, int64_t b, int64_t q, int typ,
                    bint blocked) noexcept nogil:
    """The candidates of bank b (see RBank) for queue type `typ`; `blocked`: queued
    requests may not issue (a refresh waits)."""
    cdef RBank* bk = &run.banks[b]
    cdef int32_t r, r2, hit, non, a
    cdef int64_t j
    cdef int orow = run.eng.open_row[b]
    cdef ReqSlot* slots = run.slots
    bk.valid = 1
    bk.n_cand = 0
    if Lifecycle is LcRamulator2:
        a = run.active_slot[b]
        if a != -1:
            run._add(bk, C_WR if slots[a].typ else C_RD, a, 4, 3 if slots[a].typ else 2)
        if blocked:
            return
        r = run.queue_head[typ * run.n_banks + b]
        if r == -1:
            return
        if orow == -1:
            run._add(bk, C_ACT, r, 1, 0)
            return
        hit = -1
        non = -1
        j = typ * run.n_banks + b
        if run.miss_row[j] != orow:  # count the queue's misses against this open row
            run.miss_row[j] = orow
            run.n_miss[j] = 0
            r2 = r
            while r2 != -1:
                run.n_miss[j] += slots[r2].row != orow
                r2 = slots[r2].next
        r2 = r
        # the oldest hit and the oldest miss (none to look for when none is queued)
        while r2 != -1 and (hit == -1 or (non == -1 and run.n_miss[j] > 0)):
            if slots[r2].row == orow:
                if hit == -1:
                    hit = r2
            elif non == -1:
                non = r2
            r2 = slots[r2].next
        if SIEVE_DEBUG_BUILD:
            _check_misses(run, j, orow, hit, non)
        if hit != -1:
            run._add(bk, C_WR if typ else C_RD, hit, 3, 2 + typ)
        if non != -1 and _rp_may_precharge(run, lc, b):
            run._add(bk, C_PRE, non, 1, 1)
        return
    else:
        if blocked or _ref_blocks_bank(run, lc, q, b):
            return
        r = run.queue_head[typ * run.n_banks + b]
        if r == -1:
            return  # (a bank folded in after an injection of the other type)
        if orow == -1:
            run._add(bk, C_ACT, r, 0, 0)
        else:
            # oldest request that hits the open row, else precharge
            r2 = r
            while r2 != -1 and slots[r2].row != orow:
                r2 = slots[r2].next
            if r2 != -1:
                run._add(bk, C_WR if typ else C_RD, r2, 1, 2 + typ)
            elif _rp_may_precharge(run, lc, b):
                run._add(bk, C_PRE, r, 0, 1)


cdef void _rs_rebuild(RequestRun run, Lifecycle* lc, int64_t q, int typ,
                      bint blocked) noexcept nogil:
    """Bring PC q's candidate list up to date: rebuild the banks on its list (or every
    bank), as a scan over its banks with queued (ramulator2: or active) requests would."""
    cdef int64_t b, i, n, b0
    cdef int k, j, old_n
    cdef int32_t old_w[3]
    cdef RBank* bk
    b0 = q * run.banks_per_pc
    if run.pc_rebuild_all[q]:
        run.pc_rebuild_all[q] = 0
        run.n_cands[q] = 0
        run.n_rebuild[q] = 0
        for b in range(b0, b0 + run.banks_per_pc):
            run.banks[b].valid = 1
            run.banks[b].n_cand = 0
        n = 0 if blocked else run.n_queued_banks[typ * run.n_pcs + q]
        for i in range(n):
            b = run.queued_banks[typ * run.n_banks + b0 + i]
            _rs_build(run, lc, b, q, typ, blocked)
            for k in range(run.banks[b].n_cand):
                run._cand_put(q, b, k)
        n = 0
        if Lifecycle is LcRamulator2:
            n = run.n_active_banks[q]
        for i in range(n):
            b = run.active_banks[b0 + i]
            # (else built above)
            if blocked or run.queued_bank_pos[typ * run.n_banks + b] == -1:
                _rs_build(run, lc, b, q, typ, blocked)
                for k in range(run.banks[b].n_cand):
                    run._cand_put(q, b, k)
        return
    n = run.n_rebuild[q]
    for i in range(n):
        b = run.rebuild_banks[b0 + i]
        bk = &run.banks[b]
        # the bank's new candidates take its old ones' list entries, in order
        old_n = bk.n_cand
        for k in range(old_n):
            old_w[k] = bk.cand[k].list_pos
        bk.valid = 1
        bk.n_cand = 0
        if not blocked and run.queued_bank_pos[typ * run.n_banks + b] != -1:
            _rs_build(run, lc, b, q, typ, blocked)
        elif Lifecycle is LcRamulator2:
            if run.active_slot[b] != -1:
                _rs_build(run, lc, b, q, typ, blocked)
        for k in range(bk.n_cand):
            if k < old_n:
                run._cand_set(q, b, k, old_w[k])
            else:
                run._cand_put(q, b, k)
        # old entries left over go, highest list index first (so that no entry still
        # to go is moved by a removal)
        while old_n > bk.n_cand:
            j = bk.n_cand
            for k in range(bk.n_cand + 1, old_n):
                if old_w[k] > old_w[j]:
                    j = k
            run._cand_del_at(q, old_w[j])
            old_w[j] = old_w[old_n - 1]
            old_n -= 1
    run.n_rebuild[q] = 0


cdef void _rs_look(RequestRun run, Lifecycle* lc, int64_t q, int64_t chb, int typ, bint blocked,
                   tick_t now, Best* best) noexcept nogil:
    """The best candidate of PC q at `now` (FR-FCFS: earliest tick, then rank, then
    age); best.cmd = -1 when it has none. ``chb``: offset of its channel's row in
    `ready`."""
    cdef const int64_t* R = &run.eng.ready[0]
    cdef int64_t pcb = run.eng.lvl_off[1] + q * run.n_cmd
    cdef int64_t o = q * run.cand_cap
    cdef int32_t i, n, mi, id
    cdef tick_t e, m
    cdef int64_t mk
    cdef tick_t G[4]
    cdef tick_t M[4]
    cdef RCand* cd
    cdef const int32_t* cand_sid_off
    cdef const int32_t* cand_bg_off
    cdef const int32_t* cand_bank_off
    cdef const int64_t* cand_key
    cdef const int32_t* cand_group
    cdef int32_t nr, k
    cdef int64_t b, b0
    if run.pc_best_valid[q] and run.banks[run.pc_best_id[q] >> 2].valid:
        # the cached best stands if its tick has not moved and its bank was not marked since
        # (see the class docstring); banks marked since are rebuilt and only their
        # candidates are compared with it (every other candidate's tick can only have grown
        # since the scan that found it; keys are unique, so the order is total)
        id = run.pc_best_id[q]
        cd = &run.banks[id >> 2].cand[id & 3]
        m = run.pc_best_tick[q]
        if run._tick(id >> 2, cd.cmd, chb, pcb, now) == m:
            nr = run.n_rebuild[q]
            if nr:
                _rs_rebuild(run, lc, q, typ, blocked)
                mk = _fr_key(cd)
                b0 = q * run.banks_per_pc
                for i in range(nr):
                    b = run.rebuild_banks[b0 + i]
                    for k in range(run.banks[b].n_cand):
                        cd = &run.banks[b].cand[k]
                        e = run._tick(b, cd.cmd, chb, pcb, now)
                        if e < m or (e == m and _fr_key(cd) < mk):
                            m = e
                            mk = _fr_key(cd)
                            id = <int32_t>((b << 2) | k)
                run.pc_best_tick[q] = m
                run.pc_best_id[q] = id
                cd = &run.banks[id >> 2].cand[id & 3]
            best.tick = m
            best.cmd = cd.cmd
            best.slot = cd.slot
            best.age = cd.age
            best.rank = cd.rank
            best.bank = id >> 2
            if SIEVE_DEBUG_BUILD:
                run._check_look(q, chb, now, best)
            return
    if run.pc_rebuild_all[q] or run.n_rebuild[q]:
        _rs_rebuild(run, lc, q, typ, blocked)
    best.cmd = -1
    best.tick = T_INF
    best.rank = -1
    best.age = AGE_INF
    best.slot = -1
    best.bank = -1
    n = run.n_cands[q]
    if n == 0:
        run.pc_best_valid[q] = 0
        return
    # per group: channel- and PC-level ready tick (at least `now`) and alignment mask
    G[0] = _max(_max(R[chb + C_ACT], R[pcb + C_ACT]), now)
    G[1] = _max(_max(R[chb + C_PRE], R[pcb + C_PRE]), now)
    G[2] = _max(_max(R[chb + C_RD], R[pcb + C_RD]), now)
    G[3] = _max(_max(R[chb + C_WR], R[pcb + C_WR]), now)
    M[0] = run.align_mask[C_ACT]
    M[1] = run.align_mask[C_PRE]
    M[2] = run.align_mask[C_RD]
    M[3] = run.align_mask[C_WR]
    cand_sid_off = &run.cand_sid_off[o]
    cand_bg_off = &run.cand_bg_off[o]
    cand_bank_off = &run.cand_bank_off[o]
    cand_key = &run.cand_key[o]
    cand_group = &run.cand_group[o]
    m = T_INF
    mk = AGE_INF
    # FR-FCFS order (tick, key): sieve_scan (the C helper at the top of _dram.pyx)
    mi = sieve_scan(R, cand_sid_off, cand_bg_off, cand_bank_off, cand_key, cand_group, G, M, n,
                    &m, &mk)
    id = run.cand_id[o + mi]
    cd = &run.banks[id >> 2].cand[id & 3]
    best.tick = m
    best.cmd = cd.cmd
    best.slot = cd.slot
    best.age = cd.age
    best.rank = cd.rank
    best.bank = id >> 2
    run.pc_best_valid[q] = 1
    run.pc_best_tick[q] = m
    run.pc_best_id[q] = id
    if SIEVE_DEBUG_BUILD:
        run._check_look(q, chb, now, best)


cdef inline tick_t _rs_next_inject(RequestRun run, Lifecycle* lc, tick_t now) noexcept nogil:
    """The tick of the next injection the front end would make (T_INF: none before a queue
    slot frees or the input ends); at `now` itself only if step 1 left one it may make."""
    cdef int64_t p, j
    cdef int c, typ
    cdef tick_t t_inj = T_INF
    if run.in_pos < run.in_len:
        p = run.in_pos
        c = run.in_ch[p]
        typ = 1 if run.in_write[p] else 0
        j = typ * run.n_ch + c
        if _rs_try_forward(run, lc, p, -1):
            # (forwarded or coalesced: needs no queue slot)
            t_inj = _max(run.in_arrive[p], now)
            if t_inj == now and _rs_rate_full(run, lc, now):
                t_inj = now + 1
        elif run.queue_len[j] < run.queue_size:
            t_inj = _max(run.in_arrive[p], now)
            if t_inj == now and (_rs_queue_full(run, lc, j, now)
                                 or _rs_rate_full(run, lc, now)):
                t_inj = now + 1
    return t_inj


cdef inline tick_t _channel_floor(RequestRun run, int c, int64_t chb,
                                  tick_t now) noexcept nogil:
    """A lower bound on the tick of any command channel c's controller could choose at
    `now`: its channel-level ready tick for ACT, PRE, RD and WR (every request candidate's
    tick is at least that of its command, aligned); `now` while a refresh of the channel is
    pending (its commands are not bounded here)."""
    cdef int64_t q
    cdef const int64_t* R = &run.eng.ready[0]
    for q in range(<int64_t>c * run.pcs_per_ch, <int64_t>(c + 1) * run.pcs_per_ch):
        if run.ref_pending[q]:
            return now
    return _min(_min(run._al(C_ACT, _max(R[chb + C_ACT], now)),
                     run._al(C_PRE, _max(R[chb + C_PRE], now))),
                _min(run._al(C_RD, _max(R[chb + C_RD], now)),
                     run._al(C_WR, _max(R[chb + C_WR], now))))


# ---- the event loop ------------------------------------------------------------------------
cdef int _request_loop(RequestRun run, Lifecycle* lc, RowPolicy* rp):
    """The event loop of RequestRun.advance, compiled once per (lifecycle, row policy)
    pair (RequestRun._run picks the pair); the policies are the _ref_*, _rs_* and _rp_*
    functions above."""
    cdef Engine eng = run.eng
    cdef int64_t n_banks = run.n_banks
    cdef int64_t n_pcs = run.n_pcs
    cdef int n_ch = run.n_ch
    cdef int pcs_per_ch = run.pcs_per_ch
    cdef int banks_per_pc = run.banks_per_pc
    cdef int queue_size = run.queue_size
    cdef int n_cmd = run.n_cmd
    cdef bint perbank_refresh = run.perbank_refresh
    cdef tick_t ref_lead = _ref_lead(lc)
    cdef int64_t* R = &eng.ready[0]
    cdef int64_t* ref_due = &eng.ref_due[0]
    cdef int32_t* ref_rr = &eng.ref_rr[0]
    cdef int nodes[5]
    cdef int64_t b, q, q0, p, j, i, head, chb
    cdef int32_t r
    cdef int c, l, cmd, typ, kind, best_c, bcmd, brank, bk_i, cls
    cdef int32_t bslot
    cdef int64_t bage, bbank
    cdef tick_t now = run.now
    cdef tick_t e, bt, best_t, t_inj, dep, floor
    cdef int rc = E_OK
    cdef int out = RUN_DONE
    cdef bint last, better, blocked
    cdef ReqSlot* s
    cdef RBank* bk
    cdef Best pb
    with nogil:
        while True:
            run.n_loops += 1
            if (run.n_loops & SIGNAL_MASK) == 0 and _check_signals() != E_OK:
                eng.status = E_INTERRUPT
                out = RUN_ERROR
                break
            # ---- 1. inject requests that have arrived, in order, until a queue is full
            while run.in_pos < run.in_len:
                p = run.in_pos
                if run.in_arrive[p] > now:
                    break
                if _rs_rate_full(run, lc, now):
                    break
                c = run.in_ch[p]
                typ = 1 if run.in_write[p] else 0
                j = typ * n_ch + c
                if _rs_queue_full(run, lc, j, now) and not _rs_may_forward(run, lc, p):
                    break  # (the common stop: decided before the bank is computed)
                q = <int64_t>c * pcs_per_ch + run.in_pc[p]
                b = ((q * eng.cnt[2] + run.in_sid[p]) * eng.cnt[3] + run.in_bg[p]) \
                    * eng.cnt[4] + run.in_bank[p]
                SIEVE_CHECK_INDEX(b, n_banks)
                if _rs_try_forward(run, lc, p, b):
                    # a queued write to the same address serves a read at once and
                    # absorbs a write (neither takes a queue slot)
                    dep = now if typ else now + 1
                    if not typ:
                        run.n_forwarded += 1
                        rc = run._count_latency(1)
                    else:
                        run.n_coalesced += 1
                    if dep > run.last_depart:
                        run.last_depart = dep
                    if run.has_outputs:
                        run.out_inject[run.next_id] = now
                        run.out_depart[run.next_id] = dep
                        run.out_class[run.next_id] = -1
                    if run.inject_tick != now:
                        run.inject_tick = now
                        run.inject_count = 0
                    run.inject_count += 1
                    run.last_inject = now
                    run.next_id += 1
                    run.n_injected += 1
                    run.n_done += 1
                    run.in_pos += 1
                    if rc != E_OK:
                        break
                    continue
                if _rs_queue_full(run, lc, j, now):
                    break  # (a write was queued, but none of this address)
                if run.n_free == 0 and run._grow() != 0:
                    rc = E_NOMEM
                    break
                run.n_free -= 1
                r = run.free_slots[run.n_free]
                if run.in_flight[c] == 0:
                    run.last_progress[c] = now  # the channel has work from now on (watchdog)
                s = &run.slots[r]
                s.id = run.next_id
                s.inject = now
                s.addr = run.in_addr[p]
                s.row = run.in_row[p]
                s.col = run.in_col[p]
                s.bank = <int32_t>b
                s.next = -1
                s.issued = 0
                s.typ = <int8_t>typ
                s.row_class = -1
                j = typ * n_banks + b
                if run.queue_head[j] == -1:
                    run.queue_head[j] = r
                    i = typ * n_pcs + q
                    run.queued_bank_pos[j] = run.n_queued_banks[i]
                    run.queued_banks[typ * n_banks + q * banks_per_pc
                                      + run.n_queued_banks[i]] = <int32_t>b
                    run.n_queued_banks[i] += 1
                else:
                    run.slots[run.queue_tail[j]].next = r
                run.queue_tail[j] = r
                if Lifecycle is LcRamulator2:
                    run.n_miss[j] += s.row != run.miss_row[j]
                run.queue_len[typ * n_ch + c] += 1
                run.in_flight[c] += 1
                if run.has_outputs:
                    run.out_inject[run.next_id] = now
                    run.out_class[run.next_id] = -1
                if run.inject_tick != now:
                    run.inject_tick = now
                    run.inject_count = 0
                run.inject_count += 1
                run.last_inject = now
                run.next_id += 1
                run.n_injected += 1
                run.in_pos += 1
                run._mark(b, q)  # one bank of the PC changed
                run.ch_best_valid[c] = 0
            if rc != E_OK:
                eng.status = rc
                out = RUN_ERROR
                break
            if run.in_pos >= run.in_len:
                if not run.input_final:
                    out = RUN_NEED_INPUT
                    break
                if run.n_done == run.n_injected:
                    out = RUN_DONE
                    break

            # ---- 2. refreshes that have become due
            if run.next_ref_due <= now:
                run.next_ref_due = T_INF
                for q in range(n_pcs):
                    if run.ref_pending[q] == 0 and ref_due[q] - ref_lead <= now:
                        run.ref_pending[q] = 1
                        c = <int>(q // pcs_per_ch)
                        if perbank_refresh:
                            run.ref_pending_bank[q] = ref_rr[q]
                        _ref_mark_due(run, lc, q, c)
                        run.ch_best_valid[c] = 0
                    if run.ref_pending[q] == 0 and ref_due[q] - ref_lead < run.next_ref_due:
                        run.next_ref_due = ref_due[q] - ref_lead

            # ---- 3. each channel's best command (the next injection's tick first: a
            # channel whose every command is due no earlier defers its looks until after it)
            t_inj = _rs_next_inject(run, lc, now)
            best_t = T_INF
            best_c = -1
            for c in range(n_ch):
                if not run.ch_best_valid[c]:
                    # write-mode hysteresis
                    if run.write_mode[c]:
                        if run.queue_len[n_ch + c] == 0 or (
                                run.queue_len[n_ch + c] <= run.wr_low
                                and run.queue_len[c] > 0):
                            run.write_mode[c] = 0
                            run._inval_channel(c)
                    elif run.queue_len[n_ch + c] >= run.wr_high or (
                            run.queue_len[c] == 0 and run.queue_len[n_ch + c] > 0):
                        run.write_mode[c] = 1
                        run._inval_channel(c)
                    typ = run.write_mode[c]
                    bt = T_INF
                    bcmd = -1
                    bslot = -1
                    brank = -1
                    bage = AGE_INF
                    bbank = -1
                    head = -1
                    q0 = <int64_t>c * pcs_per_ch
                    chb = eng.lvl_off[0] + <int64_t>c * n_cmd
                    floor = now  # (every tick is at least now)
                    if t_inj < T_INF:
                        floor = _channel_floor(run, c, chb, now)
                        # nothing of this channel can issue before the injection, which
                        # changes its queues: look after it (the channel stays invalid and
                        # takes no part in best_t now). The debug build looks anyway and
                        # checks the floor against what the looks find.
                        if floor >= t_inj and not SIEVE_DEBUG_BUILD:
                            continue
                    for q in range(q0, q0 + pcs_per_ch):
                        # refresh commands of a due pseudo-channel (priority over requests;
                        # ramulator2: only the head of the refresh FIFO)
                        if run.ref_pending[q] and head == -1:
                            cmd = _ref_candidate(run, lc, q, &head, &b)
                            if cmd >= 0:
                                e = 0
                                for l in range(eng.cmd_scope[cmd] + 1):
                                    e = _max(e, R[run.banks[b].base[l] + cmd])
                                e = run._al(cmd, _max(e, now))
                                better = (e < bt) | ((e == bt) & ((2 > brank) | (
                                    (2 == brank) & (-1 < bage))))
                                if better:
                                    bt = e
                                    bcmd = cmd
                                    bslot = -1
                                    brank = 2
                                    bage = -1
                                    bbank = b
                        # the PC's best candidate
                        blocked = _ref_blocks_pc(run, lc, q, c)
                        _rs_look(run, lc, q, chb, typ, blocked, now, &pb)
                        if pb.cmd >= 0:
                            better = (pb.tick < bt) | ((pb.tick == bt) & ((pb.rank > brank) | (
                                (pb.rank == brank) & (pb.age < bage))))
                            if better:
                                bt = pb.tick
                                bcmd = pb.cmd
                                bslot = pb.slot
                                bage = pb.age
                                brank = pb.rank
                                bbank = pb.bank
                    if SIEVE_DEBUG_BUILD:
                        SIEVE_CHECK_INDEX(-<int>(bt < floor), 1)  # aborts: floor above a look
                        if t_inj < T_INF and floor >= t_inj:
                            continue  # (as the optimised build: looked at after the injection)
                    run.ch_best_valid[c] = 1
                    run.ch_best_tick[c] = bt
                    run.ch_best_cmd[c] = bcmd
                    run.ch_best_slot[c] = bslot
                    run.ch_best_bank[c] = bbank
                if run.ch_best_tick[c] < best_t:
                    best_t = run.ch_best_tick[c]
                    best_c = c

            # ---- 4. the next event: injection (t_inj, above), refresh due, or a command issue
            if t_inj <= best_t and t_inj < T_INF:
                now = t_inj
                continue
            if run.next_ref_due <= best_t and run.next_ref_due < T_INF:
                now = _max(run.next_ref_due, now)
                continue
            if best_c < 0:
                eng.status = E_STALL  # nothing can ever issue: should not happen
                out = RUN_ERROR
                break

            # ---- 5. issue the chosen command
            now = best_t
            c = best_c
            cmd = run.ch_best_cmd[c]
            r = run.ch_best_slot[c]
            b = run.ch_best_bank[c]
            SIEVE_CHECK_INDEX(b, n_banks)
            bk = &run.banks[b]
            for l in range(N_LEVELS):
                nodes[l] = bk.node[l]
            q = nodes[1]
            run.ch_best_valid[c] = 0
            kind = eng.cmd_kind[cmd]
            if kind == K_READ or kind == K_WRITE:
                run.last_progress[c] = now
            elif now - run.last_progress[c] > run.stall_limit and run.in_flight[c] > 0:
                eng.status = E_STALL  # livelock: requests in flight, no column command for long
                out = RUN_ERROR
                break
            if r < 0:
                # refresh sequence of pseudo-channel q
                rc = eng._issue(cmd, nodes, -1, -1, now)
                if rc == E_OK and eng.log_on:
                    rc = run._log_type(-1)
                if cmd == C_REFAB or cmd == C_REFPB:
                    run.ref_pending[q] = 0
                    eng._ref_done(q)
                    run.ref_pending_bank[q] = -1
                    if ref_due[q] - ref_lead < run.next_ref_due:
                        run.next_ref_due = ref_due[q] - ref_lead
                _ref_issued(run, lc, q, c, cmd)
            else:
                s = &run.slots[r]
                typ = s.typ
                if s.row_class == -1:
                    cls = 0 if (kind == K_READ or kind == K_WRITE) else (1 if cmd == C_ACT else 2)
                    s.row_class = <int8_t>cls
                    run.n_row_class[cls] += 1
                if kind == K_READ or kind == K_WRITE:
                    last = s.issued + 1 == run.bursts_per_req
                    if last and _rp_auto_precharge(run, lc, rp, r, b):
                        cmd = C_WRA if typ else C_RDA
                    rc = eng._issue(cmd, nodes, s.row, s.col + s.issued, now)
                    if rc == E_OK and eng.log_on:
                        rc = run._log_type(typ)
                    s.issued += 1
                    run.pc_bursts[q] += 1
                    if last:
                        dep = now + (eng.write_lat if typ else eng.read_lat)
                        if dep > run.last_depart:
                            run.last_depart = dep
                        if not typ and rc == E_OK:
                            rc = run._count_latency(dep - s.inject)
                        if run.has_outputs:
                            run.out_depart[s.id] = dep
                            run.out_class[s.id] = s.row_class
                        run.n_done += 1
                        run.in_flight[c] -= 1
                        _rs_retire(run, lc, r, typ, b, q, c, now)
                        run.free_slots[run.n_free] = r
                        run.n_free += 1
                else:
                    rc = eng._issue(cmd, nodes, s.row, -1, now)
                    if rc == E_OK and eng.log_on:
                        rc = run._log_type(typ)
                    _rs_after_row_cmd(run, lc, r, typ, b, q, c, cmd, now)
            if kind != K_READ and kind != K_WRITE and kind != K_READ_AP and kind != K_WRITE_AP:
                _rs_row_cmd_ends_tick(run, lc, c, now)
            # the bank changed (every look reads the ready times afresh)
            run._mark(b, q)
            if rc != E_OK:
                eng.status = rc
                out = RUN_ERROR
                break
    run.now = now
    return out



cdef class RequestRun:
    """One request-trace run: the controllers' queues, caches and statistics (see the module
    comment). Use through sieve.dram.engine; every Python-visible method checks its
    arguments, so no call can index outside the engine's arrays. Fields are declared, with
    their units, in _dram.pxd.

    Semantics of the sieve lifecycle (the default): requests enter their channel's read or
    write queue in trace order (the front end stalls on a full queue, like Ramulator's
    LoadStoreTrace) no earlier than their arrival tick, as many per tick as the queues take
    unless ``inject_per_tick`` limits it. Each channel's controller issues at most one command
    per command bus per tick, chosen by FR-FCFS: among the commands that can issue at the
    earliest tick, refresh first, then row hits, then the oldest request. A request stays
    queued until its last burst; a row is not precharged while a queued request still hits
    it. Writes are drained in bursts between the two watermarks (write mode entered at
    ``>= wr_high`` queued writes or an empty read queue, left at ``<= wr_low`` with reads
    waiting, or when empty); ``closed_page`` auto-precharges when no other queued request hits
    the row. Refresh (the engine's manager, due times carried over between runs): REFab per
    pseudo-channel every nREFI (or REFpb round-robin every nREFIpb); requests to a PC (bank)
    with a due refresh wait until it is done.

    The ramulator2 lifecycle follows Ramulator 2.1's generic controller with its HBM3/4 tick
    (src/ramulator/controller/controller_base.cpp, impl/hbm_controller_base.cpp,
    impl/hbm34_controller.cpp, scheduler/impl/frfcfs.cpp, refresh/impl/all_bank.cpp):
      * a request whose ACT issues moves to the active buffer, freeing its queue slot (the
        front end may refill it from the next tick: Ramulator's front end ticks before the
        controller);
      * FR-FCFS = ready first, then oldest; no preference for row hits among queued requests,
        but an active request's column command goes before any queued one, and the column
        command of a tick before its row command;
      * a row may be precharged for a queued request whenever no active request waits in the
        bank (would_close_active), even if other queued requests hit it;
      * refresh requests wait in a FIFO (by due tick, then pseudo-channel); while one waits no
        queued request of the channel issues (active ones do), and its PREA waits for the
        PC's active requests; a refresh is due one tick earlier than in the sieve lifecycle
        (Ramulator counts its clock from 1);
      * ACT and REF issue on rising CK edges only (PRE also on falling edges);
      * in a tick, the column command (if any) is chosen before the row command, and a row
        command ends the tick's column slot (the engine raises the channel's column-command
        ready tick past it);
      * a read to the address of a queued (not yet activated) write is served at once (one
        tick) and a write to such an address is absorbed; neither takes a queue slot;
      * the front end injects at most ``inject_per_tick`` requests per tick but only one at
        tick 0 (Ramulator's simulation loop ticks its front end once before the first memory
        tick);
      * write mode is entered above (not at) the high mark and left below the low one (the
        thresholds are computed by the caller).
    Row class per request: 0 hit, 1 miss (bank closed), 2 conflict (other row open), by the
    first command issued for it.

    Watchdog: a channel with requests in flight that issues no column command for
    ``8 * (refresh period + 16 * largest constraint latency)`` ticks is livelocked (e.g. a
    refresh closes every row before its first read); the run stops with E_STALL. Every 2**16
    loop iterations the GIL is taken to run Python's signal handlers (Ctrl-C).

    Event-driven and exact: the controller state only changes at injections, refresh due times
    and issues, so the loop jumps between those; at every decision it evaluates what a
    tick-by-tick controller would see at that tick. Incremental state (all exact):
      * per bank, its candidates until its queue or state changes (the bank goes on its PC's
        list of banks to rebuild);
      * per pseudo-channel, its candidates in one dense list (the offsets in `ready` of the
        command at the bank's SID, bank-group and bank nodes, the command group, the FR-FCFS
        key). A look is one pass over the list: a candidate's tick is
        align(max(G, ready at its SID, BG and bank nodes)), where G, the group's (ACT, PRE,
        RD, WR: a group has one command) channel- and PC-level tick, is read once per look;
      * per pseudo-channel, its best candidate while its bank has not changed and its tick
        under the current ready values is unchanged (every other candidate's tick can only
        have grown: ready values and `now` never decrease, and a candidate's rank and age are
        fixed); banks of the PC that changed meanwhile are rebuilt and only their candidates
        are compared with it (FR-FCFS keys are unique in a PC, so the order is total and the
        result is the full pass's; the debug build checks every look against one);
      * per channel, its best command until anything in the channel changes;
      * ramulator2: per (type, bank), how many queued requests miss the row it was counted
        against (kept on every enqueue and dequeue, recounted when the open row differs), so
        that the search for the oldest hit and the oldest miss stops at the hit when nothing
        misses (sequential traffic: a 32-request walk per column command before).
    """

    def __cinit__(self):
        self.slots = NULL
        self.free_slots = NULL
        self.banks = NULL
        self.cand_sid_off = NULL
        self.cand_bg_off = NULL
        self.cand_bank_off = NULL
        self.cand_key = NULL
        self.cand_group = NULL
        self.cand_id = NULL
        self.rebuild_banks = NULL
        self.lat_hist = NULL
        self.lat_tail = NULL
        self.log_req_types = NULL

    def __dealloc__(self):
        free(self.slots)
        free(self.free_slots)
        free(self.banks)
        free(self.cand_sid_off)
        free(self.cand_bg_off)
        free(self.cand_bank_off)
        free(self.cand_key)
        free(self.cand_group)
        free(self.cand_id)
        free(self.rebuild_banks)
        free(self.lat_hist)
        free(self.lat_tail)
        free(self.log_req_types)

    def __init__(self, Engine eng, int bursts, int qsize, int wr_high, int wr_low,
                 bint closed_page, int lifecycle=LC_SIEVE, int inject_per_tick=0):
        cdef int64_t b, q
        cdef int l
        cdef int nodes[5]
        if bursts < 1 or qsize < 1 or wr_high < 1 or wr_low < 0:
            raise ValueError("run_requests: bursts, queue size and write high watermark must be "
                             ">= 1, the low watermark >= 0")
        if not 0 <= lifecycle < len(LIFECYCLES):
            raise ValueError(f"RequestRun: lifecycle {lifecycle} out of range "
                             f"[0, {len(LIFECYCLES)})")
        if inject_per_tick < 0:
            raise ValueError("RequestRun: inject_per_tick must be >= 0 (0 = unlimited)")
        self.eng = eng
        self.n_ch = eng.cnt[0]
        self.pcs_per_ch = eng.cnt[1]
        self.n_pcs = eng.n_nodes[1]
        self.n_banks = eng.n_nodes[4]
        self.banks_per_pc = eng.banks_per_pc
        self.queue_size = qsize
        self.wr_high = wr_high
        self.wr_low = wr_low
        self.bursts_per_req = bursts
        self.n_cmd = eng.n_cmd
        self.lifecycle = lifecycle
        self.ramulator2 = lifecycle == LC_RAMULATOR2
        self.inject_per_tick = inject_per_tick
        self.closed_page = closed_page
        self.perbank_refresh = eng.perbank_refresh
        self.ref_lead = 1 if self.ramulator2 else 0
        self.stall_limit = 8 * (max(eng.nREFI, eng.nREFIpb * eng.banks_per_pc)
                                + 16 * eng.max_lat)
        n_ch, n_pcs, n_banks, n_cmd = self.n_ch, self.n_pcs, self.n_banks, self.n_cmd
        self.queue_head = _filled(_TMPL_I32, 2 * n_banks, -1)
        self.miss_row = _filled(_TMPL_I32, 2 * n_banks, -2)
        self.n_miss = _filled(_TMPL_I32, 2 * n_banks, 0)
        self.queue_tail = _filled(_TMPL_I32, 2 * n_banks, -1)
        self.queued_banks = _filled(_TMPL_I32, 2 * n_banks, 0)
        self.queued_bank_pos = _filled(_TMPL_I32, 2 * n_banks, -1)
        self.n_queued_banks = _filled(_TMPL_I32, 2 * n_pcs, 0)
        self.queue_len = _filled(_TMPL_I32, 2 * n_ch, 0)
        self.in_flight = _filled(_TMPL_I64, n_ch, 0)
        self.write_mode = _filled(_TMPL_I8, n_ch, 0)
        self.active_slot = _filled(_TMPL_I32, n_banks, -1)
        self.active_banks = _filled(_TMPL_I32, n_banks, 0)
        self.active_bank_pos = _filled(_TMPL_I32, n_banks, -1)
        self.n_active_banks = _filled(_TMPL_I32, n_pcs, 0)
        self.freed_tick = _filled(_TMPL_I64, 2 * n_ch, -1)
        self.n_freed = _filled(_TMPL_I32, 2 * n_ch, 0)
        self.n_refs_waiting = _filled(_TMPL_I8, n_ch, 0)
        self.inject_tick = -1
        self.inject_count = 0
        # candidate lists: at most three candidates per bank (RBank), named bank * 4 + k
        if n_banks >= (1 << 29):
            raise ValueError("run_requests: more than 2**29 banks")
        self.cand_cap = 3 * max(self.banks_per_pc, 1)
        if eng.ready.shape[0] >= (1 << 31):
            raise ValueError("run_requests: engine state too large")
        self.cand_sid_off = <int32_t*>malloc(max(n_pcs, 1) * self.cand_cap * sizeof(int32_t))
        self.cand_bg_off = <int32_t*>malloc(max(n_pcs, 1) * self.cand_cap * sizeof(int32_t))
        self.cand_bank_off = <int32_t*>malloc(max(n_pcs, 1) * self.cand_cap * sizeof(int32_t))
        self.cand_key = <int64_t*>malloc(max(n_pcs, 1) * self.cand_cap * sizeof(int64_t))
        self.cand_group = <int32_t*>malloc(max(n_pcs, 1) * self.cand_cap * sizeof(int32_t))
        self.cand_id = <int32_t*>malloc(max(n_pcs, 1) * self.cand_cap * sizeof(int32_t))
        self.rebuild_banks = <int32_t*>malloc(max(n_banks, 1) * sizeof(int32_t))
        if (self.cand_sid_off == NULL or self.cand_bg_off == NULL or self.cand_bank_off == NULL
                or self.cand_key == NULL or self.cand_group == NULL or self.cand_id == NULL
                or self.rebuild_banks == NULL):
            raise MemoryError("run_requests: candidate lists")
        self.n_cands = _filled(_TMPL_I32, n_pcs, 0)
        self.n_rebuild = _filled(_TMPL_I32, n_pcs, 0)
        self.pc_rebuild_all = _filled(_TMPL_I8, n_pcs, 1)
        self.pc_best_valid = _filled(_TMPL_I8, n_pcs, 0)
        self.pc_best_tick = _filled(_TMPL_I64, n_pcs, 0)
        self.pc_best_id = _filled(_TMPL_I32, n_pcs, 0)
        self.ch_best_valid = _filled(_TMPL_I8, n_ch, 0)
        self.ch_best_tick = _filled(_TMPL_I64, n_ch, 0)
        self.ch_best_cmd = _filled(_TMPL_I32, n_ch, 0)
        self.ch_best_slot = _filled(_TMPL_I32, n_ch, 0)
        self.ch_best_bank = _filled(_TMPL_I64, n_ch, 0)
        self.ref_pending = _filled(_TMPL_I8, n_pcs, 0)
        self.ref_pending_bank = _filled(_TMPL_I32, n_pcs, -1)
        self.last_progress = _filled(_TMPL_I64, n_ch, 0)
        am = _filled(_TMPL_I64, eng.n_cmd, 0)
        for x in range(eng.n_cmd):
            am[x] = eng.cmd_amask[x]
        if self.ramulator2:
            # Ramulator 2.1's HBM3/4 controller issues only PRE on falling edges
            for x in (C_ACT, C_REFAB, C_REFPB):
                am[x] = eng.tpc - 1
        self.align_mask = am
        self.pc_bursts = _filled(_TMPL_I64, n_pcs, 0)
        self.banks = <RBank*>malloc(max(n_banks, 1) * sizeof(RBank))
        if self.banks == NULL:
            raise MemoryError("run_requests: bank state")
        for b in range(n_banks):
            nodes[4] = <int>b
            nodes[3] = <int>(b // eng.cnt[4])
            nodes[2] = nodes[3] // eng.cnt[3]
            nodes[1] = nodes[2] // eng.cnt[2]
            nodes[0] = nodes[1] // eng.cnt[1]
            for l in range(N_LEVELS):
                self.banks[b].base[l] = eng.lvl_off[l] + <int64_t>nodes[l] * n_cmd
                self.banks[b].node[l] = nodes[l]
            self.banks[b].valid = 1
            self.banks[b].n_cand = 0
        self.slot_cap = 0
        self.n_free = 0
        if self._grow() != 0:
            raise MemoryError("run_requests: request slots")
        self.lat_hist_len = 1024
        self.lat_hist = <int64_t*>calloc(self.lat_hist_len, sizeof(int64_t))
        if self.lat_hist == NULL:
            raise MemoryError("run_requests: latency histogram")
        self.next_ref_due = T_INF
        for q in range(n_pcs):
            if eng.ref_due[q] - self.ref_lead < self.next_ref_due:
                self.next_ref_due = eng.ref_due[q] - self.ref_lead
        self.in_pos = 0
        self.in_len = 0
        self.next_id = 0
        self.input_final = False
        self.has_outputs = False
        self.out_len = 0
        self.started = False
        self.now = 0
        eng.status = E_OK

    # ---------------------------------------------------------------------------------------
    # Python-visible API
    # ---------------------------------------------------------------------------------------
    def set_outputs(self, int64_t[::1] inject, int64_t[::1] depart, int8_t[::1] rclass):
        """Per-request outputs (indexed by request id): injection tick, departure tick (last
        data beat) and row class. Optional; set before the first feed."""
        if self.started:
            raise ValueError("RequestRun.set_outputs: call before the first feed")
        if inject.shape[0] != depart.shape[0] or inject.shape[0] != rclass.shape[0]:
            raise ValueError("run_requests: every request array must have one entry per "
                             "request")
        self.out_inject = inject
        self.out_depart = depart
        self.out_class = rclass
        self.has_outputs = True
        self.out_len = inject.shape[0]

    def feed(self, const int64_t[::1] arrive, const int32_t[::1] r_ch, const int32_t[::1] r_pc,
             const int32_t[::1] r_sid, const int32_t[::1] r_bg, const int32_t[::1] r_ba,
             const int32_t[::1] r_row, const int32_t[::1] r_col, const int8_t[::1] r_write,
             const int64_t[::1] r_addr=None):
        """The next chunk of requests (decoded addresses, arrival ticks non-decreasing).
        ``r_addr``: the byte addresses (int64); with them the ramulator2 lifecycle forwards a
        read to a queued write of the same address and coalesces a write into one, as
        Ramulator's ``ControllerBase::send`` does (without them, neither happens)."""
        cdef Engine eng = self.eng
        if self.input_final:
            raise ValueError("RequestRun.feed: input already finished")
        if self.in_pos < self.in_len:
            raise ValueError("RequestRun.feed: the previous chunk is not consumed yet")
        arrays = [arrive, r_ch, r_pc, r_sid, r_bg, r_ba, r_row, r_col, r_write]
        n = arrive.shape[0]
        if any(a.shape[0] != n for a in arrays):
            raise ValueError("run_requests: every request array must have one entry per "
                             "request")
        # (arrival ticks are only compared, never used as an index: any value is safe)
        for a, lv in zip(arrays[1:6], range(N_LEVELS)):
            if not _all_below(a, eng.cnt[lv]):
                raise ValueError(f"run_requests: address level {lv} out of range "
                                 f"[0, {eng.cnt[lv]})")
        if self.next_id + n >= (<int64_t>1 << 58):
            raise ValueError("run_requests: at most 2**58 requests per run")
        if self.has_outputs and self.next_id + n > self.out_len:
            raise ValueError("run_requests: every request array must have one entry per "
                             "request")
        self.in_arrive = arrive
        self.in_ch = r_ch
        self.in_pc = r_pc
        self.in_sid = r_sid
        self.in_bg = r_bg
        self.in_bank = r_ba
        self.in_row = r_row
        self.in_col = r_col
        self.in_write = r_write
        if r_addr is not None:
            if r_addr.shape[0] != n:
                raise ValueError("run_requests: every request array must have one entry per "
                                 "request")
            self.in_addr = r_addr
            self.forward_writes = self.ramulator2
        else:
            self.in_addr = _filled(_TMPL_I64, n, 0)
            self.forward_writes = False
        self.in_pos = 0
        self.in_len = n
        self.started = True

    def finish_input(self):
        """No more chunks: the run ends when every request given has completed."""
        self.input_final = True

    def advance(self):
        """Simulate until the chunk is consumed (RUN_NEED_INPUT = 1) or the run is over
        (RUN_DONE = 0); -1 when the engine stopped (its last_status says why)."""
        cdef int rc
        if self.in_pos >= self.in_len and not self.input_final:
            return RUN_NEED_INPUT
        self.started = True
        self.eng.status = E_OK
        rc = self._run()
        if self.eng.status == E_INTERRUPT:
            _reraise()
        return rc

    @property
    def end_tick(self):
        """Tick of the last data beat of all completed requests (0 before any)."""
        return self.last_depart

    @property
    def last_inject_tick(self):
        """Tick at which the last request entered the controller."""
        return self.last_inject

    @property
    def n_completed(self):
        return self.n_done

    def stats(self):
        """Counters of the run: completed and injected requests, read latency (count, sum,
        histogram in ticks as an int64 array.array, the long tail as a sorted list), row
        classes, column commands per PC (an int64 array.array); builds no numpy array."""
        cdef int64_t top = self.lat_hist_len
        while top > 0 and self.lat_hist[top - 1] == 0:
            top -= 1
        cdef int64_t i
        cdef carray.array hist = _filled(_TMPL_I64, top, 0)
        for i in range(top):
            hist.data.as_longlongs[i] = self.lat_hist[i]
        tail = sorted([self.lat_tail[i] for i in range(self.lat_tail_n)])
        cdef carray.array pcb = _filled(_TMPL_I64, self.n_pcs, 0)
        for i in range(self.n_pcs):
            pcb.data.as_longlongs[i] = self.pc_bursts[i]
        return {"completed": self.n_done, "injected": self.n_injected,
                "end_tick": self.last_depart, "last_inject_tick": self.last_inject,
                "reads": self.n_reads, "latency_sum_ticks": self.read_lat_sum,
                "latency_hist": hist, "latency_tail": tail,
                "hits": self.n_row_class[0], "misses": self.n_row_class[1],
                "conflicts": self.n_row_class[2],
                "forwarded": self.n_forwarded, "coalesced": self.n_coalesced,
                "pc_bursts": pcb}

    def log_types(self):
        """Request type of every command logged during this run, in issue order: 0 read,
        1 write, -1 refresh (Ramulator 2.1's command-trace 'type')."""
        out = _np().empty(self.log_req_types_n, dtype=_np().int8)
        for i in range(self.log_req_types_n):
            out[i] = self.log_req_types[i]
        return out

    def take_log_types(self):
        """The request types of the commands logged since the last take_log_types (as
        log_types); empties the buffer, so a log streamed in pieces (Engine.take_log) keeps
        its types in step."""
        out = self.log_types()
        self.log_req_types_n = 0
        return out

    # ---------------------------------------------------------------------------------------
    # Core (nogil)
    # ---------------------------------------------------------------------------------------
    cdef int _grow(self) noexcept nogil:
        """Double the request slots (or make the first 1024); 0 or E_NOMEM."""
        cdef int64_t ncap = self.slot_cap * 2 if self.slot_cap else 1024
        cdef int64_t i
        cdef ReqSlot* s
        cdef int32_t* f
        if ncap > (<int64_t>1 << 31) - 1:
            return E_NOMEM
        s = <ReqSlot*>realloc(self.slots, ncap * sizeof(ReqSlot))
        if s == NULL:
            return E_NOMEM
        self.slots = s
        f = <int32_t*>realloc(self.free_slots, ncap * sizeof(int32_t))
        if f == NULL:
            return E_NOMEM
        self.free_slots = f
        # new slots go on the free stack, lowest index on top
        for i in range(ncap - 1, self.slot_cap - 1, -1):
            self.free_slots[self.n_free] = <int32_t>i
            self.n_free += 1
        self.slot_cap = ncap
        return 0

    cdef int _count_latency(self, int64_t lat) noexcept nogil:
        cdef int64_t ncap, i
        cdef int64_t* h
        self.n_reads += 1
        self.read_lat_sum += lat
        if lat < HIST_FLAT:
            if lat >= self.lat_hist_len:
                ncap = self.lat_hist_len
                while ncap <= lat:
                    ncap *= 2
                h = <int64_t*>realloc(self.lat_hist, ncap * sizeof(int64_t))
                if h == NULL:
                    return E_NOMEM
                for i in range(self.lat_hist_len, ncap):
                    h[i] = 0
                self.lat_hist = h
                self.lat_hist_len = ncap
            self.lat_hist[lat] += 1
            return 0
        if self.lat_tail_n == self.lat_tail_cap:
            ncap = self.lat_tail_cap * 2 if self.lat_tail_cap else 64
            h = <int64_t*>realloc(self.lat_tail, ncap * sizeof(int64_t))
            if h == NULL:
                return E_NOMEM
            self.lat_tail = h
            self.lat_tail_cap = ncap
        self.lat_tail[self.lat_tail_n] = lat
        self.lat_tail_n += 1
        return 0

    cdef int _log_type(self, int t) noexcept nogil:
        cdef int64_t ncap
        cdef int8_t* p
        if self.log_req_types_n == self.log_req_types_cap:
            ncap = self.log_req_types_cap * 2 if self.log_req_types_cap else 65536
            p = <int8_t*>realloc(self.log_req_types, ncap)
            if p == NULL:
                return E_NOMEM
            self.log_req_types = p
            self.log_req_types_cap = ncap
        self.log_req_types[self.log_req_types_n] = <int8_t>t
        self.log_req_types_n += 1
        return 0

    cdef inline tick_t _al(self, int cmd, tick_t t) noexcept nogil:
        cdef tick_t m = self.align_mask[cmd]
        return (t + m) & ~m

    cdef inline void _inval_pc(self, int64_t q) noexcept nogil:
        """Rebuild every bank of PC q at its next look."""
        self.pc_rebuild_all[q] = 1
        self.pc_best_valid[q] = 0

    cdef inline void _mark(self, int64_t b, int64_t q) noexcept nogil:
        """Bank b (of PC q) changed: rebuild its candidates at the PC's next look (which
        compares only them with the cached best, unless the best is in bank b)."""
        SIEVE_CHECK_INDEX(b, self.n_banks)
        if self.banks[b].valid:
            self.banks[b].valid = 0
            SIEVE_CHECK_INDEX(self.n_rebuild[q], self.banks_per_pc)
            self.rebuild_banks[q * self.banks_per_pc + self.n_rebuild[q]] = <int32_t>b
            self.n_rebuild[q] += 1

    cdef inline void _inval_channel(self, int c) noexcept nogil:
        """Forget every cached candidate of channel c (its queue type or blocking changed)."""
        cdef int64_t q
        for q in range(<int64_t>c * self.pcs_per_ch, <int64_t>(c + 1) * self.pcs_per_ch):
            self._inval_pc(q)

    cdef inline void _freed(self, int64_t j, tick_t now) noexcept nogil:
        """ramulator2: a queue slot of (type, channel) j was freed at `now`; the front end,
        which ticks before the controller, sees it from now + 1."""
        if self.freed_tick[j] != now:
            self.freed_tick[j] = now
            self.n_freed[j] = 0
        self.n_freed[j] += 1

    cdef void _unlink(self, int32_t r, int typ, int64_t b, int64_t q) noexcept nogil:
        """Remove slot r from bank b's queue list of type typ (and the bank from its PC's
        list of banks with queued requests when the list empties)."""
        cdef int64_t n_banks = self.n_banks
        cdef int64_t j = typ * n_banks + b
        cdef int64_t lst, i, b2
        cdef int32_t prev = -1
        cdef int32_t r2 = self.queue_head[j]
        while r2 != r:
            prev = r2
            r2 = self.slots[r2].next
        if prev == -1:
            self.queue_head[j] = self.slots[r].next
        else:
            self.slots[prev].next = self.slots[r].next
        if self.queue_tail[j] == r:
            self.queue_tail[j] = prev
        self.slots[r].next = -1
        if self.lifecycle == LC_RAMULATOR2:
            self.n_miss[j] -= self.slots[r].row != self.miss_row[j]
        if self.queue_head[j] == -1:
            # the bank leaves its PC's active list (swap-remove)
            lst = typ * self.n_pcs + q
            i = self.queued_bank_pos[j]
            self.n_queued_banks[lst] -= 1
            b2 = self.queued_banks[typ * n_banks + q * self.banks_per_pc + self.n_queued_banks[lst]]
            self.queued_banks[typ * n_banks + q * self.banks_per_pc + i] = <int32_t>b2
            self.queued_bank_pos[typ * n_banks + b2] = <int32_t>i
            self.queued_bank_pos[j] = -1

    cdef inline void _add(self, RBank* bk, int cmd, int32_t r, int rank, int grp) noexcept nogil:
        cdef RCand* cd = &bk.cand[bk.n_cand]
        SIEVE_CHECK_INDEX(r, self.slot_cap)
        SIEVE_CHECK_INDEX(bk.n_cand, 3)
        cd.cmd = cmd
        cd.slot = r
        cd.age = self.slots[r].id
        cd.rank = <int8_t>rank
        cd.grp = <int8_t>grp
        cd.list_pos = -1
        bk.n_cand += 1

    # ---- per-PC candidate lists (see the class docstring) -------------------------------
    cdef inline void _cand_set(self, int64_t q, int64_t b, int k, int32_t i) noexcept nogil:
        """Write candidate k of bank b into entry i of PC q's list."""
        cdef RBank* bk = &self.banks[b]
        cdef RCand* cd = &bk.cand[k]
        cdef int64_t o = q * self.cand_cap + i
        SIEVE_CHECK_INDEX(i, self.cand_cap)
        cd.list_pos = i
        self.cand_sid_off[o] = <int32_t>(bk.base[2] + cd.cmd)
        self.cand_bg_off[o] = <int32_t>(bk.base[3] + cd.cmd)
        self.cand_bank_off[o] = <int32_t>(bk.base[4] + cd.cmd)
        self.cand_key[o] = _fr_key(cd)  # (rank <= 4 and ids < 2**58: feed)
        self.cand_group[o] = cd.grp
        self.cand_id[o] = <int32_t>((b << 2) | k)

    cdef inline void _cand_put(self, int64_t q, int64_t b, int k) noexcept nogil:
        """Append candidate k of bank b to PC q's list."""
        self._cand_set(q, b, k, self.n_cands[q])
        self.n_cands[q] += 1

    cdef inline void _cand_del_at(self, int64_t q, int32_t i) noexcept nogil:
        """Remove entry i of PC q's list (the last entry takes its place)."""
        cdef int64_t o = q * self.cand_cap
        cdef int32_t n = self.n_cands[q] - 1
        cdef int32_t id
        SIEVE_CHECK_INDEX(i, n + 1)
        if i != n:
            id = self.cand_id[o + n]
            self.cand_sid_off[o + i] = self.cand_sid_off[o + n]
            self.cand_bg_off[o + i] = self.cand_bg_off[o + n]
            self.cand_bank_off[o + i] = self.cand_bank_off[o + n]
            self.cand_key[o + i] = self.cand_key[o + n]
            self.cand_group[o + i] = self.cand_group[o + n]
            self.cand_id[o + i] = id
            self.banks[(id >> 2)].cand[(id & 3)].list_pos = i
        self.n_cands[q] = n

    cdef inline tick_t _tick(self, int64_t b, int cmd, int64_t chb, int64_t pcb,
                             tick_t now) noexcept nogil:
        """Earliest tick of `cmd` at bank b (every level of its path), at or after `now`."""
        cdef const int64_t* R = &self.eng.ready[0]
        cdef RBank* bk = &self.banks[b]
        return self._al(cmd, _max(_max(_max(R[chb + cmd], R[pcb + cmd]), now),
                                  _max(_max(R[bk.base[2] + cmd], R[bk.base[3] + cmd]),
                                       R[bk.base[4] + cmd])))

    cdef void _check_look(self, int64_t q, int64_t chb, tick_t now, Best* best) noexcept nogil:
        """Debug builds: the candidate list matches the banks' candidates, and the best is
        the FR-FCFS minimum over all of them (aborts otherwise)."""
        cdef int64_t pcb = self.eng.lvl_off[1] + q * self.n_cmd
        cdef int64_t o = q * self.cand_cap
        cdef int32_t i
        cdef int gc
        cdef int64_t b, bad = 0
        cdef tick_t e, bt = T_INF, bage = AGE_INF
        cdef int brank = -1
        cdef RBank* bk
        cdef RCand* cd
        for i in range(self.n_cands[q]):
            b = self.cand_id[o + i] >> 2
            bk = &self.banks[b]
            cd = &bk.cand[self.cand_id[o + i] & 3]
            gc = C_ACT if cd.grp == 0 else C_PRE if cd.grp == 1 else C_RD if cd.grp == 2 else C_WR
            if (cd.list_pos != i or cd.cmd != gc or self.cand_group[o + i] != cd.grp
                    or self.cand_sid_off[o + i] != bk.base[2] + gc
                    or self.cand_bg_off[o + i] != bk.base[3] + gc
                    or self.cand_bank_off[o + i] != bk.base[4] + gc
                    or self.cand_key[o + i] != _fr_key(cd)
                    or b // self.banks_per_pc != q or not bk.valid
                    or (self.cand_id[o + i] & 3) >= bk.n_cand):
                bad = 1
            e = self._tick(b, gc, chb, pcb, now)
            if e < bt or (e == bt and (cd.rank > brank or (cd.rank == brank
                                                            and cd.age < bage))):
                bt = e
                brank = cd.rank
                bage = cd.age
        if bt != best.tick or (best.cmd >= 0 and (brank != best.rank or bage != best.age)):
            bad = 1
        SIEVE_CHECK_INDEX(-bad, 1)  # aborts with a message when the lists are inconsistent

    cdef bint _buffered_write(self, int64_t p, int64_t b) noexcept nogil:
        """ramulator2: input request p has the address of a queued (not active) write, so it
        is forwarded (a read) or coalesced (a write). ``b``: its global bank, -1 = compute."""
        cdef int32_t r2
        cdef int64_t q
        if self.queue_len[self.n_ch + self.in_ch[p]] == 0:
            return False  # no write queued on its channel (every read-only trace)
        if b < 0:
            q = <int64_t>self.in_ch[p] * self.pcs_per_ch + self.in_pc[p]
            b = ((q * self.eng.cnt[2] + self.in_sid[p]) * self.eng.cnt[3] + self.in_bg[p]) \
                * self.eng.cnt[4] + self.in_bank[p]
        SIEVE_CHECK_INDEX(b, self.n_banks)
        r2 = self.queue_head[self.n_banks + b]
        while r2 != -1 and self.slots[r2].addr != self.in_addr[p]:
            r2 = self.slots[r2].next
        return r2 != -1

    cdef inline bint _closes_active(self, int cmd, int64_t q, int64_t b) noexcept nogil:
        """ramulator2 would_close_active: a closing command to a bank (or PC) that has an
        active request."""
        cdef int kind = self.eng.cmd_kind[cmd]
        if kind != K_CLOSE:
            return False
        if self.eng.cmd_scope[cmd] == LV_BANK:
            return self.active_slot[b] != -1
        return self.n_active_banks[q] > 0


    cdef int _run(self):
        """Run the event loop compiled for this run's policies (see the registry LIFECYCLES and
        the policy functions above the class): chosen here, once per advance."""
        if self.lifecycle == LC_RAMULATOR2:
            if self.closed_page:
                return _request_loop(self, <LcRamulator2*>NULL, <ClosedPage*>NULL)
            return _request_loop(self, <LcRamulator2*>NULL, <OpenPage*>NULL)
        if self.closed_page:
            return _request_loop(self, <LcSieve*>NULL, <ClosedPage*>NULL)
        return _request_loop(self, <LcSieve*>NULL, <OpenPage*>NULL)


def _check_requests(Engine eng, arrays, int bursts, int qsize, int wr_high, int wr_low,
                    outs, int64_t n_pc_out):
    """Refuse inputs that would make run_requests index outside its arrays."""
    n = arrays[0].shape[0]
    if any(a.shape[0] != n for a in arrays) or any(o.shape[0] != n for o in outs):
        raise ValueError("run_requests: every request array must have one entry per request")
    if n_pc_out != eng.n_nodes[1]:
        raise ValueError("run_requests: out_pc_bursts needs one entry per pseudo-channel")


def run_requests(Engine eng, const int64_t[::1] arrive, const int32_t[::1] r_ch,
                 const int32_t[::1] r_pc, const int32_t[::1] r_sid, const int32_t[::1] r_bg,
                 const int32_t[::1] r_ba, const int32_t[::1] r_row, const int32_t[::1] r_col,
                 const int8_t[::1] r_write, int bursts, int qsize, int wr_high, int wr_low,
                 bint closed_page, int64_t[::1] out_inject, int64_t[::1] out_depart,
                 int8_t[::1] out_class, int64_t[::1] out_pc_bursts, int lifecycle=LC_SIEVE,
                 int inject_per_tick=0):
    """Simulate a whole request trace held in memory (one RequestRun fed one chunk); returns
    the final tick (-1 on error). See RequestRun for the semantics; ``out_pc_bursts`` gets the
    column commands per pseudo-channel added."""
    _check_requests(eng, (arrive, r_ch, r_pc, r_sid, r_bg, r_ba, r_row, r_col, r_write),
                    bursts, qsize, wr_high, wr_low, (out_inject, out_depart, out_class),
                    out_pc_bursts.shape[0])
    run = RequestRun(eng, bursts, qsize, wr_high, wr_low, closed_page, lifecycle,
                     inject_per_tick)
    run.set_outputs(out_inject, out_depart, out_class)
    run.feed(arrive, r_ch, r_pc, r_sid, r_bg, r_ba, r_row, r_col, r_write)
    run.finish_input()
    rc = run.advance()
    _np().asarray(out_pc_bursts)[:] += run.stats()["pc_bursts"]
    if rc != RUN_DONE:
        return -1
    return run.end_tick
