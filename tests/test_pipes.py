"""Pipes, FIFOs and /dev/stdin as inputs (issue 18): a memory trace is sniffed without being
consumed and read once; every reader that needs to seek or read twice refuses them in one
line instead of reading them as empty."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from sieve.dram import device as dram
from sieve.dram import memtrace
from sieve.errors import TraceFormatError

TRACE = "".join(f"{'ST' if i % 3 == 0 else 'LD'} 0x{i * 4160:x}\n" for i in range(3000))


def _fifo(tmp_path, data: bytes, name: str = "fifo"):
    """A FIFO with a writer thread feeding it ``data`` (started before anyone opens it)."""
    path = tmp_path / name
    os.mkfifo(path)

    def feed():
        with open(path, "wb") as fh:
            fh.write(data)

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    return path, t


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_trace_is_read_once_and_gives_the_file_result(tmp_path):
    reg = tmp_path / "t.trace"
    reg.write_text(TRACE)
    want = dram.simulate_requests("hbm3-6400", str(reg)).to_dict()
    path, t = _fifo(tmp_path, TRACE.encode())
    tf = memtrace.open_trace(path)
    got = dram.simulate_requests("hbm3-6400", tf).to_dict()
    t.join(5)
    assert got == want and got["requests"] == 3000
    with pytest.raises(TraceFormatError, match="read once"):
        next(tf.chunks())


def test_stdin_trace_through_the_cli(tmp_path):
    reg = tmp_path / "t.trace"
    reg.write_text(TRACE)
    run = [sys.executable, "-m", "sieve", "dram", "--spec", "hbm3-6400", "--json", "--trace"]
    a = subprocess.run(run + [str(reg)], capture_output=True, text=True, timeout=120)
    b = subprocess.run(run + ["/dev/stdin"], input=TRACE, capture_output=True, text=True,
                       timeout=120)
    assert a.returncode == b.returncode == 0, (a.stderr, b.stderr)
    assert json.loads(a.stdout)["cycles"] == json.loads(b.stdout)["cycles"]
    assert json.loads(b.stdout)["requests"] == 3000


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_numpy_trace_through_a_pipe_is_refused_in_one_line(tmp_path, capsys):
    import io

    buf = io.BytesIO()
    np.save(buf, np.arange(100, dtype=np.int64) * 64)
    path, t = _fifo(tmp_path, buf.getvalue())
    from sieve.cli import main

    assert main(["dram", "--spec", "hbm3-6400", "--trace", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "regular file" in err and "LoadStore" in err
    t.join(5)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_routing_trace_fifo_is_refused_without_blocking(tmp_path, capsys):
    from sieve.cli import main
    from sieve.workload.trace import load_trace

    path = tmp_path / "fifo.npz"
    os.mkfifo(path)  # no writer: opening it would block, so it must not be opened
    with pytest.raises(TraceFormatError, match="not a regular file"):
        load_trace(path)
    out = tmp_path / "out"
    assert main(["run", "--trace", str(path), "--steps", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "save it to a file first" in err
    assert not out.exists()
    with pytest.raises(TraceFormatError, match="is a folder"):
        load_trace(tmp_path)
    with pytest.raises(TraceFormatError, match="is a folder"):
        memtrace.open_trace(tmp_path)
