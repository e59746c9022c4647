# Schedule.lookahead compiled (sieve/system/dag.py is the only importer; it also holds the
# pure-Python reference, Schedule.lookahead_reference, that tests compare this with start for
# start). The look is a list schedule of the tasks not placed yet, by the rules of
# Schedule.run, on copies of the schedule's state; under two-batch overlap sieve-cp runs one
# per split it rates, and in Python it was ~94 % of such a run's time (docs/performance.md).
#
# The same algorithm as the reference, step for step, so that every start comes out the same
# to the last bit: the heap is heapq's (the same sift-up and sift-down on the same
# (start, priority, id) order, so even its layout is the same), Python's max/min and sum are
# written out as Python evaluates them (max(a, b) is b only if b > a; a sum adds from 0.0 in
# order), and a lane's shadow keeps its sharers in join order. What changes is the state's
# home: per task (by its id, which is dense: the schedule's tasks 0..N-1, then the look's new
# ones) in arrays stamped with the look's number, so a look touches only what it reaches;
# per lane (by an index kept for the schedule's life) likewise. Python objects stay where the
# callers see them: the Task objects, `dur`, `expand` and its `add`, the result dict.

from libc.math cimport fabs
from libc.stdint cimport int8_t, int64_t

import numpy as np

from sieve.errors import ConfigError


cdef struct Entry:
    double key      # earliest start (a lower bound while it sits in the heap)
    int64_t pr      # priority
    int64_t tid     # task id


cdef inline bint _lt(Entry a, Entry b) noexcept nogil:
    """(key, pr, tid) < (key, pr, tid) as Python compares tuples: at the first item that is
    not equal (a NaN key is never equal), ``<`` on that item."""
    if not (a.key == b.key):
        return a.key < b.key
    if a.pr != b.pr:
        return a.pr < b.pr
    return a.tid < b.tid


cdef inline double _max(double a, double b) noexcept nogil:
    """Python's max(a, b): the first unless the second is greater."""
    return b if b > a else a


def _grown(a, Py_ssize_t old, Py_ssize_t n, dtype, fill):
    """A copy of array ``a`` (its first ``old`` items; None: none) grown to ``n``."""
    b = np.full(n, fill, dtype=dtype)
    if a is not None:
        b[:old] = a[:old]
    return b


def _grown2(a, Py_ssize_t old_n, Py_ssize_t old_m, Py_ssize_t n, Py_ssize_t m, dtype):
    b = np.zeros((n, m), dtype=dtype)
    if a is not None:
        b[:old_n, :old_m] = a[:old_n, :old_m]
    return b


_ENTRY = np.dtype([("key", "f8"), ("pr", "i8"), ("tid", "i8")])


