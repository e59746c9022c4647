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

cimport cython
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint32_t
from libc.stdlib cimport free, malloc, realloc
from cpython cimport array as carray

import array as _pyarray

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
    #include <stdint.h>
    /* One pass over a pseudo-channel's dense candidate list (RequestRun, _rs_look): the index
       of the candidate with the least (tick, key), where a candidate's tick is the aligned
       maximum of the ready ticks at its SID, bank-group and bank nodes and its group's
       channel/PC tick G[g] (M[g]: the group's alignment mask); *m_io, *mk_io: the least tick
       and key found (start values: nothing found). The (tick, key) pair is compared as one
       128-bit number where the compiler has one (gcc and clang on 64-bit targets): that
       compiles to a compare and conditional moves, where the same test on two 64-bit words
       took about 20 instructions per candidate; both give the same order (ticks and keys
       are non-negative). The debug build (setup.py) compiles the two-word form, so the test
       suite runs each form in one of its two builds. */
    static inline int32_t sieve_scan(const int64_t* R, const int32_t* sid, const int32_t* bg,
                                     const int32_t* bank, const int64_t* key,
                                     const int32_t* grp, const int64_t* G, const int64_t* M,
                                     int32_t n, int64_t* m_io, int64_t* mk_io) {
        int64_t m = *m_io, mk = *mk_io;
        int32_t mi = 0;
        for (int32_t i = 0; i < n; i++) {
            int g = grp[i];
            int64_t a = R[sid[i]], b = R[bg[i]], c = R[bank[i]], d = G[g];
            a = a > b ? a : b;
            c = c > d ? c : d;
            a = a > c ? a : c;
            a = (a + M[g]) & ~M[g];
    #if defined(__SIZEOF_INT128__) && !SIEVE_DEBUG_BUILD
            unsigned __int128 v = ((unsigned __int128)(uint64_t)a << 64) | (uint64_t)key[i];
            unsigned __int128 w = ((unsigned __int128)(uint64_t)m << 64) | (uint64_t)mk;
            if (v < w) { m = a; mk = key[i]; mi = i; }
    #else
            int64_t msk = -(int64_t)((a < m) | ((a == m) & (key[i] < mk)));
            m = (a & msk) | (m & ~msk);
            mk = (key[i] & msk) | (mk & ~msk);
            mi = (int32_t)((i & msk) | (mi & ~msk));
    #endif
        }
        *m_io = m;
        *mk_io = mk;
        return mi;
    }
    """
    int SIEVE_DEBUG_BUILD
    int32_t sieve_scan(const int64_t* R, const int32_t* sid, const int32_t* bg,
                       const int32_t* bank, const int64_t* key, const int32_t* grp,
                       const int64_t* G, const int64_t* M, int32_t n, int64_t* m_io,
                       int64_t* mk_io) noexcept nogil
    void SIEVE_CHECK_INDEX(int64_t i, int64_t n) noexcept nogil

#: True when built with SIEVE_CYTHON_DEBUG=1 (bounds and initialisation checks on).
DEBUG_BUILD = bool(SIEVE_DEBUG_BUILD)

cdef tick_t T_INF = (<tick_t>1) << 62

cdef extern from "Python.h":
    int PyErr_CheckSignals()

# Long loops re-acquire the GIL every SIGNAL_EVERY issued commands to run Python's signal
# handlers (Ctrl-C raises KeyboardInterrupt instead of being ignored until the run ends).
cdef int64_t SIGNAL_MASK = (1 << 16) - 1


cdef int _check_signals() noexcept nogil:
    """Run pending Python signal handlers; E_INTERRUPT if one raised (the exception is set)."""
    cdef int rc
    with gil:
        rc = PyErr_CheckSignals()
    return E_INTERRUPT if rc != 0 else E_OK


cdef int _reraise() except -1:
    """Propagate the exception a signal handler left pending (see _check_signals)."""
    return -1

# numpy is imported on first use, not with the engine: `sieve dram --trace` builds the engine,
# runs the trace and reports without it (its import is about 6 % of that command's CPU time on
# 2 M requests, docs/performance.md). The engine's own arrays are array.array buffers; the
# methods that take or return numpy arrays import it through _np().
cdef object _numpy = None


cdef object _np():
    global _numpy
    if _numpy is None:
        import numpy
        _numpy = numpy
    return _numpy


cdef carray.array _TMPL_I8 = _pyarray.array("b")
cdef carray.array _TMPL_I32 = _pyarray.array("i")
cdef carray.array _TMPL_I64 = _pyarray.array("q")
assert _TMPL_I32.itemsize == 4 and _TMPL_I64.itemsize == 8


cdef carray.array _filled(carray.array tmpl, Py_ssize_t n, int64_t value):
    """A new array.array of tmpl's type with n entries, each ``value`` (numpy's full)."""
    if n < 0:
        raise ValueError("sieve._dram: negative array size")
    cdef carray.array a = carray.clone(tmpl, n, value == 0)
    cdef Py_ssize_t i
    cdef int size = tmpl.ob_descr.itemsize
    if value != 0:
        if size == 1:
            for i in range(n):
                a.data.as_schars[i] = <signed char>value
        elif size == 4:
            for i in range(n):
                a.data.as_ints[i] = <int>value
        else:
            for i in range(n):
                a.data.as_longlongs[i] = <long long>value
    return a


cdef carray.array _as_ints(str who, str name, value, carray.array tmpl):
    """``value`` (any sequence or 1-D buffer of integers: a list, a numpy array, an
    array.array) copied into a new array.array of tmpl's type (numpy's ascontiguousarray
    with a dtype, for 1-D integer input); ValueError names the field otherwise."""
    code = tmpl.typecode
    try:
        if isinstance(value, (str, bytes)):
            raise TypeError("not a sequence of integers")
        return _pyarray.array(code, value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{who}: {name} must be a sequence of integers that fit "
                         f"{tmpl.itemsize * 8}-bit entries ({exc})") from None


# Fields of LogRec (2 x int64 + 8 x int32, no padding) as (name, numpy type) pairs; must equal
# sieve.dram.log.LOG_FIELDS (sieve.dram.engine asserts it at import). log_dtype() is its numpy
# dtype, built on first use.
LOG_FIELDS = (("tick", "<i8"), ("seq", "<i8"), ("cmd", "<i4"), ("ch", "<i4"), ("pc", "<i4"),
              ("sid", "<i4"), ("bg", "<i4"), ("bank", "<i4"), ("row", "<i4"), ("col", "<i4"))
cdef object _log_dtype = None


def log_dtype():
    """The numpy dtype of the command log's records (LOG_FIELDS)."""
    global _log_dtype
    if _log_dtype is None:
        _log_dtype = _np().dtype(list(LOG_FIELDS))
    return _log_dtype

