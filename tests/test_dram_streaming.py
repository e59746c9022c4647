"""Trace files streamed into the engine: the compiled LoadStore reader against the Python
reference, numpy address traces, and the streamed run against the in-memory one."""

from __future__ import annotations

import io
import re
import tracemalloc
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sieve import dram
from sieve.dram.memtrace import (
    RequestTrace,
    TraceFile,
    load_loadstore_trace,
    open_trace,
    read_loadstore_python,
    save_loadstore_trace,
    synthetic_trace,
)
from sieve.errors import ConfigError, TraceFormatError


def _both(path):
    """(result or error text) of the reference reader and of the compiled one."""
    out = []
    for f in (read_loadstore_python, load_loadstore_trace):
        try:
            t = f(path)
            out.append((t.addr.tolist(), t.is_write.tolist()))
        except TraceFormatError as exc:
            out.append(str(exc))
    return out


ODD = (b"# comment\nLD 0x40\n\n  ST\t12 \r\nLD 0X00ff\n\tLD  010\nST 0x7fffffffffffffff\n"
       b"LD 999999999999999999\nLD 0xfffffffffffffff\nST 1234567890123456789\n"
       b"  # indented comment\n\r\nLD 0x1")


def test_compiled_reader_equals_the_reference(tmp_path):
    p = tmp_path / "odd.trace"
    p.write_bytes(ODD)
    a, b = _both(p)
    assert a == b and len(a[0]) == 9 and a[0][4] == (1 << 63) - 1
    tr = synthetic_trace("rand", 50_000, write_fraction=0.4, seed=2)
    q = save_loadstore_trace(tr, tmp_path / "r.trace")
    a, b = _both(q)
    assert a == b and a[0] == tr.addr.tolist()


@pytest.mark.parametrize("body", [
    b"LD 0x40\nXX 0x10\n", b"LD 0x40\nLD zz\n", b"LD\n", b"LD 0x1 0x2\n", b"LD -5\n",
    b"# only\n", b"", b"LD 0x_1\n", b"LD 1_000\n", b"LD \xd9\xa1\n", b"LD 0o17\n", b"LD +64\n",
    b"\xef\xbb\xbfLD 0x40\n", b"ld 0x40\n", b"LD 0x\n", b"LD 18446744073709551616\n",
    b"LD 0x8000000000000000\n", b"LD 9223372036854775808\n", b"LD 0x40\n" + b" " * 5000 + b"\n",
    b"LD 0x40\nLD " + b"1" * 100_000, bytes(range(256)) * 4, b"LD 0x40\x00\n",
    b"LD 0x40\n" * 3 + b"ST\t\t0x41 extra\n",
])
def test_both_readers_refuse_alike(tmp_path, body):
    p = tmp_path / "bad.trace"
    p.write_bytes(body)
    a, b = _both(p)
    assert a == b


@pytest.mark.parametrize("body", [
    b"LD 0xfffffffffffffff", b"LD 0x1000000000000000", b"ST 999999999999999999",
    b"ST 1000000000000000000", b"LD 0x40\nLD 0x123456789abcdef", b"LD 0x40\nLD 0xfff",
    b"LD 0x40\nLD 0x40\nST 4096", b"LD 0x40\n" + b"LD 0x" + b"f" * 40 + b"\n",
    b"LD 0x40\nLD 12" + b"3" * 30,
])
def test_digit_runs_at_block_and_file_ends(tmp_path, monkeypatch, body):
    """The compiled reader's digit loops stop at the byte after the data (the block's end or
    the file's, a zero it keeps there) or at a newline: every place a read block can cut a
    number, numbers that end the file without a newline, and runs too long for a request,
    against the reference reader."""
    from sieve.dram import memtrace

    p = tmp_path / "d.trace"
    p.write_bytes(body)
    want = _both(p)
    assert want[0] == want[1]
    for block in range(1, len(body) + 2):
        monkeypatch.setattr(memtrace, "READ_BLOCK_BYTES", block)
        assert _both(p) == want, block


_TOKENS = st.sampled_from([b"LD", b"ST", b"ld", b"XX", b"", b"#", b"0x40", b"0X1F", b"64",
                           b"0x", b"-1", b"1_0", b"\t", b" ", b"\r", b"0xfffffffffffffff",
                           b"0x10000000000000000", b"99999999999999999999", b"007", b"\xc3\xa9"])


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.lists(_TOKENS, max_size=4).map(b" ".join), min_size=1, max_size=6))
def test_fuzz_readers_agree(tmp_path, lines):
    p = tmp_path / "f.trace"
    p.write_bytes(b"\n".join(lines))
    a, b = _both(p)
    assert a == b


