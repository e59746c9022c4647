# Typed contract of the cycle-accurate DRAM/PIM command engine (bodies in _dram.pyx).
#
# The engine never sees a Python object in its cycle loops: specs arrive as flat int arrays
# (sieve.dram.spec.DramSpec.to_arrays), requests and PIM programs as int arrays, and everything
# runs nogil over typed memoryviews. Only sieve/dram/engine.py (the door of sieve.dram)
# imports this module.
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

# Command ids (index into sieve.dram.commands.COMMANDS; sieve.dram.engine asserts the order at
# import)
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
    C_ACTPB = 17
    C_MACPB = 18
    C_PREPB = 19
    N_COMMANDS = 20

# Status codes of a state check (0 = legal)
cdef enum:
    E_OK = 0
    E_TIMING = 1          # issued before the earliest legal tick
    E_BANK_OPEN = 2       # ACT/ACTAB/ACTSB/ACTPB to a bank that has an open row
    E_BANK_CLOSED = 3     # column command to a closed bank
    E_ROW_MISS = 4        # column command to a row that is not the open one
    E_NOT_ALL_OPEN = 5    # MACAB / MACSB / MACPB without the row open in every bank it reads
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

cdef struct FlatRow:
    # a plain timing row (window 1, not for siblings) of one command, with the level of the
    # node it holds at (Engine._issue folds a command's plain rows of every level in one pass)
    int64_t lat           # latency, ticks
    int32_t nxt           # following command
    int32_t lvl           # level (LV_*) of the node: the command's own node at that level

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
    cdef bint parity                    # pim.bank_parity: ACTPB / MACPB / PREPB act on the
                                        # banks of one parity (bank index bit 0) of a PC
    cdef int8_t par_max[N_COMMANDS]     # per command, bool: a bank-parity command that a
                                        # per-bank command binds at the bank level (its
                                        # earliest tick: the latest over the parity's banks)
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
    cdef FlatRow* flat                  # per command, its plain rows at levels <= its scope
    cdef int32_t flat_ptr[N_COMMANDS + 1]  # command -> its rows in flat (CSR)
    cdef int32_t slow_lvls[N_COMMANDS]  # command -> bit l set: at level l it has a history
                                        # slot or rows that are windowed or for siblings
    cdef int64_t n_rows_total           # number of packed rows

    # ---- timing state ----
    cdef int64_t[::1] ready             # earliest legal tick per (level, node, command)
    cdef int64_t[::1] hist              # last max_window issue ticks per (level, node, slot)

    # ---- bank state ----
    cdef int32_t[::1] open_row          # (buffer, global bank) -> open row, -1 closed
    cdef int32_t[::1] ab_row            # (buffer, global PC) -> row open in every bank, else -1
    cdef int32_t[::1] sb_row            # (buffer, global SID) -> row open in every bank of the
                                        # SID (a PIM bank bundle), else -1
    cdef int32_t[::1] pb_row            # (buffer, global PC, parity) -> row open in every bank
                                        # of that parity of the PC, else -1
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
    cdef inline void _fold_slow(self, int l, int64_t node, int cmd, tick_t clk) noexcept nogil
    cdef int _issue(self, int cmd, const int* nodes, int row, int col, tick_t clk) noexcept nogil
    cdef inline void _order(self, const int* nodes, tick_t clk) noexcept nogil
    cdef void _apply_state(self, int cmd, const int* nodes, int row) noexcept nogil
    cdef int _log(self, int cmd, const int* nodes, int row, int col, tick_t clk) noexcept nogil
    cdef int _ref_cmd(self, int64_t q, int64_t* bank) noexcept nogil
    cdef void _ref_done(self, int64_t q) noexcept nogil


