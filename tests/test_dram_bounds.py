"""Analytic bounds of front end 1: peak bandwidth, unloaded latency, refresh overhead."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve import dram
from sieve.dram.mapping import AddressMapper
from sieve.dram.memtrace import RequestTrace, synthetic_trace
from sieve.dram.presets import get_spec


def test_streaming_64b_reads_on_hbm3_reach_90_percent_of_peak_and_never_exceed_it():
    trace = synthetic_trace("seq", 100_000)
    for channels in (1, 4):
        r = dram.simulate_requests("hbm3-6400", trace, channels=channels)
        assert r.peak_bandwidth_gbs == pytest.approx(51.2 * channels)  # 2 PC x 32 bit x 6.4 Gb/s
        assert 0.90 <= r.bandwidth_utilization <= 1.0, r.summary()
        assert r.row_hit_rate > 0.9


def test_without_refresh_a_stream_is_within_1_percent_of_peak():
    spec = get_spec("hbm3-6400").override(nREFI=10**9)
    r = dram.simulate_requests(spec, synthetic_trace("seq", 50_000), channels=1)
    assert r.refreshes == 0
    assert 0.99 <= r.bandwidth_utilization <= 1.0


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(["hbm3-6400", "hbm2-2000", "hbm3e-8000", "samsung-hbm2-pim"]),
       pattern=st.sampled_from(["seq", "rand"]), writes=st.floats(0, 1),
       channels=st.sampled_from([1, 2]), request_bytes=st.sampled_from([32, 64, 128]),
       page=st.sampled_from(["open", "closed"]), seed=st.integers(0, 10**6))
def test_bandwidth_never_exceeds_peak(name, pattern, writes, channels, request_bytes, page, seed):
    trace = synthetic_trace(pattern, 3000, stride_bytes=request_bytes, write_fraction=writes,
                            seed=seed)
    spec = get_spec(name)
    if spec.pim is not None and spec.pim.modes == "hbm-pim":
        # random host traffic may reach the mode protocol's rows, which are refused: the
        # same memory without the protocol (the request engine never reads it)
        spec = spec.override({"pim.modes": None, "pim.park": False, "pim.crf_bursts": 0})
    r = dram.simulate_requests(spec, trace, channels=channels, request_bytes=request_bytes,
                               page_policy=page)
    assert 0 < r.bandwidth_gbs <= r.peak_bandwidth_gbs * (1 + 1e-12)
    assert r.row_hits + r.row_misses + r.row_conflicts == len(trace)
    bursts = request_bytes // 32
    rd = r.command_counts.get("RD", 0) + r.command_counts.get("RDA", 0)
    wr = r.command_counts.get("WR", 0) + r.command_counts.get("WRA", 0)
    assert rd == r.reads * bursts and wr == r.writes * bursts
    assert r.pc_bursts.sum() == len(trace) * bursts


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm2-2000", "hbm3e-8000"])
def test_unloaded_read_to_a_closed_bank_costs_trcd_plus_cl_plus_burst(name):
    spec = get_spec(name)
    t, tpc = spec.timing, spec.timing.ticks_per_ck
    r = dram.simulate_requests(spec, RequestTrace([0], [False]), channels=1, request_bytes=32)
    act_occ = int(round(spec.bus_ck["ACT"] * tpc))
    rd_tick = t.nRCDRD * tpc + act_occ - 1 - (tpc - 1)  # ACT at tick 0, then tRCD
    rd_tick = -(-rd_tick // tpc) * tpc  # RD on a rising edge
    expected_ticks = rd_tick + (t.nCL + t.nBL) * tpc
    assert r.latency_ns[0] == pytest.approx(expected_ticks * spec.tick_ns)
    # i.e. tRCD + CL + BL plus at most the ACT's command-bus time
    base = (t.nRCDRD + t.nCL + t.nBL) * spec.tCK_ns
    assert base <= r.latency_ns[0] <= base + spec.bus_ck["ACT"] * spec.tCK_ns
    assert (r.row_misses, r.row_hits, r.row_conflicts) == (1, 0, 0)


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm2-2000"])
def test_unloaded_row_hit_costs_cl_plus_burst(name):
    spec = get_spec(name)
    t = spec.timing
    # the second request arrives long after the first, to the next column of the same row
    mapper = AddressMapper(spec, "sieve", channels=1, request_bytes=32)
    trace = RequestTrace([0, mapper.encode(co=1)], [False, False], arrive_ck=[0, 1000])
    r = dram.simulate_requests(spec, trace, channels=1, request_bytes=32)
    assert r.latency_ns[1] == pytest.approx((t.nCL + t.nBL) * spec.tCK_ns)
    assert (r.row_misses, r.row_hits) == (1, 1)


@pytest.mark.parametrize("name", ["hbm3-6400", "hbm2-2000"])
def test_refresh_overhead_is_close_to_trfc_over_trefi(name):
    spec = get_spec(name)
    trace = synthetic_trace("seq", 100_000)
    with_ref = dram.simulate_requests(spec, trace, channels=1)
    no_ref = dram.simulate_requests(spec.override(nREFI=10**9), trace, channels=1)
    loss = 1 - with_ref.bandwidth_gbs / no_ref.bandwidth_gbs
    ratio = spec.timing.nRFC / spec.timing.nREFI
    # the refresh itself, plus re-opening the rows it closed: between 1x and 1.5x tRFC/tREFI
    assert ratio <= loss <= 1.5 * ratio, (loss, ratio)
    # one REFab per pseudo-channel per tREFI (the last may fall after the last request)
    due = int(with_ref.cycles // spec.timing.nREFI)
    assert 2 * (due - 1) <= with_ref.refreshes <= 2 * due


def test_per_bank_refresh_mode_refreshes_every_bank_round_robin():
    spec = get_spec("hbm3-6400").override(refresh="perbank")
    r = dram.simulate_requests(spec, synthetic_trace("rand", 20_000, seed=3), channels=1,
                               log=True)
    refpb = r.log[r.log["cmd"] == 8]
    assert r.command_counts.get("REFab", 0) == 0
    due = int(r.cycles // spec.timing.nREFIpb)  # refreshes due per PC during the run
    assert 2 * (due - 1) <= len(refpb) <= 2 * due  # the last one may fall after the last request
    for pc in (0, 1):
        banks = refpb[refpb["pc"] == pc]
        flat = (banks["sid"] * 4 + banks["bg"]) * 4 + banks["bank"]
        assert np.array_equal(flat, np.arange(len(flat)) % 32)  # round robin over 32 banks


def test_closed_page_policy_auto_precharges():
    trace = synthetic_trace("rand", 5000, seed=1)
    r = dram.simulate_requests("hbm3-6400", trace, channels=1, page_policy="closed")
    assert r.command_counts.get("RDA", 0) > 0.9 * len(trace)
    assert r.row_conflicts == 0  # rows are never left open for another request to hit
    assert r.command_counts.get("PRE", 0) == 0


def test_random_reads_have_almost_no_row_hits_and_sequential_mostly_hits():
    rnd = dram.simulate_requests("hbm3-6400", synthetic_trace("rand", 20_000, seed=5),
                                 channels=1)
    seq = dram.simulate_requests("hbm3-6400", synthetic_trace("seq", 20_000), channels=1)
    assert rnd.row_hit_rate < 0.02
    assert seq.row_hit_rate > 0.9
    assert rnd.latency_mean_ns > seq.latency_mean_ns


def test_arrival_times_are_respected():
    spec = get_spec("hbm3-6400")
    t = spec.timing
    addr = np.arange(100) * 4096 * 37  # scattered rows and banks
    trace = RequestTrace(addr, np.zeros(100, bool), arrive_ck=np.arange(100) * 500)
    r = dram.simulate_requests(spec, trace, channels=1, request_bytes=32)
    # every request is alone in the system: latency is at most a row conflict's, except for
    # the few that arrive while their pseudo-channel is refreshing
    conflict = (t.nRP + t.nRCDRD + t.nCL + t.nBL + 2) * spec.tCK_ns
    slow = r.latency_ns > conflict
    assert slow.sum() <= r.refreshes
    assert r.latency_ns.max() <= conflict + (t.nRFC + t.nRP) * spec.tCK_ns
    assert r.latency_ns.min() >= (t.nCL + t.nBL) * spec.tCK_ns
    # the run lasts as long as the arrivals, not as long as 100 back-to-back requests
    assert r.cycles >= 99 * 500


def test_writes_complete_and_reads_keep_priority():
    trace = synthetic_trace("rand", 10_000, write_fraction=0.5, seed=9)
    r = dram.simulate_requests("hbm3-6400", trace, channels=1, queue_size=16)
    assert r.writes == trace.n_writes and r.reads == trace.n_reads
    assert r.latency_ns.size == trace.n_reads


def test_identical_inputs_give_identical_results():
    trace = synthetic_trace("rand", 20_000, write_fraction=0.2, seed=4)
    a = dram.simulate_requests("hbm3e-8000", trace, channels=2)
    b = dram.simulate_requests("hbm3e-8000", trace, channels=2)
    assert a.to_dict() == b.to_dict()
    assert np.array_equal(a.latency_ns, b.latency_ns)
