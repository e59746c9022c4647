"""The gain, stated (issue 16, part 3): speedups per point in runs.csv and the printed table,
one answer line per point."""

from __future__ import annotations

import pytest

from sieve.cli import main
from sieve.report.gain import GAIN_COLUMNS, add_gains, answers, point_key
from sieve.report.tables import read_csv


def _row(method, thr, batch=4, **kw):
    return {"model": "m", "system": "1xb200", "memory": "b200-hbm3e-pim", "method": method,
            "batch": batch, "workload": "hh-rlhf", "colocated": False, "seed": 0,
            "throughput_tok_s_gpu": thr, "tpot_ms": 1.0, **kw}


def test_gains_are_per_point_and_by_hand():
    rows = [_row("gpu-only", 100.0), _row("noexp", 90.0), _row("sieve", 150.0),
            _row("sieve-cp", 165.0), _row("gpu-only", 200.0, batch=8),
            _row("sieve", 300.0, batch=8), _row("sieve", 50.0, batch=16)]
    out = {(r["method"], r["batch"]): r for r in add_gains(rows)}
    assert out[("sieve-cp", 4)]["x_gpu_only"] == pytest.approx(1.65)
    assert out[("sieve-cp", 4)]["x_best_other"] == pytest.approx(1.1)
    assert out[("sieve", 4)]["x_best_other"] == pytest.approx(150 / 165)
    assert out[("gpu-only", 4)]["x_gpu_only"] == pytest.approx(1.0)
    assert out[("sieve", 8)]["x_gpu_only"] == pytest.approx(1.5)  # its own point only
    alone = out[("sieve", 16)]
    assert alone["x_gpu_only"] is None and alone["x_best_other"] is None
    assert point_key(rows[0]) == point_key(rows[2]) != point_key(rows[4])
    lines = answers(rows)
    assert len(lines) == 2  # points with several methods
    assert lines[0].startswith("m 1xb200 (b200-hbm3e-pim), hh-rlhf, B=4: best sieve-cp 165")
    assert "1.65x GPU-only" in lines[0] and "1.83x the best seed baseline (noexp)" in lines[0]
    assert "1.10x the next best (sieve)" in lines[0]


def test_run_states_the_gain(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["run", "--model", "qwen3-30b-a3b", "--batch", "8", "--methods",
                 "gpu-only,noexp,sieve-cp", "--layers", "1", "--warmup", "0", "--jobs", "1",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    rows = read_csv(out / "runs.csv")
    assert set(GAIN_COLUMNS) <= set(rows[0])
    by = {r["method"]: r for r in rows}
    assert by["gpu-only"]["x_gpu_only"] == pytest.approx(1.0)
    assert by["sieve-cp"]["x_gpu_only"] == pytest.approx(
        by["sieve-cp"]["throughput_tok_s_gpu"] / by["gpu-only"]["throughput_tok_s_gpu"])
    assert "x GPU-only" in text and "x best other" in text
    best = max(rows, key=lambda r: r["throughput_tok_s_gpu"])["method"]
    assert f"B=8: best {best}" in text