# Columns of a PIM kernel descriptor row (see sieve.dram.GemvKernel)
cdef enum:
    K_NVEC = 0       # input vectors (tokens), in passes of K_VPP
    K_NCHUNK = 1     # global-buffer fills per vector
    K_GW = 2         # GWRITE bursts per chunk
    K_ROWS = 3       # all-bank row activations per chunk
    K_MACS = 4       # MACAB commands per activated row
    K_NRES = 5       # RDRES bursts per vector
    K_BASE = 6       # first row of the kernel's weights
    K_GAP = 7        # ticks between the previous kernel's end (or barrier) and this kernel's start
    K_VPP = 8        # vectors per pass: one MACAB applies every vector of its pass (GQA PUs)
    K_NFIELDS = 9
KERNEL_FIELDS = ("n_vectors", "n_chunks", "gw_per_chunk", "rows_per_chunk", "macs_per_row",
                 "n_res", "base_row", "gap_ticks", "vectors_per_pass")

#: Largest tick a run may reach (ticks are int64; T_INF = 2**62 marks "never").
MAX_TICK = (1 << 61)

cdef inline tick_t _max(tick_t a, tick_t b) noexcept nogil:
    return a if a > b else b


cdef inline tick_t _min(tick_t a, tick_t b) noexcept nogil:
    return a if a < b else b


_BUFFER_FIELDS = ("open_row", "ab_row", "sb_row", "pb_row", "n_open")  # per (buffer, channel, pc, unit)
_PC_COUNTERS = ("ref_due", "ref_rr", "pc_last", "pc_lseq")  # per (channel, pc)
_PC_FIELDS = _BUFFER_FIELDS + _PC_COUNTERS


def _put_channels(str name, view, value, Py_ssize_t n):
    """Write ``value`` into the first ``n`` channels of a by-channel view (shape checked)."""
    a = _np().asarray(value)
    if a.shape != view[:n].shape or (a.size and a.dtype.kind not in "iu"):
        raise ValueError(f"Engine.set_state_by_channel: {name} must be an integer array of "
                         f"shape {view[:n].shape}, got {a.dtype} {a.shape}")
    view[:n] = a