# ============================================================================================
# Front end 1: memory requests through per-channel FR-FCFS controllers (_dram_requests.pxi)
# ============================================================================================
# Index conventions: a "slot" indexes RequestRun.slots; "bank" is a global bank (over all
# simulated channels), "PC" a global pseudo-channel; "typ" is the request type (0 read,
# 1 write) and arrays "per (type, X)" are indexed typ * (number of X) + X.

cdef struct ReqSlot:
    # one request in flight (queued or active)
    int64_t id            # request id: its index in the trace (FR-FCFS age; lower = older)
    int64_t inject        # tick it entered the controller
    int64_t addr          # byte address (ramulator2 write forwarding / coalescing)
    int32_t row           # row index within its bank
    int32_t col           # column index of its first burst
    int32_t bank          # global bank index
    int32_t next          # slot of the next request in its bank's queue list, -1 = last
    int32_t issued        # column commands (bursts) issued so far, count
    int8_t typ            # request type: 0 read, 1 write
    int8_t row_class      # row class by its first command: 0 hit, 1 miss, 2 conflict; -1 before

cdef struct RCand:
    # one candidate command of a bank
    int64_t age           # request id of the request it serves (FR-FCFS age)
    int32_t cmd           # command id (C_*)
    int32_t slot          # slot of the request it serves
    int8_t rank           # FR-FCFS rank: at equal ticks the higher rank issues first
    int8_t grp            # command group: 0 ACT, 1 PRE, 2 RD, 3 WR
    int32_t list_pos      # index of its entry in its PC's candidate list, -1 = none

cdef struct Best:
    # the best candidate of a pseudo-channel (_rs_look in _dram_requests.pxi)
    int64_t tick          # earliest legal issue tick, ticks (T_INF = none)
    int64_t age           # request id it serves (FR-FCFS age)
    int64_t bank          # global bank index
    int32_t cmd           # command id, -1 = none
    int32_t slot          # slot of the request it serves
    int32_t rank          # FR-FCFS rank

cdef struct RBank:
    # per-bank scheduling state: up to three candidates (sieve uses one; ramulator2: the
    # active request's column command, the oldest row hit's, and the ACT/PRE of a queued one)
    int8_t valid          # bool: candidates are current (0: on its PC's list of banks to rebuild)
    int8_t n_cand         # candidates in `cand`, count (0..3)
    RCand cand[3]         # the candidates, named bank * 4 + k in the PC candidate lists
    int64_t base[5]       # offsets in Engine.ready of the bank's nodes at levels 0..4
    int32_t node[5]       # the bank's node index at levels 0..4

