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


def test_default_sample_size():
    assert sampled_layers_default(1, "none") == SAMPLED_LAYERS[0] == 4
    assert sampled_layers_default(2, "none") == sampled_layers_default(2, "tbo") == 8
    assert sampled_layers_default(1, "tbo") == 8  # tbo implies two micro-batches


@pytest.mark.slow
@pytest.mark.parametrize("overlap,k,method,tol", [
    ("none", 4, "sieve-cp", 0.02),
    pytest.param("tbo", 8, "duplex", 0.02, marks=pytest.mark.xfail(
        strict=True, reason="since the HBM lane is shared (2026-12-03) a two-batch-overlap "
        "layer's time depends on its neighbour's class, which a sample of non-adjacent "
        "layers breaks: -6.4 % here (docs/validation.md, 'Layer sampling against every "
        "layer')"))])
def test_sampled_step_against_every_layer(overlap, k, method, tol):
    """A two-class model (gpt-oss-20b: sliding and full attention) with long decode contexts
    (MATH-500), the default sample size of each mode against every layer. What is left is the
    spread of layer times within a class (routing differs by layer: 1.6 % here sequential).
    sieve-cp under two-batch overlap is not held to it: its splits drift over the step's
    layers (docs/validation.md, "Layer sampling against every layer")."""
    from sieve.system.run import RunConfig, simulate_run

    out = {}
    for layers in (k, None):
        cfg = RunConfig(model="gpt-oss-20b", system="1xb200", batch=32, workload="math-500",
                        method=method, overlap=overlap, steps=1, warmup=1, layers=layers)
        out[layers] = simulate_run(cfg).row["throughput_tok_s_gpu"]
    assert out[k] == pytest.approx(out[None], rel=tol)


def test_sieve_run_samples_by_mode_unless_told():
    """`sieve run --layers auto` (the default) samples 4 layers, 8 with two micro-batches;
    an integer or 'all' is taken as given."""
    from sieve.cli import _run_kw, build_parser

    def layers(*argv):
        return _run_kw(build_parser().parse_args(["run", *argv]))["layers"]

    assert layers() == layers("--layers", "auto") == 4
    assert layers("--overlap", "tbo") == layers("--microbatches", "2") == 8
    assert layers("--overlap", "tbo", "--layers", "3") == 3
    assert layers("--layers", "all") is None
