"""The engine never crashes, never hangs, and refuses what it cannot simulate (issue 8, engine
items): address checks in every public entry, kernels without readback, kernels that do not
fit in a bank, livelocking timings, overflowing timings, Ctrl-C in the compiled loops; and the
request controller's knobs (ControllerConfig)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sieve import _dram, dram, pim
from sieve.cli import main
from sieve.dram import ControllerConfig, DramDevice, GemvKernel, PimDevice
from sieve.dram.memtrace import RequestTrace, synthetic_trace
from sieve.dram.presets import get_spec
from sieve.errors import ConfigError, TimingViolation

REPO = Path(__file__).resolve().parents[1]


def _python(code: str, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, timeout=120, **kw)


# ---- address checks ---------------------------------------------------------------------------

def test_probe_with_a_bad_address_does_not_crash_the_interpreter():
    # the reported reproducer (SIGSEGV in the optimised build before the fix), in a child
    r = _python("""
        from sieve.dram import DramDevice
        from sieve.errors import ConfigError
        dev = DramDevice('b200-hbm3e-pim', 1)
        for call in (lambda: dev.probe('ACT', (0, 999, 0, 0, 0), 0),
                     lambda: dev.state_ok('ACT', (0, 0, 0, 0, 999)),
                     lambda: dev._engine.earliest(0, 0, 999, 0, 0, 0),
                     lambda: dev._engine.state_check(0, 5, 0, 0, 0, 0, 1),
                     lambda: dev._engine.issue(0, 0, 0, 0, 0, -3, 1, 0, 0, True)):
            try:
                call()
            except (ConfigError, ValueError) as exc:
                print('refused:', exc)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("refused:") == 5


def test_public_device_calls_check_every_address():
    dev = DramDevice("b200-hbm3e-pim", 1)
    for call in (lambda: dev.probe("ACT", (0, 999, 0, 0, 0), 0),
                 lambda: dev.state_ok("ACT", (0, 0, 0, 0, 999)),
                 lambda: dev.state_ok("ACT", (1, 0, 0, 0, 0)),
                 lambda: dev.earliest("RD", (0, 0, 9, 0, 0)),
                 lambda: dev.issue("ACT", (0, 0, 0, 0, -1, 3), 0),
                 lambda: dev.force_issue("ACT", (0, 0, 0, 7, 0, 3), 0),
                 lambda: dev.probe(99, (0, 0, 0, 0, 0), 0),
                 lambda: dev.probe("ACT", (0, 0), 2**70),
                 lambda: dev.probe("ACT", "abc", 0),
                 lambda: dev.open_rows(5)):
        with pytest.raises(ConfigError):
            call()
    # PC-scope commands ignore the bank fields, as before
    assert dev.probe("PREA", (0, 1, 99, 99, 99), 0)


def test_engine_methods_refuse_out_of_range_arguments():
    eng = DramDevice("hbm3-6400", 1)._engine
    for call in (lambda: eng.earliest(99, 0, 0, 0, 0, 0),
                 lambda: eng.earliest(0, 0, 0, 0, 0, 4),
                 lambda: eng.state_check(3, 0, 2, 0, 0, 0, 0),
                 lambda: eng.issue(0, -1, 0, 0, 0, 0, 0, 0, 0),
                 lambda: eng.open_rows(1),
                 lambda: eng.broadcast_channel(3),
                 lambda: eng.set_state({**eng.get_state(), "ref_rr": eng.get_state()["ref_rr"]
                                        + 999}),
                 lambda: eng.set_state({**eng.get_state(), "ready": np.zeros(3)}),
                 lambda: eng.replicate_counts(np.zeros(2), 0, 2),
                 lambda: eng.select_channels([1]),
                 lambda: eng.select_channels([0], pcs=[[0, 2]]),
                 lambda: eng.select_channels(np.array([0.0]))):
        with pytest.raises(ValueError):
            call()


