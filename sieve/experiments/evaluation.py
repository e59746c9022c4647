"""Running an evaluation: points through the executor, collected into tables (lists of rows).

:func:`evaluate` runs a list of :class:`~sieve.experiments.points.Point` (a small sweep for
``sieve run``, the seed's Figures 9-11 for ``sieve run --paper``, any ``sieve sweep``) through
:func:`sieve.experiments.executor.execute` (in this process, in worker processes or on Dask;
resumable with a run store) and returns an :class:`Evaluation`: the ``runs``, ``timeline`` and
``channels`` rows in point order. :mod:`sieve.report.evaluation` only reads such tables (CSV
text, figures, the run folder); it never runs anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sieve.experiments.executor import ExecResult
from sieve.experiments.points import Point
from sieve.experiments.store import RunRecord

__all__ = ["Evaluation", "evaluate", "evaluation_of"]


@dataclass
class Evaluation:
    """The tables of an evaluation (lists of dict rows), the run records they come from, and
    the sweep they were declared by (if any)."""

    runs: list[dict] = field(default_factory=list)
    timeline: list[dict] = field(default_factory=list)
    channels: list[dict] = field(default_factory=list)
    records: list[RunRecord] = field(default_factory=list)
    experiment: dict | None = None
    execution: ExecResult | None = None  # how the runs went (None: built from records)


def evaluation_of(records: Sequence[RunRecord], experiment: dict | None = None) -> Evaluation:
    """The tables of these run records, in their order."""
    ev = Evaluation(records=list(records), experiment=experiment)
    for r in records:
        ev.runs.append(r.result.row)
        ev.timeline += r.result.timeline
        ev.channels += r.result.channels
    return ev


def evaluate(points: Sequence[Point], *, jobs: int = 1, scheduler: str | None = None,
             store=None, rerun: bool = False, cache_entries: list | None = None,
             progress: bool = False, experiment: dict | None = None) -> Evaluation:
    """Run every point (:func:`sieve.experiments.executor.execute`; default: in this process,
    no store, quiet) and collect the tables in point order. Every point's model, system,
    workload and trace are resolved first, so a bad one fails before anything runs."""
    from sieve.experiments.config import check_point
    from sieve.experiments.executor import execute

    for p in points:
        check_point(p)
    res = execute(points, jobs=jobs, scheduler=scheduler, store=store, rerun=rerun,
                  cache_entries=cache_entries, progress=progress)
    ev = evaluation_of(res.records, experiment)
    ev.execution = res
    return ev