def test_reader_splits_lines_across_blocks(tmp_path, monkeypatch):
    from sieve.dram import memtrace

    tr = synthetic_trace("rand", 3000, write_fraction=0.5, seed=8)
    p = save_loadstore_trace(tr, tmp_path / "b.trace")
    monkeypatch.setattr(memtrace, "READ_BLOCK_BYTES", 37)  # lines cut at every place
    for k in (1, 2, 1000):
        parts = list(open_trace(p).chunks(k))
        assert np.concatenate([x[0] for x in parts]).tolist() == tr.addr.tolist()
        assert np.concatenate([x[1] for x in parts]).tolist() == tr.is_write.tolist()


def test_chunk_buffers_equal_chunks(tmp_path, monkeypatch):
    """The front end's numpy-free chunks (reused array.array buffers) hold the requests of
    the numpy chunks, chunk for chunk, also with lines cut by the read blocks."""
    from sieve.dram import memtrace

    tr = synthetic_trace("rand", 3000, write_fraction=0.5, seed=9)
    p = save_loadstore_trace(tr, tmp_path / "c.trace")
    for block in (37, 1 << 20):
        monkeypatch.setattr(memtrace, "READ_BLOCK_BYTES", block)
        for k in (1, 7, 1000, 5000):
            want = list(open_trace(p).chunks(k))
            got = []
            for a, w, arr, nw in open_trace(p).chunk_buffers(k):
                assert a.format == "q" and w.format == "b" and arr is None
                assert nw == sum(w.tolist())
                got.append((a.tolist(), w.tolist()))  # (the buffers are reused)
            assert got == [(a.tolist(), w.astype(int).tolist()) for a, w, _ in want]
    np.save(tmp_path / "t.npy", tr.addr)
    with pytest.raises(ConfigError, match="chunk_buffers reads LoadStore text traces"):
        next(open_trace(tmp_path / "t.npy").chunk_buffers())
    with pytest.raises(TraceFormatError, match="no requests"):
        (tmp_path / "e.trace").write_bytes(b"# nothing\n")
        list(open_trace(tmp_path / "e.trace").chunk_buffers())


def test_sieve_dram_on_a_text_trace_imports_no_numpy(tmp_path):
    """`sieve dram --trace FILE.trace` reads, simulates and reports without numpy (its import
    is ~6 % of a 2 M-request run's CPU time; sieve.lazy), with the in-memory path's result;
    nor shutil, fractions or threading beyond what the interpreter's own start imports (a few ms
    of every start each: docs/performance.md, *Command start-up*)."""
    import json
    import subprocess
    import sys

    from sieve.dram.presets import DEFAULT_DRAM_SPEC

    tr = synthetic_trace("rand", 4000, write_fraction=0.3, seed=5)
    p = save_loadstore_trace(tr, tmp_path / "n.trace")
    code = ("import json, sys; from sieve.cli import main; "
            "rc = main(['dram', '--trace', sys.argv[1], '--json', '--lifecycle', sys.argv[2], "
            "'--channels', '2']); "
            "print(json.dumps({'rc': rc, 'numpy': 'numpy' in sys.modules, 'other': sorted("
            "m for m in ('shutil', 'fractions', 'threading') if m in sys.modules)}))")
    # What the interpreter imports before any sieve code runs: a site's .pth files may import
    # shutil or threading themselves (the CI machine's does); sieve must add none of them.
    bare = ("import json, sys; print(json.dumps(sorted("
            "m for m in ('numpy', 'shutil', 'fractions', 'threading') if m in sys.modules)))")
    before = set(json.loads(subprocess.run([sys.executable, "-c", bare], capture_output=True,
                                           text=True, check=True).stdout))
    assert "numpy" not in before
    for lifecycle in ("sieve", "ramulator2"):
        out = subprocess.run([sys.executable, "-c", code, str(p), lifecycle],
                             capture_output=True, text=True, check=True).stdout
        text, _, tail = out.rstrip().rpartition("\n")
        res = json.loads(tail)
        assert (res["rc"], res["numpy"]) == (0, False)
        assert sorted(set(res["other"]) - before) == []
        got = json.loads(text)
        want = dram.simulate_requests(
            DEFAULT_DRAM_SPEC, tr, channels=2,
            controller=dram.ControllerConfig(lifecycle=lifecycle)).to_dict()
        assert {k: v for k, v in got.items() if k != "trace"} == want


# ---- numpy address traces -----------------------------------------------------------------------

def _npz(path, **arrays):
    np.savez(path, **arrays)
    return path