def test_front_end_functions_refuse_bad_arrays():
    dev = DramDevice("hbm3-6400", 1)
    eng = dev._engine
    n = 4
    i32 = np.zeros(n, dtype=np.int32)
    good = [np.zeros(n, dtype=np.int64)] + [i32] * 8
    good[8] = np.zeros(n, dtype=np.int8)
    outs = [np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n, np.int8),
            np.zeros(2, dtype=np.int64)]
    bad_ch = list(good)
    bad_ch[1] = np.full(n, 5, dtype=np.int32)  # channel 5 of a 1-channel engine
    with pytest.raises(ValueError, match="out of range"):
        _dram.run_requests(eng, *bad_ch, 1, 32, 25, 6, False, *outs)
    short = list(good)
    short[4] = np.zeros(2, dtype=np.int32)
    with pytest.raises(ValueError, match="one entry per request"):
        _dram.run_requests(eng, *short, 1, 32, 25, 6, False, *outs)
    pdev = PimDevice("samsung-hbm2-pim")
    pe = pdev._engine
    kern = np.array([[1, 1, 1, 1, 1, 1, 0, 0, 1]], dtype=np.int64)
    npc = 2
    ptr = np.array([0, 1, 2], dtype=np.int64)
    pk = np.zeros(2, dtype=np.int32)
    pb = np.full(2, -1, dtype=np.int32)
    o64 = [np.zeros(2, dtype=np.int64) for _ in range(5)]
    for args, msg in (
            ((kern, ptr, np.array([0, 3], np.int32), pb, 0, 1, 0), "outside the table"),
            ((kern, ptr, pk, np.array([0, 5], np.int32), 1, 1, 0), "barrier set"),
            ((kern, np.array([0, 5, 2]), pk, pb, 0, 1, 0), "CSR"),
            ((np.array([[1, 1, 1, 1, 1, 1, 10**9, 0, 1]]), ptr, pk, pb, 0, 1, 0), "rows"),
            ((np.array([[1, 1, 1, 1, 1, 1, 0, 0, 0]]), ptr, pk, pb, 0, 1, 0), "vectors_per_pass"),
            ((np.array([[1, 1, 1, 1, 1, 1, 0, 0, 2**40]]), ptr, pk, pb, 0, 1, 0),
             "vectors_per_pass"),
            ((kern, ptr, pk, pb, 0, 99, 0), "simulated channels"),
            ((kern, ptr, pk, pb, 0, 1, -5), "start tick")):
        with pytest.raises(ValueError, match=msg):
            _dram.run_pim(pe, *args, *o64)
    args = (kern, ptr, pk, pb, 0, 1, 0)
    with pytest.raises(ValueError, match="idle policy"):
        _dram.run_pim(pe, *args, *o64, idle=2)
    for bad in (np.zeros((1, 3), np.int64), np.zeros((2, 14), np.int64),
                np.zeros((1, 14), np.int32), [[0] * 14]):
        with pytest.raises(ValueError, match="ch_counts"):
            _dram.run_pim(pe, *args, *o64, ch_counts=bad)
    assert npc == get_spec("samsung-hbm2-pim").org.pseudochannels


# ---- PIM kernels ----------------------------------------------------------------------------

def test_a_kernel_without_readback_counts_until_its_last_command():
    spec = get_spec("b200-hbm3e-pim")
    k = pim.gemv_kernel(spec, 1536, 2048, 1)
    r = dram.run_pim(spec, [replace(k, n_res=0)], log=True)
    log = r.log[(r.log["ch"] == 0) & (r.log["pc"] == 0)]
    end = (log["tick"].max() + spec.timing.ticks_per_ck) * spec.tick_ns
    assert r.kernel_end_ns[0] == end > 0  # was time_ns 0.0 and busy 0
    assert r.time_ns == r.kernel_end_ns.max() == r.pc_finish_ns.max()
    assert r.pc_busy_ns[0] == end - r.kernel_start_ns[0] > 0
    # after a kernel with readback, the program still ends with the one without
    two = dram.run_pim(spec, [k, replace(k, n_res=0)])
    ends = two.kernel_end_ns.reshape(-1, 2)
    assert two.time_ns == ends[:, 1].max() and np.all(ends[:, 1] > ends[:, 0])
    # a kernel with no command at all starts and ends when it may start
    empty = dram.run_pim(spec, [GemvKernel(1, 1, 0, 0, 0, 0, gap_ns=10.0)])
    assert empty.kernel_start_ns[0] == empty.kernel_end_ns[0] == empty.time_ns == 10.0


