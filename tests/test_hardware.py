"""sieve.hw.presets: presets, sources, overrides, errors; sieve/calibration/data transcriptions."""

from __future__ import annotations

import csv
import re
from dataclasses import fields

import pytest
from conftest import SHARED

from sieve import hw
from sieve.calibration.costmodels import load_rows
from sieve.errors import ConfigError


def test_b200_key_numbers_match_hardware_md_section0():
    g = hw.get_gpu("b200")
    assert (g.bf16_tflops, g.fp8_tflops, g.fp4_tflops) == (2250, 4500, 9000)
    assert g.sms == 148 and g.hbm_stacks == 8
    assert g.hbm_bw_gbs == 8000 and g.nvlink_bw_gbs == 900
    assert g.hbm_usable_bytes == 180e9 < g.hbm_physical_bytes == 192e9
    # tensor clock derived in hardware.md §1: 2250e12 / (148 x 8192 FLOP/clk)
    assert g.tensor_clock_mhz == pytest.approx(2250e12 / (148 * 8192) / 1e6, rel=1e-3)


@pytest.mark.parametrize("name", sorted(hw.GPUS))
def test_every_numeric_gpu_field_cites_a_source(name):
    g = hw.GPUS[name]
    for f in fields(g):
        if f.name in ("name", "description", "sources", "memory_overrides"):
            continue
        assert g.sources.get(f.name), f"{name}.{f.name} has no source"


@pytest.mark.parametrize("name", sorted(hw.GPUS))
def test_memory_spec_resolves_with_matching_stack_count(name):
    g = hw.GPUS[name]
    spec = g.dram_spec()
    assert spec.org.stacks == g.hbm_stacks


def test_b200_pim_stacks_deliver_the_spec_bandwidth():
    # 8 stacks x 32 PCs x 32 bit x 8 Gb/s = 8.19 TB/s vs the 8.0 TB/s spec (hardware.md §1)
    g = hw.get_gpu("b200")
    assert g.dram_spec().peak_bandwidth_gbs == pytest.approx(g.hbm_bw_gbs, rel=0.05)


def test_ridge_points_match_hardware_md():
    g = hw.get_gpu("b200")
    assert g.peak_tflops("bf16") * 1e12 / g.hbm_bw_bytes_per_s == pytest.approx(281, abs=1)
    assert g.peak_tflops("fp8") * 1e12 / g.hbm_bw_bytes_per_s == pytest.approx(563, abs=1)


def test_hopper_has_no_fp4_and_falls_back_to_weight_only():
    h100 = hw.get_gpu("h100")
    assert "fp4" not in h100.native_compute
    assert h100.peak_tflops("nvfp4") == h100.bf16_tflops  # dequantised to BF16 (Marlin)
    assert h100.run_dtype("nvfp4").weight_bytes == hw.get_dtype("nvfp4").weight_bytes


def test_unknown_names_list_valid_choices():
    with pytest.raises(ConfigError, match=r"GPU 'a100'.*known: b200, h100, h200"):
        hw.get_gpu("a100")
    with pytest.raises(ConfigError, match=r"dtype 'fp7'.*known: bf16"):
        hw.get_dtype("fp7")
    with pytest.raises(ConfigError, match=r"system.*known: 16xb200, 1xb200"):
        hw.get_system("3xb200")
    with pytest.raises(ConfigError, match=r"link.*known: ib-duplex400, ib-ndr400"):
        hw.get_link("ethernet")


def test_gpu_override_and_unknown_key():
    g = hw.get_gpu("b200", {"hbm_bw_gbs": 9000.0})
    assert g.hbm_bw_gbs == 9000.0 and hw.get_gpu("b200").hbm_bw_gbs == 8000.0
    with pytest.raises(ConfigError, match=r"unknown override 'hbm_bw'.*valid: .*hbm_bw_gbs"):
        hw.get_gpu("b200").override(hbm_bw=1)
    with pytest.raises(ConfigError, match="sms must be a positive integer"):
        hw.get_gpu("b200").override(sms=-1)
    with pytest.raises(ConfigError, match="hbm_bw_gbs must be > 0"):
        hw.get_gpu("b200").override(hbm_bw_gbs=-5.0)
    with pytest.raises(ConfigError, match="hbm_bw_gbs must be > 0, got 'fast'"):
        hw.get_gpu("b200").override(hbm_bw_gbs="fast")
    with pytest.raises(ConfigError, match=r"memory_spec 'hbm9': unknown \(known: attacc-hbm3-pim"):
        hw.get_gpu("b200").override(memory_spec="hbm9")


def test_system_presets_and_topology():
    s = hw.get_system("16xb200")
    assert (s.n_gpus, s.gpus_per_node, s.n_nodes) == (16, 8, 2)
    assert s.intra_link.bw_gbs == 900 and s.inter_link.bw_gbs == 50
    assert hw.get_system("1xb200").n_nodes == 1
    s2 = s.override({"gpu.nvlink_bw_gbs": 1800.0, "inter_link": "ib-duplex400"})
    assert s2.intra_link.bw_gbs == 1800 and s2.inter_link.bw_gbs == 400
    with pytest.raises(ConfigError, match="not a multiple of gpus_per_node"):
        hw.make_system("b200", 12, 8)
    with pytest.raises(ConfigError, match="exceeds 8"):
        hw.make_system("b200", 16, 16)
    with pytest.raises(ConfigError, match=r"unknown override 'nodes'.*valid: .*gpu, .*n_gpus"):
        s.override(nodes=3)
    with pytest.raises(ConfigError, match="n_gpus must be a positive integer"):
        hw.make_system("b200", 0)


