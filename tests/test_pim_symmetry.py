"""The symmetric fast path of PimDevice after asymmetric programs, and the "closed" idle policy.

The fast path simulates one channel per class of equivalent channels (PimDevice.channel_classes)
when every channel runs identical streams. The central property: over any sequence of programs
(asymmetric ones included, either idle policy, any starts), a device using it gives exactly the
results of one that simulates every channel: times, counts, refreshes, per-PC and per-kernel
times, the command log of every channel, and a checker-clean log.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pim_logs import same_logs

from sieve import dram, pim
from sieve.dram import IDLE_POLICIES, GemvKernel, PimDevice, ProgramMemo, checker
from sieve.dram.presets import get_spec
from sieve.errors import ConfigError

ARRAYS = ("pc_busy_ns", "pc_finish_ns", "kernel_ptr", "kernel_start_ns", "kernel_end_ns")
REFAB, PREAB = 7, 11


def small(name: str = "b200-hbm3e-pim", channels: int = 4):
    return get_spec(name).override(stacks=1, channels=channels)


def refi_ticks(spec) -> int:
    return spec.timing.nREFI * spec.timing.ticks_per_ck


def assert_same_result(a, b):
    assert (a.start_ns, a.end_ns, a.time_ns, a.cycles) == (b.start_ns, b.end_ns, b.time_ns,
                                                           b.cycles)
    assert a.command_counts == b.command_counts and a.refreshes == b.refreshes
    for f in ARRAYS:
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    if a.log is not None:
        assert same_logs(a.log, b.log)
        assert len(np.unique(a.log["seq"])) == len(a.log)


# ---- the property ----------------------------------------------------------------------------

_kernel = st.builds(
    GemvKernel, n_vectors=st.integers(1, 2), n_chunks=st.integers(1, 2),
    gw_per_chunk=st.integers(0, 3), rows_per_chunk=st.integers(0, 3),
    macs_per_row=st.integers(0, 6), n_res=st.integers(0, 2),
    base_row=st.sampled_from([0, 4, 40]), gap_ns=st.sampled_from([0.0, 40.0, 900.0]))
_stream = st.lists(_kernel, min_size=0, max_size=3)
_gap = st.sampled_from([0.0, 7.0, 300.0, 2500.0, 4100.0, 9000.0, -400.0])


@st.composite
def _program(draw, n_ch: int, npc: int):
    """(kind, per-PC streams) with at most one barrier scope (so the sets are always met in
    the same order): "tp" one stream everywhere; "pcs" identical channels, PCs different;
    "split" channels pick one of two stream sets; "asym" every PC its own stream."""
    kind = draw(st.sampled_from(["tp", "pcs", "split", "asym"]))
    scope = draw(st.sampled_from([False, "channel", "all", "group"]))
    n = n_ch * npc

    def barrier(s: list[GemvKernel], q: int) -> list[GemvKernel]:
        if scope and len(s) > 1:
            s = list(s)
            s[1] = replace(s[1], sync=scope, group=q % npc)
        return s

    if kind == "tp":
        s = draw(_stream.filter(len))
        return kind, [barrier(s, q) for q in range(n)]
    if kind == "pcs":
        per = [draw(_stream) for _ in range(npc)]
        return kind, [barrier(per[q % npc], q) for q in range(n)]
    if kind == "split":
        sets = [[draw(_stream) for _ in range(npc)] for _ in range(2)]
        pick = draw(st.lists(st.integers(0, 1), min_size=n_ch, max_size=n_ch))
        return kind, [barrier(sets[pick[q // npc]][q % npc], q) for q in range(n)]
    return kind, [barrier(draw(_stream), q) for q in range(n)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.data_too_large])
@given(data=st.data(), name=st.sampled_from(["b200-hbm3e-pim", "samsung-hbm2-pim"]),
       idle=st.sampled_from(IDLE_POLICIES))
def test_fast_path_equals_full_simulation_after_any_programs(data, name, idle):
    spec = small(name, channels=4)
    npc = spec.org.pseudochannels
    progs = data.draw(st.lists(st.tuples(_program(4, npc), _gap), min_size=2, max_size=6))
    fast = PimDevice(spec, log=True, idle=idle)
    full = PimDevice(spec, log=True, idle=idle, symmetric=False)
    for (_, prog), gap in progs + [(("asym", [[]] * 7 + [[GemvKernel(1, 1, 1, 1, 2, 1)]]),
                                    100.0)]:
        start = max(0.0, fast.now_ns + gap)
        a, b = fast.run(prog, start), full.run(prog, start)
        assert_same_result(a, b)
        assert b.simulated_channels == 4
    assert fast.now_ns == full.now_ns
    assert fast.command_counts() == full.command_counts()
    log = fast.log()
    assert same_logs(log, full.log())
    rep = checker.check_log(log, spec)
    assert rep.ok, rep.summary()


# ---- the classes ------------------------------------------------------------------------------

def _uneven(spec, base_row: int = 200):
    """An attention-like program: channel c's PCs get c + 1 short kernels (the channels end
    at different ticks, with their own rows open)."""
    k = pim.gemv_kernel(spec, 256, 512, 1, n_pcs=1, base_row=base_row)
    npc = spec.org.pseudochannels
    return [[replace(k, base_row=base_row + 8 * (q // npc))] * (q // npc + 1)
            for q in range(spec.org.total_pseudochannels)]


def _tp(spec):
    return [pim.gemv_kernel(spec, 1024, 1024, 2),
            replace(pim.gemv_kernel(spec, 512, 1024, 1, base_row=64), gap_ns=300.0,
                    sync="all")]


@pytest.mark.parametrize("idle", IDLE_POLICIES)
def test_tp_after_an_uneven_program_equals_the_full_simulation(idle):
    spec = small()
    fast = PimDevice(spec, log=True, idle=idle)
    full = PimDevice(spec, log=True, idle=idle, symmetric=False)
    sims = []
    for prog, gap in ((_uneven(spec), 0.0), (_tp(spec), 2600.0), (_tp(spec), 2600.0),
                      (_uneven(spec, 900), 500.0), (_tp(spec), 3100.0)):
        a = fast.run(prog, fast.now_ns + gap)
        b = full.run(prog, full.now_ns + gap)
        assert_same_result(a, b)
        sims.append(a.simulated_channels)
    assert same_logs(fast.log(), full.log())
    assert checker.check_log(fast.log(), spec).ok
    if idle == "closed":
        # rows closed and refreshes caught up at every program's end: one class (the PCs of
        # each channel listed in their round-robin order)
        assert sims[0] == sims[3] == 4 and sims[1] == sims[2] == sims[4] == 1
    else:
        assert sims[2] == 1  # TP after TP: the ends, rows and refreshes agree again


def test_an_earlier_refresh_pull_in_splits_channels_that_differ_only_before_the_start():
    """Under "open", a refresh that falls due before a program's start is pulled in right
    after each channel's own last command: channels whose states differ only below the
    start still issue different commands (so clipping at max(start, latest command of all
    channels) would not be exact). channel_classes keeps them apart; under "closed" the
    refresh is issued on schedule and they form one class."""
    spec = small(channels=2)
    npc = spec.org.pseudochannels
    k = pim.gemv_kernel(spec, 128, 256, 1, n_pcs=1)
    first = [[k] * (1 + q // npc) for q in range(spec.org.total_pseudochannels)]
    tp = [pim.gemv_kernel(spec, 512, 512, 1, base_row=300)]
    interval = refi_ticks(spec) * spec.tick_ns
    for idle, classes in (("open", 2), ("closed", 1)):
        full = PimDevice(spec, log=True, idle=idle, symmetric=False)
        fast = PimDevice(spec, log=True, idle=idle)
        for dev in (full, fast):
            r = dev.run(first, 0.0)
        ends = [r.log[(r.log["ch"] == c) & (r.log["cmd"] != PREAB)]["tick"].max()
                for c in range(2)]
        assert ends[0] < ends[1] and full.now_ns < interval
        start = interval + 200.0  # the first refresh fell due while both channels idled
        assert int(full.channel_classes(start).max()) + 1 == classes
        a, b = fast.run(tp, start), full.run(tp, start)
        assert_same_result(a, b)
        assert a.simulated_channels == classes
        refs = b.log[b.log["cmd"] == REFAB]
        assert len(refs) == spec.org.total_pseudochannels
        ticks = [refs[refs["ch"] == c]["tick"] for c in range(2)]
        if idle == "open":  # right after each channel's own last command
            assert all(ticks[c].max() < ends[c] + 300 for c in range(2))
            assert ticks[0].min() != ticks[1].min()
        else:  # on schedule in both (the two PCs share the row command bus)
            assert np.array_equal(ticks[0], ticks[1])
            assert set(ticks[0].tolist()) == {refi_ticks(spec), refi_ticks(spec) + 1}


def test_channel_classes_of_a_fresh_device_and_its_arguments():
    spec = small()
    dev = PimDevice(spec)
    assert np.array_equal(dev.channel_classes(), np.zeros(4))
    dev.run(_uneven(spec))
    cls = dev.channel_classes(dev.now_ns + 1000.0)
    assert cls[0] == 0 and np.all(np.diff(np.unique(cls)) == 1)
    with pytest.raises(ConfigError, match="start_ns"):
        dev.channel_classes(-1.0)


def test_the_full_b200_step_sequence_runs_tp_layers_on_one_channel():
    """The multi-GPU step's common sequence on one GPU's 128 channels: attention with uneven
    slices, the GPU step, the TP experts; "closed" lets every TP program take the fast path,
    bit for bit the full simulation."""
    from sieve.pim.attention import run_attention
    from sieve.pim.ffn import ffn_shape, run_moe_tp

    spec = get_spec("b200-hbm3e-pim")
    lens = np.random.default_rng(3).integers(200, 2000, 16)
    counts = np.zeros(128, dtype=np.int64)
    counts[:12] = 2
    shape = ffn_shape("qwen3-30b-a3b")
    fast = PimDevice(spec, idle="closed")
    full = PimDevice(spec, idle="closed", symmetric=False)
    for layer in range(2):
        for dev in (fast, full):
            run_attention(spec, "qwen3-30b-a3b", layer, lens, device=dev,
                          start_ns=dev.now_ns + 2500.0 if layer else 0.0)
        a = run_moe_tp(spec, shape, counts, order="layer", device=fast,
                       start_ns=fast.now_ns + 2500.0).pim
        b = run_moe_tp(spec, shape, counts, order="layer", device=full,
                       start_ns=full.now_ns + 2500.0).pim
        assert_same_result(a, b)
        assert a.simulated_channels == 1 and b.simulated_channels == 128
    assert fast.command_counts() == full.command_counts()


# ---- the "closed" idle policy -------------------------------------------------------------------

def test_closed_policy_closes_every_row_at_the_end_of_its_stream():
    spec = small()
    prog = _uneven(spec)
    a = PimDevice(spec, log=True, idle="open")
    b = PimDevice(spec, log=True, idle="closed")
    ra, rb = a.run(prog), b.run(prog)
    assert np.any(a._engine.open_rows(1) >= 0) and np.all(b._engine.open_rows(1) == -1)
    n = spec.org.total_pseudochannels
    assert rb.command_counts["PREAB"] == ra.command_counts.get("PREAB", 0) + n
    # each PC's last command is the PREAB, right after its last RDRES; the program's end is
    # its last result, unchanged
    log = rb.log
    for c in range(spec.org.total_channels):
        for p in range(spec.org.pseudochannels):
            mine = log[(log["ch"] == c) & (log["pc"] == p) & (log["cmd"] != REFAB)]
            assert mine["cmd"][-1] == PREAB and mine["cmd"][-2] == 13  # RDRES
    assert rb.end_ns == ra.end_ns and np.array_equal(rb.kernel_end_ns, ra.kernel_end_ns)
    assert checker.check_log(log, spec).ok


def test_closed_policy_refreshes_idle_channels_on_schedule_until_the_end():
    spec = small(channels=2)
    npc = spec.org.pseudochannels
    k = pim.gemv_kernel(spec, 256, 2048, 4, n_pcs=1)
    interval = refi_ticks(spec)
    prog = [[k] * (1 if q < npc else 10) for q in range(spec.org.total_pseudochannels)]
    dev = PimDevice(spec, log=True, idle="closed")
    r = dev.run(prog)
    end = round(r.end_ns / spec.tick_ns)
    ch0 = r.log[r.log["ch"] == 0]
    idle_from = ch0[ch0["cmd"] != REFAB]["tick"].max()  # channel 0's work ends here
    assert end > idle_from + 4 * interval
    due = dev._engine.get_state()["ref_due"]
    assert np.all(due > end) and np.all(due == due[0])  # every PC refreshed up to the end
    assert r.refreshes == spec.org.total_pseudochannels * (end // interval)
    late = ch0[(ch0["cmd"] == REFAB) & (ch0["tick"] > idle_from)]["tick"]
    assert len(late) == npc * (end // interval - idle_from // interval)
    # on schedule: at the due tick (the channel's second PC one row-bus tick later)
    assert np.all(late % interval <= 1) and len(np.unique(late // interval)) == len(late) // npc
    # under "open" the idle channel stops refreshing when its work ends (R3)
    o = PimDevice(spec, idle="open")
    o.run(prog)
    assert o._engine.get_state()["ref_due"][0] < end
    rep = checker.check_log(r.log, spec)
    assert rep.ok, rep.summary()


def test_closed_policy_never_pulls_a_refresh_in_before_a_kernel_may_start():
    """A refresh due in the idle time before a kernel may start (the program's start, the end
    of a gap) is issued on schedule under "closed"; "open" pulls it in right after the PC's
    previous command."""
    spec = small(channels=1)
    interval = refi_ticks(spec)
    tick = spec.tick_ns
    k = pim.gemv_kernel(spec, 512, 1024, 1)
    cases = (([k], interval + 300),  # due 300 ticks before the start
             ([replace(k, gap_ns=400 * tick)], interval - 200))  # due in the first gap
    for prog, start in cases:
        for idle in IDLE_POLICIES:
            dev = PimDevice(spec, log=True, idle=idle)
            first = dev.run([k], 0.0)
            r = dev.run(prog, start * tick)
            ref = r.log[r.log["cmd"] == REFAB]["tick"]
            assert len(ref) == spec.org.pseudochannels
            if idle == "open":
                assert ref.max() < first.end_ns / tick + 300
            else:
                assert set(ref.tolist()) == {interval, interval + 1}
            assert checker.check_log(dev.log(), spec).ok
    # a gap between two kernels of one program that spans a due tick
    gapped = [k, replace(k, base_row=100, gap_ns=interval * tick / 2)]
    for idle in IDLE_POLICIES:
        r = PimDevice(spec, log=True, idle=idle).run(gapped, 0.0)
        ref = r.log[r.log["cmd"] == REFAB]["tick"]
        first_end = r.kernel_times_ns(0)[1][0] / tick
        if idle == "open":
            assert ref.max() < first_end + 300
        else:  # the sequence (PREAB: the row stays open between kernels, then REFab) starts
            # at the due tick
            pre = r.log[(r.log["cmd"] == PREAB) & (r.log["tick"] < ref.min())]["tick"]
            assert set(pre[pre >= interval].tolist()) == {interval, interval + 1}


def test_idle_policy_is_validated_and_part_of_the_memo_key():
    with pytest.raises(ConfigError, match="idle policy 'half' unknown.*open, closed"):
        PimDevice(small(), idle="half")
    with pytest.raises(ConfigError, match="idle policy"):
        dram.run_pim(small(), [GemvKernel(1, 1, 1, 1, 1, 1)], idle=1)
    spec = small()
    memo = ProgramMemo()
    prog = _uneven(spec)
    ra = PimDevice(spec, memo=memo, idle="open").run(prog)
    rb = PimDevice(spec, memo=memo, idle="closed").run(prog)
    assert memo.hits == 0 and ra.command_counts != rb.command_counts
    rc = PimDevice(spec, memo=memo, idle="closed").run(prog)
    assert memo.hits == 1 and rc.command_counts == rb.command_counts


@pytest.mark.parametrize("idle", IDLE_POLICIES)
def test_memo_and_fast_path_together_replay_exactly(idle):
    spec = small()
    memo = ProgramMemo()
    seq = [(_uneven(spec), 0.0), (_tp(spec), 2600.0), (_tp(spec), 2600.0)]
    ref, first, second = (PimDevice(spec, log=True, idle=idle, **kw)
                          for kw in ({"symmetric": False}, {"memo": memo}, {"memo": memo}))
    for prog, gap in seq:
        rs = [d.run(prog, d.now_ns + gap) for d in (ref, first, second)]
        for r in rs[1:]:
            assert_same_result(r, rs[0])
    assert memo.hits == 3
    assert same_logs(second.log(), ref.log())