cdef class Engine:
    """DRAM/PIM device state and the single-command API; the front ends are the module
    functions run_requests (_dram_requests.pxi) and run_pim (_dram_pim.pxi). Use through
    sieve.dram.engine (the only Python module that imports this one), not directly. Every
    Python-visible method checks its arguments, so no call can index outside the engine's
    arrays."""

    def __cinit__(self):
        self.rows = NULL
        self.flat = NULL
        self.log_buf = NULL
        self.log_n = 0
        self.log_cap = 0

    def __dealloc__(self):
        if self.rows != NULL:
            free(self.rows)
            self.rows = NULL
        if self.flat != NULL:
            free(self.flat)
            self.flat = NULL
        if self.log_buf != NULL:
            free(self.log_buf)
            self.log_buf = NULL

    def __init__(self, dict arrays, int n_channels, bint log=False):
        cdef int l, key2, c
        cdef Py_ssize_t i, n_rows_c
        cdef int64_t k
        cdef int32_t nf
        counts = _as_ints("Engine", "counts", arrays["counts"], _TMPL_I64)
        if len(counts) != N_LEVELS or n_channels < 1 or any(x < 1 for x in counts[1:]):
            raise ValueError("Engine: counts must be 5 positive level sizes, n_channels >= 1")
        total = int(n_channels)
        for x in counts[1:]:
            total *= int(x)
        if total > (1 << 31) - 1:
            raise ValueError(f"Engine: {total} banks exceed the engine's int32 bank index")
        self.cnt[0] = n_channels
        for l in range(1, N_LEVELS):
            self.cnt[l] = int(counts[l])
        self.n_nodes[0] = n_channels
        for l in range(1, N_LEVELS):
            self.n_nodes[l] = self.n_nodes[l - 1] * self.cnt[l]
        self.n_cmd = int(arrays["n_cmd"])
        if self.n_cmd != N_COMMANDS:
            raise ValueError(f"Engine: the command table must have {N_COMMANDS} commands")
        self.banks_per_pc = self.cnt[2] * self.cnt[3] * self.cnt[4]
        self.banks_per_sid = self.cnt[3] * self.cnt[4]
        self.n_bund = int(arrays.get("bundles", 1))
        if self.n_bund != 1 and self.n_bund != self.cnt[2]:
            raise ValueError(f"Engine: bundles must be 1 or the SID count {self.cnt[2]}")
        self.parity = bool(arrays.get("bank_parity", 0))
        if self.parity and (self.n_bund != 1 or self.banks_per_pc % 2):
            raise ValueError("Engine: bank_parity needs bundles 1 and an even number of banks "
                             "per pseudo-channel")
        self.banks_per_ch = self.banks_per_pc * self.cnt[1]
        self.n_rows = int(arrays["rows"])
        self.n_cols = int(arrays["columns"])
        self.tpc = int(arrays["ticks_per_ck"])
        if self.n_rows < 1 or self.n_cols < 1 or self.tpc < 1:
            raise ValueError("Engine: rows, columns and ticks_per_ck must be >= 1")
        self.read_lat = int(arrays["read_latency"])
        self.write_lat = int(arrays["write_latency"])
        self.nREFI = int(arrays["nREFI"])
        self.nREFIpb = int(arrays["nREFIpb"])
        self.perbank_refresh = bool(arrays["refresh_perbank"])
        self.ref_interval = self.nREFIpb if self.perbank_refresh else self.nREFI
        if self.ref_interval < 1:
            raise ValueError("Engine: the refresh interval must be >= 1 tick")

        def vec(name, tmpl, n):
            a = _as_ints("Engine", name, arrays[name], tmpl)
            if len(a) != n:
                raise ValueError(f"Engine: {name} must have {n} entries")
            return a

        nc = self.n_cmd
        self.cmd_scope = vec("cmd_scope", _TMPL_I32, nc)
        self.cmd_kind = vec("cmd_kind", _TMPL_I32, nc)
        self.cmd_buffer = vec("cmd_buffer", _TMPL_I32, nc)
        self.cmd_align = vec("cmd_align", _TMPL_I32, nc)
        self.cmd_enabled = vec("cmd_enabled", _TMPL_I32, nc)
        for i in range(nc):
            if (not 0 <= self.cmd_scope[i] < N_LEVELS or not 0 <= self.cmd_buffer[i] <= 1
                    or self.cmd_align[i] < 1):
                raise ValueError("Engine: command scopes, buffers or alignments out of range")
        for i in range(nc):
            if self.cmd_align[i] & (self.cmd_align[i] - 1):
                raise ValueError("command alignments (ticks_per_ck) must be powers of two")
        amask = _filled(_TMPL_I64, nc, 0)
        for i in range(nc):
            amask[i] = self.cmd_align[i] - 1
        self.cmd_amask = amask
        ptr = vec("cons_ptr", _TMPL_I32, N_LEVELS * nc + 1)
        # the rows with one more entry at the end: an empty table still needs a valid buffer
        nxt = _as_ints("Engine", "cons_next", arrays["cons_next"], _TMPL_I32)
        n_rows_c = len(nxt)
        lat_a = _as_ints("Engine", "cons_lat", arrays["cons_lat"], _TMPL_I64)
        win_a = _as_ints("Engine", "cons_win", arrays["cons_win"], _TMPL_I32)
        sib_a = _as_ints("Engine", "cons_sib", arrays["cons_sib"], _TMPL_I32)
        nplain = vec("cons_nplain", _TMPL_I32, N_LEVELS * nc)
        bad = (ptr[0] != 0 or ptr[len(ptr) - 1] != n_rows_c or len(lat_a) != n_rows_c
               or len(win_a) != n_rows_c or len(sib_a) != n_rows_c)
        for i in range(N_LEVELS * nc):
            if ptr[i + 1] < ptr[i] or not 0 <= nplain[i] <= ptr[i + 1] - ptr[i]:
                bad = True
        for i in range(n_rows_c):
            if not 0 <= nxt[i] < nc or not 0 <= lat_a[i] <= MAX_TICK:
                bad = True
        if bad:
            raise ValueError("Engine: inconsistent constraint table")
        self.max_window = max(1, int(arrays["max_window"]))
        for i in range(n_rows_c):
            if not 1 <= win_a[i] <= self.max_window:
                raise ValueError("Engine: constraint windows out of range")
        self.cons_ptr = ptr
        self.cons_nplain = nplain
        nxt.append(0)
        lat_a.append(0)
        win_a.append(1)
        sib_a.append(0)
        self.cons_next = nxt
        self.cons_lat = lat_a
        self.cons_win = win_a
        self.cons_sib = sib_a
        self.max_lat = max(lat_a[:n_rows_c]) if n_rows_c else 0
        n_slots = _as_ints("Engine", "n_slots", arrays["n_slots"], _TMPL_I64)
        hs = vec("hist_slot", _TMPL_I32, N_LEVELS * nc)
        bad = len(n_slots) != N_LEVELS or any(x < 0 for x in n_slots)
        if not bad:
            for i in range(N_LEVELS * nc):
                if not -1 <= hs[i] < n_slots[i // nc]:
                    bad = True
        if bad:
            raise ValueError("Engine: inconsistent history slots")
        # every windowed row must have a history slot for its (level, preceding command)
        for i in range(N_LEVELS * nc):
            if hs[i] < 0:
                for k in range(ptr[i], ptr[i + 1]):
                    if win_a[k] > 1:
                        raise ValueError("Engine: a windowed constraint has no history slot")
        self.hist_slot = hs
        self.n_rows_total = n_rows_c
        free(self.rows)
        self.rows = <ConsRow*>malloc(max(1, self.n_rows_total) * sizeof(ConsRow))
        if self.rows == NULL:
            raise MemoryError("Engine: constraint rows")
        for k in range(self.n_rows_total):
            self.rows[k].lat = self.cons_lat[k]
            self.rows[k].nxt = self.cons_next[k]
            self.rows[k].win = <int16_t>self.cons_win[k]
            self.rows[k].sib = <int16_t>self.cons_sib[k]
        # the same rows by command for _issue: the plain rows of the levels a command folds
        # (its scope and above) in one run, and which levels need the per-level pass
        free(self.flat)
        self.flat = <FlatRow*>malloc(max(1, self.n_rows_total) * sizeof(FlatRow))
        if self.flat == NULL:
            raise MemoryError("Engine: constraint rows")
        nf = 0
        for c in range(N_COMMANDS):
            self.flat_ptr[c] = nf
            self.slow_lvls[c] = 0
            for l in range(self.cmd_scope[c] + 1):
                key2 = l * N_COMMANDS + c
                for k in range(self.cons_ptr[key2], self.cons_ptr[key2] + self.cons_nplain[key2]):
                    self.flat[nf].lat = self.cons_lat[k]
                    self.flat[nf].nxt = self.cons_next[k]
                    self.flat[nf].lvl = l
                    nf += 1
                if (self.hist_slot[key2] >= 0 or
                        self.cons_nplain[key2] < self.cons_ptr[key2 + 1] - self.cons_ptr[key2]):
                    self.slow_lvls[c] |= 1 << l
        self.flat_ptr[N_COMMANDS] = nf
        # bank-parity commands: which of them a per-bank command binds at the bank level
        # (their earliest tick is then the latest over the parity's banks; otherwise only
        # parity commands bind them there, which fold into every bank of the parity alike,
        # so the bank they are addressed through has it); their own bank rows must be plain
        # (window 1, no sibling) for the fold into the parity's other banks
        for c in range(N_COMMANDS):
            self.par_max[c] = 0
        for c in range(N_COMMANDS):
            key = LV_BANK * self.n_cmd + c
            for k in range(self.cons_ptr[key], self.cons_ptr[key + 1]):
                if c < C_ACTPB and self.cons_next[k] >= C_ACTPB:
                    self.par_max[self.cons_next[k]] = 1
                if c >= C_ACTPB and (self.cons_win[k] > 1 or self.cons_sib[k]):
                    raise ValueError("Engine: a bank-parity command's bank-level rows must "
                                     "have window 1 and no sibling")
        cdef int64_t off = 0, hoff = 0
        for l in range(N_LEVELS):
            self.n_slots[l] = int(n_slots[l])
            self.lvl_off[l] = off
            off += <int64_t>self.n_nodes[l] * self.n_cmd
            self.hist_off[l] = hoff
            hoff += <int64_t>self.n_nodes[l] * self.n_slots[l] * self.max_window
        self.ready = _filled(_TMPL_I64, off, 0)
        self.hist = _filled(_TMPL_I64, max(hoff, 1), -1)
        self.n_buffers = 2 if max(self.cmd_buffer) > 0 else 1
        self.open_row = _filled(_TMPL_I32, self.n_buffers * self.n_nodes[4], -1)
        self.ab_row = _filled(_TMPL_I32, self.n_buffers * self.n_nodes[1], -1)
        self.sb_row = _filled(_TMPL_I32, self.n_buffers * self.n_nodes[2], -1)
        self.pb_row = _filled(_TMPL_I32, self.n_buffers * self.n_nodes[1] * 2, -1)
        self.n_open = _filled(_TMPL_I32, self.n_buffers * self.n_nodes[1], 0)
        self.pim_ab_off = <int64_t>self.cmd_buffer[C_ACTAB] * self.n_nodes[1]
        self.ref_due = _filled(_TMPL_I64, self.n_nodes[1], self.ref_interval)
        self.ref_rr = _filled(_TMPL_I32, self.n_nodes[1], 0)
        self.pc_last = _filled(_TMPL_I64, self.n_nodes[1], 0)
        self.pc_lseq = _filled(_TMPL_I64, self.n_nodes[1], 0)
        self.ch_last = _filled(_TMPL_I64, self.n_nodes[0], 0)
        self.cmd_count = _filled(_TMPL_I64, self.n_cmd, 0)
        self.seq = 0
        self.status = E_OK
        self.log_on = log

    # ---------------------------------------------------------------------------------------
    # State management (Python-visible)
    # ---------------------------------------------------------------------------------------
    def reset(self):
        """Return to power-on state: all banks closed, no timing history, refresh counters at
        their reset phase (first refresh due one interval after tick 0), empty log."""
        self.ready[:] = 0
        self.hist[:] = -1
        self.open_row[:] = -1
        self.ab_row[:] = -1
        self.sb_row[:] = -1
        self.pb_row[:] = -1
        self.n_open[:] = 0
        self.ref_due[:] = self.ref_interval
        self.ref_rr[:] = 0
        self.pc_last[:] = 0
        self.pc_lseq[:] = 0
        self.ch_last[:] = 0
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

    @property
    def refresh_interval(self):
        """Ticks between two refreshes of a pseudo-channel (nREFIpb in per-bank mode)."""
        return self.ref_interval

    @property
    def max_latency(self):
        """Largest latency of the constraint table, ticks."""
        return self.max_lat

    def counts(self):
        """Issued commands per command id (a numpy int64 array, a copy)."""
        return _np().asarray(self.cmd_count).copy()

    def counts_list(self):
        """Issued commands per command id, as a list of ints (needs no numpy)."""
        return [self.cmd_count[i] for i in range(self.cmd_count.shape[0])]

    def open_rows(self, int buffer=0):
        """Open row of every bank (global bank order), -1 = closed (copy)."""
        if not 0 <= buffer < self.n_buffers:
            raise ValueError(f"row buffer {buffer} out of range [0, {self.n_buffers})")
        n = self.n_nodes[4]
        return _np().asarray(self.open_row[buffer * n:(buffer + 1) * n]).copy()

    def set_logging(self, bint on):
        self.log_on = on

    def get_log(self):
        """The command log as a numpy structured array in issue order (a copy)."""
        cdef int64_t n = self.log_n
        if n == 0:
            return _np().empty(0, dtype=log_dtype())
        raw = (<char*>self.log_buf)[:n * sizeof(LogRec)]  # bytes copy of the C buffer
        return _np().frombuffer(raw, dtype=log_dtype(), count=n).copy()

    def take_log(self):
        """The command log recorded since the last take_log (a copy); empties the buffer."""
        out = self.get_log()
        self.log_n = 0
        return out

    # Persistent state: the arrays a run starts from, in a fixed order (sieve.dram.memo
    # normalises them into exact memo keys; sieve.dram.pim_device copies channels of symmetric
    # runs).
    STATE_FIELDS = ("ready", "hist", "open_row", "ab_row", "sb_row", "pb_row", "n_open",
                    "ref_due", "ref_rr", "pc_last", "pc_lseq", "ch_last")

    def layout(self):
        """The device's sizes: per-level node counts and history slots, row buffers, commands,
        window, channels, pseudo-channels, tick and refresh units, command alignment. How the
        state arrays are laid out stays here: state_by_channel / set_state_by_channel split
        them by channel."""
        return {"n_nodes": [self.n_nodes[l] for l in range(N_LEVELS)],
                "n_slots": [self.n_slots[l] for l in range(N_LEVELS)],
                "n_cmd": self.n_cmd, "max_window": self.max_window,
                "n_buffers": self.n_buffers, "banks_per_pc": self.banks_per_pc,
                "n_channels": self.cnt[0], "pcs_per_channel": self.cnt[1],
                "ticks_per_ck": self.tpc, "refresh_interval": self.ref_interval,
                "align": int(_np().max(self.cmd_align))}

    def _arrays(self):
        return {"ready": _np().asarray(self.ready), "hist": _np().asarray(self.hist),
                "open_row": _np().asarray(self.open_row), "ab_row": _np().asarray(self.ab_row),
                "sb_row": _np().asarray(self.sb_row), "pb_row": _np().asarray(self.pb_row),
                "n_open": _np().asarray(self.n_open), "ref_due": _np().asarray(self.ref_due),
                "ref_rr": _np().asarray(self.ref_rr), "pc_last": _np().asarray(self.pc_last),
                "pc_lseq": _np().asarray(self.pc_lseq), "ch_last": _np().asarray(self.ch_last)}

    def get_state(self):
        """Copies of the persistent state arrays (STATE_FIELDS), plus the issue count."""
        d = {k: v.copy() for k, v in self._arrays().items()}
        d["seq"] = self.seq
        return d

    def set_state(self, dict state):
        """Overwrite the persistent state (every STATE_FIELDS array, same shapes) and the
        issue count; checked, so no value can make the engine index outside its arrays."""
        cur = self._arrays()
        new = {}
        for k in self.STATE_FIELDS:
            v = _np().asarray(state[k])
            if v.shape != cur[k].shape or v.dtype.kind not in "iu":
                raise ValueError(f"Engine.set_state: {k} must be an integer array of shape "
                                 f"{cur[k].shape}")
            new[k] = v.astype(cur[k].dtype, casting="unsafe")
        if _np().any((new["ref_rr"] < 0) | (new["ref_rr"] >= self.banks_per_pc)):
            raise ValueError("Engine.set_state: ref_rr out of range")
        if _np().any((new["n_open"] < 0) | (new["n_open"] > self.banks_per_pc)):
            raise ValueError("Engine.set_state: n_open out of range")
        for k in ("ready", "ref_due", "pc_last", "ch_last"):
            if _np().any(_np().abs(new[k]) > MAX_TICK):
                raise ValueError(f"Engine.set_state: {k} out of the tick range")
        seq = int(state["seq"])
        if not 0 <= seq <= MAX_TICK or _np().any((new["pc_lseq"] < 0) | (new["pc_lseq"] > seq)):
            raise ValueError("Engine.set_state: seq / pc_lseq out of range")
        for k in self.STATE_FIELDS:
            cur[k][...] = new[k]
        self.seq = seq

    def _by_channel(self, dict a):
        """Views of state arrays ``a`` (``_arrays()`` or ``get_state()``) with the channel as
        their first axis: the one place outside the loops that knows how the state is laid
        out (state_by_channel gives the shapes)."""
        cdef int l
        nch, npc = self.cnt[0], self.cnt[1]
        ready, hist = [], []
        for l in range(N_LEVELS):
            units = 1 if l == 0 else npc
            nodes = self.n_nodes[l] // nch // units
            n = nch * units * nodes * self.n_cmd
            ready.append(a["ready"][self.lvl_off[l]:self.lvl_off[l] + n].reshape(
                nch, units, nodes * self.n_cmd))
            n = nch * units * nodes * self.n_slots[l] * self.max_window
            hist.append(a["hist"][self.hist_off[l]:self.hist_off[l] + n].reshape(
                nch, units, nodes, self.n_slots[l], self.max_window))
        v = {"ready": ready, "hist": hist, "ch_last": a["ch_last"]}
        for k in _BUFFER_FIELDS:  # stored buffer-major: (buffer, channel, pc, unit)
            v[k] = a[k].reshape(self.n_buffers, nch, npc, -1).transpose(1, 2, 0, 3)
        for k in _PC_COUNTERS:
            v[k] = a[k].reshape(nch, npc)
        return v

    def state_by_channel(self, n=None):
        """Copies of the persistent state of channels ``0 .. n - 1`` (all by default), every
        array with the channel as its first axis, so that no caller needs the layout:

        * ``ready``: per level l (channel, pseudo-channel, bank group, bank, subarray/row
          level; sieve.dram.spec.LEVELS) an int64 array ``(n, u_l, nodes_l * commands)`` of the
          tick from which each node allows each command, ``u_0 = 1`` and ``u_l`` = the
          pseudo-channels per channel otherwise (a pseudo-channel's nodes contiguous);
        * ``hist``: per level ``(n, u_l, nodes_l, slots_l, window)``, the issue ticks of the
          windowed constraints' history (-1: none; ``slots_l`` may be 0);
        * ``open_row``, ``ab_row``, ``sb_row``, ``pb_row``, ``n_open``: ``(n, pcs, buffers,
          units)``, the open row of each bank / all-bank / same-bank (SID) / bank-parity unit
          per row buffer (-1 closed) and the open banks;
        * ``ref_due``, ``ref_rr``, ``pc_last``, ``pc_lseq``: ``(n, pcs)``, the next refresh's
          due tick, its bank round robin, each pseudo-channel's last issue tick and number;
        * ``ch_last``: ``(n,)``, each channel's last issue tick;
        * ``seq``: the device's issue count."""
        nch = self.cnt[0]
        n = nch if n is None else int(n)
        if not 0 <= n <= nch:
            raise ValueError(f"Engine.state_by_channel: n must be in [0, {nch}], got {n}")
        v = self._by_channel(self._arrays())
        out = {"ready": [a[:n].copy() for a in v["ready"]],
               "hist": [a[:n].copy() for a in v["hist"]], "seq": self.seq}
        for k in _PC_FIELDS + ("ch_last",):
            out[k] = v[k][:n].copy()
        return out

    def set_state_by_channel(self, dict state):
        """Overwrite channels ``0 .. n - 1`` (n: the length of ``state["ch_last"]``) and the
        issue count from a dict shaped as ``state_by_channel(n)`` returns; the other channels
        keep their state. Checked as ``set_state`` is."""
        nch = self.cnt[0]
        n = len(state["ch_last"])
        if not 0 <= n <= nch:
            raise ValueError(f"Engine.set_state_by_channel: {n} channels, the device has {nch}")
        full = self.get_state()
        v = self._by_channel(full)
        for k in ("ready", "hist"):
            if len(state[k]) != N_LEVELS:
                raise ValueError(f"Engine.set_state_by_channel: {k} must list {N_LEVELS} "
                                 f"levels")
            for l in range(N_LEVELS):
                _put_channels(k, v[k][l], state[k][l], n)
        for k in _PC_FIELDS + ("ch_last",):
            _put_channels(k, v[k], state[k], n)
        full["seq"] = state["seq"]
        self.set_state(full)

    def history_horizon(self):
        """Per level, per window-history slot: the longest latency (ticks) of a windowed
        constraint row that reads the slot. Only windowed rows read the history (the
        window-th most recent issue), so an entry ``h`` with ``h + horizon <= t`` binds no
        command at or after tick ``t``."""
        cdef int l, p, k, r
        out = []
        for l in range(N_LEVELS):
            h = _np().zeros(self.n_slots[l], dtype=_np().int64)
            for p in range(self.n_cmd):
                k = l * self.n_cmd + p
                if self.hist_slot[k] < 0:
                    continue
                for r in range(self.cons_ptr[k], self.cons_ptr[k + 1]):
                    if self.cons_win[r] > 1 and self.cons_lat[r] > h[self.hist_slot[k]]:
                        h[self.hist_slot[k]] = self.cons_lat[r]
            out.append(h)
        return out

    def select_channels(self, idx, pcs=None):
        """Channel c takes the whole state channel ``idx[c]`` had, all at once (``idx`` may
        repeat and permute channels): the gathers and scatters of symmetric runs. With
        ``pcs`` (shape (channels, pseudo-channels per channel)), pseudo-channel p of channel
        c takes the state of pseudo-channel ``pcs[c, p]`` of channel ``idx[c]`` (with its
        banks), the channel-level state coming from channel ``idx[c]``."""
        nch, npc = self.cnt[0], self.cnt[1]
        ix = _np().asarray(idx)
        if ix.shape != (nch,) or ix.dtype.kind not in "iu" or _np().any((ix < 0) | (ix >= nch)):
            raise ValueError(f"select_channels: expected {nch} channel indices in [0, {nch})")
        ix = ix.astype(_np().intp)
        if pcs is None:
            px = _np().broadcast_to(_np().arange(npc, dtype=_np().intp), (nch, npc))
        else:
            px = _np().asarray(pcs)
            if px.shape != (nch, npc) or px.dtype.kind not in "iu" or _np().any(
                    (px < 0) | (px >= npc)):
                raise ValueError(f"select_channels: pcs must be ({nch}, {npc}) pseudo-channel "
                                 f"indices in [0, {npc})")
            px = px.astype(_np().intp)
        src = (ix[:, None], px)  # (channel, pc) source of every (channel, pc)
        v = self._by_channel(self._arrays())
        for seg in v["ready"] + v["hist"]:
            seg[:] = seg[ix] if seg.shape[1] == 1 else seg[src]
        for k in _PC_FIELDS:
            v[k][:] = v[k][src]
        v["ch_last"][:] = v["ch_last"][ix]

    def broadcast_channel(self, int src=0):
        """Copy channel ``src``'s whole state to every other channel (symmetric runs)."""
        if not 0 <= src < self.cnt[0]:
            raise ValueError(f"channel {src} out of range [0, {self.cnt[0]})")
        v = self._by_channel(self._arrays())
        for seg in v["ready"] + v["hist"] + [v[k] for k in _PC_FIELDS]:
            seg[:] = seg[src]
        v["ch_last"][:] = v["ch_last"][src]

    def add_counts(self, delta, int64_t n_issued):
        """Add commands issued elsewhere (a memoised run): per-command counts and the issue
        count."""
        d = _np().asarray(delta, dtype=_np().int64)
        if d.shape != (self.n_cmd,) or _np().any(d < 0) or not 0 <= n_issued <= MAX_TICK:
            raise ValueError("Engine.add_counts: bad arguments")
        cur = _np().asarray(self.cmd_count)
        cur += d
        self.seq += n_issued

    def replicate_counts(self, counts_before, int64_t seq_before, int reps):
        """After a run simulated on one channel and broadcast to ``reps`` channels: scale the
        commands issued since (``counts_before``, ``seq_before``) by ``reps``."""
        cb = _np().asarray(counts_before, dtype=_np().int64)
        if cb.shape != (self.n_cmd,) or reps < 1 or not 0 <= seq_before <= self.seq:
            raise ValueError("Engine.replicate_counts: bad arguments")
        cur = _np().asarray(self.cmd_count)
        cur[:] = cb + (cur - cb) * reps
        self.seq = seq_before + (self.seq - seq_before) * reps

    # ---------------------------------------------------------------------------------------
    # Single-command API (probe / strict issue); addresses are (ch, pc, sid, bg, bank)
    # ---------------------------------------------------------------------------------------
    cdef int _check(self, int cmd, int ch, int pc, int sid, int bg, int ba, int* nodes) except -1:
        """Validate a command id and the address levels it uses; fill `nodes`."""
        cdef int l
        cdef int a[5]
        if not 0 <= cmd < self.n_cmd:
            raise ValueError(f"command id {cmd} out of range [0, {self.n_cmd})")
        a[0] = ch
        a[1] = pc
        a[2] = sid
        a[3] = bg
        a[4] = ba
        for l in range(N_LEVELS):
            if l > self.cmd_scope[cmd]:
                a[l] = 0  # levels below the command's scope are not addressed
            elif not 0 <= a[l] < self.cnt[l]:
                raise ValueError(f"address level {l} index {a[l]} out of range "
                                 f"[0, {self.cnt[l]})")
        if cmd >= C_ACTPB and not (a[2] == 0 and a[3] == 0 and a[4] <= 1):
            raise ValueError("ACTPB / MACPB / PREPB address bank 0 (even banks) or 1 (odd "
                             f"banks) of SID 0, bank group 0; got SID {a[2]}, bank group "
                             f"{a[3]}, bank {a[4]}")
        self._nodes(a[0], a[1], a[2], a[3], a[4], nodes)
        return 0

    def earliest(self, int cmd, int ch, int pc, int sid, int bg, int ba, bint aligned=True):
        """Earliest legal tick of `cmd` at this address by timing alone (rising edge for
        column commands unless aligned=False)."""
        cdef int nodes[5]
        self._check(cmd, ch, pc, sid, bg, ba, nodes)
        if aligned:
            return self._align(cmd, self._earliest(cmd, nodes))
        return self._earliest(cmd, nodes)

    def _debug_unchecked_earliest(self, int cmd, int ch, int pc, int sid, int bg, int ba):
        """Debug builds only: earliest() without the argument check, so a test can show that
        the bounds-checked build catches an out-of-range access inside the nogil core."""
        cdef int nodes[5]
        if not SIEVE_DEBUG_BUILD:
            raise RuntimeError("_debug_unchecked_earliest exists only in the debug build")
        if not 0 <= cmd < self.n_cmd:
            raise ValueError(f"command id {cmd} out of range [0, {self.n_cmd})")
        self._nodes(ch, pc, sid, bg, ba, nodes)
        return self._earliest(cmd, nodes)

    def state_check(self, int cmd, int ch, int pc, int sid, int bg, int ba, int row):
        """0 if the bank state allows `cmd`, else an E_* status code."""
        cdef int nodes[5]
        self._check(cmd, ch, pc, sid, bg, ba, nodes)
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
        self._check(cmd, ch, pc, sid, bg, ba, nodes)
        if not -MAX_TICK <= clk <= MAX_TICK:
            raise ValueError(f"tick {clk} out of range [-2**61, 2**61]")
        if not force:
            if clk < self._earliest(cmd, nodes):
                return E_TIMING
            if self.cmd_align[cmd] > 1 and clk % self.cmd_align[cmd] != 0:
                return E_ALIGN
            rc = self._state(cmd, nodes, row)
            if rc != E_OK:
                return rc
        rc = self._issue(cmd, nodes, row, col, clk)
        if rc == E_OK:
            self._order(nodes, clk)
        return rc

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
        cdef int64_t b, first
        for l in range(scope + 1):
            v = self.ready[self.lvl_off[l] + <int64_t>nodes[l] * self.n_cmd + cmd]
            if v > e:
                e = v
        if cmd >= C_ACTPB and self.par_max[cmd]:  # a parity command: every bank of its parity
            first = <int64_t>nodes[1] * self.banks_per_pc + nodes[4] % 2
            for b in range(first, first + self.banks_per_pc, 2):
                v = self.ready[self.lvl_off[LV_BANK] + b * self.n_cmd + cmd]
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
        cdef int64_t first
        cdef int o, b
        if not self.cmd_enabled[cmd]:
            return E_DISABLED
        if kind == K_OPEN:
            if cmd == C_ACTPB:  # every bank of the parity closed (bank index bit 0)
                first = buf * nb + <int64_t>nodes[1] * self.banks_per_pc + nodes[4] % 2
                for b in range(0, self.banks_per_pc, 2):
                    if self.open_row[first + b] != -1:
                        return E_BANK_OPEN
            elif scope == LV_BANK:
                if self.open_row[buf * nb + nodes[4]] != -1:
                    return E_BANK_OPEN
            elif scope == LV_SID:  # a bundle: every bank of the SID closed
                first = buf * nb + <int64_t>nodes[2] * self.banks_per_sid
                for b in range(self.banks_per_sid):
                    if self.open_row[first + b] != -1:
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
            if cmd == C_MACPB:
                if row < 0 or self.pb_row[(buf * npc + nodes[1]) * 2 + nodes[4] % 2] != row:
                    return E_NOT_ALL_OPEN
            elif scope == LV_SID:
                if row < 0 or self.sb_row[buf * self.n_nodes[2] + nodes[2]] != row:
                    return E_NOT_ALL_OPEN
            elif row < 0 or self.ab_row[buf * npc + nodes[1]] != row:
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
        cdef int64_t sb_base = <int64_t>self.n_nodes[2] * buf
        cdef int64_t nsid = self.cnt[2]
        cdef int64_t first, b, bank_i, s0, par
        cdef bint opens = kind == K_OPEN
        if not opens and kind != K_CLOSE and kind != K_READ_AP and kind != K_WRITE_AP:
            return
        if scope == LV_BANK and cmd < C_ACTPB:  # (the request front end's hot case first)
            bank_i = buf * nb + nodes[4]
            if opens:
                if self.open_row[bank_i] == -1:
                    self.n_open[pc_i] += 1
                self.open_row[bank_i] = row
            elif self.open_row[bank_i] != -1:
                self.open_row[bank_i] = -1
                self.n_open[pc_i] -= 1
            self.ab_row[pc_i] = -1
            self.sb_row[sb_base + nodes[4] // self.banks_per_sid] = -1
            if self.parity:
                self.pb_row[pc_i * 2 + nodes[4] % 2] = -1
        elif cmd == C_ACTPB or cmd == C_PREPB:
            # a bank parity: every other bank of the PC from bank 0 (even) or 1 (odd); the
            # PC's all-bank row holds when both parities hold the same row
            par = nodes[4] % 2
            first = buf * nb + <int64_t>nodes[1] * self.banks_per_pc + par
            for b in range(0, self.banks_per_pc, 2):
                if opens and self.open_row[first + b] == -1:
                    self.n_open[pc_i] += 1
                elif not opens and self.open_row[first + b] != -1:
                    self.n_open[pc_i] -= 1
                self.open_row[first + b] = row if opens else -1
            self.pb_row[pc_i * 2 + par] = row if opens else -1
            self.ab_row[pc_i] = -1
            if opens and self.n_open[pc_i] == self.banks_per_pc and \
                    self.pb_row[pc_i * 2 + 1 - par] == row:
                self.ab_row[pc_i] = row
            s0 = sb_base + <int64_t>nodes[1] * nsid
            for b in range(nsid):
                self.sb_row[s0 + b] = -1
        elif scope == LV_SID:
            # a PIM bundle: every bank of one SID; the PC's all-bank row holds when every SID
            # holds the same row
            first = buf * nb + <int64_t>nodes[2] * self.banks_per_sid
            for b in range(self.banks_per_sid):
                if opens and self.open_row[first + b] == -1:
                    self.n_open[pc_i] += 1
                elif not opens and self.open_row[first + b] != -1:
                    self.n_open[pc_i] -= 1
                self.open_row[first + b] = row if opens else -1
            self.sb_row[sb_base + nodes[2]] = row if opens else -1
            self.ab_row[pc_i] = -1
            if self.parity:
                self.pb_row[pc_i * 2] = -1
                self.pb_row[pc_i * 2 + 1] = -1
            if opens and self.n_open[pc_i] == self.banks_per_pc:
                s0 = sb_base + <int64_t>nodes[1] * nsid
                self.ab_row[pc_i] = row
                for b in range(nsid):
                    if self.sb_row[s0 + b] != row:
                        self.ab_row[pc_i] = -1
        else:
            first = buf * nb + <int64_t>nodes[1] * self.banks_per_pc
            for b in range(self.banks_per_pc):
                self.open_row[first + b] = row if opens else -1
            self.n_open[pc_i] = self.banks_per_pc if opens else 0
            self.ab_row[pc_i] = row if opens else -1
            s0 = sb_base + <int64_t>nodes[1] * nsid
            for b in range(nsid):
                self.sb_row[s0 + b] = row if opens else -1
            if self.parity:  # (pb_row stays -1 on a spec without parity rows)
                self.pb_row[pc_i * 2] = row if opens else -1
                self.pb_row[pc_i * 2 + 1] = row if opens else -1

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
        elif scope == LV_SID:  # a PIM bundle: its SID
            rec.sid = nodes[2] % n2
            rec.bg = -1
            rec.bank = -1
        else:
            rec.sid = -1
            rec.bg = -1
            rec.bank = -1
        rec.row = row
        rec.col = col
        self.log_n += 1
        return E_OK

    cdef inline void _fold_slow(self, int l, int64_t node, int cmd, tick_t clk) noexcept nogil:
        """Fold the rows of `cmd` issued at `clk` at node `node` of level `l` that are not
        plain (windowed, or for the siblings) into `ready`, after recording the issue in the
        level's window history; _issue folds the plain rows (max is order-free, so the
        result is that of folding the level's rows in table order)."""
        cdef int W = self.max_window
        cdef int i, slot, key
        cdef int64_t m, first, h, idx, base, nready = self.ready.shape[0]
        cdef int32_t k, k_end
        cdef tick_t t, past
        cdef int64_t* R = &self.ready[0]
        cdef const ConsRow* row_p
        base = self.lvl_off[l]
        key = l * self.n_cmd + cmd
        slot = self.hist_slot[key]
        h = -1
        if slot >= 0:
            h = self.hist_off[l] + (node * self.n_slots[l] + slot) * W
            for i in range(W - 1, 0, -1):
                self.hist[h + i] = self.hist[h + i - 1]
            self.hist[h] = clk
        k = self.cons_ptr[key] + self.cons_nplain[key]
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

    cdef int _issue(self, int cmd, const int* nodes, int row, int col, tick_t clk) noexcept nogil:
        """Record `cmd` at `clk`: fold its constraint rows into `ready`, update bank state."""
        cdef int scope = self.cmd_scope[cmd]
        cdef int l, key, slow
        cdef int32_t k, k0, k1
        cdef int64_t b, first, base, idx, nready = self.ready.shape[0]
        cdef int64_t* R = &self.ready[0]
        cdef int64_t nb[N_LEVELS]
        cdef const FlatRow* fr
        for l in range(scope + 1):
            nb[l] = self.lvl_off[l] + <int64_t>nodes[l] * N_COMMANDS
        # the plain rows of every level: ready = max(ready, clk + lat), no branches
        k = self.flat_ptr[cmd]
        k1 = self.flat_ptr[cmd + 1]
        while k < k1:
            SIEVE_CHECK_INDEX(k, self.n_rows_total)
            fr = &self.flat[k]
            idx = nb[fr.lvl] + fr.nxt
            SIEVE_CHECK_INDEX(idx, nready)
            R[idx] = _max(R[idx], clk + fr.lat)
            k += 1
        # the levels with a window history or windowed / sibling rows
        slow = self.slow_lvls[cmd]
        if slow:
            for l in range(scope + 1):
                if slow & (1 << l):
                    self._fold_slow(l, nodes[l], cmd, clk)
        if cmd >= C_ACTPB:
            # a parity command: its bank-level rows (plain: checked at construction) hold at
            # every bank of its parity
            key = LV_BANK * self.n_cmd + cmd
            k0 = self.cons_ptr[key]
            k1 = self.cons_ptr[key + 1]
            if k1 > k0:
                first = <int64_t>nodes[1] * self.banks_per_pc + nodes[4] % 2
                for b in range(first, first + self.banks_per_pc, 2):
                    if b == nodes[4]:
                        continue
                    base = self.lvl_off[LV_BANK] + b * self.n_cmd
                    for k in range(k0, k1):
                        SIEVE_CHECK_INDEX(k, self.n_rows_total)
                        idx = base + self.rows[k].nxt
                        SIEVE_CHECK_INDEX(idx, nready)
                        R[idx] = _max(R[idx], clk + self.rows[k].lat)
        self._apply_state(cmd, nodes, row)
        self.cmd_count[cmd] += 1
        if self.log_on:
            if self._log(cmd, nodes, row, col, clk) != E_OK:
                return E_NOMEM
        self.seq += 1
        return E_OK

    cdef inline void _order(self, const int* nodes, tick_t clk) noexcept nogil:
        """Record the issue order state of a command just issued (the PIM front end and the
        single-command API keep it; the request front end does not need it)."""
        self.pc_last[nodes[1]] = clk
        self.pc_lseq[nodes[1]] = self.seq
        if clk > self.ch_last[nodes[0]]:
            self.ch_last[nodes[0]] = clk

    # ---------------------------------------------------------------------------------------
    # Refresh manager (both front ends): when a PC's refresh is due, its rows are closed and
    # it is refreshed; the due times live here, so they carry from one run to the next.
    # ---------------------------------------------------------------------------------------
    cdef int _ref_cmd(self, int64_t q, int64_t* bank) noexcept nogil:
        """Next command of PC q's due refresh, from the bank state: close what is open (PREAB
        for a row opened by ACTAB in every bank, PREA / PRE for rows opened by ACT), then
        REFab (all-bank mode) or REFpb of the round-robin bank (per-bank mode). `bank` gets
        the global bank the command addresses (the PC's first bank for PC-scope commands)."""
        cdef int64_t npc = self.n_nodes[1]
        cdef int64_t nb = self.n_nodes[4]
        cdef int64_t b
        if self.perbank_refresh:
            b = q * self.banks_per_pc + self.ref_rr[q]
            bank[0] = b
            if self.open_row[b] != -1:
                return C_PRE
            if self.n_buffers > 1 and self.open_row[nb + b] != -1:
                return C_PREAB
            return C_REFPB
        bank[0] = q * self.banks_per_pc
        if self.n_open[q] > 0:
            return C_PREAB if (self.ab_row[q] >= 0 and self.cmd_enabled[C_PREAB]) else C_PREA
        if self.n_buffers > 1 and self.n_open[npc + q] > 0:
            return C_PREAB
        return C_REFAB

    cdef void _ref_done(self, int64_t q) noexcept nogil:
        """PC q's refresh was issued: the next one is due one interval later."""
        self.ref_due[q] += self.ref_interval
        if self.perbank_refresh:
            self.ref_rr[q] = (self.ref_rr[q] + 1) % self.banks_per_pc


include "_dram_requests.pxi"
include "_dram_pim.pxi"
