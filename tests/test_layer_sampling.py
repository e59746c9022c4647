"""Layer sampling (sieve.system.step: ``_sampled_layers``, ``_scaled_layers_ns``): which layers a
sampled step simulates, and how their times stand for the model's.

The scaling is checked on synthetic layer times where the exact answer is known (every layer of
a class takes the same time; under two micro-batches a fill in the first and a drain in the last
layer), and one sampled step against the same step on every layer (docs/validation.md, "Layer
sampling against every layer").
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.model import MODELS, get_model
from sieve.system.step import (
    SAMPLED_LAYERS,
    _layer_class,
    _layer_context,
    _neighbours_kept,
    _sampled_layers,
    _scaled_layers_ns,
    sampled_layers_default,
)

MULTI_CLASS = [n for n in MODELS
               if len({_layer_class(get_model(n), i) for i in range(get_model(n).n_layers)}) > 1]


def _classes(m, layers):
    return Counter(_layer_class(m, i) for i in layers)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 8, 12, 16])
def test_sample_holds_the_ends_and_every_class_its_share(name, k):
    m = get_model(name)
    picks = _sampled_layers(m, k)
    assert picks == sorted(set(picks)) and all(0 <= i < m.n_layers for i in picks)
    every = _classes(m, range(m.n_layers))
    assert set(_classes(m, picks)) == set(every)  # every class sampled
    assert picks[0] == 0
    if k >= 2:
        assert picks[-1] == m.n_layers - 1
    ends = _classes(m, picks[:1] + picks[-1:] if k >= 2 else picks[:1])
    have = _classes(m, picks)
    for c, n in every.items():
        share = k * n / m.n_layers  # its share, rounded by largest remainder, at least one
        lo, hi = max(1, int(share)), max(1, int(share) + 1, ends[c])
        assert lo <= have[c] <= hi, (c, have[c], share)
    # no larger than k unless every class could not fit
    assert len(picks) == k or len(picks) <= len(every) + (2 if k >= 2 else 1)


def test_sample_is_the_even_spread_where_shares_already_hold():
    """Single-class models and samples already in proportion keep the evenly spread layers."""
    for name, k in (("qwen3-30b-a3b", 4), ("mixtral-8x7b", 8), ("gpt-oss-120b", 4),
                    ("qwen3.5-397b-a17b", 8)):
        m = get_model(name)
        spread = sorted({int(round(x)) for x in np.linspace(0, m.n_layers - 1, k)})
        assert _sampled_layers(m, k) == spread


def test_sample_among_the_layers_a_trace_covers():
    m = get_model("qwen3.5-397b-a17b")
    allowed = list(range(10, 30))
    picks = _sampled_layers(m, 4, allowed)
    assert set(picks) <= set(allowed) and picks[0] == 10 and picks[-1] == 29
    assert _sampled_layers(m, None) == list(range(m.n_layers))
    assert _sampled_layers(m, 10 ** 4) == list(range(m.n_layers))


def _synthetic(m, per_class, fill=0.0, drain=0.0):
    """Layer times where every layer of a class takes ``per_class[class]``, plus a fill in the
    first layer and a drain in the last: the exact total and a function giving the end times
    of any sample simulated back to back."""
    t = np.array([per_class[_layer_class(m, i)] for i in range(m.n_layers)])
    exact = t.sum() + fill + drain

    def ends(layers):
        d = np.array([per_class[_layer_class(m, i)] for i in layers], dtype=float)
        d[0] += fill
        d[-1] += drain
        return np.cumsum(d)

    return exact, ends


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(MODELS)), k=st.integers(1, 20),
       times=st.lists(st.floats(1.0, 1e6), min_size=4, max_size=4),
       fill=st.floats(0.0, 1e6), drain=st.floats(0.0, 1e6))
def test_scaling_is_exact_on_layers_of_constant_class_time(name, k, times, fill, drain):
    m = get_model(name)
    classes = sorted({_layer_class(m, i) for i in range(m.n_layers)})
    per = dict(zip(classes, times))
    layers = _sampled_layers(m, k)
    # sequential: no fill or drain, each sampled layer stands for its class
    exact, ends = _synthetic(m, per)
    assert _scaled_layers_ns(m, layers, ends(layers), False) == pytest.approx(exact, rel=1e-9)
    # two micro-batches: the fill and drain paid once, where a class has a layer between the
    # first and the last sampled one (or the first and last layers are the model's only ones)
    exact, ends = _synthetic(m, per, fill, drain)
    inner = {_layer_class(m, i) for i in layers[1:-1]}
    if len(layers) >= 3 and inner == set(classes):
        assert _scaled_layers_ns(m, layers, ends(layers), True) == pytest.approx(exact,
                                                                                rel=1e-9)
    # every layer: the span itself
    all_layers = list(range(m.n_layers))
    for periodic in (False, True):
        assert _scaled_layers_ns(m, all_layers, ends(all_layers), periodic) == pytest.approx(
            exact, rel=1e-12)


@pytest.mark.parametrize("name", MULTI_CLASS)
def test_the_former_uniform_scaling_was_biased_where_the_sample_is_not_in_proportion(name):
    """The mechanism the class scaling fixes: a sample whose classes are not the model's
    shares, scaled by n_layers / K, misses the exact total; the class scaling does not."""
    m = get_model(name)
    classes = sorted({_layer_class(m, i) for i in range(m.n_layers)})
    per = {c: 1.0 + 3.0 * j for j, c in enumerate(classes)}
    exact, ends = _synthetic(m, per)
    for k in (2, 4, 16):
        layers = _sampled_layers(m, k)
        e = ends(layers)
        assert _scaled_layers_ns(m, layers, e, False) == pytest.approx(exact, rel=1e-12)
        shares = _classes(m, layers)
        if any(abs(shares[c] / len(layers) - n / m.n_layers) > 1e-9
               for c, n in _classes(m, range(m.n_layers)).items()):
            assert abs(e[-1] * m.n_layers / len(layers) / exact - 1) > 0.01


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 8, 12, 16])
def test_two_microbatch_sample_keeps_every_layers_neighbours(name, k):
    """Under two micro-batches each pick stands where the layer after the previous pick would
    (its neighbours' classes are the model's), the sample holds the ends and every class, and
    is the sequential sample wherever that one already keeps the neighbours."""
    m = get_model(name)
    picks = _sampled_layers(m, k, neighbours=True)
    seq = _sampled_layers(m, k)
    assert picks == sorted(set(picks)) and picks[0] == 0
    assert picks[-1] == m.n_layers - 1 or picks == seq == [0]  # k = 1, one class
    assert len(picks) >= min(k, m.n_layers)
    assert set(_classes(m, picks)) == set(_classes(m, range(m.n_layers)))
    for x, y in zip(picks, picks[1:]):
        assert _neighbours_kept(m, x, y)
        # y's neighbours in the sample have the classes of its neighbours in the model
        assert _layer_class(m, x) == _layer_class(m, y - 1)
        if y + 1 < m.n_layers:
            nxt = picks[picks.index(y) + 1]
            assert _layer_class(m, nxt) == _layer_class(m, y + 1)
    if all(_neighbours_kept(m, x, y) for x, y in zip(seq, seq[1:])):
        assert picks == seq
    if name not in MULTI_CLASS:  # one class: nothing to keep
        assert picks == seq
    if k >= 8:  # every context of the layers between is sampled between the ends
        assert ({_layer_context(m, i) for i in picks[1:-1]}
                == {_layer_context(m, i) for i in range(1, m.n_layers - 1)})


def test_two_microbatch_sample_of_alternating_and_periodic_classes():
    """gpt-oss alternates sliding and full attention: the default two-micro-batch sample
    alternates too (the sequential one puts two full layers side by side); Qwen3.5 repeats
    three linear-attention layers and a full one: sampled in whole periods."""
    g = get_model("gpt-oss-20b")
    seq = [_layer_class(g, i)[0] for i in _sampled_layers(g, 8)]
    assert any(a == b for a, b in zip(seq, seq[1:]))
    picks = _sampled_layers(g, 8, neighbours=True)
    assert [_layer_class(g, i)[0] for i in picks] == ["sliding", "full"] * 4
    q = get_model("qwen3.5-397b-a17b")
    for k in (4, 8, 16):
        picks = _sampled_layers(q, k, neighbours=True)
        assert [_layer_class(q, i) for i in picks] == [_layer_class(q, i)
                                                       for i in range(len(picks))]
        assert len(picks) == max(8, k)


def test_two_microbatch_sample_among_gaps_it_cannot_bridge():
    """Candidates (the layers a trace covers) whose gaps break every neighbour: the
    sequential sample, not an error."""
    g = get_model("gpt-oss-20b")
    allowed = [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22]  # sliding layers only
    picks = _sampled_layers(g, 4, allowed, neighbours=True)
    assert picks == _sampled_layers(g, 4, allowed)


def _contextual(m, per_context, fill, drain):
    """Layer times that depend on a layer's class and its neighbours' (as under two
    micro-batches), plus a fill and a drain: the exact total and the end times of a sample
    simulated back to back (each sampled layer between its sampled neighbours)."""
    exact = sum(per_context[_layer_context(m, i)] for i in range(m.n_layers)) + fill + drain

    def ends(layers):
        d = []
        for j, i in enumerate(layers):
            prev = _layer_class(m, layers[j - 1]) if j > 0 else None
            nxt = _layer_class(m, layers[j + 1]) if j + 1 < len(layers) else None
            d.append(per_context[(prev, _layer_class(m, i), nxt)])
        d[0] += fill
        d[-1] += drain
        return np.cumsum(d)

    return exact, ends


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(MULTI_CLASS), k=st.integers(8, 20), seed=st.integers(0, 2 ** 16),
       fill=st.floats(0.0, 1e6), drain=st.floats(0.0, 1e6))
def test_two_microbatch_scaling_is_exact_on_layers_timed_by_their_neighbours(
        name, k, seed, fill, drain):
    """Layer times set by (previous class, class, next class): the two-micro-batch sample and
    its scaling give the exact total (each context is sampled between the ends, k >= 8)."""
    m = get_model(name)
    classes = sorted({_layer_class(m, i) for i in range(m.n_layers)})
    rng = np.random.default_rng(seed)
    per = {(a, b, c): float(rng.uniform(1.0, 1e6)) for a in [None, *classes]
           for b in classes for c in [None, *classes]}
    exact, ends = _contextual(m, per, fill, drain)
    picks = _sampled_layers(m, k, neighbours=True)
    assert _scaled_layers_ns(m, picks, ends(picks), True) == pytest.approx(exact, rel=1e-9)


def test_sequential_sample_misses_layers_timed_by_their_neighbours():
    """The check above can fail: gpt-oss-20b's sequential sample (0, 3, 7, 10, ...) puts two
    layers of a class side by side, and the same scaling is off by more than 1 %."""
    m = get_model("gpt-oss-20b")
    rng = np.random.default_rng(0)
    classes = sorted({_layer_class(m, i) for i in range(m.n_layers)})
    per = {(a, b, c): float(rng.uniform(1.0, 10.0)) for a in [None, *classes]
           for b in classes for c in [None, *classes]}
    exact, ends = _contextual(m, per, 0.0, 0.0)
    seq = _sampled_layers(m, 8)
    assert abs(_scaled_layers_ns(m, seq, ends(seq), True) / exact - 1) > 0.01


def test_default_sample_size():
    assert sampled_layers_default(1, "none") == SAMPLED_LAYERS[0] == 4
    assert sampled_layers_default(2, "none") == sampled_layers_default(2, "tbo") == 16
    assert sampled_layers_default(1, "tbo") == 16  # tbo implies two micro-batches


def test_cli_help_states_the_default_sample_sizes():
    """`sieve run --help` says how many layers --layers auto samples (the parser does not
    import the step model for it, so the numbers are written out: this keeps them true)."""
    import re

    from sieve.cli import build_parser

    text = build_parser("run")._subparsers_by_name["run"].format_help()
    m = re.search(r"default auto:\s+(\d+),\s+(\d+)\s+with\s+two\s+micro-batches", text)
    assert m, text
    assert (int(m.group(1)), int(m.group(2))) == SAMPLED_LAYERS


@pytest.mark.slow
@pytest.mark.parametrize("overlap,k,method,tol", [
    ("none", 4, "sieve-cp", 0.02),
    ("tbo", 8, "duplex", 0.02),
    ("tbo", 8, "sieve-cp", 0.02)])
def test_sampled_step_against_every_layer(overlap, k, method, tol):
    """A two-class model (gpt-oss-20b: sliding and full attention) with long decode contexts
    (MATH-500), the default sample size of each mode against every layer. What is left is the
    spread of layer times within a class (routing differs by layer: 1.6 % here sequential,
    0.8 % (Duplex) and 0.7 % (sieve-cp) under two-batch overlap; a sample that did not keep
    each layer's neighbours' classes was 6.4 % off there, docs/validation.md, "Layer sampling
    against every layer")."""
    from sieve.system.run import RunConfig, simulate_run

    out = {}
    for layers in (k, None):
        cfg = RunConfig(model="gpt-oss-20b", system="1xb200", batch=32, workload="math-500",
                        method=method, overlap=overlap, steps=1, warmup=1, layers=layers)
        out[layers] = simulate_run(cfg).row["throughput_tok_s_gpu"]
    assert out[k] == pytest.approx(out[None], rel=tol)


def test_two_batch_overlap_layer_times_are_stationary_along_the_step():
    """Under two-batch overlap the micro-batches take turns (system.md, *Execution modes*), so
    a layer's time does not drift along the step and 8 sampled layers stand for all 48.
    NoExp on Duplex's Logic-PIM, Qwen3-30B-A3B HH-RLHF B=4 on one B200: 0.4 % from every
    layer; when the micro-batches ran free the layer time wandered from 95 us (both
    micro-batches streaming their experts at once, the GPU idle) to 65 us (one's experts
    beside the other's attention) and back over the 48 layers, and the sample was 10.7 % off."""
    from sieve.system.run import RunConfig, simulate_run

    out = {}
    for layers in (8, None):
        cfg = RunConfig(model="qwen3-30b-a3b", system="1xb200", batch=4, method="noexp",
                        overlap="tbo", steps=1, warmup=1, layers=layers,
                        system_overrides=(("memory", "duplex-logic-pim"),))
        out[layers] = simulate_run(cfg).row["throughput_tok_s_gpu"]
    assert out[8] == pytest.approx(out[None], rel=0.01)


def test_two_batch_overlap_settles_into_more_than_one_cycle():
    """Under two-batch overlap a step does not settle into one repeating schedule
    (docs/system.md §1, *Why a two-batch-overlap sample can be several per cent off*): at
    AttAcc's preset, Qwen3-30B-A3B HH-RLHF B=2, every layer simulated, AllExp's layer times
    repeat a cycle of four (52.8, 45.2, 45.1, 40.0 us) with stretches of a cycle of three
    (47.7, 52.8, 40.0 us). sieve-cp, whose splits are AllExp's there, runs the same cycles in
    another order and is within 1 % of AllExp on every layer (0.998x), where 8 sampled layers
    caught a three-cycle for one and a transient for the other (0.977x)."""
    from sieve.system.run import RunConfig, simulate_run

    def run(method):
        cfg = RunConfig(model="qwen3-30b-a3b", system="1xb200", batch=2, method=method,
                        overlap="tbo", steps=1, warmup=1, layers=None,
                        system_overrides=(("memory", "attacc-hbm3-pim"),))
        return simulate_run(cfg, keep_steps=True)

    res = {m: run(m) for m in ("allexp", "sieve-cp")}
    assert res["sieve-cp"].row["throughput_tok_s_gpu"] >= 0.99 * res["allexp"].row[
        "throughput_tok_s_gpu"]
    step = res["allexp"].steps[-1]
    t0 = min(t["start_ns"] for t in step.tasks)
    ends = {}
    for t in step.tasks:  # when each layer's second micro-batch ended
        if t["name"] == "wsum" and t.get("microbatch", t.get("mb")) == 1:
            ends[t["layer"]] = max(ends.get(t["layer"], 0.0), t["end_ns"] - t0)
    per = np.round(np.diff([ends[i] for i in sorted(ends)]) / 1e3, 0)
    seq = " ".join(str(int(x)) for x in per)
    assert "53 45 45 40 53 45 45 40" in seq  # the cycle of four, twice in a row
    assert "48 53 40" in seq  # and the cycle of three
    assert len(set(per[5:].tolist())) > 2  # more than one layer time in the steady part


def test_sieve_run_samples_by_mode_unless_told():
    """`sieve run --layers auto` (the default) samples 4 layers, 16 with two micro-batches;
    an integer or 'all' is taken as given."""
    from sieve.cli import _run_kw, build_parser

    def layers(*argv):
        return _run_kw(build_parser().parse_args(["run", *argv]))["layers"]

    assert layers() == layers("--layers", "auto") == 4
    assert layers("--overlap", "tbo") == layers("--microbatches", "2") == 16
    assert layers("--overlap", "tbo", "--layers", "3") == 3
    assert layers("--layers", "all") is None


@settings(max_examples=150, deadline=None)
@given(pattern=st.lists(st.sampled_from(["full", "sliding", "gdn"]), min_size=1, max_size=5),
       dense=st.integers(0, 3), n=st.integers(4, 64), k=st.integers(1, 20),
       seed=st.integers(0, 2 ** 16))
def test_two_microbatch_sample_on_any_layer_pattern(pattern, dense, n, k, seed):
    """Any model: a periodic pattern of token mixers after up to three dense layers. The
    sample holds the ends and every class, keeps every pick's neighbours, is at least k long,
    and where it samples every context between the ends the scaling of layer times set by
    the contexts is exact."""
    from types import SimpleNamespace

    dense = min(dense, n - 1)
    m = SimpleNamespace(name="synthetic", n_layers=n,
                        layer_types=tuple(pattern[i % len(pattern)] for i in range(n)),
                        moe_layer_ids=tuple(range(dense, n)))
    picks = _sampled_layers(m, k, neighbours=True)
    assert picks == sorted(set(picks)) and picks[0] == 0
    assert len(picks) >= min(k, n)
    assert set(_classes(m, picks)) == set(_classes(m, range(n)))
    if k >= 2:
        assert picks[-1] == n - 1
    assert all(_neighbours_kept(m, x, y) for x, y in zip(picks, picks[1:]))
    classes = sorted({_layer_class(m, i) for i in range(n)})
    rng = np.random.default_rng(seed)
    per = {(a, b, c): float(rng.uniform(1.0, 1e3)) for a in [None, *classes]
           for b in classes for c in [None, *classes]}
    exact, ends = _contextual(m, per, 5.0, 7.0)
    inner = {_layer_context(m, i) for i in picks[1:-1]}
    # exact where the sample holds both ends (k = 1 need not hold the last, whose drain then
    # has no sampled layer to stand in) and every context between them
    if len(picks) >= 3 and picks[-1] == n - 1 and inner >= {
            _layer_context(m, i) for i in range(1, n - 1) if i not in picks}:
        assert _scaled_layers_ns(m, picks, ends(picks), True) == pytest.approx(exact,
                                                                              rel=1e-9)


@pytest.mark.slow
def test_tbo_layer_sampling_resample_sets_samples_against_a_stores_every_layer_runs(tmp_path,
                                                                                   capsys):
    """benchmarks/tbo_layer_sampling.py --resample (docs/validation.md, *Sixteen sampled layers
    under two-batch overlap*): the points of a store with every PIM method on every layer, each
    method again on K sampled layers, and per K each method's throughput error and sieve-cp's
    ratio error against every layer; a store without such points is refused."""
    from dataclasses import replace

    from conftest import benchmark_module

    from sieve.experiments.executor import execute
    from sieve.experiments.points import Point
    from sieve.experiments.store import RunStore
    from sieve.system.run import RunConfig, simulate_run

    mod = benchmark_module("tbo_layer_sampling")
    methods = ("noexp", "allexp", "pimoe", "duplex", "sieve", "sieve-cp")
    base = RunConfig(model="qwen3-30b-a3b", system="1xb200", batch=1, method="noexp",
                     overlap="tbo", steps=1, warmup=1, layers=None,
                     system_overrides=(("memory", "attacc-hbm3-pim"),))
    vstore = tmp_path / "vstore"
    # every method but one on every layer: no point to resample yet
    execute([Point(replace(base, method=m)) for m in methods[:-1]], jobs=1,
            store=RunStore(vstore), progress=False)
    with pytest.raises(SystemExit, match="no point .* has every method on every layer"):
        mod.resample(str(vstore), [4], 1, None)
    execute([Point(replace(base, method="sieve-cp"))], jobs=1, store=RunStore(vstore),
            progress=False)
    mod.resample(str(vstore), [4], 1, None)
    out = capsys.readouterr().out
    every = {m: simulate_run(replace(base, method=m)).row["throughput_tok_s_gpu"]
             for m in methods}
    four = {m: simulate_run(replace(base, method=m, layers=4)).row["throughput_tok_s_gpu"]
            for m in methods}
    err = np.array([four[m] / every[m] - 1 for m in methods])
    ratio = {k: t["sieve-cp"] / max(t[m] for m in methods[:-1]) for k, t in (("4", four),
                                                                            ("all", every))}
    row = next(ln for ln in out.splitlines() if ln.startswith("| 4 |")).split(" | ")
    assert row[2] == f"{100 * np.sqrt((err ** 2).mean()):.2f} %"
    assert row[3] == f"{100 * np.abs(err).max():.2f} %"
    assert row[5] == f"{100 * abs(ratio['4'] / ratio['all'] - 1):.2f} %"
    point = next(ln for ln in out.splitlines() if ln.startswith("| attacc-hbm3-pim |"))
    assert point.split(" | ")[2:] == [f"{ratio['4']:.3f}", f"{ratio['all']:.3f} |"]


def test_tbo_layer_sampling_below_reruns_a_validation_store_on_every_layer(tmp_path, capsys):
    """benchmarks/tbo_layer_sampling.py --below (docs/validation.md, *The points below on every
    layer*): reads the two-batch-overlap runs of a validate_methods.py store, picks the points
    by their sampled ratio (``--range``), runs every method of each on every layer and prints
    both ratios; a store without such runs is refused."""
    from dataclasses import replace

    from conftest import benchmark_module

    from sieve.experiments.executor import execute
    from sieve.experiments.points import Point
    from sieve.experiments.store import RunStore
    from sieve.system.run import RunConfig, simulate_run

    mod = benchmark_module("tbo_layer_sampling")
    with pytest.raises(SystemExit, match="no two-batch-overlap point"):
        mod.below(str(tmp_path / "empty"), 1, None)
    methods = ("noexp", "allexp", "pimoe", "duplex", "sieve", "sieve-cp")
    base = RunConfig(model="qwen3-30b-a3b", system="1xb200", batch=1, method="noexp",
                     overlap="tbo", steps=1, warmup=1, layers=8,
                     system_overrides=(("memory", "attacc-hbm3-pim"),))
    vstore = tmp_path / "vstore"
    execute([Point(replace(base, method=m)) for m in methods], jobs=1,
            store=RunStore(vstore), progress=False)
    tput, cfgs, _ = mod._validation_points(str(vstore))
    assert list(tput) == [("attacc-hbm3-pim", "qwen3-30b-a3b", "1xb200", "hh-rlhf", False,
                           None, 1)]
    assert set(tput[next(iter(tput))]) == set(methods)
    mod.below(str(vstore), 1, None, 0.0, 10.0)
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.startswith("| attacc-hbm3-pim |")]
    assert len(rows) == 1 and "Points at 0-10x on the sampled layers: 1;" in out
    every = {m: simulate_run(replace(base, method=m, layers=None)).row["throughput_tok_s_gpu"]
             for m in methods}
    best = max(methods[:-1], key=every.get)
    assert rows[0].split(" | ")[4] == f"{every['sieve-cp'] / every[best]:.3f}"
    assert rows[0].split(" | ")[5] == best
    # the summary: one point, so its ratio is the min, median and max, and its move is the
    # every-layer ratio over the sampled one
    r = rows[0].split(" | ")[4]
    assert f"the ratio is {r} / {r} / {r} (min / median / max)" in out
    t = tput[next(iter(tput))]
    moved = (every["sieve-cp"] / every[best]) / (t["sieve-cp"] / max(t[m] for m in methods[:-1]))
    moved -= 1.0
    assert f"by {100 * moved:+.1f} % to {100 * moved:+.1f} % (rms {100 * abs(moved):.2f} %)" in out
    mod.below(str(vstore), 1, None, 5.0, 10.0)  # a range that holds no point
    out = capsys.readouterr().out
    assert "on the sampled layers: 0;" in out and "the ratio is" not in out


