"""Synthetic router: determinism, sampling law, reuse/inter-layer knobs, presets vs targets."""

from __future__ import annotations

import numpy as np
import pytest

from sieve.calibrate import SEED_TARGETS, step_sample_stats
from sieve.errors import ConfigError
from sieve.models import get_model
from sieve.router import (
    ROUTER_PRESETS,
    RouterParams,
    RouterShape,
    SyntheticRouter,
    generate_trace,
    get_router_params,
)
from sieve.routing_stats import iid_overlap, nmi_from_joint, temporal_overlap, top1_joint
from sieve.traces import DECODE, PREFILL

SHAPE = RouterShape("toy", 32, 4, range(6))
P = RouterParams(alpha=0.5, drift_sigma=0.5, drift_phi=0.9, reuse_rho=0.5, layer_kappa=0.3)


def test_same_seed_same_trace_different_seed_different_trace():
    a = generate_trace(SHAPE, 8, 5, seed=11, params=P)
    b = generate_trace(SHAPE, 8, 5, seed=11, params=P)
    c = generate_trace(SHAPE, 8, 5, seed=12, params=P)
    np.testing.assert_array_equal(a.expert_ids, b.expert_ids)
    assert not np.array_equal(a.expert_ids, c.expert_ids)
    assert a.meta.seed == 11 and a.meta.extra["router_params"]["alpha"] == 0.5
    g = SyntheticRouter(SHAPE, P, np.random.default_rng(5))
    again = SyntheticRouter(SHAPE, P, g.seed).generate(8, 5)
    np.testing.assert_array_equal(g.generate(8, 5).expert_ids, again.expert_ids)


def test_longer_trace_extends_shorter_and_popularity_is_shared_across_batches():
    r = SyntheticRouter(SHAPE, P, 3)
    short, long = r.generate(6, 4), r.generate(6, 9)
    np.testing.assert_array_equal(short.expert_ids, long.expert_ids[: short.n_tokens])
    np.testing.assert_array_equal(SyntheticRouter(SHAPE, P, 3).base_logits, r.base_logits)


def test_first_choice_follows_the_popularity_law():
    """With no drift each token's top-1 is a draw from softmax(base logits) (Plackett-Luce)."""
    shape = RouterShape("toy", 8, 2, (0,))
    p = P.replace(alpha=0.7, drift_sigma=0.0, reuse_rho=0.0, layer_kappa=0.0)
    r = SyntheticRouter(shape, p, 1)
    t = r.generate(20000, 1)
    freq = np.bincount(t.expert_ids[:, 0, 0], minlength=8) / t.n_tokens
    law = np.exp(r.base_logits[0]) / np.exp(r.base_logits[0]).sum()
    assert (np.abs(freq - law) <= 4 * np.sqrt(law * (1 - law) / t.n_tokens) + 1e-3).all()
    assert law.max() > 2 * law.min()  # the law is skewed, so a uniform sampler would fail


def test_reuse_and_layer_correlation_knobs_move_the_statistics():
    base = P.replace(alpha=50.0, drift_sigma=0.0)
    ov = {
        rho: temporal_overlap(
            generate_trace(SHAPE, 64, 20, seed=2, params=base.replace(reuse_rho=rho))
        ).mean()
        for rho in (0.0, 0.9)
    }
    assert ov[0.0] == pytest.approx(iid_overlap(32, 4), abs=0.05)
    assert ov[0.9] > 3 * ov[0.0]
    nmi = {}
    for kappa in (0.0, 0.8):
        t = generate_trace(SHAPE, 4000, 1, seed=2, params=base.replace(layer_kappa=kappa))
        nmi[kappa] = nmi_from_joint(top1_joint(t, 0, 3), miller_madow=True)
    assert abs(nmi[0.0]) < 0.02 and nmi[0.8] > 0.1


def test_prefill_and_request_churn():
    p = P.replace(mean_output_tokens=3.0)
    t = SyntheticRouter(SHAPE, p, 4).generate(5, 12, prompt_tokens=7)
    assert t.tokens_per_step()[0] == 35 and (t.phase[:35] == PREFILL).all()
    assert t.request_ids.max() >= 5  # finished requests were replaced by new ones
    for s in range(1, t.n_steps):  # every step: one decode row per running request or a prompt
        ph = t.phase[t.step_slice(s)]
        assert (ph == DECODE).sum() + (ph == PREFILL).sum() // 7 == 5


def test_bad_parameters_and_sizes_raise_config_errors():
    with pytest.raises(ConfigError, match="reuse_rho"):
        P.replace(reuse_rho=1.0)
    with pytest.raises(ConfigError, match="batch_size"):
        SyntheticRouter(SHAPE, P, 0).generate(0, 3)
    with pytest.raises(ConfigError, match="seed"):
        SyntheticRouter(SHAPE, P, -1)
    with pytest.raises(ConfigError, match="router preset 'nope'.*known"):
        get_router_params("nope")


def test_every_zoo_model_has_a_preset():
    from sieve.models import MODELS

    assert set(MODELS) <= set(ROUTER_PRESETS)


def _achieved(model: str, batch: int, stat: str, n_steps: int) -> float:
    m = get_model(model)
    counts = generate_trace(model, batch, n_steps, seed=0).all_counts()
    return step_sample_stats(counts.reshape(-1, m.n_experts), m, m.n_moe_layers)[stat]


@pytest.mark.parametrize(
    "target",
    [t for t in SEED_TARGETS if t.model != "qwen3-next-80b-a3b" and t.stat != "act_ratio"],
    ids=lambda t: f"{t.model}-{t.stat}-B{t.batch}",
)
def test_presets_meet_seed_bin_targets_within_documented_tolerance(target):
    """docs/validation.md: fitted seed targets are met within 2 x tol (tol = 0.03)."""
    got = _achieved(target.model, target.batch, target.stat, 8)
    assert abs(got - target.value) <= 2 * target.tol


@pytest.mark.slow
@pytest.mark.parametrize(
    "target",
    [t for t in SEED_TARGETS if t.model == "qwen3-next-80b-a3b" or t.stat == "act_ratio"],
    ids=lambda t: f"{t.model}-{t.stat}-B{t.batch}",
)
def test_presets_meet_remaining_seed_targets(target):
    got = _achieved(target.model, target.batch, target.stat, 16)
    if target.model == "mixtral-8x22b" and target.stat == "act_ratio":
        # docs/validation.md: unreachable with independent tokens (iid uniform gives ~0.99)
        assert 0.95 <= got < target.value
    else:
        assert abs(got - target.value) <= 2 * target.tol


@pytest.mark.slow
def test_stored_qwen3_preset_is_what_the_fit_returns():
    from sieve.calibrate import fit_popularity

    tg = [t for t in SEED_TARGETS if t.model == "qwen3-30b-a3b"]
    (alpha, sigma), rows, _ = fit_popularity("qwen3-30b-a3b", tg)
    p = ROUTER_PRESETS["qwen3-30b-a3b"]
    assert alpha == pytest.approx(p.alpha, rel=0.02) and sigma == pytest.approx(
        p.drift_sigma, abs=0.01
    )
    assert all(abs(a - t.value) <= t.tol for t, a in rows)


@pytest.mark.slow
def test_stored_mixtral_kappa_is_what_the_fit_returns():
    from conftest import shared_trace

    from sieve.calibrate import fit_kappa
    from sieve.router import _KAPPA_MIXTRAL

    shared_trace("allenai_olmoe_routing_analysis", "mistral")
    kappa, _ = fit_kappa("mistral")
    assert kappa == pytest.approx(_KAPPA_MIXTRAL, abs=0.005)