def test_a_kernel_that_does_not_fit_in_a_bank_is_refused():
    spec = get_spec("b200-hbm3e-pim")
    k = GemvKernel(1, 4, 1, 10, 8, 1, base_row=spec.org.rows - 20)
    with pytest.raises(ConfigError, match=r"need rows 32748\.\.32787 .* has 32768 rows"):
        dram.run_pim(spec, [k])
    with pytest.raises(ConfigError, match="need rows"):
        PimDevice(spec).run([k])
    dram.run_pim(spec, [replace(k, base_row=spec.org.rows - 40)])  # exactly fits


def test_gemv_lowering_refuses_what_cannot_fit_before_searching():
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match="does not fit"):
        pim.gemv_layout("b200-hbm3e-pim", 9223372036854775808, 64)
    # (samsung-hbm2-pim's rows are one bank parity at a time: 32 bursts a row per PU, the
    # input chunks split over the even and odd banks)
    with pytest.raises(ConfigError, match="needs 16884 rows of every bank"):  # padding
        pim.gemv_layout("samsung-hbm2-pim", 30000, 4400, n_pcs=1, col_groups=1)
    with pytest.raises(ConfigError, match="needs 65536 rows of every bank"):
        pim.gemv_layout("samsung-hbm2-pim", 8, 2**24 - 8, n_pcs=1)  # no column split fits
    assert time.perf_counter() - t0 < 60  # (a hang is the failure; not a speed assertion)
    assert main(["gemv", "--rows", "9223372036854775808", "--cols", "64"]) == 2


def test_expert_slots_never_split_across_the_end_of_a_bank():
    from sieve.pim.ffn import FfnShape, run_moe_tp

    # 128 rows hold 25 slots of 5 rows (gate/up 3 + down 2): expert 39 wraps to slot 14
    spec = get_spec("b200-hbm3e-pim").override(stacks=2, channels=16, rows=128)
    counts = np.zeros(40, dtype=np.int64)
    counts[[0, 13, 39]] = 1
    r = run_moe_tp(spec, FfnShape(2048, 768), counts, order="expert", log=True)
    rows = np.unique(r.pim.log["row"][r.pim.log["row"] >= 0])
    assert rows.tolist() == [0, 1, 2, 3, 4, *range(65, 75)]
    with pytest.raises(ConfigError, match="one expert's weights need 5 rows"):
        run_moe_tp(spec.override(rows=4), FfnShape(2048, 768), counts)


# ---- specs that cannot progress, timings that overflow -----------------------------------------

@pytest.mark.parametrize("value", [6000, 6300, 7000, 10000])
def test_timings_that_livelock_on_refresh_are_refused(value):
    with pytest.raises(ConfigError, match=r"nRFC \(416\) \+ nRCDRD"):
        get_spec("hbm3-6400").override(nRCDRD=value)


