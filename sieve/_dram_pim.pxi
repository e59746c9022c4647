# Front end 2 of the engine: PIM programs (GEMV kernels expanded to commands here, never in
# Python). Included by _dram.pyx (module level); only sieve/dram/engine.py imports the engine
# (sieve.dram.pim_device calls run_pim through it).
#
# A run starts from whatever state the engine holds (timing, open rows, refresh due times,
# each PC's last command): programs run one after another on the same engine continue exactly
# where the previous one stopped (sieve.dram.pim_device.PimDevice).

# Per-PC stream state columns
cdef enum:
    P_SLOT = 0       # current kernel slot in prog_kern
    P_END = 1        # one past the PC's last slot
    P_PH = 2         # phase (PH_*)
    P_V = 3          # vector
    P_K = 4          # chunk
    P_R = 5          # row within the chunk
    P_CNT = 6        # GWRITE / MACAB / RDRES issued in the current group
    P_READY = 7      # earliest start of the current kernel
    P_REF = 8        # 1: a refresh sequence is in progress ahead of the PC's next command
    P_WEND = 9       # end of the kernel before the barrier the PC waits at
    P_PROG = 10      # tick of the PC's last GWRITE / MACAB / RDRES (stall watchdog)
    P_SQ = 11        # PH_SEQ: the mode sequence being issued (SEQ_*)
    P_ST = 12        # PH_SEQ: its current step (row of the step table)
    P_BANK = 13      # bank (within the PC) of the step's next command
    P_OVK = 14       # overhead span being timed (OV_*), -1 none
    P_OVS = 15       # tick the span started (the PC's previous command, or its ready tick)
    P_SID = 16       # bundled rows: the SID (bundle) of the PC's next ACTSB / MACSB / PRESB;
                     # parity rows: the parity of its next ACTPB / MACPB / PREPB
    P_PSID = 17      # bundled rows: the bundle a look-ahead addresses; parity rows: the bank
                     # (index within the PC) its command addresses
    P_PROW = 18      # bundled rows: the row it prepares
    P_NFIELDS = 19

cdef enum:
    PH_GW = 0
    PH_ROW = 1
    PH_RES = 2
    PH_DONE = 3
    PH_WAIT = 4      # at a barrier, waiting for the other PCs of its barrier set
    PH_CLOSE = 5     # stream done; closes its PIM row (idle policy "closed") before PH_DONE
    PH_START = 6     # a kernel may start: its mode sequences (if any), then PH_GW
    PH_SEQ = 7       # issuing a mode sequence (sieve.dram.pimmode) step by step

# Mode sequences (sieve.dram.pimmode.SEQUENCES), in the order a kernel meets them, and the
# overhead spans timed per PC (sieve.dram.pimmode.OVERHEADS: the sequences, then readback)
cdef enum:
    SEQ_PARK_IN = 0
    SEQ_SB_HAB = 1
    SEQ_CRF = 2
    SEQ_HAB_PIM = 3
    SEQ_GRFA = 4     # the input writes of a chunk, in place of GWRITE (not run as PH_SEQ)
    SEQ_GRFB = 5     # the result writes of a vector, after its last MAC
    SEQ_PIM_HAB = 6
    SEQ_HAB_SB = 7
    SEQ_PARK_OUT = 8
    N_SEQ = 9
    OV_READBACK = 9
    N_OV = 10
    ROW_AFTER_W = -2  # step row: the row after the kernel's weights (pimmode.ROW_AFTER_WEIGHTS)

# Step table columns and operations (sieve.dram.pimmode: OP_*, STEP_FIELDS)
cdef enum:
    S_OP = 0
    S_SID = 1
    S_BG = 2
    S_BA = 3
    S_ROW = 4
    S_COL = 5
    S_NFIELDS = 6
    OP_ACT = 0
    OP_PRE = 1
    OP_RD = 2
    OP_WR = 3

cdef enum:
    CAND_WORK = 0    # a command of the PC's kernel stream
    CAND_REF = 1     # refresh ahead of the PC's next command (pulled in, see R1)
    CAND_IDLE = 2    # refresh of a PC with nothing to do (on schedule, see R2)
    CAND_PREP = 3    # bundled rows: the next row's bundle switched while this one streams

# A refresh is pulled in at most this many intervals ahead of its due tick (JEDEC allows 8;
# with 7, two refreshes are never more than 8 intervals + one refresh sequence apart, inside
# the checker's 9 x tREFI postponement limit).
cdef tick_t PULL_IN = 7
#: PULL_IN for Python (sieve.dram.symmetry bounds the earliest tick a run can issue at).
PULL_IN_INTERVALS = PULL_IN

#: Most vectors one pass of a kernel may hold (K_VPP); bounds K_GW x K_VPP and
#: K_NRES x K_VPP far below int64 with the kernel counts' 2**40 bound.
MAX_VPP = 1 << 16

# Idle policies of run_pim (sieve.dram.pim_device.IDLE_POLICIES)
cdef enum:
    IDLE_OPEN = 0    # rows stay open; refreshes due while a channel has no work are deferred
    IDLE_CLOSED = 1  # a PC closes its PIM row when its stream ends; idle PCs refresh on schedule


cdef inline int64_t _even_chunks(int64_t n_chunks) noexcept nogil:
    """Bank-parity rows: the chunks of a kernel in the even banks, ceil(n / 2) (the first a
    pass visits; the rest are in the odd banks), also the rows-per-chunk multiples of weights
    each bank holds."""
    return (n_chunks + 1) // 2