def test_numpy_traces_read_like_the_loadstore_file(tmp_path):
    tr = synthetic_trace("rand", 5000, write_fraction=0.3, seed=4)
    np.save(tmp_path / "plain.npy", tr.addr.astype(np.uint64))
    rec = np.zeros(len(tr), dtype=[("addr", "<i8"), ("is_write", "u1"), ("arrive_ck", "<u4")])
    rec["addr"], rec["is_write"] = tr.addr, tr.is_write
    rec["arrive_ck"] = np.arange(len(tr)) // 3
    np.save(tmp_path / "rec.npy", rec)
    np.savez_compressed(tmp_path / "t.npz", addr=tr.addr, is_write=tr.is_write)
    plain = list(open_trace(tmp_path / "plain.npy").chunks(777))
    assert np.concatenate([a for a, _, _ in plain]).tolist() == tr.addr.tolist()
    assert not np.concatenate([w for _, w, _ in plain]).any()
    for name in ("rec.npy", "t.npz"):
        tf = open_trace(tmp_path / name)
        assert tf.format == name[-3:] and tf.n_requests == len(tr)
        got = list(tf.chunks(1000))
        assert np.concatenate([a for a, _, _ in got]).tolist() == tr.addr.tolist()
        assert np.concatenate([w for _, w, _ in got]).tolist() == tr.is_write.tolist()
    arr = np.concatenate([x for _, _, x in open_trace(tmp_path / "rec.npy").chunks(64)])
    assert arr.tolist() == rec["arrive_ck"].tolist()
    # the format is told by content, not by name
    (tmp_path / "misnamed.trace").write_bytes((tmp_path / "t.npz").read_bytes())
    assert open_trace(tmp_path / "misnamed.trace").format == "npz"


def _bad_npy(obj) -> bytes:
    buf = io.BytesIO()
    np.save(buf, obj, allow_pickle=True)
    return buf.getvalue()


@pytest.mark.parametrize("make,msg", [
    (lambda d: (d / "x.npy").write_bytes(_bad_npy(np.array([1, "a"], dtype=object))),
     "holds Python objects"),
    (lambda d: np.save(d / "x.npy", np.zeros((2, 2), dtype=np.int64)), "expected a 1-D array"),
    (lambda d: np.save(d / "x.npy", np.array([1.5, 2.0])), "addr must be integers"),
    (lambda d: np.save(d / "x.npy", np.array([64, -1])), "record 1: address -1 out of range"),
    (lambda d: np.save(d / "x.npy", np.array([1 << 63], dtype=np.uint64)),
     "record 0: address 9223372036854775808 out of range"),
    (lambda d: np.save(d / "x.npy", np.zeros(0, dtype=np.int64)), "no requests"),
    (lambda d: np.save(d / "x.npy", np.zeros(3, dtype=[("adr", "<i8")])),
     "structured array with fields adr"),
    (lambda d: np.save(d / "x.npy", np.zeros(3, dtype=[("addr", "<i8"), ("is_write", "<i4")]))
     or _patch_field(d / "x.npy"), "is_write 2 is not 0 or 1"),
    (lambda d: _npz(d / "x.npz", addr=np.arange(4), meta=np.zeros(1)), "unknown member 'meta"),
    (lambda d: _npz(d / "x.npz", is_write=np.zeros(4, bool)), "no 'addr' member"),
    (lambda d: _npz(d / "x.npz", addr=np.arange(4), is_write=np.zeros(3, bool)),
     "members of different lengths"),
    (lambda d: _npz(d / "x.npz", addr=np.arange(4), arrive_ck=np.array([0, 5, 3, 9])),
     "record 2: arrive_ck 3 is below the previous"),
    (lambda d: (d / "x.npz").write_bytes(b"PK\x03\x04" + b"\x00" * 40), "not a valid .npz"),
    (lambda d: (d / "x.npy").write_bytes(_bad_npy(np.arange(10))[:-16]), "truncated"),
    (lambda d: (d / "x.npy").write_bytes(_bad_npy(np.arange(10)) + b"\x00" * 8),
     "holds more data than its header says"),
    (lambda d: (d / "x.npy").write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': ???}   \n"),
     "not a valid .npy array"),
    (lambda d: _corrupt_npz(d / "x.npz"), "damaged archive"),
])
def test_malformed_numpy_traces(tmp_path, make, msg):
    make(tmp_path)
    path = next(p for p in tmp_path.iterdir() if p.name.startswith("x."))
    with pytest.raises(TraceFormatError, match=re.escape(msg)):
        for _ in TraceFile(path).chunks(2):
            pass
    with pytest.raises(TraceFormatError):
        dram.simulate_requests("hbm3-6400", path, channels=1)