@pytest.mark.parametrize("argv", [
    ["dram", "--set", "nRCDRD=6300", "--requests", "10"],
    ["dram", "--set", "nRCDRD=7000", "--requests", "10", "--page", "closed"],
    ["dram", "--set", "nRCDRD=1e5", "--requests", "10"],
    ["dram", "--set", "nRCDRD=4611686018427387904"],
    ["dram", "--set", "nREFI=9223372036854775807"],
    ["dram", "--set", "ticks_per_ck=3"],
    ["gemv", "--rows", "64", "--cols", "64", "--set", "nRCDRD=4611686018427387904"],
])
def test_cli_refuses_impossible_or_overflowing_timings(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "timing" in err


def test_overflowing_timing_message_names_the_range():
    with pytest.raises(ConfigError, match=r"nRCDRD must be in \[0, 2147483647\] CK"):
        get_spec("hbm3-6400").override(nRCDRD=2**62)


def test_the_request_watchdog_stops_a_livelock():
    # passes validation (416 + 5820 < 6240) but every activation after a late refresh is
    # closed by the next one before its read: the engine ran forever before
    spec = get_spec("hbm3-6400").override(nRCDRD=5820)
    with pytest.raises(TimingViolation, match="livelock"):
        dram.simulate_requests(spec, synthetic_trace("rand", 2000, seed=0), channels=1)
    # just inside the boundary the same trace completes
    ok = dram.simulate_requests(spec.override(nRCDRD=5000),
                                synthetic_trace("rand", 2000, seed=0), channels=1)
    assert ok.reads == 2000


def test_the_pim_watchdog_stops_a_livelock():
    """An engine whose refresh interval is shorter than ACTAB -> MACAB (a spec validation
    refuses; built here from raw arrays) never issues a MAC: E_STALL, not a hang."""
    spec = get_spec("samsung-hbm2-pim")
    arrays = spec.to_arrays()
    arrays["refresh_perbank"] = 0
    arrays["nREFI"] = 2  # ticks: due again long before a refresh (nRFC) is over
    eng = _dram.Engine(arrays, 1, False)
    kern = np.array([[1, 1, 1, 1, 4, 1, 0, 0, 1]], dtype=np.int64)
    ptr = np.array([0, 1, 2], dtype=np.int64)
    outs = [np.zeros(2, dtype=np.int64) for _ in range(5)]
    end = _dram.run_pim(eng, kern, ptr, np.zeros(2, np.int32), np.full(2, -1, np.int32), 0,
                        1, 0, *outs)
    assert end == -1 and eng.last_status == 10  # E_STALL
    assert dram.STATUS_MESSAGES[10].startswith("no progress")


# ---- Ctrl-C ----------------------------------------------------------------------------------

def _sigint_default() -> None:
    # a shell that starts the test run in the background (nohup, `&` without job control)
    # ignores SIGINT, the child inherits that and Python then installs no KeyboardInterrupt
    # handler: restore the default so the child sees Ctrl-C as a terminal user's run would
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(args: list[str], after_s: float = 3.0) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, preexec_fn=_sigint_default)
    time.sleep(after_s)
    assert p.poll() is None, "the run ended before it could be interrupted"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return subprocess.CompletedProcess(args, p.returncode, out, err)


def test_ctrl_c_stops_a_long_cli_run_with_exit_130(tmp_path):
    # a GEMV of a million serialized tokens takes hours; Ctrl-C must end it at once
    r = _interrupt([sys.executable, "-m", "sieve", "gemv", "--spec", "samsung-hbm2-pim",
                    "--rows", "4096", "--cols", "4096", "--tokens", "1000000",
                    "--col-groups", "1"])
    assert r.returncode == 130, r.stderr
    assert r.stderr.strip() == "sieve: interrupted" and "Traceback" not in r.stderr
    assert r.stdout == ""


def test_ctrl_c_reaches_the_request_loop_and_leaves_no_half_written_file(tmp_path):
    out = tmp_path / "result.json"
    code = f"""
        import json, numpy as np
        from sieve import dram
        from sieve.dram.memtrace import RequestTrace
        from sieve.outputs import write_json
        n = 30_000_000
        tr = RequestTrace(np.arange(n, dtype=np.int64) * 4096 * 37 % 2**33,
                          np.zeros(n, bool))
        print('start', flush=True)
        try:
            r = dram.simulate_requests('hbm3-6400', tr, channels=1)
            write_json({str(out)!r}, r.to_dict())
        except KeyboardInterrupt:
            print('interrupted', flush=True)
    """
    r = _interrupt([sys.executable, "-c", textwrap.dedent(code)], after_s=8.0)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["start", "interrupted"] and not out.exists()


# ---- the request controller ---------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(hi=st.floats(0.0, 1.0), lo=st.floats(0.0, 1.0), q=st.integers(1, 4096),
       lifecycle=st.sampled_from(["sieve", "ramulator2"]))
def test_write_thresholds_read_the_watermarks_decimal_form_exactly(hi, lo, q, lifecycle):
    """The thresholds are floor / ceil of the watermarks' shortest decimal form times the queue
    (0.8 is 4/5), in integer arithmetic: the same as with fractions.Fraction of their repr."""
    import math
    from fractions import Fraction

    lo, hi = min(lo, hi), max(lo, hi)
    assume(lo < hi)
    c = ControllerConfig(queue_size=q, write_high_watermark=hi, write_low_watermark=lo,
                         lifecycle=lifecycle)
    hx, lx = Fraction(repr(hi)) * q, Fraction(repr(lo)) * q
    want = ((math.floor(hx) + 1, max(0, math.ceil(lx) - 1)) if lifecycle == "ramulator2"
            else (max(1, math.floor(hx)), math.floor(lx)))
    assert c.write_thresholds() == want


