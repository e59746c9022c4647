"""The evaluation as files: run the points, build the tidy tables, draw the figures, write all.

:func:`evaluate` takes a list of :class:`~sieve.system.run.RunConfig` points (a small sweep for
``sieve run``, the seed's Figures 9-11 for ``sieve run --paper``) and returns the tables:

* ``runs.csv``: one row per point (:data:`sieve.system.run.RUN_COLUMNS`);
* ``timeline.csv``: every task of the first measured step of the points marked for it;
* ``pim_channels.csv``: every PIM program of GPU 0 in that step, per pseudo-channel (busy
  fraction), for the points marked for it;

then :func:`render` draws the figures from those tables' CSV text only
(:mod:`sieve.report.figures`; the same function redraws a result folder) and
:func:`write_evaluation` writes everything (tables, figures as PNG and PDF, ``config.json``) as
one all-or-nothing run folder (:func:`sieve.outputs.write_run`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sieve.report import figures
from sieve.report.tables import read_csv, to_csv
from sieve.system.run import RUN_COLUMNS, RunConfig, RunResult, config_json, simulate_run

__all__ = ["Evaluation", "Point", "evaluate", "render", "write_evaluation"]

TIMELINE_COLUMNS = ("model", "method", "batch", "step", "name", "kind", "gpu", "layer", "mb",
                    "start_ns", "end_ns")
CHANNEL_COLUMNS = ("model", "method", "batch", "program", "kind", "layer", "mb", "start_ns",
                   "end_ns", "pc", "busy_frac")


@dataclass(frozen=True)
class Point:
    """A run and what to record of it besides its row."""

    config: RunConfig
    timeline: bool = False
    channels: bool = False


@dataclass
class Evaluation:
    """The tables of an evaluation (lists of dict rows) and the runs' inputs."""

    runs: list[dict] = field(default_factory=list)
    timeline: list[dict] = field(default_factory=list)
    channels: list[dict] = field(default_factory=list)
    results: list[RunResult] = field(default_factory=list)


def evaluate(points: Sequence[Point], progress: Callable[[int, int, RunConfig], None] | None
             = None) -> Evaluation:
    """Run every point (in order) and collect the tables. Every point's model, system and
    workload are resolved first, so a bad one fails before anything runs."""
    from sieve.model.moe import get_model
    from sieve.workload.profiles import get_profile

    seen: set = set()
    for p in points:
        c = p.config
        key = (c.model, c.system, c.system_overrides, c.workload, c.trace)
        if key not in seen:
            seen.add(key)
            get_model(c.model)
            c.resolve_system()
            get_profile(c.workload)
            if c.trace is not None:
                from sieve.workload.trace import load_trace

                load_trace(c.trace, mmap=True)
    ev = Evaluation()
    for i, p in enumerate(points):
        if progress is not None:
            progress(i, len(points), p.config)
        keep = p.timeline or p.channels
        res = simulate_run(p.config, keep_steps=keep)
        ev.results.append(res)
        ev.runs.append(res.row)
        if not keep:
            continue
        step = res.steps[0]
        base = {"model": res.row["model"], "method": res.row["method"],
                "batch": res.row["batch"]}
        if p.timeline:
            ev.timeline += [{**base, "step": 0, **{k: t[k] for k in TIMELINE_COLUMNS[4:]}}
                            for t in step.tasks]
        if p.channels:
            for j, c in enumerate(step.pim_channels):
                span = c["end_ns"] - c["start_ns"]
                for pc, busy in enumerate(c["pc_busy_ns"].tolist()):
                    ev.channels.append({**base, "program": j, "kind": c["kind"],
                                        "layer": c["layer"], "mb": c["mb"],
                                        "start_ns": c["start_ns"], "end_ns": c["end_ns"],
                                        "pc": pc, "busy_frac": busy / span if span else 0.0})
    if progress is not None:
        progress(len(points), len(points), None)
    return ev


