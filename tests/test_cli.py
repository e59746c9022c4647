"""The command line: output, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sieve.cli import main


def test_specs_lists_presets_and_shows_one_with_units(capsys):
    assert main(["specs"]) == 0
    out = capsys.readouterr().out
    assert "hbm3-6400" in out and "* b200-hbm3e-pim" in out
    assert main(["specs", "hbm3-6400"]) == 0
    out = capsys.readouterr().out
    assert "nRCDRD" in out and "31 CK = 19.38 ns" in out and "sources:" in out


def test_dram_json_summary(capsys):
    assert main(["dram", "--spec", "hbm3-6400", "--pattern", "rand", "--requests", "3000",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    for key in ("cycles", "requests", "bandwidth_gbs", "latency_mean_ns", "latency_p99_ns",
                "row_hits", "row_misses", "row_conflicts", "command_counts"):
        assert key in d
    assert d["requests"] == 3000 and d["cycles"] > 0


def test_dram_trace_file_and_text_summary(tmp_path, capsys):
    p = tmp_path / "t.trace"
    p.write_text("".join(f"LD 0x{i * 64:x}\n" for i in range(500)) + "ST 0x100\n")
    assert main(["dram", "--trace", str(p), "--set", "nRCDRD=40"]) == 0
    out = capsys.readouterr().out
    assert "total_num_read_requests:  500" in out and "total_num_write_requests: 1" in out


@pytest.mark.parametrize("argv,msg", [
    (["dram", "--spec", "hbm9"], "DRAM spec 'hbm9': unknown (known:"),
    (["dram", "--set", "nRP=-2"], "timing nRP must be >= 0"),
    (["dram", "--set", "bogus"], "expected NAME=VALUE"),
    (["dram", "--requests", "-5"], "--requests must be >= 1"),
    (["gemv", "--spec", "hbm3-6400", "--rows", "8", "--cols", "8"], "has no PIM units"),
    (["gemv", "--rows", "0", "--cols", "8"], "out_rows must be an integer >= 1"),
    (["specs", "nope"], "unknown"),
])
def test_bad_input_gives_one_line_and_exit_2(argv, msg, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1 and "Traceback" not in err


def test_malformed_trace_file(tmp_path, capsys):
    p = tmp_path / "bad.trace"
    p.write_text("LD 0x40\nLD nope\n")
    assert main(["dram", "--trace", str(p)]) == 2
    err = capsys.readouterr().err
    assert "bad.trace' line 2: field 2 (address)" in err


def test_gemv(capsys):
    assert main(["gemv", "--spec", "samsung-hbm2-pim", "--rows", "1024", "--cols", "1024",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["cycle_accurate_over_roofline"] >= 1.0 and d["pcs"] == 64


def test_console_script_exit_code_and_no_traceback():
    r = subprocess.run([sys.executable, "-m", "sieve", "dram", "--spec", "nope"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "unknown" in r.stderr
    r = subprocess.run([sys.executable, "-m", "sieve", "dram", "--nosuchflag"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
