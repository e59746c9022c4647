"""examples/ runs as its README says (on reduced grids: the same files, fewer points)."""

from __future__ import annotations

from pathlib import Path

from sieve.cli import main
from sieve.report.tables import read_csv

EX = Path(__file__).resolve().parents[1] / "examples"


def test_paper_sweep(tmp_path, capsys):
    f = str(EX / "paper_sweep.toml")
    assert main(["sweep", f, "--dry-run", "--out", str(tmp_path / "dry")]) == 0
    assert "378 run(s)" in capsys.readouterr().out  # 3 setups x 2 datasets x 7 methods x 9 B
    out = tmp_path / "o"
    assert main(["sweep", f, "--grid", "batch=4", "--grid", "workload=hh-rlhf", "--grid",
                 "method=noexp,sieve-cp", "--set", "layers=1", "--set", "warmup=0", "--jobs",
                 "1", "--out", str(out)]) == 0
    rows = read_csv(out / "runs.csv")
    assert {r["model"] for r in rows} == {"gpt-oss-120b", "qwen3.5-397b-a17b", "qwen3-30b-a3b"}


def test_pim_presets(tmp_path):
    out = tmp_path / "o"
    assert main(["sweep", str(EX / "pim_presets.toml"), "--grid", "batch=16", "--grid",
                 "method=gpu-only,noexp", "--set", "layers=1", "--set", "warmup=0", "--jobs",
                 "1", "--out", str(out)]) == 0
    rows = read_csv(out / "runs.csv")
    assert len({r["memory"] for r in rows}) == 5
    assert all(r["x_gpu_only"] is not None for r in rows)


def test_my_model_and_my_system(tmp_path):
    out = tmp_path / "m"
    assert main(["run", "--model", str(EX / "my_model" / "config.json"), "--system", "1xb200",
                 "--batch", "8", "--methods", "noexp,sieve-cp", "--layers", "1", "--warmup",
                 "0", "--jobs", "1", "--out", str(out)]) == 0
    assert {r["model"] for r in read_csv(out / "runs.csv")} == {"my_model"}
    out = tmp_path / "s"
    assert main(["run", "--system", str(EX / "my_system.toml"), "--model", "qwen3-30b-a3b",
                 "--batch", "8", "--methods", "noexp", "--layers", "1", "--warmup", "0",
                 "--jobs", "1", "--out", str(out)]) == 0
    row = read_csv(out / "runs.csv")[0]
    assert row["n_gpus"] == 2 and row["memory"] == "duplex-logic-pim"
