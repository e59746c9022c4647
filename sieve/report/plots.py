"""Figures from result tables only: ``plot_<name>(table, *, ax=None) -> Figure``, and
:func:`render`, the one way a figure becomes file bytes.

This module never runs a simulation or generates a trace; it reads tidy rows (dicts with the
columns of :data:`sieve.report.characterize.COLUMNS`). matplotlib is imported lazily with the Agg
backend; nothing calls ``plt.show()``. :func:`render` leaves out every piece of metadata that
changes from run to run (the PDF/PS creation date, the SVG date and random ids), so the same
table gives byte-identical figure files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["FORMATS", "close", "plot_act_ratio", "plot_load_skew", "plot_token_bins", "render"]

# shared style
FIGSIZE_IN = (6.4, 4.0)
BIN_COLORS = ("#c6dbef", "#6baed6", "#2171b5", "#f16913")  # N=1, N=2, 3<=N<=4, N>4
BIN_ORDER = ("N=1", "N=2", "3<=N<=4", "N>4")
BATCH_LABEL = "Batch size B (tokens per step)"


def _mpl():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "cairo"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def close(fig: Any) -> None:
    """Release a figure made here."""
    _mpl().close(fig)


#: Figure file formats :func:`render` writes, with the metadata keys that would carry a date.
FORMATS = {"png": {}, "pdf": {"CreationDate": None}, "svg": {"Date": None},
           "ps": {"CreationDate": None}, "eps": {"CreationDate": None}}


def render(fig: Any, fmt: str, *, dpi: int = 150) -> bytes:
    """The figure as file bytes in ``fmt`` (png, pdf, svg, ps, eps), byte-reproducible.

    Dates are left out of the metadata and SVG ids are derived from a fixed salt, so rendering
    the same figure in another process (or on another day) gives the same bytes (same
    matplotlib and fonts assumed).
    """
    import io

    import matplotlib

    if fmt not in FORMATS:
        from sieve.errors import ConfigError, choices

        raise ConfigError(f"figure format {fmt!r}: unknown (known: {choices(FORMATS)})")
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "sieve", "pdf.compression": 6}):
        fig.savefig(buf, format=fmt, dpi=dpi, bbox_inches="tight", metadata=FORMATS[fmt])
    return buf.getvalue()


def _select(table: Sequence[dict], stat: str) -> dict[str, list[dict]]:
    by_model: dict[str, list[dict]] = {}
    for r in table:
        if r["statistic"] == stat:
            by_model.setdefault(r["model"], []).append(r)
    for rows in by_model.values():
        rows.sort(key=lambda r: int(r["batch_size"]))
    if not by_model:
        from sieve.errors import ConfigError

        raise ConfigError(f"plot: the table has no {stat!r} rows")
    return by_model


def _new(ax):
    plt = _mpl()
    if ax is None:
        fig, ax = plt.subplots(figsize=FIGSIZE_IN)
    else:
        fig = ax.figure
    return fig, ax


def _batch_ticks(ax, table: Sequence[dict]) -> None:
    """Log-2 x axis labelled with the batch sizes themselves (1, 4, 16, ... not 2^n)."""
    ax.set_xscale("log", base=2)
    ticks = sorted({int(r["batch_size"]) for r in table})
    ax.set_xticks(ticks, [str(b) for b in ticks])
    ax.minorticks_off()


def plot_act_ratio(table: Sequence[dict], *, ax=None):
    """Seed Figure 3: median act-ratio (%) vs batch size per model, with a p05-p95 band."""
    fig, ax = _new(ax)
    for model, rows in _select(table, "act_ratio").items():
        b = [int(r["batch_size"]) for r in rows]
        (line,) = ax.plot(b, [100 * r["value"] for r in rows], marker="o", label=model)
        ax.fill_between(
            b,
            [100 * r["p05"] for r in rows],
            [100 * r["p95"] for r in rows],
            color=line.get_color(),
            alpha=0.2,
            linewidth=0,
        )
    _batch_ticks(ax, table)
    ax.set_xlabel(BATCH_LABEL)
    ax.set_ylabel("Activated / total parameters (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Act-ratio per step (median; band: 5th-95th percentile)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(title="model", fontsize="small")
    return fig


def plot_token_bins(table: Sequence[dict], *, models: Sequence[str] | None = None):
    """Seed Figure 5: share of activated experts by token count N, stacked, per model."""
    plt = _mpl()
    per = {s: _select(table, s) for s in BIN_ORDER}
    names = list(models) if models is not None else list(per["N=1"])
    fig, axes = plt.subplots(
        1, len(names), figsize=(3.2 * len(names) + 1.0, 3.6), sharey=True, squeeze=False
    )
    for ax, model in zip(axes[0], names):
        batches = [int(r["batch_size"]) for r in per["N=1"][model]]
        x = range(len(batches))
        bottom = [0.0] * len(batches)
        for stat, color in zip(BIN_ORDER, BIN_COLORS):
            h = [100 * r["value"] for r in per[stat][model]]
            ax.bar(x, h, bottom=bottom, color=color, label=stat, width=0.8)
            bottom = [a + c for a, c in zip(bottom, h)]
        ax.set_xticks(list(x), [str(b) for b in batches],
                      rotation=90 if len(batches) > 6 else 0)
        ax.set_title(model, fontsize="medium")
        ax.set_xlabel(BATCH_LABEL.replace(" (tokens per step)", ""))
    axes[0][0].set_ylabel("Share of activated experts (%)")
    axes[0][0].set_ylim(0, 100)
    axes[0][-1].legend(
        title="tokens per expert", fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0)
    )
    fig.suptitle("Token-count bins of activated experts (N = tokens routed to an expert)")
    fig.tight_layout()
    return fig


def plot_load_skew(table: Sequence[dict], *, ax=None):
    """Per-step load skew: busiest expert's tokens / mean (B k / E), median over steps, layers."""
    fig, ax = _new(ax)
    for model, rows in _select(table, "peak_over_mean").items():
        ax.plot(
            [int(r["batch_size"]) for r in rows],
            [r["value"] for r in rows],
            marker="o",
            label=model,
        )
    _batch_ticks(ax, table)
    ax.set_yscale("log")
    ax.set_xlabel(BATCH_LABEL)
    ax.set_ylabel("Max expert load / mean load (x)")
    ax.set_title("Per-step expert load skew (median over steps and layers)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(title="model", fontsize="small")
    return fig
