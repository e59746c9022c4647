"""Schedulers (sieve.sched): properties, the seed's algorithm step by step, baselines, ablations.

Everything here runs under one estimator, the seed's roofline (fast); the engine appears only
where a test needs observations.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve import hw
from sieve.errors import ConfigError
from sieve.hw.cost import ExpertShape, Gemm, GroupedExperts
from sieve.sched.baselines import allexp, duplex, noexp, pimoe
from sieve.sched.estimator import Estimator
from sieve.sched.greedy import sieve, sieve_reference, split_estimates
from sieve.sched.methods import METHODS_MAIN, SCHEDULERS, get_method, schedule
from sieve.sched.optimal import MAX_EXPERTS, optimal, optimal_on_pim
from sieve.sched.partition import LayerLoad, Partition

SHAPE = ExpertShape(2880, 2880)  # gpt-oss-120b's expert (models-and-traces.md §A)
COST = hw.RooflineCostModel("4xb200")


def est(pim: str = "ema", fixed: float = 0.0) -> Estimator:
    """The roofline estimator; ``fixed`` > 0: a "layer"-order program's once-paid PIM time has
    been observed (TP and every EP group size)."""
    e = Estimator(COST, SHAPE, pim=pim)
    if fixed:
        e.observe([], [], fixed_ns=fixed)
        for g in (1, 2, 4, 8, 16, 32, 64, 128, 256):
            e.observe([], [], "ep", g, fixed_ns=fixed)
    return e


fixed_st = st.sampled_from([0.0, 3000.0])


counts_st = st.lists(st.integers(0, 64), min_size=1, max_size=48).map(np.array)
load_st = st.builds(
    LayerLoad, counts_st, st.just(SHAPE),
    pim_busy_ns=st.floats(0, 2e5), comm_ns=st.floats(0, 2e5),
    gpu_fixed=st.sampled_from([(), (Gemm(32, 4096, 2880),),
                               (Gemm(64, 5120, 2880), GroupedExperts([64], SHAPE))]))


def T(load: LayerLoad, e: Estimator, on_pim: np.ndarray) -> float:
    return max(split_estimates(load, e, on_pim))


# ---- properties of every method ------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(load=load_st, method=st.sampled_from(sorted(set(SCHEDULERS) - {"optimal"})))
def test_partitions_are_disjoint_and_complete(load, method):
    p = schedule(method, load, est())
    active = set(np.flatnonzero(load.counts).tolist())
    gpu, pim = set(p.gpu_experts.tolist()), set(p.pim_experts.tolist())
    assert gpu.isdisjoint(pim) and gpu | pim == active
    assert not p.on_pim[load.counts == 0].any()
    assert np.array_equal(p.gpu_counts + p.pim_counts, load.counts)
    assert p.method == method


@settings(max_examples=150, deadline=None)
@given(load=load_st, fixed=fixed_st)
def test_sieve_estimate_is_never_worse_than_allexp_or_noexp(load, fixed):
    e = est(fixed=fixed)
    s = sieve(load, e)
    assert s.est_total_ns <= allexp(load, e).est_total_ns * (1 + 1e-12)
    assert s.est_total_ns <= noexp(load, e).est_total_ns * (1 + 1e-12)


@settings(max_examples=150, deadline=None)
@given(load=load_st, fixed=fixed_st)
def test_greedy_finds_the_best_prefix_by_popularity(load, fixed):
    """T_total over the sorted prefixes is quasi-convex (T_GPU grows, T_PIM shrinks), so the
    first non-decrease is the best prefix."""
    e = est(fixed=fixed)
    s = sieve(load, e)
    c = load.counts
    active = np.flatnonzero(c)
    order = active[np.argsort(-c[active], kind="stable")]
    best = min(T(load, e, np.isin(np.arange(c.size), order[k:])) for k in range(order.size + 1))
    assert s.est_total_ns <= best * (1 + 1e-9)


@settings(max_examples=150, deadline=None)
@given(load=load_st, attn=st.booleans(), comm=st.booleans(), fixed=fixed_st)
def test_compiled_loop_makes_the_reference_decisions(load, attn, comm, fixed):
    e = est(fixed=fixed)
    p = sieve(load, e, attention_aware=attn, comm_aware=comm)
    ref, steps = sieve_reference(load, e, attention_aware=attn, comm_aware=comm)
    assert np.array_equal(p.on_pim, ref) and p.steps == steps
    # the compiled loop's estimates equal the cost model's (float rounding only)
    t_comm, t_gpu, t_pim = split_estimates(load, e, p.on_pim)
    assert p.est_gpu_ns == pytest.approx(t_gpu, rel=1e-9, abs=1e-6)
    assert p.est_pim_ns == pytest.approx(t_pim, rel=1e-9, abs=1e-6)
    assert p.est_comm_ns == t_comm


@settings(max_examples=60, deadline=None)
@given(load=load_st)
def test_methods_are_deterministic(load):
    for m in ("sieve", "pimoe", "duplex"):
        a, b = schedule(m, load, est()), schedule(m, load, est())
        assert np.array_equal(a.on_pim, b.on_pim) and a.est_total_ns == b.est_total_ns


# ---- degenerate cases ------------------------------------------------------------------------


def test_one_token_experts_on_an_idle_pim_go_to_pim():
    """Every expert has one token and PIM is idle: while all of them together cost PIM less than
    one expert's weight load costs the GPU, moving any would only add GPU time."""
    e = est()
    p1 = float(e.pim_expert_ns([1])[0])
    g1 = e.gpu_ns([1])
    n = int(g1 // p1)  # the most experts that keep sum p(1) <= T_GPU(one expert)
    assert n >= 4
    load = LayerLoad(np.ones(n, dtype=np.int64), SHAPE)
    assert sieve(load, e).pim_experts.size == n


def test_many_token_experts_go_to_the_gpu():
    """When even the least popular expert costs PIM more than the GPU needs for all of them,
    every move lowers T_total: all go to the GPU."""
    e = est()
    counts = np.full(8, 256)
    load = LayerLoad(counts, SHAPE)
    assert float(e.pim_expert_ns([256])[0]) > e.gpu_ns(counts)
    assert sieve(load, e).pim_experts.size == 0


def test_noexp_puts_nothing_on_pim_and_allexp_everything():
    load = LayerLoad([3, 0, 1, 7], SHAPE, pim_busy_ns=1e4)
    assert noexp(load, est()).pim_experts.size == 0
    assert list(allexp(load, est()).pim_experts) == [0, 2, 3]
    assert noexp(load, est()).est_pim_ns == 1e4  # attention stays on PIM


def test_gpu_only_has_no_pim_at_all():
    p = schedule("gpu-only", LayerLoad([3, 1], SHAPE, pim_busy_ns=1e4), est())
    assert not p.attention_on_pim and p.pim_experts.size == 0 and p.est_pim_ns == 0.0


def test_no_activated_expert():
    load = LayerLoad(np.zeros(16, dtype=np.int64), SHAPE, pim_busy_ns=5.0)
    for m in METHODS_MAIN:
        p = schedule(m, load, est())
        assert p.pim_experts.size == 0 and p.gpu_experts.size == 0


# ---- the seed's algorithm, by hand ------------------------------------------------------------


def test_hand_checkable_three_experts():
    """gpt-oss-120b's expert on 4xb200, counts (9, 1, 4), attention 2 us, T_comm 1 us.

    Closed forms from spec numbers only: an expert's bf16 weights are (2I + I) H 2 bytes,
    read at 8000 GB/s; a token adds 2 (2I + I) H FLOPs at 2250 TFLOPS and
    (2H + 2*2I + 2I + 2H) bytes; on PIM a token costs 2 (2I + I) H FLOPs at the PIM peak.
    Expected: move expert 0 (9 tokens: T drops from 12.5 to 6.3 us), stop before expert 2
    (T would rise to 12.5 us)."""
    e = est()
    g, mem = COST.system.gpu, COST.system.memory
    h = i = 2880
    w = 3 * i * h * 2 / g.hbm_bw_gbs                      # ns per GPU-side expert
    a = (2 * h + 2 * 2 * i + 2 * i + 2 * h) / g.hbm_bw_gbs  # ns per token, bytes
    f = 2 * 3 * i * h / (g.bf16_tflops * 1e3)              # ns per token, compute
    p = 2 * 3 * i * h / (mem.pim_peak_tflops * 1e3)        # ns per token on PIM
    load = LayerLoad([9, 1, 4], SHAPE, pim_busy_ns=2000.0, comm_ns=1000.0)
    t0 = 2000.0 + 14 * p
    t1 = max(w + 9 * a, 9 * f, 2000.0 + 5 * p)
    t2 = max(2 * w + 13 * a, 13 * f, 2000.0 + 1 * p)
    assert t1 < t0 and t2 > t1  # the instance is what the docstring says
    s = sieve(load, e)
    assert s.gpu_experts.tolist() == [0] and s.pim_experts.tolist() == [1, 2]
    assert s.est_total_ns == pytest.approx(t1, rel=1e-9)
    assert s.est_pim_ns == pytest.approx(2000.0 + 5 * p, rel=1e-9)
    assert s.steps == 2  # two candidate moves evaluated, one accepted


# ---- the exhaustive optimum -----------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(counts=st.lists(st.integers(0, 40), min_size=1, max_size=10).map(np.array),
       busy=st.floats(0, 1e5), comm=st.floats(0, 1e5), fixed=fixed_st)
