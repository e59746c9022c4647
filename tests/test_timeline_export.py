"""Timelines people can explore: every method draws, --gpu/--layer/--step choose the view, and
timeline.json is valid Chrome/Perfetto trace-event JSON with one track per GPU lane."""

from __future__ import annotations

import json

import pytest

from sieve.cli import main
from sieve.report.tables import read_csv
from sieve.report.trace_events import LANE_TID, trace_events

#: The Trace Event Format's JSON object form (Google's "Trace Event Format" document: complete
#: events "X" with ts/dur in microseconds, metadata events "M" naming processes and threads),
#: as a small schema: per phase, the required keys and their types.
SCHEMA = {
    "X": {"name": str, "cat": str, "ph": str, "ts": (int, float), "dur": (int, float),
          "pid": int, "tid": int, "args": dict},
    "M": {"name": str, "ph": str, "pid": int, "args": dict},
}
METADATA_NAMES = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}


def _validate(doc: dict) -> None:
    assert set(doc) >= {"traceEvents"} and isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit") in (None, "ms", "ns")
    for e in doc["traceEvents"]:
        req = SCHEMA[e["ph"]]
        for k, t in req.items():
            assert isinstance(e[k], t), (k, e)
        if e["ph"] == "X":
            assert e["ts"] >= 0 and e["dur"] > 0
        else:
            assert e["name"] in METADATA_NAMES
            if e["name"].startswith("thread"):
                assert isinstance(e["tid"], int)
            key = "name" if e["name"].endswith("_name") else "sort_index"
            assert key in e["args"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("tl") / "t"
    assert main(["timeline", "--method", "duplex", "--batch", "16", "--layers", "2", "--steps",
                 "2", "--step", "1", "--gpu", "1", "--layer", "all", "--out", str(out)]) == 0
    return out


def test_trace_events_are_valid_and_one_track_per_gpu_lane(folder):
    doc = json.loads((folder / "timeline.json").read_text())
    _validate(doc)
    rows = read_csv(folder / "timeline.csv")
    assert {r["step"] for r in rows} == {0, 1}  # every measured step is recorded
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    gpus = sorted({r["gpu"] for r in rows if r["gpu"] >= 0})
    assert gpus == [0, 1, 2, 3]
    # 2 steps x 4 GPUs, each with the four lanes (and further HBM tracks where loads overlap)
    base = {k for k in names if k[1] in LANE_TID.values()}
    assert len(base) == 2 * 4 * len(LANE_TID)
    assert all(k[1] % 10 == LANE_TID["hbm"] for k in set(names) - base)
    x = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    n_links = sum(1 for r in rows if r["gpu"] < 0 and r["end_ns"] > r["start_ns"])
    n_local = sum(1 for r in rows if r["gpu"] >= 0 and r["kind"] in LANE_TID
                  and r["end_ns"] > r["start_ns"])
    assert len(x) == n_local + 4 * n_links  # a collective is on every GPU's link track
    r0 = next(r for r in rows if r["name"] == "experts_pim")
    e0 = min((e for e in x if e["name"] == "experts_pim"),
             key=lambda e: abs(e["ts"] - r0["start_ns"] / 1e3))
    assert e0["ts"] == pytest.approx(r0["start_ns"] / 1e3, rel=1e-9)
    assert e0["dur"] == pytest.approx((r0["end_ns"] - r0["start_ns"]) / 1e3)
    assert e0["tid"] == LANE_TID["pim"] and e0["cat"] == "experts on PIM"


def test_every_method_draws_its_timeline(tmp_path):
    for m in ("gpu-only", "noexp", "allexp", "pimoe", "duplex", "sieve", "sieve-cp",
              "sieve-nofixed"):
        out = tmp_path / m
        assert main(["timeline", "--method", m, "--batch", "4", "--layers", "1", "--warmup",
                     "0", "--out", str(out)]) == 0, m
        assert (out / "timeline.png").stat().st_size > 0 and (out / "timeline.json").is_file()


def test_view_choices_are_checked_before_any_work(tmp_path, capsys):
    for argv, msg in ((["--gpu", "7"], "has GPUs 0..3"),
                      (["--step", "3", "--steps", "2"], "measures steps 0..1"),
                      (["--layer", "5", "--layers", "2"], "was not simulated")):
        out = tmp_path / "x"
        assert main(["timeline", *argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0]
        assert not out.exists()


def test_legend_groups_tasks_by_kind(folder):
    from sieve.report import figures

    rows = read_csv(folder / "timeline.csv")
    fig = figures.plot_timeline([r for r in rows if r["step"] == 0], gpu=0, layers=None)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels and set(labels) <= set(figures.GROUP_COLOR)
    assert len(labels) == len(set(labels)) <= 9
    figures._mpl().close(fig)


def test_trace_events_from_rows_directly():
    rows = [{"model": "m", "method": "sieve", "batch": 2, "step": 0, "name": "qkv",
             "kind": "gpu", "gpu": 0, "layer": 0, "mb": 0, "start_ns": 1000.0,
             "end_ns": 3500.0},
            {"model": "m", "method": "sieve", "batch": 2, "step": 0, "name": "qkv_load",
             "kind": "hbm", "gpu": 0, "layer": 0, "mb": 0, "start_ns": 0.0, "end_ns": 1000.0}]
    doc = trace_events(rows)
    _validate(doc)
    x = {e["name"]: e for e in doc["traceEvents"] if e["ph"] == "X"}
    assert x["qkv"]["ts"] == 1.0 and x["qkv"]["dur"] == 2.5 and x["qkv"]["cat"] == "projections"
    assert x["qkv_load"]["cat"] == "weight loads" and x["qkv_load"]["tid"] == LANE_TID["hbm"]


def test_overlapping_loads_on_the_shared_hbm_lane_get_tracks_that_never_overlap():
    def row(name, kind, s, e):
        return {"model": "m", "method": "sieve", "batch": 2, "step": 0, "name": name,
                "kind": kind, "gpu": 0, "layer": 0, "mb": 0, "start_ns": s, "end_ns": e}

    rows = [row("experts_gpu_load", "hbm", 0.0, 200e3), row("qkv_load", "hbm", 50e3, 57.2e3),
            row("norm_load", "hbm", 55e3, 60e3), row("o_load", "hbm", 58e3, 59e3),
            row("qkv", "gpu", 57.2e3, 60e3)]
    doc = trace_events(rows)
    _validate(doc)
    x = {e["name"]: e for e in doc["traceEvents"] if e["ph"] == "X"}
    h = LANE_TID["hbm"]
    assert [x[n]["tid"] for n in ("experts_gpu_load", "qkv_load", "norm_load", "o_load")] == \
        [h, 10 + h, 20 + h, 10 + h]  # o_load reuses the track qkv_load left
    assert x["qkv"]["tid"] == LANE_TID["gpu"]
    names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names[10 + h] == "HBM (weights) 2" and names[20 + h] == "HBM (weights) 3"
    by_tid: dict[int, list] = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            by_tid.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_tid.values():
        spans.sort()
        assert all(b[0] >= a[1] - 1e-9 for a, b in zip(spans, spans[1:]))


def test_timeline_figure_draws_overlapping_loads_on_rows_that_never_overlap():
    """The PNG places tasks on tracks as timeline.json does: the overlapping loads of the
    shared HBM lane get rows "HBM (weights) 2", "3"; no row holds overlapping bars."""
    from sieve.report import figures

    def row(name, kind, s, e):
        return {"name": name, "kind": kind, "gpu": 0, "layer": 0, "mb": 0,
                "start_ns": s, "end_ns": e}

    rows = [row("experts_gpu_load", "hbm", 0.0, 200e3), row("qkv_load", "hbm", 50e3, 57.2e3),
            row("norm_load", "hbm", 55e3, 60e3), row("o_load", "hbm", 58e3, 59e3),
            row("qkv", "gpu", 57.2e3, 60e3), row("experts_pim", "pim", 0.0, 90e3)]
    fig = figures.plot_timeline(rows)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["PIM", "HBM (weights) 3", "HBM (weights) 2", "HBM (weights)",
                      "GPU compute", "link"]  # bottom up, a lane's first track on top
    ticks = dict(zip(labels, ax.get_yticks()))
    rows_of: dict[float, list] = {}
    for coll in ax.collections:  # one BrokenBarHCollection per bar
        for path in coll.get_paths():
            v = path.vertices
            y = (float(v[:, 1].min()) + float(v[:, 1].max())) / 2
            rows_of.setdefault(round(y, 6), []).append(
                (float(v[:, 0].min()), float(v[:, 0].max())))
    assert sorted(rows_of) == sorted(ticks[lb] for lb in labels if lb != "link")
    assert len(rows_of[ticks["HBM (weights)"]]) == 1  # the long expert load alone
    assert len(rows_of[ticks["HBM (weights) 2"]]) == 2  # qkv_load, then o_load
    for spans in rows_of.values():
        spans.sort()
        assert all(b[0] >= a[1] - 1e-9 for a, b in zip(spans, spans[1:]))
    figures._mpl().close(fig)


def test_lane_tracks_place_each_task_on_the_first_free_track():
    from sieve.report.figures import LaneTracks

    t = LaneTracks()
    assert [t.place(s, e) for s, e in ((0, 10), (2, 4), (3, 5), (4, 6), (10, 12))] == [
        (0, True), (1, True), (2, True), (1, False), (0, False)]
