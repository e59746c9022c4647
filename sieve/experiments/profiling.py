"""The profiling harness (``sieve profile``): where a run's or a sweep's time goes.

:func:`profile_points` runs points in this process, one after another, as a sweep with one job
does (each finished run written to a run store in a temporary folder, then the tables built and
the figures drawn), with

* the stage timers of :mod:`sieve.stages` on: exclusive wall time per stage (``trace``:
  batches and routing; ``dag``: building step graphs with the GPU and link cost models;
  ``scheduling``: the schedulers' decisions; ``pim``: PIM programs, lowering and engine;
  ``list_scheduling``: placing tasks; ``io``: run files and tables; ``figures``), their
  intervals, and the engine's command counts (simulated, and reported: a program whose
  channels run identical streams from identical states is simulated on one channel and
  reported for all);
* optionally :mod:`cProfile` (its per-call overhead inflates the Python-heavy stages, so the
  stage split is also available without it: ``--no-cprofile``).

The result (:class:`ProfileReport`) gives the stage table, the commands simulated per
second of PIM time, the slowest runs, the cProfile top functions, and two files standard
viewers open: ``profile.pstats`` (:mod:`pstats` / snakeviz / gprof2dot) and
``profile.speedscope.json`` (the stage timeline as a speedscope "evented" profile: one frame
per run, nested stage frames inside).

This module measures and formats; the command line writes the files.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sieve.experiments.points import Point
from sieve.stages import StageTimes, collect, stage

__all__ = ["STAGE_LABELS", "ProfileReport", "profile_points", "speedscope_json"]

#: Stages in report order, with what they cover.
STAGE_LABELS = {
    "trace": "batch and routing generation",
    "dag": "step graph building (GPU and link cost models)",
    "scheduling": "scheduler decisions",
    "pim": "PIM programs (lowering + cycle-accurate engine)",
    "list_scheduling": "list scheduling (placing tasks on lanes)",
    "io": "I/O (run files, tables)",
    "figures": "figures",
    "other": "other (run setup, summaries, outside any stage)",
}
_RUN_PREFIX = "run: "


@dataclass
class ProfileReport:
    """What :func:`profile_points` measured.

    Attributes:
        times: the stage timers (:class:`sieve.stages.StageTimes`).
        runs: ``(description, seconds)`` per point, in order.
        pstats_bytes: the cProfile data (``pstats`` marshal format), or None.
        top: the cProfile top functions as text, or "".
        cprofile: whether cProfile was on.
        evaluation: the evaluation (tables) of the points.
    """

    times: StageTimes
    runs: list[tuple[str, float]] = field(default_factory=list)
    pstats_bytes: bytes | None = None
    top: str = ""
    cprofile: bool = True
    evaluation: object = None

    def stage_rows(self) -> list[dict]:
        """One row per stage: seconds, share of the wall time, calls."""
        sec = dict(self.times.seconds)
        other = sec.pop("other", 0.0)
        for k in [k for k in sec if k.startswith(_RUN_PREFIX)]:
            other += sec.pop(k)  # a run's own time outside its stages
        sec["other"] = other
        wall = self.times.wall_s or 1.0
        keys = [k for k in STAGE_LABELS if k in sec] + sorted(k for k in sec
                                                               if k not in STAGE_LABELS)
        return [{"stage": k, "what": STAGE_LABELS.get(k, k), "seconds": sec[k],
                 "share": sec[k] / wall, "calls": self.times.calls.get(k, 0)} for k in keys]

    def commands(self) -> dict[str, float]:
        c = self.times.counts
        pim_s = self.times.seconds.get("pim", 0.0)
        sim, rep = c.get("pim_commands_simulated", 0.0), c.get("pim_commands", 0.0)
        return {"programs": c.get("pim_programs", 0.0), "simulated": sim, "reported": rep,
                "pim_seconds": pim_s,
                "simulated_per_s": sim / pim_s if pim_s else 0.0,
                "reported_per_s": rep / pim_s if pim_s else 0.0,
                "simulated_per_wall_s": sim / self.times.wall_s if self.times.wall_s else 0.0}

    def text(self, slowest: int = 10) -> str:
        """The report as printed by ``sieve profile``."""
        t = self.times
        lines = [f"{len(self.runs)} run(s) in this process, wall {t.wall_s:.2f} s"
                 + (" (cProfile on: its overhead is inside these times; --no-cprofile for "
                    "the stage split without it)" if self.cprofile else " (cProfile off)")]
        lines.append(f"{'stage':<16} {'seconds':>9} {'share':>7} {'calls':>8}  what")
        for r in self.stage_rows():
            lines.append(f"{r['stage']:<16} {r['seconds']:>9.2f} {100 * r['share']:>6.1f}% "
                         f"{r['calls']:>8}  {r['what']}")
        c = self.commands()
        if c["programs"]:
            lines.append(
                f"engine: {int(c['programs'])} PIM programs, {c['simulated'] / 1e6:.2f} M "
                f"commands simulated ({c['reported'] / 1e6:.2f} M reported), "
                f"{c['simulated_per_s'] / 1e6:.2f} M simulated commands/s of PIM stage time "
                f"({c['reported_per_s'] / 1e6:.2f} M reported/s; "
                f"{c['simulated_per_wall_s'] / 1e6:.2f} M simulated/s of wall time)")
        if self.runs:
            lines.append(f"slowest runs (of {len(self.runs)}):")
            for d, s in sorted(self.runs, key=lambda x: -x[1])[:slowest]:
                lines.append(f"  {s:8.2f} s  {d}")
        if self.top:
            lines.append("cProfile top functions (by own time):")
            lines.append(self.top.rstrip())
        return "\n".join(lines) + "\n"

    def stages_csv(self) -> str:
        from io import StringIO

        buf = StringIO()
        buf.write("stage,seconds,share,calls,what\n")
        for r in self.stage_rows():
            buf.write(f"{r['stage']},{r['seconds']:.6f},{r['share']:.6f},{r['calls']},"
                      f"\"{r['what']}\"\n")
        return buf.getvalue()


def profile_points(points: Sequence[Point], *, cprofile: bool = True, top: int = 25,
                   finish: Callable[[list, str], object] | None = None) -> ProfileReport:
    """Run ``points`` here as a one-job sweep does, measuring (module doc). ``finish(records,
    folder)``: what the sweep does at its end (the command line passes the writer of tables
    and figures, which sit above this package); its time is measured too."""
    import cProfile
    import io
    import marshal
    import pstats
    import tempfile

    from sieve.experiments.config import check_point
    from sieve.experiments.executor import execute
    from sieve.experiments.store import RunStore

    for p in points:
        check_point(p)
    prof = cProfile.Profile() if cprofile else None
    runs: list[tuple[str, float]] = []
    result = None
    with tempfile.TemporaryDirectory(prefix="sieve-profile-") as tmp:
        store = RunStore(f"{tmp}/out")
        with collect(events=True) as times:
            if prof is not None:
                prof.enable()
            try:
                records = []
                for p in points:  # one at a time, each inside its run frame
                    t0 = time.perf_counter()
                    with stage(_RUN_PREFIX + p.describe()):
                        records += execute([p], jobs=1, store=store, rerun=True,
                                           progress=False).records
                    runs.append((p.describe(), time.perf_counter() - t0))
                if finish is not None:
                    result = finish(records, f"{tmp}/out")
            finally:
                if prof is not None:
                    prof.disable()
    rep = ProfileReport(times, runs, cprofile=cprofile, evaluation=result)
    if prof is not None:
        st = pstats.Stats(prof)
        rep.pstats_bytes = marshal.dumps(st.stats)  # what Stats.dump_stats writes
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
        text = buf.getvalue()
        rep.top = text[text.find("   ncalls"):] if "   ncalls" in text else text
    return rep


def speedscope_json(times: StageTimes, name: str) -> str:
    """The stage intervals as a speedscope "evented" profile (https://www.speedscope.app):
    properly nested open/close events in time order."""
    frames: dict[str, int] = {}
    events: list[dict] = []
    stack: list[tuple[int, float, int]] = []  # (frame, end, depth)
    last = 0.0

    def close_top() -> None:
        nonlocal last
        f, end, _ = stack.pop()
        last = max(last, end)
        events.append({"type": "C", "frame": f, "at": last})

    for n, s, e, d in sorted(times.events, key=lambda x: (x[1], x[3])):
        while stack and stack[-1][2] >= d:
            close_top()
        f = frames.setdefault(n, len(frames))
        last = max(last, s)
        events.append({"type": "O", "frame": f, "at": last})
        stack.append((f, e, d))
    while stack:
        close_top()
    doc = {"$schema": "https://www.speedscope.app/file-format-schema.json",
           "shared": {"frames": [{"name": n} for n in frames]},
           "profiles": [{"type": "evented", "name": name, "unit": "seconds", "startValue": 0.0,
                         "endValue": max(times.wall_s, last), "events": events}],
           "name": name, "activeProfileIndex": 0, "exporter": "sieve profile"}
    return json.dumps(doc)
