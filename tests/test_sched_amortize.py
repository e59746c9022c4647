"""Skipping decisions that do not pay (sieve.sched.amortize): the memo's rule, and the step
simulator charging no decision time for a skipped decision and running the start split."""

from __future__ import annotations

import numpy as np
import pytest

from sieve.errors import ConfigError
from sieve.sched.amortize import MAX_SKIP, DecisionMemo
from sieve.system.run import RunConfig, simulate_run


def _pattern(memo: DecisionMemo, key, gains, cost=1.0, n=40):
    """Decide or skip ``n`` times; each decision gains the next value of ``gains``."""
    out, it = [], iter(gains)
    for _ in range(n):
        if memo.skip(key):
            out.append("s")
        else:
            out.append("d")
            memo.record(key, next(it), cost)
    return "".join(out)


def test_skips_double_up_to_the_bound_and_reset_when_deciding_pays():
    m = DecisionMemo()
    # never pays: 1, 2, 4, 8, 8, ... skips after each decision
    seq = _pattern(m, "L", [0.5] * 40, n=1 + 1 + 1 + 2 + 1 + 4 + 1 + 8 + 1 + 8)
    assert seq == "ds" + "dss" + "dssss" + "d" + "s" * 8 + "d" + "s" * 8
    assert MAX_SKIP == 8
    # a decision that pays resets: the layer decides every time again
    m.record("L", 2.0, 1.0)
    assert m.skips_left("L") == 0 and _pattern(m, "L", [5.0] * 10, n=10) == "d" * 10
    # layers are independent; an equal gain and cost counts as paying; no estimate decides
    m.record("A", 0.1, 1.0)
    assert m.skips_left("A") == 1 and m.skips_left("B") == 0
    m.record("B", 1.0, 1.0)
    assert not m.skip("B")
    m.record("C", None, 1.0)
    assert m.skips_left("B") == m.skips_left("C") == 0


def test_a_larger_load_is_decided():
    """A skip is taken only while the layer's load is no larger than at the decision that did
    not pay; a larger load decides (and a decision that pays forgets the load)."""
    m = DecisionMemo()
    m.record("L", 0.1, 1.0, load=5)
    assert m.skips_left("L") == 1
    assert not m.skip("L", 6) and m.skips_left("L") == 1  # grew: decided, skip kept
    assert m.skip("L", 5) and m.skips_left("L") == 0
    m.record("L", 0.1, 1.0, load=3)  # backoff 2, at load 3
    assert m.skip("L", 1) and not m.skip("L", 4) and m.skip("L") and m.skips_left("L") == 0
    m.record("L", 2.0, 1.0, load=3)  # pays: no skips, no remembered load
    m.record("L", 0.1, 1.0)  # no load given: any load skips
    assert m.skip("L", 10 ** 6)


def test_a_layer_without_evidence_borrows_the_gpus_latest_verdict_once():
    """A layer whose only decisions had no estimate (None) skips once where the GPU's latest
    decision on evidence did not pay and the load is no larger; then decides on its own."""
    m = DecisionMemo()
    m.record("first", None, 1.0, load=3)  # cold: no estimate
    assert not m.skip("first", 3)  # nothing on evidence yet: decide
    m.record("later", 0.2, 1.0, load=4)  # on evidence, did not pay
    assert not m.skip("first", 5)  # larger load than the verdict's: decide
    assert m.skip("first", 4)  # borrowed once
    assert not m.skip("first", 4)  # then its own decision
    m.record("first", 0.3, 1.0, load=4)  # its own verdict from now on
    assert m.skips_left("first") == 1 and m.skip("first", 4) and not m.skip("first", 4)
    # a latest verdict that paid lends nothing; a layer that decided on evidence borrows nothing
    m.record("later", 5.0, 1.0, load=4)
    assert not m.skip("fresh", 1)
    m.record("own", 5.0, 1.0, load=1)
    m.record("later", 0.2, 1.0, load=4)
    assert not m.skip("own", 1) and m.skip("fresh", 1)
    # max_skip 0 never skips, borrowed or not
    z = DecisionMemo(max_skip=0)
    z.record("a", 0.1, 1.0)
    assert not z.skip("b")