def test_optimal_is_the_brute_force_minimum_and_bounds_sieve(counts, busy, comm, fixed):
    e = est(fixed=fixed)
    load = LayerLoad(counts, SHAPE, pim_busy_ns=busy, comm_ns=comm)
    active = np.flatnonzero(counts)
    brute = min(T(load, e, np.isin(np.arange(counts.size), sub))
                for k in range(active.size + 1) for sub in itertools.combinations(active, k))
    mask, t = optimal_on_pim(load, e)
    assert t == pytest.approx(brute, rel=1e-9)
    assert T(load, e, mask) == pytest.approx(brute, rel=1e-9)
    assert optimal(load, e).est_total_ns <= sieve(load, e).est_total_ns * (1 + 1e-9)


def test_optimal_refuses_large_layers_and_non_affine_models():
    with pytest.raises(ConfigError, match="exceed the exhaustive limit"):
        optimal(LayerLoad(np.ones(MAX_EXPERTS + 1, dtype=np.int64), SHAPE), est())
    from sieve.pim.cost import EngineCostModel

    with pytest.raises(ConfigError, match="roofline GPU estimate"):
        optimal(LayerLoad([1, 2], SHAPE), Estimator(EngineCostModel("4xb200"), SHAPE))


# ---- baselines ------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(load=load_st, fixed=fixed_st)
def test_pimoe_moves_busiest_groups_top_expert_until_gpu_exceeds_pim(load, fixed):
    e = est(fixed=fixed)
    p = pimoe(load, e)
    assert p.mapping == "ep" and p.placement is not None
    n_groups = COST.system.memory.org.total_pseudochannels // p.pcs_per_expert
    assert np.array_equal(p.placement, np.arange(load.counts.size) % n_groups)
    t = e.pim_expert_ns(load.counts, "ep", p.pcs_per_expert)
    loads = np.bincount(p.placement, weights=np.where(p.on_pim, t, 0), minlength=n_groups)
    busy_groups = np.bincount(p.placement, weights=p.on_pim, minlength=n_groups) > 0
    loads[busy_groups] += fixed
    assert np.allclose(loads, p.est_group_pim_ns)
    # stop rule: the GPU's experts (alone) exceed the busiest group, or nothing is left on PIM
    gpu_alone = e.gpu_ns(p.gpu_counts)
    assert gpu_alone > loads.max(initial=0) or p.pim_experts.size == 0 or \
        p.gpu_experts.size == 0 and gpu_alone == 0 and loads.max() == 0


