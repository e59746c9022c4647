"""`sieve dram --log` streams the command log to disk in bounded memory (issue 18): the
compiled CSV formatter is byte-for-byte the Python reference, the streamed file is byte-for-byte
the in-memory one, a failed run leaves nothing, and peak memory does not grow with the log."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from sieve.dram import device as dram
from sieve.dram import memtrace
from sieve.dram.log import LOG_DTYPE, LogWriter, log_to_csv, log_to_csv_python, log_to_npy
from sieve.errors import ConfigError


@pytest.fixture(scope="module")
def mixed_run():
    """A run with reads, writes, refreshes, row misses and conflicts, its log in memory."""
    tr = memtrace.synthetic_trace("rand", 40000, stride_bytes=64, write_fraction=0.3, seed=7)
    res = dram.simulate_requests("hbm3-6400", tr, log=True)
    assert {"REFab", "WR", "RD", "ACT", "PRE"} <= set(res.command_counts)
    return tr, res


def test_compiled_csv_is_the_python_reference_byte_for_byte(mixed_run):
    _, res = mixed_run
    from sieve.dram.commands import COMMANDS

    ref = [i for i, c in enumerate(COMMANDS) if c.name == "REFab"][0]
    # the first 20,000 records and every refresh (the Python reference is slow)
    keep = np.flatnonzero((np.arange(len(res.log)) < 20_000) | (res.log["cmd"] == ref))
    log, typ = res.log[keep], res.log_type[keep]
    assert (typ == -1).any() and (typ == 1).any() and (typ == 0).any()
    assert log_to_csv(log, typ) == log_to_csv_python(log, typ)
    # types read from the commands when not given
    assert log_to_csv(log) == log_to_csv_python(log)
    assert log_to_csv(log[:0]) == log_to_csv_python(log[:0])


def test_csv_of_extreme_values_matches_the_reference():
    log = np.zeros(4, dtype=LOG_DTYPE)
    log["tick"] = [0, 2**62, 123456789012345, 9]
    for f in ("ch", "pc", "sid", "bg", "bank", "row", "col"):
        log[f] = [-1, 2**31 - 1, -(2**31), 0]
    log["cmd"] = [0, 1, 2, 3]
    typ = np.array([-1, 0, 1, -128], dtype=np.int8)
    assert log_to_csv(log, typ) == log_to_csv_python(log, typ)


def test_the_formatter_refuses_bad_records_without_crashing():
    log = np.zeros(2, dtype=LOG_DTYPE)
    log["cmd"] = [0, 10_000]
    with pytest.raises(ValueError, match="command index"):
        log_to_csv(log)
    with pytest.raises(ValueError, match="command index"):
        log_to_csv(log, np.zeros(2, dtype=np.int8))
    with pytest.raises(ValueError, match="one entry per log record"):
        log_to_csv(log[:1], np.zeros(2, dtype=np.int8))
    with pytest.raises(ValueError, match="LOG_DTYPE"):
        log_to_csv(np.zeros(3, dtype=np.int64))
    from sieve.dram import _logcsv

    z = np.zeros(2, dtype=np.int32)
    with pytest.raises(ValueError, match="different lengths"):
        _logcsv.format_rows(np.zeros(3, dtype=np.int64), z, z, z, z, z, z, z, z,
                            np.zeros(2, dtype=np.int8), [b"ACT"])


@pytest.mark.parametrize("kind", [".csv", ".npy"])
def test_a_streamed_log_is_the_in_memory_log_byte_for_byte(tmp_path, mixed_run, kind):
    tr, res = mixed_run
    path = tmp_path / f"log{kind}"
    pieces = []

    with LogWriter(path) as w:
        def sink(recs, types):
            pieces.append(len(recs))
            w.write(recs, types)
        streamed = dram.simulate_requests("hbm3-6400", tr, log_sink=sink, chunk_requests=4000)
    assert len(pieces) > 5  # it really came in pieces
    assert sum(pieces) == len(res.log) == w.records
    ref = log_to_csv(res.log, res.log_type).encode() if kind == ".csv" else log_to_npy(res.log)
    assert path.read_bytes() == ref
    assert streamed.log is None and streamed.log_type is None
    d, e = streamed.to_dict(), res.to_dict()
    assert d == e
    if kind == ".npy":
        assert np.array_equal(np.load(path), res.log)


def test_a_failed_run_leaves_the_previous_log_untouched(tmp_path, mixed_run):
    tr, _ = mixed_run
    path = tmp_path / "log.npy"
    path.write_bytes(b"previous")
    n = []

    def sink(recs, types):
        w.write(recs, types)
        n.append(1)
        if len(n) == 3:
            raise KeyboardInterrupt  # Ctrl-C mid-run

    with pytest.raises(KeyboardInterrupt):
        with LogWriter(path) as w:
            dram.simulate_requests("hbm3-6400", tr, log_sink=sink, chunk_requests=4000)
    assert path.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.npy"]  # no temporary left


def test_log_sink_arguments_are_checked():
    tr = memtrace.synthetic_trace("seq", 10)
    with pytest.raises(ConfigError, match="callable"):
        dram.simulate_requests("hbm3-6400", tr, log_sink="file.npy")
    with pytest.raises(ConfigError, match="not both"):
        dram.simulate_requests("hbm3-6400", tr, log=True, log_sink=print)
    with pytest.raises(ValueError, match="unknown kind"):
        LogWriter("log.txt")


_PEAK = """
import resource, sys
from sieve.cli import main
rc = main(sys.argv[1:])
print("PEAK_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, rc)
"""


def _peak_kb(args: list[str]) -> int:
    out = subprocess.run([sys.executable, "-c", _PEAK, *args], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("PEAK_KB")][-1]
    return int(line.split()[1])


def _stream_check(tmp_path, kind: str, requests: int) -> None:
    args = ["dram", "--spec", "hbm3-6400", "--pattern", "seq", "--requests", str(requests),
            "--json"]
    base = _peak_kb(args)
    path = tmp_path / f"big{kind}"
    logged = _peak_kb(args + ["--log", str(path)])
    if kind == ".npy":
        n = len(np.load(path, mmap_mode="r"))
    else:
        with open(path, "rb") as fh:
            n = sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 24), b"")) - 1
    assert n >= 10_000_000
    size_mb = path.stat().st_size / 2**20
    grew_mb = (logged - base) / 1024
    # the log held in memory would add its whole size (48 B per command for .npy); streamed,
    # the run holds one chunk's commands (~64 Ki requests) and one formatted block
    assert grew_mb < 48, (grew_mb, size_mb)
    assert size_mb > 6 * 48  # the log is far beyond the bound


def test_a_ten_million_command_npy_log_streams_in_bounded_memory(tmp_path):
    _stream_check(tmp_path, ".npy", 5_000_000)


@pytest.mark.slow
def test_a_ten_million_command_csv_log_streams_in_bounded_memory(tmp_path):
    _stream_check(tmp_path, ".csv", 5_000_000)


def test_cli_log_is_streamed_and_complete(tmp_path, capsys):
    from sieve.cli import main

    path = tmp_path / "x.csv"
    assert main(["dram", "--spec", "hbm3-6400", "--pattern", "rand", "--requests", "3000",
                 "--log", str(path), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    lines = path.read_text().splitlines()
    assert lines[0].startswith("clock,command,Channel")
    assert len(lines) - 1 == sum(d["command_counts"].values())
