"""Stage timers: where a simulation's time goes, collected only while profiling.

The simulator marks its stages (``with stage("pim"):``) and counts work
(``count("pim_commands", n)``); both cost one attribute test when profiling is off (the
default). :func:`collect` turns them on for a block and returns a :class:`StageTimes`:
each stage's *exclusive* wall time (time inside nested stages is the nested stage's), how often
it was entered, the counters, and optionally the intervals (for a timeline viewer).

Stages used by sieve (``sieve profile`` reports them):

* ``trace``: composing a step's batch and routing it (:mod:`sieve.workload`);
* ``dag``: building a step's task graph (GPU and link durations from the cost models);
* ``scheduling``: the schedulers' decisions (:mod:`sieve.sched`);
* ``pim``: PIM programs: lowering and the cycle-accurate engine;
* ``list_scheduling``: placing the tasks on the lanes (:mod:`sieve.system.dag`), without the
  PIM programs and decisions it starts;
* ``io``: writing run files, tables and figures; ``figures``: drawing them.

This module owns the timers only; it imports nothing from sieve.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["StageTimes", "collect", "count", "enabled", "stage"]

_on = False
_stack: list[list] = []  # [name, start_s, child_s]
_totals: dict[str, float] = {}
_calls: dict[str, int] = {}
_counts: dict[str, float] = {}
_events: list[tuple[str, float, float, int]] | None = None  # (name, start, end, depth)
_MAX_EVENTS = 2_000_000


def enabled() -> bool:
    """Whether stages are being collected."""
    return _on


class _Stage:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        if _on:
            _stack.append([self.name, time.perf_counter(), 0.0])
        return self

    def __exit__(self, *exc):
        if _on and _stack and _stack[-1][0] == self.name:
            name, start, child = _stack.pop()
            now = time.perf_counter()
            dur = now - start
            _totals[name] = _totals.get(name, 0.0) + dur - child
            _calls[name] = _calls.get(name, 0) + 1
            if _stack:
                _stack[-1][2] += dur
            if _events is not None and len(_events) < _MAX_EVENTS:
                _events.append((name, start, now, len(_stack)))
        return False


_STAGES: dict[str, _Stage] = {}


def stage(name: str) -> _Stage:
    """A context manager marking a stage (no-op unless collecting)."""
    s = _STAGES.get(name)
    if s is None:
        s = _STAGES[name] = _Stage(name)
    return s


def count(name: str, n: float) -> None:
    """Add ``n`` to a counter (no-op unless collecting)."""
    if _on:
        _counts[name] = _counts.get(name, 0.0) + n


@dataclass
class StageTimes:
    """What :func:`collect` gathered.

    Attributes:
        wall_s: wall time of the whole block.
        seconds: exclusive seconds per stage (``other``: the block's time outside every stage).
        calls: times each stage was entered.
        counts: the counters.
        events: ``(stage, start_s, end_s, depth)`` intervals relative to the block's start
            (only with ``events=True``; at most 2 M).
    """

    wall_s: float = 0.0
    seconds: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    counts: dict[str, float] = field(default_factory=dict)
    events: list[tuple[str, float, float, int]] = field(default_factory=list)


@contextlib.contextmanager
def collect(events: bool = False) -> Iterator[StageTimes]:
    """Collect stages inside the block; the yielded :class:`StageTimes` is filled when it
    ends. Not re-entrant (one collection at a time)."""
    global _on, _events
    if _on:
        raise RuntimeError("stages: a collection is already running")
    _stack.clear()
    _totals.clear()
    _calls.clear()
    _counts.clear()
    _events = [] if events else None
    out = StageTimes()
    t0 = time.perf_counter()
    _on = True
    try:
        yield out
    finally:
        _on = False
        out.wall_s = time.perf_counter() - t0
        out.seconds = dict(_totals)
        out.seconds["other"] = max(out.wall_s - sum(_totals.values()), 0.0)
        out.calls = dict(_calls)
        out.counts = dict(_counts)
        if _events is not None:
            out.events = [(n, s - t0, e - t0, d) for n, s, e, d in _events]
        _events = None
        _stack.clear()
