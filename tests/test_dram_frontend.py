"""Request traces, address mapping and the build of the engine."""

from __future__ import annotations

import os
from array import array

import numpy as np
import pytest

from sieve import dram
from sieve.dram.mapping import MAPPINGS, AddressMapper
from sieve.dram.memtrace import (
    RequestTrace,
    load_loadstore_trace,
    save_loadstore_trace,
    synthetic_trace,
)
from sieve.dram.presets import get_spec
from sieve.errors import ConfigError, TraceFormatError


def test_loadstore_trace_round_trip_and_parsing(tmp_path):
    p = tmp_path / "t.trace"
    p.write_text("# comment\nLD 0x40\n\nST 0x1000\nLD 128\n")
    tr = load_loadstore_trace(p)
    assert tr.addr.tolist() == [0x40, 0x1000, 128]
    assert tr.is_write.tolist() == [False, True, False]
    q = save_loadstore_trace(tr, tmp_path / "u.trace")
    assert load_loadstore_trace(q).addr.tolist() == tr.addr.tolist()


@pytest.mark.parametrize("text,msg", [
    ("LD 0x40\nXX 0x10\n", "line 2: field 1 \\(operation\\)"),
    ("LD 0x40\nLD zz\n", "line 2: field 2 \\(address\\) is not a number"),
    ("LD\n", "line 1: expected"),
    ("LD 0x1 0x2\n", "line 1: expected"),
    ("LD -5\n", "line 1: field 2 \\(address\\) out of range"),
    ("# only a comment\n", "no requests"),
])
def test_malformed_traces_name_file_line_and_field(tmp_path, text, msg):
    p = tmp_path / "bad.trace"
    p.write_text(text)
    with pytest.raises(TraceFormatError, match=msg):
        load_loadstore_trace(p)
    with pytest.raises(TraceFormatError, match="cannot read"):
        load_loadstore_trace(tmp_path / "missing.trace")


def test_synthetic_traces_are_seeded():
    a = synthetic_trace("rand", 1000, seed=1, write_fraction=0.3)
    b = synthetic_trace("rand", 1000, seed=1, write_fraction=0.3)
    c = synthetic_trace("rand", 1000, seed=2, write_fraction=0.3)
    assert np.array_equal(a.addr, b.addr) and np.array_equal(a.is_write, b.is_write)
    assert not np.array_equal(a.addr, c.addr)
    assert "seed=1" in a.source
    assert synthetic_trace("seq", 4, stride_bytes=64).addr.tolist() == [0, 64, 128, 192]
    with pytest.raises(ConfigError, match="unknown pattern"):
        synthetic_trace("zipf", 10)
    with pytest.raises(ConfigError, match=">= 1"):
        synthetic_trace("seq", 0)


def test_trace_reader_streams_and_rejects_junk_early(tmp_path):
    import tracemalloc

    junk = tmp_path / "junk.trace"
    junk.write_bytes(b"\x00\xff" * (10 << 20))  # 20 MB of binary, no newline
    peaks = {}
    tracemalloc.start()
    try:
        with pytest.raises(TraceFormatError, match="line 1: longer than 4096 bytes"):
            load_loadstore_trace(junk)
        peaks["junk"] = tracemalloc.get_traced_memory()[1]
        for n in (150_000, 450_000):
            ok = tmp_path / f"ok{n}.trace"
            ok.write_bytes(b"".join(b"LD 0x%x\n" % (64 * i) for i in range(n)))
            tracemalloc.reset_peak()
            t = load_loadstore_trace(ok)
            peaks[n] = tracemalloc.get_traced_memory()[1]
            assert len(t) == n and t.addr[-1] == 64 * (n - 1)
            del t
    finally:
        tracemalloc.stop()
    assert peaks["junk"] < 4 << 20  # one 1 MiB block at a time, not the 20 MB file
    # memory grows by ~9 B per request (int64 address + write flag), not a Python object per
    # line: the block being split is a constant on top
    assert (peaks[450_000] - peaks[150_000]) / 300_000 < 24