def test_presets_are_frozen():
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.get_gpu("b200").sms = 1  # type: ignore[misc]


# ---- the measured tables in sieve/calibration/data are exact transcriptions of hardware.md ----

def _md():
    p = SHARED / "reference" / "hardware.md"
    if not p.exists():
        pytest.skip(f"reference not present: {p}")
    return p.read_text().splitlines()


def test_gemm_table_transcription_matches_hardware_md():
    md = [[c.strip() for c in line.strip("|").split("|")] for line in _md()
          if re.match(r"\| (bf16|fp8_block|nvfp4)( \(DeepGEMM\))? \| \d", line)]
    ref = [(c[0].split()[0], int(c[1]), int(c[2]), int(c[3]), float(c[4])) for c in md]
    ours = [(r["dtype"], int(r["m"]), int(r["n"]), int(r["k"]), float(r["t_us"]))
            for r in load_rows("b200_gemm_measured")]
    assert ours == ref and len(ours) == 33


def test_moe_table_transcription_matches_hardware_md():
    md = [[c.strip() for c in line.strip("|").split("|")] for line in _md()
          if re.match(r"\| (TRT-LLM|FlashInfer|SGLang Triton).* \| \d+/", line)]
    ref = [tuple(map(int, c[1].split("/"))) + (c[2], int(c[3]), int(c[4]), float(c[7]))
           for c in md]
    ours = [(int(r["hidden"]), int(r["inter"]), int(r["experts"]), int(r["topk"]), r["dtype"],
             int(r["ep"]), int(r["tokens"]), float(r["t_us"]))
            for r in load_rows("b200_moe_measured")]
    assert ours == ref and len(ours) == 23


def test_nccl_and_deepep_transcriptions_match_hardware_md():
    lines = _md()
    sizes = {"1 KB": 1 << 10, "64 KB": 1 << 16, "1 MB": 1 << 20, "4 MB": 1 << 22,
             "16 MB": 1 << 24, "64 MB": 1 << 26, "512 MB": 1 << 29}
    cols = [("b200", "all_gather"), ("b200", "all_to_all"), ("b200", "all_reduce"),
            ("h200", "all_gather"), ("h200", "all_to_all"), ("h200", "all_reduce"),
            ("h100", "all_to_all")]
    ref = {}
    for line in lines:
        c = [x.strip() for x in line.strip("|").split("|")]
        if c[0] in sizes and len(c) == 8:
            for j, key in enumerate(cols):
                ref[key + (sizes[c[0]],)] = float(c[j + 1].split()[0])
    ours = {(r["gpu"], r["collective"], int(r["size_bytes"])): float(r["t_us"])
            for r in load_rows("nccl_measured")}
    assert ours == ref and len(ours) == 49
    ops = [(g, o) for g in ("b200", "h200", "h100") for o in ("dispatch", "combine")]
    ref = {}
    for line in lines:
        if re.match(r"\| \**(1|8|32|64|128|256|512|1024)\** \| \**[0-9.]+ \(", line):
            c = [x.strip().strip("*") for x in line.strip("|").split("|")]
            for j, key in enumerate(ops):
                ref[key + (int(c[0]),)] = float(c[j + 1].split()[0].strip("*"))
    ours = {(r["gpu"], r["op"], int(r["tokens"])): float(r["t_us"])
            for r in load_rows("deepep_measured")}
    assert ours == ref and len(ours) == 48


def test_nccl_sizes_are_binary_as_the_busbw_column_implies():
    # hardware.md §4.1: B200 all-gather 1 MB in 18.7 us = 49 GB/s busbw -> 1 MB = 2^20 B
    rows = {(r["gpu"], r["collective"], int(r["size_bytes"])): float(r["t_us"])
            for r in load_rows("nccl_measured")}
    t = rows[("b200", "all_gather", 1 << 20)]
    assert (1 << 20) / (t * 1e-6) * 7 / 8 / 1e9 == pytest.approx(49, abs=0.5)
    t = rows[("b200", "all_reduce", 1 << 29)]
    assert (1 << 29) / (t * 1e-6) * 2 * 7 / 8 / 1e9 == pytest.approx(704, abs=1)


def test_csv_files_cite_their_source():
    from importlib import resources
    for name in ("b200_gemm_measured", "b200_moe_measured", "nccl_measured", "deepep_measured"):
        head = resources.files("sieve.calibration").joinpath("data", f"{name}.csv").read_text()
        assert "hardware.md" in head and "aiconfigurator" in head
        assert list(csv.reader([next(ln for ln in head.splitlines() if not ln.startswith("#"))]))


# ---- CLI ----------------------------------------------------------------------------------------

def test_cli_lists_and_shows_hardware(capsys):
    from sieve.cli import main

    assert main(["hardware"]) == 0
    out = capsys.readouterr().out
    assert "b200" in out and "16xb200" in out and "ib-ndr400" in out
    assert main(["hardware", "b200"]) == 0
    out = capsys.readouterr().out
    assert "2250 TFLOPS" in out and "hardware.md §0, src A" in out and "eta_bw" in out
    assert main(["hardware", "16xb200"]) == 0
    assert "2 node(s)" in capsys.readouterr().out


def test_cli_unknown_hardware_is_one_line_and_exit_2(capsys):
    from sieve.cli import main

    assert main(["hardware", "a100"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "GPUs: b200, h100, h200" in err and "systems:" in err
