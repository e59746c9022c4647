"""Tasks with dependencies, list-scheduled on lanes, earliest start first.

A step of the simulated system is a dependency graph of tasks. Each task holds one or more
*lanes* (a GPU's compute, its HBM bandwidth, its PIM units, its link port; a collective holds
the link lanes of every GPU it spans) and may start only when every predecessor has ended.
:class:`Schedule` builds a non-delay schedule: it repeatedly starts, among the tasks whose
predecessors have all ended, the one that can start earliest (ties: the lower priority number,
then the lower task id), at that time. A placed task's start never moves.

A lane is one of two kinds:

* **unary** (the default): it runs one task at a time, in start order; a task waits until
  every unary lane it holds is free, and holds it for its whole duration.
* **shared** (named by ``Schedule(shared=...)``; a GPU's HBM bandwidth): the tasks on it run
  side by side and divide it equally (processor sharing, the fluid model of a bandwidth that
  concurrent streams split). A task whose only lane is a shared one (a *sharer*) starts as
  soon as its predecessors have ended; its duration is its *work*, the time it takes alone,
  and it ends when that work is done at the rate it got: ``1/n`` of the lane while ``n``
  sharers run. Its ``end_ns`` while it runs is the projection with no further arrivals
  (arrivals only delay it) and is final once it has ended; successors wait for that. A task
  that holds a shared lane together with other lanes holds all of them unary: it waits until
  the shared lane is empty and no sharer joins before it ends (the step's start task).

Events are taken in time order: a sharer's end is settled before any task that would start
after it is placed, so what a callback sees (:meth:`Schedule.lane_free_ns`, placed tasks'
``end_ns``) is what the schedule knows at that time.

Two kinds of task need more than a fixed duration, and both are callbacks run when the task is
placed, with its start time:

* ``duration`` may be a callable ``f(start_ns) -> duration_ns`` (PIM programs: the engine runs
  them on a device that keeps its state, so their time depends on when they start);
* ``on_start`` may add tasks and dependencies (a scheduler decides a layer's expert tasks when
  its own task starts, knowing only what has ended by then). Tasks that others wait on but
  whose predecessors are not known yet are created with ``pending=True`` and released by
  :meth:`Schedule.release` from a callback.

Every placed task records the predecessor (task or lane) that set its start, so the critical
path is the chain of those back from the last task to end; its durations sum to the makespan
because a non-delay schedule never leaves a task waiting once it can start (a sharer's
duration there is the time it took, its own work plus what it waited for its share).

Times are nanoseconds. This module knows nothing about GPUs or PIM.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sieve.errors import ConfigError

try:
    from sieve.system import _look
except ImportError as exc:  # pragma: no cover - exercised by hand on an unbuilt checkout
    from sieve.errors import NotBuiltError

    raise NotBuiltError.of("schedule look-ahead", "sieve.system._look", exc) from None

__all__ = ["Schedule", "Task"]


@dataclass(eq=False)
class Task:
    """One unit of work. ``start_ns``/``end_ns``/``cause`` are filled when it is placed.

    Attributes:
        name: short kind ("qkv", "attn", "dispatch", ...).
        lanes: the lanes it holds (e.g. ``("gpu0",)``, or every link lane for a collective).
        duration: ns, or ``f(start_ns) -> ns`` evaluated when placed.
        deps: tasks that must end before it starts.
        priority: tie-break among tasks that can start at the same time (lower first).
        info: free-form labels (layer, GPU, micro-batch, ...) for tables and figures.
        on_start: ``f(task, schedule)`` run when placed (may add tasks and release pending
            ones).
        pending: not schedulable until :meth:`Schedule.release` (predecessors still unknown).
    """

    name: str
    lanes: tuple[str, ...]
    duration: float | Callable[[float], float]
    deps: list[Task] = field(default_factory=list)
    priority: int = 0
    info: dict[str, Any] = field(default_factory=dict)
    on_start: Callable[[Task, Schedule], None] | None = None
    pending: bool = False
    id: int = -1
    _left: int = 0  # predecessors not placed yet
    _succ: list[Task] = field(default_factory=list)
    start_ns: float = -1.0
    end_ns: float = -1.0
    cause: Task | None = None  # the predecessor or lane-previous task that set the start
    done: bool = False  # ended: end_ns is final (a running sharer's end_ns is a projection)
    work_ns: float = 0.0  # a sharer's time alone on its lane; for others their duration
    _rem: float = 0.0  # a running sharer's work left, ns at the whole lane's rate

    def __repr__(self) -> str:  # short: the generated one would walk the whole graph
        return (f"Task({self.name!r}, id={self.id}, lanes={self.lanes}, "
                f"start_ns={self.start_ns}, end_ns={self.end_ns})")

    @property
    def placed(self) -> bool:
        """Started (its start is final; its end too unless it is a running sharer)."""
        return self.end_ns >= 0.0

    @property
    def duration_ns(self) -> float:
        return self.end_ns - self.start_ns


class Schedule:
    """An incremental non-delay list schedule (module docstring).

    Args:
        shared: lane names, or a predicate on a lane name, of the shared lanes (processor
            sharing); every other lane is unary.
    """

    def __init__(self, shared: Callable[[str], bool] | Sequence[str] = ()) -> None:
        self.tasks: list[Task] = []
        self._ready: set[Task] = set()
        self._n_waiting = 0
        self._lane_free: dict[str, float] = {}
        self._lane_last: dict[str, Task] = {}
        self.lanes: dict[str, list[Task]] = {}
        if callable(shared):
            self._is_shared = shared
        else:
            names = frozenset(shared)
            self._is_shared = names.__contains__
        self._sharing: dict[str, _Lane] = {}  # shared lanes by name, made on first use
        self._kind: dict[str, _Lane | None] = {}  # every lane seen: its _Lane, None if unary
        self.look_placed = 0  # tasks the last lookahead placed
        self._look: Any = None  # the compiled look's state, kept between looks

    # ---- building ------------------------------------------------------------------------------
    def add(self, task: Task) -> Task:
        """Register a task (its dependencies must already be registered)."""
        if task.id >= 0:
            raise ConfigError(f"schedule: task {task.name!r} added twice")
        if not task.lanes:
            raise ConfigError(f"schedule: task {task.name!r} holds no lane")
        for d in task.deps:
            if d.id < 0:
                raise ConfigError(f"schedule: task {task.name!r} depends on an unregistered "
                                  f"task {d.name!r}")
        task.id = len(self.tasks)
        self.tasks.append(task)
        self._n_waiting += 1
        self._link(task, task.deps)
        return task

    def _link(self, task: Task, deps: Sequence[Task]) -> None:
        for d in deps:
            if not d.done:
                task._left += 1
                d._succ.append(task)
        if task._left == 0 and not task.pending:
            self._ready.add(task)

    def release(self, task: Task, deps: Sequence[Task] = ()) -> None:
        """Give a pending task its (remaining) predecessors and make it schedulable."""
        for d in deps:
            if d.id < 0:
                raise ConfigError(f"schedule: task {task.name!r} released with an "
                                  f"unregistered predecessor {d.name!r}")
        if not task.pending:
            raise ConfigError(f"schedule: task {task.name!r} is not pending")
        task.deps.extend(deps)
        task.pending = False
        self._link(task, deps)

    # ---- placing -------------------------------------------------------------------------------
    def _shared_lane(self, lane: str) -> _Lane | None:
        try:
            return self._kind[lane]
        except KeyError:  # first sight of this lane: ask the predicate once
            sh = self._kind[lane] = _Lane() if self._is_shared(lane) else None
            if sh is not None:
                self._sharing[lane] = sh
            return sh

    def _sharer(self, t: Task) -> _Lane | None:
        """The shared lane a sharer runs on; None for a task that holds its lanes unary."""
        return self._shared_lane(t.lanes[0]) if len(t.lanes) == 1 else None

    def _earliest(self, t: Task) -> tuple[float, Task | None]:
        start, cause = 0.0, None
        for d in t.deps:
            if d.end_ns > start:
                start, cause = d.end_ns, d
        sh = self._sharer(t)
        if sh is not None:  # it joins the lane's sharers, not before the lane's clock
            if sh.clock > start:
                start, cause = sh.clock, self._lane_last.get(t.lanes[0])
            return start, cause
        for lane in t.lanes:
            sh = self._shared_lane(lane)
            free = self._lane_free.get(lane, 0.0)
            if sh is not None:  # held unary: once its sharers have all ended
                free = max(free, sh.empty_ns())
            if free > start:
                start, cause = free, self._lane_last.get(lane)
        return start, cause

    def run(self, until: Callable[[], bool] | None = None) -> None:
        """Place every schedulable task and end every sharer (or stop when ``until()`` becomes
        true).

        Raises:
            ConfigError: tasks remain that can never be placed (a cycle, or a pending task
                nobody released).
        """
        while self._n_waiting or any(sh.running for sh in self._sharing.values()):
            if until is not None and until():
                return
            best = None
            best_key = None
            for t in self._ready:
                s, cause = self._earliest(t)
                key = (s, t.priority, t.id)
                if best_key is None or key < best_key:
                    best, best_key, best_cause = t, key, cause
            # the next sharer to end, if it ends no later than that start: settle it first
            nxt, nxt_lane = None, None
            for name, sh in self._sharing.items():
                if sh.running:
                    e = sh.next_end_ns()
                    if nxt is None or e < nxt:
                        nxt, nxt_lane = e, name
            if nxt is not None and (best is None or nxt <= best_key[0]):
                self._settle(nxt_lane, nxt)
                continue
            if best is None:
                left = [t for t in self.tasks if not t.placed]
                names = ", ".join(sorted({t.name for t in left}))
                raise ConfigError(f"schedule: {len(left)} task(s) can never start "
                                  f"(a dependency cycle or an unreleased task): {names}")
            self._place(best, best_key[0], best_cause)

    def _place(self, t: Task, start: float, cause: Task | None) -> None:
        self._ready.discard(t)
        self._n_waiting -= 1
        t.start_ns = start
        t.cause = cause
        dur = t.duration(start) if callable(t.duration) else t.duration
        if not dur >= 0:
            raise ConfigError(f"schedule: task {t.name!r} got a negative or NaN duration "
                              f"{dur!r}")
        t.work_ns = float(dur)
        for lane in t.lanes:
            self.lanes.setdefault(lane, []).append(t)
        sh = self._sharer(t)
        if sh is not None and dur > 0:
            sh.join(t, start)  # it ends when its share has done its work (_settle)
        else:
            t.end_ns = start + float(dur)
            t.done = True
            for lane in t.lanes:
                self._lane_free[lane] = (t.end_ns if sh is None else
                                         max(self._lane_free.get(lane, 0.0), t.end_ns))
                self._lane_last[lane] = t
                hold = self._shared_lane(lane) if sh is None else None
                if hold is not None:  # held unary: no sharer joins before its end
                    hold.clock = max(hold.clock, t.end_ns)
            self._release_succ(t)
        if t.on_start is not None:
            t.on_start(t, self)

    def _release_succ(self, t: Task) -> None:
        for s in t._succ:
            s._left -= 1
            if s._left == 0 and not s.pending:
                self._ready.add(s)

    def _settle(self, lane: str, at: float) -> None:
        """End the sharers of ``lane`` that finish at ``at`` (its next end)."""
        for t in self._sharing[lane].settle(at):
            t.done = True
            self._lane_free[lane] = max(self._lane_free.get(lane, 0.0), t.end_ns)
            self._lane_last[lane] = t
            self._release_succ(t)

    def lane_free_ns(self, lane: str) -> float:
        """When ``lane`` is free of every task placed so far (0 if it never held one); for a
        shared lane, when its running sharers would all have ended with no new arrival."""
        free = self._lane_free.get(lane, 0.0)
        sh = self._sharing.get(lane)
        if sh is not None and sh.running:
            free = max(free, sh.empty_ns())
        return free

    def sharers(self, lane: str, at_ns: float) -> list[tuple[Task, float]]:
        """A shared lane's running sharers, in the order they joined, each with its work left
        at ``at_ns`` (ns at the lane's whole rate) if no other task joined before then
        (processor sharing from the lane's clock on; a sharer that would have ended by then
        has 0 left). Empty for a lane that is not shared or runs nothing."""
        sh = self._sharing.get(lane)
        if sh is None or not sh.running:
            return []
        left = {t.id: t._rem for t in sh.running}
        span = max(at_ns - sh.clock, 0.0)
        live = sorted(sh.running, key=lambda t: (t._rem, t.id))
        done = 0.0  # work each live sharer has received since the clock
        while live and span > 0.0:
            first = left[live[0].id] - done
            if first * len(live) > span:
                done += span / len(live)
                break
            done += first
            span -= first * len(live)
            live.pop(0)
        return [(t, max(left[t.id] - done, 0.0)) for t in sh.running]

    # ---- looking ahead -------------------------------------------------------------------------
    def lookahead(self, extra: Sequence[Task], watch: Sequence[Task],
                  dur: Callable[[Task], float],
                  expand: Callable[[Task, Callable], None] | None = None,
                  release: Sequence[tuple[Task, Sequence[Task]]] = (),
                  limit: int = 100_000) -> dict[int, float]:
        """Where the schedule would go from here, without changing it: list-schedules, by the
        rules of :meth:`run`, the tasks not placed yet together with ``extra`` (new tasks, not
        registered: they may depend on registered ones and on each other, listed after their
        predecessors), until every task of ``watch`` has started; returns each watched task's
        start by ``id(task)`` (the ones never reached are left out).

        ``dur(task)`` gives each task's duration in the look (a callable duration is not run:
        the caller estimates it); a task with ``on_start`` is not run either: ``expand(task,
        add)`` is called instead, and may add tasks with ``add(task)`` and release a pending
        task with ``add(task, deps)``; ``release`` holds such releases made before the look
        starts. Running sharers continue from their work left. At most ``limit`` loop turns
        (a placement or a sharer's end each).

        Compiled (``sieve.system._look``); :meth:`lookahead_reference` is the same look in
        Python, which tests hold it to, start for start. A look may run inside another's
        callbacks (it gets its own state)."""
        look = self._look
        if look is None or look.active:
            look = _look.Look()
            if self._look is None:
                self._look = look
        out, self.look_placed = look.run(self, extra, watch, dur, expand, release, limit)
        return out

    def lookahead_reference(self, extra: Sequence[Task], watch: Sequence[Task],
                            dur: Callable[[Task], float],
                            expand: Callable[[Task, Callable], None] | None = None,
                            release: Sequence[tuple[Task, Sequence[Task]]] = (),
                            limit: int = 100_000) -> dict[int, float]:
        """:meth:`lookahead` in Python: the specification the compiled look is tested
        against."""
        end: dict[int, float] = {}  # id(task) -> its end in the look (ended there)
        left: dict[int, int] = {}
        succ: dict[int, list[Task]] = {}
        released: set[int] = set()
        more: dict[int, list[Task]] = {}  # predecessors a release in the look gave
        lane_free = dict(self._lane_free)
        lanes = {name: _Shadow(sh) for name, sh in self._sharing.items()}
        kind: dict[str, _Shadow | None] = {}
        ids = [len(self.tasks)]

        def shared(lane: str) -> _Shadow | None:  # as _shared_lane, on the look's copies
            try:
                return kind[lane]
            except KeyError:
                sh = lanes.get(lane)
                if sh is None and self._is_shared(lane):
                    sh = lanes[lane] = _Shadow(None)
                kind[lane] = sh
                return sh

        # a ready task's latest predecessor end: its predecessors have all ended (in the
        # schedule or in the look) when it becomes ready, so this is final; kept per task so
        # that the repeated earliest() of a task in the heap reads only its lanes
        dep_end: dict[int, float] = {}

        def earliest(t: Task) -> float:  # as _earliest, on the look's state
            s = dep_end[id(t)]
            sh = shared(t.lanes[0]) if len(t.lanes) == 1 else None
            if sh is not None:
                return max(s, sh.clock)
            for lane in t.lanes:
                free = lane_free.get(lane, 0.0)
                h = shared(lane)
                if h is not None:
                    free = max(free, h.empty_ns())
                if free > s:
                    s = free
            return s

        # the ready tasks by (earliest start, priority, id): a start only grows as the look
        # goes on (lanes fill, a shared lane's clock and backlog never fall), so an entry's key
        # is a lower bound, up to rounding (a backlog recomputed after a sharer ends can come
        # out an ulp lower): the entries within rounding of the first key that still holds
        # are taken afresh, as the run does, and the least of them is the minimum
        heap: list[tuple[float, int, int, Task]] = []

        def ready(t: Task) -> None:
            s = 0.0
            for group in (t.deps, more.get(id(t), ())):
                for d in group:
                    e = end.get(id(d), d.end_ns)
                    if e > s:
                        s = e
            dep_end[id(t)] = s
            heapq.heappush(heap, (earliest(t), t.priority, t.id, t))

        def done(t: Task) -> bool:
            return t.done or id(t) in end

        def link(t: Task, deps: Sequence[Task]) -> None:
            n = left.get(id(t), t._left)
            for d in deps:
                if not done(d):
                    n += 1
                    succ.setdefault(id(d), []).append(t)
            left[id(t)] = n
            if n == 0 and (not t.pending or id(t) in released):
                ready(t)

        def add(t: Task, deps: Sequence[Task] | None = None) -> None:
            if deps is None:  # a new task
                t.id = ids[0]
                ids[0] += 1
                left[id(t)] = 0
                link(t, t.deps)
            else:  # release a pending one
                released.add(id(t))
                more[id(t)] = list(deps)
                link(t, deps)

        def finish(t: Task, at: float) -> None:
            end[id(t)] = at
            for group in (t._succ, succ.get(id(t), ())):
                for s in group:
                    n = left.get(id(s), s._left) - 1
                    left[id(s)] = n
                    if n == 0 and (not s.pending or id(s) in released):
                        ready(s)

        for t in self._ready:
            ready(t)
        for t in extra:
            add(t)
        for t, deps in release:
            add(t, deps)
        waiting = {id(t) for t in watch if not t.placed}
        out = {id(t): t.start_ns for t in watch if t.placed}
        self.look_placed = 0
        for _ in range(limit):
            if not waiting:
                break
            while heap:  # a key that still holds on top
                k, pr, i, t = heap[0]
                e = earliest(t)
                if e == k:
                    break
                heapq.heapreplace(heap, (e, pr, i, t))
            lim = heap[0][0] + 1e-9 * max(abs(heap[0][0]), 1.0) if heap else 0.0
            n_heap = len(heap)
            if (n_heap > 1 and heap[1][0] <= lim) or (n_heap > 2 and heap[2][0] <= lim):
                # keys within rounding of it (the top's children hold the next least), taken
                # afresh: the true minimum on top
                near = []
                while heap and heap[0][0] <= lim:
                    k, pr, i, t = heapq.heappop(heap)
                    near.append((earliest(t), pr, i, t))
                for x in near:
                    heapq.heappush(heap, x)
            nxt, nxt_sh = None, None
            for sh in lanes.values():
                if sh.rem:
                    e = sh.next_end_ns()
                    if nxt is None or e < nxt:
                        nxt, nxt_sh = e, sh
            if nxt is not None and (not heap or nxt <= heap[0][0]):
                for t in nxt_sh.settle(nxt):
                    lane_free[t.lanes[0]] = max(lane_free.get(t.lanes[0], 0.0), nxt)
                    finish(t, nxt)
                continue
            if not heap:
                break
            start, _, _, best = heapq.heappop(heap)
            self.look_placed += 1
            d = float(dur(best))
            sh = shared(best.lanes[0]) if len(best.lanes) == 1 else None
            if sh is not None and d > 0:
                sh.join(best, start, d)
            else:
                e = start + d
                for lane in best.lanes:
                    lane_free[lane] = e if sh is None else max(lane_free.get(lane, 0.0), e)
                    h = shared(lane) if sh is None else None
                    if h is not None:
                        h.clock = max(h.clock, e)
                finish(best, e)
            if id(best) in waiting:
                waiting.discard(id(best))
                out[id(best)] = start
            elif best.on_start is not None and best.id < len(self.tasks) and expand is not None:
                expand(best, add)
        return out

    # ---- results -------------------------------------------------------------------------------
    @property
    def makespan_ns(self) -> float:
        return max((t.end_ns for t in self.tasks if t.placed), default=0.0)

    def busy_ns(self, lane: str) -> float:
        """Time the lane is held (a shared lane: the work of its sharers, which is the time it
        had at least one, as they split its whole rate)."""
        return sum(t.work_ns if (t.done and len(t.lanes) == 1 and lane in self._sharing)
                   else t.duration_ns for t in self.lanes.get(lane, ()))

    def critical_path(self) -> list[Task]:
        """The chain of start-setting predecessors back from the last task to end, in time
        order; its durations add up to the makespan (module docstring)."""
        placed = [t for t in self.tasks if t.placed]
        if not placed:
            return []
        t = max(placed, key=lambda x: (x.end_ns, -x.id))
        path = []
        while t is not None:
            path.append(t)
            t = t.cause
        return path[::-1]


class _Lane:
    """A shared lane's running sharers, each at ``1/n`` of its rate (processor sharing).

    ``clock`` is the time up to which their progress is accounted (and before which no sharer
    joins); a sharer's ``_rem`` is its work left at the lane's whole rate.
    """

    __slots__ = ("clock", "running")

    def __init__(self) -> None:
        self.clock = 0.0
        self.running: list[Task] = []

    def _advance(self, to: float) -> None:
        if self.running and to > self.clock:
            step = (to - self.clock) / len(self.running)
            for t in self.running:
                t._rem = max(t._rem - step, 0.0)
        self.clock = max(self.clock, to)

    def _project(self) -> None:
        """Each running sharer's end with no further arrival: in order of work left, the k-th
        (of n) ends after the work of those before it plus (n - k + 1) times its own left."""
        order = sorted(self.running, key=lambda t: (t._rem, t.id))
        n, acc = len(order), 0.0
        for k, t in enumerate(order):
            t.end_ns = self.clock + acc + (n - k) * t._rem
            acc += t._rem

    def join(self, t: Task, at: float) -> None:
        self._advance(at)
        t._rem = t.work_ns
        self.running.append(t)
        self._project()

    def next_end_ns(self) -> float:
        return self.clock + len(self.running) * min(t._rem for t in self.running)

    def empty_ns(self) -> float:
        return self.clock + sum(t._rem for t in self.running)

    def settle(self, at: float) -> list[Task]:
        """Advance to ``at`` (the next end) and take out the sharers that end there."""
        first = min(self.running, key=lambda t: (t._rem, t.id))
        tol = 1e-9 * max(first.work_ns, 1.0)
        self._advance(at)
        first._rem = 0.0
        ended = [t for t in self.running if t._rem <= tol]
        for t in ended:
            t.end_ns = at
            t._rem = 0.0
        gone = {t.id for t in ended}
        self.running = [t for t in self.running if t.id not in gone]
        self._project()
        return ended


class _Shadow:
    """A copy of a shared lane's state for :meth:`Schedule.lookahead` (work left by task, in
    join order), which leaves the lane and its tasks as they are."""

    __slots__ = ("clock", "rem", "order", "work", "_next")

    def __init__(self, sh: _Lane | None) -> None:
        running = sh.running if sh is not None else []
        self.clock = sh.clock if sh is not None else 0.0
        self.order: list[Task] = list(running)
        self.rem: dict[int, float] = {id(t): t._rem for t in running}
        self.work: dict[int, float] = {id(t): t.work_ns for t in running}
        self._next: float | None = None  # next_end_ns, kept until a sharer joins or ends

    def _advance(self, to: float) -> None:
        if self.rem and to > self.clock:
            step = (to - self.clock) / len(self.rem)
            for k in self.rem:
                self.rem[k] = max(self.rem[k] - step, 0.0)
        self.clock = max(self.clock, to)

    def join(self, t: Task, at: float, work: float) -> None:
        self._advance(at)
        self.rem[id(t)] = self.work[id(t)] = work
        self.order.append(t)
        self._next = None

    def next_end_ns(self) -> float:
        """As :meth:`_Lane.next_end_ns`; advancing the clock does not move it (the clock gains
        what the least work left loses, times the sharers), so it is kept until a sharer
        joins or ends."""
        if self._next is None:
            self._next = self.clock + len(self.rem) * min(self.rem.values())
        return self._next

    def empty_ns(self) -> float:
        acc = 0.0  # added in order from 0.0 (sum() of floats is compensated from Python 3.12)
        for v in self.rem.values():
            acc += v
        return self.clock + acc

    def settle(self, at: float) -> list[Task]:
        """As :meth:`_Lane.settle`."""
        first = min(self.order, key=lambda t: (self.rem[id(t)], t.id))
        tol = 1e-9 * max(self.work[id(first)], 1.0)
        self._advance(at)
        self.rem[id(first)] = 0.0
        ended = [t for t in self.order if self.rem[id(t)] <= tol]
        for t in ended:
            del self.rem[id(t)]
        self.order = [t for t in self.order if id(t) in self.rem]
        self._next = None
        return ended
