"""sieve.hw.comm: link-bandwidth bounds, monotonicity, tiers, exact routing, errors, fit.

Times are nanoseconds (GB/s = bytes/ns, alpha_us x 1e3). Every model call takes a resolved
SystemConfig (``SYS[name]``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.calibration import costmodels as calibrate
from sieve.errors import ConfigError
from sieve.hw import comm
from sieve.hw.system import get_system

SYSTEMS = ["4xb200", "8xb200", "16xb200", "8xh200", "8xh100"]
SYS = {name: get_system(name) for name in [*SYSTEMS, "1xb200"]}
sizes = st.integers(min_value=0, max_value=2**31)


def _bounds(system: str, intra_bytes: float, inter_bytes: float) -> float:
    s = SYS[system]
    return max(intra_bytes / s.intra_link.bw_gbs, inter_bytes / s.inter_link.bw_gbs)


# ---- bounds -----------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(size=sizes, system=st.sampled_from(SYSTEMS))
def test_collectives_never_beat_bytes_over_link_bandwidth(size, system):
    s = get_system(system)
    n, g = s.n_gpus, s.gpus_per_node
    bus = size * (n - 1) / n
    inter = bus / g if n > g else 0.0
    assert comm.all_gather_time_ns(size, SYS[system]) >= _bounds(system, bus, inter)
    assert comm.all_reduce_time_ns(size, SYS[system]) >= _bounds(system, 2 * bus, 2 * inter)
    assert comm.all_to_all_time_ns(size, SYS[system]) >= _bounds(
        system, size * (g - 1) / n, size * (n - g) / n)


@settings(max_examples=60, deadline=None)
@given(tokens=st.integers(0, 8192), topk=st.integers(1, 10), hidden=st.sampled_from([2048, 7168]),
       system=st.sampled_from(SYSTEMS))
def test_ep_dispatch_and_combine_never_beat_the_links(tokens, topk, hidden, system):
    s = get_system(system)
    n, g = s.n_gpus, s.gpus_per_node
    for fn, payload in ((comm.ep_dispatch_time_ns, "fp8"), (comm.ep_combine_time_ns, "bf16")):
        copies_bytes = tokens * topk * comm.payload_bytes(payload, hidden)
        t = fn(tokens, hidden, topk, SYS[system])
        assert t >= _bounds(system, copies_bytes * (g - 1) / n, copies_bytes * (n - g) / n)


# ---- monotonicity -----------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(size=sizes, more=sizes, system=st.sampled_from(SYSTEMS))
def test_collective_time_is_monotone_in_size(size, more, system):
    for fn in (comm.all_gather_time_ns, comm.all_reduce_time_ns, comm.all_to_all_time_ns):
        assert fn(size + more, SYS[system]) >= fn(size, SYS[system])


@settings(max_examples=60, deadline=None)
@given(tokens=st.integers(0, 4096), more=st.integers(0, 4096), topk=st.integers(1, 10),
       system=st.sampled_from(SYSTEMS))
def test_ep_time_is_monotone_in_tokens(tokens, more, topk, system):
    for fn in (comm.ep_dispatch_time_ns, comm.ep_combine_time_ns):
        assert fn(tokens + more, 7168, topk, SYS[system]) >= fn(tokens, 7168, topk, SYS[system])


@settings(max_examples=40, deadline=None)
@given(m=st.lists(st.integers(0, 500), min_size=64, max_size=64), i=st.integers(0, 63),
       add=st.integers(1, 500), system=st.sampled_from(["8xb200", "16xb200"]))
def test_exact_exchange_is_monotone_in_every_entry(m, i, add, system):
    n = get_system(system).n_gpus
    c = np.resize(np.array(m), (n, n))
    more = c.copy()
    more.flat[i % more.size] += add
    for op in ("dispatch", "combine"):
        assert comm.ep_exchange_time_ns(more, 7168, SYS[system], op=op) >= comm.ep_exchange_time_ns(
            c, 7168, SYS[system], op=op)


# ---- structure --------------------------------------------------------------------------------

def test_single_gpu_and_empty_transfers_cost_nothing():
    assert comm.all_gather_time_ns(1 << 20, SYS["1xb200"]) == 0.0
    assert comm.ep_dispatch_time_ns(128, 7168, 8, SYS["1xb200"]) == 0.0
    assert comm.all_to_all_time_ns(0, SYS["8xb200"]) == 0.0
    assert comm.ep_exchange_time_ns(np.diag([100] * 8), 7168, SYS["8xb200"]) == 0.0  # all local


def test_spanning_nodes_takes_the_slower_tier():
    cal = comm.get_comm_calibration("b200").all_to_all
    s = get_system("16xb200")
    size = 1 << 30
    intra = cal.alpha_us * 1e3 + size * 7 / 16 / (cal.eta * 900)  # ns; 900 GB/s = 900 B/ns
    inter = (cal.alpha_us + 0.13) * 1e3 + size * 8 / 16 / (cal.eta * 50)
    assert comm.all_to_all_time_ns(size, s) == pytest.approx(max(intra, inter))
    assert inter > intra  # IB is the bottleneck for a uniform all-to-all over two nodes
    # a faster inter-node link moves the bottleneck back to NVLink
    fast = s.override({"inter_link.bw_gbs": 1e5})
    assert comm.all_to_all_time_ns(size, fast) == pytest.approx(
        max(intra, (cal.alpha_us + 0.13) * 1e3 + size * 8 / 16 / (cal.eta * 1e5)))


def test_exact_exchange_with_uniform_counts_equals_the_uniform_model():
    for system in ("8xb200", "16xb200"):
        n = get_system(system).n_gpus
        c = np.full((n, n), 128 * 8 / n)
        assert comm.ep_exchange_time_ns(c, 7168, SYS[system]) == pytest.approx(
            comm.ep_dispatch_time_ns(128, 7168, 8, SYS[system]))
        assert comm.ep_exchange_time_ns(c, 7168, SYS[system], op="combine") == pytest.approx(
            comm.ep_combine_time_ns(128, 7168, 8, SYS[system]))


def test_exact_exchange_is_set_by_the_busiest_receiver():
    c = np.zeros((8, 8))
    c[1:, 0] = 1000  # every GPU sends to GPU 0: GPU 0 receives 7x what any one sends
    one = np.zeros((8, 8))
    one[1, 0] = 1000
    t_hot, t_one = (comm.ep_exchange_time_ns(x, 7168, SYS["8xb200"]) for x in (c, one))
    alpha = comm.get_comm_calibration("b200").ep_dispatch.alpha_us * 1e3  # ns
    assert (t_hot - alpha) == pytest.approx(7 * (t_one - alpha))


def test_dedup_sends_fewer_copies_than_per_expert():
    full = comm.ep_dispatch_time_ns(256, 7168, 8, SYS["8xb200"])
    dedup = comm.ep_dispatch_time_ns(256, 7168, 8, SYS["8xb200"], n_experts=256, dedup=True)
    assert dedup < full
    # top-8 of 256 experts over 8 GPUs touches 8 (1 - C(224,8)/C(256,8)) = 5.2947 GPUs on average
    alpha = comm.get_comm_calibration("b200").ep_dispatch.alpha_us * 1e3  # ns
    assert (dedup - alpha) / (full - alpha) == pytest.approx(5.2947 / 8, rel=1e-4)


def test_payload_bytes_follow_deepep():
    assert comm.payload_bytes("fp8", 7168) == 7168 + 7168 / 128 * 4 + 16 == 7408
    assert comm.payload_bytes("bf16", 7168) == 14336


# ---- errors -----------------------------------------------------------------------------------

def test_bad_inputs_name_the_field_and_choices():
    s8 = SYS["8xb200"]
    with pytest.raises(ConfigError, match=r"all_gather: size_bytes must be finite and >= 0"):
        comm.all_gather_time_ns(-1, s8)
    with pytest.raises(ConfigError, match=r"EP dispatch: tokens_per_gpu must be a number"):
        comm.ep_dispatch_time_ns("many", 7168, 8, s8)
    with pytest.raises(ConfigError, match=r"EP payload 'fp4'.*known: bf16, fp8"):
        comm.ep_dispatch_time_ns(1, 7168, 8, s8, payload="fp4")
    with pytest.raises(ConfigError, match=r"system 'dgx'.*known:"):
        get_system("dgx")
    with pytest.raises(ConfigError, match=r"n_gpus must be an integer in \[1, 8\]"):
        comm.all_reduce_time_ns(1, s8, n_gpus=9)
    with pytest.raises(ConfigError, match=r"copies must be a square"):
        comm.ep_exchange_time_ns(np.ones((8, 4)), 7168, s8)
    with pytest.raises(ConfigError, match=r"op 'scatter' unknown"):
        comm.ep_exchange_time_ns(np.ones((8, 8)), 7168, s8, op="scatter")
    with pytest.raises(ConfigError, match=r"dedup needs n_experts"):
        comm.ep_dispatch_time_ns(1, 7168, 8, s8, dedup=True)
    with pytest.raises(ConfigError, match=r"unknown override 'alltoall.eta'.*valid: all_gather"):
        comm.get_comm_calibration("b200").override({"alltoall.eta": 0.5})
    with pytest.raises(ConfigError, match=r"all_to_all.eta must be in \(0, 1\]"):
        comm.get_comm_calibration("b200").override({"all_to_all.eta": 1.5})


# ---- calibration provenance and validation targets --------------------------------------------

def test_stored_comm_calibrations_are_the_least_squares_fits():
    fits = calibrate.fit_comm()
    for gpu_name, ops in fits.items():
        stored = comm.get_comm_calibration(gpu_name)
        for op, (ab, _rms, n) in ops.items():
            assert n == 4
            assert stored.op(op).alpha_us == pytest.approx(ab.alpha_us, rel=2e-3, abs=0.01)
            assert stored.op(op).eta == pytest.approx(ab.eta, rel=2e-3)


def test_comm_hold_out_errors_stay_within_the_published_bounds():
    nccl = [(r.role, (calibrate.predict(r) / r.measured_ns - 1) * 100)
            for r in calibrate.nccl_rows()]
    deepep = [(r.role, (calibrate.predict(r) / r.measured_ns - 1) * 100)
              for r in calibrate.deepep_rows()]
    n_hold = calibrate.summary(e for role, e in nccl if role == "hold-out")
    d_hold = calibrate.summary(e for role, e in deepep if role == "hold-out")
    assert n_hold[2] == 21 and d_hold[2] == 24
    assert d_hold[0] < 5 and d_hold[1] < 10  # docs/validation.md
    assert n_hold[0] < 15 and n_hold[1] < 45


def test_docs_validation_sections_are_current():
    """docs/validation.md's generated sections equal a fresh run of the generator."""
    import re
    from pathlib import Path

    from conftest import benchmark_module

    root = Path(__file__).resolve().parents[1]
    doc = root / "docs" / "validation.md"
    if not doc.exists():
        pytest.skip("docs/validation.md absent")
    mod = benchmark_module("validate_costmodels")
    text = doc.read_text()
    for name, fresh in (("gpu", mod.gpu_section()), ("comm", mod.comm_section())):
        m = re.search(rf"<!-- costmodels:{name}:begin.*?<!-- costmodels:{name}:end -->", text,
                      re.S)
        assert m, f"section {name} missing from docs/validation.md"
        assert m.group(0) == fresh, f"docs/validation.md section {name} is stale: run {mod.CMD}"


