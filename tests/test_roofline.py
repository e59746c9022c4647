"""Figure 4: roofline table, plot artists, `sieve roofline` files and errors."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from sieve.cli import main
from sieve.dram.presets import get_spec
from sieve.errors import ConfigError
from sieve.hw.presets import DEFAULT_GPU, get_gpu
from sieve.model.moe import get_model
from sieve.report import roofline

MODEL = "qwen3-30b-a3b"
B200 = get_gpu("b200")  # resolved once; the library takes the object


def test_table_rows_and_intensities():
    rows = roofline.roofline_table(MODEL, 8, seed=1, gpu=B200)
    kinds = [r["kind"] for r in rows]
    assert kinds.count("ceiling") == 2
    gpu, pim = (r for r in rows if r["kind"] == "ceiling")
    assert gpu["peak_tflops"] == 2250 and gpu["bandwidth_tbs"] == 8.0  # B200 bf16, HBM spec
    assert pim["peak_tflops"] == pytest.approx(65.536) and pim["intensity_flop_per_byte"] == 1
    m = get_model(MODEL)
    experts = [r for r in rows if r["kind"] == "expert"]
    assert sum(r["n_tokens"] for r in experts) == 8 * m.top_k * m.n_moe_layers
    for r in experts:  # bf16 expert: ~N FLOP per weight byte
        assert r["intensity_flop_per_byte"] == pytest.approx(r["n_tokens"], rel=0.01)
        assert r["gpu_attainable_tflops"] == pytest.approx(8.0 * r["intensity_flop_per_byte"])
        assert r["pim_attainable_tflops"] <= pim["peak_tflops"] + 1e-9
    att = next(r for r in rows if r["kind"] == "attention")
    assert att["intensity_flop_per_byte"] == pytest.approx(32 / 4, rel=0.01)  # GQA group
    assert [r["layer_type"] for r in rows if r["kind"] == "qkv"] == ["full"]
    again = roofline.roofline_table(MODEL, 8, seed=1, gpu=B200)
    assert roofline.table_to_csv(again) == roofline.table_to_csv(rows)  # same seed, same step
    other = roofline.roofline_table(MODEL, 8, seed=2, gpu=B200)
    assert [r["expert"] for r in other if r["kind"] == "expert"] != [
        r["expert"] for r in experts]


def test_layer_types_mla_gdn_sliding_and_shared_experts():
    ds = roofline.roofline_table("deepseek-v3", 2, gpu=B200,
                                 counts=np.zeros((58, 256), dtype=int))
    mla = next(r for r in ds if r["kind"] == "attention")
    assert mla["layer_type"] == "mla"
    assert mla["intensity_flop_per_byte"] == pytest.approx(2 * 128 * (576 + 512) / (2 * 576))
    assert any(r["kind"] == "shared_expert" and r["n_tokens"] == 2 for r in ds)
    assert not any(r["kind"] == "expert" for r in ds)
    q35 = roofline.roofline_table("qwen3.5-397b-a17b", 4, seed=0, gpu=B200)
    types = {r["layer_type"] for r in q35 if r["kind"] == "attention"}
    assert types == {"gdn", "full"}
    gpt = roofline.roofline_table("gpt-oss-120b", 4, seed=0, context=4096, gpu=B200)
    full, slid = (next(r for r in gpt if r["name"] == f"attention ({t})")
                  for t in ("full", "sliding"))
    assert slid["bytes"] < full["bytes"] / 10  # sliding window caps the cache at 128 tokens
    with pytest.raises(ConfigError, match="counts must have shape"):
        roofline.roofline_table(MODEL, 2, gpu=B200, counts=np.zeros((3, 3)))
    with pytest.raises(ConfigError, match="batch"):
        roofline.roofline_table(MODEL, 0, gpu=B200)


def test_takes_resolved_objects_and_an_explicit_spec():
    # spec=None is the GPU's own stacks; an explicit DramSpec replaces them
    own = roofline.roofline_table(MODEL, 4, seed=0, gpu=B200)
    same = roofline.roofline_table(MODEL, 4, seed=0, gpu=B200, spec=B200.dram_spec())
    assert roofline.table_to_csv(own) == roofline.table_to_csv(same)
    attacc = roofline.roofline_table(MODEL, 4, seed=0, gpu=B200, spec=get_spec("attacc-hbm3-pim"))
    pim = next(r for r in attacc if r["name"].startswith("pim:"))
    assert pim["name"] == "pim:attacc-hbm3-pim"
    with pytest.raises(ConfigError, match="gpu must be a GpuSpec"):
        roofline.roofline_table(MODEL, 4, gpu="b200")
    with pytest.raises(ConfigError, match="spec must be a DramSpec"):
        roofline.roofline_table(MODEL, 4, gpu=B200, spec="b200-hbm3e-pim")


def test_plot_has_the_expected_artists():
    rows = roofline.roofline_table(MODEL, 16, seed=0, gpu=B200)
    fig = roofline.plot_roofline(rows, title="t")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "FLOP/B" in ax.get_xlabel() and "TFLOP/s" in ax.get_ylabel()
    assert len(ax.lines) == 2  # the two rooflines
    labels = ax.get_legend_handles_labels()[1]
    for want in ("GPU roofline", "HBM-PIM roofline", "routed experts", "attention",
                 "QKV generation"):
        assert any(want in lab for lab in labels), (want, labels)
    n_exp = sum(r["kind"] == "expert" for r in rows)
    sizes = sorted(len(c.get_offsets()) for c in ax.collections)
    assert sizes.count(n_exp) == 2  # experts on both rooflines
    assert any("attention" in t.get_text() for t in ax.texts)
    assert len(fig.axes) == 2  # + the N color bar
    roofline._mpl().close(fig)
    with pytest.raises(ConfigError, match="ceiling"):
        roofline.plot_roofline([r for r in rows if r["kind"] != "ceiling"])


def test_cli_writes_all_files(tmp_path, capsys):
    out = tmp_path / "fig4"
    assert main(["roofline", "--model", MODEL, "--batch", "8", "--seed", "3",
                 "--out", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["config.json", "manifest.json", "roofline.csv", "roofline.pdf",
                     "roofline.png"]
    assert (out / "roofline.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "roofline.pdf").read_bytes()[:4] == b"%PDF"
    with open(out / "roofline.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == roofline.COLUMNS
    assert {r["kind"] for r in rows} == {"ceiling", "attention", "qkv", "expert"}
    assert str(out / "roofline.csv") in capsys.readouterr().out
    cfg = json.loads((out / "config.json").read_text())  # the CLI's defaults, resolved
    assert cfg["gpu"] == DEFAULT_GPU and cfg["spec"] == get_gpu(DEFAULT_GPU).memory_spec


@pytest.mark.parametrize("args,msg", [
    (["--model", "nope", "--batch", "8"], "model 'nope': unknown"),
    (["--model", MODEL, "--batch", "0"], "--batch: '0' is not an integer in [1, 65536]"),
    (["--model", MODEL, "--batch", "x"], "--batch: 'x' is not an integer"),
    (["--model", MODEL, "--batch", "4", "--spec", "hbm3-6400"], "has no PIM units"),
    (["--model", MODEL, "--batch", "4", "--gpu", "tpu"], "unknown"),
])
def test_cli_bad_input_exits_2_and_writes_nothing(tmp_path, capsys, args, msg):
    out = tmp_path / "fig4"
    assert main(["roofline", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1
    assert not out.exists()


def test_failure_while_plotting_leaves_no_partial_files(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise ConfigError("plot failed")

    monkeypatch.setattr(roofline, "plot_roofline", boom)
    out = tmp_path / "fig4"
    with pytest.raises(ConfigError):
        roofline.run_roofline(MODEL, 4, out, gpu=B200)
    assert not out.exists()