def _patch_field(p):
    a = np.load(p)
    a["addr"] = [0, 64, 128]
    a["is_write"] = [0, 1, 2]
    np.save(p, a)


def _corrupt_npz(p):
    np.savez(p, addr=np.arange(1000))
    raw = bytearray(p.read_bytes())
    i = raw.index(b"\x00\x00\x00\x00\x00\x00", 200)  # inside the array data
    raw[i + 2] ^= 0xFF
    p.write_bytes(bytes(raw))


# ---- streamed run = in-memory run ---------------------------------------------------------------

@pytest.mark.parametrize("lifecycle", ["sieve", "ramulator2"])
def test_streamed_run_equals_in_memory_run(tmp_path, lifecycle):
    tr = synthetic_trace("rand", 6000, write_fraction=0.3, seed=11)
    p = save_loadstore_trace(tr, tmp_path / "t.trace")
    np.savez(tmp_path / "t.npz", addr=tr.addr, is_write=tr.is_write)
    ctrl = dram.ControllerConfig(16, lifecycle=lifecycle, page_policy="closed")
    mem = dram.simulate_requests("hbm3-6400", tr, channels=2, controller=ctrl, log=True)
    for src, chunk in ((p, 1), (p, 7), (p, 4096), (tmp_path / "t.npz", 999)):
        got = dram.simulate_requests("hbm3-6400", open_trace(src), channels=2, controller=ctrl,
                                     log=True, chunk_requests=chunk)
        assert got.to_dict() == mem.to_dict()
        assert np.array_equal(got.log, mem.log) and np.array_equal(got.log_type, mem.log_type)
        assert got.latency_ns is None and got.source == str(src)
    assert mem.latency_mean_ns == pytest.approx(mem.latency_ns.mean())
    assert mem.latency_p99_ns == pytest.approx(np.percentile(mem.latency_ns, 99))


def test_streamed_arrivals_equal_in_memory(tmp_path):
    tr = synthetic_trace("seq", 3000, seed=1)
    arr = np.arange(3000) // 2 * 3
    rec = np.zeros(3000, dtype=[("addr", "<i8"), ("arrive_ck", "<i8")])
    rec["addr"], rec["arrive_ck"] = tr.addr, arr
    np.save(tmp_path / "a.npy", rec)
    mem = dram.simulate_requests("hbm3-6400", RequestTrace(tr.addr, tr.is_write, arr),
                                 channels=1)
    got = dram.simulate_requests("hbm3-6400", tmp_path / "a.npy", channels=1, chunk_requests=97)
    assert got.to_dict() == mem.to_dict() and got.cycles > 3000 * 3 // 2


def test_streamed_run_memory_does_not_grow_with_the_file(tmp_path):
    peaks = {}
    for n in (300_000, 900_000):
        p = tmp_path / f"s{n}.trace"
        p.write_bytes(b"".join(b"LD 0x%x\n" % (64 * i) for i in range(n)))
        tracemalloc.start()
        try:
            r = dram.simulate_requests("hbm3-6400", p, channels=1, request_bytes=32)
            peaks[n] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert r.requests == n
    # three times the file, the same chunks and queues: the peak does not grow (an in-memory
    # trace alone would take 9 B per request, 5.4 MB more; the peak is a few chunks of 64 Ki
    # decoded requests)
    assert abs(peaks[900_000] - peaks[300_000]) < 1 << 20
    assert peaks[900_000] < 16 << 20


def test_bad_chunk_size_and_trace_type():
    with pytest.raises(ConfigError, match="chunk_requests"):
        dram.simulate_requests("hbm3-6400", synthetic_trace("seq", 10), chunk_requests=0)
    with pytest.raises(ConfigError, match="expected a RequestTrace, a TraceFile or a path"):
        dram.simulate_requests("hbm3-6400", [0, 64])


def test_npz_of_bools_and_zipfile_member_names(tmp_path):
    with zipfile.ZipFile(tmp_path / "z.npz", "w") as zf:
        buf = io.BytesIO()
        np.save(buf, np.array([0, 32, 64]))
        zf.writestr("addr.npy", buf.getvalue())
        buf = io.BytesIO()
        np.save(buf, np.array([True, False, True]))
        zf.writestr("is_write", buf.getvalue())  # a member name without .npy is accepted
    (a, w, arr), = list(open_trace(tmp_path / "z.npz").chunks())
    assert a.tolist() == [0, 32, 64] and w.tolist() == [True, False, True] and arr is None