def _rows(data: bytes | None) -> list[dict]:
    import tempfile

    if not data:
        return []
    with tempfile.NamedTemporaryFile(suffix=".csv") as fh:
        fh.write(data)
        fh.flush()
        return read_csv(fh.name)


def render(tabs: dict[str, bytes], *, colocated_model: str | None = None) -> dict[str, bytes]:
    """Figure files (PNG and PDF) drawn from the CSV tables alone (what :func:`tables` returns,
    or the files of a result folder): one Pareto plot per model (Figure 9), the channel plot
    (Figure 10) and the timeline when recorded, the colocated plot (Figure 11) when colocated
    rows exist."""
    out: dict[str, bytes] = {}
    runs = _rows(tabs.get("runs.csv"))
    channels = _rows(tabs.get("pim_channels.csv"))
    timeline = _rows(tabs.get("timeline.csv"))
    decode = [r for r in runs if not r["colocated"]]
    for model in sorted({r["model"] for r in decode}):
        stem = "fig9_pareto" + ("" if len({r["model"] for r in decode}) == 1 else
                                f"_{model}")
        for ext in ("png", "pdf"):
            out[f"{stem}.{ext}"] = figures.figure_bytes(figures.plot_pareto(decode, model), ext)
    if channels:
        for ext in ("png", "pdf"):
            out[f"fig10_pim_channels.{ext}"] = figures.figure_bytes(
                figures.plot_pim_channels(channels), ext)
    if any(r["colocated"] for r in runs):
        for ext in ("png", "pdf"):
            out[f"fig11_colocated.{ext}"] = figures.figure_bytes(
                figures.plot_colocated(runs, colocated_model), ext)
    if timeline:
        first = timeline[0]
        sel = [t for t in timeline if (t["model"], t["method"], t["batch"]) ==
               (first["model"], first["method"], first["batch"])]
        layer = min(t["layer"] for t in sel if t["layer"] >= 0)
        for ext in ("png", "pdf"):
            out[f"timeline.{ext}"] = figures.figure_bytes(
                figures.plot_timeline(sel, gpu=0, layers=[layer]), ext)
    return out


def tables(ev: Evaluation) -> dict[str, bytes]:
    out = {"runs.csv": to_csv(ev.runs, RUN_COLUMNS).encode(),
           "config.json": config_json(ev.results).encode()}
    if ev.timeline:
        out["timeline.csv"] = to_csv(ev.timeline, TIMELINE_COLUMNS).encode()
    if ev.channels:
        out["pim_channels.csv"] = to_csv(ev.channels, CHANNEL_COLUMNS).encode()
    return out


def write_evaluation(ev: Evaluation, out_dir: str | Path, *, command: str = "run",
                     figures_too: bool = True) -> list[Path]:
    """Write the tables, config.json and (from the tables) the figures into ``out_dir``, as
    one run folder (all or nothing, :func:`sieve.outputs.write_run`)."""
    from sieve.outputs import write_run

    payload = tables(ev)
    if figures_too:
        payload.update(render(payload))
    return write_run(out_dir, payload, command=command)


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
    """Seed Figures 9-11 in full: each Figure 9 setup over B = 1..256, Figure 10's channels
    (Sieve and PIMoE on GPT-OSS at B = 64), Figure 11's colocated batches on Qwen3."""
    from sieve.system import setups

    pts: list[Point] = []
    for s in setups.FIG9.values():
        pts += sweep_points(s.model, s.system, methods, setups.FIG9_BATCHES,
                            timeline_method="sieve" if s == setups.MAIN else None,
                            channel_batch=setups.FIG10_BATCH if s == setups.FIG10 else None,
                            **run_kw)
    s = setups.FIG11
    pts += [Point(RunConfig(model=s.model, system=s.system, method=m, batch=b,
                            colocated=True, **run_kw))
            for m in methods for b in setups.FIG11_BATCHES]
    return pts
