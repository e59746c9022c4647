"""Runs, the evaluation tables and figures, and the main job's CLI (run, timeline, plot)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sieve.cli import main
from sieve.errors import ConfigError
from sieve.experiments.evaluation import evaluate
from sieve.experiments.points import Point
from sieve.report import figures
from sieve.report.evaluation import render, tables
from sieve.report.tables import read_csv, to_csv
from sieve.system.run import RUN_COLUMNS, RunConfig, simulate_run

BASE = dict(model="qwen3-30b-a3b", system="1xb200", batch=4, steps=1, warmup=0, layers=1)


@pytest.fixture(scope="module")
def ev():
    pts = [Point(RunConfig(method=m, **BASE), timeline=(m == "sieve"),
                 channels=(m in ("sieve", "pimoe"))) for m in ("noexp", "pimoe", "sieve")]
    pts += [Point(RunConfig(method=m, colocated=True, n_prefill=1,
                            **{**BASE, "batch": 3})) for m in ("noexp", "sieve")]
    return evaluate(pts)


def test_run_rows_have_every_column_and_consistent_metrics(ev):
    for r in ev.runs:
        assert set(RUN_COLUMNS) <= set(r)
        assert r["interactivity_tok_s_user"] == pytest.approx(1e3 / r["tpot_ms"])
        made = r["batch"]  # every decode request and the first token of each prefill
        assert r["throughput_tok_s_gpu"] == pytest.approx(made / (r["tpot_ms"] / 1e3)
                                                          / r["n_gpus"])
        for k in ("gpu", "hbm", "pim", "link"):
            assert 0.0 <= r[f"{k}_busy_frac"] <= 1.0
    noexp = next(r for r in ev.runs if r["method"] == "noexp" and not r["colocated"])
    assert noexp["tokens_pim_frac"] == 0.0
    colo = [r for r in ev.runs if r["colocated"]]
    assert all(r["processed_tok_s_gpu"] > r["throughput_tok_s_gpu"] for r in colo)


def test_config_round_trip_and_determinism():
    cfg = RunConfig(method="duplex", seed=3, system_overrides={"memory.nCCDAB": 6}, **BASE)
    again = RunConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert again == cfg
    assert simulate_run(cfg).row == simulate_run(again).row
    with pytest.raises(ConfigError, match="unknown field.*bogus"):
        RunConfig.from_dict({**cfg.to_dict(), "bogus": 1})


def test_tables_round_trip_through_csv(ev, tmp_path):
    p = tmp_path / "runs.csv"
    p.write_text(to_csv(ev.runs, RUN_COLUMNS))
    back = read_csv(p)
    assert [r["method"] for r in back] == [r["method"] for r in ev.runs]
    for a, b in zip(back, ev.runs):
        assert a["tpot_ms"] == pytest.approx(b["tpot_ms"], rel=1e-8)


def test_figures_come_from_the_tables_with_their_series_and_labels(ev):
    fig = figures.plot_pareto(ev.runs, "qwen3-30b-a3b")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "Interactivity (tokens/s/user)"
    assert ax.get_ylabel() == "Throughput (tokens/s/GPU)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["NoExp", "PIMoE", "Sieve"]
    assert len(ax.lines) == 3
    figures._mpl().close(fig)
    fig = figures.plot_pim_channels(ev.channels)
    assert [a.get_ylabel() for a in fig.axes[:2]] == ["pseudo-channel"] * 2
    assert "Sieve" in fig.axes[0].get_title() and "PIMoE" in fig.axes[1].get_title()
    figures._mpl().close(fig)
    fig = figures.plot_colocated(ev.runs)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "Throughput relative to NoExp" and len(ax.patches) == 1
    figures._mpl().close(fig)
    fig = figures.plot_timeline(ev.timeline, layers=[0])
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["PIM", "HBM (weights)",
                                                            "GPU compute", "link"]
    figures._mpl().close(fig)


def test_render_draws_every_figure_from_csv_bytes(ev):
    out = render(tables(ev))
    for stem in ("fig9_pareto", "fig10_pim_channels", "fig11_colocated", "timeline"):
        for ext in ("png", "pdf"):
            assert out[f"{stem}.{ext}"][:4] in (b"\x89PNG", b"%PDF")
    again = render(tables(ev))
    assert again == out  # byte-reproducible


def test_figure_errors_name_what_is_missing():
    with pytest.raises(ConfigError, match="no rows"):
        figures.plot_pareto([])
    with pytest.raises(ConfigError, match="lacks column"):
        figures.plot_pareto([{"model": "x"}])
    with pytest.raises(ConfigError, match="noexp rows"):
        figures.plot_colocated([{"model": "m", "method": "sieve", "batch": 1,
                                 "throughput_tok_s_gpu": 1.0, "colocated": 1}])


def test_cli_run_writes_tables_and_figures(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["run", "--model", "qwen3-30b-a3b", "--system", "1xb200", "--methods",
                 "noexp,sieve", "--batch", "2,4", "--layers", "1", "--warmup", "0", "--out",
                 str(out)]) == 0
    text = capsys.readouterr().out
    assert "sieve" in text and "noexp" in text
    rows = read_csv(out / "runs.csv")
    assert len(rows) == 4 and {r["method"] for r in rows} == {"noexp", "sieve"}
    cfg = json.loads((out / "config.json").read_text())
    assert len(cfg["runs"]) == 4 and "1xb200" in cfg["systems"]
    for f in ("fig9_pareto.png", "fig10_pim_channels.pdf", "timeline.png", "manifest.json"):
        assert (out / f).is_file()
    before = (out / "fig9_pareto.png").read_bytes()
    assert main(["plot", str(out)]) == 0
    assert (out / "fig9_pareto.png").read_bytes() == before


def test_cli_run_colocated_defaults_to_figure_11s_setup(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["run", "--colocated", "--methods", "noexp,sieve", "--batch", "8",
                 "--layers", "1", "--warmup", "0", "--jobs", "1", "--out", str(out)]) == 0
    rows = read_csv(out / "runs.csv")
    assert [(r["model"], r["system"], r["method"], r["colocated"]) for r in rows] == [
        ("qwen3-30b-a3b", "1xb200", m, 1) for m in ("noexp", "sieve")]
    # a colocated batch has prefill requests: more tokens processed than requests
    assert all(r["prefill_requests"] >= 1 for r in rows)
    assert (out / "fig11_colocated.png").is_file()
    assert not (out / "fig9_pareto.png").exists()


@pytest.mark.parametrize("argv, msg", [
    (["run", "--methods", "fast"], "scheduler 'fast'"),
    (["run", "--batch", "0"], "batch must be an integer >= 1"),
    (["run", "--colocated", "--paper"], "--paper already runs the colocated batches"),
    (["run", "--layers", "x"], "--layers"),
    (["run", "--model", "nope"], "model 'nope'"),
    (["run", "--system", "3xb200"], "system '3xb200'"),
    (["run", "--workload", "nope"], "profile"),
    (["timeline", "--batch", "0"], "--batch"),
    (["plot", "/nonexistent-folder"], "no runs.csv"),
])
def test_cli_errors_are_one_line(tmp_path, capsys, argv, msg):
    if argv[0] != "plot":
        argv = argv + ["--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_layer_sampling_keeps_every_layer_type():
    from sieve.model import get_model
    from sieve.system.step import _sampled_layers

    m = get_model("qwen3.5-397b-a17b")
    picks = _sampled_layers(m, 2)
    assert {m.layer_types[i] for i in picks} == set(m.layer_types)
    assert _sampled_layers(m, None) == list(range(m.n_layers))
    assert np.all(np.diff(picks) > 0)


def test_routing_only_the_sampled_layers_changes_nothing():
    """simulate_run routes only the MoE layers a step samples; a step given the routing of
    every layer simulates the same layers and gives the same result."""
    from sieve.model import get_model
    from sieve.system.step import StepBatch, SystemState, simulate_step
    from sieve.workload.batch import colocated_batch, step_trace
    from sieve.workload.router import SyntheticRouter

    cfg = RunConfig(method="sieve", **{**BASE, "layers": 3, "steps": 1, "warmup": 0})
    model = get_model(cfg.model)
    batch = colocated_batch(cfg.workload, 6, seed=0, n_prefill=1)
    router = SyntheticRouter(model.name, seed=0)
    out = []
    for layer_ids in (None, [0, 24, 47]):  # _sampled_layers(model, 3)
        tr = step_trace(batch, router, layer_ids=layer_ids)
        state = SystemState(model, cfg.resolve_system(), cfg.options())
        out.append(simulate_step(state, StepBatch(batch.phase, batch.context_tokens,
                                                  batch.step_tokens, tr.expert_ids,
                                                  tr.meta.layer_ids)))
    assert out[0].layers_simulated == out[1].layers_simulated == 3
    assert out[0].makespan_ns == out[1].makespan_ns
    assert out[0].busy_ns == out[1].busy_ns


def test_a_run_routed_by_an_imported_trace(tmp_path):
    """A saved routing trace (here from the synthetic router) drives the steps: its requests,
    phases and routes; layer sampling picks among the layers it covers."""
    from sieve.workload.router import SyntheticRouter

    tr = SyntheticRouter("qwen3-30b-a3b", seed=2).generate(6, 3)
    path = tr.save(tmp_path / "t.npz")
    cfg = RunConfig(method="sieve", trace=str(path), **{**BASE, "layers": 2, "steps": 2})
    row = simulate_run(cfg).row
    assert row["batch"] == 6.0 and "routing:" in row["workload"]
    assert row["layers_simulated"] == 2
    sub = tr.meta.layer_ids[:3]
    from sieve.workload.trace import RoutingTrace, TraceMeta

    m = tr.meta
    part = RoutingTrace(tr.expert_ids[:, :3], tr.step_offsets, tr.request_ids, tr.phase,
                        TraceMeta(**{**m.__dict__, "layer_ids": tuple(sub)}))
    p2 = part.save(tmp_path / "part.npz")
    row = simulate_run(RunConfig(method="noexp", trace=str(p2), **{**BASE, "layers": 2})).row
    assert row["layers_simulated"] == 2
    with pytest.raises(ConfigError, match="covers 3 of 48 MoE layers"):
        simulate_run(RunConfig(method="noexp", trace=str(p2), **{**BASE, "layers": None}))
    with pytest.raises(ConfigError, match="routes 128 experts"):
        simulate_run(RunConfig(model="gpt-oss-20b", system="1xb200", trace=str(path),
                               steps=1, warmup=0, layers=1))


def test_paper_points_cover_figures_9_to_11():
    from sieve.experiments.points import paper_points
    from sieve.sched.methods import METHODS_MAIN
    from sieve.system import setups
    from sieve.workload.batch import prefill_cap

    pts = paper_points(METHODS_MAIN, steps=1, warmup=1, layers=4)
    fig9 = [p for p in pts if not p.config.colocated]
    assert len(fig9) == (len(setups.FIG9) * len(setups.FIG9_WORKLOADS) * len(METHODS_MAIN)
                         * len(setups.FIG9_BATCHES))
    assert {(p.config.model, p.config.system, p.config.workload) for p in fig9} == {
        (s.model, s.system, w) for s in setups.FIG9.values() for w in ("hh-rlhf", "math-500")}
    chans = [p for p in pts if p.channels]
    assert {p.config.method for p in chans} == {"sieve", "pimoe"}
    assert all(p.config.batch == setups.FIG10_BATCH and p.config.workload == "hh-rlhf"
               for p in chans)
    colo = [p for p in pts if p.config.colocated]
    assert {p.config.model for p in colo} == {setups.FIG11.model}
    assert sorted({p.config.batch for p in colo}) == list(setups.FIG11_BATCHES)
    # the drawn case and the seed's stress case: exactly 2 prefills for B <= 32, 8 for B >= 64
    drawn = [p for p in colo if p.config.n_prefill is None]
    stress = [p for p in colo if p.config.n_prefill is not None]
    assert len(drawn) == len(stress) == len(METHODS_MAIN) * len(setups.FIG11_BATCHES)
    assert {(p.config.batch, p.config.n_prefill) for p in stress} == {
        (b, 2 if b <= 32 else 8) for b in setups.FIG11_BATCHES}
    assert all(p.config.n_prefill == prefill_cap(p.config.batch) for p in stress)


def test_idle_before_the_measured_step_moves_it_on_the_device_clock():
    """``simulate_run(idle_before_ns=d)``: the measured step starts d later on the device clock
    than the same run's (the warm-up step unchanged), nothing else of the configuration
    changes, and the PIM programs meet their refreshes at another phase (their times move;
    benchmarks/refresh_phase.py); d = 0 is the run itself; a bad d is one ConfigError."""
    cfg = RunConfig(method="allexp", **{**BASE, "warmup": 1, "layers": 4})
    a = simulate_run(cfg, keep_steps=True)
    b = simulate_run(cfg, keep_steps=True, idle_before_ns=0)
    assert a.row == b.row
    shifted = []
    for d in (487.0, 1949.0, 2924.0):
        c = simulate_run(cfg, keep_steps=True, idle_before_ns=d)
        assert c.steps[0].start_ns == pytest.approx(a.steps[0].start_ns + d, abs=1e-6)
        shifted.append(c.steps[0].step_ns)
    assert any(s != a.steps[0].step_ns for s in shifted)
    for bad in (-1.0, float("nan"), float("inf"), True, "10"):
        with pytest.raises(ConfigError, match="idle_before_ns"):
            simulate_run(cfg, idle_before_ns=bad)


def test_refresh_phase_script_spreads_the_idle_over_one_trefi(capsys):
    """benchmarks/refresh_phase.py runs every method at ``--phases`` idle times spread evenly
    over one tREFI of the preset, the first at 0 (the run as configured), and prints each
    method's row and its ratio to the first method at equal phase."""
    from conftest import benchmark_module

    mod = benchmark_module("refresh_phase")
    cfg = RunConfig(method="allexp", **{**BASE, "warmup": 1, "layers": 2})
    trefi, ds, out = mod.phase_runs([cfg], 4)
    spec = cfg.resolve_system().memory
    assert trefi == pytest.approx(spec.timing.nREFI * spec.tCK_ns)
    assert ds == pytest.approx([0.0, trefi / 4, trefi / 2, 3 * trefi / 4])
    assert out[0][0] == simulate_run(cfg).row["throughput_tok_s_gpu"]
    with pytest.raises(ConfigError, match="phases"):
        mod.phase_runs([cfg], 0)
    assert mod.main(["--batch", "4", "--layers", "2", "--overlap", "none", "--phases", "2",
                     "--methods", "allexp,noexp"]) == 0
    text = capsys.readouterr().out
    assert "| allexp |" in text and "| noexp |" in text and "noexp / allexp at equal phase" in text