@cython.final
cdef class RequestRun:
    cdef Engine eng                     # the device state the run drives

    # ---- configuration (fixed for the run) ----
    cdef int n_ch                       # simulated channels, count
    cdef int pcs_per_ch                 # pseudo-channels per channel, count
    cdef int64_t n_pcs                  # pseudo-channels over all channels, count
    cdef int64_t n_banks                # banks over all channels, count
    cdef int banks_per_pc               # banks per pseudo-channel, count
    cdef int n_cmd                      # commands in the engine's table (row stride of ready)
    cdef int queue_size                 # capacity of each read / write queue, requests
    cdef int wr_high                    # write-mode entry watermark, queued writes
    cdef int wr_low                     # write-mode exit watermark, queued writes
    cdef int bursts_per_req             # column commands per request, count
    cdef int lifecycle                  # request lifecycle, LC_SIEVE / LC_RAMULATOR2 (_run
                                        # picks the loop compiled for it)
    cdef bint ramulator2                # bool: lifecycle == LC_RAMULATOR2 (set-up only)
    cdef int inject_per_tick            # most requests injected per tick, 0 = unlimited
    cdef bint closed_page               # bool: auto-precharge after a request's last burst
                                        # when no other request in flight hits the row
                                        # (row policy ClosedPage, else OpenPage)
    cdef bint perbank_refresh           # bool: REFpb round robin (else REFab per PC)
    cdef tick_t stall_limit             # watchdog: ticks without a column command, livelock
    cdef tick_t ref_lead                # ticks a refresh counts as due before Engine.ref_due
                                        # (1 in ramulator2, whose clock starts at 1; else 0)

    # ---- request slots (per request in flight; grown by doubling) ----
    cdef ReqSlot* slots                 # slot_cap slots
    cdef int32_t* free_slots            # stack of free slot indices (n_free on it)
    cdef int64_t slot_cap               # slots allocated, count
    cdef int64_t n_free                 # free slots on the stack, count
    cdef RBank* banks                   # per bank: its candidates and ready offsets

    # ---- input chunk (the memoryviews keep the caller's arrays alive) ----
    cdef const int64_t[::1] in_arrive   # per request: arrival tick
    cdef const int32_t[::1] in_ch       # per request: channel index
    cdef const int32_t[::1] in_pc       # per request: pseudo-channel index within its channel
    cdef const int32_t[::1] in_sid      # per request: SID index within its PC
    cdef const int32_t[::1] in_bg       # per request: bank-group index within its SID
    cdef const int32_t[::1] in_bank     # per request: bank index within its bank group
    cdef const int32_t[::1] in_row      # per request: row index
    cdef const int32_t[::1] in_col      # per request: column index of its first burst
    cdef const int8_t[::1] in_write     # per request: bool, a write
    cdef const int64_t[::1] in_addr     # per request: byte address (zeros without addresses)
    cdef bint forward_writes            # bool: ramulator2 with addresses: a request to the
                                        # address of a queued write is forwarded / coalesced
    cdef int64_t n_forwarded            # reads served by a queued write, requests
    cdef int64_t n_coalesced            # writes absorbed by a queued write, requests
    cdef int64_t in_pos                 # index in the chunk of the next request to inject
    cdef int64_t in_len                 # requests in the chunk, count
    cdef int64_t next_id                # request id of the next request to inject (= requests
                                        # given before it, over all chunks)
    cdef bint input_final               # bool: no more chunks come (finish_input)

    # ---- optional per-request outputs, indexed by request id ----
    cdef int64_t[::1] out_inject        # tick the request entered the controller
    cdef int64_t[::1] out_depart        # tick of its last data beat
    cdef int8_t[::1] out_class          # row class (0 hit, 1 miss, 2 conflict; -1 forwarded
                                        # or coalesced)
    cdef bint has_outputs               # bool: set_outputs was called
    cdef int64_t out_len                # entries of each output array, requests

    # ---- queues: per (type, bank) lists of slots; per (type, PC) lists of banks ----
    cdef int32_t[::1] queue_head        # per (type, bank): slot of its oldest queued request,
                                        # -1 = empty
    cdef int32_t[::1] queue_tail        # per (type, bank): slot of its newest queued request
    cdef int32_t[::1] queued_banks      # per (type, PC): global banks with queued requests
                                        # (banks_per_pc entries per (type, PC), at
                                        # typ * n_banks + pc * banks_per_pc)
    cdef int32_t[::1] queued_bank_pos   # per (type, bank): index in queued_banks, -1 = absent
    cdef int32_t[::1] n_queued_banks    # per (type, PC): entries of queued_banks in use, count
    cdef int32_t[::1] miss_row          # per (type, bank): the row n_miss counts against
                                        # (-2 = not counted yet; -1 = closed)
    cdef int32_t[::1] n_miss            # per (type, bank): queued requests whose row is not
                                        # miss_row, count (ramulator2's search for a miss)
    cdef int32_t[::1] queue_len         # per (type, channel): queued requests, count
    cdef int64_t[::1] in_flight         # per channel: requests queued or active, count
    cdef int8_t[::1] write_mode         # per channel: bool, draining writes

    # ---- ramulator2: active buffer (one request per bank) and freed queue slots ----
    cdef int32_t[::1] active_slot       # per bank: slot of its active request, -1 = none
    cdef int32_t[::1] active_banks      # per PC: banks with an active request (banks_per_pc
                                        # entries per PC)
    cdef int32_t[::1] active_bank_pos   # per bank: index in active_banks, -1 = absent
    cdef int32_t[::1] n_active_banks    # per PC: entries of active_banks in use, count
    cdef int64_t[::1] freed_tick        # per (type, channel): tick n_freed counts, -1 = none
    cdef int32_t[::1] n_freed           # per (type, channel): queue slots freed at freed_tick
                                        # (the front end sees them from the next tick), count
    cdef int8_t[::1] n_refs_waiting     # per channel: pending refreshes, count (while > 0 no
                                        # queued request of the channel issues)

    # ---- injection rate ----
    cdef tick_t inject_tick             # tick of the latest injection, -1 = none
    cdef int inject_count               # requests injected at inject_tick, count

    # ---- per-PC candidate lists (cand_cap entries per PC, at pc * cand_cap) ----
    cdef int32_t* cand_sid_off          # offset in Engine.ready of the candidate's command at
                                        # its bank's SID node
    cdef int32_t* cand_bg_off           # ... at its bank-group node
    cdef int32_t* cand_bank_off         # ... at its bank node
    cdef int64_t* cand_key              # FR-FCFS key ((7 - rank) << 58 | age): lower first
    cdef int32_t* cand_group            # command group (RCand.grp): 0 ACT, 1 PRE, 2 RD, 3 WR
    cdef int32_t* cand_id               # the candidate: bank * 4 + index in RBank.cand
    cdef int32_t[::1] n_cands           # per PC: entries in use, count
    cdef int64_t cand_cap               # entries per PC (3 * banks_per_pc), count
    cdef int32_t* rebuild_banks         # per PC: banks whose candidates are stale
                                        # (banks_per_pc entries per PC)
    cdef int32_t[::1] n_rebuild         # per PC: entries of rebuild_banks in use, count

    # ---- per-PC best candidate (valid while pc_best_valid) ----
    cdef int8_t[::1] pc_best_valid      # per PC: bool, the cached best is current
    cdef int64_t[::1] pc_best_tick      # per PC: its issue tick
    cdef int32_t[::1] pc_best_id        # per PC: the candidate, bank * 4 + k
    cdef int8_t[::1] pc_rebuild_all     # per PC: bool, rebuild every bank at its next look

    # ---- per-channel best command (valid while ch_best_valid) ----
    cdef int8_t[::1] ch_best_valid      # per channel: bool, the cached best is current
    cdef int64_t[::1] ch_best_tick      # per channel: its issue tick (T_INF = none)
    cdef int32_t[::1] ch_best_cmd       # per channel: command id, -1 = none
    cdef int32_t[::1] ch_best_slot      # per channel: slot it serves, -1 = a refresh command
    cdef int64_t[::1] ch_best_bank      # per channel: global bank of the command (a PC-scope
                                        # refresh command: the PC's first bank)

    # ---- refresh (due ticks and round robin are the engine's: Engine.ref_due / ref_rr) ----
    cdef int8_t[::1] ref_pending        # per PC: bool, a refresh is due and not yet done
    cdef int32_t[::1] ref_pending_bank  # per PC: bank within the PC of its pending REFpb,
                                        # -1 = none (per-bank refresh only)
    cdef tick_t next_ref_due            # earliest (ref_due - ref_lead) of the PCs without a
                                        # pending refresh, ticks (T_INF = none)

    # ---- watchdog and alignment ----
    cdef int64_t[::1] last_progress     # per channel: tick of its latest column command (or
                                        # of the injection that gave it work)
    cdef int64_t[::1] align_mask        # per command id: issue-tick alignment - 1, ticks
                                        # (ramulator2: ACT and REF on rising CK edges too)

    # ---- time and counters ----
    cdef tick_t now                     # tick the run has reached
    cdef int64_t n_loops                # scheduler loop iterations (signal-check cadence)
    cdef int64_t n_done                 # completed requests (incl. forwarded / coalesced)
    cdef int64_t n_injected             # injected requests (incl. forwarded / coalesced)
    cdef tick_t last_depart             # tick of the latest data beat of a completed request
    cdef tick_t last_inject             # tick of the latest injection

    # ---- statistics ----
    cdef int64_t n_reads                # completed reads (incl. forwarded), requests
    cdef int64_t read_lat_sum           # sum of the read latencies, ticks
    cdef int64_t* lat_hist              # reads per latency (index = ticks < HIST_FLAT), count
    cdef int64_t lat_hist_len           # entries of lat_hist, count
    cdef int64_t* lat_tail              # latencies >= HIST_FLAT one by one, ticks
    cdef int64_t lat_tail_n             # entries of lat_tail in use, count
    cdef int64_t lat_tail_cap           # entries of lat_tail allocated, count
    cdef int64_t n_row_class[3]         # requests per row class (hit, miss, conflict), count
    cdef int64_t[::1] pc_bursts         # per PC: column commands issued, count

    # ---- request type of every logged command (when the engine logs) ----
    cdef int8_t* log_req_types          # per logged command: 0 read, 1 write, -1 refresh
    cdef int64_t log_req_types_n        # entries in use, count
    cdef int64_t log_req_types_cap      # entries allocated, count
    cdef bint started                   # bool: the first feed or advance happened

    cdef int _grow(self) noexcept nogil
    cdef int _count_latency(self, int64_t lat) noexcept nogil
    cdef int _log_type(self, int t) noexcept nogil
    cdef inline tick_t _al(self, int cmd, tick_t t) noexcept nogil
    cdef inline void _inval_pc(self, int64_t q) noexcept nogil
    cdef inline void _mark(self, int64_t b, int64_t q) noexcept nogil
    cdef inline void _inval_channel(self, int c) noexcept nogil
    cdef inline void _freed(self, int64_t j, tick_t now) noexcept nogil
    cdef void _unlink(self, int32_t r, int typ, int64_t b, int64_t q) noexcept nogil
    cdef inline void _add(self, RBank* bk, int cmd, int32_t r, int rank, int grp) noexcept nogil
    cdef inline void _cand_set(self, int64_t q, int64_t b, int k, int32_t i) noexcept nogil
    cdef inline void _cand_put(self, int64_t q, int64_t b, int k) noexcept nogil
    cdef inline void _cand_del_at(self, int64_t q, int32_t i) noexcept nogil
    cdef inline tick_t _tick(self, int64_t b, int cmd, int64_t chb, int64_t pcb,
                             tick_t now) noexcept nogil
    cdef void _check_look(self, int64_t q, int64_t chb, tick_t now, Best* best) noexcept nogil
    cdef bint _buffered_write(self, int64_t p, int64_t b) noexcept nogil
    cdef inline bint _closes_active(self, int cmd, int64_t q, int64_t b) noexcept nogil
    cdef int _run(self)


