"""sieve.hw.system: SystemConfig resolved once, presets, overrides, JSON/TOML round trip."""

from __future__ import annotations

import json

import pytest

from sieve import hw
from sieve.dram import get_spec
from sieve.errors import ConfigError


@pytest.mark.parametrize("name", sorted(hw.SYSTEMS))
def test_presets_are_fully_resolved(name):
    s = hw.get_system(name)
    assert isinstance(s.gpu, hw.GpuSpec) and isinstance(s.memory.org.stacks, int)
    assert s.gpu_calibration.name == s.gpu.name
    assert s.comm_calibration.name == s.gpu.name
    assert s.dtype.name == "bf16"  # seed §7: "stored in bfloat16"
    assert s.has_pim
    assert s.memory == s.gpu.dram_spec()


@pytest.mark.parametrize("name", sorted(hw.SYSTEMS))
@pytest.mark.parametrize("ext", ["json", "toml"])
def test_file_round_trip_is_exact(tmp_path, name, ext):
    s = hw.get_system(name)
    path = s.save(tmp_path / f"sys.{ext}")
    assert hw.load_system(path) == s
    assert hw.get_system(str(path)) == s
    assert hw.SystemConfig.from_dict(json.loads(json.dumps(s.to_dict()))) == s


def test_round_trip_keeps_every_override(tmp_path):
    s = hw.get_system("4xb200", {"memory": "attacc-hbm3-pim", "memory.nCCDAB": 6,
                                 "gpu.hbm_bw_gbs": 9000.0, "dtype": "fp8",
                                 "comm_calibration.all_gather.eta": 0.5,
                                 "gpu_calibration.eta_bw": 0.8, "inter_link": "ib-duplex400"})
    assert s.memory.timing.nCCDAB == 6 and s.gpu.hbm_bw_gbs == 9000.0
    assert s.comm_calibration.all_gather.eta == 0.5 and s.gpu_calibration.eta_bw == 0.8
    for ext in ("json", "toml"):
        assert hw.load_system(s.save(tmp_path / f"s.{ext}")) == s


def test_no_pim_memory_round_trips(tmp_path):
    s = hw.get_system("1xb200", {"memory": "hbm3e-8000"})
    assert not s.has_pim
    assert hw.load_system(s.save(tmp_path / "s.toml")) == s


def test_short_form_file(tmp_path):
    p = tmp_path / "mine.toml"
    p.write_text('base = "8xb200"\nname = "mine"\n[overrides]\nn_gpus = 16\n'
                 'gpus_per_node = 8\n"memory.nCCDAB" = 6\n')
    s = hw.load_system(p)
    assert (s.name, s.n_gpus, s.n_nodes, s.memory.timing.nCCDAB) == ("mine", 16, 2, 6)


def test_short_form_base_file_resolves_beside_the_file(tmp_path, monkeypatch):
    (tmp_path / "lab").mkdir()
    hw.get_system("4xb200").save(tmp_path / "four.json")
    (tmp_path / "lab" / "mine.json").write_text('{"base": "../four.json", "n_gpus": 2}')
    monkeypatch.chdir(tmp_path / "lab")  # not where four.json is: the file's folder counts
    s = hw.load_system(tmp_path / "lab" / "mine.json")
    assert s.n_gpus == 2 and s.gpu.name == "b200"
    (tmp_path / "loop.json").write_text('{"base": "loop.json"}')
    with pytest.raises(ConfigError, match="'base' chain loops back"):
        hw.load_system(tmp_path / "loop.json")


def test_changing_the_gpu_brings_its_memory_and_calibrations():
    s = hw.get_system("8xb200", {"gpu": "h100"})
    assert s.name == "8xh100"
    assert s.memory == hw.get_gpu("h100").dram_spec()
    assert s.gpu_calibration == hw.get_calibration("h100")
    assert s.comm_calibration == hw.get_comm_calibration("h100")
    kept = hw.get_system("8xb200", {"gpu": "h100", "memory": "b200-hbm3e-pim"})
    assert kept.memory == get_spec("b200-hbm3e-pim")


def test_overrides_are_validated_with_one_clear_message():
    with pytest.raises(ConfigError, match=r"unknown override 'nodes'.*valid: .*memory\.<key>"):
        hw.get_system("8xb200", {"nodes": 2})
    with pytest.raises(ConfigError, match="memory_spec|DRAM spec 'nope'"):
        hw.get_system("8xb200", {"memory": "nope"})
    with pytest.raises(ConfigError, match="dtype 'int3'"):
        hw.get_system("8xb200", {"dtype": "int3"})
    # Hopper has no FP4 tensor cores: NVFP4 runs weight-only on its BF16 ones
    assert hw.get_system("8xh100", {"dtype": "nvfp4"}).gpu.run_dtype("nvfp4").compute == "bf16"
    with pytest.raises(ConfigError, match="n_gpus must be a positive integer"):
        hw.get_system("8xb200", {"n_gpus": 0})
    with pytest.raises(ConfigError, match="unknown override 'nXX'"):
        hw.get_system("8xb200", {"memory.nXX": 1})


def test_bad_files_give_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    for text, match in (("{", "not valid JSON"), ("[1, 2]", "table/object"),
                        ('{"format": "x"}', "format"),
                        ('{"base": "8xb200", "overrides": [1]}', "overrides"),
                        ('{"base": "3xb200"}', "known: 16xb200")):
        bad.write_text(text)
        with pytest.raises(ConfigError, match=match) as e:
            hw.load_system(bad)
        assert "\n" not in str(e.value)
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="not UTF-8"):
        hw.load_system(bad)
    full = hw.get_system("1xb200").to_dict()
    full["gpu"]["warp_size"] = 32
    bad.write_text(json.dumps(full))
    with pytest.raises(ConfigError, match="no field.*warp_size"):
        hw.load_system(bad)
    with pytest.raises(ConfigError, match=r"\.json or \.toml"):
        hw.get_system("1xb200").save(tmp_path / "x.yaml")


def test_describe_names_every_part():
    d = hw.get_system("16xb200").describe()
    assert "16 x b200" in d and "2 node(s)" in d and "b200-hbm3e-pim" in d and "bf16" in d


def test_a_gpu_of_your_own_needs_and_takes_calibrations():
    mine = hw.get_gpu("b200").override(name="b300-guess", fp4_tflops=13500.0)
    cal = hw.get_calibration("b200").override(name="b300-guess")
    with pytest.raises(ConfigError, match=r"GPU calibration 'b300-guess': unknown.*b200"):
        hw.make_system(mine, 8)
    s = hw.make_system(mine, 8, gpu_calibration=cal, comm_calibration="b200")
    assert s.gpu is mine and s.gpu_calibration is cal
    assert s.comm_calibration == hw.get_comm_calibration("b200")
    assert s.memory == get_spec(mine.memory_spec)
    # replacing the GPU of a preset keeps the calibrations given with it
    t = hw.get_system("8xb200").override({"gpu": mine, "gpu_calibration": cal,
                                          "comm_calibration": "b200"})
    assert (t.gpu, t.gpu_calibration, t.name) == (mine, cal, "8xb300-guess")
    with pytest.raises(ConfigError, match=r"GPU calibration 'b300-guess': unknown"):
        hw.get_system("8xb200").override({"gpu": mine})
