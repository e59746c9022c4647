# Front end 1 of the engine: memory requests through per-channel FR-FCFS controllers.
# Included by _dram.pyx (module level); only sieve/dram/device.py calls it.
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

# Request lifecycles (sieve.dram.device.ControllerConfig.lifecycle)
cdef enum:
    LC_SIEVE = 0
    LC_RAMULATOR2 = 1

#: Names of the lifecycles, by engine code.
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


cdef struct ReqSlot:
    # one request in flight (queued or active)
    int64_t id            # index in the trace (FR-FCFS age)
    int64_t inject        # tick it entered the controller
    int64_t addr          # byte address (ramulator2 write forwarding / coalescing)
    int32_t row
    int32_t col           # column of its first burst
    int32_t bank          # global bank
    int32_t next          # next slot in its bank's queue list, -1 = last
    int32_t issued        # bursts issued
    int8_t typ            # 0 read, 1 write
    int8_t cls            # row class by its first command (0 hit, 1 miss, 2 conflict), -1 before


cdef struct RCand:
    # one candidate command of a bank
    int64_t age           # request id (FR-FCFS age)
    int32_t cmd
    int32_t slot
    int8_t rank
    int8_t grp            # 0 ACT, 1 PRE, 2 RD, 3 WR (the command group of the candidate)
    int32_t where         # its index in its PC's candidate list, -1 = none


cdef struct Best:
    # the best candidate of a pseudo-channel
    int64_t t
    int64_t age
    int64_t bank
    int32_t cmd
    int32_t slot
    int32_t rank


cdef struct RBank:
    # per-bank scheduling state: up to three candidates (sieve uses one; ramulator2: the
    # active request's column command, the oldest row hit's, and the ACT/PRE of a queued one)
    int8_t valid          # candidates are current (0: on its PC's list of banks to rebuild)
    int8_t nc             # number of candidates
    RCand c[3]
    int64_t base[5]       # offsets in `ready` of the bank's nodes at levels 0..4
    int32_t node[5]       # the bank's node index at levels 0..4