# ============================================================================================
# Front end 2: PIM programs (_dram_pim.pxi)
# ============================================================================================
# A "slot" indexes the concatenated per-PC kernel streams (run_pim's prog_kern / prog_bar);
# PCs are the simulated ones, channel-major.

@cython.final
cdef class _PimRun:
    cdef Engine eng                     # the device state the run drives

    # ---- program (the caller's arrays) ----
    cdef const int64_t[:, ::1] kernels  # kernel descriptors (n_kernels x K_NFIELDS: counts,
                                        # base row, gap in ticks, vectors per pass)
    cdef const int32_t[::1] slot_kernel # per slot: kernel index
    cdef const int32_t[::1] slot_barrier  # per slot: barrier set of its kernel, -1 = none
    cdef int64_t[:, ::1] pc_state       # per PC: stream state (P_NFIELDS columns P_*:
                                        # indices, counters, ticks)

    # ---- outputs ----
    cdef int64_t[::1] k_start           # per slot: tick of the kernel's first command, -1
                                        # before
    cdef int64_t[::1] k_end             # per slot: tick the kernel ends, -1 before
    cdef int64_t[::1] pc_busy           # per PC: sum of its kernels' durations, ticks
    cdef int64_t[::1] pc_finish         # per PC: tick its latest kernel ends
    cdef int64_t[::1] n_refresh         # per PC: REFab issued in this run, count
    cdef int64_t[:, ::1] ch_counts      # per (simulated channel, command id): issued, count
    cdef int64_t[:, ::1] overhead       # per (PC, OV_*): ticks of its overhead spans

    # ---- barriers ----
    cdef int32_t[::1] member_ptr        # CSR pointer (n_sets + 1 entries) into members
    cdef int32_t[::1] members           # PC indices of each barrier set
    cdef int32_t[::1] n_needed_ptr      # CSR pointer (n_sets + 1 entries) into n_needed
    cdef int32_t[::1] n_needed          # per (set, instance): participants it waits for, PCs
    cdef int64_t[::1] bar_instance      # per set: index of its current instance
    cdef int64_t[::1] bar_arrived       # per set: PCs arrived at the current instance, count
    cdef int64_t[::1] bar_latest_end    # per set: latest kernel end among them, ticks
    cdef int8_t[::1] bar_cross          # per set: bool, its PCs span several channels
    cdef bint bar_released              # bool: a barrier was released during this _scan

    # ---- configuration ----
    cdef int pcs_per_ch                 # pseudo-channels per channel, count
    cdef tick_t pull_in                 # how far ahead of its due tick a refresh may be
                                        # pulled in (PULL_IN x nREFI), ticks
    cdef tick_t stall_limit             # watchdog: ticks without progress, livelock
    cdef bint idle_closed               # bool: idle policy IDLE_CLOSED
    cdef const int64_t[:, ::1] steps    # mode-sequence steps (S_NFIELDS columns S_*: op,
                                        # SID, bank group, bank, row, column)
    cdef const int64_t[::1] seq_ptr     # CSR pointer (N_SEQ + 1 entries): steps per sequence
    cdef bint has_modes                 # bool: the spec has a mode protocol
    cdef int64_t n_grfa_steps           # steps of SEQ_GRFA, count (0: GWRITE writes the input)
    cdef int n_bundles                  # PIM bank bundles per PC, count (1: all-bank rows;
                                        # else one per SID)
    cdef bint parity                    # bool: bank-parity rows (Engine.parity)
    cdef int64_t grfa_par               # bank parity of the register-row writes (SEQ_GRFA
                                        # steps' bank), -1 without them
    cdef int64_t n_pcs                  # simulated pseudo-channels, count
    cdef int64_t n_kernels              # kernel descriptors, count
    cdef int64_t n_slots                # slots, count

    # ---- raw views for the hot loop (set by _bind; the memoryviews own the buffers) ----
    cdef int64_t* state_p               # pc_state (P_NFIELDS per PC)
    cdef const int64_t* kernels_p       # kernels (K_NFIELDS per kernel)
    cdef const int32_t* slot_kernel_p   # slot_kernel
    cdef int64_t* k_start_p             # k_start
    cdef int64_t* k_end_p               # k_end
    cdef int64_t* pc_last_p             # Engine.pc_last: per PC, tick of its latest command
    cdef int64_t* pc_lseq_p             # Engine.pc_lseq: per PC, issue count after it
    cdef int64_t* ch_last_p             # Engine.ch_last: per channel, tick of its latest
                                        # command
    cdef int64_t* ref_due_p             # Engine.ref_due: per PC, tick its refresh is due
    cdef const int32_t* pim_ab_row_p    # Engine.ab_row, PIM row buffer: per PC, the row open
                                        # in every bank, -1
    cdef const int32_t* pim_n_open_p    # Engine.n_open, PIM row buffer: per PC, open banks
    cdef const int32_t* open_row_p      # Engine.open_row, buffer 0: per bank, open row, -1
    cdef const int32_t* ab_row_p        # Engine.ab_row, buffer 0: per PC, the row open in
                                        # every bank, -1
    cdef const int32_t* pim_sb_row_p    # Engine.sb_row, PIM row buffer: per SID, the row
                                        # open in every bank of the SID, -1
    cdef const int32_t* pim_open_row_p  # Engine.open_row, PIM row buffer: per bank, open row
    cdef const int32_t* pim_pb_row_p    # Engine.pb_row, PIM row buffer: per (PC, parity), the
                                        # row open in every bank of the parity, -1
    cdef const int64_t* seq_ptr_p       # seq_ptr
    cdef const int64_t* steps_p         # steps (S_NFIELDS per step)

    cdef void _bind(self) noexcept
    cdef inline int64_t* _s(self, int64_t q) noexcept nogil
    cdef inline const int64_t* _k(self, int64_t slot) noexcept nogil
    cdef inline void _ordered(self, int64_t q, int c, tick_t now) noexcept nogil
    cdef inline void _count(self, int c, int cmd) noexcept nogil
    cdef void _release(self, int64_t s) noexcept nogil
    cdef void _arrive(self, int64_t q, tick_t end) noexcept nogil
    cdef void _finish_kernel(self, int64_t q) noexcept nogil
    cdef inline int64_t _pass_vectors(self, const int64_t* kr, const int64_t* s) noexcept nogil
    cdef inline bint _mk(self, const int64_t* kr) noexcept nogil
    cdef inline void _span_begin(self, int64_t q, int64_t* s, int64_t kind) noexcept nogil
    cdef inline void _span_end(self, int64_t q, int64_t* s) noexcept nogil
    cdef inline void _gw_begin(self, int64_t q, int64_t* s) noexcept nogil
    cdef inline void _seq_begin(self, int64_t q, int64_t* s, int64_t sq) noexcept nogil
    cdef inline void _bank_nodes(self, int64_t q, int64_t b, int* nodes) noexcept nogil
    cdef inline int64_t _step_row(self, const int64_t* s, const int64_t* st) noexcept nogil
    cdef inline int _seq_cmd(self, int64_t q, int64_t* s) noexcept nogil
    cdef inline bint _sid_closed(self, int64_t q, int64_t sid) noexcept nogil
    cdef inline int _bundle_cmd(self, int64_t q, int64_t* s, const int64_t* kr) noexcept nogil
    cdef inline int _prep_cmd(self, int64_t q, int64_t* s) noexcept nogil
    cdef inline int64_t _par_of(self, const int64_t* kr, int64_t k, int64_t* m) noexcept nogil
    cdef inline int64_t _par_open_bank(self, int64_t q, int64_t par) noexcept nogil
    cdef inline int _parity_cmd(self, int64_t q, int64_t* s, const int64_t* kr) noexcept nogil
    cdef inline int _par_prep_cmd(self, int64_t q, int64_t* s) noexcept nogil
    cdef inline int _next(self, int64_t q, int64_t* s) noexcept nogil
    cdef inline bint _scan(self, int c, tick_t* out_e, int* out_cmd, int* out_pl,
                           int* out_kind) noexcept nogil
    cdef inline int _issue(self, int c, int pl, int cmd, int kind, tick_t now) noexcept nogil
    cdef int _issue_step(self, int64_t q, int c, int64_t* s, int64_t slot, int cmd,
                         tick_t now) noexcept nogil
    cdef int _settle(self, int c, tick_t end) noexcept nogil
    cdef int _run_channels(self, int n_ch) noexcept nogil
    cdef tick_t _safe_until(self, int c) noexcept nogil
    cdef int _run_sync(self, int n_ch) noexcept nogil