def test_pimoe_is_blind_to_attention_and_communication():
    load = LayerLoad([30, 2, 1, 0, 5, 1, 1, 9], SHAPE)
    base = pimoe(load, est())
    for busy, comm in ((1e6, 0.0), (0.0, 1e6)):
        p = pimoe(LayerLoad(load.counts, SHAPE, pim_busy_ns=busy, comm_ns=comm), est())
        assert np.array_equal(p.on_pim, base.on_pim)


@settings(max_examples=100, deadline=None)
@given(load=load_st)
def test_duplex_moves_the_fewest_token_experts_from_the_gpu(load):
    p = duplex(load, est())
    c = load.counts
    if p.pim_experts.size and p.gpu_experts.size:
        assert c[p.pim_experts].max() <= c[p.gpu_experts].min()


# ---- ablations --------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(load=load_st)
def test_ablations_decide_without_their_ingredient(load):
    e = est()
    no_attn = schedule("sieve-noattn", load, e)
    blind = sieve(LayerLoad(load.counts, SHAPE, 0.0, load.comm_ns, load.gpu_fixed), e)
    assert np.array_equal(no_attn.on_pim, blind.on_pim)
    no_comm = schedule("sieve-nocomm", load, e)
    blind = sieve(LayerLoad(load.counts, SHAPE, load.pim_busy_ns, 0.0, load.gpu_fixed), e)
    assert np.array_equal(no_comm.on_pim, blind.on_pim)
    no_fixed = schedule("sieve-nofixed", load, e)
    blind = sieve(LayerLoad(load.counts, SHAPE, load.pim_busy_ns, load.comm_ns, ()), e)
    assert np.array_equal(no_fixed.on_pim, blind.on_pim)
    # the reported estimates keep the full information
    assert no_attn.est_pim_ns == pytest.approx(split_estimates(load, e, no_attn.on_pim)[2])
    assert no_fixed.est_gpu_ns == pytest.approx(split_estimates(load, e, no_fixed.on_pim)[1])


