"""Figures a reviewer accepts (issue 16, part 6): every figure says model, system, workload and
batch; labels stay inside the axes and overlap neither each other nor a marker; the method
palette is the Okabe-Ito colour-blind-safe one; PNG and PDF."""

from __future__ import annotations

import pytest

from sieve.experiments.evaluation import evaluate
from sieve.experiments.points import Point
from sieve.report import figures
from sieve.report.evaluation import render, tables
from sieve.system.run import RunConfig

OKABE_ITO = {"#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00",
             "#CC79A7"}
BASE = dict(model="qwen3-30b-a3b", system="1xb200", steps=1, warmup=0, layers=1)


@pytest.fixture(scope="module")
def ev():
    pts = [Point(RunConfig(method=m, batch=b, **BASE), timeline=(m == "sieve" and b == 4),
                 channels=(b == 4 and m in ("sieve", "duplex")))
           for m in ("gpu-only", "noexp", "allexp", "duplex", "sieve", "sieve-cp")
           for b in (1, 2, 4, 8, 16, 32, 64)]
    return evaluate(pts)


def _boxes(fig):
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    ax = fig.axes[0]
    texts = [t for t in ax.texts if t.get_text().startswith("B=")]
    return ax, r, [t.get_window_extent(r) for t in texts]


def _overlap(a, b):
    return a.x0 < b.x1 and a.x1 > b.x0 and a.y0 < b.y1 and a.y1 > b.y0


def test_pareto_labels_inside_and_apart(ev):
    fig = figures.plot_pareto(ev.runs, "qwen3-30b-a3b")
    ax, r, boxes = _boxes(fig)
    assert len(boxes) >= 5  # most batch sizes get a label
    inside = ax.get_window_extent(r)
    for i, b in enumerate(boxes):
        assert inside.x0 <= b.x0 and b.x1 <= inside.x1 and inside.y0 <= b.y0 <= b.y1 <= inside.y1
        for c in boxes[i + 1:]:
            assert not _overlap(b, c)
        for line in ax.lines:  # no label over a marker
            ms = line.get_markersize() * fig.dpi / 72 / 2
            for x, y in line.get_xydata():
                px, py = ax.transData.transform((x, y))
                assert not (b.x0 < px + ms and b.x1 > px - ms and b.y0 < py + ms
                            and b.y1 > py - ms)
    title = ax.get_title()
    assert "qwen3-30b-a3b" in title and "1xb200" in title and "hh-rlhf" in title
    figures._mpl().close(fig)


def test_every_figure_names_model_system_workload_batch(ev):
    fig = figures.plot_pim_channels(ev.channels, methods=None)
    sup = fig._suptitle.get_text()
    assert all(s in sup for s in ("qwen3-30b-a3b", "1xb200", "hh-rlhf", "B=4"))
    figures._mpl().close(fig)
    fig = figures.plot_timeline(ev.timeline, layers=[0])
    assert "qwen3-30b-a3b" in fig.axes[0].get_title() and "B=4" in fig.axes[0].get_title()
    figures._mpl().close(fig)
    out = render(tables(ev))
    assert {"fig9_pareto.png", "fig9_pareto.pdf", "fig10_pim_channels.png",
            "fig10_pim_channels.pdf", "timeline.png", "timeline.pdf"} <= set(out)


def test_palette_is_colour_blind_safe():
    for m in ("noexp", "allexp", "pimoe", "duplex", "sieve", "sieve-cp"):
        assert figures.METHOD_STYLE[m][0] in OKABE_ITO
    markers = [figures.METHOD_STYLE[m][1] for m in ("gpu-only", "noexp", "allexp", "pimoe",
                                                     "duplex", "sieve", "sieve-cp")]
    assert len(set(markers)) == len(markers)  # and every method has its own marker
    assert set(figures.GROUP_COLOR.values()) - {"#999999"} <= OKABE_ITO