def test_controller_config_defaults_thresholds_and_errors():
    c = ControllerConfig()
    assert (c.queue_size, c.write_high_watermark, c.write_low_watermark, c.page_policy) == (
        32, 0.8, 0.2, "open")
    assert c.write_thresholds() == (25, 6)  # the literals Q*8//10, Q*2//10 of before
    for q in (1, 5, 10, 16, 33, 64, 100):
        assert ControllerConfig(queue_size=q).write_thresholds() == (max(1, q * 8 // 10),
                                                                     q * 2 // 10)
    for kw, msg in (({"queue_size": 0}, "queue_size"), ({"queue_size": 2.5}, "queue_size"),
                    ({"queue_size": True}, "queue_size"),
                    ({"write_high_watermark": 1.5}, "write_high_watermark"),
                    ({"write_low_watermark": -0.1}, "write_low_watermark"),
                    ({"write_low_watermark": 0.9}, "below write_high_watermark"),
                    ({"page_policy": "shut"}, "page policy 'shut' unknown")):
        with pytest.raises(ConfigError, match=msg):
            ControllerConfig(**kw)


def test_controller_config_drives_the_request_front_end():
    tr = synthetic_trace("rand", 6000, write_fraction=0.5, seed=2)
    base = dram.simulate_requests("hbm3-6400", tr, channels=1, queue_size=16,
                                  page_policy="closed")
    same = dram.simulate_requests("hbm3-6400", tr, channels=1,
                                  controller=ControllerConfig(16, page_policy="closed"))
    assert base.to_dict() == same.to_dict()
    assert same.controller == ControllerConfig(16, page_policy="closed")
    eager = dram.simulate_requests("hbm3-6400", tr, channels=1, controller=ControllerConfig(
        16, write_high_watermark=0.3, write_low_watermark=0.0, page_policy="closed"))
    assert eager.cycles != base.cycles and eager.writes == base.writes
    with pytest.raises(ConfigError, match="expected a ControllerConfig"):
        dram.simulate_requests("hbm3-6400", tr, controller={"queue_size": 4})
    with pytest.raises(ConfigError, match="queue_size"):
        dram.simulate_requests("hbm3-6400", tr, queue_size=0)


def test_cli_controller_flags(capsys):
    assert main(["dram", "--pattern", "rand", "--requests", "3000", "--write-fraction", "0.5",
                 "--queue", "8", "--write-high", "0.5", "--write-low", "0.25", "--json"]) == 0
    import json

    d = json.loads(capsys.readouterr().out)
    assert d["controller"] == {"queue_size": 8, "write_high_watermark": 0.5,
                               "write_low_watermark": 0.25, "page_policy": "open",
                               "lifecycle": "sieve", "inject_per_tick": 0}
    assert main(["dram", "--write-high", "2"]) == 2
    assert "--write-high: '2' is not a number in [0, 1]" in capsys.readouterr().err
    assert main(["dram", "--write-high", "0.5", "--write-low", "0.6"]) == 2
    assert "write_low_watermark (0.6) must be below" in capsys.readouterr().err


def test_refresh_due_times_live_in_the_engine_for_both_front_ends():
    spec = get_spec("hbm3-6400")
    dev = DramDevice(spec, 1)
    st = dev._engine.get_state()
    interval = spec.timing.nREFI * spec.timing.ticks_per_ck
    assert np.all(st["ref_due"] == interval) and np.all(st["ref_rr"] == 0)
    r = dram.simulate_requests(spec, RequestTrace(np.arange(20000) * 64, np.zeros(20000, bool)),
                               channels=1, log=True)
    refs = r.log[r.log["cmd"] == 7]
    # the request front end refreshes on schedule: REFab k of a PC not before k x nREFI
    for pc in (0, 1):
        t = refs[refs["pc"] == pc]["tick"]
        assert np.all(t >= (np.arange(len(t)) + 1) * interval) and len(t) >= 2
