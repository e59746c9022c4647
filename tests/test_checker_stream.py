"""The checker in chunks (sieve.dram.checker.stream): the verdicts of the whole log, bit for bit,
whatever the chunk size, and bounded memory on a long log read from disk.

Every violation (family, command index, preceding index, tick, required tick, rule text), the
timed-pair count and the family counts are compared between the whole-log check and chunked
checks (chunks of 1, 7, 100 and 997 commands, and the file readers) on engine logs with and
without injected faults: timing and bus rows, state, alignment, tFAW windows across chunk
ends, refresh gaps that span chunks or end the log, per-bank refresh, bank bundles, address
and command errors; and a log out of issue order is checked whole (the same verdicts).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from sieve import dram, pim
from sieve.dram import checker, memtrace
from sieve.dram.checker import api, stream
from sieve.dram.log import log_to_csv
from sieve.dram.presets import get_spec
from sieve.errors import ConfigError


def _key(rep):
    return ([(v.family, v.index, v.prev_index, v.tick, v.required_tick, v.constraint)
             for v in rep.violations], rep.n_checked_pairs, rep.by_family(), rep.n_commands)


def _chunked(log, spec, k):
    """The streamed check itself (no fallback to the whole log)."""
    res = stream.check_chunks(stream.array_chunks(log, k), spec)
    return api._report(res.kinds, res.arrays(), res.n_commands, res.n_checked_pairs, spec,
                       None)


def _faults(log, rng, n=80):
    """Earlier ticks that keep every channel in issue order (a command moved towards its
    predecessor), and deleted commands: timing, bus, state and alignment violations."""
    bad = log.copy()
    o = np.lexsort((bad["seq"], bad["ch"]))
    i = rng.choice(np.arange(1, len(o)), n, replace=False)
    a, b = o[i - 1], o[i]
    same = bad["ch"][a] == bad["ch"][b]
    a, b = a[same], b[same]
    bad["tick"][b] = np.maximum(bad["tick"][b] - rng.integers(1, 40, b.size), bad["tick"][a])
    return np.delete(bad, rng.choice(len(bad), n // 2, replace=False))


def _requests(spec, n=1200, channels=2, seed=1):
    tr = memtrace.synthetic_trace("rand", n, write_fraction=0.25, seed=seed)
    return dram.simulate_requests(spec, tr, channels=channels, log=True).log


@pytest.mark.parametrize("name", ["hbm3-6400", "b200-hbm3e-pim", "duplex-logic-pim"])
def test_chunks_give_the_whole_logs_verdicts(name):
    spec = get_spec(name)
    log = _requests(spec)
    rng = np.random.default_rng(7)
    for case in (log, _faults(log, rng)):
        whole = checker.check_log(case, spec, chunk=0)
        for k in (7, 100, 997):
            assert _key(_chunked(case, spec, k)) == _key(whole), k
        head = case[:600]  # one command at a time
        assert _key(_chunked(head, spec, 1)) == _key(checker.check_log(head, spec, chunk=0))
    assert not whole.ok and {"state", "bus"} <= set(whole.by_family())


def _sparse(spec, n=1500, gap_ck=100, seed=4):
    """A long, sparse request trace on one channel (refreshes between the requests)."""
    tr = memtrace.synthetic_trace("rand", n, seed=seed)
    tr = type(tr)(tr.addr, tr.is_write, np.arange(len(tr)) * gap_ck)
    return dram.simulate_requests(spec, tr, channels=1, log=True).log


def test_refresh_gaps_across_chunks_and_to_the_end():
    """Refresh gaps are judged from the carried last refresh of each unit: a PC whose REFabs are
    removed after its first one (gaps that span many chunks and run to the end of the log), a
    PC never refreshed (from tick 0), and per-bank refresh."""
    spec = get_spec("hbm3-6400")
    log = _sparse(spec)
    refab = log["cmd"] == 7
    ref = np.flatnonzero(refab & (log["pc"] == 0))
    assert ref.size > 9
    cut = np.delete(log, np.concatenate([ref[1:], np.flatnonzero(refab & (log["pc"] == 1))]))
    whole = checker.check_log(cut, spec, chunk=0)
    assert whole.by_family().get("refresh", 0) >= 2
    for k in (7, 100, 997):
        assert _key(_chunked(cut, spec, k)) == _key(whole), k
    pb = spec.override(refresh="perbank")
    log = _sparse(pb)
    drop = np.flatnonzero((log["cmd"] == 8) & (log["bank"] == 2) & (log["pc"] == 0))[2:]
    cut = np.delete(log, drop)
    whole = checker.check_log(cut, pb, chunk=0)
    assert whole.by_family().get("refresh", 0) >= 1
    for k in (7, 997):
        assert _key(_chunked(cut, pb, k)) == _key(whole), k


def test_bundled_pim_program_in_chunks():
    spec = get_spec("b200-logic-pim")
    log = pim.run_attention(spec, "qwen3-30b-a3b", 0, [1500, 500], log=True).pim.log
    rng = np.random.default_rng(3)
    for case in (log, _faults(log, rng, 200)):
        whole = checker.check_log(case, spec, chunk=0)
        for k in (997, 4000):
            assert _key(_chunked(case, spec, k)) == _key(whole), k


def test_address_and_command_errors_and_order_fallback():
    spec = get_spec("hbm3-6400")
    log = _requests(spec, n=2000, channels=2)
    bad = log.copy()
    bad["bank"][10] = 9  # out of range
    bad["cmd"][20] = 9  # ACTAB: not a command of plain DRAM
    whole = checker.check_log(bad, spec, chunk=0)
    assert {"address", "command"} <= set(whole.by_family())
    for k in (1, 100):
        assert _key(_chunked(bad, spec, k)) == _key(whole)
    # a channel out of issue order: not streamable, checked whole by check_log
    back = log.copy()
    i = np.flatnonzero(back["ch"] == 0)[500]
    back["tick"][i] = 0
    with pytest.raises(stream.NotStreamable):
        _chunked(back, spec, 100)
    assert _key(checker.check_log(back, spec, chunk=100)) == _key(
        checker.check_log(back, spec, chunk=0))
    assert "order" in checker.check_log(back, spec, chunk=100).by_family()
    with pytest.raises(ConfigError, match="chunk must be"):
        checker.check_log(log, spec, chunk=-1)


def test_files_are_read_in_chunks(tmp_path):
    """The .npy and CSV readers give the chunks of the array; check_log_file the verdicts of
    check_log, at any chunk size."""
    spec = get_spec("b200-hbm3e-pim")
    log = _faults(_requests(spec, n=2000, channels=2), np.random.default_rng(5))
    log["seq"] = np.arange(len(log))
    np.save(tmp_path / "log.npy", log)
    (tmp_path / "log.csv").write_text(log_to_csv(log))
    whole = checker.check_log(log, spec, chunk=0)
    for name in ("log.npy", "log.csv"):
        parts = list(checker.iter_command_log(tmp_path / name, spec, chunk=333))
        assert [len(p) for p in parts[:-1]] == [333] * (len(parts) - 1)
        got = np.concatenate(parts)
        for f in ("tick", "cmd", "ch", "pc", "row", "col"):
            assert np.array_equal(got[f], checker.read_command_log(tmp_path / name, spec)[f])
        for k in (None, 100):
            assert _key(checker.check_log_file(tmp_path / name, spec, chunk=k)) == \
                _key(checker.check_log(checker.read_command_log(tmp_path / name, spec), spec,
                                       chunk=0))
    assert _key(checker.check_log_file(tmp_path / "log.npy", spec)) == _key(whole)


def test_long_log_checks_in_bounded_memory(tmp_path):
    """An 11.9 M-command log written by `sieve dram --log` (streamed to disk) is checked by
    `sieve check` in a child process whose peak memory stays under 256 MB (the whole-log
    check held about 300 B per command: 3.5 GB here)."""
    path = tmp_path / "big.npy"
    gen = subprocess.run(
        [sys.executable, "-m", "sieve", "dram", "--spec", "hbm3-6400", "--pattern", "rand",
         "--requests", "3000000", "--channels", "16", "--log", str(path)],
        capture_output=True, text=True, timeout=600)
    assert gen.returncode == 0, gen.stderr
    n = len(np.load(path, mmap_mode="r"))
    assert n > 10_000_000
    code = ("import resource, subprocess, sys\n"
            "p = subprocess.run([sys.executable, '-m', 'sieve', 'check', sys.argv[1], "
            "'--spec', 'hbm3-6400'], capture_output=True, text=True)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "print(p.returncode)\nprint(p.stdout)\nprint(p.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, timeout=1200)
    peak_kb, rc, *rest = out.stdout.split("\n", 2)
    assert int(rc) == 0, rest
    assert "OK" in rest[0]
    assert int(peak_kb) / 1024 < 256, f"peak {int(peak_kb) / 1024:.0f} MB"



def test_csv_fast_path_matches_the_line_loop(tmp_path, monkeypatch):
    """The CSV reader parses plain lines in one compiled pass; any line it does not take (a
    numeric command, a blank or CR line, a number past int64, an unknown name, a sign, a
    space, an underscore, a field too many or too few, a value out of range) sends the block
    to the line loop, whose records or first-error message are the reference: the outcome is
    the same either way."""
    from sieve.dram.checker import logfile
    from sieve.errors import TraceFormatError

    spec = get_spec("hbm3-6400")
    log = _requests(spec, n=3000, channels=2)
    text = log_to_csv(log)
    (tmp_path / "a.csv").write_text(text)
    fast = checker.read_csv_log(tmp_path / "a.csv")
    monkeypatch.setattr(logfile, "_csv_fast", lambda *a, **k: None)
    slow = checker.read_csv_log(tmp_path / "a.csv")
    monkeypatch.undo()
    assert all(np.array_equal(fast[f], slow[f]) for f in fast.dtype.names)
    head, first, *rest = text.split("\n")
    parts = first.split(",")
    bad = {
        "numeric": ",".join([parts[0], "0", *parts[2:]]),  # a command id, not a name
        "huge": ",".join(["99999999999999999999", *parts[1:]]),
        "unknown": ",".join([parts[0], "FOO", *parts[2:]]),
    }
    for name, line in bad.items():
        (tmp_path / f"{name}.csv").write_text("\n".join([head, line, *rest]))
        with pytest.raises(TraceFormatError) as fast_err:
            checker.read_csv_log(tmp_path / f"{name}.csv")
        monkeypatch.setattr(logfile, "_csv_fast", lambda *a, **k: None)
        with pytest.raises(TraceFormatError) as slow_err:
            checker.read_csv_log(tmp_path / f"{name}.csv")
        monkeypatch.undo()
        assert str(fast_err.value) == str(slow_err.value), name
    (tmp_path / "crlf.csv").write_text(text.replace("\n", "\r\n"))
    got = checker.read_csv_log(tmp_path / "crlf.csv")
    assert np.array_equal(got["tick"], fast["tick"])
    # lines the compiled pass refuses and the loop may accept or refuse: the same outcome
    odd = {
        "plus": ",".join(["+" + parts[0], *parts[1:]]),
        "space": ",".join([" " + parts[0], *parts[1:]]),
        "underscore": ",".join([parts[0][:1] + "_" + parts[0][1:] if len(parts[0]) > 1
                                else parts[0], *parts[1:]]),
        "name space": ",".join([parts[0], " " + parts[1], *parts[2:]]),
        "alias": ",".join([parts[0], "PREsb" if parts[1] == "PRE" else parts[1], *parts[2:]]),
        "minus one": ",".join([*parts[:-1], "-1"]),
        "minus two": ",".join([*parts[:-1], "-2"]),
        "2**31": ",".join([*parts[:-1], str(2 ** 31)]),
        "2**61": ",".join([*parts[:-1], str(2 ** 61)]),
        "clock 0": ",".join(["0", *parts[1:]]),
        "clock max": ",".join([str((1 << 62) + 2), *parts[1:]]),
        "extra field": ",".join([*parts, "7"]),
        "short": ",".join(parts[:-1]),
        "empty field": ",".join([*parts[:-1], ""]),
        "minus only": ",".join([*parts[:-1], "-"]),
        "blank": "",
        "cr": first + "\r",
    }
    for name, line in odd.items():
        for tail in ("\n", ""):  # with and without a newline at the end of the file
            body = "\n".join([head, *rest[:50], line]) + tail
            (tmp_path / "odd.csv").write_text(body)
            outcome = []
            for loop_only in (False, True):
                if loop_only:
                    monkeypatch.setattr(logfile, "_csv_fast", lambda *a, **k: None)
                try:
                    got = checker.read_csv_log(tmp_path / "odd.csv")
                    outcome.append([got[f].tolist() for f in got.dtype.names])
                except TraceFormatError as exc:
                    outcome.append(str(exc))
                monkeypatch.undo()
            assert outcome[0] == outcome[1], (name, tail)


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm2-2000", "b200-hbm3e-pim", "duplex-logic-pim",
                                  "b200-logic-pim", "neupims-hbm2-pim", "samsung-hbm2-pim"])
def test_compiled_passes_match_the_numpy_rules(name, monkeypatch):
    """The timing rows' compiled pass (one ring per node and preceding command) and the
    compiled state replay (last setter per bank, SID and PC) report the same violations, in
    the same order, with the same messages and checked-pair count, as the numpy versions, on
    clean logs, logs with moved and deleted commands, PIM programs (bundles: SID setters and
    checks; bank parities: parity setters and checks, rows at the parity level) and per chunk
    of a streamed check."""
    from sieve.dram.checker import state, timing

    spec = get_spec(name)
    # (a request trace cannot run under a mode protocol, whose reserved rows it would touch)
    logs = [_requests(spec, n=1500, channels=2)] if spec.pim is None or \
        spec.pim.modes == "none" else []
    if spec.pim is not None:
        logs.append(pim.run_attention(spec, "qwen3-30b-a3b", 0, [700, 300], log=True).pim.log)
    rng = np.random.default_rng(11)
    logs += [_faults(x, rng, 120) for x in list(logs)]
    families = set()
    for log in logs:
        fast = checker.check_log(log, spec, chunk=0)
        families |= set(fast.by_family())
        fast_chunks = _chunked(log, spec, 333)
        with monkeypatch.context() as m:
            m.setattr(timing, "check_timing", timing.check_timing_reference)
            m.setattr(state, "check_state", state.check_state_reference)
            m.setattr(stream, "_carry", stream._carry_timing_reference)
            slow = checker.check_log(log, spec, chunk=0)
            slow_chunks = _chunked(log, spec, 333)
        assert _key(fast) == _key(slow)
        assert [str(v) for v in fast.violations] == [str(v) for v in slow.violations]
        assert _key(fast_chunks) == _key(slow_chunks) == _key(fast)
    # the faults reach the timing rows and the state replay
    assert {"tRCD", "tCCD", "tRRD", "tRP", "state"} <= families
    # the carry to the next chunk: the same records
    from sieve.dram.checker.core import LogView, level_counts

    log = logs[-1]
    view = LogView.build(log, np.ones(len(log), dtype=bool), level_counts(spec))
    gidx = np.arange(len(log))
    for windows in ([1] * 5, [1, 4, 2, 1, 3]):
        a = stream._carry(log, gidx, view, windows)
        b = stream._carry_timing_reference(log, gidx, view, windows)
        assert np.array_equal(a[1], b[1]) and a[1].size < len(log)


def test_compiled_timing_pass_refuses_bad_buffers():
    """No argument makes the compiled timing pass read or write outside its buffers."""
    from sieve.dram.checker import _timing

    z = np.zeros(3, dtype=np.int64)
    f8 = np.zeros(3, dtype=np.int8)
    one = np.zeros(1, dtype=np.int64)
    ok = dict(node=z, cmd=z, tick=z, focus=f8, f_start=np.zeros(2, dtype=np.int64),
              row_p=one[:0], row_lat=one[:0], row_win=one[:0], row_sib=f8[:0],
              p_slot=np.full(1, -1, dtype=np.int64), n_nodes=4, fan=2, checked=one[:0])
    _timing.check_level(**ok)
    for bad, msg in ((dict(node=np.array([0, 9, 0])), "out of range"),
                     (dict(cmd=np.array([0, 5, 0])), "out of range"),
                     (dict(tick=one), "lengths"),
                     (dict(n_nodes=3), "multiple of fan"),
                     (dict(f_start=np.array([1, 0])), "f_start"),
                     (dict(row_p=one, row_lat=one, row_win=one, row_sib=f8[:1], checked=one,
                           f_start=np.array([0, 1])), "slot")):
        with pytest.raises(ValueError, match=msg):
            _timing.check_level(**{**ok, **bad})


def test_compiled_state_replay_refuses_bad_buffers():
    """No argument makes the compiled state replay read or write outside its buffers."""
    from sieve.dram.checker import _state

    z = np.zeros(2, dtype=np.int64)
    i8 = np.zeros(2, dtype=np.int8)
    kinds = (1, 2, 3, 4, 5, 6, 8, 7)
    ok = dict(kind=np.array([1, 3]), buf=z, scope=np.array([1, 1], dtype=np.int8), focus=i8,
              bank_id=np.array([0, 5]), sid_id=np.array([0, 1]), pc_id=z, row=z)
    _state.replay(*ok.values(), 0, 8, 4, 8, 2, *kinds)
    for bad, counts, msg in ((dict(bank_id=np.array([0, 9])), (8, 4, 8, 2), "out of range"),
                             (dict(sid_id=np.array([0, 0])), (8, 4, 8, 2), "not nested"),
                             (dict(row=z[:1]), (8, 4, 8, 2), "one length"),
                             ({}, (8, 3, 8, 2), "nest"),
                             ({}, (8, 4, 8, 3), "SIDs per PC")):
        with pytest.raises(ValueError, match=msg):
            _state.replay(*{**ok, **bad}.values(), 0, *counts, *kinds)


@pytest.mark.parametrize("name,seed", [("b200-logic-pim", 1), ("b200-logic-pim", 2),
                                       ("duplex-logic-pim", 3), ("b200-hbm3e-pim", 4),
                                       ("samsung-hbm2-pim", 5)])
def test_compiled_state_replay_on_random_mixed_logs(name, seed, monkeypatch):
    """Random logs that mix bank, SID and PC setters and checks on a few banks and rows (so
    SID and PC checks often find their banks changed since the unit's own setter and look at
    each bank): the compiled replay reports what the numpy replay reports, message for
    message, whole and in chunks."""
    from sieve.dram.checker import state
    from sieve.dram.commands import COMMAND_INDEX
    from sieve.dram.log import LOG_DTYPE

    spec = get_spec(name)
    names = ["ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REFab", "REFpb"]
    if spec.pim is not None:
        names += ["ACTAB", "PREAB"] + ([] if spec.pim.bank_parity else ["MACAB"])
        if spec.pim.bundles > 1:
            names += ["ACTSB", "MACSB", "PRESB"]
        if spec.pim.bank_parity:
            names += ["ACTPB", "MACPB", "PREPB"]
    rng = np.random.default_rng(seed)
    n = 3000
    log = np.zeros(n, dtype=LOG_DTYPE)
    log["tick"] = np.cumsum(rng.integers(1, 4, n))
    log["seq"] = np.arange(n)
    log["cmd"] = [COMMAND_INDEX[c] for c in rng.choice(names, n)]
    log["ch"] = rng.integers(0, 2, n)
    log["pc"] = rng.integers(0, spec.org.pseudochannels, n)
    log["sid"] = rng.integers(0, spec.org.sids, n)
    log["bg"] = rng.integers(0, 2, n)
    log["bank"] = rng.integers(0, 2, n)
    log["row"] = rng.integers(0, 3, n)
    slow_msgs = 0
    for chunk in (0, 257):
        fast = checker.check_log(log, spec, chunk=chunk)
        with monkeypatch.context() as m:
            m.setattr(state, "check_state", state.check_state_reference)
            slow = checker.check_log(log, spec, chunk=chunk)
        assert [str(v) for v in fast.violations] == [str(v) for v in slow.violations]
        assert _key(fast) == _key(slow)
        slow_msgs += sum(" of the PC " in v.constraint or " of the SID " in v.constraint
                         or " of the parity " in v.constraint for v in fast.violations)
    assert slow_msgs > 0  # the per-bank path ran