def test_trace_numbers_follow_ramulator_not_python(tmp_path):
    p = tmp_path / "t.trace"
    p.write_text("LD 010\nST 0X1F\nLD 0xff\n")  # decimal with a leading zero, as std::stoll
    t = load_loadstore_trace(p)
    assert t.addr.tolist() == [10, 31, 255] and t.is_write.tolist() == [False, True, False]
    for bad in ("0x_1", "1_000", "0o17", "0b11", "+64", "\u0661\u0662", "1e3", "0x"):
        p.write_text(f"LD {bad}\n")
        with pytest.raises(TraceFormatError, match="line 1"):
            load_loadstore_trace(p)


def test_request_trace_validation():
    with pytest.raises(ConfigError, match="addr values must be >= 0, got -1"):
        RequestTrace([-1], [False])
    # floats are refused, never truncated (1.7 would have become address 1)
    with pytest.raises(ConfigError, match="addr must hold integers, got dtype float64"):
        RequestTrace([1.7, 64.2], [False, False])
    with pytest.raises(ConfigError, match="addr must hold integers"):
        RequestTrace(["64"], [False])
    with pytest.raises(ConfigError, match="is_write must be booleans"):
        RequestTrace([0], ["yes"])
    assert RequestTrace(np.array([64], dtype=np.uint32), [1]).addr.tolist() == [64]
    with pytest.raises(ConfigError, match="non-decreasing"):
        RequestTrace([0, 64], [False, False], arrive_ck=[5, 1])
    with pytest.raises(ConfigError, match="one length"):
        RequestTrace([0, 64], [False])