def test_tbo_layer_sampling_setup_runs_one_models_paper_points_on_every_layer(monkeypatch,
                                                                              capsys):
    """benchmarks/tbo_layer_sampling.py --setup (docs/validation.md, *The points below on every
    layer*): the decode points of one model's --paper setup with B >= --min-batch, on every
    layer under two-batch overlap, every PIM method, per preset; sieve-cp over the best other
    method per point and the count below 0.99x. The executor is stood in for (its runs are
    tested elsewhere): this pins the points chosen and the arithmetic of the table."""
    from types import SimpleNamespace

    from conftest import benchmark_module

    import sieve.experiments.executor as executor

    mod = benchmark_module("tbo_layer_sampling")
    seen = []
    # sieve-cp 0.98x the best other (duplex) on HH-RLHF, 1.05x on MATH-500
    rate = {"noexp": 50.0, "allexp": 60.0, "pimoe": 55.0, "duplex": 100.0, "sieve": 90.0}

    def fake_execute(points, **kw):
        seen.extend(points)
        recs = []
        for p in points:
            c = p.config
            t = (98.0 if c.workload == "hh-rlhf" else 105.0) if c.method == "sieve-cp" \
                else rate[c.method]
            recs.append(SimpleNamespace(result=SimpleNamespace(
                row={"throughput_tok_s_gpu": t})))
        return SimpleNamespace(records=recs)

    monkeypatch.setattr(executor, "execute", fake_execute)
    mod.setup_every_layer("qwen3-30b-a3b", ["duplex-logic-pim", "attacc-hbm3-pim"], 128, 1,
                          None)
    out = capsys.readouterr().out
    cfgs = [p.config for p in seen]
    assert {c.batch for c in cfgs} == {128, 256}
    assert {c.workload for c in cfgs} == {"hh-rlhf", "math-500"}
    assert {c.method for c in cfgs} == {"noexp", "allexp", "pimoe", "duplex", "sieve",
                                        "sieve-cp"}
    assert all(c.overlap == "tbo" and c.layers is None and not c.colocated
               and c.model == "qwen3-30b-a3b" for c in cfgs)
    assert {dict(c.system_overrides)["memory"] for c in cfgs} == {"duplex-logic-pim",
                                                                  "attacc-hbm3-pim"}
    assert len(cfgs) == 2 * 2 * 2 * 6  # presets x datasets x batches x methods
    rows = [ln for ln in out.splitlines() if ln.startswith("| duplex-logic-pim |")
            or ln.startswith("| attacc-hbm3-pim |")]
    assert len(rows) == 8
    assert all(r.split(" | ")[3] == "duplex" for r in rows)
    assert sorted(r.split(" | ")[5].rstrip(" |") for r in rows) == ["0.980"] * 4 + ["1.050"] * 4
    assert "8 points; below 0.99x: 4; ratio 0.980 / 1.015 / 1.050" in out
    with pytest.raises(SystemExit, match="no decode point"):
        mod.setup_every_layer("qwen3-30b-a3b", ["duplex-logic-pim"], 1000, 1, None)


