"""The evaluation as files: the tidy tables, the figures, the run folder.

It reads the tables of an :class:`~sieve.experiments.evaluation.Evaluation` (run by
:func:`sieve.experiments.evaluation.evaluate`; this module runs nothing):

* ``runs.csv``: one row per point (:data:`sieve.system.run.RUN_COLUMNS`);
* ``timeline.csv``: every task of every measured step of the points marked for it (and
  ``timeline.json``, the same tasks as Chrome/Perfetto trace events);
* ``pim_channels.csv``: every PIM program of GPU 0 in that step, per pseudo-channel (busy
  fraction), for the points marked for it;

then :func:`render` draws the figures from those tables' CSV text only
(:mod:`sieve.report.figures`; the same function redraws a result folder) and
:func:`write_evaluation` writes everything (tables, figures as PNG and PDF, ``config.json``) as
one all-or-nothing run folder (:func:`sieve.outputs.write_run`; a store of finished runs in it
is carried over).
"""

from __future__ import annotations

from pathlib import Path

from sieve.experiments.evaluation import Evaluation
from sieve.experiments.points import CHANNEL_COLUMNS, TIMELINE_COLUMNS
from sieve.report import figures
from sieve.report.tables import read_csv, to_csv
from sieve.stages import stage
from sieve.system.run import RUN_COLUMNS

__all__ = ["CHANNEL_COLUMNS", "TIMELINE_COLUMNS", "config_json", "render", "tables",
           "write_evaluation"]


def _rows(data: bytes | None) -> list[dict]:
    import tempfile

    if not data:
        return []
    with tempfile.NamedTemporaryFile(suffix=".csv") as fh:
        fh.write(data)
        fh.flush()
        return read_csv(fh.name)


def render(tabs: dict[str, bytes], *, colocated_model: str | None = None,
           lenient: bool = False, timeline_view: dict | None = None) -> dict[str, bytes]:
    """Figure files (PNG and PDF) drawn from the CSV tables alone (what :func:`tables` returns,
    or the files of a result folder): one Pareto plot per model (Figure 9; per model and
    system when a model ran on several), the channel plot (Figure 10) and the timeline when
    recorded, the colocated plot (Figure 11) when colocated rows exist.

    ``timeline_view``: what the timeline figure draws: ``{"gpu": g, "layers": [..] or
    "all", "step": s}`` (default GPU 0, the first simulated layer, measured step 0).

    ``lenient`` (sweeps): a figure the rows do not fit (several runs per method and batch in
    one Pareto plot, e.g. over seeds or workloads; colocated rows without NoExp) is left out
    with a note on stderr; otherwise such tables raise ConfigError."""
    import sys

    from sieve.errors import ConfigError

    out: dict[str, bytes] = {}
    runs = _rows(tabs.get("runs.csv"))
    channels = _rows(tabs.get("pim_channels.csv"))
    timeline = _rows(tabs.get("timeline.csv"))

    def draw(stem: str, make) -> None:
        try:
            for ext in ("png", "pdf"):
                out[f"{stem}.{ext}"] = figures.figure_bytes(make(), ext)
        except ConfigError as exc:
            if not lenient:
                raise
            out.pop(f"{stem}.png", None)
            print(f"sieve: note: {stem} not drawn: {exc}", file=sys.stderr)

    decode = [r for r in runs if not r["colocated"]]

    def gkey(r):
        return (r["model"], r["system"], r.get("memory") or "", r.get("workload") or "")

    groups = sorted({gkey(r) for r in decode})
    models = {g[0] for g in groups}
    pairs = {g[:2] for g in groups}
    memories = {g[2] for g in groups}
    workloads = {g[3] for g in groups}
    for key in groups:
        model, system, memory, workload = key
        rows = [r for r in decode if gkey(r) == key]
        stem = "fig9_pareto" + ("" if len(groups) == 1 else f"_{model}" if len(models) ==
                                len(pairs) else f"_{model}_{system}")
        if len(memories) > 1:  # several PIM presets
            stem += f"_{memory}"
        if len(workloads) > 1:  # several workloads
            stem += f"_{workload}"
        if lenient and _differ_beyond_seed(rows):
            print(f"sieve: note: {stem} not drawn: several runs per method and batch size "
                  "that differ in more than their seed (options); plot them from runs.csv",
                  file=sys.stderr)
            continue
        draw(stem, lambda rows=rows, model=model: figures.plot_pareto(rows, model))
    if channels:  # Figure 10 for the methods that recorded PIM programs (Sieve and PIMoE
        # in the paper; any method in `sieve timeline`)
        draw("fig10_pim_channels", lambda: figures.plot_pim_channels(channels, methods=None))
    # Figure 11 per colocated case: prefill requests drawn (n_prefill empty) or given (the
    # paper's stress case gives the seed's cap); one figure when only one case ran
    coloc = [r for r in runs if r["colocated"]]
    drawn = [r for r in coloc if r.get("n_prefill") in (None, "")]
    given = [r for r in coloc if r.get("n_prefill") not in (None, "")]
    for stem, rows in (("fig11_colocated", drawn), ("fig11_colocated_stress", given)):
        if rows:
            stem = stem if drawn and given else "fig11_colocated"
            draw(stem, lambda rows=rows: figures.plot_colocated(rows, colocated_model))
    if timeline:
        first = timeline[0]
        sel = [t for t in timeline if (t["model"], t["method"], t["batch"]) ==
               (first["model"], first["method"], first["batch"])]
        view = dict(timeline_view or {})
        step = view.get("step", 0)
        sel = [t for t in sel if t.get("step", 0) == step]
        if not sel:
            raise ConfigError(f"timeline: no measured step {step} (the run measured "
                              f"{1 + max(t.get('step', 0) for t in timeline)})")
        layers = view.get("layers")
        if layers is None:
            layers = [min(t["layer"] for t in sel if t["layer"] >= 0)]
        elif layers == "all":
            layers = None
        gpu = view.get("gpu", 0)
        draw("timeline", lambda: figures.plot_timeline(sel, gpu=gpu, layers=layers))
    return out


