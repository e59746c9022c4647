"""Synthetic router: determinism, sampling law, reuse/inter-layer knobs, presets vs targets."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import REPO

from sieve.calibration.router_fit import SEED_TARGETS, step_sample_stats
from sieve.errors import ConfigError
from sieve.model.moe import get_model
from sieve.workload.router import (
    PRESET_FITS,
    ROUTER_PRESETS,
    RouterParams,
    RouterShape,
    SyntheticRouter,
    generate_trace,
    get_router_params,
)
from sieve.workload.stats import iid_overlap, nmi_from_joint, temporal_overlap, top1_joint
from sieve.workload.trace import DECODE, PREFILL

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
    from sieve.model.moe import MODELS

    assert set(MODELS) <= set(ROUTER_PRESETS)


def _achieved(model: str, batch: int, stat: str, n_steps: int, fit: str) -> float:
    m = get_model(model)
    counts = generate_trace(model, batch, n_steps, seed=0, fit=fit).all_counts()
    return step_sample_stats(counts.reshape(-1, m.n_experts), m, m.n_moe_layers)[stat]


def _slow(t) -> bool:
    return t.model == "qwen3-next-80b-a3b" or t.stat == "act_ratio"


def _params(targets, slow: bool):
    marks = [pytest.mark.slow] if slow else []
    return [
        pytest.param(t, id=f"{t.model}-{t.stat}-B{t.batch}", marks=marks)
        for t in targets
        if _slow(t) == slow
    ]


FIT_REPORT = json.loads((REPO / "docs/calibration/router_fit.json").read_text())


@pytest.mark.parametrize("target", _params(SEED_TARGETS, False) + _params(SEED_TARGETS, True))
def test_seed_fit_presets_meet_seed_targets_within_two_tol(target):
    """docs/validation.md: the "seed" presets meet every seed target within 2 x tol (0.06),
    except Mixtral's 100% act-ratio at B=16, which no independent-token router reaches."""
    got = _achieved(target.model, target.batch, target.stat, 8, "seed")
    if target.model == "mixtral-8x22b" and target.stat == "act_ratio":
        assert 0.95 <= got < target.value
    else:
        assert abs(got - target.value) <= 2 * target.tol


@pytest.mark.parametrize("target", _params(SEED_TARGETS, False) + _params(SEED_TARGETS, True))
def test_joint_presets_reproduce_the_fit_report(target):
    """The generator with the stored "joint" presets gives the fit's achieved values (the ones
    docs/validation.md reports) within sampling noise, and no target is missed by > 3 x tol."""
    (reported,) = [
        a
        for s, b, v, a in FIT_REPORT[target.model]["targets"]
        if s == target.stat and b == target.batch
    ]
    got = _achieved(target.model, target.batch, target.stat, 8, "joint")
    assert abs(got - reported) <= 0.02
    if not (target.model == "mixtral-8x22b" and target.stat == "act_ratio"):
        assert abs(got - target.value) <= 3 * target.tol


@pytest.mark.slow
@pytest.mark.parametrize("model", ["gpt-oss-120b", "qwen3-30b-a3b", "qwen3-next-80b-a3b"])
def test_joint_presets_meet_the_olmoe_aggregate_entropy(model):
    from sieve.calibration.router_fit import AGG_HN_TOL, aggregate_skew

    m, p = get_model(model), ROUTER_PRESETS[model]
    _, hn = aggregate_skew(p.alpha, p.drift_sigma, m.n_experts, m.top_k, 20000, n_layers=8)
    target = FIT_REPORT["olmoe_aggregate"]["norm_entropy"]
    assert abs(hn - target) <= 2 * AGG_HN_TOL


@pytest.mark.slow
def test_stored_qwen3_seed_preset_is_what_the_fit_returns():
    from sieve.calibration.router_fit import fit_popularity

    tg = [t for t in SEED_TARGETS if t.model == "qwen3-30b-a3b"]
    (alpha, sigma), rows, _ = fit_popularity("qwen3-30b-a3b", tg)
    p = PRESET_FITS["seed"]["qwen3-30b-a3b"]  # the seed-only fit is this exact call
    assert alpha == pytest.approx(p.alpha, rel=0.02) and sigma == pytest.approx(
        p.drift_sigma, abs=0.01
    )
    assert all(abs(a - t.value) <= t.tol for t, a in rows)


@pytest.mark.slow
def test_stored_mixtral_kappa_is_what_the_fit_returns():
    from conftest import shared_trace

    from sieve.calibration.router_fit_real import fit_kappa
    from sieve.workload.router import _KAPPA_MIXTRAL

    shared_trace("allenai_olmoe_routing_analysis", "mistral")
    kappa, _ = fit_kappa("mistral")
    assert kappa == pytest.approx(_KAPPA_MIXTRAL, abs=0.005)


@pytest.mark.parametrize("model", sorted(k for k, v in FIT_REPORT.items()
                                         if isinstance(v, dict) and "aggregate" in v))
def test_stored_aggregate_skew_is_in_the_models_own_shape(model):
    """The fit report's long-run aggregate (max/mean, Hn) of each fitted model is computed with
    that model's experts and top-k (it once used Mixtral's 8 x top-2 for every model)."""
    from sieve.calibration.router_fit import aggregate_skew

    m, fit = get_model(model), FIT_REPORT[model]
    got = aggregate_skew(fit["alpha"], fit["drift_sigma"], m.n_experts, m.top_k,
                         FIT_REPORT["fiddler"]["n_tokens"])
    assert got == pytest.approx(tuple(fit["aggregate"]), rel=1e-9)
