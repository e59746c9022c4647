"""The evaluation's figures, drawn from result tables only (seed Figures 9, 10, 11 and a
per-layer timeline): ``plot_<name>(rows, ..., ax=None) -> Figure``.

Inputs are the tidy tables :mod:`sieve.system.run` writes (``runs.csv``,
``pim_channels.csv``, ``timeline.csv``), read back with :func:`sieve.report.tables.read_csv`
or passed as the rows themselves. Nothing here simulates; matplotlib is imported lazily with
the Agg backend.

* :func:`plot_pareto` (Figure 9): throughput per GPU against interactivity, one line per
  method over batch sizes.
* :func:`plot_pim_channels` (Figure 10): per-pseudo-channel PIM utilisation over a step, one
  panel per method (Sieve's tensor parallelism against PIMoE's expert parallelism).
* :func:`plot_colocated` (Figure 11): colocated prefill+decode throughput relative to NoExp.
* :func:`plot_timeline`: a Gantt chart of one GPU's lanes (link, GPU compute, HBM, PIM).
"""

from __future__ import annotations

from collections.abc import Sequence

from sieve.errors import ConfigError

__all__ = ["GROUP_COLOR", "LaneTracks", "METHOD_STYLE", "TASK_GROUP", "figure_bytes",
           "plot_colocated", "plot_pareto", "plot_pim_channels", "plot_timeline", "task_group"]

#: Colour and marker of every method (the same in every figure): the Okabe-Ito colour-blind
#: safe palette for the evaluated methods (each also has its own marker), greys and muted
#: tones for the ablations.
METHOD_STYLE = {
    "gpu-only": ("#999999", "x"), "noexp": ("#0072B2", "s"), "allexp": ("#E69F00", "^"),
    "pimoe": ("#009E73", "D"), "duplex": ("#CC79A7", "v"), "sieve": ("#D55E00", "o"),
    "sieve-cp": ("#000000", "P"),
    "sieve-noattn": ("#56B4E9", "o"), "sieve-nocomm": ("#F0E442", "o"),
    "sieve-roofline": ("#666666", "o"), "sieve-nofixed": ("#8C6D31", "o"),
    "optimal": ("#333333", "*"),
}
METHOD_LABEL = {"gpu-only": "GPU-only", "noexp": "NoExp", "allexp": "AllExp",
                "pimoe": "PIMoE", "duplex": "Duplex", "sieve": "Sieve", "sieve-cp": "Sieve-CP"}
LANES = ("link", "gpu", "hbm", "pim")
LANE_LABEL = {"link": "link", "gpu": "GPU compute", "hbm": "HBM (weights)", "pim": "PIM"}
#: The kind group of a task (timeline legend, trace-event categories), and each group's colour
#: (Okabe-Ito, colour-blind safe). Weight loads are "<op>_load".
TASK_GROUP = {
    "attn": "attention", "prefill_attn": "attention", "gdn": "attention",
    "qkv": "projections", "o_proj": "projections", "router": "projections",
    "dense_ffn": "projections", "lm_head": "projections",
    "norm": "small kernels", "rope_kv": "small kernels", "meta": "small kernels",
    "wsum": "small kernels", "sampler": "small kernels", "scheduler": "scheduler",
    "experts_gpu": "experts on GPU", "shared": "experts on GPU",
    "experts_pim": "experts on PIM",
    "allgather": "communication", "dispatch": "communication", "combine": "communication",
    "allreduce_attn": "communication", "allreduce_moe": "communication",
}
GROUP_COLOR = {
    "attention": "#E69F00", "projections": "#56B4E9", "small kernels": "#999999",
    "scheduler": "#000000", "experts on GPU": "#D55E00", "experts on PIM": "#CC79A7",
    "communication": "#009E73", "weight loads": "#0072B2", "other": "#F0E442",
}


def task_group(name: str) -> str:
    """The kind group of a task name (:data:`TASK_GROUP`; ``*_load`` = weight loads)."""
    if name.endswith("_load"):
        return "weight loads"
    return TASK_GROUP.get(name, "other")




def _mpl():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "cairo"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _new(ax, size=(6.4, 4.2)):
    plt = _mpl()
    if ax is None:
        fig, ax = plt.subplots(figsize=size)
    else:
        fig = ax.figure
    return fig, ax


def figure_bytes(fig, ext: str) -> bytes:
    """A figure as file bytes (byte-reproducible, :func:`sieve.report.plots.render`); the
    figure is closed."""
    from sieve.report.plots import render

    try:
        return render(fig, ext)
    finally:
        _mpl().close(fig)


def _label(m: str) -> str:
    return METHOD_LABEL.get(m, m)