def _differ_beyond_seed(rows) -> bool:
    """Whether two rows of one (method, batch) differ in anything but their seed (the Pareto
    plot averages over seeds, nothing else)."""
    from sieve.report.gain import point_key

    keys: dict[tuple, set] = {}
    for r in rows:
        k = tuple(x for x in point_key({**r, "seed": None}))
        keys.setdefault((r["method"], r["batch"]), set()).add(k)
    return any(len(v) > 1 for v in keys.values())


def config_json(ev: Evaluation) -> str:
    """config.json text: the sweep (if declared), every run's inputs and id, the resolved
    systems, and the sieve that produced them (deterministic: no times)."""
    import json

    from sieve.experiments.config import sieve_identity

    systems: dict = {}
    for r in ev.records:  # by name; a different system of the same name gets a suffix
        name = str(r.result.row.get("system", r.point.config.system))
        key, n = name, 1
        while key in systems and systems[key] != r.result.system:
            n += 1
            key = f"{name} ({n})"
        systems[key] = r.result.system
    doc = {"sieve": sieve_identity(),
           "experiment": ev.experiment,
           "runs": [r.point.config.to_dict() for r in ev.records],
           "run_ids": [r.id for r in ev.records], "systems": systems}
    return json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n"


def tables(ev: Evaluation) -> dict[str, bytes]:
    """The CSV tables and config.json of an evaluation, as file bytes; runs.csv carries each
    run's speedup over GPU-only and over the best other method at its point
    (:mod:`sieve.report.gain`)."""
    from sieve.report.gain import GAIN_COLUMNS, add_gains

    # each key of a run's system_overrides is a column of its own ("system.<key>")
    extra = sorted({k for r in ev.runs for k in r if k.startswith("system.")})
    out = {"runs.csv": to_csv(add_gains(ev.runs), (*RUN_COLUMNS, *extra, *GAIN_COLUMNS)
                              ).encode(),
           "config.json": config_json(ev).encode()}
    if ev.timeline:
        out["timeline.csv"] = to_csv(ev.timeline, TIMELINE_COLUMNS).encode()
    if ev.channels:
        out["pim_channels.csv"] = to_csv(ev.channels, CHANNEL_COLUMNS).encode()
    return out


def write_evaluation(ev: Evaluation, out_dir: str | Path, *, command: str = "run",
                     figures_too: bool = True, lenient: bool = False,
                     timeline_view: dict | None = None) -> list[Path]:
    """Write the tables, config.json and (from the tables) the figures into ``out_dir``, as
    one run folder (all or nothing, :func:`sieve.outputs.write_run`). ``lenient``: a figure
    the tables cannot make is left out with a note on stderr instead of failing (sweeps)."""
    from sieve.outputs import write_run

    with stage("io"):
        payload = tables(ev)
    if figures_too:
        with stage("figures"):
            payload.update(render(payload, lenient=lenient, timeline_view=timeline_view))
            if ev.timeline:  # the timeline as Chrome/Perfetto trace events (ui.perfetto.dev)
                from sieve.report.trace_events import trace_events_json

                payload["timeline.json"] = trace_events_json(ev.timeline)
    with stage("io"):
        return write_run(out_dir, payload, command=command)