def test_load_gates_layer_none_and_pooled():
    """The gate of a scheduled skip: "layer" takes it only at a load no larger than the
    layer's own decision that did not pay; "none" at any load; "pooled" also up to the largest
    load at which that layer did not pay on any GPU sharing the pool, below every load at
    which it paid there. Other layers' verdicts never enter."""
    layer, none = DecisionMemo(), DecisionMemo(gate="none")
    for m in (layer, none):
        m.record("L", 0.1, 1.0, load=4)
    assert not layer.skip("L", 9) and layer.skip("L", 4)
    assert none.skip("L", 10 ** 6)
    pool: dict = {}
    a, b = DecisionMemo(gate="pooled", pool=pool), DecisionMemo(gate="pooled", pool=pool)
    a.record("L", 0.0, 1.0, load=10)  # GPU a: layer L did not pay at 10
    a.record("M", 0.0, 1.0, load=30)  # another layer: says nothing of L
    b.record("L", 0.2, 1.0, load=4)  # GPU b: did not pay at 4
    assert b.load_bound("L") == 10.0 and b.skips_left("L") == 1
    assert not b.skip("L", 11)  # above every load at which L did not pay
    assert b.skip("L", 8)  # above b's own 4, within the pool's 10
    b.record("L", 0.2, 1.0, load=4)
    a.record("L", 3.0, 1.0, load=7)  # GPU a: L paid at 7, so only loads below 7 count
    assert b.load_bound("L") == 4.0 and not b.skip("L", 5) and b.skip("L", 4)
    assert DecisionMemo(gate="pooled").load_bound("L") == -float("inf")
    with pytest.raises(ConfigError, match="gate 'gpu' unknown"):
        DecisionMemo(gate="gpu")


def test_max_skip_bounds_and_zero_never_skips():
    m = DecisionMemo(max_skip=2)
    assert _pattern(m, 0, [0.0] * 20, n=12) == "ds" + "dss" + "dss" + "dss" + "d"
    assert _pattern(DecisionMemo(max_skip=0), 0, [0.0] * 20, n=6) == "d" * 6
    for bad in (-1, 1.5, True, "8"):
        with pytest.raises(ConfigError, match="max_skip must be an integer >= 0"):
            DecisionMemo(max_skip=bad)


def _run(method: str, batch: int, steps: int, **kw):
    return simulate_run(RunConfig(model="qwen3-30b-a3b", system="1xb200", method=method,
                                  batch=batch, steps=steps, warmup=1, layers=2, seed=0, **kw),
                        keep_steps=True)


def test_the_step_skips_decisions_that_did_not_pay():
    """Qwen3-30B on one B200 at B=2: a decision saves less than its 1.2 us (a dozen experts of
    one or two tokens), so sieve-cp skips the next ones: those run every expert on PIM with
    no scheduler time; sieve-cp-always and a free decision (scheduler_ns=0) never skip. Over
    many steps sieve-cp is no slower than AllExp, the split it starts from, within 1 %, where
    deciding every time loses more."""
    steps = 12
    r = _run("sieve-cp", 2, steps)
    parts = [p for s in r.steps for p in s.partitions]
    skipped = [p for p in parts if p["decision_skipped"]]
    assert len(skipped) >= len(parts) // 2
    assert all(p["experts_gpu"] == 0 and p["experts_pim"] == p["experts_active"]
               for p in skipped)
    for s in r.steps:  # a skipped decision's scheduler task takes no time
        sched = sorted((t for t in s.tasks if t["name"] == "scheduler"),
                       key=lambda t: (t["layer"], t["start_ns"]))
        flags = [p["decision_skipped"] for p in sorted(s.partitions,
                                                        key=lambda p: p["layer"])]
        assert len(sched) == len(flags)
        for t, f in zip(sched, flags):
            assert (t["end_ns"] - t["start_ns"] == 0.0) == f
    for kw, method in (({}, "sieve-cp-always"), ({"scheduler_ns": 0.0}, "sieve-cp")):
        other = _run(method, 2, 3, **kw)
        assert not any(p["decision_skipped"] for s in other.steps for p in s.partitions)
    allexp = _run("allexp", 2, steps).row["throughput_tok_s_gpu"]
    always = _run("sieve-cp-always", 2, steps).row["throughput_tok_s_gpu"]
    mine = r.row["throughput_tok_s_gpu"]
    assert mine >= 0.99 * allexp
    assert mine > always


def test_expert_parallel_skips_only_what_did_not_grow():
    """gpt-oss-120b on four B200s at B=8: a GPU's share of a layer swings between one expert
    with one token (nothing to gain) and a dozen tokens (several us to gain). sieve-cp never
    skips a decision whose layer brings this GPU more token-expert pairs than the decision
    that did not pay, so it loses nothing to deciding every time."""
    kw = dict(model="gpt-oss-120b", system="4xb200", batch=8, steps=4, warmup=1, layers=2,
              seed=0)
    a = simulate_run(RunConfig(method="sieve-cp", **kw), keep_steps=True)
    b = simulate_run(RunConfig(method="sieve-cp-always", **kw), keep_steps=True)
    assert a.row["throughput_tok_s_gpu"] >= 0.998 * b.row["throughput_tok_s_gpu"]
    for s in a.steps:
        for p in s.partitions:
            if p["decision_skipped"]:
                assert p["experts_gpu"] == 0


