# The cycle-accurate DRAM/PIM command engine (declarations and field docs in _dram.pxd).
#
# Model (Ramulator-style, see sieve/dram/constraints.py for the constraint semantics):
#   * ready[level, node, cmd] is the earliest tick at which `cmd` may issue at that node; a
#     command is legal at tick t when t >= ready at every node on its address path (levels
#     0..scope) and, for a column command, t is a rising clock edge.
#   * Issuing `p` at tick t folds every constraint row (level, p -> f, latency, window,
#     sibling) into ready with a max; windowed rows (tFAW) use the window-th most recent issue
#     of p at that node, kept in a small history.
#   * Bank state: one open row per bank and row buffer (two buffers with dual row buffers).
#
# Both front ends are event-driven: they compute the earliest legal tick of every candidate
# command and jump there, so idle ticks cost nothing.

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t
from libc.stdlib cimport free, malloc, realloc

import numpy as np

cdef extern from *:
    """
    #include <stdio.h>
    #include <stdlib.h>
    #ifndef SIEVE_DEBUG_BUILD
    #define SIEVE_DEBUG_BUILD 0
    #endif
    /* Raw-pointer accesses in the hot loops are checked here in debug builds (memoryview
       accesses are checked by Cython's boundscheck). */
    #if SIEVE_DEBUG_BUILD
    #define SIEVE_CHECK_INDEX(i, n) do { if ((i) < 0 || (i) >= (n)) { \
        fprintf(stderr, "sieve._dram: index %lld out of range [0, %lld) (%s:%d)\\n", \
                (long long)(i), (long long)(n), __FILE__, __LINE__); abort(); } } while (0)
    #else
    #define SIEVE_CHECK_INDEX(i, n) ((void)(i), (void)(n))
    #endif
    """
    int SIEVE_DEBUG_BUILD
    void SIEVE_CHECK_INDEX(int64_t i, int64_t n) noexcept nogil

#: True when built with SIEVE_CYTHON_DEBUG=1 (bounds and initialisation checks on).
DEBUG_BUILD = bool(SIEVE_DEBUG_BUILD)

cdef tick_t T_INF = (<tick_t>1) << 62

# Numpy view of LogRec (2 x int64 + 8 x int32, no padding); must equal sieve.dram.log.LOG_DTYPE
# (sieve.dram.device asserts it at import).
LOG_DTYPE = np.dtype([("tick", np.int64), ("seq", np.int64), ("cmd", np.int32),
                          ("ch", np.int32), ("pc", np.int32), ("sid", np.int32),
                          ("bg", np.int32), ("bank", np.int32), ("row", np.int32),
                          ("col", np.int32)])

# Columns of a PIM kernel descriptor row (see sieve.dram.GemvKernel)
cdef enum:
    K_NVEC = 0       # input vectors (tokens), serialized
    K_NCHUNK = 1     # global-buffer fills per vector
    K_GW = 2         # GWRITE bursts per chunk
    K_ROWS = 3       # all-bank row activations per chunk
    K_MACS = 4       # MACAB commands per activated row
    K_NRES = 5       # RDRES bursts per vector
    K_BASE = 6       # first row of the kernel's weights
    K_GAP = 7        # ticks between the previous kernel's last result and this kernel's start
    K_SYNC = 8       # 1: channel barrier before the kernel (see run_pim)
    K_NFIELDS = 9
KERNEL_FIELDS = ("n_vectors", "n_chunks", "gw_per_chunk", "rows_per_chunk", "macs_per_row",
                 "n_res", "base_row", "gap_ticks", "sync")

# Per-PC stream state columns (run_pim)
cdef enum:
    P_SLOT = 0       # current kernel slot in prog_kern
    P_END = 1        # one past the PC's last slot
    P_PH = 2         # phase (PH_*)
    P_V = 3          # vector
    P_K = 4          # chunk
    P_R = 5          # row within the chunk
    P_CNT = 6        # GWRITE / MACAB / RDRES issued in the current group
    P_OPEN = 7       # open PIM row, -1 none
    P_LAST = 8       # tick of the PC's previous command (in-order issue)
    P_READY = 9      # earliest start of the current kernel
    P_NREF = 10      # next REFab due tick
    P_REF = 11       # refresh sequence: 0 none, 1 PREAB next, 2 REFab next
    P_LSEQ = 12      # engine issue count at the PC's previous command (bus arbitration)
    P_NSYNC = 13     # sync kernels in the PC's stream
    P_SYNCN = 14     # sync barriers the PC has passed
    P_WEND = 15      # tick the PC reached its current barrier (end of its previous kernel)
    P_NFIELDS = 16

