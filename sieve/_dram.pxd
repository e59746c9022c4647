# Typed contract of the cycle-accurate DRAM/PIM command engine (bodies in _dram.pyx).
#
# The engine never sees a Python object in its cycle loops: specs arrive as flat int arrays
# (sieve.dram.spec.DramSpec.to_arrays), requests and PIM programs as int arrays, and everything
# runs nogil over typed memoryviews. Only sieve/dram.py imports this module.
#
# Time is counted in ticks (ticks_per_ck per memory clock). The engine owns no clock: every
# check/issue takes the tick as an argument, and the front ends jump from one legal issue tick
# to the next (event-driven; idle ticks are never visited).

cimport cython
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t

ctypedef int64_t tick_t

# Levels of the hierarchy (sieve.dram.commands.LEVELS)
cdef enum:
    LV_CH = 0
    LV_PC = 1
    LV_SID = 2
    LV_BG = 3
    LV_BANK = 4
    N_LEVELS = 5

# Command kinds (sieve.dram.spec.KIND_*): the effect of a command on bank state
cdef enum:
    K_NONE = 0
    K_OPEN = 1
    K_CLOSE = 2
    K_READ = 3
    K_WRITE = 4
    K_READ_AP = 5
    K_WRITE_AP = 6
    K_REFRESH = 7
    K_MAC = 8

# Command ids (index into sieve.dram.commands.COMMANDS; dram.py asserts the order at import)
cdef enum:
    C_ACT = 0
    C_PRE = 1
    C_PREA = 2
    C_RD = 3
    C_WR = 4
    C_RDA = 5
    C_WRA = 6
    C_REFAB = 7
    C_REFPB = 8
    C_ACTAB = 9
    C_MACAB = 10
    C_PREAB = 11
    C_GWRITE = 12
    C_RDRES = 13
    C_ACTSB = 14
    C_MACSB = 15
    C_PRESB = 16
    N_COMMANDS = 17

# Status codes of a state check (0 = legal)
cdef enum:
    E_OK = 0
    E_TIMING = 1          # issued before the earliest legal tick
    E_BANK_OPEN = 2       # ACT/ACTAB/ACTSB to a bank that has an open row
    E_BANK_CLOSED = 3     # column command to a closed bank
    E_ROW_MISS = 4        # column command to a row that is not the open one
    E_NOT_ALL_OPEN = 5    # MACAB / MACSB without the row open in every bank it reads
    E_REFRESH_OPEN = 6    # refresh with a row open
    E_DISABLED = 7        # command not part of this spec (PIM command on plain DRAM)
    E_ALIGN = 8           # column command off a rising clock edge
    E_NOMEM = 9           # log buffer allocation failed
    E_STALL = 10          # a front end made no progress (a livelock: see the front ends)
    E_BARRIER = 11        # PIM barriers that can never all be reached (inconsistent order)
    E_INTERRUPT = 12      # SIGINT (or another signal handler) raised during a run

cdef struct ConsRow:
    # one compiled timing row (see sieve.dram.constraints.ResolvedConstraint)
    int64_t lat           # latency, ticks
    int32_t nxt           # following command
    int16_t win           # window (1 = most recent issue)
    int16_t sib           # 1: applies to the sibling nodes only

cdef struct BankSt:
    # per-bank scheduling state of the request front end (one cache line)
    int64_t base[5]       # offsets in `ready` of the bank's nodes at levels 0..4
    int32_t node[5]       # the bank's node index at levels 0..4
    int64_t ae            # cached earliest tick of `cmd` below the channel level, edge-aligned
    int64_t ep            # PC epoch at which `ae` was computed (-1 = stale)
    int32_t cmd           # candidate command for the bank, -1 = none
    int32_t req           # request the candidate serves
    int32_t pcq           # global pseudo-channel index
    int8_t valid          # candidate (cmd, req) is current
    int8_t hit            # candidate is a row hit (column command)
    int8_t grp            # candidate group: 0 ACT, 1 PRE, 2 column command

cdef struct LogRec:
    int64_t tick          # issue tick (first tick of the command)
    int64_t seq           # global issue order
    int32_t cmd           # command id
    int32_t ch            # channel (simulated index)
    int32_t pc            # pseudo-channel within the channel
    int32_t sid           # -1 for pseudo-channel-scope commands
    int32_t bg            # -1 for pseudo-channel-scope commands
    int32_t bank          # -1 for pseudo-channel-scope commands
    int32_t row           # -1 when the command has no row
    int32_t col           # -1 when the command has no column