def test_tbo_steps_first_measured_step_is_the_one_step_run():
    """benchmarks/tbo_steps.py (docs/validation.md, *The 15 points over five measured steps*):
    step s draws its batch and routing from (seed, s), so the first of several measured steps
    is the step a one-step run measures, to the last digit, and the throughput over the steps
    is their tokens over their time."""
    from conftest import benchmark_module

    from sieve.system.run import RunConfig, simulate_run

    mod = benchmark_module("tbo_steps")
    r = mod.run_one(("attacc-hbm3-pim", mod.Q3, "math-500", 2, "sieve-cp", 2, 4))
    one = simulate_run(RunConfig(model="qwen3-30b-a3b", system="1xb200", batch=2,
                                 workload="math-500", method="sieve-cp", overlap="tbo",
                                 layers=4, steps=1, warmup=1,
                                 system_overrides=(("memory", "attacc-hbm3-pim"),)))
    assert r["per_step_tok_s_gpu"][0] == one.row["throughput_tok_s_gpu"]
    assert len(r["per_step_tok_s_gpu"]) == len(r["skipped"]) == len(r["decisions"]) == 2
    assert all(0 <= s <= d for s, d in zip(r["skipped"], r["decisions"]))
    # (every step makes 2 * batch tokens here: B = 2 decode requests, one token each)
    rates = r["per_step_tok_s_gpu"]
    assert r["throughput_tok_s_gpu"] == pytest.approx(2 / sum(1 / x for x in rates), rel=1e-12)