cdef class Look:
    """The state of one schedule's looks, kept between them (arrays grow, never shrink)."""

    # per task, by id
    cdef int64_t[::1] st_end, st_left, st_rel
    cdef double[::1] end, dep_end
    cdef int64_t[::1] left, lane_off, lane_cnt
    cdef Py_ssize_t cap_t
    # per lane, by index
    cdef dict lane_ix
    cdef list lane_names
    cdef int8_t[::1] lane_shared  # 1 shared, 0 unary, -1 not asked yet
    cdef int64_t[::1] st_lf, st_slot, slot
    cdef double[::1] lf
    cdef Py_ssize_t cap_l
    # the look's lane pool (each readied task's lane indices), heap, shadows
    cdef int64_t[::1] pool
    cdef Py_ssize_t n_pool
    cdef Entry[::1] heap
    cdef Py_ssize_t n_heap
    cdef int64_t[::1] sh_lane, sh_n, sh_hasnext
    cdef double[::1] sh_clock, sh_next
    cdef int64_t[:, ::1] sh_tid
    cdef double[:, ::1] sh_rem, sh_work
    cdef Py_ssize_t n_slots, cap_sn, cap_sm
    # the look in progress
    cdef int64_t stamp
    cdef readonly bint active
    cdef object is_shared
    cdef list tasks, new  # the schedule's tasks (by id), the look's new ones (id - n_reg)
    cdef Py_ssize_t n_reg
    cdef dict succ, more

    def __cinit__(self):
        self.lane_ix = {}
        self.lane_names = []
        self.stamp = 0
        self.active = False
        self.cap_t = self.cap_l = self.cap_sn = self.cap_sm = 0
        self._grow_tasks(1024)
        self._grow_lanes(64)
        self._grow_slots(16, 8)
        self.pool = np.zeros(1024, dtype=np.int64)
        self.heap = np.zeros(1024, dtype=_ENTRY)
        self.n_slots = 0

    # ---- storage ---------------------------------------------------------------------------
    cdef int _grow_tasks(self, Py_ssize_t n) except -1:
        cdef Py_ssize_t old = self.cap_t
        if n <= old:
            return 0
        n = max(n, 2 * old)
        self.st_end = _grown(self.st_end.base if old else None, old, n, np.int64, 0)
        self.st_left = _grown(self.st_left.base if old else None, old, n, np.int64, 0)
        self.st_rel = _grown(self.st_rel.base if old else None, old, n, np.int64, 0)
        self.end = _grown(self.end.base if old else None, old, n, np.float64, 0.0)
        self.dep_end = _grown(self.dep_end.base if old else None, old, n, np.float64, 0.0)
        self.left = _grown(self.left.base if old else None, old, n, np.int64, 0)
        self.lane_off = _grown(self.lane_off.base if old else None, old, n, np.int64, 0)
        self.lane_cnt = _grown(self.lane_cnt.base if old else None, old, n, np.int64, 0)
        self.cap_t = n
        return 0

    cdef int _grow_lanes(self, Py_ssize_t n) except -1:
        cdef Py_ssize_t old = self.cap_l
        if n <= old:
            return 0
        n = max(n, 2 * old)
        self.lane_shared = _grown(self.lane_shared.base if old else None, old, n, np.int8, -1)
        self.st_lf = _grown(self.st_lf.base if old else None, old, n, np.int64, 0)
        self.st_slot = _grown(self.st_slot.base if old else None, old, n, np.int64, 0)
        self.slot = _grown(self.slot.base if old else None, old, n, np.int64, -1)
        self.lf = _grown(self.lf.base if old else None, old, n, np.float64, 0.0)
        self.cap_l = n
        return 0

    cdef int _grow_slots(self, Py_ssize_t n, Py_ssize_t m) except -1:
        cdef Py_ssize_t old_n = self.cap_sn, old_m = self.cap_sm
        if n <= old_n and m <= old_m:
            return 0
        n = max(n, 2 * old_n) if n > old_n else old_n
        m = max(m, 2 * old_m) if m > old_m else old_m
        self.sh_lane = _grown(self.sh_lane.base if old_n else None, old_n, n, np.int64, 0)
        self.sh_n = _grown(self.sh_n.base if old_n else None, old_n, n, np.int64, 0)
        self.sh_hasnext = _grown(self.sh_hasnext.base if old_n else None, old_n, n, np.int64, 0)
        self.sh_clock = _grown(self.sh_clock.base if old_n else None, old_n, n, np.float64, 0.0)
        self.sh_next = _grown(self.sh_next.base if old_n else None, old_n, n, np.float64, 0.0)
        self.sh_tid = _grown2(self.sh_tid.base if old_n else None, old_n, old_m, n, m, np.int64)
        self.sh_rem = _grown2(self.sh_rem.base if old_n else None, old_n, old_m, n, m, np.float64)
        self.sh_work = _grown2(self.sh_work.base if old_n else None, old_n, old_m, n, m, np.float64)
        self.cap_sn = n
        self.cap_sm = m
        return 0

    cdef Py_ssize_t _lane(self, object name) except -1:
        """The lane's index (made on first sight, for the schedule's life)."""
        cdef object ix = self.lane_ix.get(name)
        cdef Py_ssize_t i
        if ix is not None:
            return <Py_ssize_t>ix
        i = len(self.lane_names)
        self._grow_lanes(i + 1)
        self.lane_ix[name] = i
        self.lane_names.append(name)
        return i

    cdef Py_ssize_t _kind(self, Py_ssize_t lane) except -2:
        """As the reference's ``shared(lane)``: the lane's shadow slot in this look (made, after
        the schedule's shared lanes' ones, the first time it is asked for), -1 if unary."""
        cdef Py_ssize_t s
        if self.st_slot[lane] == self.stamp:
            return self.slot[lane]
        if self.lane_shared[lane] < 0:
            self.lane_shared[lane] = 1 if self.is_shared(self.lane_names[lane]) else 0
        s = -1
        if self.lane_shared[lane]:
            s = self._new_slot(lane)
        self.st_slot[lane] = self.stamp
        self.slot[lane] = s
        return s

    cdef Py_ssize_t _new_slot(self, Py_ssize_t lane) except -1:
        cdef Py_ssize_t s = self.n_slots
        self._grow_slots(s + 1, 1)
        self.n_slots = s + 1
        self.sh_lane[s] = lane
        self.sh_n[s] = 0
        self.sh_hasnext[s] = 0
        self.sh_clock[s] = 0.0
        return s

    cdef Py_ssize_t _ours(self, object t) except -2:
        """The task's id if it is one of this look's (the schedule's or added), else -1."""
        cdef object i = t.id
        cdef Py_ssize_t k
        if type(i) is not int:
            return -1
        k = i
        if 0 <= k < self.n_reg:  # (a callback may have emptied the schedule's list)
            return k if k < len(self.tasks) and self.tasks[k] is t else -1
        if self.n_reg <= k < self.n_reg + len(self.new):
            return k if self.new[k - self.n_reg] is t else -1
        return -1

    cdef object _obj(self, Py_ssize_t tid):
        if tid < self.n_reg:
            if tid >= len(self.tasks):
                raise ConfigError("schedule: the schedule's tasks changed during a look")
            return self.tasks[tid]
        return self.new[tid - self.n_reg]

    # ---- the shadows (as the reference's _Shadow) -----------------------------------------
    cdef int _advance(self, Py_ssize_t s, double to) except -1:
        cdef Py_ssize_t j, n = self.sh_n[s]
        cdef double step, v
        if n and to > self.sh_clock[s]:
            step = (to - self.sh_clock[s]) / n
            for j in range(n):
                v = self.sh_rem[s, j] - step
                self.sh_rem[s, j] = 0.0 if 0.0 > v else v
        self.sh_clock[s] = _max(self.sh_clock[s], to)
        return 0

    cdef double _next_end(self, Py_ssize_t s) except? -1.0:
        """As _Shadow.next_end_ns: kept until a sharer joins or ends."""
        cdef Py_ssize_t j, n
        cdef double m
        if not self.sh_hasnext[s]:
            n = self.sh_n[s]
            m = self.sh_rem[s, 0]
            for j in range(1, n):
                if self.sh_rem[s, j] < m:
                    m = self.sh_rem[s, j]
            self.sh_next[s] = self.sh_clock[s] + n * m
            self.sh_hasnext[s] = 1
        return self.sh_next[s]

    cdef double _empty(self, Py_ssize_t s) except? -1.0:
        cdef Py_ssize_t j
        cdef double acc = 0.0
        for j in range(self.sh_n[s]):
            acc += self.sh_rem[s, j]
        return self.sh_clock[s] + acc

    cdef int _join(self, Py_ssize_t s, Py_ssize_t tid, double at, double work) except -1:
        cdef Py_ssize_t n
        self._advance(s, at)
        n = self.sh_n[s]
        self._grow_slots(1, n + 1)
        self.sh_tid[s, n] = tid
        self.sh_rem[s, n] = work
        self.sh_work[s, n] = work
        self.sh_n[s] = n + 1
        self.sh_hasnext[s] = 0
        return 0

    cdef int _settle(self, Py_ssize_t s, double at) except -1:
        """Advance the shadow to ``at`` (its next end), take out the sharers that end there
        and finish them in the look (lane free, successors), in join order."""
        cdef Py_ssize_t j, k, n = self.sh_n[s], first = 0, lane = self.sh_lane[s]
        cdef double tol, a, b
        cdef list ended = []
        for j in range(1, n):  # min by (work left, id): the first of equals
            a = self.sh_rem[s, j]
            b = self.sh_rem[s, first]
            if (a < b) if not (a == b) else (self.sh_tid[s, j] < self.sh_tid[s, first]):
                first = j
        tol = 1e-9 * _max(self.sh_work[s, first], 1.0)
        self._advance(s, at)
        self.sh_rem[s, first] = 0.0
        k = 0
        for j in range(n):
            if self.sh_rem[s, j] <= tol:
                ended.append(self.sh_tid[s, j])
            else:
                self.sh_tid[s, k] = self.sh_tid[s, j]
                self.sh_rem[s, k] = self.sh_rem[s, j]
                self.sh_work[s, k] = self.sh_work[s, j]
                k += 1
        self.sh_n[s] = k
        self.sh_hasnext[s] = 0
        for tid in ended:
            self._set_lf(lane, _max(self._lf(lane), at))
            self._finish(tid, at)
        return 0

    # ---- lanes ------------------------------------------------------------------------------
    cdef inline double _lf(self, Py_ssize_t lane) except? -1.0:
        return self.lf[lane] if self.st_lf[lane] == self.stamp else 0.0

    cdef inline int _set_lf(self, Py_ssize_t lane, double v) except -1:
        self.lf[lane] = v
        self.st_lf[lane] = self.stamp
        return 0

    # ---- tasks ------------------------------------------------------------------------------
    cdef inline int _ended(self, Py_ssize_t tid) except -1:
        return self.st_end[tid] == self.stamp

    cdef double _earliest(self, Py_ssize_t tid) except? -1.0:
        """As the reference's ``earliest(t)``."""
        cdef double s = self.dep_end[tid], free
        cdef Py_ssize_t k, lane, h, off = self.lane_off[tid], cnt = self.lane_cnt[tid]
        if cnt == 1:
            h = self._kind(self.pool[off])
            if h >= 0:
                return _max(s, self.sh_clock[h])
        for k in range(off, off + cnt):
            lane = self.pool[k]
            free = self._lf(lane)
            h = self._kind(lane)
            if h >= 0:
                free = _max(free, self._empty(h))
            if free > s:
                s = free
        return s

    cdef int _ready(self, object t, Py_ssize_t tid) except -1:
        """As the reference's ``ready(t)``: its latest predecessor end, its lanes, into the
        heap."""
        cdef double s = 0.0, e
        cdef Py_ssize_t di, n
        cdef Entry x
        for group in (t.deps, self.more.get(tid, ())):
            for d in group:
                di = self._ours(d)
                e = self.end[di] if di >= 0 and self._ended(di) else <double>d.end_ns
                if e > s:
                    s = e
        self.dep_end[tid] = s
        lanes = t.lanes
        n = len(lanes)
        if self.n_pool + n > self.pool.shape[0]:
            b = np.zeros(max(2 * self.pool.shape[0], self.n_pool + n), dtype=np.int64)
            b[:self.n_pool] = self.pool.base[:self.n_pool]
            self.pool = b
        self.lane_off[tid] = self.n_pool
        self.lane_cnt[tid] = n
        for name in lanes:
            self.pool[self.n_pool] = self._lane(name)
            self.n_pool += 1
        x.key = self._earliest(tid)
        x.pr = t.priority
        x.tid = tid
        self._push(x)
        return 0

    cdef inline int64_t _left_of(self, object t, Py_ssize_t tid) except? -1:
        if self.st_left[tid] == self.stamp:
            return self.left[tid]
        return t._left

    cdef inline int _set_left(self, Py_ssize_t tid, int64_t n) except -1:
        self.left[tid] = n
        self.st_left[tid] = self.stamp
        return 0

    cdef int _link(self, object t, Py_ssize_t tid, object deps) except -1:
        """As the reference's ``link(t, deps)``."""
        cdef int64_t n = self._left_of(t, tid)
        cdef Py_ssize_t di
        for d in deps:
            di = self._ours(d)
            if di >= 0:
                if not (d.done or self._ended(di)):
                    n += 1
                    lst = self.succ.get(di)
                    if lst is None:
                        self.succ[di] = [t]
                    else:
                        lst.append(t)
            elif not d.done:  # neither the schedule's nor added: it never ends in the look
                n += 1
        self._set_left(tid, n)
        if n == 0 and (not t.pending or self.st_rel[tid] == self.stamp):
            self._ready(t, tid)
        return 0

    def add(self, t, deps=None):
        """``add(task)``: a new task in the look; ``add(task, deps)``: release a pending one
        (the ``add`` that ``expand`` gets; the reference's)."""
        cdef Py_ssize_t tid
        if not self.active:
            raise ConfigError("schedule: a look's add() called after its look ended")
        if deps is None:
            tid = self.n_reg + len(self.new)
            self._grow_tasks(tid + 1)
            t.id = tid
            self.new.append(t)
            self._set_left(tid, 0)
            self._link(t, tid, t.deps)
        else:
            tid = self._ours(t)
            if tid < 0:
                raise ConfigError(f"schedule: a look released task {t.name!r}, which is "
                                  "neither the schedule's nor added to the look")
            self.st_rel[tid] = self.stamp
            deps = list(deps)
            self.more[tid] = deps
            self._link(t, tid, deps)

    cdef int _finish(self, Py_ssize_t tid, double at) except -1:
        """As the reference's ``finish(t, at)``."""
        cdef object t = self._obj(tid)
        cdef Py_ssize_t si
        cdef int64_t n
        self.end[tid] = at
        self.st_end[tid] = self.stamp
        for group in (t._succ, self.succ.get(tid, ())):
            for s in group:
                si = self._ours(s)
                if si < 0:
                    continue
                n = self._left_of(s, si) - 1
                self._set_left(si, n)
                if n == 0 and (not s.pending or self.st_rel[si] == self.stamp):
                    self._ready(s, si)
        return 0

    # ---- the heap (heapq's algorithm on Entry) ------------------------------------------
    cdef int _push(self, Entry x) except -1:
        if self.n_heap == self.heap.shape[0]:
            b = np.zeros(2 * self.n_heap, dtype=_ENTRY)
            b[:self.n_heap] = self.heap.base[:self.n_heap]
            self.heap = b
        self.heap[self.n_heap] = x
        self.n_heap += 1
        self._siftdown(0, self.n_heap - 1)
        return 0

    cdef int _siftdown(self, Py_ssize_t start, Py_ssize_t pos) except -1:
        cdef Entry item = self.heap[pos], parent
        cdef Py_ssize_t pp
        while pos > start:
            pp = (pos - 1) >> 1
            parent = self.heap[pp]
            if _lt(item, parent):
                self.heap[pos] = parent
                pos = pp
                continue
            break
        self.heap[pos] = item
        return 0

    cdef int _siftup(self, Py_ssize_t pos) except -1:
        cdef Py_ssize_t end = self.n_heap, start = pos, child, right
        cdef Entry item = self.heap[pos]
        child = 2 * pos + 1
        while child < end:
            right = child + 1
            if right < end and not _lt(self.heap[child], self.heap[right]):
                child = right
            self.heap[pos] = self.heap[child]
            pos = child
            child = 2 * pos + 1
        self.heap[pos] = item
        self._siftdown(start, pos)
        return 0

    cdef int _pop(self, Entry* out) except -1:
        """heappop into ``out`` (the heap is not empty)."""
        cdef Entry last
        self.n_heap -= 1
        last = self.heap[self.n_heap]
        if self.n_heap:
            out[0] = self.heap[0]
            self.heap[0] = last
            self._siftup(0)
        else:
            out[0] = last
        return 0

    # ---- the look ---------------------------------------------------------------------------
    def run(self, sched, extra, watch, dur, expand, release, Py_ssize_t limit):
        """The body of :meth:`Schedule.lookahead` (its docstring); returns (starts by
        ``id(task)``, placements)."""
        if self.active:
            raise ConfigError("schedule: a look is already running on this state")
        self.active = True
        try:
            return self._run(sched, extra, watch, dur, expand, release, limit)
        finally:
            self.active = False
            self.tasks = self.new = None
            self.succ = self.more = None
            self.is_shared = None

    cdef tuple _run(self, sched, extra, watch, dur, expand, release, Py_ssize_t limit):
        cdef Py_ssize_t i, s, h, lane, tid, n_reg, placed = 0, it
        cdef Entry x, top
        cdef double e, lim, nxt, start, d
        cdef list near
        cdef set waiting
        cdef dict out
        self.stamp += 1
        self.tasks = sched.tasks
        self.new = []
        n_reg = self.n_reg = len(self.tasks)
        self._grow_tasks(n_reg + 1)
        self.succ = {}
        self.more = {}
        self.is_shared = sched._is_shared
        self.n_heap = 0
        self.n_pool = 0
        self.n_slots = 0
        for name, v in sched._lane_free.items():
            self._set_lf(self._lane(name), v)
        for name, sh in sched._sharing.items():  # the schedule's shared lanes, in order
            lane = self._lane(name)
            self.lane_shared[lane] = 1
            s = self._kind(lane)  # its shadow, first in this look's order
            self.sh_clock[s] = sh.clock
            for t in sh.running:
                i = self.sh_n[s]
                self._grow_slots(1, i + 1)
                tid = self._ours(t)
                if tid < 0:
                    raise ConfigError(f"schedule: running task {t.name!r} is not the "
                                      "schedule's")
                self.sh_tid[s, i] = tid
                self.sh_rem[s, i] = t._rem
                self.sh_work[s, i] = t.work_ns
                self.sh_n[s] = i + 1
        for t in sched._ready:
            tid = self._ours(t)
            if tid < 0:
                raise ConfigError(f"schedule: ready task {t.name!r} is not the schedule's")
            self._ready(t, tid)
        for t in extra:
            self.add(t)
        for t, deps in release:
            self.add(t, deps)
        waiting = {id(t) for t in watch if not t.placed}
        out = {id(t): t.start_ns for t in watch if t.placed}
        for it in range(limit):
            if not waiting:
                break
            while self.n_heap:  # a key that still holds on top
                top = self.heap[0]
                e = self._earliest(top.tid)
                if e == top.key:
                    break
                top.key = e
                self.heap[0] = top  # heapreplace
                self._siftup(0)
            if self.n_heap:
                lim = self.heap[0].key + 1e-9 * _max(fabs(self.heap[0].key), 1.0)
                if ((self.n_heap > 1 and self.heap[1].key <= lim)
                        or (self.n_heap > 2 and self.heap[2].key <= lim)):
                    # keys within rounding of the top's, taken afresh: the true minimum on top
                    near = []
                    while self.n_heap and self.heap[0].key <= lim:
                        self._pop(&x)
                        near.append((self._earliest(x.tid), x.pr, x.tid))
                    for item in near:
                        x.key, x.pr, x.tid = item
                        self._push(x)
            # the next sharer to end, if it ends no later than the top's start: settle it
            i = -1
            nxt = 0.0
            for s in range(self.n_slots):
                if self.sh_n[s]:
                    e = self._next_end(s)
                    if i < 0 or e < nxt:
                        nxt = e
                        i = s
            if i >= 0 and (not self.n_heap or nxt <= self.heap[0].key):
                self._settle(i, nxt)
                continue
            if not self.n_heap:
                break
            self._pop(&x)
            start = x.key
            tid = x.tid
            best = self._obj(tid)
            placed += 1
            d = float(dur(best))
            s = self._kind(self.pool[self.lane_off[tid]]) if self.lane_cnt[tid] == 1 else -1
            if s >= 0 and d > 0:
                self._join(s, tid, start, d)
            else:
                e = start + d
                for i in range(self.lane_off[tid], self.lane_off[tid] + self.lane_cnt[tid]):
                    lane = self.pool[i]
                    if s < 0:
                        self._set_lf(lane, e)
                        h = self._kind(lane)
                        if h >= 0:
                            self.sh_clock[h] = _max(self.sh_clock[h], e)
                    else:
                        self._set_lf(lane, _max(self._lf(lane), e))
                self._finish(tid, e)
            if id(best) in waiting:
                waiting.discard(id(best))
                out[id(best)] = start
            elif best.on_start is not None and tid < n_reg and expand is not None:
                expand(best, self.add)
        return out, placed
