"""Characterization tables, plots (asserting on artists) and the `sieve characterize` CLI."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from sieve.cli import main
from sieve.errors import ConfigError
from sieve.model.moe import get_model
from sieve.report.characterize import (
    CharacterizeConfig,
    characterize,
    characterize_trace,
    read_table_csv,
    run_characterize,
    table_to_csv,
)
from sieve.report.plots import close, plot_act_ratio, plot_load_skew, plot_token_bins
from sieve.workload.stats import BIN_LABELS

BATCHES = (1, 4, 16, 64)


@pytest.fixture(scope="module")
def table():
    cfg = CharacterizeConfig(("gpt-oss-20b", "mixtral-8x7b"), BATCHES, n_steps=6, seed=1)
    return characterize(cfg)


def _value(rows, model, b, stat, col="value"):
    (r,) = [
        r for r in rows if r["model"] == model and r["batch_size"] == b and r["statistic"] == stat
    ]
    return r[col]


def test_bins_sum_to_one_and_b1_is_all_gemv(table):
    for model in ("gpt-oss-20b", "mixtral-8x7b"):
        for b in BATCHES:
            assert sum(_value(table, model, b, s) for s in BIN_LABELS) == pytest.approx(1.0)
        assert _value(table, model, 1, "N=1") == 1.0


def test_act_ratio_bounds_and_monotone_in_batch(table):
    for model in ("gpt-oss-20b", "mixtral-8x7b"):
        m = get_model(model)
        floor = (
            m.non_moe_params() + m.n_moe_layers * m.n_shared_experts * m.shared_expert_params()
        ) / m.total_params()
        act = [_value(table, model, b, "act_ratio") for b in BATCHES]
        assert act[0] == pytest.approx(m.act_ratio(m.top_k))  # B=1: exactly top_k per layer
        assert all(floor <= a <= 1.0 for a in act)
        assert all(x <= y for x, y in itertools.pairwise(act))
        for b in BATCHES:
            assert _value(table, model, b, "act_ratio", "p05") <= _value(
                table, model, b, "act_ratio"
            )


def test_characterize_trace_matches_a_direct_count():
    from sieve.workload.router import generate_trace

    m = get_model("gpt-oss-20b")
    t = generate_trace("gpt-oss-20b", 8, 3, seed=2)
    rows = {r["statistic"]: r for r in characterize_trace(t, m)}
    active = [(t.counts(s) > 0).sum(axis=1) for s in range(3)]
    assert rows["act_ratio"]["value"] == pytest.approx(np.median([m.act_ratio(a) for a in active]))
    c = t.all_counts()
    ones = (c == 1).sum() / (c > 0).sum()
    assert rows["N=1"]["value"] == pytest.approx(ones)


def test_csv_round_trip(table, tmp_path):
    (tmp_path / "t.csv").write_text(table_to_csv(table))
    back = read_table_csv(tmp_path / "t.csv")
    assert len(back) == len(table)
    assert back[3]["value"] == pytest.approx(table[3]["value"], rel=1e-5)


def test_plots_have_expected_artists(table):
    fig = plot_act_ratio(table)
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 2 and ax.get_xscale() == "log"
    assert "Batch size" in ax.get_xlabel() and "%" in ax.get_ylabel()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["gpt-oss-20b", "mixtral-8x7b"]
    close(fig)
    fig = plot_token_bins(table)
    assert len(fig.axes) == 2
    for ax in fig.axes:
        assert len(ax.containers) == 4 and len(ax.containers[0]) == len(BATCHES)
        assert [t.get_text() for t in ax.get_xticklabels()] == [str(b) for b in BATCHES]
    legend = fig.axes[-1].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == list(BIN_LABELS)
    close(fig)
    fig = plot_load_skew(table)
    assert len(fig.axes[0].get_lines()) == 2 and fig.axes[0].get_yscale() == "log"
    close(fig)
    with pytest.raises(ConfigError, match="no 'act_ratio' rows"):
        plot_act_ratio([r for r in table if r["statistic"] != "act_ratio"])


def test_config_validation_messages():
    with pytest.raises(ConfigError, match=r"--models: model 'gpt-5'.*known: deepseek-v3"):
        CharacterizeConfig(("gpt-5",), (1,))
    with pytest.raises(ConfigError, match="--batch: -4"):
        CharacterizeConfig(("gpt-oss-20b",), (1, -4))
    with pytest.raises(ConfigError, match="--steps"):
        CharacterizeConfig(("gpt-oss-20b",), (1,), n_steps=0)


def test_cli_writes_csv_config_and_figures(tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(
        [
            "characterize",
            "--models",
            "gpt-oss-20b",
            "--batch",
            "1,8",
            "--steps",
            "3",
            "--seed",
            "7",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "characterize.csv",
        "config.json",
        "fig3_act_ratio.pdf",
        "fig3_act_ratio.png",
        "fig5_token_bins.pdf",
        "fig5_token_bins.png",
        "manifest.json",
    ]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg == {
        "command": "characterize",
        "models": ["gpt-oss-20b"],
        "batch_sizes": [1, 8],
        "n_steps": 3,
        "seed": 7,
        "router_fit": "joint",
    }
    assert (out / "fig3_act_ratio.png").read_bytes()[:4] == b"\x89PNG"
    rows = read_table_csv(out / "characterize.csv")
    assert {r["seed"] for r in rows} == {7}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--models", "gpt-oss-120", "--batch", "1"], "--models: model 'gpt-oss-120': unknown"),
        (["--models", "gpt-oss-20b", "--batch", "0"], "--batch: 0 is not an integer in"),
        (["--models", "gpt-oss-20b", "--batch", "-3"], "--batch: -3"),
        (["--models", "gpt-oss-20b", "--batch", "1,,4"], "--batch: malformed list"),
        (["--models", "gpt-oss-20b,", "--batch", "1"], "--models: malformed list"),
        (["--models", "gpt-oss-20b", "--batch", "1,x"], "--batch: 'x' is not an integer"),
        (["--models", "gpt-oss-20b", "--batch", "1", "--steps", "two"], "--steps: 'two'"),
    ],
)
def test_cli_bad_input_exit_2_one_line_no_files(tmp_path, capsys, args, message):
    out = tmp_path / "out"
    rc = main(["characterize", *args, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists() or not any(out.iterdir())


def test_failure_while_plotting_leaves_no_files(tmp_path, monkeypatch):
    from sieve.report import plots

    def boom(table):
        raise ConfigError("plot failed")

    monkeypatch.setattr(plots, "plot_token_bins", boom)
    cfg = CharacterizeConfig(("gpt-oss-20b",), (1, 2), n_steps=2)
    with pytest.raises(ConfigError):
        run_characterize(cfg, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