def test_a_layer_whose_decisions_pay_decides_every_step():
    """Qwen3-30B at B=64: every decision saves tens of us (more than its 6 us), so none is
    skipped and sieve-cp is sieve-cp-always, step for step."""
    a, b = _run("sieve-cp", 64, 3), _run("sieve-cp-always", 64, 3)
    assert not any(p["decision_skipped"] for s in a.steps for p in s.partitions)
    assert a.row["tpot_ms"] == b.row["tpot_ms"]
    assert [np.asarray(p["experts_gpu"]).item() for s in a.steps for p in s.partitions] == \
        [np.asarray(p["experts_gpu"]).item() for s in b.steps for p in s.partitions]


def test_a_skip_runs_the_split_its_decision_recorded():
    """``record(..., split)``: the skips scheduled by a decision that did not pay run the split
    it names ("pim", the starting split, unless "gpu"); a borrowed verdict borrows its split;
    a decision that pays leaves nothing to run; any other split is refused."""
    m = DecisionMemo()
    assert m.split("L") == "pim"  # unknown: the starting split
    m.record("L", 0.0, 1.0, 10.0, split="gpu")
    assert m.skip("L", 10.0) and m.split("L") == "gpu"
    m.record("L", 0.0, 1.0, 10.0)  # the next non-paying decision chose a mixed split
    assert m.skip("L", 10.0) and m.split("L") == "pim"
    # a layer with no decision on evidence borrows the GPU's latest verdict and its split
    m.record("A", 0.0, 1.0, 5.0, split="gpu")
    assert m.skip("B", 5.0) and m.split("B") == "gpu"
    with pytest.raises(ConfigError, match="split must be 'pim' or 'gpu'"):
        m.record("L", 0.0, 1.0, 10.0, split="all-gpu")


def _gpuskip_run(method, **kw):
    cfg = dict(model="qwen3-30b-a3b", system="1xb200", batch=64, workload="math-500",
               overlap="tbo", layers=4, steps=1, warmup=1,
               system_overrides=(("memory", "b200-hbm3e-pim"),))
    cfg.update(kw)
    return simulate_run(RunConfig(method=method, **cfg), keep_steps=True)


def test_sieve_cp_skips_to_all_on_the_gpu_on_one_gpu_under_two_batch_overlap():
    """sieve-cp at a point where the PIM lane is the bottleneck (Qwen3-30B-A3B MATH-500 B = 64,
    one B200, two-batch overlap): its decisions put every expert on the GPU, count that as
    saving nothing over a split a skip can run, and its skips run that split at no decision
    time; sieve-cp-pimskip's, whose skips run all on PIM, are never skipped there
    (docs/schedulers.md, *Skips that run all on the GPU*)."""
    cp = _gpuskip_run("sieve-cp-pimskip")
    gs = _gpuskip_run("sieve-cp")
    assert not any(p["decision_skipped"] for p in cp.steps[0].partitions)
    skipped = [p for p in gs.steps[0].partitions if p["decision_skipped"]]
    assert skipped and all(p["experts_pim"] == 0 and p["experts_gpu"] > 0 for p in skipped)
    sched = [t for t in gs.steps[0].tasks if t["name"] == "scheduler"]
    assert sum(t["end_ns"] - t["start_ns"] == 0.0 for t in sched) >= len(skipped)
    assert gs.row["throughput_tok_s_gpu"] > cp.row["throughput_tok_s_gpu"]


@pytest.mark.parametrize("kw", [
    dict(overlap="none"),  # the sequential mode: no look
    dict(model="gpt-oss-120b", system="4xb200", batch=16),  # expert parallelism, 4 GPUs
])
def test_pimskip_is_sieve_cp_where_other_gpus_decisions_enter_the_look_or_no_look(kw):
    """Outside one GPU under two-batch overlap sieve-cp-pimskip is sieve-cp to the digit:
    under expert parallelism a GPU's look rates its split with the other GPUs' decisions stood
    in, whose ties do not hold from one step to the next (docs/schedulers.md)."""
    a = _gpuskip_run("sieve-cp", **kw).row
    b = _gpuskip_run("sieve-cp-pimskip", **kw).row
    assert a["throughput_tok_s_gpu"] == b["throughput_tok_s_gpu"]
    assert a["decisions_skipped_frac"] == b["decisions_skipped_frac"]


