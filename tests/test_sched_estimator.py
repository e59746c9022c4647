"""The runtime PIM cost table (EMA, roofline fallback) and scheduling a trace without the step
simulator: convergence, the one-time fallback, no look into the future, the CLI."""

from __future__ import annotations

import numpy as np
import pytest

from sieve import hw
from sieve.cli import main
from sieve.errors import ConfigError
from sieve.hw.cost import ExpertShape, PimExperts
from sieve.model import get_model
from sieve.pim.cost import EngineCostModel
from sieve.sched.estimator import DEFAULT_ALPHA, EmaCostTable, Estimator
from sieve.sched.trace import (
    ep_copies,
    expert_shape,
    layer_gpu_ops,
    layer_loads,
    schedule_trace,
    token_gpus,
)
from sieve.workload.router import SyntheticRouter

SHAPE = ExpertShape(2880, 2880)


def test_unobserved_counts_use_the_roofline_once():
    r = hw.RooflineCostModel("1xb200")
    e = Estimator(r, SHAPE)
    slope = float(r.pim_expert_ns(SHAPE, 1))
    assert np.allclose(e.pim_expert_ns([1, 2, 7, 0]), [slope, 2 * slope, 7 * slope, 0])
    e.observe([2], [123.0])
    assert e.pim_expert_ns([2])[0] == 123.0  # the first observation replaces the fallback
    assert e.pim_expert_ns([3])[0] == pytest.approx(3 * slope)


def test_ema_update_rule():
    t = EmaCostTable(10.0, alpha=0.25)
    t.update([4, 4, 4], [100.0, 200.0, 0.0])  # applied in order
    v = 100.0
    v += 0.25 * (200.0 - v)
    v += 0.25 * (0.0 - v)
    assert t.estimate_ns([4])[0] == pytest.approx(v)
    assert t.n_obs[4] == 3 and t.observed(4) and not t.observed(5)


def test_ema_converges_on_a_stationary_stream():
    """Observations = truth(n) + noise: after a few dozen updates every entry is within four
    standard deviations of the EMA's stationary spread, sigma * sqrt(a / (2 - a))."""
    rng = np.random.default_rng(7)
    truth = {n: 800.0 * n + 300.0 for n in range(1, 9)}
    sigma = 50.0
    t = EmaCostTable(500.0)
    for _ in range(40):
        n = rng.integers(1, 9, 16)
        t.update(n, [truth[int(k)] + sigma * rng.standard_normal() for k in n])
    spread = sigma * np.sqrt(DEFAULT_ALPHA / (2 - DEFAULT_ALPHA))
    for n, v in truth.items():
        assert abs(t.estimate_ns([n])[0] - v) < 4 * spread


def test_table_grows_and_refuses_bad_observations():
    t = EmaCostTable(2.0, size=4)
    assert t.estimate_ns([1000])[0] == 2000.0
    t.update([1000], [5.0])
    assert t.estimate_ns([1000])[0] == 5.0
    for bad in ([-1.0], [float("nan")], [1.0, 2.0]):
        with pytest.raises(ConfigError, match="observed_ns"):
            t.update([3], bad)
    with pytest.raises(ConfigError, match="alpha must be in"):
        EmaCostTable(1.0, alpha=0.0)


def test_roofline_source_never_learns_and_model_source_asks_the_engine():
    r = hw.RooflineCostModel("1xb200")
    e = Estimator(r, SHAPE, pim="roofline")
    before = e.pim_expert_ns([2]).copy()
    e.observe([2], [1.0])
    assert np.array_equal(e.pim_expert_ns([2]), before)
    eng = EngineCostModel("1xb200")
    small = ExpertShape(512, 256)
    m = Estimator(eng, small, pim="model")
    assert m.pim_expert_ns([3])[0] == eng.pim_ns(PimExperts([3], small, order="expert"))


# ---- scheduling a trace alone -------------------------------------------------------------------

MODEL = get_model("qwen3-30b-a3b")


@pytest.fixture(scope="module")
def trace():
    return SyntheticRouter("qwen3-30b-a3b", seed=3).generate(12, 4)