def _need(rows: Sequence[dict], cols: Sequence[str], what: str) -> None:
    if not rows:
        raise ConfigError(f"{what}: the table has no rows")
    missing = [c for c in cols if c not in rows[0]]
    if missing:
        raise ConfigError(f"{what}: the table lacks column(s) {', '.join(missing)}")


def _order(methods) -> list[str]:
    known = list(METHOD_STYLE)
    return sorted(set(methods), key=lambda m: (known.index(m) if m in known else 99, m))


def plot_pareto(rows: Sequence[dict], model: str | None = None, *, ax=None):
    """Figure 9: one line per method through its (interactivity, throughput/GPU) points."""
    _need(rows, ("model", "method", "batch", "throughput_tok_s_gpu",
                 "interactivity_tok_s_user"), "Pareto plot")
    rows = [r for r in rows if not r.get("colocated")]
    models = sorted({r["model"] for r in rows})
    if model is None:
        if len(models) != 1:
            raise ConfigError(f"Pareto plot: choose a model (the table has {', '.join(models)})")
        model = models[0]
    rows = [r for r in rows if r["model"] == model]
    if not rows:
        raise ConfigError(f"Pareto plot: no decode-only rows for model {model!r}")
    import numpy as np

    fig, ax = _new(ax)
    seeds = max(sum(1 for x in rows if (x["method"], x["batch"]) == (r["method"], r["batch"]))
                for r in rows)
    for m in _order(r["method"] for r in rows):
        batches = sorted({r["batch"] for r in rows if r["method"] == m})
        xs, ys, xe, ye = [], [], [], []
        for b in batches:  # several seeds of a point: their mean, with min-max bars
            sel = [r for r in rows if r["method"] == m and r["batch"] == b]
            x = np.array([r["interactivity_tok_s_user"] for r in sel], dtype=float)
            y = np.array([r["throughput_tok_s_gpu"] for r in sel], dtype=float)
            xs.append(x.mean())
            ys.append(y.mean())
            xe.append((x.mean() - x.min(), x.max() - x.mean()))
            ye.append((y.mean() - y.min(), y.max() - y.mean()))
        c, mk = METHOD_STYLE.get(m, ("k", "."))
        ax.plot(xs, ys, color=c, marker=mk, label=_label(m))
        if seeds > 1:
            ax.errorbar(xs, ys, xerr=np.array(xe).T, yerr=np.array(ye).T, fmt="none", ecolor=c,
                        elinewidth=0.8, capsize=2)
        if m == "sieve":
            labels = list(zip(xs, ys, batches))
    if "sieve" in {r["method"] for r in rows}:
        _place_labels(ax, labels)
    system = rows[0].get("system", "")
    workload = rows[0].get("workload", "")
    ax.set_xlabel("Interactivity (tokens/s/user)")
    ax.set_ylabel("Throughput (tokens/s/GPU)")
    title = f"{model} on {system}" if system else model
    memory = rows[0].get("memory", "")
    title += (f" ({memory})" if memory else "") + (f", {workload}" if workload else "")
    if seeds > 1:
        title += f", mean of {seeds} seeds (bars: min-max)"
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


#: Offsets (points) tried in turn for a point's label: right-above, left-above, right-below,
#: left-below, further out.
_LABEL_OFFSETS = ((4, 4), (-4, 4), (4, -4), (-4, -4), (8, 10), (-8, 10), (8, -12), (-8, -12),
                  (0, 14), (0, -16))


def _place_labels(ax, labels) -> None:
    """Batch-size labels beside their points, each at the first offset where its box stays
    inside the axes and overlaps neither an earlier label nor any marker of the plot; a label
    with no such place is left out (tests/test_figures.py checks the result)."""
    fig = ax.figure
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    inside = ax.get_window_extent(r)
    markers = []
    for line in ax.lines:
        for x, y in line.get_xydata():
            px, py = ax.transData.transform((x, y))
            ms = line.get_markersize() * fig.dpi / 72 / 2 + 1
            markers.append((px - ms, py - ms, px + ms, py + ms))
    placed = []

    def clash(b):
        if b.x0 < inside.x0 or b.x1 > inside.x1 or b.y0 < inside.y0 or b.y1 > inside.y1:
            return True
        for x0, y0, x1, y1 in markers + placed:
            if b.x0 < x1 and b.x1 > x0 and b.y0 < y1 and b.y1 > y0:
                return True
        return False

    for x, y, b in labels:
        for dx, dy in _LABEL_OFFSETS:
            t = ax.annotate(f"B={b}", (x, y), fontsize=6, xytext=(dx, dy),
                            textcoords="offset points", ha="left" if dx >= 0 else "right",
                            va="bottom" if dy >= 0 else "top")
            bb = t.get_window_extent(r)
            if not clash(bb):
                placed.append((bb.x0, bb.y0, bb.x1, bb.y1))
                break
            t.remove()