@pytest.mark.parametrize("scheme", sorted(MAPPINGS))
def test_mapping_encode_decode_round_trip(scheme, rng):
    spec = get_spec("hbm3-6400")
    m = AddressMapper(spec, scheme, channels=4, request_bytes=64)
    o = spec.org
    fields = dict(ch=rng.integers(0, 4, 200), pc=rng.integers(0, 2, 200),
                  sid=rng.integers(0, 2, 200), bg=rng.integers(0, 4, 200),
                  ba=rng.integers(0, 4, 200), ro=rng.integers(0, o.rows, 200),
                  co=rng.integers(0, o.columns // 2, 200) * 2)
    addrs = np.array([m.encode(**{k: int(v[i]) for k, v in fields.items()})
                      for i in range(200)])
    dec = m.decode(addrs)
    for k, v in fields.items():
        assert np.array_equal(getattr(dec, k), v), k
    assert m.address_bits == 2 + 1 + 1 + 2 + 2 + 13 + 5 + 5  # ch pc sid bg ba ro co + 32 B


@pytest.mark.parametrize("spec_name", ["hbm3-6400", "hbm2-2000", "hbm3e-8000", "samsung-hbm2-pim"])
@pytest.mark.parametrize("scheme", [*sorted(MAPPINGS), "MOP4CLXOR",
                                    ("co:1", "ch", "pc", "co:2", "sid", "bg", "ba", "co", "ro")])
def test_compiled_decode_is_the_numpy_reference_bit_for_bit(spec_name, scheme, rng):
    # the compiled decode (sieve.dram._mapping) against the numpy arithmetic it replaced, on
    # addresses past the mapped capacity and past bit 63 (negative int64) too
    spec = get_spec(spec_name)
    a = np.concatenate([rng.integers(0, 2**63 - 1, 5000, dtype=np.int64),
                        rng.integers(0, 2**36, 5000, dtype=np.int64),
                        np.array([0, 1, 31, -1, -(2**63)], dtype=np.int64)])
    for rb in (32, 64, 128):
        for ch in (None, 1):
            try:
                m = AddressMapper(spec, scheme, channels=ch, request_bytes=rb)
            except ConfigError:
                continue  # (an XOR mapping takes one-burst requests only)
            got, want = m.decode(a), m._decode_numpy(a)
            for f in ("ch", "pc", "sid", "bg", "ba", "ro", "co"):
                assert getattr(got, f).dtype == np.int32
                assert np.array_equal(getattr(got, f), getattr(want, f)), (rb, ch, f)
            # into a reused, larger buffer: the same fields, views of its rows
            buf = np.full((7, len(a) + 7), 99, dtype=np.int32)
            again = m.decode(a.view(np.uint64), out=buf)
            assert np.array_equal(again.ro, want.ro) and np.shares_memory(again.ro, buf)
            # the front end's numpy-free decode: array.array buffers, 7 rows of a stride
            stride = len(a) + 3
            flat = array("i", [99]) * (7 * stride)
            m.decode_buffer(array("q", a.tolist()), flat, stride)
            for i, f in enumerate(("ch", "pc", "sid", "bg", "ba", "ro", "co")):
                assert flat[i * stride:i * stride + len(a)].tolist() == \
                    getattr(want, f).tolist(), (rb, ch, f)


def test_decode_refuses_a_wrong_buffer_and_takes_any_integer_array():
    m = AddressMapper(get_spec("hbm3-6400"), "RoBaRaCoCh", request_bytes=32)
    for bad in (np.zeros((6, 4), np.int32), np.zeros((7, 2), np.int32),
                np.zeros((7, 4), np.int64), np.zeros((4, 7), np.int32).T):
        with pytest.raises(ConfigError, match="out must be"):
            m.decode(np.arange(4) * 64, out=bad)
    lists = m.decode([0, 64, 128])
    assert lists.co.tolist() == m._decode_numpy(np.array([0, 64, 128])).co.tolist()
    assert len(m.decode(np.zeros(0, np.int64)).ro) == 0


def test_decode_buffer_refuses_wrong_buffers():
    m = AddressMapper(get_spec("hbm3-6400"), "RoBaRaCoCh", request_bytes=32)
    with pytest.raises(ConfigError, match="64-bit integers"):
        m.decode_buffer(array("i", [0, 64]), array("i", bytes(56)), 2)
    with pytest.raises(ConfigError, match="int32 buffer"):
        m.decode_buffer(array("q", [0, 64]), array("q", bytes(112)), 2)
    with pytest.raises(ValueError, match="7 rows of stride"):
        m.decode_buffer(array("q", [0, 64]), array("i", bytes(4 * 7)), 2)


def test_default_mapping_rotates_bank_groups_first():
    spec = get_spec("hbm3-6400")
    m = AddressMapper(spec, "sieve", channels=1, request_bytes=64)
    d = m.decode(np.arange(8) * 64)
    assert d.bg.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    assert d.pc.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert d.co.tolist() == [0] * 8  # the next request to a bank is its next column pair
    assert m.decode(np.array([8 * 64])).co.tolist() == [2]


def test_ramulator_mapping_puts_column_bits_lowest():
    m = AddressMapper(get_spec("hbm3-6400"), "RoBaRaCoCh", channels=1, request_bytes=32)
    d = m.decode(np.arange(4) * 32)
    assert d.co.tolist() == [0, 1, 2, 3] and set(d.bg.tolist()) == {0}


def test_custom_mapping_and_errors():
    spec = get_spec("hbm3-6400")
    m = AddressMapper(spec, ["co:2", "bg", "pc", "ch", "sid", "ba", "co", "ro"], channels=1)
    assert m.name == "custom"
    with pytest.raises(ConfigError, match="unknown field 'xx'"):
        AddressMapper(spec, ["xx"], channels=1)
    with pytest.raises(ConfigError, match="missing fields"):
        AddressMapper(spec, ["bg", "pc"], channels=1)
    with pytest.raises(ConfigError, match="unknown"):
        AddressMapper(spec, "RoRo", channels=1)
    with pytest.raises(ConfigError, match="power of two"):
        AddressMapper(spec, "sieve", channels=3)
    with pytest.raises(ConfigError, match="multiple of the 32-byte burst"):
        AddressMapper(spec, "sieve", channels=1, request_bytes=48)


def test_simulate_requests_rejects_bad_options():
    tr = synthetic_trace("seq", 10)
    with pytest.raises(ConfigError, match="page policy"):
        dram.simulate_requests("hbm3-6400", tr, page_policy="lazy")
    with pytest.raises(ConfigError, match="queue_size"):
        dram.simulate_requests("hbm3-6400", tr, queue_size=0)


def test_same_trace_runs_through_file_and_arrays(tmp_path):
    tr = synthetic_trace("rand", 2000, seed=3, write_fraction=0.2)
    path = save_loadstore_trace(tr, tmp_path / "x.trace")
    a = dram.simulate_requests("hbm3-6400", tr, channels=1)
    b = dram.simulate_requests("hbm3-6400", load_loadstore_trace(path), channels=1)
    assert a.to_dict() == b.to_dict()


def test_engine_build_flavour_is_the_expected_one():
    """CI runs the suite twice: SIEVE_EXPECT_DEBUG_BUILD=1 proves the bounds-checked build
    was the one tested."""
    expect = os.environ.get("SIEVE_EXPECT_DEBUG_BUILD")
    if expect is None:
        pytest.skip("SIEVE_EXPECT_DEBUG_BUILD not set")
    assert dram.DEBUG_BUILD == (expect == "1")


@pytest.mark.skipif(not dram.DEBUG_BUILD, reason="bounds checks exist only in the debug build")
def test_debug_build_detects_out_of_bounds_access():
    import sys

    dev = dram.DramDevice("hbm3-6400", channels=1)
    with pytest.raises(ValueError, match="out of range"):  # every public entry checks
        dev._engine.earliest(0, 5, 0, 0, 0, 0)
    seen = []
    old = sys.unraisablehook
    sys.unraisablehook = lambda u: seen.append(u.exc_value)
    try:
        # the same access past the argument check: the bounds-checked core catches it
        dev._engine._debug_unchecked_earliest(0, 5, 0, 0, 0, 0)  # channel 5 of 1
    finally:
        sys.unraisablehook = old
    assert any(isinstance(e, IndexError) for e in seen)


def _without(module: str, body: str) -> str:
    """What ``body`` prints in a fresh interpreter where importing ``module`` fails (its
    exception as ``Type | message``)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {module!r}:\n"
        f"            raise ImportError('No module named {module}')\n"
        "sys.meta_path.insert(0, Block())\n"
        "try:\n"
        + "".join(f"    {line}\n" for line in body.splitlines())
        + "except Exception as e:\n"
        "    print(type(e).__name__, '|', e)\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout


def test_unbuilt_engine_gives_one_sentence_on_how_to_build():
    out = _without("sieve._dram", "import sieve.dram.device")
    assert out.startswith("NotBuiltError |")
    assert "pip install -e ." in out and out.count("\n") == 1


def test_unbuilt_address_decode_says_how_to_build():
    out = _without("sieve.dram._mapping",
                   "from sieve.dram.mapping import AddressMapper\n"
                   "from sieve.dram.presets import get_spec\n"
                   "AddressMapper(get_spec('hbm3-6400'), 'sieve').decode([0, 64])")
    assert out.startswith("NotBuiltError |") and "sieve.dram._mapping" in out
    assert "pip install -e ." in out and out.count("\n") == 1


def test_unbuilt_look_ahead_says_how_to_build():
    out = _without("sieve.system._look", "import sieve.system.dag")
    assert out.startswith("NotBuiltError |") and "sieve.system._look" in out
    assert "pip install -e ." in out and out.count("\n") == 1
