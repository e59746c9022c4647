"""Front end 2: PIM programs (GEMV kernel descriptors expanded inside the engine)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sieve import dram, pim
from sieve.dram import GemvKernel, checker
from sieve.dram.commands import COMMAND_INDEX as CI
from sieve.dram.presets import get_spec
from sieve.errors import ConfigError

PIM_SPECS = ["b200-hbm3e-pim", "samsung-hbm2-pim", "attacc-hbm3-pim", "attacc-hbm3-pim-npc"]


def small(name: str, **kw):
    """A small system (1 stack, 4 channels) so full simulations stay fast."""
    return get_spec(name).override(stacks=1, channels=4, **kw)


@pytest.mark.parametrize("name", PIM_SPECS)
def test_gemv_is_never_faster_than_internal_bandwidth(name):
    spec = get_spec(name)
    for rows, cols, tokens in ((4096, 4096, 1), (2880, 2880, 3), (1536, 2048, 2)):
        lay = pim.gemv_layout(spec, rows, cols, tokens)
        r = dram.run_pim(spec, [lay.kernel])
        bound_ns = lay.weight_bytes * tokens / spec.pim_internal_bandwidth_gbs
        assert r.time_ns >= bound_ns
        assert (r.command_counts[spec.pim_mac_command]
                == lay.kernel.macs * spec.org.total_pseudochannels)


@pytest.mark.parametrize("name", PIM_SPECS)
def test_tensor_parallel_streams_simulate_one_channel_exactly(name):
    spec = small(name)
    lay = pim.gemv_layout(spec, 1024, 2048, 3)
    k2 = pim.gemv_kernel(spec, 512, 1024, 2, base_row=64, gap_ns=300.0)
    prog = [lay.kernel, k2, lay.kernel]
    fast = dram.run_pim(spec, prog)
    full = dram.run_pim(spec, prog, symmetric=False)
    assert fast.simulated_channels == 1 and full.simulated_channels == 4
    assert fast.time_ns == full.time_ns and fast.cycles == full.cycles
    assert fast.command_counts == full.command_counts
    assert fast.refreshes == full.refreshes
    for a, b in ((fast.pc_busy_ns, full.pc_busy_ns), (fast.pc_finish_ns, full.pc_finish_ns),
                 (fast.kernel_start_ns, full.kernel_start_ns),
                 (fast.kernel_end_ns, full.kernel_end_ns)):
        assert np.array_equal(a, b)
    # under TP every pseudo-channel is equally busy: identical across channels, and within a
    # channel only the shared command bus's round-robin arbitration (a tick here and there)
    npc = spec.org.pseudochannels
    per_channel = fast.pc_busy_ns.reshape(-1, npc)
    assert np.all(per_channel == per_channel[0])
    assert fast.imbalance < 1.01


def test_expert_parallel_streams_are_simulated_per_channel_and_show_imbalance():
    spec = small("b200-hbm3e-pim")
    n = spec.org.total_pseudochannels
    k = pim.gemv_kernel(spec, 256, 2048, 1, n_pcs=1)
    # skewed: PC 0 gets 6 tokens worth of work, the others one kernel or none
    per_pc = [[k] * 6] + [[k]] * (n // 2 - 1) + [[]] * (n - n // 2)
    r = dram.run_pim(spec, per_pc)
    assert r.simulated_channels == spec.org.total_channels
    assert r.imbalance > 2.0
    assert r.pc_busy_ns[0] == r.pc_busy_ns.max()
    assert r.pc_busy_ns[-1] == 0
    starts, ends = r.kernel_times_ns(0)
    assert len(starts) == 6 and np.all(np.diff(ends) > 0)


def test_kernel_gap_and_order_are_respected():
    spec = small("samsung-hbm2-pim")
    k1 = pim.gemv_kernel(spec, 512, 1024, 1)
    k2 = pim.gemv_kernel(spec, 512, 1024, 1, gap_ns=1000.0)
    r = dram.run_pim(spec, [k1, k2])
    (s1, s2), (e1, e2) = r.kernel_times_ns(0)
    assert s1 == 0 and e1 <= s2 - 1000.0 + spec.tick_ns
    assert s2 >= e1 + 1000.0
    assert e2 == r.pc_finish_ns[0] and r.time_ns == r.pc_finish_ns.max()


def test_refresh_is_always_on_during_pim_work():
    spec = get_spec("samsung-hbm2-pim")
    k = pim.gemv_kernel(spec, 4096, 4096, 4)
    r = dram.run_pim(spec, [k], log=True)
    n_pcs = spec.org.total_pseudochannels
    due = int(r.cycles // spec.timing.nREFI)
    assert n_pcs * (due - 1) <= r.refreshes <= n_pcs * due
    log = r.log
    pc0 = log[(log["ch"] == 0) & (log["pc"] == 0)]
    refs = np.flatnonzero(pc0["cmd"] == 7)
    assert refs.size > 0
    tpc = spec.timing.ticks_per_ck
    for i in refs:
        # PIM yields: its row is closed before the REFab, and no row is opened during tRFC
        # (global-buffer writes may proceed: they do not touch the DRAM array, as AttAcc's WRGB)
        # (PREA: the refresh manager closes every row of the PC, the bank-parity rows and
        # the samsung-hbm2-pim protocol's register row of bank (0,1) alike, sieve.dram.pimmode)
        # (or the stream's own PREPB, closing the even row it no longer needs)
        assert pc0["cmd"][i - 1] in (CI["PREAB"], CI["PREA"], CI["PREPB"])
        act = CI["ACTPB"]  # the preset's PIM rows are one bank parity at a time
        later = np.flatnonzero(pc0["cmd"][i + 1:] == act)
        if later.size == 0:  # a refresh after the stream's last row activation
            continue
        nxt = i + 1 + later[0]  # the next ACTPB
        act_occ = int(spec.bus_ck.get("ACTPB", 1.0) * tpc)  # ACTPB acts on its last tick
        assert pc0["tick"][nxt] + act_occ - 1 - pc0["tick"][i] >= spec.timing.nRFC * tpc
        assert not np.isin(pc0["cmd"][i + 1:nxt], (CI["MACPB"],)).any()  # no MAC before it


@pytest.mark.parametrize("name", PIM_SPECS)
def test_pim_logs_have_zero_checker_violations(name):
    spec = small(name)
    ks = [pim.gemv_kernel(spec, 2048, 2048, 4), pim.gemv_kernel(spec, 256, 1024, 2, gap_ns=50),
          pim.gemv_kernel(spec, 4096, 512, 1, base_row=200)]
    r = dram.run_pim(spec, ks * 3, symmetric=False, log=True)
    rep = checker.check_log(r.log, spec)
    assert rep.ok, rep.summary()
    assert len(r.log) > 10_000


def test_same_row_is_not_reopened_between_vectors():
    spec = small("b200-hbm3e-pim")
    k = GemvKernel(n_vectors=5, n_chunks=1, gw_per_chunk=4, rows_per_chunk=1, macs_per_row=8,
                   n_res=1)
    r = dram.run_pim(spec, [k])
    per_pc = {c: v // spec.org.total_pseudochannels for c, v in r.command_counts.items()}
    assert per_pc["ACTAB"] == 1 + r.refreshes // spec.org.total_pseudochannels
    assert per_pc["MACAB"] == 40 and per_pc["GWRITE"] == 20 and per_pc["RDRES"] == 5


def test_lowering_counts_and_padding():
    spec = get_spec("samsung-hbm2-pim")
    lay = pim.gemv_layout(spec, 4096, 4096, 1, col_groups=1)  # row-only layout
    k = lay.kernel
    # 64 PCs x 8 PUs; 4096 x 4096 fp16 = 32 MiB streamed as 256 B per MAC per PC
    assert k.macs * 64 * 8 * 32 == lay.weight_bytes
    assert lay.padding == 0.0
    assert k.gw_per_chunk * k.n_chunks * 32 == 4096 * 2  # the whole input vector per PC
    # the PC's outputs, 16 lane partial sums each: the PU has no adder tree, the host adds
    assert lay.lane_partials == 16
    assert k.n_res * 32 == 4096 // 64 * 16 * 2
    odd = pim.gemv_layout(spec, 1000, 3000, 1, col_groups=1)
    assert odd.padded_weight_bytes >= odd.weight_bytes and 0 < odd.padding < 0.25


def test_bad_pim_programs():
    with pytest.raises(ConfigError, match="no PIM units"):
        dram.run_pim("hbm3-6400", [GemvKernel(1, 1, 1, 1, 1, 1)])
    with pytest.raises(ConfigError, match="macs_per_row"):
        dram.run_pim("b200-hbm3e-pim", [GemvKernel(1, 1, 1, 1, 33, 1)])
    with pytest.raises(ConfigError, match="kernel lists for"):
        dram.run_pim("b200-hbm3e-pim", [[GemvKernel(1, 1, 1, 1, 1, 1)]] * 3)
    with pytest.raises(ConfigError, match=">= 0"):
        GemvKernel(1, 1, -1, 1, 1, 1)
    with pytest.raises(ConfigError, match="out_rows"):
        pim.gemv_layout("b200-hbm3e-pim", 0, 10)


def test_sync_kernel_is_a_channel_barrier():
    spec = small("b200-hbm3e-pim")
    npc = spec.org.pseudochannels
    short = pim.gemv_kernel(spec, 256, 512, 1, n_pcs=1)
    long = replace(short, n_vectors=6)
    after = replace(short, gap_ns=500.0, sync=True)

    def program(nxt):  # PC 0 of each channel is slow, PC 1 fast; then both run `nxt`
        return [[long, nxt] if q % npc == 0 else [short, nxt]
                for q in range(spec.org.total_pseudochannels)]

    r = dram.run_pim(spec, program(after), log=True)
    assert r.simulated_channels == 1  # channels are still identical
    (s0, e0), (s1, e1) = r.kernel_times_ns(0), r.kernel_times_ns(1)
    top = max(e0[0], e1[0])
    for s in (s0[1], s1[1]):
        assert top + 500.0 <= s <= top + 500.0 + 4 * spec.tCK_ns  # + command-bus arbitration
    plain = dram.run_pim(spec, program(replace(after, sync=False)))
    assert plain.kernel_times_ns(1)[0][1] < s1[1]  # without the barrier PC 1 runs ahead
    full = dram.run_pim(spec, program(after), symmetric=False)
    assert np.array_equal(full.kernel_start_ns, r.kernel_start_ns)
    assert checker.check_log(r.log, spec).ok


def test_sync_only_binds_pcs_that_have_that_barrier():
    spec = small("samsung-hbm2-pim")
    k = pim.gemv_kernel(spec, 128, 256, 3, n_pcs=1)
    prog = [[k, replace(k, sync=True, gap_ns=100.0)] if q % 2 == 0 else [k] * 4
            for q in range(spec.org.total_pseudochannels)]
    r = dram.run_pim(spec, prog)
    s0, e0 = r.kernel_times_ns(0)
    # PC 1 has no sync kernel: PC 0 is released by its own arrival alone
    assert e0[0] + 100.0 <= s0[1] <= e0[0] + 100.0 + 4 * spec.tCK_ns
    with pytest.raises(ConfigError, match="sync must be a bool"):
        GemvKernel(1, 1, 1, 1, 1, 1, sync=1)