def test_tbo_steps_table_from_a_record(tmp_path, capsys):
    """tbo_steps.py resumes from its JSON-lines record (a run of the same step count on every
    layer is not run again) and prints per point the per-step and whole ratios and the count
    at 0.99x or above."""
    import json

    from conftest import benchmark_module

    mod = benchmark_module("tbo_steps")
    out = tmp_path / "rec.jsonl"
    with open(out, "w") as f:
        for i, (preset, (model, system), wl, b, other) in enumerate(mod.POINTS):
            for m, per in (("sieve-cp", [97.0, 100.0]), (other, [100.0, 100.0])):
                if i and m == "sieve-cp":
                    per = [100.0, 100.0]  # only the first point is below
                f.write(json.dumps({
                    "preset": preset, "model": model, "system": system, "workload": wl,
                    "batch": b, "method": m, "steps": 2, "layers": None,
                    "throughput_tok_s_gpu": 2 / sum(1 / x for x in per),
                    "per_step_tok_s_gpu": per, "skipped": [1, 2], "decisions": [96, 96],
                    "cpu_s": 0.0}) + "\n")
    assert mod.main(["--steps", "2", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    first = mod.POINTS[0]
    row = [ln for ln in text.splitlines()
           if ln.startswith(f"| {first[0]} | {first[1][0]} {first[1][1]} {first[2]} "
                            f"B={first[3]} |")]
    # 2 / (1/97 + 1/100) = 98.48 tok/s against 100: 0.985x over both steps
    assert row and row[0].rstrip(" |").split(" | ")[3:6] == ["0.970 1.000", "0.985",
                                                             "1 2 of 96"]
    n = len(mod.POINTS)
    assert f"{n} points; at 0.99x or above over all steps: {n - 1}." in text
    assert len(out.read_text().splitlines()) == 2 * len(mod.POINTS)  # nothing run again
    assert mod.main(["--steps", "2", "--out", str(out), "--multi-gpu"]) == 0
    text = capsys.readouterr().out
    assert "2 points; at 0.99x or above over all steps: 2." in text
    assert "qwen3.5-397b-a17b 8xb200 hh-rlhf B=16" in text and "1xb200" not in text


def _tbo_variant_with_fake_executor(monkeypatch, tput):
    """benchmarks/tbo_variant.py with the executor stood in for (its runs are tested
    elsewhere): each point's throughput is ``tput(config)``; (the module, the list of each
    call's points)."""
    from types import SimpleNamespace

    from conftest import benchmark_module

    import sieve.experiments.executor as executor

    calls = []

    def fake_execute(points, **kw):
        calls.append(list(points))
        return SimpleNamespace(records=[SimpleNamespace(result=SimpleNamespace(
            row={"throughput_tok_s_gpu": tput(p.config)})) for p in points])

    monkeypatch.setattr(executor, "execute", fake_execute)
    return benchmark_module("tbo_variant"), calls


def test_tbo_variant_reruns_the_other_methods_only_where_the_variant_moved(monkeypatch, capsys):
    """benchmarks/tbo_variant.py (docs/schedulers.md, *Skips that run all on the GPU*): the
    one-GPU two-batch-overlap points of --paper (30 a preset) for sieve-cp and the variant,
    then every other PIM method at the points where the two differ, and each one's ratio to
    the best other. The executor is stood in for (its runs are tested elsewhere)."""
    rate = {"noexp": 100.0, "allexp": 60.0, "pimoe": 55.0, "duplex": 90.0, "sieve": 80.0}

    def tput(c):
        if c.method == "sieve-cp-pimskip" and c.workload == "math-500" and c.batch == 64 \
                and not c.colocated:
            return 101.0
        return rate.get(c.method, 97.0)

    mod, calls = _tbo_variant_with_fake_executor(monkeypatch, tput)
    out = mod.compare("sieve-cp-pimskip", 1, None, presets=("b200-hbm3e-pim",))
    first, second = calls[:2]
    assert len(first) == 2 * 30 and all(
        p.config.model == "qwen3-30b-a3b" and p.config.system == "1xb200"
        and p.config.overlap == "tbo" and p.config.layers == SAMPLED_LAYERS[1] for p in first)
    assert sorted(p.config.method for p in second) == sorted(mod.OTHERS)
    assert out == [(("b200-hbm3e-pim", "math-500", False, None, 64), 0.97, 1.01, "noexp")]
    assert "30 one-GPU two-batch-overlap points, 1 moved" in capsys.readouterr().out
    # --every-layer: the moved point again on every layer, sieve-cp, the variant and the others
    calls.clear()
    out = mod.compare("sieve-cp-pimskip", 1, None, presets=("b200-hbm3e-pim",),
                      every_layer=True)
    third = calls[2]
    assert sorted(p.config.method for p in third) == sorted(
        ["sieve-cp", "sieve-cp-pimskip", *mod.OTHERS])
    assert all(p.config.layers is None and p.config.batch == 64
               and p.config.workload == "math-500" for p in third)
    assert out == [(("b200-hbm3e-pim", "math-500", False, None, 64), 0.97, 1.01, "noexp")]
    assert "The moved points on every layer (1):" in capsys.readouterr().out
    calls.clear()  # --max-batch 32 leaves the B = 64 point out
    assert mod.compare("sieve-cp-pimskip", 1, None, presets=("b200-hbm3e-pim",),
                       every_layer=True, max_batch=32) == []
    assert calls[2] == [] and "(0, B <= 32)" in capsys.readouterr().out


def test_tbo_variant_unmoved_reruns_the_equal_decode_points_on_every_layer(monkeypatch, capsys):
    """tbo_variant.py --unmoved: the decode points (no colocated one) where sieve-cp and the
    variant are equal on the sample, both again on every layer, and those that differ there."""
    def tput(c):
        if c.method == "sieve-cp-pimskip" and c.batch in (8, 16) and c.layers is None \
                and c.workload == "hh-rlhf":
            return 99.0  # equal on the sample, apart on every layer
        if c.method == "sieve-cp-pimskip" and c.batch == 64 and c.layers == SAMPLED_LAYERS[1]:
            return 98.0  # moved on the sample: not re-run
        return 100.0

    mod, calls = _tbo_variant_with_fake_executor(monkeypatch, tput)
    out = mod.unmoved("sieve-cp-pimskip", 1, None, presets=("b200-hbm3e-pim",), max_batch=16)
    sample, every = calls
    assert sample and all(not p.config.colocated and p.config.batch <= 16
                          and p.config.layers == SAMPLED_LAYERS[1] for p in sample)
    assert len(every) == len(sample) and all(p.config.layers is None for p in every)
    assert [(k[1], k[-1]) for k, _, _ in out] == [("hh-rlhf", 8), ("hh-rlhf", 16)]
    assert "on every layer 2 differ" in capsys.readouterr().out
    # --all-models: the four- and eight-GPU decode points too, named by preset, model, system
    calls.clear()
    out = mod.unmoved("sieve-cp-pimskip", 1, None, presets=("b200-hbm3e-pim",), max_batch=16,
                      all_models=True)
    assert {p.config.system for p in calls[0]} == {"1xb200", "4xb200", "8xb200"}
    assert len(calls[1]) == len(calls[0])
    assert ("b200-hbm3e-pim gpt-oss-120b 4xb200", "hh-rlhf", 8) in {
        (k[0], k[1], k[-1]) for k, _, _ in out}


def test_tbo_variant_all_layers_runs_every_one_gpu_point_on_every_layer(monkeypatch, capsys):
    """tbo_variant.py --all-layers: sieve-cp and the variant at every one-GPU point on every
    layer (no sample first), every other PIM method where the two differ, and the count of
    those below 0.99x the best other for each."""
    rate = {"noexp": 100.0, "allexp": 60.0, "pimoe": 55.0, "duplex": 90.0, "sieve": 80.0}

    def tput(c):
        if c.method == "sieve-cp-look2" and c.batch == 8 and not c.colocated:
            return 98.0 if c.workload == "hh-rlhf" else 100.5
        return rate.get(c.method, 99.5)

    mod, calls = _tbo_variant_with_fake_executor(monkeypatch, tput)
    out = mod.all_layers("sieve-cp-look2", 1, None, presets=("b200-hbm3e-pim",))
    first, second = calls
    assert len(first) == 2 * 30 and all(p.config.layers is None for p in first)
    assert sorted(p.config.method for p in second) == sorted(2 * mod.OTHERS)
    assert all(p.config.layers is None and p.config.batch == 8 for p in second)
    assert [(k[1], a, b) for k, a, b, _ in out] == [("hh-rlhf", 0.995, 0.98),
                                                   ("math-500", 0.995, 1.005)]
    text = capsys.readouterr().out
    assert "30 one-GPU two-batch-overlap points on every layer, 2 moved" in text
    assert "below 0.99x the best other: sieve-cp 0, sieve-cp-look2 1." in text
    # --decode-only: a colocated point that moved gets no runs of the other methods
    rate["sieve-cp-look2"] = 99.0  # every point moves now, colocated ones too
    calls.clear()
    out = mod.all_layers("sieve-cp-look2", 1, None, presets=("b200-hbm3e-pim",),
                         decode_only=True)
    assert all(not p.config.colocated for p in calls[1]) and calls[1]
    assert all(not k[2] for k, *_ in out) and len(out) == 18
    assert "30 moved by sieve-cp-look2 (12 colocated ones not compared)" in \
        capsys.readouterr().out
    # --unmoved-too: the other methods where the variant moved nothing as well
    del rate["sieve-cp-look2"]
    calls.clear()
    out = mod.all_layers("sieve-cp-look2", 1, None, presets=("b200-hbm3e-pim",),
                         unmoved_too=True)
    assert len(calls[2]) == 5 * 28 and len(out) == 30
    assert "The 28 points sieve-cp-look2 left alone" in capsys.readouterr().out


def test_tbo_variant_all_models_takes_every_point_of_the_table(monkeypatch, capsys):
    """tbo_variant.py --all-models: sieve-cp and the variant at every point of the table (66
    a preset: the eight- and four-GPU ones too, named by preset, model and system), the other
    methods where the two differ, and the moved points' counts below 0.99x."""
    rate = {"noexp": 100.0, "allexp": 60.0, "pimoe": 55.0, "duplex": 90.0, "sieve": 80.0}

    def tput(c):
        if c.method == "sieve-cp-layergate" and c.model == "qwen3.5-397b-a17b" and c.batch == 16:
            return 100.0 if c.workload == "hh-rlhf" else 98.0
        return rate.get(c.method, 98.5)

    mod, calls = _tbo_variant_with_fake_executor(monkeypatch, tput)
    out = mod.compare("sieve-cp-layergate", 1, None, presets=("neupims-hbm2-pim",),
                      all_models=True)
    first, second = calls[:2]
    assert len(first) == 2 * 66 and {p.config.system for p in first} == {
        "1xb200", "4xb200", "8xb200"}
    assert sorted(p.config.method for p in second) == sorted(2 * mod.OTHERS)
    assert [(k[0], k[1], a, b) for k, a, b, _ in out] == [
        ("neupims-hbm2-pim qwen3.5-397b-a17b 8xb200", "hh-rlhf", 0.985, 1.0),
        ("neupims-hbm2-pim qwen3.5-397b-a17b 8xb200", "math-500", 0.985, 0.98)]
    text = capsys.readouterr().out
    assert "66 two-batch-overlap points, 2 moved by sieve-cp-layergate" in text
    assert "below 0.99x the best other: sieve-cp 2, sieve-cp-layergate 1; sieve-cp-layergate up " \
        "at 1." in text