def plot_pim_channels(rows: Sequence[dict], methods: Sequence[str] | None = ("sieve", "pimoe"),
                      *, axes=None):
    """Figure 10: busy fraction of every pseudo-channel during each PIM program of a step
    (x: time from the step's start, y: pseudo-channel), one panel per method (``methods``
    None: every method in the rows)."""
    _need(rows, ("method", "program", "start_ns", "end_ns", "pc", "busy_frac"),
          "PIM channel plot")
    import numpy as np

    plt = _mpl()
    if methods is None:
        methods = _order(r["method"] for r in rows)
    present = [m for m in methods if any(r["method"] == m for r in rows)]
    if not present:
        raise ConfigError(f"PIM channel plot: none of {', '.join(methods)} in the table")
    if axes is None:
        fig, axes = plt.subplots(len(present), 1, figsize=(6.4, 2.3 * len(present) + 0.6),
                                 sharex=True, squeeze=False)
        axes = axes[:, 0]
    else:
        fig = axes[0].figure
    mesh = None
    for ax, m in zip(axes, present):
        sel = [r for r in rows if r["method"] == m]
        progs = sorted({r["program"] for r in sel})
        n_pc = max(r["pc"] for r in sel) + 1
        t0 = min(r["start_ns"] for r in sel)
        edges, grid = [], np.full((n_pc, 2 * len(progs)), np.nan)
        for j, p in enumerate(progs):
            pr = [r for r in sel if r["program"] == p]
            s, e = (pr[0]["start_ns"] - t0) / 1e3, (pr[0]["end_ns"] - t0) / 1e3
            edges += [s, e]
            for r in pr:
                grid[r["pc"], 2 * j] = r["busy_frac"]
        # gaps between programs are drawn empty (NaN); edges must increase
        x = np.maximum.accumulate(np.array(edges + [edges[-1]]))
        mesh = ax.pcolormesh(x, np.arange(n_pc + 1), grid, vmin=0, vmax=1, cmap="viridis",
                             shading="flat")
        ax.set_ylabel("pseudo-channel")
        mean = np.nanmean(grid)
        ax.set_title(f"{_label(m)}: mean busy {100 * mean:.0f} % while PIM runs", fontsize=9)
    axes[-1].set_xlabel("time in the step (us)")
    first = rows[0]
    where = ", ".join(str(first[k]) for k in ("model", "system", "memory", "workload")
                      if first.get(k))
    fig.suptitle(f"{where}, B={first.get('batch', '?')}: PIM channel utilisation",
                 fontsize=9)
    fig.colorbar(mesh, ax=list(axes), label="busy fraction")
    return fig


def plot_colocated(rows: Sequence[dict], model: str | None = None, *, ax=None):
    """Figure 11: colocated prefill+decode throughput of every method relative to NoExp, per
    batch size (grouped bars)."""
    _need(rows, ("model", "method", "batch", "throughput_tok_s_gpu", "colocated"),
          "colocated plot")
    import numpy as np

    rows = [r for r in rows if r.get("colocated")]
    models = sorted({r["model"] for r in rows})
    if not rows:
        raise ConfigError("colocated plot: the table has no colocated rows")
    model = model or models[0]
    rows = [r for r in rows if r["model"] == model]
    base = {r["batch"]: r["throughput_tok_s_gpu"] for r in rows if r["method"] == "noexp"}
    if not base:
        raise ConfigError("colocated plot: needs the noexp rows (the reference)")
    batches = sorted(base)
    methods = [m for m in _order(r["method"] for r in rows) if m != "noexp"]
    fig, ax = _new(ax)
    width = 0.8 / max(len(methods), 1)
    x = np.arange(len(batches))
    top = 1.0
    for i, m in enumerate(methods):
        vals = []
        for b in batches:
            r = [r for r in rows if r["method"] == m and r["batch"] == b]
            vals.append(r[0]["throughput_tok_s_gpu"] / base[b] if r else np.nan)
        c, _ = METHOD_STYLE.get(m, ("k", "."))
        ax.bar(x + (i - (len(methods) - 1) / 2) * width, vals, width, color=c, label=_label(m))
        if np.isfinite(vals).any():
            top = max(top, float(np.nanmax(vals)))
    ax.set_ylim(0, top * 1.3)  # room for the legend above the bars
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(x, [str(b) for b in batches])
    ax.set_xlabel("Batch size B (requests; colocated prefill + decode)")
    ax.set_ylabel("Throughput relative to NoExp")
    from sieve.workload.batch import prefill_cap

    given = [r for r in rows if r.get("n_prefill") not in (None, "")]
    if not given:
        case = "prefills drawn, up to 2 (B <= 32) / 8 (B >= 64)"
    elif all(r["n_prefill"] == prefill_cap(int(r["batch"])) for r in given):
        case = "stress: 2 prefills (B <= 32) / 8 (B >= 64)"
    else:
        case = "given prefill counts"
    ax.set_title(f"{model} on {rows[0].get('system', '')}, colocated prefill + decode ({case})",
                 fontsize=9)
    ax.legend(fontsize=8, ncol=3, loc="upper center")
    return fig


