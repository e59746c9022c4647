"""Points of an evaluation and one point simulated into a record (its rows as plain data).

A :class:`Point` is a :class:`~sieve.system.run.RunConfig` and what to record of its first
measured step besides its summary row: every task (``timeline``) and every PIM program of GPU 0
per pseudo-channel (``channels``). :func:`simulate_point` runs it and returns a
:class:`PointResult` of plain rows (what a run file stores and what a worker process sends
back); :func:`sweep_points` and :func:`paper_points` are the point lists of ``sieve run`` and
``sieve run --paper``.

This module simulates and returns numbers; it writes no file and draws nothing.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sieve.system.run import RunConfig, simulate_run

__all__ = ["CHANNEL_COLUMNS", "TIMELINE_COLUMNS", "Point", "PointResult", "paper_points",
           "simulate_point", "sweep_points"]

#: Columns of timeline.csv (every task of every measured step of a recorded point; ``step``
#: counts the measured steps from 0).
TIMELINE_COLUMNS = ("model", "system", "memory", "workload", "method", "batch", "step", "name",
                    "kind", "gpu", "layer", "mb", "start_ns", "end_ns")
#: Columns of pim_channels.csv (every PIM program of GPU 0 in that step, per pseudo-channel).
CHANNEL_COLUMNS = ("model", "system", "memory", "workload", "method", "batch", "program", "kind",
                   "layer", "mb", "start_ns", "end_ns", "pc", "busy_frac")


@dataclass(frozen=True)
class Point:
    """A run and what to record of it besides its row."""

    config: RunConfig
    timeline: bool = False
    channels: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.config.to_dict(), "timeline": bool(self.timeline),
                "channels": bool(self.channels)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Point:
        return cls(RunConfig.from_dict(d["run"]), bool(d.get("timeline", False)),
                   bool(d.get("channels", False)))

    def describe(self) -> str:
        c = self.config
        return (f"{c.model} on {c.system}: {c.method}, B={c.batch}"
                + (" colocated" if c.colocated else "") + (f", seed {c.seed}" if c.seed else ""))


@dataclass(frozen=True, eq=False)
class PointResult:
    """A simulated point as plain data: its summary row (:data:`sieve.system.run.RUN_COLUMNS`),
    its timeline and channel rows (empty unless recorded) and its resolved system."""

    row: dict[str, Any]
    timeline: list[dict[str, Any]] = field(default_factory=list)
    channels: list[dict[str, Any]] = field(default_factory=list)
    system: dict[str, Any] = field(default_factory=dict)


def simulate_point(point: Point, *, inputs: MutableMapping | None = None) -> PointResult:
    """Simulate one point (:func:`sieve.system.run.simulate_run`; ``inputs``: its memo of step
    inputs) and keep what it records."""
    keep = point.timeline or point.channels
    res = simulate_run(point.config, keep_steps=keep, inputs=inputs)
    timeline: list[dict] = []
    channels: list[dict] = []
    if keep:
        step = res.steps[0]
        base = {k: res.row[k] for k in ("model", "system", "memory", "workload", "method",
                                        "batch")}
        if point.timeline:
            timeline = [{**base, "step": i, **{k: t[k] for k in TIMELINE_COLUMNS[7:]}}
                        for i, st in enumerate(res.steps) for t in st.tasks]
        if point.channels:
            for j, c in enumerate(step.pim_channels):
                span = c["end_ns"] - c["start_ns"]
                for pc, busy in enumerate(c["pc_busy_ns"].tolist()):
                    channels.append({**base, "program": j, "kind": c["kind"],
                                     "layer": c["layer"], "mb": c["mb"],
                                     "start_ns": c["start_ns"], "end_ns": c["end_ns"],
                                     "pc": pc, "busy_frac": busy / span if span else 0.0})
    return PointResult(res.row, timeline, channels, res.system.to_dict())


def sweep_points(model: str, system: str, methods: Sequence[str], batches: Sequence[int], *,
                 timeline_method: str | None = None, channel_batch: int | None = None,
                 **run_kw) -> list[Point]:
    """Every (method, batch) of one model and system; the timeline of ``timeline_method`` at
    the middle batch and the PIM channels of sieve and pimoe at ``channel_batch`` recorded."""
    mid = sorted(batches)[len(batches) // 2]
    out = []
    for m in methods:
        for b in batches:
            cfg = RunConfig(model=model, system=system, method=m, batch=b, **run_kw)
            out.append(Point(cfg, timeline=(m == timeline_method and b == mid),
                             channels=(b == channel_batch and m in ("sieve", "pimoe"))))
    return out


def paper_points(methods: Sequence[str], **run_kw) -> list[Point]:
    """Seed Figures 9-11 in full: each Figure 9 setup over B = 1..256 on both datasets
    (HH-RLHF, MATH-500), Figure 10's channels (Sieve and PIMoE on GPT-OSS at B = 64, HH-RLHF),
    Figure 11's colocated batches on Qwen3, drawn and stress (sieve.system.setups)."""
    from sieve.system import setups
    from sieve.workload.batch import prefill_cap

    pts: list[Point] = []
    run_kw = dict(run_kw)
    coloc_kw = {"workload": run_kw.pop("workload")} if "workload" in run_kw else {}
    for s in setups.FIG9.values():
        for w in setups.FIG9_WORKLOADS:
            main = w == setups.FIG9_WORKLOADS[0]
            pts += sweep_points(s.model, s.system, methods, setups.FIG9_BATCHES,
                                timeline_method="sieve" if s == setups.MAIN and main else None,
                                channel_batch=(setups.FIG10_BATCH if s == setups.FIG10 and main
                                               else None),
                                workload=w, **run_kw)
    s = setups.FIG11
    pts += [Point(RunConfig(model=s.model, system=s.system, method=m, batch=b,
                            colocated=True, **run_kw, **coloc_kw))
            for m in methods for b in setups.FIG11_BATCHES]
    pts += [Point(RunConfig(model=s.model, system=s.system, method=m, batch=b,
                            colocated=True, n_prefill=prefill_cap(b), **run_kw, **coloc_kw))
            for b in setups.FIG11_BATCHES for m in methods]
    return pts