def test_per_gpu_loads_partition_the_global_counts(trace):
    system = hw.get_system("4xb200", {"n_gpus": 2})
    cost = hw.RooflineCostModel(system)
    loads = layer_loads(trace, 0, MODEL, system, cost)
    counts = trace.counts(0)
    assert len(loads) == trace.n_layers and all(len(r) == 2 for r in loads)
    for li, row in enumerate(loads):
        assert np.array_equal(np.concatenate([x.counts for x in row]), counts[li])
        assert row[0].comm_ns == row[1].comm_ns > 0
        assert all(x.pim_busy_ns > 0 and x.gpu_fixed for x in row)
    one = layer_loads(trace, 0, MODEL, hw.get_system("1xb200"), hw.RooflineCostModel("1xb200"))
    assert one[0][0].comm_ns == 0.0


def test_copy_matrix_counts_every_route_once(trace):
    ids = np.asarray(trace.expert_ids[trace.step_slice(1)], dtype=np.int64)
    tok = token_gpus(trace, 1, 4)
    placement = np.repeat(np.arange(4), MODEL.n_experts // 4)
    c = ep_copies(ids, tok, placement, 4)
    assert c.shape == (trace.n_layers, 4, 4)
    assert (c.sum(axis=(1, 2)) == ids.shape[0] * MODEL.top_k).all()
    assert np.array_equal(c[0].sum(axis=0), np.bincount(placement[ids[:, 0, :]].ravel(),
                                                        minlength=4))


def test_layer_gpu_ops_cover_mixer_router_and_shared_experts():
    m35 = get_model("qwen3.5-397b-a17b")
    assert m35.layer_types[3] == "full"
    ops = layer_gpu_ops(m35, 3, 16)
    kinds = [type(o).__name__ for o in ops]
    # norm, RoPE + KV write, norm; q/k/v(+gate) and o projections; router; shared experts
    assert kinds == ["MemoryStream"] * 3 + ["Gemm"] * 3 + ["GroupedExperts"]
    assert layer_gpu_ops(MODEL, 0, 0) == ()
    assert layer_gpu_ops(m35, 0, 16) == ()  # a Gated-DeltaNet layer: none, as in the step
    from sieve.hw.layer_ops import fixed_gpu_ops

    assert repr(ops) == repr(fixed_gpu_ops(m35, 3, 16))  # the step simulator's description
    ops = ops[3:]  # the GEMMs and experts
    r = hw.RooflineCostModel("1xb200")
    nbytes = sum(r.gpu_terms(o)[0] for o in ops[:2])
    mixer = m35.mixer_params(3)
    assert nbytes >= mixer * 2 * 0.99  # the projections' bf16 weights are read


def test_a_scheduler_never_sees_the_future(trace):
    """Decisions for steps 0..1 are the same whether or not later steps exist, with the engine
    feeding the EMA tables after every layer."""
    system = hw.get_system("1xb200")
    obs = EngineCostModel(system)
    full = schedule_trace(trace, MODEL, system, "sieve", observe=obs, steps=[0, 1, 2, 3])
    head = schedule_trace(trace.steps(0, 2), MODEL, system, "sieve", observe=obs)
    assert len(head) == 2 * trace.n_layers
    for a, b in zip(head, full):
        assert (a.step, a.layer, a.gpu) == (b.step, b.layer, b.gpu)
        assert np.array_equal(a.partition.on_pim, b.partition.on_pim)


def test_observations_converge_the_table_within_a_few_steps(trace):
    """The seed: the table "converges within the first few iterations". Fraction of PIM-side
    experts whose count was never observed before the decision, per step."""
    system = hw.get_system("1xb200")
    obs = EngineCostModel(system)
    shape = expert_shape(MODEL)
    est = Estimator(hw.RooflineCostModel(system), shape)
    from sieve.sched.greedy import sieve

    unseen = []
    for step in range(trace.n_steps):
        loads = layer_loads(trace, step, MODEL, system, est.cost)
        miss = tot = 0
        for row in loads:
            p = sieve(row[0], est)
            ids = p.pim_experts
            miss += sum(not est.table("tp").observed(int(p.counts[e])) for e in ids)
            tot += ids.size
            est.observe(p.counts[ids], [obs.pim_ns(PimExperts([int(p.counts[e])], shape,
                                                              order="expert")) for e in ids])
        unseen.append(miss / max(tot, 1))
    assert unseen[0] > 0 and unseen[-1] == 0.0 and unseen[-1] <= unseen[0]


# ---- CLI ----------------------------------------------------------------------------------------


def test_cli_schedule_prints_one_row_per_gpu(capsys):
    assert main(["schedule", "--model", "qwen3-30b-a3b", "--batch", "16", "--system",
                 "4xb200"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [r for r in out if r and not r.startswith(("#", "layer"))]
    assert len(rows) == 4 and all(r.split()[0] == "0" for r in rows)
    assert main(["schedule", "--model", "qwen3-30b-a3b", "--batch", "4", "--method",
                 "pimoe", "--layer", "all", "--system", "1xb200"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len([r for r in out if r and not r.startswith(("#", "layer"))]) == MODEL.n_moe_layers


@pytest.mark.parametrize("argv, msg", [
    (["--method", "fast"], "scheduler 'fast': unknown"),
    (["--batch", "0"], "argument --batch: '0' is not an integer in [1, 65536]"),
    (["--layer", "999"], "not a MoE layer"),
    (["--system", "3xb200"], "system '3xb200': unknown"),
    (["--model", "nope"], "model 'nope'"),
])
def test_cli_schedule_errors(capsys, argv, msg):
    base = {"--model": "qwen3-30b-a3b", "--batch": "4"}
    args = dict(base)
    args.update(dict(zip(argv[::2], argv[1::2])))
    flat = ["schedule"] + [x for kv in args.items() for x in kv]
    assert main(flat) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_filled_table_reads_unobserved_counts_from_observed_ones():
    """sieve-cp's reading of the table (EmaCostTable.filled): roofline with no observation,
    the observed / roofline ratio with one, the line between neighbours inside the observed
    range and the least-squares line beyond it, never below the roofline; observed counts and
    the seed's reading (values) untouched; recomputed after an update."""
    t = EmaCostTable(10.0, size=17)
    assert np.array_equal(t.filled(), t.values)  # nothing observed: the seed's fallback
    t.update([4], [60.0])  # 1.5x the roofline at 4 tokens
    f = t.filled()
    assert f[4] == 60.0 and f[0] == 0.0
    assert np.allclose(f[[1, 2, 8, 16]], [15.0, 30.0, 120.0, 240.0])
    assert np.allclose(t.values[[1, 8]], [10.0, 80.0])  # the seed's reading unchanged
    t.update([8, 12], [100.0, 130.0])  # affine 20 + 10 n up to 8, flatter after
    f = t.filled()
    assert f[6] == pytest.approx(80.0) and f[10] == pytest.approx(115.0)  # between neighbours
    obs = np.array([4.0, 8.0, 12.0])
    b, a = np.polyfit(obs, [60.0, 100.0, 130.0], 1)
    assert f[2] == pytest.approx(max(a + 2 * b, 20.0))  # beyond: the fitted line
    assert f[16] == pytest.approx(max(a + 16 * b, 160.0))
    assert (f >= np.arange(f.size) * 10.0 - 1e-9).all()  # never below the roofline
    t.update([12], [60.0])  # a drop below the roofline slope: the fit is clamped
    f2 = t.filled()
    assert f2 is not f and f2[16] >= 160.0 - 1e-9
    assert f2[12] == pytest.approx(130.0 + 0.25 * (60.0 - 130.0))  # observed: its EMA value


def test_compiled_fill_matches_the_numpy_reference():
    """EmaCostTable.filled runs in the compiled loop's module (about 1 us for 257 counts, where
    numpy took 30): the same values as the numpy reference on random tables; bad buffers are
    refused, not read."""
    from sieve.sched import _greedy

    rng = np.random.default_rng(7)
    for _ in range(300):
        t = EmaCostTable(float(rng.uniform(1, 20)), size=int(rng.integers(2, 60)))
        for _ in range(int(rng.integers(0, 6))):
            c = rng.integers(1, t.values.size + 5, int(rng.integers(1, 4)))
            t.update(c, rng.uniform(0, 500, c.size))
        assert np.allclose(t.filled(), t._filled_reference(), rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="one length"):
        _greedy.fill_unobserved(np.zeros(4), np.zeros(3, dtype=np.int64), 1.0, np.zeros(4))
