"""Self-describing sweeps (issue 16, part 4): every system override key, the GPU and the
resolved PIM preset are columns; the summary table is printed; Pareto plots average over seeds
and come one per PIM preset; the defaults that differ from `sieve run`'s are named."""

from __future__ import annotations

import pytest

from sieve.cli import main
from sieve.report.tables import read_csv

SWEEP = '''
[base]
model = "qwen3-30b-a3b"
system = "1xb200"
batch = 4
warmup = 0
[grid]
method = ["noexp", "sieve-cp"]
seed = [0, 1]
system_overrides = [{memory = "b200-hbm3e-pim"}, {memory = "duplex-logic-pim"}]
'''


def test_sweep_over_presets_and_seeds(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text(SWEEP)
    out = tmp_path / "o"
    assert main(["sweep", str(f), "--set", "layers=1", "--jobs", "1", "--out", str(out)]) == 0
    cap = capsys.readouterr()
    rows = read_csv(out / "runs.csv")
    assert len(rows) == 8
    assert {r["system.memory"] for r in rows} == {"b200-hbm3e-pim", "duplex-logic-pim"}
    assert {r["memory"] for r in rows} == {"b200-hbm3e-pim", "duplex-logic-pim"}
    assert {r["gpu"] for r in rows} == {"b200"}
    # gains are per point: a preset's runs are compared with that preset's only
    for r in rows:
        same = [x for x in rows if x["memory"] == r["memory"] and x["seed"] == r["seed"]
                and x["method"] != r["method"]]
        assert r["x_best_other"] == pytest.approx(
            r["throughput_tok_s_gpu"] / same[0]["throughput_tok_s_gpu"], rel=1e-6)
    # one Pareto plot per preset, each averaging the two seeds
    for preset in ("b200-hbm3e-pim", "duplex-logic-pim"):
        assert (out / f"fig9_pareto_qwen3-30b-a3b_{preset}.png").is_file()
    assert "memory" in cap.out and "seed" in cap.out and "x best other" in cap.out
    # steps was not set: the note says the run fields' default differs from `sieve run`'s
    assert "steps = 2 (the run fields' default)" in cap.err
    assert "layers = all" not in cap.err  # set with --set layers=1
