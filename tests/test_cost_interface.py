"""The one cost interface (sieve.hw.cost): both models answer it, in ns, consistently.

* closed forms of the roofline estimate (the seed's Equation 1 terms);
* the roofline is a lower bound of the precise model for every operation kind;
* the precise model equals the underlying models (calibrated GPU/link, the engine) exactly;
* its memo returns what a fresh evaluation returns;
* wrong operations and systems give one clear error.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve import hw
from sieve.errors import ConfigError
from sieve.hw.cost import (
    Collective,
    DecodeAttention,
    EpExchange,
    ExpertShape,
    Gemm,
    GroupedExperts,
    MemoryStream,
    PimAttention,
    PimExperts,
    PrefillAttention,
)
from sieve.model import get_model
from sieve.pim.cost import EngineCostModel
from sieve.pim.ffn import FfnShape, run_moe_ep, run_moe_tp

SHAPE = ExpertShape(512, 256)  # small expert: fast engine runs


@pytest.fixture(scope="module")
def models():
    return hw.RooflineCostModel("4xb200"), EngineCostModel("4xb200")


def test_both_models_satisfy_the_protocol(models):
    for m in models:
        assert isinstance(m, hw.CostModel)
        assert m.system == hw.get_system("4xb200")


def test_roofline_gpu_closed_form():
    r = hw.RooflineCostModel("1xb200")
    g = hw.get_gpu("b200")
    counts = np.array([3, 0, 1])
    nbytes, flops = hw.expert_gemm_cost(counts, 512, 256, "bf16")
    want = max(nbytes / g.hbm_bw_gbs, flops / (g.bf16_tflops * 1e3))
    assert r.gpu_ns(GroupedExperts(counts, SHAPE)) == pytest.approx(want, rel=1e-12)
    # a list is one sum of bytes and one sum of FLOPs (seed: T_GPU = max(T_offchip, T_comp))
    gemm = Gemm(64, 4096, 4096)
    b2, f2 = 4096 * 4096 * 2 + 64 * 4096 * 2 + 64 * 4096 * 2, 2 * 64 * 4096 * 4096
    want = max((nbytes + b2) / g.hbm_bw_gbs, (flops + f2) / (g.bf16_tflops * 1e3))
    assert r.gpu_ns([GroupedExperts(counts, SHAPE), gemm]) == pytest.approx(want, rel=1e-12)


def test_roofline_comm_and_pim_closed_forms():
    r = hw.RooflineCostModel("8xb200")
    # all-gather of S bytes over 8 GPUs in one node: S 7/8 bytes per GPU over NVLink (900 GB/s)
    assert r.comm_ns(Collective("all_gather", 8e6)) == pytest.approx(8e6 * 7 / 8 / 900)
    assert r.comm_ns(Collective("all_gather", 8e6, n_gpus=1)) == 0.0
    spec = r.system.memory
    t = r.pim_ns(PimExperts([2, 0, 1], SHAPE))
    assert t == pytest.approx(3 * SHAPE.flops_per_token / (spec.pim_peak_tflops * 1e3))
    m = get_model("qwen3-30b-a3b")
    kv = 2 * m.kv_bytes(0, 100)
    assert r.pim_ns(PimAttention(m, 0, [100, 100])) == pytest.approx(
        kv / spec.pim_internal_bandwidth_gbs)


ops_gpu = st.one_of(
    st.builds(GroupedExperts, st.lists(st.integers(0, 300), min_size=1, max_size=12),
              st.just(SHAPE)),
    st.builds(Gemm, st.integers(0, 512), st.integers(1, 8192), st.integers(1, 8192)),
    st.builds(DecodeAttention, st.lists(st.integers(1, 8192), min_size=1, max_size=8),
              st.just(32), st.just(8), st.just(128)),
    st.builds(PrefillAttention, st.lists(st.integers(1, 4096), min_size=1, max_size=3),
              st.just(32), st.just(8), st.just(128)),
    st.builds(MemoryStream, st.floats(0, 1e9)),
)


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(ops_gpu, min_size=1, max_size=4))
def test_roofline_gpu_is_a_lower_bound_of_the_calibrated_model(models, ops):
    r, e = models
    assert r.gpu_ns(ops) <= e.gpu_ns(ops) * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(hw.COLLECTIVES), size=st.floats(0, 1e9),
       system=st.sampled_from(["4xb200", "8xb200", "16xb200", "8xh200"]))
def test_roofline_comm_is_a_lower_bound(kind, size, system):
    r, e = hw.RooflineCostModel(system), EngineCostModel(system)
    op = Collective(kind, size)
    assert r.comm_ns(op) <= e.comm_ns(op) * (1 + 1e-9)


def test_roofline_ep_exchange_is_a_lower_bound():
    rng = np.random.default_rng(0)
    for system in ("8xb200", "16xb200"):
        r, e = hw.RooflineCostModel(system), EngineCostModel(system)
        n = r.system.n_gpus
        copies = rng.integers(0, 500, (n, n))
        for kind in hw.EP_EXCHANGES:
            op = EpExchange(kind, copies, 2880)
            assert 0 < r.comm_ns(op) <= e.comm_ns(op)


@pytest.mark.parametrize("tokens", [[1], [3, 0, 1], [0, 5, 2, 2]])
def test_roofline_pim_is_a_lower_bound_of_the_engine(models, tokens):
    r, e = models
    op = PimExperts(tokens, SHAPE)
    assert r.pim_ns(op) <= e.pim_ns(op)
    m = get_model("qwen3-30b-a3b")
    att = PimAttention(m, 0, [64, 300])
    assert r.pim_ns(att) <= e.pim_ns(att)


def test_engine_model_equals_the_underlying_models(models):
    _, e = models
    s = e.system
    counts = np.array([2, 0, 1, 1])
    assert e.gpu_ns(GroupedExperts(counts, SHAPE)) == hw.grouped_gemm_time_ns(
        counts, 512, 256, "bf16", gpu=s.gpu, calib=s.gpu_calibration)
    assert e.comm_ns(Collective("all_reduce", 1e6)) == hw.all_reduce_time_ns(1e6, s)
    tp = run_moe_tp(s.memory, FfnShape(512, 256), counts, gpu=s.gpu).total_ns
    assert e.pim_ns(PimExperts(counts, SHAPE)) == tp
    ep = run_moe_ep(s.memory, FfnShape(512, 256), counts, order="expert", gpu=s.gpu).total_ns
    assert e.pim_ns(PimExperts(counts, SHAPE, mapping="ep", order="expert")) == ep
    # a list runs back to back: times add
    assert e.pim_ns([PimExperts(counts, SHAPE), PimExperts([1], SHAPE)]) == pytest.approx(
        tp + e.pim_ns(PimExperts([1], SHAPE)))


def test_engine_memo_equals_a_fresh_evaluation():
    e = EngineCostModel("1xb200")
    op = PimExperts([1, 2], SHAPE)
    first = e.pim_ns(op)
    assert e.misses == 1 and e.hits == 0
    assert e.pim_ns(PimExperts(np.array([1, 2]), SHAPE)) == first and e.hits == 1
    assert EngineCostModel("1xb200").pim_ns(op) == first


def test_wrong_operations_and_systems_are_refused(models):
    r, e = models
    for m in (r, e):
        with pytest.raises(ConfigError, match="expected GpuOp"):
            m.gpu_ns([Collective("all_gather", 1.0)])
        with pytest.raises(ConfigError, match="expected a PimOp"):
            m.pim_ns("experts")
    nopim = hw.get_system("1xb200", {"memory": "hbm3e-8000"})
    for m in (hw.RooflineCostModel(nopim), EngineCostModel(nopim)):
        with pytest.raises(ConfigError, match="no PIM units"):
            m.pim_ns(PimExperts([1], SHAPE))
    with pytest.raises(ConfigError, match="integers >= 0"):
        PimExperts([-1], SHAPE)
    with pytest.raises(ConfigError, match="mapping 'xx'"):
        PimExperts([1], SHAPE, mapping="xx")
    with pytest.raises(ConfigError, match="collective 'bcast'"):
        Collective("bcast", 1.0)
    with pytest.raises(ConfigError, match="square"):
        EpExchange("dispatch", [[1, 2]], 64)
    with pytest.raises(ConfigError, match="hidden must be an integer >= 1"):
        ExpertShape(0, 4)


def test_a_systems_gpu_calibration_reaches_the_pim_host_steps():
    """The GPU step between two PIM GEMVs is priced with the system's own calibration: a
    slower GPU launch (t0) makes every PIM expert program longer by that much per step."""
    base = EngineCostModel("1xb200")
    slow = EngineCostModel(hw.get_system("1xb200", {"gpu_calibration.t0_gemm_bf16_s": 10e-6}))
    op = PimExperts([2, 1], SHAPE, order="expert")  # one GPU step per expert
    t0 = base.system.gpu_calibration.t0_gemm_bf16_s
    assert slow.pim_ns(op) - base.pim_ns(op) == pytest.approx(2 * (10e-6 - t0) * 1e9, rel=0.02)


def test_pim_cost_table_takes_a_resolved_gpu():
    from sieve.pim.costs import PimCostTable

    t = PimCostTable("b200-hbm3e-pim", order="expert", gpu=hw.get_gpu("b200"))
    assert t.expert_ns(FfnShape(512, 256), 1) > 0
