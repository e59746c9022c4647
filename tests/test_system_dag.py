"""The list scheduler of sieve.system.dag: hand-checked schedules, invariants on random graphs,
callbacks (time-dependent durations, tasks added at run time), errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.errors import ConfigError
from sieve.system.dag import Schedule, Task


def test_two_lanes_overlap_and_a_join_waits_for_both():
    s = Schedule()
    a = s.add(Task("a", ("gpu",), 5.0))
    b = s.add(Task("b", ("pim",), 8.0))
    c = s.add(Task("c", ("gpu",), 2.0, deps=[a, b]))
    d = s.add(Task("d", ("gpu",), 1.0))  # independent: fills the GPU while c waits for b
    s.run()
    assert (a.start_ns, b.start_ns, d.start_ns, c.start_ns) == (0.0, 0.0, 5.0, 8.0)
    assert s.makespan_ns == 10.0
    assert [t.name for t in s.critical_path()] == ["b", "c"]
    assert s.busy_ns("gpu") == 8.0 and s.busy_ns("pim") == 8.0


def test_collective_waits_for_every_lane_it_holds():
    s = Schedule()
    x = s.add(Task("x", ("link0",), 3.0))
    y = s.add(Task("y", ("link1",), 7.0))
    ag = s.add(Task("allgather", ("link0", "link1"), 2.0))
    s.run()
    assert ag.start_ns == 7.0 and ag.cause is y
    assert x.start_ns == 0.0


def test_ties_go_to_priority_then_creation_order():
    s = Schedule()
    late = s.add(Task("late", ("gpu",), 1.0, priority=5))
    early = s.add(Task("early", ("gpu",), 1.0, priority=1))
    first = s.add(Task("first", ("gpu",), 1.0, priority=1))
    s.run()
    assert (early.start_ns, first.start_ns, late.start_ns) == (0.0, 1.0, 2.0)


def test_time_dependent_duration_and_tasks_added_when_a_task_starts():
    s = Schedule()
    seen = []

    def pim(start):
        seen.append(start)
        return 10.0 if start < 4 else 3.0

    first = s.add(Task("first", ("gpu",), 4.0))
    join = s.add(Task("join", ("gpu",), 0.0, pending=True))

    def decide(task, sched):
        p = sched.add(Task("pim", ("pim",), pim, deps=[task]))
        sched.release(join, [p])

    s.add(Task("decide", ("cpu",), 1.0, deps=[first], on_start=decide))
    s.run()
    assert seen == [5.0] and join.start_ns == 8.0 and s.makespan_ns == 8.0


def test_unreleased_pending_task_is_an_error():
    s = Schedule()
    s.add(Task("a", ("gpu",), 1.0))
    s.add(Task("stuck", ("gpu",), 1.0, pending=True))
    with pytest.raises(ConfigError, match="can never start.*stuck"):
        s.run()


def test_bad_tasks_are_refused():
    s = Schedule()
    with pytest.raises(ConfigError, match="holds no lane"):
        s.add(Task("a", (), 1.0))
    ghost = Task("ghost", ("gpu",), 1.0)
    with pytest.raises(ConfigError, match="unregistered"):
        s.add(Task("b", ("gpu",), 1.0, deps=[ghost]))
    t = s.add(Task("neg", ("gpu",), -1.0))
    with pytest.raises(ConfigError, match="negative"):
        s.run()
    with pytest.raises(ConfigError, match="added twice"):
        s.add(t)


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 40))
    lanes = ["gpu", "hbm", "pim", "link"]
    tasks = []
    for i in range(n):
        k = draw(st.integers(1, 2))
        own = tuple(sorted(set(draw(st.lists(st.sampled_from(lanes), min_size=k,
                                             max_size=k)))))
        deps = draw(st.lists(st.integers(0, i - 1), max_size=3, unique=True)) if i else []
        tasks.append((own, draw(st.floats(0, 100)), deps, draw(st.integers(0, 3))))
    return tasks


@settings(max_examples=200, deadline=None)
@given(spec=graphs())
def test_schedule_invariants(spec):
    s = Schedule()
    made = []
    for lanes, dur, deps, prio in spec:
        made.append(s.add(Task("t", lanes, dur, deps=[made[d] for d in deps], priority=prio)))
    s.run()
    for t in made:
        assert all(t.start_ns >= d.end_ns for d in t.deps)  # no task before its predecessors
        # non-delay: it starts at 0 or exactly when its cause ends
        assert t.start_ns == (0.0 if t.cause is None else t.cause.end_ns)
    for _lane, ts in s.lanes.items():
        for a, b in zip(ts, ts[1:]):
            assert b.start_ns >= a.end_ns  # a lane runs one task at a time
    path = s.critical_path()
    assert np.isclose(sum(t.duration_ns for t in path), s.makespan_ns)
    for lane in s.lanes:
        assert s.busy_ns(lane) <= s.makespan_ns + 1e-9