@cython.final
cdef class RequestRun:
    """One request-trace run: the controllers' queues, caches and statistics (see the module
    comment). Use through sieve.dram.device; every Python-visible method checks its
    arguments, so no call can index outside the engine's arrays.

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
      * per pseudo-channel, its best candidate while nothing in the PC changed and that
        candidate's tick under the current ready values is unchanged (every other
        candidate's tick can only have grown: ready values and `now` never decrease, and a
        candidate's rank and age are fixed);
      * per channel, its best command until anything in the channel changes.
    """

    cdef Engine eng
    # configuration
    cdef int n_ch, n_pc_ch, bpp, Q, hi, lo, bursts, n_cmd, lc, inj_limit
    cdef int64_t n_pcs, NB
    cdef bint closed_page, perbank, ram
    cdef tick_t stall_limit, ref_lead
    # slots of the requests in flight (grown by doubling)
    cdef ReqSlot* sl
    cdef int32_t* freel
    cdef int64_t cap, n_free
    cdef RBank* bs
    # input chunk (the memoryviews keep the arrays alive)
    cdef const int64_t[::1] i_arr
    cdef const int32_t[::1] i_ch
    cdef const int32_t[::1] i_pc
    cdef const int32_t[::1] i_sid
    cdef const int32_t[::1] i_bg
    cdef const int32_t[::1] i_ba
    cdef const int32_t[::1] i_row
    cdef const int32_t[::1] i_col
    cdef const int8_t[::1] i_wr
    cdef const int64_t[::1] i_addr
    cdef bint fwd                       # ramulator2 with addresses: forward / coalesce
    cdef int64_t n_fwd, n_coal
    cdef int64_t in_pos, in_n, id_next
    cdef bint final
    # optional per-request outputs, indexed by request id
    cdef int64_t[::1] o_inject
    cdef int64_t[::1] o_depart
    cdef int8_t[::1] o_class
    cdef bint outs
    cdef int64_t n_out
    # queues: per (type, bank) lists; per (type, PC) list of the banks with queued requests
    cdef int32_t[::1] bhead
    cdef int32_t[::1] btail
    cdef int32_t[::1] pact_list
    cdef int32_t[::1] pact_pos
    cdef int32_t[::1] pact_n
    cdef int32_t[::1] qlen              # per (type, channel)
    cdef int64_t[::1] nfl               # per channel: requests in flight
    cdef int8_t[::1] wmode
    # ramulator2: active buffer (one request per bank) and slots freed per (type, channel)
    cdef int32_t[::1] act_slot
    cdef int32_t[::1] alist
    cdef int32_t[::1] apos
    cdef int32_t[::1] an
    cdef int64_t[::1] fr_tick
    cdef int32_t[::1] fr_n
    cdef int8_t[::1] chblk              # per channel: refreshes waiting (ramulator2)
    # injection rate
    cdef tick_t inj_tick
    cdef int inj_cnt
    # per-PC candidate lists (lcap entries per PC): offsets in `ready` of the command at the
    # bank's SID, BG and bank nodes, FR-FCFS key, group, bank * 4 + k
    cdef int32_t* l2
    cdef int32_t* l3
    cdef int32_t* l4
    cdef int64_t* lk
    cdef int32_t* lg
    cdef int32_t* li
    cdef int32_t[::1] ln                # entries per PC
    cdef int64_t lcap
    cdef int32_t* dl                    # per PC: banks to rebuild (bpp slots per PC)
    cdef int32_t[::1] dn                # per PC: banks on its rebuild list
    # per-PC best candidate (valid while pv[q]): its tick and bank * 4 + k
    cdef int8_t[::1] pv
    cdef int64_t[::1] pt
    cdef int32_t[::1] pid
    cdef int8_t[::1] pfull              # per PC: rebuild every bank at the next look
    # per-channel best-command cache
    cdef int8_t[::1] cv
    cdef int64_t[::1] ct
    cdef int32_t[::1] ccmd
    cdef int32_t[::1] cslot
    cdef int64_t[::1] cbank
    # refresh
    cdef int8_t[::1] ref_pend
    cdef int32_t[::1] pend_bank
    cdef tick_t next_ref_min
    # watchdog
    cdef int64_t[::1] prog
    # command alignment masks (ramulator2: ACT/REF on rising edges too)
    cdef int64_t[::1] amask
    # time and counters
    cdef tick_t now
    cdef int64_t it
    cdef int64_t n_done
    cdef int64_t n_injected
    cdef tick_t last_depart
    cdef tick_t last_inject
    # statistics
    cdef int64_t n_lat
    cdef int64_t lat_sum
    cdef int64_t* hist
    cdef int64_t hist_cap
    cdef int64_t* hx                    # latencies >= HIST_FLAT, one by one
    cdef int64_t hx_n
    cdef int64_t hx_cap
    cdef int64_t n_cls[3]
    cdef int64_t[::1] pc_bursts
    # request type of every logged command (0 read, 1 write, -1 refresh), when logging
    cdef int8_t* ltype
    cdef int64_t lt_n
    cdef int64_t lt_cap
    cdef bint started

    def __cinit__(self):
        self.sl = NULL
        self.freel = NULL
        self.bs = NULL
        self.l2 = NULL
        self.l3 = NULL
        self.l4 = NULL
        self.lk = NULL
        self.lg = NULL
        self.li = NULL
        self.dl = NULL
        self.hist = NULL
        self.hx = NULL
        self.ltype = NULL

    def __dealloc__(self):
        free(self.sl)
        free(self.freel)
        free(self.bs)
        free(self.l2)
        free(self.l3)
        free(self.l4)
        free(self.lk)
        free(self.lg)
        free(self.li)
        free(self.dl)
        free(self.hist)
        free(self.hx)
        free(self.ltype)

    def __init__(self, Engine eng, int bursts, int qsize, int wr_high, int wr_low,
                 bint closed_page, int lifecycle=LC_SIEVE, int inject_per_tick=0):
        cdef int64_t b, q
        cdef int l
        cdef int nodes[5]
        if bursts < 1 or qsize < 1 or wr_high < 1 or wr_low < 0:
            raise ValueError("run_requests: bursts, queue size and write high watermark must be "
                             ">= 1, the low watermark >= 0")
        if lifecycle not in (LC_SIEVE, LC_RAMULATOR2):
            raise ValueError(f"RequestRun: lifecycle {lifecycle} out of range [0, 2)")
        if inject_per_tick < 0:
            raise ValueError("RequestRun: inject_per_tick must be >= 0 (0 = unlimited)")
        self.eng = eng
        self.n_ch = eng.cnt[0]
        self.n_pc_ch = eng.cnt[1]
        self.n_pcs = eng.n_nodes[1]
        self.NB = eng.n_nodes[4]
        self.bpp = eng.banks_per_pc
        self.Q = qsize
        self.hi = wr_high
        self.lo = wr_low
        self.bursts = bursts
        self.n_cmd = eng.n_cmd
        self.lc = lifecycle
        self.ram = lifecycle == LC_RAMULATOR2
        self.inj_limit = inject_per_tick
        self.closed_page = closed_page
        self.perbank = eng.perbank_refresh
        self.ref_lead = 1 if self.ram else 0
        self.stall_limit = 8 * (max(eng.nREFI, eng.nREFIpb * eng.banks_per_pc)
                                + 16 * eng.max_lat)
        n_ch, n_pcs, NB, n_cmd = self.n_ch, self.n_pcs, self.NB, self.n_cmd
        self.bhead = np.full(2 * NB, -1, dtype=np.int32)
        self.btail = np.full(2 * NB, -1, dtype=np.int32)
        self.pact_list = np.zeros(2 * NB, dtype=np.int32)
        self.pact_pos = np.full(2 * NB, -1, dtype=np.int32)
        self.pact_n = np.zeros(2 * n_pcs, dtype=np.int32)
        self.qlen = np.zeros(2 * n_ch, dtype=np.int32)
        self.nfl = np.zeros(n_ch, dtype=np.int64)
        self.wmode = np.zeros(n_ch, dtype=np.int8)
        self.act_slot = np.full(NB, -1, dtype=np.int32)
        self.alist = np.zeros(NB, dtype=np.int32)
        self.apos = np.full(NB, -1, dtype=np.int32)
        self.an = np.zeros(n_pcs, dtype=np.int32)
        self.fr_tick = np.full(2 * n_ch, -1, dtype=np.int64)
        self.fr_n = np.zeros(2 * n_ch, dtype=np.int32)
        self.chblk = np.zeros(n_ch, dtype=np.int8)
        self.inj_tick = -1
        self.inj_cnt = 0
        # candidate lists: at most three candidates per bank (RBank), named bank * 4 + k
        if NB >= (1 << 29):
            raise ValueError("run_requests: more than 2**29 banks")
        self.lcap = 3 * max(self.bpp, 1)
        if eng.ready.shape[0] >= (1 << 31):
            raise ValueError("run_requests: engine state too large")
        self.l2 = <int32_t*>malloc(max(n_pcs, 1) * self.lcap * sizeof(int32_t))
        self.l3 = <int32_t*>malloc(max(n_pcs, 1) * self.lcap * sizeof(int32_t))
        self.l4 = <int32_t*>malloc(max(n_pcs, 1) * self.lcap * sizeof(int32_t))
        self.lk = <int64_t*>malloc(max(n_pcs, 1) * self.lcap * sizeof(int64_t))
        self.lg = <int32_t*>malloc(max(n_pcs, 1) * self.lcap * sizeof(int32_t))
        self.li = <int32_t*>malloc(max(n_pcs, 1) * self.lcap * sizeof(int32_t))
        self.dl = <int32_t*>malloc(max(NB, 1) * sizeof(int32_t))
        if (self.l2 == NULL or self.l3 == NULL or self.l4 == NULL or self.lk == NULL or self.lg == NULL or self.li == NULL
                or self.dl == NULL):
            raise MemoryError("run_requests: candidate lists")
        self.ln = np.zeros(n_pcs, dtype=np.int32)
        self.dn = np.zeros(n_pcs, dtype=np.int32)
        self.pfull = np.ones(n_pcs, dtype=np.int8)
        self.pv = np.zeros(n_pcs, dtype=np.int8)
        self.pt = np.zeros(n_pcs, dtype=np.int64)
        self.pid = np.zeros(n_pcs, dtype=np.int32)
        self.cv = np.zeros(n_ch, dtype=np.int8)
        self.ct = np.zeros(n_ch, dtype=np.int64)
        self.ccmd = np.zeros(n_ch, dtype=np.int32)
        self.cslot = np.zeros(n_ch, dtype=np.int32)
        self.cbank = np.zeros(n_ch, dtype=np.int64)
        self.ref_pend = np.zeros(n_pcs, dtype=np.int8)
        self.pend_bank = np.full(n_pcs, -1, dtype=np.int32)
        self.prog = np.zeros(n_ch, dtype=np.int64)
        am = np.asarray(eng.cmd_amask).copy()
        if self.ram:
            # Ramulator 2.1's HBM3/4 controller issues only PRE on falling edges
            for x in (C_ACT, C_REFAB, C_REFPB):
                am[x] = eng.tpc - 1
        self.amask = am
        self.pc_bursts = np.zeros(n_pcs, dtype=np.int64)
        self.bs = <RBank*>malloc(max(NB, 1) * sizeof(RBank))
        if self.bs == NULL:
            raise MemoryError("run_requests: bank state")
        for b in range(NB):
            nodes[4] = <int>b
            nodes[3] = <int>(b // eng.cnt[4])
            nodes[2] = nodes[3] // eng.cnt[3]
            nodes[1] = nodes[2] // eng.cnt[2]
            nodes[0] = nodes[1] // eng.cnt[1]
            for l in range(N_LEVELS):
                self.bs[b].base[l] = eng.lvl_off[l] + <int64_t>nodes[l] * n_cmd
                self.bs[b].node[l] = nodes[l]
            self.bs[b].valid = 1
            self.bs[b].nc = 0
        self.cap = 0
        self.n_free = 0
        if self._grow() != 0:
            raise MemoryError("run_requests: request slots")
        self.hist_cap = 1024
        self.hist = <int64_t*>calloc(self.hist_cap, sizeof(int64_t))
        if self.hist == NULL:
            raise MemoryError("run_requests: latency histogram")
        self.next_ref_min = T_INF
        for q in range(n_pcs):
            if eng.ref_due[q] - self.ref_lead < self.next_ref_min:
                self.next_ref_min = eng.ref_due[q] - self.ref_lead
        self.in_pos = 0
        self.in_n = 0
        self.id_next = 0
        self.final = False
        self.outs = False
        self.n_out = 0
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
        self.o_inject = inject
        self.o_depart = depart
        self.o_class = rclass
        self.outs = True
        self.n_out = inject.shape[0]

    def feed(self, const int64_t[::1] arrive, const int32_t[::1] r_ch, const int32_t[::1] r_pc,
             const int32_t[::1] r_sid, const int32_t[::1] r_bg, const int32_t[::1] r_ba,
             const int32_t[::1] r_row, const int32_t[::1] r_col, const int8_t[::1] r_write,
             r_addr=None):
        """The next chunk of requests (decoded addresses, arrival ticks non-decreasing).
        ``r_addr``: the byte addresses (int64); with them the ramulator2 lifecycle forwards a
        read to a queued write of the same address and coalesces a write into one, as
        Ramulator's ``ControllerBase::send`` does (without them, neither happens)."""
        cdef Engine eng = self.eng
        if self.final:
            raise ValueError("RequestRun.feed: input already finished")
        if self.in_pos < self.in_n:
            raise ValueError("RequestRun.feed: the previous chunk is not consumed yet")
        arrays = [arrive, r_ch, r_pc, r_sid, r_bg, r_ba, r_row, r_col, r_write]
        n = arrive.shape[0]
        if any(a.shape[0] != n for a in arrays):
            raise ValueError("run_requests: every request array must have one entry per "
                             "request")
        # (arrival ticks are only compared, never used as an index: any value is safe)
        for a, lv in zip(arrays[1:6], range(N_LEVELS)):
            # one pass per level: negative values are huge when read as unsigned
            if n and np.any(np.asarray(a).view(np.uint32) >= eng.cnt[lv]):
                raise ValueError(f"run_requests: address level {lv} out of range "
                                 f"[0, {eng.cnt[lv]})")
        if self.id_next + n >= (<int64_t>1 << 58):
            raise ValueError("run_requests: at most 2**58 requests per run")
        if self.outs and self.id_next + n > self.n_out:
            raise ValueError("run_requests: every request array must have one entry per "
                             "request")
        self.i_arr = arrive
        self.i_ch = r_ch
        self.i_pc = r_pc
        self.i_sid = r_sid
        self.i_bg = r_bg
        self.i_ba = r_ba
        self.i_row = r_row
        self.i_col = r_col
        self.i_wr = r_write
        if r_addr is not None:
            ad = np.ascontiguousarray(r_addr, dtype=np.int64)
            if ad.shape[0] != n:
                raise ValueError("run_requests: every request array must have one entry per "
                                 "request")
            self.i_addr = ad
            self.fwd = self.ram
        else:
            self.i_addr = np.zeros(n, dtype=np.int64)
            self.fwd = False
        self.in_pos = 0
        self.in_n = n
        self.started = True

    def finish_input(self):
        """No more chunks: the run ends when every request given has completed."""
        self.final = True

    def advance(self):
        """Simulate until the chunk is consumed (RUN_NEED_INPUT = 1) or the run is over
        (RUN_DONE = 0); -1 when the engine stopped (its last_status says why)."""
        cdef int rc
        if self.in_pos >= self.in_n and not self.final:
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
        histogram in ticks with the long tail listed), row classes, column commands per PC."""
        cdef int64_t top = self.hist_cap
        while top > 0 and self.hist[top - 1] == 0:
            top -= 1
        cdef int64_t i
        hist = np.zeros(top, dtype=np.int64)
        for i in range(top):
            hist[i] = self.hist[i]
        tail = np.zeros(self.hx_n, dtype=np.int64)
        for i in range(self.hx_n):
            tail[i] = self.hx[i]
        return {"completed": self.n_done, "injected": self.n_injected,
                "end_tick": self.last_depart, "last_inject_tick": self.last_inject,
                "reads": self.n_lat, "latency_sum_ticks": self.lat_sum,
                "latency_hist": hist, "latency_tail": np.sort(tail),
                "hits": self.n_cls[0], "misses": self.n_cls[1], "conflicts": self.n_cls[2],
                "forwarded": self.n_fwd, "coalesced": self.n_coal,
                "pc_bursts": np.asarray(self.pc_bursts).copy()}

    def log_types(self):
        """Request type of every command logged during this run, in issue order: 0 read,
        1 write, -1 refresh (Ramulator 2.1's command-trace 'type')."""
        out = np.empty(self.lt_n, dtype=np.int8)
        for i in range(self.lt_n):
            out[i] = self.ltype[i]
        return out

    def take_log_types(self):
        """The request types of the commands logged since the last take_log_types (as
        log_types); empties the buffer, so a log streamed in pieces (Engine.take_log) keeps
        its types in step."""
        out = self.log_types()
        self.lt_n = 0
        return out

    # ---------------------------------------------------------------------------------------
    # Core (nogil)
    # ---------------------------------------------------------------------------------------
    cdef int _grow(self) noexcept nogil:
        """Double the request slots (or make the first 1024); 0 or E_NOMEM."""
        cdef int64_t ncap = self.cap * 2 if self.cap else 1024
        cdef int64_t i
        cdef ReqSlot* s
        cdef int32_t* f
        if ncap > (<int64_t>1 << 31) - 1:
            return E_NOMEM
        s = <ReqSlot*>realloc(self.sl, ncap * sizeof(ReqSlot))
        if s == NULL:
            return E_NOMEM
        self.sl = s
        f = <int32_t*>realloc(self.freel, ncap * sizeof(int32_t))
        if f == NULL:
            return E_NOMEM
        self.freel = f
        # new slots go on the free stack, lowest index on top
        for i in range(ncap - 1, self.cap - 1, -1):
            self.freel[self.n_free] = <int32_t>i
            self.n_free += 1
        self.cap = ncap
        return 0

    cdef int _count_latency(self, int64_t lat) noexcept nogil:
        cdef int64_t ncap, i
        cdef int64_t* h
        self.n_lat += 1
        self.lat_sum += lat
        if lat < HIST_FLAT:
            if lat >= self.hist_cap:
                ncap = self.hist_cap
                while ncap <= lat:
                    ncap *= 2
                h = <int64_t*>realloc(self.hist, ncap * sizeof(int64_t))
                if h == NULL:
                    return E_NOMEM
                for i in range(self.hist_cap, ncap):
                    h[i] = 0
                self.hist = h
                self.hist_cap = ncap
            self.hist[lat] += 1
            return 0
        if self.hx_n == self.hx_cap:
            ncap = self.hx_cap * 2 if self.hx_cap else 64
            h = <int64_t*>realloc(self.hx, ncap * sizeof(int64_t))
            if h == NULL:
                return E_NOMEM
            self.hx = h
            self.hx_cap = ncap
        self.hx[self.hx_n] = lat
        self.hx_n += 1
        return 0

    cdef int _log_type(self, int t) noexcept nogil:
        cdef int64_t ncap
        cdef int8_t* p
        if self.lt_n == self.lt_cap:
            ncap = self.lt_cap * 2 if self.lt_cap else 65536
            p = <int8_t*>realloc(self.ltype, ncap)
            if p == NULL:
                return E_NOMEM
            self.ltype = p
            self.lt_cap = ncap
        self.ltype[self.lt_n] = <int8_t>t
        self.lt_n += 1
        return 0

    cdef inline tick_t _al(self, int cmd, tick_t t) noexcept nogil:
        cdef tick_t m = self.amask[cmd]
        return (t + m) & ~m

    cdef inline void _inval_pc(self, int64_t q) noexcept nogil:
        """Rebuild every bank of PC q at its next look."""
        self.pfull[q] = 1
        self.pv[q] = 0

    cdef inline void _mark(self, int64_t b, int64_t q) noexcept nogil:
        """Bank b (of PC q) changed: rebuild its candidates at the PC's next look."""
        SIEVE_CHECK_INDEX(b, self.NB)
        self.pv[q] = 0
        if self.bs[b].valid:
            self.bs[b].valid = 0
            SIEVE_CHECK_INDEX(self.dn[q], self.bpp)
            self.dl[q * self.bpp + self.dn[q]] = <int32_t>b
            self.dn[q] += 1

    cdef inline void _inval_channel(self, int c) noexcept nogil:
        """Forget every cached candidate of channel c (its queue type or blocking changed)."""
        cdef int64_t q
        for q in range(<int64_t>c * self.n_pc_ch, <int64_t>(c + 1) * self.n_pc_ch):
            self._inval_pc(q)

    cdef inline void _freed(self, int64_t j, tick_t now) noexcept nogil:
        """ramulator2: a queue slot of (type, channel) j was freed at `now`; the front end,
        which ticks before the controller, sees it from now + 1."""
        if self.fr_tick[j] != now:
            self.fr_tick[j] = now
            self.fr_n[j] = 0
        self.fr_n[j] += 1

    cdef void _unlink(self, int32_t r, int typ, int64_t b, int64_t q) noexcept nogil:
        """Remove slot r from bank b's queue list of type typ (and the bank from its PC's
        list of banks with queued requests when the list empties)."""
        cdef int64_t NB = self.NB
        cdef int64_t j = typ * NB + b
        cdef int64_t lst, i, b2
        cdef int32_t prev = -1
        cdef int32_t r2 = self.bhead[j]
        while r2 != r:
            prev = r2
            r2 = self.sl[r2].next
        if prev == -1:
            self.bhead[j] = self.sl[r].next
        else:
            self.sl[prev].next = self.sl[r].next
        if self.btail[j] == r:
            self.btail[j] = prev
        self.sl[r].next = -1
        if self.bhead[j] == -1:
            # the bank leaves its PC's active list (swap-remove)
            lst = typ * self.n_pcs + q
            i = self.pact_pos[j]
            self.pact_n[lst] -= 1
            b2 = self.pact_list[typ * NB + q * self.bpp + self.pact_n[lst]]
            self.pact_list[typ * NB + q * self.bpp + i] = <int32_t>b2
            self.pact_pos[typ * NB + b2] = <int32_t>i
            self.pact_pos[j] = -1

    cdef void _build(self, int64_t b, int64_t q, int typ, bint blocked) noexcept nogil:
        """The candidates of bank b (see RBank) for queue type `typ`; `blocked`: queued
        requests may not issue (a refresh waits)."""
        cdef RBank* bk = &self.bs[b]
        cdef int32_t r, r2, hit, non, a
        cdef int orow = self.eng.open_row[b]
        cdef ReqSlot* sl = self.sl
        bk.valid = 1
        bk.nc = 0
        if self.ram:
            a = self.act_slot[b]
            if a != -1:
                self._add(bk, C_WR if sl[a].typ else C_RD, a, 4, 3 if sl[a].typ else 2)
            if blocked:
                return
            r = self.bhead[typ * self.NB + b]
            if r == -1:
                return
            if orow == -1:
                self._add(bk, C_ACT, r, 1, 0)
                return
            hit = -1
            non = -1
            r2 = r
            while r2 != -1 and (hit == -1 or non == -1):
                if sl[r2].row == orow:
                    if hit == -1:
                        hit = r2
                elif non == -1:
                    non = r2
                r2 = sl[r2].next
            if hit != -1:
                self._add(bk, C_WR if typ else C_RD, hit, 3, 2 + typ)
            if non != -1 and a == -1:
                self._add(bk, C_PRE, non, 1, 1)
            return
        if blocked or (self.ref_pend[q] and self.pend_bank[q] == b - q * self.bpp):
            return
        r = self.bhead[typ * self.NB + b]
        if r == -1:
            return  # (a bank folded in after an injection of the other type)
        if orow == -1:
            self._add(bk, C_ACT, r, 0, 0)
        else:
            # oldest request that hits the open row, else precharge
            r2 = r
            while r2 != -1 and sl[r2].row != orow:
                r2 = sl[r2].next
            if r2 != -1:
                self._add(bk, C_WR if typ else C_RD, r2, 1, 2 + typ)
            else:
                self._add(bk, C_PRE, r, 0, 1)

    cdef inline void _add(self, RBank* bk, int cmd, int32_t r, int rank, int grp) noexcept nogil:
        cdef RCand* cd = &bk.c[bk.nc]
        SIEVE_CHECK_INDEX(r, self.cap)
        SIEVE_CHECK_INDEX(bk.nc, 3)
        cd.cmd = cmd
        cd.slot = r
        cd.age = self.sl[r].id
        cd.rank = <int8_t>rank
        cd.grp = <int8_t>grp
        cd.where = -1
        bk.nc += 1

    # ---- per-PC candidate lists (see the class docstring) -------------------------------
    cdef inline void _cand_set(self, int64_t q, int64_t b, int k, int32_t i) noexcept nogil:
        """Write candidate k of bank b into entry i of PC q's list."""
        cdef RBank* bk = &self.bs[b]
        cdef RCand* cd = &bk.c[k]
        cdef int64_t o = q * self.lcap + i
        SIEVE_CHECK_INDEX(i, self.lcap)
        cd.where = i
        self.l2[o] = <int32_t>(bk.base[2] + cd.cmd)
        self.l3[o] = <int32_t>(bk.base[3] + cd.cmd)
        self.l4[o] = <int32_t>(bk.base[4] + cd.cmd)
        # FR-FCFS key: higher rank first, then older (rank <= 4 and ids < 2**58: feed)
        self.lk[o] = ((<int64_t>(7 - cd.rank)) << 58) | cd.age
        self.lg[o] = cd.grp
        self.li[o] = <int32_t>((b << 2) | k)

    cdef inline void _cand_put(self, int64_t q, int64_t b, int k) noexcept nogil:
        """Append candidate k of bank b to PC q's list."""
        self._cand_set(q, b, k, self.ln[q])
        self.ln[q] += 1

    cdef inline void _cand_del_at(self, int64_t q, int32_t i) noexcept nogil:
        """Remove entry i of PC q's list (the last entry takes its place)."""
        cdef int64_t o = q * self.lcap
        cdef int32_t n = self.ln[q] - 1
        cdef int32_t id
        SIEVE_CHECK_INDEX(i, n + 1)
        if i != n:
            id = self.li[o + n]
            self.l2[o + i] = self.l2[o + n]
            self.l3[o + i] = self.l3[o + n]
            self.l4[o + i] = self.l4[o + n]
            self.lk[o + i] = self.lk[o + n]
            self.lg[o + i] = self.lg[o + n]
            self.li[o + i] = id
            self.bs[(id >> 2)].c[(id & 3)].where = i
        self.ln[q] = n

    cdef void _rebuild(self, int64_t q, int typ, bint blocked) noexcept nogil:
        """Bring PC q's candidate list up to date: rebuild the banks on its list (or every
        bank), as a scan over its banks with queued (ramulator2: or active) requests would."""
        cdef int64_t b, i, n, b0
        cdef int k, j, old_n
        cdef int32_t old_w[3]
        cdef RBank* bk
        b0 = q * self.bpp
        if self.pfull[q]:
            self.pfull[q] = 0
            self.ln[q] = 0
            self.dn[q] = 0
            for b in range(b0, b0 + self.bpp):
                self.bs[b].valid = 1
                self.bs[b].nc = 0
            n = 0 if blocked else self.pact_n[typ * self.n_pcs + q]
            for i in range(n):
                b = self.pact_list[typ * self.NB + b0 + i]
                self._build(b, q, typ, blocked)
                for k in range(self.bs[b].nc):
                    self._cand_put(q, b, k)
            n = self.an[q] if self.ram else 0
            for i in range(n):
                b = self.alist[b0 + i]
                if blocked or self.pact_pos[typ * self.NB + b] == -1:  # (else built above)
                    self._build(b, q, typ, blocked)
                    for k in range(self.bs[b].nc):
                        self._cand_put(q, b, k)
            return
        n = self.dn[q]
        for i in range(n):
            b = self.dl[b0 + i]
            bk = &self.bs[b]
            # the bank's new candidates take its old ones' list entries, in order
            old_n = bk.nc
            for k in range(old_n):
                old_w[k] = bk.c[k].where
            bk.valid = 1
            bk.nc = 0
            if (not blocked and self.pact_pos[typ * self.NB + b] != -1) or (
                    self.ram and self.act_slot[b] != -1):
                self._build(b, q, typ, blocked)
            for k in range(bk.nc):
                if k < old_n:
                    self._cand_set(q, b, k, old_w[k])
                else:
                    self._cand_put(q, b, k)
            # old entries left over go, highest list index first (so that no entry still
            # to go is moved by a removal)
            while old_n > bk.nc:
                j = bk.nc
                for k in range(bk.nc + 1, old_n):
                    if old_w[k] > old_w[j]:
                        j = k
                self._cand_del_at(q, old_w[j])
                old_w[j] = old_w[old_n - 1]
                old_n -= 1
        self.dn[q] = 0

    cdef inline tick_t _tick(self, int64_t b, int cmd, int64_t chb, int64_t pcb,
                             tick_t now) noexcept nogil:
        """Earliest tick of `cmd` at bank b (every level of its path), at or after `now`."""
        cdef const int64_t* R = &self.eng.ready[0]
        cdef RBank* bk = &self.bs[b]
        return self._al(cmd, _max(_max(_max(R[chb + cmd], R[pcb + cmd]), now),
                                  _max(_max(R[bk.base[2] + cmd], R[bk.base[3] + cmd]),
                                       R[bk.base[4] + cmd])))

    cdef void _look(self, int64_t q, int64_t chb, int typ, bint blocked, tick_t now,
                    Best* best) noexcept nogil:
        """The best candidate of PC q at `now` (FR-FCFS: earliest tick, then rank, then
        age); best.cmd = -1 when it has none. ``chb``: offset of its channel's row in
        `ready`."""
        cdef const int64_t* R = &self.eng.ready[0]
        cdef int64_t pcb = self.eng.lvl_off[1] + q * self.n_cmd
        cdef int64_t o = q * self.lcap
        cdef int32_t i, n, mi, id, g
        cdef tick_t e, m
        cdef int64_t mk
        cdef tick_t G[4]
        cdef tick_t M[4]
        cdef RCand* cd
        cdef const int32_t* l2
        cdef const int32_t* l3
        cdef const int32_t* l4
        cdef const int64_t* lk
        cdef const int32_t* lg
        if self.pv[q]:
            # the cached best stands if its tick has not moved (see the class docstring)
            id = self.pid[q]
            cd = &self.bs[id >> 2].c[id & 3]
            if self._tick(id >> 2, cd.cmd, chb, pcb, now) == self.pt[q]:
                best.t = self.pt[q]
                best.cmd = cd.cmd
                best.slot = cd.slot
                best.age = cd.age
                best.rank = cd.rank
                best.bank = id >> 2
                if SIEVE_DEBUG_BUILD:
                    self._check_look(q, chb, now, best)
                return
        if self.pfull[q] or self.dn[q]:
            self._rebuild(q, typ, blocked)
        best.cmd = -1
        best.t = T_INF
        best.rank = -1
        best.age = AGE_INF
        best.slot = -1
        best.bank = -1
        n = self.ln[q]
        if n == 0:
            self.pv[q] = 0
            return
        # per group: channel- and PC-level ready tick (at least `now`) and alignment mask
        G[0] = _max(_max(R[chb + C_ACT], R[pcb + C_ACT]), now)
        G[1] = _max(_max(R[chb + C_PRE], R[pcb + C_PRE]), now)
        G[2] = _max(_max(R[chb + C_RD], R[pcb + C_RD]), now)
        G[3] = _max(_max(R[chb + C_WR], R[pcb + C_WR]), now)
        M[0] = self.amask[C_ACT]
        M[1] = self.amask[C_PRE]
        M[2] = self.amask[C_RD]
        M[3] = self.amask[C_WR]
        l2 = &self.l2[o]
        l3 = &self.l3[o]
        l4 = &self.l4[o]
        lk = &self.lk[o]
        lg = &self.lg[o]
        m = T_INF
        mk = AGE_INF
        mi = 0
        for i in range(n):
            g = lg[i]
            e = _max(_max(R[l2[i]], R[l3[i]]), _max(R[l4[i]], G[g]))
            e = (e + M[g]) & ~M[g]
            if e <= m:
                if e < m or lk[i] < mk:
                    m = e
                    mk = lk[i]
                    mi = i
        id = self.li[o + mi]
        cd = &self.bs[id >> 2].c[id & 3]
        best.t = m
        best.cmd = cd.cmd
        best.slot = cd.slot
        best.age = cd.age
        best.rank = cd.rank
        best.bank = id >> 2
        self.pv[q] = 1
        self.pt[q] = m
        self.pid[q] = id
        if SIEVE_DEBUG_BUILD:
            self._check_look(q, chb, now, best)

    cdef void _check_look(self, int64_t q, int64_t chb, tick_t now, Best* best) noexcept nogil:
        """Debug builds: the candidate list matches the banks' candidates, and the best is
        the FR-FCFS minimum over all of them (aborts otherwise)."""
        cdef int64_t pcb = self.eng.lvl_off[1] + q * self.n_cmd
        cdef int64_t o = q * self.lcap
        cdef int32_t i
        cdef int gc
        cdef int64_t b, bad = 0
        cdef tick_t e, bt = T_INF, bage = AGE_INF
        cdef int brank = -1
        cdef RBank* bk
        cdef RCand* cd
        for i in range(self.ln[q]):
            b = self.li[o + i] >> 2
            bk = &self.bs[b]
            cd = &bk.c[self.li[o + i] & 3]
            gc = C_ACT if cd.grp == 0 else C_PRE if cd.grp == 1 else C_RD if cd.grp == 2 else C_WR
            if (cd.where != i or cd.cmd != gc or self.lg[o + i] != cd.grp
                    or self.l2[o + i] != bk.base[2] + gc or self.l3[o + i] != bk.base[3] + gc
                    or self.l4[o + i] != bk.base[4] + gc
                    or self.lk[o + i] != ((<int64_t>(7 - cd.rank)) << 58) | cd.age
                    or b // self.bpp != q or not bk.valid or (self.li[o + i] & 3) >= bk.nc):
                bad = 1
            e = self._tick(b, gc, chb, pcb, now)
            if e < bt or (e == bt and (cd.rank > brank or (cd.rank == brank
                                                            and cd.age < bage))):
                bt = e
                brank = cd.rank
                bage = cd.age
        if bt != best.t or (best.cmd >= 0 and (brank != best.rank or bage != best.age)):
            bad = 1
        SIEVE_CHECK_INDEX(-bad, 1)  # aborts with a message when the lists are inconsistent

    cdef inline bint _rate_full(self, tick_t now) noexcept nogil:
        """The front end has injected all it may at tick `now` (``inject_per_tick``; one at
        tick 0 in the ramulator2 lifecycle, whose front end ticks once before the first
        memory tick)."""
        if self.inj_limit == 0 or self.inj_tick != now:
            return False
        return self.inj_cnt >= (1 if (self.ram and now == 0) else self.inj_limit)

    cdef bint _buffered_write(self, int64_t p, int64_t b) noexcept nogil:
        """ramulator2: input request p has the address of a queued (not active) write, so it
        is forwarded (a read) or coalesced (a write). ``b``: its global bank, -1 = compute."""
        cdef int32_t r2
        cdef int64_t q
        if b < 0:
            q = <int64_t>self.i_ch[p] * self.n_pc_ch + self.i_pc[p]
            b = ((q * self.eng.cnt[2] + self.i_sid[p]) * self.eng.cnt[3] + self.i_bg[p]) \
                * self.eng.cnt[4] + self.i_ba[p]
        SIEVE_CHECK_INDEX(b, self.NB)
        r2 = self.bhead[self.NB + b]
        while r2 != -1 and self.sl[r2].addr != self.i_addr[p]:
            r2 = self.sl[r2].next
        return r2 != -1

    cdef inline bint _closes_active(self, int cmd, int64_t q, int64_t b) noexcept nogil:
        """ramulator2 would_close_active: a closing command to a bank (or PC) that has an
        active request."""
        cdef int kind = self.eng.cmd_kind[cmd]
        if kind != K_CLOSE:
            return False
        if self.eng.cmd_scope[cmd] == LV_BANK:
            return self.act_slot[b] != -1
        return self.an[q] > 0

    cdef int _run(self):
        cdef Engine eng = self.eng
        cdef int64_t NB = self.NB
        cdef int64_t n_pcs = self.n_pcs
        cdef int n_ch = self.n_ch
        cdef int n_pc_ch = self.n_pc_ch
        cdef int bpp = self.bpp
        cdef int Q = self.Q
        cdef int n_cmd = self.n_cmd
        cdef bint ram = self.ram
        cdef bint perbank = self.perbank
        cdef int inj_limit = self.inj_limit
        cdef tick_t lead = self.ref_lead
        cdef int64_t* R = &eng.ready[0]
        cdef int64_t* next_ref = &eng.ref_due[0]
        cdef int32_t* rr = &eng.ref_rr[0]
        cdef int nodes[5]
        cdef int64_t b, q, q0, p, j, i, head, chb
        cdef int32_t r, r2, a
        cdef int c, l, k, cmd, typ, kind, best_c, bcmd, brank, bk_i, cls
        cdef int32_t bslot
        cdef int64_t bage, bbank
        cdef tick_t now = self.now
        cdef tick_t e, bt, best_t, t_inj, dep
        cdef int rc = E_OK
        cdef int out = RUN_DONE
        cdef bint last, better, blocked
        cdef ReqSlot* s
        cdef RBank* bk
        cdef Best pb
        with nogil:
            while True:
                self.it += 1
                if (self.it & SIGNAL_MASK) == 0 and _check_signals() != E_OK:
                    eng.status = E_INTERRUPT
                    out = RUN_ERROR
                    break
                # ---- 1. inject requests that have arrived, in order, until a queue is full
                while self.in_pos < self.in_n:
                    p = self.in_pos
                    if self.i_arr[p] > now:
                        break
                    if self._rate_full(now):
                        break
                    c = self.i_ch[p]
                    typ = 1 if self.i_wr[p] else 0
                    q = <int64_t>c * n_pc_ch + self.i_pc[p]
                    b = ((q * eng.cnt[2] + self.i_sid[p]) * eng.cnt[3] + self.i_bg[p]) \
                        * eng.cnt[4] + self.i_ba[p]
                    SIEVE_CHECK_INDEX(b, NB)
                    if self.fwd and self._buffered_write(p, b):
                        # a queued write to the same address serves a read at once and
                        # absorbs a write (neither takes a queue slot)
                        dep = now if typ else now + 1
                        if not typ:
                            self.n_fwd += 1
                            rc = self._count_latency(1)
                        else:
                            self.n_coal += 1
                        if dep > self.last_depart:
                            self.last_depart = dep
                        if self.outs:
                            self.o_inject[self.id_next] = now
                            self.o_depart[self.id_next] = dep
                            self.o_class[self.id_next] = -1
                        if self.inj_tick != now:
                            self.inj_tick = now
                            self.inj_cnt = 0
                        self.inj_cnt += 1
                        self.last_inject = now
                        self.id_next += 1
                        self.n_injected += 1
                        self.n_done += 1
                        self.in_pos += 1
                        if rc != E_OK:
                            break
                        continue
                    j = typ * n_ch + c
                    if self.qlen[j] + (self.fr_n[j] if self.fr_tick[j] == now else 0) >= Q:
                        break
                    if self.n_free == 0 and self._grow() != 0:
                        rc = E_NOMEM
                        break
                    self.n_free -= 1
                    r = self.freel[self.n_free]
                    if self.nfl[c] == 0:
                        self.prog[c] = now  # the channel has work from now on (watchdog)
                    s = &self.sl[r]
                    s.id = self.id_next
                    s.inject = now
                    s.addr = self.i_addr[p]
                    s.row = self.i_row[p]
                    s.col = self.i_col[p]
                    s.bank = <int32_t>b
                    s.next = -1
                    s.issued = 0
                    s.typ = <int8_t>typ
                    s.cls = -1
                    j = typ * NB + b
                    if self.bhead[j] == -1:
                        self.bhead[j] = r
                        i = typ * n_pcs + q
                        self.pact_pos[j] = self.pact_n[i]
                        self.pact_list[typ * NB + q * bpp + self.pact_n[i]] = <int32_t>b
                        self.pact_n[i] += 1
                    else:
                        self.sl[self.btail[j]].next = r
                    self.btail[j] = r
                    self.qlen[typ * n_ch + c] += 1
                    self.nfl[c] += 1
                    if self.outs:
                        self.o_inject[self.id_next] = now
                        self.o_class[self.id_next] = -1
                    if self.inj_tick != now:
                        self.inj_tick = now
                        self.inj_cnt = 0
                    self.inj_cnt += 1
                    self.last_inject = now
                    self.id_next += 1
                    self.n_injected += 1
                    self.in_pos += 1
                    self._mark(b, q)  # one bank of the PC changed
                    self.cv[c] = 0
                if rc != E_OK:
                    eng.status = rc
                    out = RUN_ERROR
                    break
                if self.in_pos >= self.in_n:
                    if not self.final:
                        out = RUN_NEED_INPUT
                        break
                    if self.n_done == self.n_injected:
                        out = RUN_DONE
                        break

                # ---- 2. refreshes that have become due
                if self.next_ref_min <= now:
                    self.next_ref_min = T_INF
                    for q in range(n_pcs):
                        if self.ref_pend[q] == 0 and next_ref[q] - lead <= now:
                            self.ref_pend[q] = 1
                            c = <int>(q // n_pc_ch)
                            if perbank:
                                self.pend_bank[q] = rr[q]
                            if ram:
                                self.chblk[c] += 1
                                self._inval_channel(c)
                            else:
                                self._inval_pc(q)
                            self.cv[c] = 0
                        if self.ref_pend[q] == 0 and next_ref[q] - lead < self.next_ref_min:
                            self.next_ref_min = next_ref[q] - lead

                # ---- 3. each channel's best command
                best_t = T_INF
                best_c = -1
                for c in range(n_ch):
                    if not self.cv[c]:
                        # write-mode hysteresis
                        if self.wmode[c]:
                            if self.qlen[n_ch + c] == 0 or (self.qlen[n_ch + c] <= self.lo
                                                            and self.qlen[c] > 0):
                                self.wmode[c] = 0
                                self._inval_channel(c)
                        elif self.qlen[n_ch + c] >= self.hi or (self.qlen[c] == 0
                                                                and self.qlen[n_ch + c] > 0):
                            self.wmode[c] = 1
                            self._inval_channel(c)
                        typ = self.wmode[c]
                        bt = T_INF
                        bcmd = -1
                        bslot = -1
                        brank = -1
                        bage = AGE_INF
                        bbank = -1
                        head = -1
                        q0 = <int64_t>c * n_pc_ch
                        chb = eng.lvl_off[0] + <int64_t>c * n_cmd
                        for q in range(q0, q0 + n_pc_ch):
                            # refresh commands of a due pseudo-channel (priority over requests;
                            # ramulator2: only the head of the refresh FIFO)
                            if self.ref_pend[q] and head == -1:
                                if ram:
                                    head = q
                                cmd = eng._ref_cmd(q, &b)
                                if not (ram and self._closes_active(cmd, q, b)):
                                    e = 0
                                    for l in range(eng.cmd_scope[cmd] + 1):
                                        e = _max(e, R[self.bs[b].base[l] + cmd])
                                    e = self._al(cmd, _max(e, now))
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
                            if ram:
                                blocked = self.chblk[c] != 0
                            else:
                                blocked = self.ref_pend[q] and not perbank
                            self._look(q, chb, typ, blocked, now, &pb)
                            if pb.cmd >= 0:
                                better = (pb.t < bt) | ((pb.t == bt) & ((pb.rank > brank) | (
                                    (pb.rank == brank) & (pb.age < bage))))
                                if better:
                                    bt = pb.t
                                    bcmd = pb.cmd
                                    bslot = pb.slot
                                    bage = pb.age
                                    brank = pb.rank
                                    bbank = pb.bank
                        self.cv[c] = 1
                        self.ct[c] = bt
                        self.ccmd[c] = bcmd
                        self.cslot[c] = bslot
                        self.cbank[c] = bbank
                    if self.ct[c] < best_t:
                        best_t = self.ct[c]
                        best_c = c

                # ---- 4. the next event: injection, refresh due, or a command issue
                t_inj = T_INF
                if self.in_pos < self.in_n:
                    p = self.in_pos
                    c = self.i_ch[p]
                    typ = 1 if self.i_wr[p] else 0
                    j = typ * n_ch + c
                    if self.fwd and self._buffered_write(p, -1):
                        # (forwarded or coalesced: needs no queue slot)
                        t_inj = _max(self.i_arr[p], now)
                        if t_inj == now and self._rate_full(now):
                            t_inj = now + 1
                    elif self.qlen[j] < Q:
                        t_inj = _max(self.i_arr[p], now)
                        if t_inj == now and (
                                (self.fr_tick[j] == now and self.qlen[j] + self.fr_n[j] >= Q)
                                or self._rate_full(now)):
                            t_inj = now + 1
                if t_inj <= best_t and t_inj < T_INF:
                    now = t_inj
                    continue
                if self.next_ref_min <= best_t and self.next_ref_min < T_INF:
                    now = _max(self.next_ref_min, now)
                    continue
                if best_c < 0:
                    eng.status = E_STALL  # nothing can ever issue: should not happen
                    out = RUN_ERROR
                    break

                # ---- 5. issue the chosen command
                now = best_t
                c = best_c
                cmd = self.ccmd[c]
                r = self.cslot[c]
                b = self.cbank[c]
                SIEVE_CHECK_INDEX(b, NB)
                bk = &self.bs[b]
                for l in range(N_LEVELS):
                    nodes[l] = bk.node[l]
                q = nodes[1]
                self.cv[c] = 0
                kind = eng.cmd_kind[cmd]
                if kind == K_READ or kind == K_WRITE:
                    self.prog[c] = now
                elif now - self.prog[c] > self.stall_limit and self.nfl[c] > 0:
                    eng.status = E_STALL  # livelock: requests in flight, no column command for long
                    out = RUN_ERROR
                    break
                if r < 0:
                    # refresh sequence of pseudo-channel q
                    rc = eng._issue(cmd, nodes, -1, -1, now)
                    if rc == E_OK and eng.log_on:
                        rc = self._log_type(-1)
                    if cmd == C_REFAB or cmd == C_REFPB:
                        self.ref_pend[q] = 0
                        eng._ref_done(q)
                        self.pend_bank[q] = -1
                        if next_ref[q] - lead < self.next_ref_min:
                            self.next_ref_min = next_ref[q] - lead
                        if ram:
                            self.chblk[c] -= 1
                    if ram:
                        self._inval_channel(c)
                    else:
                        self._inval_pc(q)
                else:
                    s = &self.sl[r]
                    typ = s.typ
                    if s.cls == -1:
                        cls = 0 if (kind == K_READ or kind == K_WRITE) else (1 if cmd == C_ACT else 2)
                        s.cls = <int8_t>cls
                        self.n_cls[cls] += 1
                    if kind == K_READ or kind == K_WRITE:
                        last = s.issued + 1 == self.bursts
                        if self.closed_page and last:
                            # auto-precharge unless another request in flight hits this row
                            r2 = self.bhead[b]
                            while r2 != -1 and (r2 == r or self.sl[r2].row != s.row):
                                r2 = self.sl[r2].next
                            if r2 == -1:
                                r2 = self.bhead[NB + b]
                                while r2 != -1 and (r2 == r or self.sl[r2].row != s.row):
                                    r2 = self.sl[r2].next
                            if r2 == -1 and ram:
                                a = self.act_slot[b]
                                if a != -1 and a != r and self.sl[a].row == s.row:
                                    r2 = a
                            if r2 == -1:
                                cmd = C_WRA if typ else C_RDA
                        rc = eng._issue(cmd, nodes, s.row, s.col + s.issued, now)
                        if rc == E_OK and eng.log_on:
                            rc = self._log_type(typ)
                        s.issued += 1
                        self.pc_bursts[q] += 1
                        if last:
                            dep = now + (eng.write_lat if typ else eng.read_lat)
                            if dep > self.last_depart:
                                self.last_depart = dep
                            if not typ and rc == E_OK:
                                rc = self._count_latency(dep - s.inject)
                            if self.outs:
                                self.o_depart[s.id] = dep
                                self.o_class[s.id] = s.cls
                            self.n_done += 1
                            self.nfl[c] -= 1
                            if ram and self.act_slot[b] == r:
                                # retire from the active buffer
                                self.act_slot[b] = -1
                                i = self.apos[b]
                                self.an[q] -= 1
                                j = self.alist[q * bpp + self.an[q]]
                                self.alist[q * bpp + i] = <int32_t>j
                                self.apos[j] = <int32_t>i
                                self.apos[b] = -1
                            else:
                                self._unlink(r, typ, b, q)
                                self.qlen[typ * n_ch + c] -= 1
                                if ram:
                                    self._freed(typ * n_ch + c, now)
                            self.freel[self.n_free] = r
                            self.n_free += 1
                    else:
                        rc = eng._issue(cmd, nodes, s.row, -1, now)
                        if rc == E_OK and eng.log_on:
                            rc = self._log_type(typ)
                        if ram and cmd == C_ACT:
                            # the request moves to the active buffer, freeing its queue slot
                            self._unlink(r, typ, b, q)
                            self.qlen[typ * n_ch + c] -= 1
                            self._freed(typ * n_ch + c, now)
                            self.act_slot[b] = r
                            self.apos[b] = self.an[q]
                            self.alist[q * bpp + self.an[q]] = <int32_t>b
                            self.an[q] += 1
                if ram and (kind != K_READ and kind != K_WRITE and kind != K_READ_AP
                            and kind != K_WRITE_AP):
                    # Ramulator's controller fills its column slot before its row slot in a
                    # tick: after a row command, no column command in this channel this tick
                    for k in range(4):
                        l = C_RD if k == 0 else C_WR if k == 1 else C_RDA if k == 2 else C_WRA
                        i = eng.lvl_off[0] + <int64_t>c * n_cmd + l
                        if R[i] < now + 1:
                            R[i] = now + 1
                # the bank changed (every look reads the ready times afresh)
                self._mark(b, q)
                if rc != E_OK:
                    eng.status = rc
                    out = RUN_ERROR
                    break
        self.now = now
        return out


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
    np.asarray(out_pc_bursts)[:] += run.stats()["pc_bursts"]
    if rc != RUN_DONE:
        return -1
    return run.end_tick