def test_tp_all_reduce_is_the_measured_custom_all_reduce():
    """The decode step's TP all-reduce (vLLM custom all-reduce in CUDA graphs, aiconfigurator
    tables): the measured value at every measured size, linear between them, the smallest
    value below them, NCCL's ring model where no table applies."""
    from sieve.hw.calibrations import CUSTOM_ALL_REDUCE
    from sieve.hw.comm import all_reduce_time_ns, tp_all_reduce_time_ns

    for gpu in ("b200", "h200"):
        s = get_system(f"8x{gpu}")
        for n, pts in CUSTOM_ALL_REDUCE[gpu].items():
            for size, us in pts:
                assert tp_all_reduce_time_ns(size, s, n_gpus=n) == pytest.approx(us * 1e3)
            (s0, u0), (s1, u1) = pts[:2]
            mid = tp_all_reduce_time_ns((s0 + s1) / 2, s, n_gpus=n)
            assert mid == pytest.approx((u0 + u1) / 2 * 1e3)
            assert tp_all_reduce_time_ns(100, s, n_gpus=n) == pytest.approx(u0 * 1e3)
            big = tp_all_reduce_time_ns(pts[-1][0] * 4, s, n_gpus=n)
            assert big > pts[-1][1] * 1e3
        # far below NCCL's 8-GPU floor (hardware.md §4.1: 25 us at 1 KB on B200)
        assert tp_all_reduce_time_ns(32_768, s, n_gpus=4) < 0.5 * all_reduce_time_ns(
            32_768, s, n_gpus=4)
        assert tp_all_reduce_time_ns(32_768, s, n_gpus=3) == all_reduce_time_ns(
            32_768, s, n_gpus=3)
    two_nodes = get_system("16xb200")
    assert tp_all_reduce_time_ns(32_768, two_nodes, n_gpus=16) == all_reduce_time_ns(
        32_768, two_nodes, n_gpus=16)
    assert tp_all_reduce_time_ns(0, two_nodes) == 0.0