def test_attention_awareness_moves_experts_off_a_busy_pim():
    load = LayerLoad([6, 5, 4, 3, 2, 1, 1, 1], SHAPE, pim_busy_ns=0.0)
    busy = LayerLoad(load.counts, SHAPE, pim_busy_ns=3e4)
    e = est()
    assert sieve(busy, e).pim_experts.size < sieve(load, e).pim_experts.size
    assert np.array_equal(schedule("sieve-noattn", busy, e).on_pim, sieve(load, e).on_pim)


def test_registry_errors_and_names():
    assert get_method("SIEVE").name == "sieve"
    with pytest.raises(ConfigError, match=r"scheduler 'fast': unknown \(known: allexp, duplex"):
        get_method("fast")
    assert set(METHODS_MAIN) <= set(SCHEDULERS)


def test_inputs_are_validated():
    with pytest.raises(ConfigError, match="integers >= 0"):
        LayerLoad([1, -2], SHAPE)
    with pytest.raises(ConfigError, match="pim_busy_ns must be finite and >= 0"):
        LayerLoad([1], SHAPE, pim_busy_ns=-1.0)
    with pytest.raises(ConfigError, match="shape must be an ExpertShape"):
        LayerLoad([1], (2880, 2880))
    with pytest.raises(ConfigError, match="gpu_fixed must hold GPU operations"):
        LayerLoad([1], SHAPE, gpu_fixed=("qkv",))
    with pytest.raises(ConfigError, match="pim source 'exact'"):
        Estimator(COST, SHAPE, pim="exact")
    with pytest.raises(ConfigError, match="CostModel"):
        Estimator("4xb200", SHAPE)
    with pytest.raises(ConfigError, match="on_pim has shape"):
        Partition("x", np.array([1, 2]), np.array([True]))


def test_large_counts_beyond_the_table_use_the_roofline():
    e = est()
    load = LayerLoad([5000, 1], SHAPE)
    p = sieve(load, e)
    ref, _ = sieve_reference(load, e)
    assert np.array_equal(p.on_pim, ref)


def test_sieve_with_the_precise_gpu_model_uses_the_reference_loop():
    from sieve.pim.cost import EngineCostModel

    e = Estimator(EngineCostModel("4xb200"), SHAPE)
    load = LayerLoad([12, 1, 3, 0, 1], SHAPE, pim_busy_ns=3000.0)
    p = sieve(load, e)
    on_pim, _ = sieve_reference(load, e)
    assert np.array_equal(p.on_pim, on_pim)
    assert p.est_total_ns <= allexp(load, e).est_total_ns


def test_a_once_paid_pim_time_counts_only_while_pim_has_experts():
    """With a "layer"-order program's fixed time, the last expert leaving PIM also removes it:
    a layer whose PIM work is only that fixed time goes entirely to an idle GPU."""
    load = LayerLoad([1, 1], SHAPE)
    e = est(fixed=1e6)
    p = sieve(load, e)
    assert p.pim_experts.size == 0 and p.est_pim_ns == 0.0
    assert allexp(load, e).est_pim_ns == pytest.approx(1e6 + e.pim_expert_ns([1, 1]).sum())
