"""DRAM/PIM specs: presets, resolution to engine arrays, overrides and files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sieve import dram as specs
from sieve.dram.commands import COMMANDS, LEVELS
from sieve.dram.presets import PRESETS, get_spec, load_spec
from sieve.dram.spec import ns_to_ck
from sieve.errors import ConfigError


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_validates_and_resolves(name):
    spec = PRESETS[name].validate()
    a = spec.to_arrays()
    n = len(COMMANDS)
    assert a["cons_ptr"].shape == (len(LEVELS) * n + 1,)
    assert np.all(np.diff(a["cons_ptr"]) >= 0)
    assert a["cons_ptr"][-1] == len(a["cons_next"]) == len(a["cons_lat"])
    assert np.all(a["cons_lat"] > 0)
    assert a["counts"][1:].tolist() == [spec.org.pseudochannels, spec.org.sids,
                                       spec.org.bankgroups, spec.org.banks]
    assert spec.sources, f"{name} cites no sources"
    # PIM commands exist only with PIM units
    enabled = {c.name for c, e in zip(COMMANDS, a["cmd_enabled"]) if e}
    assert ("GWRITE" in enabled) == (spec.pim is not None)
    if spec.pim is not None:  # all-bank, bank-bundle or bank-parity rows: one set
        bundled, parity = spec.pim.bundles > 1, spec.pim.bank_parity
        assert spec.pim_mac_command in enabled
        assert ("MACAB" in enabled) == (not bundled and not parity)
        assert ({"ACTSB", "MACSB", "PRESB"} <= enabled) == bundled
        assert ({"ACTPB", "MACPB", "PREPB"} & enabled == {"ACTPB", "MACPB", "PREPB"}) == parity
        assert not ({"ACTPB", "MACPB", "PREPB"} & enabled) or parity


def test_hbm3_6400_is_ramulator_2_1_hbm3_6400mbps():
    # ramulator2.md §2: HBM3_6400Mbps timing preset, HBM3_8Gb_8hi organisation
    s = get_spec("hbm3-6400")
    t, o = s.timing, s.org
    assert t.tCK_ps == 625 and t.ticks_per_ck == 2
    assert (t.nBL, t.nCL, t.nRCDRD, t.nRCDWR, t.nRP, t.nRAS, t.nRC, t.nWR, t.nRTP, t.nCWL) == \
        (2, 20, 31, 15, 26, 45, 72, 33, 9, 10)
    assert (t.nCCDS, t.nCCDL, t.nCCDR, t.nRRDS, t.nRRDL, t.nFAW, t.nWTRS, t.nWTRL, t.nRTW,
            t.nPPD) == (2, 4, 3, 4, 5, 24, 7, 10, 20, 2)
    assert (t.nRFC, t.nRFCpb, t.nREFI, t.nREFIpb, t.nRREFD) == (416, 320, 6240, 195, 8)
    assert (o.pseudochannels, o.sids, o.bankgroups, o.banks, o.rows) == (2, 2, 4, 4, 8192)
    assert o.row_bytes == 1024 and o.access_bytes == 32
    assert s.peak_bandwidth_gbs == pytest.approx(16 * 51.2)  # 16 channels x 51.2 GB/s


def test_hbm3e_is_the_b200_organisation_at_8_gbps():
    s = get_spec("hbm3e-8000")
    o = s.org
    assert (o.stacks, o.channels, o.pseudochannels, o.sids, o.bankgroups, o.banks) == \
        (8, 16, 2, 2, 4, 4)
    assert o.banks_per_pc == 32 and o.row_bytes == 1024 and o.access_bytes == 32
    assert s.timing.tCK_ps == 500
    assert s.pc_peak_bytes_per_ns == pytest.approx(32.0)  # 32 GB/s per pseudo-channel
    assert s.peak_bandwidth_gbs == pytest.approx(8192.0)  # 8.19 TB/s (hardware.md §1)
    assert s.timing.nRFC * s.tCK_ns == pytest.approx(450)


def test_pim_presets_internal_bandwidth_ratios():
    ratio = {n: s.pim_internal_bandwidth_gbs / s.peak_bandwidth_gbs
             for n, s in PRESETS.items() if s.pim is not None}
    assert ratio["samsung-hbm2-pim"] == pytest.approx(4.0)  # "4x processing bandwidth"
    assert ratio["attacc-hbm3-pim-npc"] == pytest.approx(16.0)  # AttAcc bank-level 16x
    assert ratio["b200-hbm3e-pim"] == pytest.approx(8.0)
    assert ratio["b200-hbm3e-pim-npc"] == pytest.approx(12.8)
    sam = get_spec("samsung-hbm2-pim")
    assert sam.pim.pus_per_pc(sam.org) == 8 and sam.org.banks_per_pc == 16
    assert sam.org.total_pseudochannels == 64
    # 128 PUs per 4-high stack x 16 lanes x 2 FLOP at 1/tCCD_L (250 MHz) per stack
    assert sam.pim_peak_tflops / sam.org.stacks == pytest.approx(1.024)


def test_ns_to_ck_rounds_up_like_jedec():
    assert ns_to_ck(260, 625) == 416
    assert ns_to_ck(3900 / 32, 625) == 195
    assert ns_to_ck(15, 500) == 30
    assert ns_to_ck(15.01, 500) == 31  # (1 ps tolerance for float noise)


def test_overrides_replace_values_and_reject_unknown_or_impossible_ones():
    s = get_spec("hbm3-6400", {"nRCDRD": 40, "channels": 8, "refresh": "perbank"})
    assert s.timing.nRCDRD == 40 and s.org.channels == 8 and s.refresh == "perbank"
    assert get_spec("hbm3-6400").timing.nRCDRD == 31  # presets are never mutated
    p = get_spec("b200-hbm3e-pim").override({"pim.gbuf_bytes": 1024, "bus_ck.ACT": 2.0})
    assert p.pim.gbuf_bytes == 1024 and p.bus_ticks("ACT") == 4
    with pytest.raises(ConfigError, match="unknown override 'nRCD'.*valid: .*nRCDRD"):
        get_spec("hbm3-6400").override(nRCD=3)
    with pytest.raises(ConfigError, match="nRP must be >= 0"):
        get_spec("hbm3-6400").override(nRP=-1)
    with pytest.raises(ConfigError, match="impossible refresh timing"):
        get_spec("hbm3-6400").override(nRFC=7000)
    with pytest.raises(ConfigError, match="power of two"):
        get_spec("hbm3-6400").override(banks=3)
    with pytest.raises(ConfigError, match="no PIM units"):
        get_spec("hbm3-6400").override({"pim.lanes": 8})
    with pytest.raises(ConfigError, match="whole number of ticks"):
        get_spec("hbm3-6400").override({"bus_ck.PRE": 0.25})
    with pytest.raises(ConfigError, match="unknown .*known: attacc-hbm3-pim"):
        get_spec("hbm4")
    # bank-parity rows need PIMSimulator's PU of one even and one odd bank, one shared buffer
    with pytest.raises(ConfigError, match="bank_parity .* needs pim.banks_per_pu 2 .*has 1"):
        get_spec("b200-hbm3e-pim", {"pim.bank_parity": True})
    with pytest.raises(ConfigError, match="pim.bank_parity must be true or false"):
        get_spec("samsung-hbm2-pim", {"pim.bank_parity": "yes"})
    with pytest.raises(ConfigError, match="bank_parity .*shared row buffer"):
        get_spec("samsung-hbm2-pim", {"pim.dual_row_buffer": True})
    ab = get_spec("samsung-hbm2-pim", {"pim.bank_parity": False})
    assert ab.pim_mac_command == "MACAB" and ab.pim_row_bursts == 64
    assert get_spec("samsung-hbm2-pim").pim_row_bursts == 32


def test_spec_files_json_and_toml(tmp_path):
    j = tmp_path / "mine.json"
    j.write_text(json.dumps({"base": "hbm3e-8000", "overrides": {"nFAW": 60}, "stacks": 6}))
    s = load_spec(j)
    assert s.name == "mine" and s.timing.nFAW == 60 and s.org.stacks == 6
    t = tmp_path / "pimx.toml"
    t.write_text('base = "b200-hbm3e-pim"\nname = "pimx"\n[overrides]\nnCCDAB = 6\n'
                 '"pim.gbuf_bytes" = 4096\n')
    s = get_spec(str(t))
    assert s.name == "pimx" and s.timing.nCCDAB == 6 and s.pim.gbuf_bytes == 4096
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="bad.json.*not valid JSON"):
        load_spec(bad)
    nobase = tmp_path / "nobase.json"
    nobase.write_text("{}")
    with pytest.raises(ConfigError, match="missing 'base'"):
        load_spec(nobase)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"base": "hbm3-6400", "nRCDXX": 1}))
    with pytest.raises(ConfigError, match="wrong.json.*unknown override 'nRCDXX'"):
        load_spec(wrong)
    with pytest.raises(ConfigError, match="cannot read"):
        load_spec(tmp_path / "missing.json")


def test_spec_file_base_chains_resolve_beside_the_file(tmp_path, monkeypatch):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "lab").mkdir()
    (tmp_path / "specs" / "base.json").write_text(json.dumps({"base": "hbm3-6400",
                                                               "nRCDRD": 30}))
    (tmp_path / "specs" / "lab" / "child.toml").write_text(
        'base = "../base.json"\nnRP = 20\n"pim" = false\n'.replace('"pim" = false\n', ""))
    monkeypatch.chdir(tmp_path)  # the working folder has no base.json: the file's folder counts
    s = get_spec("specs/lab/child.toml")
    assert s.name == "child" and s.timing.nRCDRD == 30 and s.timing.nRP == 20
    (tmp_path / "specs" / "loop1.json").write_text(json.dumps({"base": "loop2.json"}))
    (tmp_path / "specs" / "loop2.json").write_text(json.dumps({"base": "./loop1.json"}))
    with pytest.raises(ConfigError, match="'base' chain loops back") as exc:
        get_spec("specs/loop1.json")
    assert "\n" not in str(exc.value)
    for i in range(20):  # a chain longer than MAX_BASE_DEPTH
        (tmp_path / f"c{i}.json").write_text(json.dumps({"base": f"c{i + 1}.json"}))
    (tmp_path / "c20.json").write_text(json.dumps({"base": "hbm3-6400"}))
    with pytest.raises(ConfigError, match="'base' chain deeper than 16 files"):
        get_spec("c0.json")
    assert get_spec("c10.json").name == "c10"


def test_latency_expressions_are_evaluated_safely():
    v = {"nCWL": 10, "nBL": 2, "nWR": 33}
    assert specs.evaluate_latency("nCWL + nBL + nWR", v) == 45
    assert specs.evaluate_latency("2 * nBL - 1", v) == 3
    with pytest.raises(ConfigError, match="unknown timing 'nXX'"):
        specs.evaluate_latency("nXX + 1", v)
    with pytest.raises(ConfigError, match="unsupported syntax"):
        specs.evaluate_latency("__import__('os')", v)
    with pytest.raises(ConfigError, match="bad latency"):
        specs.evaluate_latency("nBL +", v)


def test_multi_tick_commands_adjust_latencies():
    # hbm3: ACT is 3 ticks (1.5 CK) on the row bus, RD 2 ticks: ACT->RD = 2*nRCDRD + 2 - 1
    s = get_spec("hbm3-6400")
    act, rd = specs.COMMAND_INDEX["ACT"], specs.COMMAND_INDEX["RD"]
    rows = [r for r in s.resolved_constraints()
            if r.level == 4 and r.preceding == act and r.following == rd]
    assert [r.latency for r in rows] == [2 * 31 + 1]


def test_every_timing_field_is_documented_and_every_row_names_known_commands():
    names = {c.name for c in COMMANDS}
    for tc in specs.DRAM_CONSTRAINTS + specs.PIM_CONSTRAINTS + specs.SHARED_BUFFER_CONSTRAINTS:
        assert tc.level in LEVELS
        assert set(tc.preceding) <= names and set(tc.following) <= names
    for f in specs.DramTiming.__dataclass_fields__:
        if f not in ("tCK_ps", "ticks_per_ck"):
            assert f in specs.spec._TIMING_DOC