def test_pimskip_is_sieve_cp_between_unlike_micro_batches():
    """Where one micro-batch holds the prefill (the drawn colocated case: Qwen3-30B-A3B HH-RLHF
    B = 32 on one GPU with Duplex's Logic-PIM), its decode micro-batch's look rates all on the
    GPU and its scan's split alike (the next layer waits on the prefill), but all on the GPU
    delays the prefill's micro-batch, which the look does not see: static ties are for like
    micro-batches only (OWN_RATIO), and there sieve-cp is sieve-cp-pimskip to the digit (it
    lost 7 % here on 4 sampled layers with the ties everywhere; docs/schedulers.md)."""
    from dataclasses import replace

    from sieve.experiments.points import paper_points
    from sieve.system.step import OWN_RATIO

    c = next(p.config for p in paper_points(["sieve-cp"], steps=1, warmup=1, layers=4)
             if p.config.model == "qwen3-30b-a3b" and p.config.workload == "hh-rlhf"
             and p.config.colocated and p.config.n_prefill is None and p.config.batch == 32)
    c = replace(c, overlap="tbo", system_overrides=(("memory", "duplex-logic-pim"),))
    a = simulate_run(replace(c, method="sieve-cp-pimskip")).row
    b = simulate_run(c, keep_steps=True)
    assert b.row["throughput_tok_s_gpu"] == a["throughput_tok_s_gpu"]
    pairs = {}
    for p in b.steps[0].partitions:  # the two micro-batches are unlike at every layer
        pairs.setdefault(p["layer"], {})[p["mb"]] = p["tokens_gpu"] + p["tokens_pim"]
    assert all(max(d.values()) > OWN_RATIO * min(d.values()) for d in pairs.values())


def test_skip_memo_is_kept_per_micro_batch_where_skips_may_run_all_on_the_gpu(monkeypatch):
    """Under two-batch overlap on one GPU sieve-cp keys its skip memo by (layer, micro-batch):
    a skip replays the split its own micro-batch's decision chose (the two micro-batches of a
    layer decide in different places of the overlap; with one key per layer the second's
    all-on-GPU verdict ran the first's skips all on the GPU, -1.0 % over five steps at NeuPIMs
    MATH-500 B = 64, docs/schedulers.md); sieve-cp-pimskip and the sequential mode keep one key
    per layer."""
    seen = []
    record = DecisionMemo.record

    def spy(self, key, *a, **kw):
        seen.append(key)
        return record(self, key, *a, **kw)

    monkeypatch.setattr(DecisionMemo, "record", spy)

    def keys(method, **kw):
        seen.clear()
        _gpuskip_run(method, **kw)
        return set(seen)

    tbo = keys("sieve-cp")
    assert tbo and all(isinstance(k, tuple) and k[1] in (0, 1) for k in tbo)
    assert {k[1] for k in tbo} == {0, 1}
    assert all(isinstance(k, int) for k in keys("sieve-cp-pimskip"))
    assert all(isinstance(k, int) for k in keys("sieve-cp", overlap="none"))


def test_expert_parallel_gates_under_two_batch_overlap():
    """Qwen3.5-397B-A17B on eight B200s (NeuPIMs' preset) at B=16, two-batch overlap: the
    inner layers' decisions save nothing, but a GPU's share of a layer swings from step to
    step, so a per-GPU load gate (sieve-cp-layergate, sieve-cp's before the thirty-fourth
    session) refuses about half of its scheduled skips and almost no layer skips on every GPU.
    sieve-cp's pooled gate (one pool for every GPU's memo) skips more and runs faster; no gate
    skips most and is fastest here (docs/schedulers.md, *The load gate under expert
    parallelism*)."""
    from sieve.model import get_model
    from sieve.sched.methods import get_method
    from sieve.system.step import SystemState

    kw = dict(model="qwen3.5-397b-a17b", system="8xb200", batch=16, workload="hh-rlhf",
              overlap="tbo", layers=4, steps=1, warmup=1,
              system_overrides=(("memory", "neupims-hbm2-pim"),))
    got = {}
    for m in ("sieve-cp-layergate", "sieve-cp", "sieve-cp-nogate"):
        r = simulate_run(RunConfig(method=m, **kw), keep_steps=True)
        parts = r.steps[0].partitions
        got[m] = (sum(p["decision_skipped"] for p in parts), r.row["throughput_tok_s_gpu"])
    assert got["sieve-cp-layergate"][0] < got["sieve-cp"][0] <= got["sieve-cp-nogate"][0]
    assert got["sieve-cp-layergate"][1] < got["sieve-cp"][1] < got["sieve-cp-nogate"][1]
    assert [get_method(m).gate for m in got] == ["layer", "pooled", "none"]
    cfg = RunConfig(method="sieve-cp", **kw)
    memos = SystemState(get_model(cfg.model), cfg.resolve_system(), cfg.options()).memos
    assert len(memos) == 8 and all(m.pool is memos[0].pool for m in memos)
