"""Tasks with dependencies, list-scheduled on unary resources (lanes), earliest start first.

A step of the simulated system is a dependency graph of tasks. Each task holds one or more
*lanes* for its whole duration (a GPU's compute, its HBM bandwidth, its PIM units, its link
port; a collective holds the link lanes of every GPU it spans) and may start only when every
predecessor has ended and every lane it needs is free. :class:`Schedule` builds a non-delay
schedule: it repeatedly starts, among the tasks whose predecessors are all placed, the one that
can start earliest (ties: the lower priority number, then the lower task id), at that time. A
lane runs one task at a time, in start order; nothing is ever moved once placed.

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
because a non-delay schedule never leaves a task waiting once it can start.

Times are nanoseconds. This module knows nothing about GPUs or PIM.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sieve.errors import ConfigError

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

    @property
    def placed(self) -> bool:
        return self.end_ns >= 0.0

    @property
    def duration_ns(self) -> float:
        return self.end_ns - self.start_ns


class Schedule:
    """An incremental non-delay list schedule (module docstring)."""

    def __init__(self) -> None:
        self.tasks: list[Task] = []
        self._ready: set[Task] = set()
        self._n_waiting = 0
        self._lane_free: dict[str, float] = {}
        self._lane_last: dict[str, Task] = {}
        self.lanes: dict[str, list[Task]] = {}

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
            if not d.placed:
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
    def _earliest(self, t: Task) -> tuple[float, Task | None]:
        start, cause = 0.0, None
        for d in t.deps:
            if d.end_ns > start:
                start, cause = d.end_ns, d
        for lane in t.lanes:
            free = self._lane_free.get(lane, 0.0)
            if free > start:
                start, cause = free, self._lane_last[lane]
        return start, cause

    def run(self, until: Callable[[], bool] | None = None) -> None:
        """Place every schedulable task (or stop when ``until()`` becomes true).

        Raises:
            ConfigError: tasks remain that can never be placed (a cycle, or a pending task
                nobody released).
        """
        while self._n_waiting:
            if until is not None and until():
                return
            best = None
            best_key = None
            for t in self._ready:
                s, cause = self._earliest(t)
                key = (s, t.priority, t.id)
                if best_key is None or key < best_key:
                    best, best_key, best_cause = t, key, cause
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
        t.end_ns = start + float(dur)
        for lane in t.lanes:
            self._lane_free[lane] = t.end_ns
            self._lane_last[lane] = t
            self.lanes.setdefault(lane, []).append(t)
        for s in t._succ:
            s._left -= 1
            if s._left == 0 and not s.pending:
                self._ready.add(s)
        if t.on_start is not None:
            t.on_start(t, self)

    def lane_free_ns(self, lane: str) -> float:
        """When ``lane`` is free of every task placed so far (0 if it never held one)."""
        return self._lane_free.get(lane, 0.0)

    # ---- results -------------------------------------------------------------------------------
    @property
    def makespan_ns(self) -> float:
        return max((t.end_ns for t in self.tasks if t.placed), default=0.0)

    def busy_ns(self, lane: str) -> float:
        """Time the lane is held."""
        return sum(t.duration_ns for t in self.lanes.get(lane, ()))

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
