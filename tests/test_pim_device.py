"""A PIM device that keeps its state across programs (PimDevice), barriers, refresh, memo.

The central property: programs run back to back on one device give exactly the command log
and times of one program that contains them all, each joined to the one before by a barrier
over every PC ("all") whose gap is the idle time between them - refresh phase included.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from pim_logs import per_channel, same_logs

from sieve import dram, pim
from sieve.dram import GemvKernel, PimDevice, ProgramMemo, checker
from sieve.dram.presets import get_spec
from sieve.errors import ConfigError


def small(name: str = "b200-hbm3e-pim", channels: int = 4, **kw):
    """One stack of a few channels, so full simulations and logs stay small."""
    return get_spec(name).override(stacks=1, channels=channels, **kw)


def refi_ns(spec) -> float:
    return spec.timing.nREFI * spec.tCK_ns


def programs(spec):
    """A step-shaped sequence: TP GEMVs (identical streams), an EP-like skewed program, a
    TP program after an idle period longer than 8 refresh intervals, TP again; with the gap
    before each."""
    n = spec.org.total_pseudochannels
    tp = [pim.gemv_kernel(spec, 1024, 2048, 3),
          pim.gemv_kernel(spec, 512, 1024, 2, base_row=64, gap_ns=300.0)]
    k1 = pim.gemv_kernel(spec, 256, 2048, 1, n_pcs=1, base_row=100)
    ep = [[k1] * (1 + q % 3) for q in range(n)]
    tp2 = [pim.gemv_kernel(spec, 2048, 2048, 4, base_row=300)]
    return [([list(tp)] * n, 0.0), (ep, 700.0), ([list(tp2)] * n, 12 * refi_ns(spec)),
            ([list(tp)] * n, 2500.0)]


def run_back_to_back(spec, progs, **kw):
    dev = PimDevice(spec, log=True, **kw)
    res = []
    for prog, gap in progs:
        start = 0.0 if not res else res[-1].end_ns + gap
        res.append(dev.run(prog, start_ns=start))
    return dev, res


def as_one_program(spec, progs):
    """The same work as one program: each program's first kernel on every PC is an 'all'
    barrier whose gap is the idle time before it."""
    n = spec.org.total_pseudochannels
    streams: list[list[GemvKernel]] = [[] for _ in range(n)]
    for i, (prog, gap) in enumerate(progs):
        for q in range(n):
            s = list(prog[q])
            if i:
                s[0] = replace(s[0], sync="all", gap_ns=s[0].gap_ns + gap)
            streams[q] += s
    return dram.run_pim(spec, streams, log=True)


# ---- programs back to back -----------------------------------------------------------------

@pytest.mark.parametrize("name,channels", [("b200-hbm3e-pim", 4), ("samsung-hbm2-pim", 4),
                                           ("b200-hbm3e-pim", 1), ("samsung-hbm2-pim", 2)])
def test_programs_back_to_back_equal_one_program_refresh_included(name, channels):
    # one channel: the 'all' barriers stay inside it (channels simulated one by one); several:
    # they span channels (all channels advance in one time order)
    spec = small(name, channels=channels)
    progs = programs(spec)
    dev, res = run_back_to_back(spec, progs)
    one = as_one_program(spec, progs)
    assert res[-1].end_ns == one.end_ns == one.time_ns
    assert dev.now_ns == one.end_ns
    assert sum(r.refreshes for r in res) == one.refreshes > 0
    assert same_logs(dev.log(), one.log)
    total = {}
    for r in res:
        for k, v in r.command_counts.items():
            total[k] = total.get(k, 0) + v
    assert total == one.command_counts == dev.command_counts()
    # per-kernel times: the concatenation of the programs' (absolute) times
    for q in (0, 1, spec.org.total_pseudochannels - 1):
        s = np.concatenate([r.kernel_times_ns(q)[0] for r in res])
        e = np.concatenate([r.kernel_times_ns(q)[1] for r in res])
        s1, e1 = one.kernel_times_ns(q)
        assert np.array_equal(s, s1) and np.array_equal(e, e1)


@pytest.mark.parametrize("name", ["b200-hbm3e-pim", "samsung-hbm2-pim", "attacc-hbm3-pim"])
def test_a_log_spanning_several_programs_has_zero_checker_violations(name):
    spec = small(name)
    dev, res = run_back_to_back(spec, programs(spec))
    log = dev.log()
    assert len(np.unique(log["seq"])) == len(log) > 10_000
    rep = checker.check_log(log, spec)  # refresh coverage included: the idle 12 x tREFI too
    assert rep.ok, rep.summary()
    # every pseudo-channel was refreshed about once per tREFI over the whole span
    span = res[-1].end_ns
    refs = np.bincount((log["ch"] * spec.org.pseudochannels + log["pc"])[log["cmd"] == 7])
    assert np.all(refs >= span // refi_ns(spec) - 1)


def test_symmetric_fast_path_equals_full_simulation_over_a_sequence():
    spec = small()
    progs = programs(spec)
    fast_dev, fast = run_back_to_back(spec, progs)
    full_dev, full = run_back_to_back(spec, progs, symmetric=False)
    # identical streams on identical channels: one channel; after the skewed program the
    # channels' states differ: one channel per class of equivalent channels (the skewed
    # program itself runs different streams: every channel)
    assert [r.simulated_channels for r in fast] == [1, 4, 3, 1]
    assert [r.simulated_channels for r in full] == [4, 4, 4, 4]
    for a, b in zip(fast, full):
        assert a.time_ns == b.time_ns and a.end_ns == b.end_ns
        assert a.command_counts == b.command_counts and a.refreshes == b.refreshes
        for f in ("pc_busy_ns", "pc_finish_ns", "kernel_start_ns", "kernel_end_ns"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert same_logs(fast_dev.log(), full_dev.log())


def test_symmetric_fast_path_across_several_symmetric_programs():
    spec = small("samsung-hbm2-pim")
    tp = [pim.gemv_kernel(spec, 1024, 1024, 2), pim.gemv_kernel(spec, 256, 1024, 1,
                                                                 gap_ns=900.0)]
    fast = PimDevice(spec, log=True)
    full = PimDevice(spec, log=True, symmetric=False)
    for start in (0.0, 5000.0, 5000.0 + 3 * refi_ns(spec), None):
        a, b = fast.run(tp, start), full.run(tp, start)
        assert a.simulated_channels == 1 and b.simulated_channels == 4
        assert a.end_ns == b.end_ns and np.array_equal(a.kernel_end_ns, b.kernel_end_ns)
        assert a.command_counts == b.command_counts
    assert same_logs(fast.log(), full.log())
    assert np.array_equal(np.sort(fast.log()["seq"]), np.arange(len(fast.log())))


def test_start_time_and_absolute_times():
    spec = small()
    dev = PimDevice(spec, log=True)
    k = pim.gemv_kernel(spec, 512, 1024, 2)
    a = dev.run([k])
    assert a.start_ns == 0.0 and a.end_ns == a.time_ns == dev.now_ns
    start = a.end_ns + 1234.5
    b = dev.run([replace(k, gap_ns=100.0)], start_ns=start)
    assert b.start_ns == start and b.time_ns == b.end_ns - b.start_ns
    assert b.kernel_start_ns.min() >= start + 100.0
    log = b.log
    kernel_cmds = log[np.isin(log["cmd"], (9, 10, 11, 12, 13))]  # ACTAB MACAB PREAB GWRITE RDRES
    assert kernel_cmds["tick"].min() * spec.tick_ns >= start + 100.0
    # default start: the end of the latest program; an earlier start still keeps every
    # channel in time order (and every PC after its previous command)
    c = dev.run([k])
    assert c.start_ns == b.end_ns
    d = dev.run([k], start_ns=0.0)
    assert d.kernel_start_ns.min() > c.end_ns - 2 * spec.tCK_ns * 10
    for ch, cmds in per_channel(dev.log()).items():
        assert np.all(np.diff(cmds[0]) >= 0), ch
    assert checker.check_log(dev.log(), spec).ok


def test_run_pim_is_a_fresh_device_at_time_zero():
    spec = small()
    prog = [pim.gemv_kernel(spec, 1024, 2048, 3)]
    a = dram.run_pim(spec, prog, log=True)
    b = PimDevice(spec, log=True).run(prog, start_ns=0.0)
    assert a.time_ns == b.time_ns == a.end_ns and a.start_ns == 0.0
    assert np.array_equal(a.log, b.log) and a.command_counts == b.command_counts


def test_state_carries_open_rows_and_refresh_due_times():
    spec = small()
    k = GemvKernel(n_vectors=2, n_chunks=1, gw_per_chunk=4, rows_per_chunk=1, macs_per_row=8,
                   n_res=1, base_row=5)
    dev = PimDevice(spec)
    first = dev.run([k])
    again = dev.run([k])
    # the row is still open: the second program activates nothing
    assert first.command_counts["ACTAB"] == spec.org.total_pseudochannels
    assert "ACTAB" not in again.command_counts
    assert again.time_ns < first.time_ns
    # refresh due times continue: starting past the first due time, the PCs catch up on the
    # refresh that fell due while idle (a fresh device started there would too, but its rows
    # would be closed)
    late = dev.run([k], start_ns=1.5 * refi_ns(spec))
    assert late.refreshes == spec.org.total_pseudochannels
    assert late.command_counts["ACTAB"] == spec.org.total_pseudochannels  # re-opened after REF


# ---- barriers --------------------------------------------------------------------------------

def _two_phase(spec, first, second):
    """Every PC runs first[q] then second[q]."""
    return [[f, s] for f, s in zip(first, second)]


@pytest.mark.parametrize("symmetric", ["auto", False])
def test_all_barrier_spans_every_channel(symmetric):
    spec = small(channels=2)
    n, npc = spec.org.total_pseudochannels, spec.org.pseudochannels
    short = pim.gemv_kernel(spec, 256, 512, 1, n_pcs=1)
    long = replace(short, n_vectors=6)
    nxt = replace(short, gap_ns=500.0, sync="all")
    first = [long if q == 0 else short for q in range(n)]  # only channel 0, PC 0 is slow
    r = PimDevice(spec, log=True, symmetric=symmetric).run(_two_phase(spec, first, [nxt] * n))
    ends = np.array([r.kernel_times_ns(q)[1][0] for q in range(n)])
    starts = np.array([r.kernel_times_ns(q)[0][1] for q in range(n)])
    top = ends.max()
    assert ends.argmax() == 0 and ends[npc] < top  # channel 1 finished earlier ...
    # ... and still waits for channel 0: every PC starts 500 ns after the latest end (plus
    # at most the command bus of its channel)
    assert np.all(starts >= top + 500.0) and np.all(starts <= top + 500.0 + 4 * spec.tCK_ns)
    assert checker.check_log(r.log, spec).ok
    # a channel barrier binds channel 1 to its own PCs only
    chan = replace(nxt, sync="channel")
    r2 = dram.run_pim(spec, _two_phase(spec, first, [chan] * n))
    s1 = r2.kernel_times_ns(npc)[0][1]
    top1 = max(r2.kernel_times_ns(q)[1][0] for q in range(npc, 2 * npc))
    assert top1 + 500.0 <= s1 <= top1 + 500.0 + 4 * spec.tCK_ns < top + 500.0


def test_group_barriers_do_not_couple_groups():
    spec = small(channels=2)
    n, npc = spec.org.total_pseudochannels, spec.org.pseudochannels
    short = pim.gemv_kernel(spec, 256, 512, 1, n_pcs=1)
    long = replace(short, n_vectors=8)
    # group 0 = PC 0 of every channel (slow), group 1 = PC 1 of every channel (fast)
    group = [q % npc for q in range(n)]
    first = [long if g == 0 else short for g in group]
    second = [replace(short, gap_ns=300.0, sync="group", group=g) for g in group]
    r = PimDevice(spec, symmetric=False).run(_two_phase(spec, first, second))
    for g in (0, 1):
        pcs = [q for q in range(n) if group[q] == g]
        top = max(r.kernel_times_ns(q)[1][0] for q in pcs)
        for q in pcs:
            s = r.kernel_times_ns(q)[0][1]
            assert top + 300.0 <= s <= top + 300.0 + 4 * spec.tCK_ns
    fast_start = r.kernel_times_ns(1)[0][1]
    assert fast_start < r.kernel_times_ns(0)[1][0]  # group 1 did not wait for group 0


def test_barrier_participants_and_a_stream_that_starts_with_a_barrier():
    spec = small("samsung-hbm2-pim", channels=2)
    assert spec.org.total_pseudochannels == 4
    k = pim.gemv_kernel(spec, 128, 256, 3, n_pcs=1)
    wait = replace(k, n_vectors=1, sync="all", gap_ns=200.0)
    # PCs 0 and 3 take part (PC 3's stream starts with the barrier: it arrives at the start);
    # PCs 1 and 2 have no 'all' kernel and are not waited for
    prog = [[k, wait], [k] * 5, [k] * 5, [wait]]
    dev = PimDevice(spec)
    r = dev.run(prog, start_ns=1000.0)
    top = r.kernel_times_ns(0)[1][0]
    assert top + 200.0 <= r.kernel_times_ns(0)[0][1] <= top + 200.0 + 4 * spec.tCK_ns
    assert top + 200.0 <= r.kernel_times_ns(3)[0][0] <= top + 200.0 + 4 * spec.tCK_ns
    assert r.kernel_times_ns(1)[1][-1] > r.kernel_times_ns(0)[0][1]  # PC 1 ran on


def test_barriers_met_in_different_orders_are_refused():
    spec = small(channels=2)
    n = spec.org.total_pseudochannels
    k = pim.gemv_kernel(spec, 128, 256, 1, n_pcs=1)
    a, b = replace(k, sync="group", group=0), replace(k, sync="group", group=1)
    prog = [[k, a, b], [k, b, a]] + [[k]] * (n - 2)
    dev = PimDevice(spec)
    with pytest.raises(ConfigError, match="barrier"):
        dev.run(prog)
    with pytest.raises(ConfigError, match="reset"):
        dev.run([k])
    dev.reset()
    assert dev.run([k]).time_ns > 0


def test_barrier_kernels_are_validated():
    with pytest.raises(ConfigError, match="sync must be"):
        GemvKernel(1, 1, 1, 1, 1, 1, sync="everyone")
    with pytest.raises(ConfigError, match="group must be"):
        GemvKernel(1, 1, 1, 1, 1, 1, sync="group", group=-1)
    assert GemvKernel(1, 1, 1, 1, 1, 1, sync=True).barrier_key(3) == ("channel", 3)
    assert GemvKernel(1, 1, 1, 1, 1, 1, sync="all").barrier_key(3) == ("all",)
    assert GemvKernel(1, 1, 1, 1, 1, 1, sync="group", group=7).barrier_key(3) == ("group", 7)
    assert GemvKernel(1, 1, 1, 1, 1, 1).barrier_key(0) is None


# ---- refresh -------------------------------------------------------------------------------

def test_idle_pcs_are_refreshed_while_their_channel_works():
    """A PC with little work next to a busy one must still be refreshed every tREFI (before,
    finished or waiting PCs issued nothing and the checker found refresh gaps)."""
    spec = small(channels=2)
    k = pim.gemv_kernel(spec, 256, 2048, 4, n_pcs=1)
    n = spec.org.total_pseudochannels
    prog = [[k] * 40 if q % 2 == 0 else [k] for q in range(n)]
    r = dram.run_pim(spec, prog, log=True)
    rep = checker.check_log(r.log, spec)
    assert rep.ok, rep.summary()
    log = r.log
    idle = log[(log["pc"] == 1) & (log["cmd"] == 7)]
    assert len(idle) // 2 >= r.time_ns // refi_ns(spec) - 1  # per channel
    # idle refreshes are on schedule: never before they are due (tREFI, 2 tREFI, ...)
    due = (np.arange(len(idle) // 2) + 1) * spec.timing.nREFI * spec.timing.ticks_per_ck
    assert np.all(idle[idle["ch"] == 0]["tick"] >= due)


def test_refresh_pull_in_is_bounded():
    """A refresh due before a PC's next command may be pulled into the idle time ahead of
    it, but at most 7 intervals: a long gap is refreshed all along, not at its start."""
    spec = small()
    k = pim.gemv_kernel(spec, 512, 1024, 1)
    gap = 20 * refi_ns(spec)
    r = dram.run_pim(spec, [k, replace(k, gap_ns=gap)], log=True)
    refs = r.log[(r.log["ch"] == 0) & (r.log["pc"] == 0) & (r.log["cmd"] == 7)]["tick"]
    assert len(refs) >= 20
    interval = spec.timing.nREFI * spec.timing.ticks_per_ck
    assert np.all(refs >= (np.arange(len(refs)) + 1 - 7) * interval)
    assert np.diff(refs).max() <= 8 * interval + interval // 4
    assert checker.check_log(r.log, spec).ok


# ---- exact memo -----------------------------------------------------------------------------

def _same_result(a, b) -> bool:
    return (a.time_ns == b.time_ns and a.end_ns == b.end_ns and a.start_ns == b.start_ns
            and a.command_counts == b.command_counts and a.refreshes == b.refreshes
            and all(np.array_equal(getattr(a, f), getattr(b, f))
                    for f in ("pc_busy_ns", "pc_finish_ns", "kernel_start_ns",
                              "kernel_end_ns"))
            and (a.log is None or np.array_equal(a.log, b.log)))


def test_memo_replays_runs_bit_for_bit_and_the_device_continues_exactly():
    spec = small()
    progs = [(p, g) for p, g in programs(spec)]
    memo = ProgramMemo()
    plain, ref = run_back_to_back(spec, progs)
    first, r1 = run_back_to_back(spec, progs, memo=memo)
    assert (memo.hits, memo.misses) == (0, 4)
    second, r2 = run_back_to_back(spec, progs, memo=memo)
    assert (memo.hits, memo.misses) == (4, 4) and len(memo) == 4
    assert all(_same_result(a, b) for a, b in zip(ref, r2))
    assert np.array_equal(plain.log(), second.log())
    # the replayed device continues exactly like the simulated one
    nxt = [pim.gemv_kernel(spec, 2048, 1024, 2, base_row=900)]
    assert _same_result(plain.run(nxt), second.run(nxt))
    assert memo.misses == 5


def test_memo_entry_equals_a_fresh_simulation_at_the_same_phase_later_in_time():
    """A hit at another absolute time: the same state relative to the start (the refresh
    phase included), shifted by whole refresh intervals."""
    spec = small()
    prog = [pim.gemv_kernel(spec, 1024, 2048, 3),
            replace(pim.gemv_kernel(spec, 512, 1024, 2, base_row=64), gap_ns=300.0,
                    sync="all")]
    memo = ProgramMemo()
    PimDevice(spec, log=True, memo=memo).run(prog, start_ns=0.0)
    shift = 3 * spec.timing.nREFI * spec.timing.ticks_per_ck  # ticks
    hit_dev, fresh_dev = PimDevice(spec, log=True, memo=memo), PimDevice(spec, log=True)
    for dev in (hit_dev, fresh_dev):
        st = dev._engine.get_state()
        for f in ("ready", "ref_due", "pc_last", "ch_last"):
            st[f] = st[f] + shift
        dev._engine.set_state(st)
    a = hit_dev.run(prog, start_ns=shift * spec.tick_ns)
    b = fresh_dev.run(prog, start_ns=shift * spec.tick_ns)
    assert memo.hits == 1 and _same_result(a, b) and a.start_ns == shift * spec.tick_ns
    # a different phase is a different entry
    PimDevice(spec, log=True, memo=memo).run(prog, start_ns=100.0)
    assert memo.hits == 1 and memo.misses == 2


def test_memo_arguments():
    with pytest.raises(ConfigError, match="max_entries"):
        ProgramMemo(max_entries=0)
    with pytest.raises(ConfigError, match="ProgramMemo"):
        PimDevice("b200-hbm3e-pim", memo={})
    memo = ProgramMemo(max_entries=1)
    spec = small()
    k = pim.gemv_kernel(spec, 128, 256, 1)
    dev = PimDevice(spec, memo=memo)
    dev.run([k])
    dev.run([k])
    assert len(memo) == 1


def test_device_arguments_are_checked():
    with pytest.raises(ConfigError, match="no PIM units"):
        PimDevice("hbm3-6400")
    dev = PimDevice(small())
    for bad in (-1.0, float("nan"), "0", True, 1e300):
        with pytest.raises(ConfigError, match="start_ns"):
            dev.run([GemvKernel(1, 1, 1, 1, 1, 1)], start_ns=bad)
    with pytest.raises(ConfigError, match="symmetric"):
        PimDevice(small(), symmetric="yes")
    with pytest.raises(ConfigError, match="expected a list"):
        dev.run(GemvKernel(1, 1, 1, 1, 1, 1))


def test_cost_table_entry_equals_fresh_devices_at_its_phases_bit_for_bit():
    from sieve.pim.costs import PimCostTable
    from sieve.pim.ffn import ffn_shape, run_expert_ffn

    spec = get_spec("b200-hbm3e-pim")
    shape = ffn_shape("qwen3-30b-a3b")
    table = PimCostTable(spec, order="expert", phases=4)
    starts = table.phase_starts_ns()
    assert starts == [i * refi_ns(spec) / 4 for i in range(4)]
    fresh = []
    for s in starts:  # each phase on its own fresh device, started at that time
        dev = PimDevice(spec)
        r = run_expert_ffn(spec, shape, 3, order="expert", device=dev, start_ns=s)
        assert r.pim.start_ns == s and dev.now_ns == r.pim.end_ns
        fresh.append(r.total_ns)
    assert table.expert_ns(shape, 3) == sum(fresh) / 4  # exact, not approximately
    assert table.expert_ns(shape, 3) == sum(fresh) / 4 and table.hits == 1