@cython.final
cdef class Engine:
    # ---- organisation (counts per parent) ----
    cdef int cnt[5]                     # children per parent at each level; cnt[0] = channels
    cdef int n_nodes[5]                 # nodes at each level (over all simulated channels)
    cdef int64_t lvl_off[5]             # offset of each level in `ready`
    cdef int64_t hist_off[5]            # offset of each level in `hist`
    cdef int n_slots[5]                 # windowed history slots per node at each level
    cdef int n_cmd                      # commands in the command table
    cdef int max_window                 # longest window (4 for tFAW)
    cdef int n_buffers                  # row buffers per bank (2 with dual row buffers)
    cdef int banks_per_pc               # banks of one pseudo-channel
    cdef int banks_per_sid              # banks of one SID (a PIM bank bundle)
    cdef int n_bund                     # PIM bank bundles (pim.bundles): 1 = all-bank rows,
                                        # else one per SID (ACTSB / MACSB / PRESB)
    cdef int banks_per_ch               # banks of one channel
    cdef int n_rows                     # rows per bank
    cdef int n_cols                     # burst columns per row
    cdef int tpc                        # ticks per CK
    cdef tick_t read_lat                # (nCL + nBL) in ticks: RD issue -> last data beat
    cdef tick_t write_lat               # (nCWL + nBL) in ticks
    cdef tick_t nREFI                   # all-bank refresh interval, ticks
    cdef tick_t nREFIpb                 # per-bank refresh interval, ticks
    cdef bint perbank_refresh           # 1: REFpb round robin, 0: REFab per PC
    cdef tick_t ref_interval            # nREFIpb if perbank_refresh else nREFI
    cdef int64_t pim_ab_off             # offset of the PIM row buffer in ab_row / n_open
    cdef tick_t max_lat                 # largest constraint latency, ticks (stall watchdogs)

    # ---- command metadata (per command id) ----
    cdef int32_t[::1] cmd_scope         # lowest level the command addresses
    cdef int32_t[::1] cmd_kind          # K_*
    cdef int32_t[::1] cmd_buffer        # row buffer used (0 unless dual row buffers)
    cdef int32_t[::1] cmd_align         # ticks: issue only at multiples (column commands)
    cdef int64_t[::1] cmd_amask         # cmd_align - 1 (alignments are powers of two)
    cdef int32_t[::1] cmd_enabled       # 0: command absent from this spec

    # ---- constraint table, CSR keyed by (level * n_cmd + preceding command) ----
    cdef int32_t[::1] cons_ptr
    cdef int32_t[::1] cons_nplain       # leading rows of each group with window 1, no sibling
    cdef int32_t[::1] cons_next         # following command
    cdef int64_t[::1] cons_lat          # latency, ticks
    cdef int32_t[::1] cons_win          # window (1 = most recent issue)
    cdef int32_t[::1] cons_sib          # 1: applies to sibling nodes only
    cdef int32_t[::1] hist_slot         # (level * n_cmd + cmd) -> history slot or -1
    cdef ConsRow* rows                  # the rows cons_* packed for the hot loop
    cdef int64_t n_rows_total           # number of packed rows

    # ---- timing state ----
    cdef int64_t[::1] ready             # earliest legal tick per (level, node, command)
    cdef int64_t[::1] hist              # last max_window issue ticks per (level, node, slot)

    # ---- bank state ----
    cdef int32_t[::1] open_row          # (buffer, global bank) -> open row, -1 closed
    cdef int32_t[::1] ab_row            # (buffer, global PC) -> row open in every bank, else -1
    cdef int32_t[::1] sb_row            # (buffer, global SID) -> row open in every bank of the
                                        # SID (a PIM bank bundle), else -1
    cdef int32_t[::1] n_open            # (buffer, global PC) -> number of banks with a row open

    # ---- refresh manager (both front ends; carried across runs) ----
    cdef int64_t[::1] ref_due           # per PC: tick its next refresh is due
    cdef int32_t[::1] ref_rr            # per PC: bank of its next REFpb (round robin)

    # ---- issue order (PIM front end and single-command API; carried across runs) ----
    cdef int64_t[::1] pc_last           # per PC: tick of its latest command
    cdef int64_t[::1] pc_lseq           # per PC: issue count after its latest command
    cdef int64_t[::1] ch_last           # per channel: tick of its latest command

    # ---- statistics and log ----
    cdef int64_t[::1] cmd_count         # issued commands per command id
    cdef int64_t seq                    # commands issued so far
    cdef bint log_on
    cdef LogRec* log_buf
    cdef int64_t log_n
    cdef int64_t log_cap
    cdef int status                     # sticky error status of a front end (E_*)

    cdef int _check(self, int cmd, int ch, int pc, int sid, int bg, int ba, int* nodes) except -1
    cdef inline void _nodes(self, int ch, int pc, int sid, int bg, int ba, int* nodes) noexcept nogil
    cdef inline tick_t _earliest(self, int cmd, const int* nodes) noexcept nogil
    cdef inline tick_t _align(self, int cmd, tick_t t) noexcept nogil
    cdef inline int _state(self, int cmd, const int* nodes, int row) noexcept nogil
    cdef int _issue(self, int cmd, const int* nodes, int row, int col, tick_t clk) noexcept nogil
    cdef inline void _order(self, const int* nodes, tick_t clk) noexcept nogil
    cdef void _apply_state(self, int cmd, const int* nodes, int row) noexcept nogil
    cdef int _log(self, int cmd, const int* nodes, int row, int col, tick_t clk) noexcept nogil
    cdef int _ref_cmd(self, int64_t q, int64_t* bank) noexcept nogil
    cdef void _ref_done(self, int64_t q) noexcept nogil
