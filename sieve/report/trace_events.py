"""A step's timeline as Chrome/Perfetto trace events (``timeline.json``).

The JSON object format of the Trace Event Format (the one vidur writes and ui.perfetto.dev and
chrome://tracing open): ``{"traceEvents": [...], "displayTimeUnit": "ns"}``. Every task of
``timeline.csv`` becomes a complete event (``"ph": "X"``, ``ts`` and ``dur`` in microseconds,
as the format defines them) on one track per GPU lane: a process per GPU of a recorded step
(``pid``), a thread per lane (``tid``: link, GPU compute, HBM, PIM), named by metadata events
(``"ph": "M"``: ``process_name``, ``thread_name``, ``thread_sort_index``). A collective holds
every GPU's link, so it appears on every GPU's link track. The HBM lane is shared (concurrent
weight loads split it, docs/system.md §1), and a track must not hold overlapping slices, so a
load that starts before the one on its track has ended goes to the lane's next track
(``tid`` ``10 k + lane's``, named "HBM (weights) k+1"), the first with room
(:class:`sieve.report.figures.LaneTracks`, as the timeline figure draws them). ``cat`` is the
task's kind group (:data:`sieve.report.figures.TASK_GROUP`); ``args`` carry layer and
micro-batch.

Built from the table rows only (like the figures); nothing is simulated here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

__all__ = ["LANE_TID", "trace_events", "trace_events_json"]

#: Thread id of each lane (the order Perfetto shows them in).
LANE_TID = {"link": 1, "gpu": 2, "hbm": 3, "pim": 4}
_LANE_NAME = {"link": "link", "gpu": "GPU compute", "hbm": "HBM (weights)", "pim": "PIM"}


def trace_events(rows: Sequence[dict]) -> dict:
    """The trace-event object of timeline rows (``timeline.csv``'s)."""
    from sieve.report.figures import LaneTracks, task_group

    events: list[dict] = []
    sets: dict[tuple, int] = {}
    for r in rows:
        sets.setdefault((r["model"], r["method"], r["batch"], r.get("step", 0)), len(sets))
    gpus: dict[tuple, list[int]] = {k: sorted({r["gpu"] for r in rows
                                               if (r["model"], r["method"], r["batch"],
                                                   r.get("step", 0)) == k and r["gpu"] >= 0})
                                    for k in sets}
    for key, i in sets.items():
        model, method, batch, step = key
        for g in gpus[key] or [0]:
            pid = i * 1000 + g
            label = f"GPU {g}" + ("" if len(sets) == 1 else
                                  f" ({model}, {method}, B={batch}, step {step})")
            events.append({"ph": "M", "name": "process_name", "pid": pid,
                           "args": {"name": label}})
            events.append({"ph": "M", "name": "process_sort_index", "pid": pid,
                           "args": {"sort_index": pid}})
            for lane, tid in LANE_TID.items():
                events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                               "args": {"name": _LANE_NAME[lane]}})
                events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                               "args": {"sort_index": tid}})
    lanes: dict[tuple, LaneTracks] = {}  # (pid, lane) -> its tracks
    keep = [r for r in rows if r["kind"] in LANE_TID and r["end_ns"] > r["start_ns"]]
    for r in sorted(keep, key=lambda r: (r["start_ns"], r["end_ns"])):
        key = (r["model"], r["method"], r["batch"], r.get("step", 0))
        i = sets[key]
        on = gpus[key] if r["gpu"] < 0 else [r["gpu"]]  # a collective: every GPU's link
        for g in on:
            pid, lane = i * 1000 + g, r["kind"]
            k, new = lanes.setdefault((pid, lane), LaneTracks()).place(r["start_ns"],
                                                                       r["end_ns"])
            if new and k:  # a further track of this lane
                tid = 10 * k + LANE_TID[lane]
                events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                               "args": {"name": f"{_LANE_NAME[lane]} {k + 1}"}})
                events.append({"ph": "M", "name": "thread_sort_index", "pid": pid,
                               "tid": tid, "args": {"sort_index": tid}})
            events.append({
                "name": r["name"], "cat": task_group(r["name"]), "ph": "X",
                "ts": r["start_ns"] / 1e3, "dur": (r["end_ns"] - r["start_ns"]) / 1e3,
                "pid": pid, "tid": 10 * k + LANE_TID[lane],
                "args": {"layer": r["layer"], "microbatch": r["mb"]}})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"source": "sieve timeline.csv", "time_unit_of_ts_dur": "us"}}


def trace_events_json(rows: Sequence[dict]) -> bytes:
    """:func:`trace_events` as compact, deterministic JSON bytes."""
    return (json.dumps(trace_events(rows), sort_keys=True, separators=(",", ":"))
            + "\n").encode()