cdef enum:
    PH_GW = 0
    PH_ROW = 1
    PH_RES = 2
    PH_DONE = 3
    PH_WAIT = 4      # at a sync barrier, waiting for the channel's other PCs


cdef inline tick_t _max(tick_t a, tick_t b) noexcept nogil:
    return a if a > b else b


cdef class Engine:
    """DRAM/PIM device state and the single-command API; the front ends are the module
    functions run_requests (_dram_requests.pxi) and run_pim (_dram_pim.pxi). Use through
    sieve.dram, not directly."""

    def __cinit__(self):
        self.rows = NULL
        self.log_buf = NULL
        self.log_n = 0
        self.log_cap = 0

    def __dealloc__(self):
        if self.rows != NULL:
            free(self.rows)
            self.rows = NULL
        if self.log_buf != NULL:
            free(self.log_buf)
            self.log_buf = NULL

    def __init__(self, dict arrays, int n_channels, bint log=False):
        cdef int l
        counts = arrays["counts"]
        self.cnt[0] = n_channels
        for l in range(1, N_LEVELS):
            self.cnt[l] = int(counts[l])
        self.n_nodes[0] = n_channels
        for l in range(1, N_LEVELS):
            self.n_nodes[l] = self.n_nodes[l - 1] * self.cnt[l]
        self.n_cmd = int(arrays["n_cmd"])
        self.banks_per_pc = self.cnt[2] * self.cnt[3] * self.cnt[4]
        self.banks_per_ch = self.banks_per_pc * self.cnt[1]
        self.n_rows = int(arrays["rows"])
        self.n_cols = int(arrays["columns"])
        self.tpc = int(arrays["ticks_per_ck"])
        self.read_lat = int(arrays["read_latency"])
        self.write_lat = int(arrays["write_latency"])
        self.nREFI = int(arrays["nREFI"])
        self.nREFIpb = int(arrays["nREFIpb"])
        self.perbank_refresh = bool(arrays["refresh_perbank"])
        self.cmd_scope = np.ascontiguousarray(arrays["cmd_scope"], dtype=np.int32)
        self.cmd_kind = np.ascontiguousarray(arrays["cmd_kind"], dtype=np.int32)
        self.cmd_buffer = np.ascontiguousarray(arrays["cmd_buffer"], dtype=np.int32)
        self.cmd_align = np.ascontiguousarray(arrays["cmd_align"], dtype=np.int32)
        if np.any(np.asarray(self.cmd_align) & (np.asarray(self.cmd_align) - 1)):
            raise ValueError("command alignments (ticks_per_ck) must be powers of two")
        self.cmd_amask = np.asarray(self.cmd_align, dtype=np.int64) - 1
        self.cmd_enabled = np.ascontiguousarray(arrays["cmd_enabled"], dtype=np.int32)
        self.cons_ptr = np.ascontiguousarray(arrays["cons_ptr"], dtype=np.int32)
        self.cons_nplain = np.ascontiguousarray(arrays["cons_nplain"], dtype=np.int32)
        # an empty table still needs a valid buffer
        self.cons_next = np.ascontiguousarray(np.append(arrays["cons_next"], 0), dtype=np.int32)
        self.cons_lat = np.ascontiguousarray(np.append(arrays["cons_lat"], 0), dtype=np.int64)
        self.cons_win = np.ascontiguousarray(np.append(arrays["cons_win"], 1), dtype=np.int32)
        self.cons_sib = np.ascontiguousarray(np.append(arrays["cons_sib"], 0), dtype=np.int32)
        self.hist_slot = np.ascontiguousarray(arrays["hist_slot"], dtype=np.int32)
        cdef int64_t k
        self.n_rows_total = len(arrays["cons_next"])
        self.rows = <ConsRow*>malloc(max(1, self.n_rows_total) * sizeof(ConsRow))
        if self.rows == NULL:
            raise MemoryError("Engine: constraint rows")
        for k in range(self.n_rows_total):
            self.rows[k].lat = self.cons_lat[k]
            self.rows[k].nxt = self.cons_next[k]
            self.rows[k].win = <int16_t>self.cons_win[k]
            self.rows[k].sib = <int16_t>self.cons_sib[k]
        self.max_window = max(1, int(arrays["max_window"]))
        n_slots = arrays["n_slots"]
        cdef int64_t off = 0, hoff = 0
        for l in range(N_LEVELS):
            self.n_slots[l] = int(n_slots[l])
            self.lvl_off[l] = off
            off += <int64_t>self.n_nodes[l] * self.n_cmd
            self.hist_off[l] = hoff
            hoff += <int64_t>self.n_nodes[l] * self.n_slots[l] * self.max_window
        self.ready = np.zeros(off, dtype=np.int64)
        self.hist = np.full(max(hoff, 1), -1, dtype=np.int64)
        self.n_buffers = 2 if int(np.max(self.cmd_buffer)) > 0 else 1
        self.open_row = np.full(self.n_buffers * self.n_nodes[4], -1, dtype=np.int32)
        self.ab_row = np.full(self.n_buffers * self.n_nodes[1], -1, dtype=np.int32)
        self.n_open = np.zeros(self.n_buffers * self.n_nodes[1], dtype=np.int32)
        self.cmd_count = np.zeros(self.n_cmd, dtype=np.int64)
        self.seq = 0
        self.status = E_OK
        self.log_on = log

    # ---------------------------------------------------------------------------------------
    # State management (Python-visible)
    # ---------------------------------------------------------------------------------------
    def reset(self):
        """Return to power-on state: all banks closed, no timing history, empty log."""
        self.ready[:] = 0
        self.hist[:] = -1
        self.open_row[:] = -1
        self.ab_row[:] = -1
        self.n_open[:] = 0
        self.cmd_count[:] = 0
        self.seq = 0
        self.log_n = 0
        self.status = E_OK

    @property
    def n_channels(self):
        return self.cnt[0]

    @property
    def n_issued(self):
        return self.seq

    @property
    def last_status(self):
        """E_* status of the last front-end run (0 = completed)."""
        return self.status

    def counts(self):
        """Issued commands per command id (copy)."""
        return np.asarray(self.cmd_count).copy()

    def open_rows(self, int buffer=0):
        """Open row of every bank (global bank order), -1 = closed (copy)."""
        n = self.n_nodes[4]
        return np.asarray(self.open_row[buffer * n:(buffer + 1) * n]).copy()

    def set_logging(self, bint on):
        self.log_on = on

    def get_log(self):
        """The command log as a numpy structured array in issue order (a copy)."""
        cdef int64_t n = self.log_n
        if n == 0:
            return np.empty(0, dtype=LOG_DTYPE)
        raw = (<char*>self.log_buf)[:n * sizeof(LogRec)]  # bytes copy of the C buffer
        return np.frombuffer(raw, dtype=LOG_DTYPE, count=n).copy()

    # ---------------------------------------------------------------------------------------
    # Single-command API (probe / strict issue); addresses are (ch, pc, sid, bg, bank)
    # ---------------------------------------------------------------------------------------
    def earliest(self, int cmd, int ch, int pc, int sid, int bg, int ba, bint aligned=True):
        """Earliest legal tick of `cmd` at this address by timing alone (rising edge for
        column commands unless aligned=False)."""
        cdef int nodes[5]
        self._nodes(ch, pc, sid, bg, ba, nodes)
        if aligned:
            return self._align(cmd, self._earliest(cmd, nodes))
        return self._earliest(cmd, nodes)

    def state_check(self, int cmd, int ch, int pc, int sid, int bg, int ba, int row):
        """0 if the bank state allows `cmd`, else an E_* status code."""
        cdef int nodes[5]
        self._nodes(ch, pc, sid, bg, ba, nodes)
        return self._state(cmd, nodes, row)

    def issue(self, int cmd, int ch, int pc, int sid, int bg, int ba, int row, int col,
              tick_t clk, bint force=False):
        """Issue one command at tick `clk`.

        Returns 0, or an E_* code without changing any state when the command is illegal
        (too early, misaligned, wrong bank state). ``force=True`` skips the checks; it exists
        only so tests can build logs with deliberate violations for the checker.
        """
        cdef int nodes[5]
        cdef int rc
        self._nodes(ch, pc, sid, bg, ba, nodes)
        if not force:
            if clk < self._earliest(cmd, nodes):
                return E_TIMING
            if self.cmd_align[cmd] > 1 and clk % self.cmd_align[cmd] != 0:
                return E_ALIGN
            rc = self._state(cmd, nodes, row)
            if rc != E_OK:
                return rc
        return self._issue(cmd, nodes, row, col, clk)

    # ---------------------------------------------------------------------------------------
    # Core (nogil)
    # ---------------------------------------------------------------------------------------
    cdef inline void _nodes(self, int ch, int pc, int sid, int bg, int ba, int* nodes) noexcept nogil:
        nodes[0] = ch
        nodes[1] = ch * self.cnt[1] + pc
        nodes[2] = nodes[1] * self.cnt[2] + sid
        nodes[3] = nodes[2] * self.cnt[3] + bg
        nodes[4] = nodes[3] * self.cnt[4] + ba

    cdef inline tick_t _earliest(self, int cmd, const int* nodes) noexcept nogil:
        cdef int l
        cdef int scope = self.cmd_scope[cmd]
        cdef tick_t e = 0, v
        for l in range(scope + 1):
            v = self.ready[self.lvl_off[l] + <int64_t>nodes[l] * self.n_cmd + cmd]
            if v > e:
                e = v
        return e

    cdef inline tick_t _align(self, int cmd, tick_t t) noexcept nogil:
        cdef tick_t m = self.cmd_amask[cmd]
        return (t + m) & ~m

    cdef inline int _state(self, int cmd, const int* nodes, int row) noexcept nogil:
        cdef int kind = self.cmd_kind[cmd]
        cdef int buf = self.cmd_buffer[cmd]
        cdef int scope = self.cmd_scope[cmd]
        cdef int64_t nb = self.n_nodes[4]
        cdef int64_t npc = self.n_nodes[1]
        cdef int o, b
        if not self.cmd_enabled[cmd]:
            return E_DISABLED
        if kind == K_OPEN:
            if scope == LV_BANK:
                if self.open_row[buf * nb + nodes[4]] != -1:
                    return E_BANK_OPEN
            elif self.n_open[buf * npc + nodes[1]] != 0:
                return E_BANK_OPEN
        elif kind == K_READ or kind == K_WRITE or kind == K_READ_AP or kind == K_WRITE_AP:
            o = self.open_row[buf * nb + nodes[4]]
            if o == -1:
                return E_BANK_CLOSED
            if o != row:
                return E_ROW_MISS
        elif kind == K_MAC:
            if row < 0 or self.ab_row[buf * npc + nodes[1]] != row:
                return E_NOT_ALL_OPEN
        elif kind == K_REFRESH:
            for b in range(self.n_buffers):
                if scope == LV_BANK:
                    if self.open_row[b * nb + nodes[4]] != -1:
                        return E_REFRESH_OPEN
                elif self.n_open[b * npc + nodes[1]] != 0:
                    return E_REFRESH_OPEN
        return E_OK

    cdef void _apply_state(self, int cmd, const int* nodes, int row) noexcept nogil:
        cdef int kind = self.cmd_kind[cmd]
        cdef int buf = self.cmd_buffer[cmd]
        cdef int scope = self.cmd_scope[cmd]
        cdef int64_t nb = self.n_nodes[4]
        cdef int64_t pc_i = <int64_t>self.n_nodes[1] * buf + nodes[1]
        cdef int64_t first, b, bank_i
        if kind == K_OPEN:
            if scope == LV_BANK:
                bank_i = buf * nb + nodes[4]
                if self.open_row[bank_i] == -1:
                    self.n_open[pc_i] += 1
                self.open_row[bank_i] = row
                self.ab_row[pc_i] = -1
            else:
                first = buf * nb + <int64_t>nodes[1] * self.banks_per_pc
                for b in range(self.banks_per_pc):
                    self.open_row[first + b] = row
                self.n_open[pc_i] = self.banks_per_pc
                self.ab_row[pc_i] = row
        elif kind == K_CLOSE or kind == K_READ_AP or kind == K_WRITE_AP:
            if scope == LV_BANK:
                bank_i = buf * nb + nodes[4]
                if self.open_row[bank_i] != -1:
                    self.open_row[bank_i] = -1
                    self.n_open[pc_i] -= 1
                self.ab_row[pc_i] = -1
            else:
                first = buf * nb + <int64_t>nodes[1] * self.banks_per_pc
                for b in range(self.banks_per_pc):
                    self.open_row[first + b] = -1
                self.n_open[pc_i] = 0
                self.ab_row[pc_i] = -1

    cdef int _log(self, int cmd, const int* nodes, int row, int col, tick_t clk) noexcept nogil:
        cdef int64_t cap
        cdef LogRec* buf
        cdef LogRec* rec
        cdef int scope = self.cmd_scope[cmd]
        cdef int n1 = self.cnt[1], n2 = self.cnt[2], n3 = self.cnt[3], n4 = self.cnt[4]
        if self.log_n == self.log_cap:
            cap = self.log_cap * 2 if self.log_cap else 65536
            buf = <LogRec*>realloc(self.log_buf, cap * sizeof(LogRec))
            if buf == NULL:
                return E_NOMEM
            self.log_buf = buf
            self.log_cap = cap
        rec = &self.log_buf[self.log_n]
        rec.tick = clk
        rec.seq = self.seq
        rec.cmd = cmd
        rec.ch = nodes[0]
        rec.pc = nodes[1] % n1
        if scope >= LV_BANK:
            rec.sid = nodes[2] % n2
            rec.bg = nodes[3] % n3
            rec.bank = nodes[4] % n4
        else:
            rec.sid = -1
            rec.bg = -1
            rec.bank = -1
        rec.row = row
        rec.col = col
        self.log_n += 1
        return E_OK

    cdef int _issue(self, int cmd, const int* nodes, int row, int col, tick_t clk) noexcept nogil:
        """Record `cmd` at `clk`: fold its constraint rows into `ready`, update bank state."""
        cdef int scope = self.cmd_scope[cmd]
        cdef int W = self.max_window
        cdef int l, i, slot, key
        cdef int64_t node, m, first, h, idx, base, nready = self.ready.shape[0]
        cdef int32_t k, k_end
        cdef tick_t t, past
        cdef int64_t* R = &self.ready[0]
        cdef const ConsRow* row_p
        for l in range(scope + 1):
            node = nodes[l]
            base = self.lvl_off[l]
            key = l * self.n_cmd + cmd
            slot = self.hist_slot[key]
            h = -1
            if slot >= 0:
                h = self.hist_off[l] + (node * self.n_slots[l] + slot) * W
                for i in range(W - 1, 0, -1):
                    self.hist[h + i] = self.hist[h + i - 1]
                self.hist[h] = clk
            k = self.cons_ptr[key]
            k_end = k + self.cons_nplain[key]
            # plain rows: ready = max(ready, clk + lat), no branches
            while k < k_end:
                SIEVE_CHECK_INDEX(k, self.n_rows_total)
                row_p = &self.rows[k]
                idx = base + node * self.n_cmd + row_p.nxt
                SIEVE_CHECK_INDEX(idx, nready)
                R[idx] = _max(R[idx], clk + row_p.lat)
                k += 1
            k_end = self.cons_ptr[key + 1]
            while k < k_end:
                SIEVE_CHECK_INDEX(k, self.n_rows_total)
                row_p = &self.rows[k]
                k += 1
                if row_p.sib:
                    first = (node // self.cnt[l]) * self.cnt[l]
                    t = clk + row_p.lat
                    for m in range(first, first + self.cnt[l]):
                        if m != node:
                            idx = base + m * self.n_cmd + row_p.nxt
                            SIEVE_CHECK_INDEX(idx, nready)
                            if R[idx] < t:
                                R[idx] = t
                else:
                    if row_p.win <= 1:
                        t = clk + row_p.lat
                    else:
                        past = self.hist[h + row_p.win - 1]
                        if past < 0:
                            continue
                        t = past + row_p.lat
                    idx = base + node * self.n_cmd + row_p.nxt
                    SIEVE_CHECK_INDEX(idx, nready)
                    if R[idx] < t:
                        R[idx] = t
        self._apply_state(cmd, nodes, row)
        self.cmd_count[cmd] += 1
        if self.log_on:
            if self._log(cmd, nodes, row, col, clk) != E_OK:
                return E_NOMEM
        self.seq += 1
        return E_OK


include "_dram_requests.pxi"
include "_dram_pim.pxi"