cdef class _PimRun:
    """The state of one run_pim call (streams, barriers, outputs) and its nogil steps.

    The memoryviews own the buffers; the hot loop goes through raw pointers into them (and
    into the engine's per-PC arrays), with SIEVE_CHECK_INDEX on the indices in debug builds.
    Fields are declared, with their units, in _dram.pxd.
    """

    cdef void _bind(self) noexcept:
        """Point the raw views at the buffers (after every memoryview is assigned)."""
        cdef Engine e = self.eng
        self.state_p = &self.pc_state[0, 0]
        self.kernels_p = &self.kernels[0, 0]
        self.slot_kernel_p = &self.slot_kernel[0]
        self.k_start_p = &self.k_start[0]
        self.k_end_p = &self.k_end[0]
        self.pc_last_p = &e.pc_last[0]
        self.pc_lseq_p = &e.pc_lseq[0]
        self.ch_last_p = &e.ch_last[0]
        self.ref_due_p = &e.ref_due[0]
        self.pim_ab_row_p = &e.ab_row[e.pim_ab_off]
        self.pim_n_open_p = &e.n_open[e.pim_ab_off]
        self.open_row_p = &e.open_row[0]
        self.ab_row_p = &e.ab_row[0]
        self.pim_sb_row_p = &e.sb_row[<int64_t>e.cmd_buffer[C_ACTSB] * e.n_nodes[2]]
        self.n_bundles = e.n_bund
        self.pim_open_row_p = &e.open_row[<int64_t>e.cmd_buffer[C_ACTSB] * e.n_nodes[4]]
        self.pim_pb_row_p = &e.pb_row[<int64_t>e.cmd_buffer[C_ACTPB] * e.n_nodes[1] * 2]
        self.parity = e.parity
        self.seq_ptr_p = &self.seq_ptr[0]
        self.steps_p = &self.steps[0, 0]
        self.n_pcs = self.pc_state.shape[0]
        self.n_kernels = self.kernels.shape[0]
        self.n_slots = self.slot_kernel.shape[0]

    cdef inline int64_t* _s(self, int64_t q) noexcept nogil:
        SIEVE_CHECK_INDEX(q, self.n_pcs)
        return self.state_p + q * P_NFIELDS

    cdef inline const int64_t* _k(self, int64_t slot) noexcept nogil:
        """The descriptor row of the kernel in `slot`."""
        cdef int64_t kk
        SIEVE_CHECK_INDEX(slot, self.n_slots)
        kk = self.slot_kernel_p[slot]
        SIEVE_CHECK_INDEX(kk, self.n_kernels)
        return self.kernels_p + kk * K_NFIELDS

    cdef inline void _ordered(self, int64_t q, int c, tick_t now) noexcept nogil:
        """PC q of channel c issued at `now`: the issue order the next commands follow."""
        self.pc_last_p[q] = now
        self.pc_lseq_p[q] = self.eng.seq
        if now > self.ch_last_p[c]:
            self.ch_last_p[c] = now

    cdef inline void _count(self, int c, int cmd) noexcept nogil:
        SIEVE_CHECK_INDEX(c, self.ch_counts.shape[0])
        SIEVE_CHECK_INDEX(cmd, self.ch_counts.shape[1])
        self.ch_counts[c, cmd] += 1

    cdef void _release(self, int64_t s) noexcept nogil:
        """Every PC of barrier set s has arrived: start their next kernels ``gap`` after the
        latest end among them."""
        cdef int64_t i, p, slot
        cdef tick_t top = self.bar_latest_end[s]
        self.bar_released = True
        for i in range(self.member_ptr[s], self.member_ptr[s + 1]):
            p = self.members[i]
            slot = self.pc_state[p, P_SLOT]
            if self.pc_state[p, P_PH] == PH_WAIT and self.slot_barrier[slot] == s:
                self.pc_state[p, P_PH] = PH_START
                self.pc_state[p, P_READY] = top + self.kernels[self.slot_kernel[slot], K_GAP]
        self.bar_instance[s] += 1
        self.bar_arrived[s] = 0
        self.bar_latest_end[s] = 0

    cdef void _arrive(self, int64_t q, tick_t end) noexcept nogil:
        """PC q reached the barrier of its current kernel, its previous kernel ending at
        `end`; releases the barrier when it is the last participant."""
        cdef int64_t s = self.slot_barrier[self.pc_state[q, P_SLOT]]
        self.pc_state[q, P_PH] = PH_WAIT
        self.pc_state[q, P_WEND] = end
        self.bar_arrived[s] += 1
        if end > self.bar_latest_end[s]:
            self.bar_latest_end[s] = end
        if self.bar_arrived[s] == self.n_needed[self.n_needed_ptr[s] + self.bar_instance[s]]:
            self._release(s)

    cdef void _finish_kernel(self, int64_t q) noexcept nogil:
        """Book the end of PC q's current kernel and move to its next one."""
        cdef int64_t* s = self._s(q)
        cdef int64_t slot = s[P_SLOT]
        cdef tick_t end
        SIEVE_CHECK_INDEX(slot, self.n_slots)
        if self.k_end_p[slot] < 0:
            if self.k_start_p[slot] < 0:
                # no command at all (every count 0): starts and ends when it may start
                self.k_start_p[slot] = s[P_READY]
                self.k_end_p[slot] = s[P_READY]
            else:
                # no readback: it ends with its last command (+1 CK)
                self.k_end_p[slot] = self.pc_last_p[q] + self.eng.tpc
        elif self._mk(self._k(slot)):
            # a mode protocol: the PC is busy until its exit sequence's last command (+1 CK)
            self.k_end_p[slot] = _max(self.k_end_p[slot], self.pc_last_p[q] + self.eng.tpc)
        end = self.k_end_p[slot]
        self.pc_busy[q] += end - self.k_start_p[slot]
        if end > self.pc_finish[q]:
            self.pc_finish[q] = end
        slot += 1
        s[P_SLOT] = slot
        s[P_V] = 0
        s[P_K] = 0
        s[P_CNT] = 0
        if slot >= s[P_END]:
            s[P_PH] = PH_CLOSE if self.idle_closed else PH_DONE
        elif self.slot_barrier[slot] >= 0:
            self._arrive(q, end)
        else:
            s[P_PH] = PH_START
            s[P_READY] = end + self._k(slot)[K_GAP]

    cdef inline int64_t _pass_vectors(self, const int64_t* kr, const int64_t* s
                                      ) noexcept nogil:
        """Vectors of the current pass (s[P_V] counts passes): K_VPP, or what is left of
        K_NVEC in the last pass. A pass writes K_GW bursts per chunk and reads K_NRES bursts
        back per vector of the pass; its MACABs (K_MACS per row) each feed all of them."""
        cdef int64_t left = kr[K_NVEC] - s[P_V] * kr[K_VPP]
        return kr[K_VPP] if left > kr[K_VPP] else left

    cdef inline bint _mk(self, const int64_t* kr) noexcept nogil:
        """Whether a kernel runs inside the mode protocol: the spec has one and the kernel
        issues commands (a kernel with no command starts and ends when it may start)."""
        return self.has_modes and (kr[K_GW] > 0 or (kr[K_ROWS] > 0 and kr[K_MACS] > 0)
                               or kr[K_NRES] > 0)

    cdef inline void _span_begin(self, int64_t q, int64_t* s, int64_t kind) noexcept nogil:
        """Start timing an overhead span of PC q at its previous command (or the tick its
        kernel may start, if later)."""
        s[P_OVK] = kind
        s[P_OVS] = _max(self.pc_last_p[q], s[P_READY])

    cdef inline void _span_end(self, int64_t q, int64_t* s) noexcept nogil:
        """Book the span being timed: up to the PC's latest command."""
        cdef int64_t k = s[P_OVK]
        if k >= 0:
            SIEVE_CHECK_INDEX(k, N_OV)
            if self.pc_last_p[q] > s[P_OVS]:
                self.overhead[q, k] += self.pc_last_p[q] - s[P_OVS]
            s[P_OVK] = -1

    cdef inline void _gw_begin(self, int64_t q, int64_t* s) noexcept nogil:
        """Enter a chunk's input writes (PH_GW); under a protocol with SEQ_GRFA steps they are
        register-row WRs, timed as the grf_a span."""
        s[P_PH] = PH_GW
        if self.n_grfa_steps > 0 and self._mk(self._k(s[P_SLOT])):
            self._span_begin(q, s, SEQ_GRFA)

    cdef inline void _seq_begin(self, int64_t q, int64_t* s, int64_t sq) noexcept nogil:
        s[P_PH] = PH_SEQ
        s[P_SQ] = sq
        s[P_ST] = self.seq_ptr_p[sq]
        self._span_begin(q, s, sq)

    cdef inline void _bank_nodes(self, int64_t q, int64_t b, int* nodes) noexcept nogil:
        """Nodes at the SID, bank-group and bank levels of bank b (index within PC q)."""
        nodes[4] = <int>(q * self.eng.banks_per_pc + b)
        nodes[3] = nodes[4] // self.eng.cnt[4]
        nodes[2] = nodes[3] // self.eng.cnt[3]

    cdef inline int64_t _step_row(self, const int64_t* s, const int64_t* st) noexcept nogil:
        """The row a step addresses (ROW_AFTER_W: the row after the PC's kernel's weights;
        run_pim checks that it lies in the bank)."""
        cdef const int64_t* kr
        if st[S_ROW] != ROW_AFTER_W:
            return st[S_ROW]
        kr = self._k(s[P_SLOT])
        if self.parity:  # the even chunks' rows (as many as the odd ones', or one more)
            return kr[K_BASE] + _even_chunks(kr[K_NCHUNK]) * kr[K_ROWS]
        return kr[K_BASE] + kr[K_NCHUNK] * kr[K_ROWS]

    cdef inline int _seq_cmd(self, int64_t q, int64_t* s) noexcept nogil:
        """The next command of the current mode-sequence step (-1: the step is done or
        skipped, s[P_ST] advanced; call again). ACT: skipped when the row is open; PRE:
        skipped when the bank is closed; RD/WR: the row is opened first when needed. A row
        that must be closed first is closed with PREAB when an all-bank row holds the bank
        (shared row buffers), with PREPB when its parity's row does, else with PRE."""
        cdef const int64_t* st
        cdef int64_t op, b, row, cur
        SIEVE_CHECK_INDEX(s[P_ST], self.steps.shape[0])
        st = self.steps_p + s[P_ST] * S_NFIELDS
        op = st[S_OP]
        b = (st[S_SID] * self.eng.cnt[3] + st[S_BG]) * self.eng.cnt[4] + st[S_BA]
        row = self._step_row(s, st)
        SIEVE_CHECK_INDEX(q * self.eng.banks_per_pc + b, self.eng.n_nodes[4])
        cur = self.open_row_p[q * self.eng.banks_per_pc + b]
        s[P_BANK] = b
        if op == OP_PRE:
            if cur < 0:
                s[P_ST] += 1
                return -1
            return C_PRE
        if cur == row:
            if op == OP_ACT:
                s[P_ST] += 1
                return -1
            return C_RD if op == OP_RD else C_WR
        if self.ab_row_p[q] >= 0:
            return C_PREAB
        if self.parity and self.pim_pb_row_p[q * 2 + b % 2] >= 0:
            s[P_BANK] = b % 2  # the parity's row holds the bank: PREPB through bank 0 / 1
            return C_PREPB
        return C_PRE if cur >= 0 else C_ACT

    cdef inline bint _sid_closed(self, int64_t q, int64_t sid) noexcept nogil:
        """Every bank of SID `sid` of PC q is closed in the PIM row buffer."""
        cdef int64_t b, bps = self.eng.banks_per_sid
        cdef int64_t first = (q * self.n_bundles + sid) * bps
        for b in range(bps):
            SIEVE_CHECK_INDEX(first + b, self.eng.n_nodes[4])
            if self.pim_open_row_p[first + b] != -1:
                return False
        return True

    cdef inline int _bundle_cmd(self, int64_t q, int64_t* s, const int64_t* kr) noexcept nogil:
        """Bundled rows: the command that serves kernel row P_K * K_ROWS + P_R, which lives in
        bundle (SID) ``rho % n_bundles`` at row ``K_BASE + rho // n_bundles`` (a kernel's rows
        striped over the bundles); -1 when its MACs are all issued. Sets P_SID."""
        cdef int64_t rho = s[P_K] * kr[K_ROWS] + s[P_R]
        cdef int64_t sid = rho % self.n_bundles
        cdef int64_t row = kr[K_BASE] + rho // self.n_bundles
        cdef int64_t cur
        SIEVE_CHECK_INDEX(q * self.n_bundles + sid, self.eng.n_nodes[2])
        cur = self.pim_sb_row_p[q * self.n_bundles + sid]
        s[P_SID] = sid
        if cur != row:
            if cur >= 0:
                return C_PRESB
            # banks of the bundle left open by other commands close with the whole PC
            return C_ACTSB if self._sid_closed(q, sid) else C_PREA
        if s[P_CNT] < kr[K_MACS]:
            return C_MACSB
        return -1

    cdef inline int _prep_cmd(self, int64_t q, int64_t* s) noexcept nogil:
        """Bundled rows, while PC q streams a bundle: the command that readies the bundle of
        the stream's next row (the next row of the chunk, of the next chunk, or the first row
        again for the next pass), when that is another bundle and not at its row yet: PRESB,
        then ACTSB (sets P_PSID / P_PROW); -1 for none."""
        cdef const int64_t* kr = self._k(s[P_SLOT])
        cdef int64_t rho, nxt, sid, row, cur
        rho = s[P_K] * kr[K_ROWS] + s[P_R]
        if s[P_R] + 1 < kr[K_ROWS] or s[P_K] + 1 < kr[K_NCHUNK]:
            nxt = rho + 1
        elif (s[P_V] + 1) * kr[K_VPP] < kr[K_NVEC]:
            nxt = 0
        else:
            return -1
        sid = nxt % self.n_bundles
        if sid == rho % self.n_bundles:
            return -1
        row = kr[K_BASE] + nxt // self.n_bundles
        SIEVE_CHECK_INDEX(q * self.n_bundles + sid, self.eng.n_nodes[2])
        cur = self.pim_sb_row_p[q * self.n_bundles + sid]
        if cur == row:
            return -1
        s[P_PSID] = sid
        s[P_PROW] = row
        if cur >= 0:
            return C_PRESB
        return C_ACTSB if self._sid_closed(q, sid) else -1

    cdef inline int64_t _par_of(self, const int64_t* kr, int64_t k, int64_t* m) noexcept nogil:
        """Bank-parity rows: the parity of chunk k and its index m among that parity's chunks.
        The first ceil(n/2) chunks a kernel visits are in the even banks, the rest in the odd
        ones (PIMSimulator executeGemv: the even input tiles, then the odd ones; preloadGemv
        lays tile i in bank i % 2), each chunk K_ROWS rows from K_BASE + m * K_ROWS."""
        cdef int64_t ne = _even_chunks(kr[K_NCHUNK])
        if k < ne:
            m[0] = k
            return 0
        m[0] = k - ne
        return 1

    cdef inline int64_t _par_open_bank(self, int64_t q, int64_t par) noexcept nogil:
        """A bank of parity `par` of PC q (index within the PC) open on its own, -1 none."""
        cdef int64_t b, bpp = self.eng.banks_per_pc
        for b in range(par, bpp, 2):
            SIEVE_CHECK_INDEX(q * bpp + b, self.eng.n_nodes[4])
            if self.pim_open_row_p[q * bpp + b] != -1:
                return b
        return -1

    cdef inline int _parity_cmd(self, int64_t q, int64_t* s, const int64_t* kr) noexcept nogil:
        """Bank-parity rows: the command that serves row P_R of chunk P_K (_par_of): PREPB /
        ACTPB of its parity (through bank 0 or 1), a PRE of a bank of the parity opened on
        its own (a register row) first, then MACPB; -1 when its MACs are all issued. Sets
        P_SID (the parity) and P_BANK (the bank the command addresses)."""
        cdef int64_t m, b, cur, row
        cdef int64_t par = self._par_of(kr, s[P_K], &m)
        row = kr[K_BASE] + m * kr[K_ROWS] + s[P_R]
        SIEVE_CHECK_INDEX(q * 2 + par, self.eng.n_nodes[1] * 2)
        cur = self.pim_pb_row_p[q * 2 + par]
        s[P_SID] = par
        s[P_BANK] = par
        if cur != row:
            if cur >= 0:
                return C_PREPB
            b = self._par_open_bank(q, par)
            if b < 0:
                return C_ACTPB
            s[P_BANK] = b
            return C_PRE
        if s[P_CNT] < kr[K_MACS]:
            return C_MACPB
        return -1

    cdef inline int _par_prep_cmd(self, int64_t q, int64_t* s) noexcept nogil:
        """Bank-parity rows, while PC q writes a chunk's input (PH_GW): the command that opens
        the chunk's first row in its parity behind the writes (PREPB, or PRE of a bank of the
        parity opened on its own, then ACTPB; sets P_PSID to the bank it addresses and
        P_PROW), unless the writes use a bank of that parity (the register row of SEQ_GRFA);
        -1 for none. PIMSimulator's controller opens the next even tile's row during its
        GRF_A writes to bank 1 the same way.

        And once the pass has no even chunk left (the odd chunks, or the GRF_B writes after
        them), PREPB closes the even row if it is open: PIMSimulator's controller precharges
        a bank as soon as no queued command hits its open row (CommandQueue.cpp
        process_precharge), so the mode switch after the pass finds bank 0 closed."""
        cdef const int64_t* kr = self._k(s[P_SLOT])
        cdef int64_t m, cur, row, par, b, ph = s[P_PH]
        if kr[K_ROWS] == 0 or kr[K_MACS] == 0:
            return -1
        if ((ph == PH_SEQ and s[P_SQ] == SEQ_GRFB)
                or ((ph == PH_GW or ph == PH_ROW) and s[P_K] >= _even_chunks(kr[K_NCHUNK]))):
            SIEVE_CHECK_INDEX(q * 2, self.eng.n_nodes[1] * 2)
            if self.pim_pb_row_p[q * 2] >= 0:
                s[P_PSID] = 0
                return C_PREPB
            return -1
        if ph != PH_GW:
            return -1
        par = self._par_of(kr, s[P_K], &m)
        if par == self.grfa_par:
            return -1
        row = kr[K_BASE] + m * kr[K_ROWS]
        SIEVE_CHECK_INDEX(q * 2 + par, self.eng.n_nodes[1] * 2)
        cur = self.pim_pb_row_p[q * 2 + par]
        if cur == row:
            return -1
        s[P_PSID] = par
        s[P_PROW] = row
        if cur >= 0:
            return C_PREPB
        b = self._par_open_bank(q, par)
        if b >= 0:
            s[P_PSID] = b
            return C_PRE
        return C_ACTPB

    cdef inline int _next(self, int64_t q, int64_t* s) noexcept nogil:
        """Next command of PC q's stream (-1 when it is finished or waits at a barrier); `s`
        is its stream state row.

        Moves the stream past finished loops (which depends on counters only, never on time),
        so calling it again without an issue returns the same command.
        """
        cdef const int64_t* kr
        cdef int64_t row, open_row, ph, sq
        cdef int cmd
        while True:
            ph = s[P_PH]
            if ph == PH_DONE or ph == PH_WAIT:
                return -1
            if ph == PH_CLOSE:
                # idle policy "closed": the stream is done; close the PIM row if one is open
                if self.pim_n_open_p[q] > 0:
                    return C_PREAB
                s[P_PH] = PH_DONE
                return -1
            kr = self._k(s[P_SLOT])
            if ph == PH_START:
                if self._mk(kr):
                    self._seq_begin(q, s, SEQ_PARK_IN)
                else:
                    s[P_PH] = PH_GW
            elif ph == PH_SEQ:
                if s[P_ST] < self.seq_ptr_p[s[P_SQ] + 1]:
                    cmd = self._seq_cmd(q, s)
                    if cmd >= 0:
                        return cmd
                    continue
                self._span_end(q, s)
                sq = s[P_SQ]
                if sq == SEQ_HAB_PIM:
                    self._gw_begin(q, s)
                elif sq == SEQ_PIM_HAB:
                    s[P_PH] = PH_RES
                    self._span_begin(q, s, OV_READBACK)
                elif sq == SEQ_PARK_OUT:
                    self._finish_kernel(q)
                else:
                    self._seq_begin(q, s, sq + 1)
            elif ph == PH_GW:
                if s[P_CNT] < kr[K_GW] * self._pass_vectors(kr, s):
                    if self.n_grfa_steps > 0 and self._mk(kr):
                        # the input as WRs to the register row (SEQ_GRFA, wrapping): the
                        # step's WR, or the PRE/PREAB/ACT that opens its row first
                        s[P_ST] = self.seq_ptr_p[SEQ_GRFA] + s[P_CNT] % self.n_grfa_steps
                        return self._seq_cmd(q, s)  # never -1 for a WR step
                    return C_GWRITE
                if self.n_grfa_steps > 0 and self._mk(kr):
                    self._span_end(q, s)
                s[P_PH] = PH_ROW
                s[P_R] = 0
                s[P_CNT] = 0
            elif ph == PH_ROW:
                if s[P_R] < kr[K_ROWS] and kr[K_MACS] > 0 and self.parity:
                    cmd = self._parity_cmd(q, s, kr)
                    if cmd >= 0:
                        return cmd
                    s[P_R] += 1
                    s[P_CNT] = 0
                    continue
                if s[P_R] < kr[K_ROWS] and kr[K_MACS] > 0 and self.n_bundles > 1:
                    cmd = self._bundle_cmd(q, s, kr)
                    if cmd >= 0:
                        return cmd
                    s[P_R] += 1
                    s[P_CNT] = 0
                    continue
                if s[P_R] < kr[K_ROWS] and kr[K_MACS] > 0:
                    # in range: run_pim refuses kernels whose rows do not fit in a bank
                    row = kr[K_BASE] + s[P_K] * kr[K_ROWS] + s[P_R]
                    open_row = self.pim_ab_row_p[q]
                    if open_row != row:
                        if open_row >= 0:
                            return C_PREAB
                        # a mode sequence's row left open where ACTAB needs every bank closed
                        return C_PREA if self.pim_n_open_p[q] > 0 else C_ACTAB
                    if s[P_CNT] < kr[K_MACS]:
                        return C_MACAB
                    s[P_R] += 1
                    s[P_CNT] = 0
                    continue
                s[P_K] += 1
                s[P_CNT] = 0
                if s[P_K] < kr[K_NCHUNK]:
                    self._gw_begin(q, s)
                elif self._mk(kr):
                    self._seq_begin(q, s, SEQ_GRFB)
                else:
                    s[P_PH] = PH_RES
                    self._span_begin(q, s, OV_READBACK)
            else:  # PH_RES
                if s[P_CNT] < kr[K_NRES] * self._pass_vectors(kr, s):
                    return C_RDRES
                self._span_end(q, s)
                s[P_V] += 1
                s[P_K] = 0
                s[P_CNT] = 0
                if s[P_V] * kr[K_VPP] < kr[K_NVEC]:
                    if self._mk(kr):
                        self._seq_begin(q, s, SEQ_HAB_PIM)
                    else:
                        s[P_PH] = PH_GW
                    continue
                if self._mk(kr):
                    self._seq_begin(q, s, SEQ_HAB_SB)
                    continue
                self._finish_kernel(q)

    cdef inline bint _scan(self, int c, tick_t* out_e, int* out_cmd, int* out_pl,
                    int* out_kind) noexcept nogil:
        """The command channel c issues next: the earliest candidate of its PCs, on a tie the
        PC served least recently (the shared command buses). Returns whether any PC of the
        channel still has work (False: the channel is finished or all its PCs wait)."""
        cdef int nodes[5]
        cdef int pl, cmd, kind, pcmd, best_cmd = -1, best_pl = 0, best_kind = CAND_WORK
        cdef int pcs_per_ch = self.pcs_per_ch
        cdef tick_t pe
        cdef int64_t q, b, q0 = <int64_t>c * pcs_per_ch
        cdef int64_t* s
        cdef const int64_t* pc_last_p = self.pc_last_p
        cdef const int64_t* ref_due_p = self.ref_due_p
        cdef const int64_t* pc_lseq_p = self.pc_lseq_p
        cdef tick_t pull_in = self.pull_in
        cdef tick_t e, best_e = T_INF, floor = self.ch_last_p[c]
        cdef bint idle_closed = self.idle_closed
        cdef bint work = False
        self.bar_released = False
        for pl in range(pcs_per_ch):
            q = q0 + pl
            s = self._s(q)
            nodes[0] = c  # every PIM and refresh command here addresses a whole PC
            nodes[1] = <int>q
            if s[P_REF]:
                # R1, continued: the refresh sequence started ahead of the PC's work
                cmd = self.eng._ref_cmd(q, &b)
                kind = CAND_REF
                work = True
                e = _max(_max(self.eng._earliest(cmd, nodes), pc_last_p[q]),
                         ref_due_p[q] - pull_in)
                if idle_closed:  # R4: not pulled in before the PC's kernel may start
                    e = _max(e, _min(ref_due_p[q], s[P_READY]))
            else:
                cmd = self._next(q, s)
                if cmd >= 0:
                    kind = CAND_WORK
                    work = True
                    if self.eng.cmd_scope[cmd] == LV_BANK:  # a mode-sequence step
                        self._bank_nodes(q, s[P_BANK], nodes)
                    elif self.eng.cmd_scope[cmd] == LV_SID:  # a bundle
                        nodes[2] = <int>(q * self.n_bundles + s[P_SID])
                    e = self.eng._align(cmd, _max(_max(self.eng._earliest(cmd, nodes),
                                                       pc_last_p[q]),
                                                  _max(s[P_READY], floor)))
                    if cmd == C_MACSB:
                        # while a bundle streams, the next row's bundle may switch rows: the
                        # look-ahead goes first when it can issue earlier and no refresh is due
                        pcmd = self._prep_cmd(q, s)
                        if pcmd >= 0:
                            nodes[2] = <int>(q * self.n_bundles + s[P_PSID])
                            pe = self.eng._align(pcmd, _max(_max(self.eng._earliest(pcmd,
                                                                                    nodes),
                                                                 pc_last_p[q]),
                                                            _max(s[P_READY], floor)))
                            if pe < e and pe < ref_due_p[q]:
                                cmd = pcmd
                                e = pe
                                kind = CAND_PREP
                    elif self.parity and (s[P_PH] == PH_GW or s[P_PH] == PH_ROW
                                          or s[P_PH] == PH_SEQ):
                        # parity rows: the chunk's first row may open behind its input writes,
                        # the even row close once the pass needs it no more
                        pcmd = self._par_prep_cmd(q, s)
                        if pcmd >= 0:
                            self._bank_nodes(q, s[P_PSID], nodes)
                            pe = self.eng._align(pcmd, _max(_max(self.eng._earliest(pcmd,
                                                                                    nodes),
                                                                 pc_last_p[q]),
                                                            _max(s[P_READY], floor)))
                            if pe < e and pe < ref_due_p[q]:
                                cmd = pcmd
                                e = pe
                                kind = CAND_PREP
                    if ref_due_p[q] <= e:
                        # R1: the refresh falls due before the PC's next command: the work
                        # yields; the refresh may be pulled in (at most PULL_IN intervals)
                        s[P_REF] = 1
                        cmd = self.eng._ref_cmd(q, &b)
                        kind = CAND_REF
                        e = _max(_max(self.eng._earliest(cmd, nodes), pc_last_p[q]),
                                 ref_due_p[q] - pull_in)
                        if idle_closed:  # R4: not pulled in before the PC's kernel may start
                            e = _max(e, _min(ref_due_p[q], s[P_READY]))
                else:
                    # R2: nothing to do (finished, or at a barrier): refresh on schedule
                    cmd = self.eng._ref_cmd(q, &b)
                    kind = CAND_IDLE
                    e = _max(_max(self.eng._earliest(cmd, nodes), pc_last_p[q]), ref_due_p[q])
            if kind != CAND_WORK and kind != CAND_PREP:
                e = self.eng._align(cmd, _max(e, floor))  # a channel issues in time order
            if e < best_e or (e == best_e and pc_lseq_p[q] < pc_lseq_p[q0 + best_pl]):
                best_e = e
                best_cmd = cmd
                best_pl = pl
                best_kind = kind
        if self.bar_released:
            # a PC arriving during this scan released a barrier: PCs scanned before it as
            # waiting now have work; scan again so every PC of the channel competes
            return self._scan(c, out_e, out_cmd, out_pl, out_kind)
        out_e[0] = best_e
        out_cmd[0] = best_cmd
        out_pl[0] = best_pl
        out_kind[0] = best_kind
        return work

    cdef inline int _issue(self, int c, int pl, int cmd, int kind, tick_t now) noexcept nogil:
        """Issue `cmd` for PC (c, pl) at `now` and advance its stream counters."""
        cdef int nodes[5]
        cdef int64_t q = <int64_t>c * self.pcs_per_ch + pl
        cdef int64_t* s = self._s(q)
        cdef int64_t slot
        cdef const int64_t* kr
        cdef int row = -1, col = -1, rc
        cdef int64_t m = 0
        cdef bint rowcmd
        nodes[0] = c  # PC-scope commands: the levels below are not used
        nodes[1] = <int>q
        nodes[2] = nodes[3] = nodes[4] = 0
        self._count(c, cmd)
        if kind == CAND_PREP:  # bundled rows: ready the next row's bundle (no progress)
            if self.parity:  # parity rows: the chunk's first row, through bank 0 / 1
                self._bank_nodes(q, s[P_PSID], nodes)
            else:
                nodes[2] = <int>(q * self.n_bundles + s[P_PSID])
            rc = self.eng._issue(cmd, nodes, <int>s[P_PROW] if (cmd == C_ACTSB or
                                                                 cmd == C_ACTPB) else -1,
                                 -1, now)
            self._ordered(q, c, now)
            return rc
        if kind != CAND_WORK:
            if kind == CAND_REF and now - _max(s[P_PROG], s[P_READY]) > self.stall_limit:
                return E_STALL  # refreshes only, for a PC whose work is ready: livelock
            rc = self.eng._issue(cmd, nodes, -1, -1, now)
            self._ordered(q, c, now)
            if cmd == C_REFAB:
                self.eng._ref_done(q)
                s[P_REF] = 0
                self.n_refresh[q] += 1
            return rc
        if s[P_PH] == PH_CLOSE:  # the PREAB that closes a finished stream's row
            rc = self.eng._issue(cmd, nodes, -1, -1, now)
            self._ordered(q, c, now)
            return rc
        slot = s[P_SLOT]
        kr = self._k(slot)
        if s[P_PH] == PH_SEQ:
            return self._issue_step(q, c, s, slot, cmd, now)
        if s[P_PH] == PH_GW and cmd != C_GWRITE:
            # a GRF_A write (SEQ_GRFA step) or the command that opens its row
            rc = self._issue_step(q, c, s, slot, cmd, now)
            if cmd == C_WR:
                s[P_CNT] += 1
            return rc
        rowcmd = (cmd == C_ACTAB or cmd == C_PREAB or cmd == C_PREA or cmd == C_ACTSB
                  or cmd == C_PRESB or cmd == C_ACTPB or cmd == C_PREPB or cmd == C_PRE)
        if rowcmd:
            # watchdog: a PC whose work is ready makes no progress (livelock, e.g. a refresh
            # closes its row before the first MAC every time, or refreshes never end)
            if now - _max(s[P_PROG], s[P_READY]) > self.stall_limit:
                return E_STALL
        else:
            s[P_PROG] = now
        if self.k_start_p[slot] < 0:
            self.k_start_p[slot] = now
        if self.eng.cmd_scope[cmd] == LV_SID:
            nodes[2] = <int>(q * self.n_bundles + s[P_SID])
        elif self.eng.cmd_scope[cmd] == LV_BANK:  # parity rows (and a PRE before them)
            self._bank_nodes(q, s[P_BANK], nodes)
        if cmd == C_ACTAB:
            row = <int>(kr[K_BASE] + s[P_K] * kr[K_ROWS] + s[P_R])
        elif cmd == C_ACTSB:
            row = <int>(kr[K_BASE] + (s[P_K] * kr[K_ROWS] + s[P_R]) // self.n_bundles)
        elif cmd == C_MACAB:
            row = self.pim_ab_row_p[q]
            col = <int>(s[P_CNT] % self.eng.n_cols)
        elif cmd == C_MACSB:
            row = self.pim_sb_row_p[q * self.n_bundles + s[P_SID]]
            col = <int>(s[P_CNT] % self.eng.n_cols)
        elif cmd == C_ACTPB:
            self._par_of(kr, s[P_K], &m)
            row = <int>(kr[K_BASE] + m * kr[K_ROWS] + s[P_R])
        elif cmd == C_MACPB:
            row = self.pim_pb_row_p[q * 2 + s[P_SID]]
            col = <int>(s[P_CNT] % self.eng.n_cols)
        elif cmd == C_GWRITE or cmd == C_RDRES:
            col = <int>(s[P_CNT] % self.eng.n_cols)  # burst index in the buffer / results
        rc = self.eng._issue(cmd, nodes, row, col, now)
        self._ordered(q, c, now)
        if not rowcmd:
            s[P_CNT] += 1
            if (cmd == C_RDRES and s[P_CNT] == kr[K_NRES] * self._pass_vectors(kr, s)
                    and (s[P_V] + 1) * kr[K_VPP] >= kr[K_NVEC]):
                self.k_end_p[slot] = now + self.eng.read_lat
        return rc


    cdef int _issue_step(self, int64_t q, int c, int64_t* s, int64_t slot, int cmd,
                         tick_t now) noexcept nogil:
        """Issue `cmd` of PC q's current mode-sequence step at `now`: the step's own command
        (which completes it) or one that prepares its bank (PREAB, PRE, ACT)."""
        cdef int nodes[5]
        cdef const int64_t* st = self.steps_p + s[P_ST] * S_NFIELDS
        cdef int64_t op = st[S_OP]
        cdef int row = -1, col = -1, rc
        cdef bint done = ((op == OP_ACT and cmd == C_ACT) or (op == OP_PRE and cmd == C_PRE)
                          or (op == OP_RD and cmd == C_RD) or (op == OP_WR and cmd == C_WR))
        nodes[0] = c
        nodes[1] = <int>q
        nodes[2] = nodes[3] = nodes[4] = 0
        if done:
            s[P_PROG] = now  # a completed step is progress (stall watchdog)
        elif now - _max(s[P_PROG], s[P_READY]) > self.stall_limit:
            return E_STALL
        if self.k_start_p[slot] < 0:
            self.k_start_p[slot] = now
        if self.eng.cmd_scope[cmd] == LV_BANK:
            self._bank_nodes(q, s[P_BANK], nodes)
            if cmd == C_ACT or cmd == C_RD or cmd == C_WR:
                row = <int>self._step_row(s, st)
            if cmd == C_RD or cmd == C_WR:
                col = <int>st[S_COL]
        rc = self.eng._issue(cmd, nodes, row, col, now)
        self._ordered(q, c, now)
        if done:
            s[P_ST] += 1
        return rc

    cdef int _settle(self, int c, tick_t end) noexcept nogil:
        """Idle policy "closed", once the run's end tick `end` is known: every PC of channel
        c whose refresh is due at or before `end` is refreshed on schedule (never before its
        due tick; R2 continued through the time its channel has no work left), the channel
        issuing in time order (earliest first, ties to the PC served least recently)."""
        cdef int nodes[5]
        cdef int pl, cmd, best_cmd = 0, best_pl = 0, rc
        cdef int64_t q, b, q0 = <int64_t>c * self.pcs_per_ch
        cdef tick_t e, best_e
        cdef int64_t it = 0
        nodes[0] = c
        nodes[2] = nodes[3] = nodes[4] = 0
        while True:
            best_e = T_INF
            for pl in range(self.pcs_per_ch):
                q = q0 + pl
                if self.ref_due_p[q] > end:
                    continue
                nodes[1] = <int>q
                cmd = self.eng._ref_cmd(q, &b)
                e = self.eng._align(cmd, _max(_max(self.eng._earliest(cmd, nodes),
                                                   self.pc_last_p[q]),
                                              _max(self.ref_due_p[q], self.ch_last_p[c])))
                if e < best_e or (e == best_e and self.pc_lseq_p[q] < self.pc_lseq_p[q0 + best_pl]):
                    best_e = e
                    best_cmd = cmd
                    best_pl = pl
            if best_e == T_INF:
                return E_OK
            q = q0 + best_pl
            nodes[1] = <int>q
            self._count(c, best_cmd)
            rc = self.eng._issue(best_cmd, nodes, -1, -1, best_e)
            if rc != E_OK:
                return rc
            self._ordered(q, c, best_e)
            if best_cmd == C_REFAB:
                self.eng._ref_done(q)
                self.n_refresh[q] += 1
            it += 1
            if (it & SIGNAL_MASK) == 0:
                rc = _check_signals()
                if rc != E_OK:
                    return rc

    cdef int _run_channels(self, int n_ch) noexcept nogil:
        """No barrier set spans channels: simulate the channels one after another."""
        cdef int c, cmd, pl, kind, rc = E_OK
        cdef tick_t e
        cdef int64_t it = 0
        for c in range(n_ch):
            while rc == E_OK:
                if not self._scan(c, &e, &cmd, &pl, &kind):
                    break
                rc = self._issue(c, pl, cmd, kind, e)
                it += 1
                if (it & SIGNAL_MASK) == 0 and rc == E_OK:
                    rc = _check_signals()
            if rc != E_OK:
                break
        return rc

    cdef tick_t _safe_until(self, int c) noexcept nogil:
        """Channel c may issue a command before this tick without knowing when the
        cross-channel barriers its waiting PCs wait at will release them: such a PC starts no
        earlier than ``gap`` after the latest end among the participants arrived so far."""
        cdef int pl
        cdef int64_t q, slot, bs
        cdef int64_t* s
        cdef tick_t t, until = T_INF
        for pl in range(self.pcs_per_ch):
            q = <int64_t>c * self.pcs_per_ch + pl
            s = self._s(q)
            if s[P_PH] == PH_WAIT:
                slot = s[P_SLOT]
                bs = self.slot_barrier[slot]
                if self.bar_cross[bs]:
                    t = self.bar_latest_end[bs] + self._k(slot)[K_GAP]
                    if t < until:
                        until = t
        return until

    cdef int _run_sync(self, int n_ch) noexcept nogil:
        """A barrier set spans channels. Each channel runs on as long as its next command
        provably precedes the release of every cross-channel barrier one of its PCs waits at
        (_safe_until); when no channel can, the earliest command of all channels is issued
        (always safe: no barrier still waiting for a participant can release before it). So a
        barrier is released at the tick its last participant arrives, exactly as if every
        channel advanced in one time order."""
        cdef int c, cmd, pl, kind, rc = E_OK, best_c, best_cmd = 0, best_pl = 0, best_kind = 0
        cdef tick_t e, best_e
        cdef bint progressed
        cdef int64_t it = 0
        while rc == E_OK:
            progressed = False
            for c in range(n_ch):
                while rc == E_OK:
                    if not self._scan(c, &e, &cmd, &pl, &kind) or e >= self._safe_until(c):
                        break
                    rc = self._issue(c, pl, cmd, kind, e)
                    progressed = True
                    it += 1
                    if (it & SIGNAL_MASK) == 0 and rc == E_OK:
                        rc = _check_signals()
            if rc != E_OK or progressed:
                continue
            best_c = -1
            best_e = T_INF
            for c in range(n_ch):
                if self._scan(c, &e, &cmd, &pl, &kind) and e < best_e:
                    best_e = e
                    best_c = c
                    best_cmd = cmd
                    best_pl = pl
                    best_kind = kind
            if best_c < 0:
                break  # no work anywhere: finished (or barriers that can never release)
            rc = self._issue(best_c, best_pl, best_cmd, best_kind, best_e)
            it += 1
            if (it & SIGNAL_MASK) == 0 and rc == E_OK:
                rc = _check_signals()
        return rc


def _barrier_sets(const int64_t[::1] prog_ptr, const int32_t[::1] prog_bar, int n_sets,
                  int n_pc_ch):
    """Members of each barrier set and participants of each of its instances (CSR), and
    per set whether it spans several channels."""
    n_pcs = prog_ptr.shape[0] - 1
    ptr = _np().asarray(prog_ptr)
    bar = _np().asarray(prog_bar)[:ptr[n_pcs]]  # (a program without kernels has a placeholder)
    pc_of = _np().repeat(_np().arange(n_pcs), _np().diff(ptr))
    has = bar >= 0
    cnt = _np().zeros((max(n_sets, 1), max(n_pcs, 1)), dtype=_np().int64)
    _np().add.at(cnt, (bar[has], pc_of[has]), 1)
    mem_ptr = _np().zeros(n_sets + 1, dtype=_np().int32)
    mem, need_ptr, need = [], _np().zeros(n_sets + 1, dtype=_np().int32), []
    cross = _np().zeros(max(n_sets, 1), dtype=_np().int8)
    for s in range(n_sets):
        m = _np().flatnonzero(cnt[s] > 0)
        mem.extend(m.tolist())
        mem_ptr[s + 1] = len(mem)
        cross[s] = m.size > 0 and (m // n_pc_ch).min() != (m // n_pc_ch).max()
        k = int(cnt[s].max()) if n_pcs else 0
        need.extend(int((cnt[s] > i).sum()) for i in range(k))
        need.append(0)  # one past the last instance: never reached
        need_ptr[s + 1] = len(need)
    return (mem_ptr, _np().array(mem + [0], dtype=_np().int32), need_ptr,
            _np().array(need + [0], dtype=_np().int32), cross)


def _check_pim(Engine eng, const int64_t[:, ::1] kernels, const int64_t[::1] prog_ptr,
               const int32_t[::1] prog_kern, const int32_t[::1] prog_bar, int n_sets,
               int n_sim_ch, tick_t start, outs_slot, outs_pc):
    """Refuse inputs that would make run_pim index outside its arrays or overflow ticks."""
    if eng.perbank_refresh:
        raise ValueError("run_pim: PIM programs refresh all-bank; build the engine with "
                         "refresh_perbank = 0")
    if not 1 <= n_sim_ch <= eng.cnt[0]:
        raise ValueError(f"run_pim: simulated channels must be in [1, {eng.cnt[0]}]")
    n_pcs = n_sim_ch * eng.cnt[1]
    if kernels.shape[1] != K_NFIELDS:
        raise ValueError("kernel descriptors need %d fields" % K_NFIELDS)
    ptr = _np().asarray(prog_ptr)
    n_slots = prog_kern.shape[0]
    last = int(ptr[ptr.shape[0] - 1]) if ptr.shape[0] else -1
    if ptr.shape != (n_pcs + 1,) or ptr[0] != 0 or _np().any(_np().diff(ptr) < 0) or (
            last > n_slots) or prog_bar.shape[0] != n_slots:
        raise ValueError("run_pim: prog_ptr must be a CSR pointer of one stream per "
                         "simulated pseudo-channel over prog_kern / prog_bar")
    pk = _np().asarray(prog_kern)
    if n_slots and (pk.min() < 0 or pk.max() >= kernels.shape[0]):
        raise ValueError("run_pim: prog_kern names a kernel outside the table")
    pb = _np().asarray(prog_bar)
    if n_slots and (pb.min() < -1 or pb.max() >= n_sets):
        raise ValueError("run_pim: prog_bar names a barrier set outside [0, n_sets)")
    if any(o.shape[0] < last for o in outs_slot) or any(o.shape[0] != n_pcs
                                                            for o in outs_pc):
        raise ValueError("run_pim: output arrays too short")
    if not 0 <= start <= MAX_TICK:
        raise ValueError("run_pim: start tick out of range [0, 2**61]")
    for row in _np().asarray(kernels).tolist():
        nvec, nchunk, gw, rows, macs, nres, base, gap, vpp = row
        if nvec < 1 or nchunk < 1 or min(gw, rows, macs, nres, base, gap) < 0:
            raise ValueError(f"run_pim: kernel {row}: counts must be >= 0, n_vectors and "
                             "n_chunks >= 1")
        if not 1 <= vpp <= MAX_VPP:
            raise ValueError(f"run_pim: kernel {row}: vectors_per_pass must be in "
                             f"[1, {MAX_VPP}]")
        # bundled rows: striped over the bundles; parity rows: the even chunks' in each bank
        used = _even_chunks(nchunk) * rows if eng.parity else -(-(nchunk * rows) // eng.n_bund)
        if rows and macs and base + used > eng.n_rows:
            raise ValueError(f"run_pim: kernel {row} needs rows {base}..{base + used - 1}"
                             f" of a bank with {eng.n_rows} rows")
        if gap > MAX_TICK:
            raise ValueError(f"run_pim: kernel gap {gap} ticks out of range")


def _check_modes(Engine eng, steps, seq_ptr, overhead, int64_t n_pcs):
    """Validate the mode-sequence table (sieve.dram.pimmode.mode_sequences) and the overhead
    output; None: no protocol / a scratch array."""
    if steps is None:
        steps = _np().zeros((1, S_NFIELDS), dtype=_np().int64)
        seq_ptr = _np().zeros(N_SEQ + 1, dtype=_np().int64)
    st = _np().ascontiguousarray(steps, dtype=_np().int64)
    sp = _np().ascontiguousarray(seq_ptr, dtype=_np().int64)
    if st.ndim != 2 or st.shape[1] != S_NFIELDS or st.shape[0] < 1 or sp.shape != (N_SEQ + 1,) \
            or sp[0] != 0 or _np().any(_np().diff(sp) < 0) or sp[N_SEQ] > st.shape[0]:
        raise ValueError(f"run_pim: steps must be an (n >= 1, {S_NFIELDS}) int64 table and "
                         f"seq_ptr a CSR pointer of {N_SEQ} sequences over it")
    used = st[:sp[N_SEQ]]
    if used.size:
        op, sid, bg, ba, row, col = used.T
        rw = (op == OP_RD) | (op == OP_WR)
        if (_np().any((op < OP_ACT) | (op > OP_WR)) or _np().any((sid < 0) | (sid >= eng.cnt[2]))
                or _np().any((bg < 0) | (bg >= eng.cnt[3])) or _np().any((ba < 0) | (ba >= eng.cnt[4]))
                or _np().any((op != OP_PRE) & ((row < 0) | (row >= eng.n_rows))
                          & ~(rw & (row == ROW_AFTER_W)))
                or _np().any(rw & ((col < 0) | (col >= eng.n_cols)))):
            raise ValueError("run_pim: a mode-sequence step addresses a command, bank, row or "
                             "column outside the device")
    if overhead is None:
        overhead = _np().zeros((max(n_pcs, 1), N_OV), dtype=_np().int64)
    elif not (isinstance(overhead, _np().ndarray) and overhead.dtype == _np().int64
              and overhead.shape == (n_pcs, N_OV) and overhead.flags.c_contiguous
              and overhead.flags.writeable):
        raise ValueError(f"run_pim: overhead must be a writable C-contiguous int64 array of "
                         f"shape ({n_pcs}, {N_OV})")
    return st, sp, overhead


#: Overhead spans reported per PC by run_pim (sieve.dram.pimmode.OVERHEADS).
N_OVERHEADS = N_OV


def run_pim(Engine eng, const int64_t[:, ::1] kernels, const int64_t[::1] prog_ptr,
            const int32_t[::1] prog_kern, const int32_t[::1] prog_bar, int n_sets,
            int n_sim_ch, tick_t start, int64_t[::1] k_start, int64_t[::1] k_end,
            int64_t[::1] pc_busy, int64_t[::1] pc_finish, int64_t[::1] n_refresh, *,
            int idle=IDLE_OPEN, ch_counts=None, steps=None, seq_ptr=None, overhead=None):
    """Run one in-order PIM command stream per pseudo-channel of the first ``n_sim_ch``
    channels, from tick ``start`` on, continuing from the engine's state; returns the end
    tick (the latest kernel end, at least ``start``), or -1 on an error (eng.last_status).

    The stream of PC q is the kernels prog_kern[prog_ptr[q]:prog_ptr[q+1]]. A GEMV kernel
    expands to
        for each vector: for each chunk: GWRITE x gw; for each row: [PREAB] ACTAB,
        MACAB x macs; then RDRES x n_res
    where the PREAB/ACTAB pair is issued only when the needed row is not the open one (rows
    stay open across GWRITEs, vectors, kernels and runs while they are reused).

    Timing. A PC's first kernel may start ``gap`` after ``start``, every other kernel
    ``gap`` after the end of the one before (end = last RDRES + read latency; without
    readback its last command + 1 CK; a kernel without commands ends when it may start).
    Each PC issues its next command at the earliest legal tick, never before its previous
    command; the PCs of a channel share its command buses, so the channel issues the
    earliest command of its PCs (on a tie the PC served least recently), in time order.

    Barriers. A kernel with prog_bar = s >= 0 is a barrier of set s: the n-th such kernel
    of every PC whose stream has more than n kernels of set s (the participants) starts
    ``gap`` after the latest end of the participants' kernels before it (a PC whose stream
    starts with it arrives at ``start``). Sets are independent of each other and may span
    any PCs of any channels (a channel, a group of PCs, every PC). A PC waiting at a barrier
    issues no work. Without a set spanning several channels, channels are simulated one
    after another (they share nothing); otherwise every channel runs on only while its next
    command provably precedes the release of the cross-channel barriers its PCs wait at, and
    when none can, the earliest command of all channels is issued (_run_sync): the result is
    that of advancing all channels in one time order, a barrier being released at the tick
    its last participant arrives (under IDLE_OPEN, except where a released PC pulls a refresh
    in to its channel's latest command: how far that channel ran ahead depends on the order
    the channels are advanced in; IDLE_CLOSED's R4 removes the exception). Barriers that can
    never all be reached (PCs meeting sets in different orders) stop the run with E_BARRIER.

    Refresh (all-bank; the due times are the engine's and carry across runs). R1: when a
    PC's REFab is due at or before its next command, its work yields: PREAB (if a row is
    open), REFab, and the needed row is re-activated after; the sequence may be pulled in
    ahead of the due tick, at most PULL_IN intervals. R2: a PC with nothing to do (finished,
    or at a barrier) is refreshed on schedule (not before the due tick) while its channel
    still has work. R3: a channel with no work issues nothing; refreshes that fall due then
    are issued by the next run that gives it work (at ticks before that work, after the
    channel's last command: the device refreshed while idle).

    Watchdog: a PC whose work is ready but which issues no GWRITE/MACAB/RDRES for
    8 x (nREFI + 16 x largest latency) ticks is livelocked (E_STALL). Every 2**16 commands
    the GIL is taken to run Python's signal handlers (Ctrl-C).

    Idle policy (``idle``). IDLE_OPEN (0): rows stay open after a stream ends, as above.
    IDLE_CLOSED (1): what the device does where a PC has no work changes in three ways.
    C1: a PC whose stream has ended (or is empty) closes its PIM row (PREAB, if one is open),
    a command of its stream timed like any other. R4: R1 never pulls a refresh in before
    the PC's current kernel may start (the run's start, a barrier's release, the end of a
    gap): one due before then is issued on schedule (not before its due tick), one due later
    not before then; idle time is refreshed on schedule only. R5: once the run's end tick is
    known, every PC whose refresh is due at or before it is refreshed on schedule (R2
    continued through the time its channel has no work left; R3 then defers nothing to the
    next run). With R4 a barrier's release changes nothing its channels issue before the
    released kernels may start, so the channels' commands do not depend on the order in
    which _run_sync advances them.

    Outputs: k_start / k_end (per slot) get the kernel's first command and end tick; pc_busy
    the sum of its kernels' durations; pc_finish its latest kernel end; n_refresh the REFab
    count per PC in this run; ch_counts (optional, int64 of shape (n_sim_ch, commands)) the
    commands issued per simulated channel and command id in this run.
    """
    _check_pim(eng, kernels, prog_ptr, prog_kern, prog_bar, n_sets, n_sim_ch, start,
               (k_start, k_end), (pc_busy, pc_finish, n_refresh))
    if idle != IDLE_OPEN and idle != IDLE_CLOSED:
        raise ValueError(f"run_pim: idle policy {idle} out of range [0, 1]")
    if ch_counts is None:
        ch_counts = _np().zeros((n_sim_ch, eng.n_cmd), dtype=_np().int64)
    elif not (isinstance(ch_counts, _np().ndarray) and ch_counts.dtype == _np().int64
              and ch_counts.shape == (n_sim_ch, eng.n_cmd)
              and ch_counts.flags.c_contiguous and ch_counts.flags.writeable):
        raise ValueError(f"run_pim: ch_counts must be a writable C-contiguous int64 array of "
                         f"shape ({n_sim_ch}, {eng.n_cmd})")
    cdef int n_pc_ch = eng.cnt[1]
    cdef int64_t n_pcs = <int64_t>n_sim_ch * n_pc_ch
    steps, seq_ptr, overhead = _check_modes(eng, steps, seq_ptr, overhead, n_pcs)
    if _np().any(steps[:seq_ptr[N_SEQ], S_ROW] == ROW_AFTER_W):
        for row in _np().asarray(kernels).tolist():  # the row after the weights must exist
            weights = (_even_chunks(row[K_NCHUNK]) if eng.parity else row[K_NCHUNK]) * row[K_ROWS]
            if (row[K_GW] or (row[K_ROWS] and row[K_MACS]) or row[K_NRES]) and (
                    row[K_BASE] + weights >= eng.n_rows):
                raise ValueError(f"run_pim: kernel {row}: the mode protocol writes the row "
                                 f"after its weights, beyond a bank of {eng.n_rows} rows")
    mem_ptr, mem, need_ptr, need, cross = _barrier_sets(prog_ptr, prog_bar, n_sets, n_pc_ch)
    cdef _PimRun run = _PimRun()
    run.eng = eng
    run.kernels = kernels
    run.slot_kernel = prog_kern
    run.slot_barrier = prog_bar
    run.pc_state = _np().zeros((max(n_pcs, 1), P_NFIELDS), dtype=_np().int64)
    run.k_start = k_start
    run.k_end = k_end
    run.pc_busy = pc_busy
    run.pc_finish = pc_finish
    run.n_refresh = n_refresh
    run.member_ptr = mem_ptr
    run.members = mem
    run.n_needed_ptr = need_ptr
    run.n_needed = need
    run.bar_instance = _np().zeros(max(n_sets, 1), dtype=_np().int64)
    run.bar_arrived = _np().zeros(max(n_sets, 1), dtype=_np().int64)
    run.bar_latest_end = _np().zeros(max(n_sets, 1), dtype=_np().int64)
    run.bar_cross = cross
    run.pcs_per_ch = n_pc_ch
    run.ch_counts = ch_counts
    run.idle_closed = idle == IDLE_CLOSED
    run.steps = steps
    run.seq_ptr = seq_ptr
    run.has_modes = bool(seq_ptr[N_SEQ] > 0)
    run.n_grfa_steps = int(seq_ptr[SEQ_GRFA + 1] - seq_ptr[SEQ_GRFA])
    run.grfa_par = -1
    if run.n_grfa_steps > 0:  # the bank of the register-row writes (index within the PC)
        g = steps[seq_ptr[SEQ_GRFA]]
        run.grfa_par = ((g[S_SID] * eng.cnt[3] + g[S_BG]) * eng.cnt[4] + g[S_BA]) % 2
    run.overhead = overhead
    run._bind()
    run.pull_in = PULL_IN * eng.nREFI
    run.stall_limit = 8 * (eng.nREFI + 16 * eng.max_lat)
    cdef int64_t[:, ::1] st = run.pc_state
    cdef int64_t q
    cdef int c
    cdef tick_t final = start
    cdef bint use_sync = bool(_np().any(cross))
    cdef int rc = E_OK

    eng.status = E_OK
    k_start[:] = -1
    k_end[:] = -1
    ch_counts[...] = 0
    overhead[...] = 0
    for q in range(n_pcs):
        st[q, P_SLOT] = prog_ptr[q]
        st[q, P_END] = prog_ptr[q + 1]
        st[q, P_PROG] = start
        st[q, P_OVK] = -1
        if prog_ptr[q] < prog_ptr[q + 1]:
            st[q, P_PH] = PH_START
            st[q, P_READY] = start + kernels[prog_kern[prog_ptr[q]], K_GAP]
        else:  # an empty stream: done (closing its row under IDLE_CLOSED, not before start)
            st[q, P_PH] = PH_CLOSE if run.idle_closed else PH_DONE
            st[q, P_READY] = start
    for q in range(n_pcs):  # PCs whose stream starts with a barrier arrive at the start
        if prog_ptr[q] < prog_ptr[q + 1] and prog_bar[prog_ptr[q]] >= 0:
            run._arrive(q, start)
    with nogil:
        if not use_sync:
            rc = run._run_channels(n_sim_ch)
        else:
            rc = run._run_sync(n_sim_ch)
        if rc == E_OK:
            for q in range(n_pcs):
                if st[q, P_PH] == PH_WAIT:
                    rc = E_BARRIER
                    break
        if rc == E_OK:
            for q in range(n_pcs):
                if pc_finish[q] > final:
                    final = pc_finish[q]
            if run.idle_closed:
                for c in range(n_sim_ch):
                    rc = run._settle(c, final)
                    if rc != E_OK:
                        break
        eng.status = rc
    if rc == E_INTERRUPT:
        _reraise()
    if rc != E_OK:
        return -1
    return final