class LaneTracks:
    """The tracks of one lane's tasks, placed in order of start: a task goes to the first track
    whose last task has ended by its start, a new track if none has. A shared lane (the HBM
    lane, whose concurrent weight loads split it, docs/system.md §1) holds overlapping tasks;
    a drawing or a trace-event track must not."""

    def __init__(self) -> None:
        self.ends: list[float] = []  # each track's last end

    def place(self, start: float, end: float) -> tuple[int, bool]:
        """The track of a task from ``start`` to ``end``, and whether it is a new track."""
        k = next((j for j, e in enumerate(self.ends) if e <= start), len(self.ends))
        new = k == len(self.ends)
        if new:
            self.ends.append(end)
        else:
            self.ends[k] = end
        return k, new


def plot_timeline(rows: Sequence[dict], gpu: int = 0, layers: Sequence[int] | None = None, *,
                  ax=None):
    """Gantt chart of one GPU's lanes (collectives drawn on its link lane); a lane whose tasks
    overlap (the shared HBM lane) gets a row per track (:class:`LaneTracks`): "HBM (weights)",
    "HBM (weights) 2", ..."""
    _need(rows, ("name", "kind", "gpu", "layer", "start_ns", "end_ns"), "timeline plot")
    sel = [r for r in rows if r["kind"] in LANES and (r["gpu"] == gpu or r["kind"] == "link")
           and (layers is None or r["layer"] in layers) and r["end_ns"] > r["start_ns"]]
    if not sel:
        raise ConfigError(f"timeline plot: no task of GPU {gpu} in the chosen layers")
    placed: dict[str, list[tuple[int, dict]]] = {lane: [] for lane in LANES}
    n_tracks = {}
    for lane in LANES:
        tracks = LaneTracks()
        for r in sorted((r for r in sel if r["kind"] == lane),
                        key=lambda r: (r["start_ns"], r["end_ns"])):
            placed[lane].append((tracks.place(r["start_ns"], r["end_ns"])[0], r))
        n_tracks[lane] = max(1, len(tracks.ends))
    extra = sum(n_tracks.values()) - len(LANES)
    fig, ax = _new(ax, size=(9.0, 3.2 + 0.35 * extra))
    t0 = min(r["start_ns"] for r in sel)
    seen = set()
    y, ticks, labels = 0, [], []
    for lane in LANES[::-1]:  # bottom up: a lane's first track on top of its others
        top = y + n_tracks[lane] - 1  # the row of track 0
        for k in range(n_tracks[lane]):
            ticks.append(top - k)
            labels.append(LANE_LABEL[lane] + (f" {k + 1}" if k else ""))
        for k, r in placed[lane]:
            grp = task_group(r["name"])
            lbl = grp if grp not in seen else None
            seen.add(grp)
            ax.broken_barh([((r["start_ns"] - t0) / 1e3, (r["end_ns"] - r["start_ns"]) / 1e3)],
                           (top - k - 0.4, 0.8), facecolors=GROUP_COLOR[grp], edgecolor="k",
                           linewidth=0.2, label=lbl)
        y += n_tracks[lane]
    ax.set_yticks(sorted(ticks), [lb for _, lb in sorted(zip(ticks, labels))])
    ax.set_xlabel("time (us)")
    meta = sel[0]
    title = f"GPU {gpu}"
    if {"method", "model"} <= set(meta):
        where = ", ".join(str(meta[k]) for k in ("model", "system", "memory", "workload")
                          if meta.get(k))
        title = f"{where}, {meta['method']}, B={meta.get('batch', '?')}: GPU {gpu}"
    if layers is not None:
        title += f", layer{'s' if len(layers) > 1 else ''} {', '.join(map(str, layers))}"
    if "step" in meta:
        title += f", measured step {meta['step']}"
    ax.set_title(title, fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    order = [labels.index(g) for g in GROUP_COLOR if g in labels]  # by kind, a fixed order
    ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=7, ncol=5,
              loc="upper center", bbox_to_anchor=(0.5, -0.28))
    return fig
