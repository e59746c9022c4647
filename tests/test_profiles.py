"""Workloads (issue 10, item 4): sequence-length profiles, seeded batch composition (decode-only
steady state and colocated prefill+decode) and the routing of one composed step."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from sieve.errors import ConfigError
from sieve.workload.batch import (
    MIN_PREFILL_PROMPT_TOKENS,
    Batch,
    colocated_batch,
    decode_batch,
    expected_decode_context,
    prefill_cap,
    step_trace,
)
from sieve.workload.profiles import (
    PROFILES,
    Empirical,
    Fixed,
    LogNormal,
    Mixture,
    Profile,
    Uniform,
    dist_from_dict,
    fixed_profile,
    get_profile,
    load_profile,
)
from sieve.workload.router import RouterParams, RouterShape, SyntheticRouter, _ar1
from sieve.workload.stats import iid_overlap
from sieve.workload.trace import DECODE, PREFILL

TOY = RouterShape("toy", 16, 2, range(3))
TOY_P = RouterParams(alpha=0.5, drift_sigma=0.3, drift_phi=0.9, reuse_rho=0.1, layer_kappa=0.3)


def _ks(sample: np.ndarray, dist) -> float:
    """Largest gap between the sample's CDF and the law's, over the law's support."""
    v, p = dist.table
    emp = np.searchsorted(np.sort(sample), v, side="right") / len(sample)
    return float(np.abs(emp - np.cumsum(p)).max())


# ---- the registered profiles encode their sources ---------------------------------------------


def test_registry_holds_the_documented_profiles_and_lookup_is_case_insensitive():
    assert set(PROFILES) == {"hh-rlhf", "math-500", "inferencemax-1k1k", "inferencemax-1k8k",
                             "inferencemax-8k1k", "fixed"}
    assert get_profile(" MATH-500 ") is PROFILES["math-500"]
    for p in PROFILES.values():
        assert p.source, p.name


def test_registry_builds_a_profile_on_first_use_and_keeps_it():
    """Importing the workload package builds no profile and imports no scipy.special (0.2 s
    on the 2-core sandbox): a command that refuses its arguments, or `sieve model`, does not
    pay for hh-rlhf's solve. Checked in a fresh interpreter; a profile is built once."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import sieve.workload\n"
        "from sieve.workload.profiles import PROFILES\n"
        "assert 'scipy.special' not in sys.modules, 'imported at import'\n"
        "assert not PROFILES._built, PROFILES._built\n"
        "p = PROFILES['fixed']\n"
        "assert PROFILES['fixed'] is p and list(PROFILES._built) == ['fixed']\n"
        "assert 'scipy.special' not in sys.modules, 'imported by fixed'\n"
        "h = PROFILES['hh-rlhf']\n"
        "assert 'scipy.special' in sys.modules and PROFILES['hh-rlhf'] is h\n"
        "print(len(PROFILES), 'hh-rlhf' in PROFILES, 'nosuch' in PROFILES)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["6", "True", "False"]
    with pytest.raises(KeyError):
        PROFILES["nosuch"]
    with pytest.raises(ConfigError, match="known: .*hh-rlhf"):
        get_profile("nosuch")


@pytest.mark.parametrize("name,isl,osl", [("inferencemax-1k1k", 1024, 1024),
                                          ("inferencemax-1k8k", 1024, 8192),
                                          ("inferencemax-8k1k", 8192, 1024)])
def test_inferencemax_lengths_are_uniform_on_0p8_len_to_len(name, isl, osl):
    """serving-anchors.md §1: np.random.randint(int(0.8 len), len + 1), no chat template."""
    p = PROFILES[name]
    assert p.template_tokens == 0
    for dist, n in ((p.prompt, isl), (p.output, osl)):
        v, pr = dist.table
        np.testing.assert_array_equal(v, np.arange(int(0.8 * n), n + 1))
        np.testing.assert_allclose(pr, 1 / len(v))
        assert dist.mean() == (int(0.8 * n) + n) / 2


def test_math500_profile_encodes_its_facts():
    p = PROFILES["math-500"]
    assert p.prompt.mean() == pytest.approx(75.0, abs=1e-6)  # 266.89 chars ~ 75 tokens
    c = 266.89 / 75.0  # chars per token implied by the two
    assert (p.prompt.min_tokens, p.prompt.max_tokens) == (round(91 / c), round(1804 / c))
    assert p.output.mean() == pytest.approx(4717.5, abs=1e-6)  # DeepSeek-R1, arXiv 2501.18576
    assert p.output.max_tokens == 32768
    assert p.mean_prompt_tokens() == pytest.approx(75.0 + p.template_tokens)


def test_hh_rlhf_profile_encodes_its_facts():
    p = PROFILES["hh-rlhf"]
    (w1, human), (w2, multi) = p.prompt.components
    assert w1 / (w1 + w2) == pytest.approx(49_241 / 160_800)  # single-exchange share
    # 48,800 of 49,241 single-exchange rows fit 512 tokens for both responses: per response
    # P(human + response > 512) = 0.45 %; checked here by brute-force convolution
    hv, hp = human.table
    rv, rp = p.output.table
    tot = np.convolve(hp, rp)
    over = tot[np.arange(len(tot)) + hv[0] + rv[0] > 512].sum()
    assert over == pytest.approx((1 - 48_800 / 49_241) / 2, rel=1e-6)
    # multi-turn prompts: two earlier exchanges plus the last human turn, in mean
    assert multi.mean() == pytest.approx(human.mean() + 2 * (human.mean() + p.output.mean()))
    assert 100 < p.mean_prompt_tokens() < 500  # "mostly a few hundred tokens"


@pytest.mark.parametrize("median,sigma,low,high", [(64.7, 0.5, 26, 507), (3700, 0.7, 64, 32768),
                                                   (24, 1.0, 1, 4096), (5, 2.0, 3, 9)])
def test_lognormal_table_matches_the_truncated_closed_form(median, sigma, low, high):
    """Table mean and quantiles against scipy's continuous law on [low - 1/2, high + 1/2]."""
    d = LogNormal(median, sigma, low, high)
    law = sps.lognorm(s=sigma, scale=median)
    a, b = law.cdf(low - 0.5), law.cdf(high + 0.5)
    x = np.linspace(low - 0.5, high + 0.5, 200_001)
    dens = law.pdf(x) / (b - a)
    mean = float(np.sum(x * dens) * (x[1] - x[0]))
    assert d.mean() == pytest.approx(mean, abs=0.02 + 1e-4 * mean)  # rounding moves it < 1/50
    for q in (0.05, 0.25, 0.5, 0.75, 0.95):
        cont = law.ppf(a + q * (b - a))
        assert abs(d.quantile(q) - cont) <= 1.0, q


def test_with_mean_solves_for_the_median():
    d = LogNormal.with_mean(300.0, 0.8, 10, 5000)
    assert d.mean() == pytest.approx(300.0, abs=1e-6)
    assert LogNormal(d.median, 0.8, 10, 5000).mean() == pytest.approx(300.0, abs=1e-6)
    with pytest.raises(ConfigError, match="strictly between"):
        LogNormal.with_mean(6000.0, 0.8, 10, 5000)


SAMPLED = [(n, part) for n in PROFILES for part in ("prompt", "output")]


@pytest.mark.parametrize("name,part", SAMPLED, ids=[f"{n}-{p}" for n, p in SAMPLED])
def test_samples_follow_the_stated_law(name, part):
    """Mean within 5 standard errors; KS distance under the 99.9 % bound 1.95 / sqrt(n)."""
    dist = getattr(PROFILES[name], part)
    n = 100_000
    x = dist.sample(np.random.default_rng(7), n)
    assert x.dtype == np.int64
    assert x.min() >= dist.min_tokens and x.max() <= dist.max_tokens
    assert abs(x.mean() - dist.mean()) <= 5 * dist.std() / math.sqrt(n) + 1e-9
    assert _ks(x, dist) <= 1.95 / math.sqrt(n)


def test_sampling_is_deterministic_under_a_seed():
    p = PROFILES["hh-rlhf"]
    a = p.sample_prompts(np.random.default_rng(3), 1000)
    b = p.sample_prompts(np.random.default_rng(3), 1000)
    c = p.sample_prompts(np.random.default_rng(4), 1000)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.min() >= 1 + p.template_tokens


def test_mixture_and_empirical_laws():
    m = Mixture(((1.0, Fixed(10)), (3.0, Uniform(20, 23))))
    v, p = m.table
    np.testing.assert_array_equal(v, [10, 20, 21, 22, 23])
    np.testing.assert_allclose(p, [0.25, 0.1875, 0.1875, 0.1875, 0.1875])
    e = Empirical((5, 7, 5), (1.0, 2.0, 1.0))
    np.testing.assert_allclose(e.table[1], [0.5, 0.5])
    assert e.quantile(0.5) == 5 and e.quantile(0.51) == 7 and e.cdf(6) == 0.5
    logs = Empirical(np.array([300, 120, 300]))  # lengths straight from a log, as an array
    assert logs.values == (300, 120, 300) and logs.mean() == 240


# ---- decode batches -------------------------------------------------------------------------


def test_fixed_decode_batch_by_hand():
    """P = 10, O = 4: decode positions d = 1, 2, 3 -> contexts 10, 11, 12, remaining 3, 2, 1."""
    b = decode_batch("fixed:10/4", 3000, seed=5)
    assert b.kind == "decode" and b.batch_size == 3000 and b.n_prefill == 0
    assert set(b.context_tokens.tolist()) == {10, 11, 12}
    np.testing.assert_array_equal(b.context_tokens + b.remaining_tokens, 10 + 4 - 1)
    np.testing.assert_array_equal(b.step_tokens, 1)
    np.testing.assert_array_equal(b.phase, DECODE)
    np.testing.assert_array_equal(b.request_ids, np.arange(3000))
    counts = np.bincount(b.context_tokens - 10)
    assert (np.abs(counts - 1000) < 5 * math.sqrt(1000 * 2 / 3)).all()
    assert expected_decode_context("fixed:10/4") == 10 + 4 / 2 - 1
    assert b.n_tokens == 3000 and (b.kv_tokens == b.context_tokens + 1).all()


def test_decode_batch_is_deterministic_nested_and_records_its_seed():
    a = decode_batch("math-500", 64, seed=9)
    again = decode_batch("math-500", 64, seed=9)
    other = decode_batch("math-500", 64, seed=10)
    small = decode_batch("math-500", 16, seed=9)
    for col in ("context_tokens", "prompt_tokens", "output_tokens", "remaining_tokens"):
        np.testing.assert_array_equal(getattr(a, col), getattr(again, col))
        np.testing.assert_array_equal(getattr(small, col), getattr(a, col)[:16])
    assert not np.array_equal(a.context_tokens, other.context_tokens)
    assert a.seed == 9 and a.to_dict()["seed"] == 9
    g = decode_batch("math-500", 4, seed=np.random.default_rng(1))
    np.testing.assert_array_equal(decode_batch("math-500", 4, seed=g.seed).context_tokens,
                                  g.context_tokens)


def test_a_step_sees_long_requests_more_often_than_a_request_draw():
    """Outputs 2 or 101 tokens, equally likely per request: a random decode step sees the
    101-token request with probability 100/101 (it holds its slot 100 steps, the other 1)."""
    p = Profile("two", Fixed(5), Empirical((2, 101)))
    n = 20_000
    step = decode_batch(p, n, seed=1)
    req = decode_batch(p, n, seed=1, length_biased=False)
    assert np.mean(step.output_tokens == 101) == pytest.approx(100 / 101, abs=0.004)
    assert np.mean(req.output_tokens == 101) == pytest.approx(0.5, abs=0.02)


def _simulate_slots(profile: Profile, slots: int, steps: int, seed: int) -> np.ndarray:
    """Contexts seen by a closed-loop continuous batch (disaggregated: requests arrive with
    their prompt cached and first token produced), all slots, every step after a warm-up."""
    rng = np.random.default_rng(seed)

    def new(n):
        return profile.sample_prompts(rng, n), profile.sample_outputs(rng, n)

    prompt, out = new(slots)
    d = np.ones(slots, dtype=np.int64)  # next decode position
    seen = []
    warm = int(4 * profile.output.max_tokens)
    for t in range(warm + steps):
        fresh = out < 2  # requests with no decode step leave at once
        while fresh.any():
            prompt[fresh], out[fresh] = new(int(fresh.sum()))
            fresh = out < 2
        if t >= warm:
            seen.append(prompt + d - 1)
        d += 1
        done = d > out - 1
        if done.any():
            prompt[done], out[done] = new(int(done.sum()))
            d[done] = 1
    return np.concatenate(seen)


def test_steady_state_law_matches_a_simulated_continuous_batch():
    """The length-biased draw is what a running continuous batch shows at a random step (an
    independent slot-by-slot simulation); the per-request draw is not."""
    p = Profile("wide", Uniform(3, 9), LogNormal(20, 0.9, 1, 150))
    sim = _simulate_slots(p, slots=256, steps=600, seed=3)
    mine = decode_batch(p, 40_000, seed=4).context_tokens
    biased, naive = expected_decode_context(p), expected_decode_context(p, length_biased=False)
    assert biased - naive > 5  # the two laws differ clearly here
    se = sim.std() / math.sqrt(len(sim) / 40)  # slots and steps are correlated: be generous
    assert abs(sim.mean() - biased) < 4 * se + 0.2
    assert abs(mine.mean() - biased) < 5 * mine.std() / math.sqrt(len(mine))
    for q in (0.1, 0.5, 0.9):
        assert abs(np.quantile(sim, q) - np.quantile(mine, q)) <= 2, q


@pytest.mark.parametrize("name", list(PROFILES))
@pytest.mark.parametrize("biased", [True, False])
def test_decode_context_mean_matches_its_formula(name, biased):
    b = decode_batch(name, 50_000, seed=2, length_biased=biased)
    ctx = b.context_tokens
    assert abs(ctx.mean() - expected_decode_context(name, biased)) <= 5 * ctx.std() / math.sqrt(
        len(ctx)) + 1e-9
    assert (ctx >= b.prompt_tokens).all() and (ctx <= b.prompt_tokens + b.output_tokens - 2).all()


def test_math_contexts_grow_into_the_thousands_and_hh_stays_in_the_hundreds():
    assert 2000 < expected_decode_context("math-500") < 8000
    assert 100 < expected_decode_context("hh-rlhf") < 600


@settings(max_examples=40, deadline=None)
@given(prompt=st.integers(1, 5000), output=st.integers(2, 5000), b=st.integers(1, 300),
       seed=st.integers(0, 2**32))
def test_fixed_batches_keep_their_invariants(prompt, output, b, seed):
    x = decode_batch(fixed_profile(prompt, output), b, seed)
    assert ((x.context_tokens >= prompt) & (x.context_tokens <= prompt + output - 2)).all()
    assert ((x.remaining_tokens >= 1) & (x.remaining_tokens <= output - 1)).all()
    assert (x.context_tokens + x.remaining_tokens == prompt + output - 1).all()
    c = colocated_batch(fixed_profile(prompt, output), b, seed)
    pre = c.prefill_mask
    assert (c.step_tokens[pre] == max(prompt, MIN_PREFILL_PROMPT_TOKENS)).all()
    assert c.n_tokens == c.n_decode + c.step_tokens[pre].sum()


# ---- colocated batches ----------------------------------------------------------------------


@pytest.mark.parametrize("b,cap", [(1, 0), (2, 1), (3, 2), (16, 2), (32, 2), (33, 2), (63, 2),
                                   (64, 8), (128, 8), (256, 8)])
def test_prefill_cap_follows_the_seed(b, cap):
    assert prefill_cap(b) == cap


@pytest.mark.parametrize("b", [4, 32, 64, 256])
def test_drawn_prefill_counts_are_uniform_up_to_the_cap(b):
    cap = prefill_cap(b)
    n = np.array([colocated_batch("hh-rlhf", b, s).n_prefill for s in range(400)])
    assert n.min() >= 1 and n.max() <= cap
    freq = np.bincount(n, minlength=cap + 1)[1:]
    e = 400 / cap
    assert (np.abs(freq - e) <= 5 * math.sqrt(e * (1 - 1 / cap)) + 1).all(), freq


@pytest.mark.parametrize("name", list(PROFILES))
def test_colocated_batch_composition(name):
    c = colocated_batch(name, 64, seed=11, n_prefill=8)
    assert c.kind == "colocated" and (c.n_prefill, c.n_decode) == (8, 56)
    pre, dec = c.prefill_mask, c.decode_mask
    assert (c.prompt_tokens[pre] >= MIN_PREFILL_PROMPT_TOKENS).all()
    np.testing.assert_array_equal(c.step_tokens[pre], c.prompt_tokens[pre])
    np.testing.assert_array_equal(c.context_tokens[pre], 0)
    np.testing.assert_array_equal(c.remaining_tokens[pre], c.output_tokens[pre])
    np.testing.assert_array_equal(c.step_tokens[dec], 1)
    assert np.flatnonzero(pre).tolist() == list(range(56, 64))  # decode first, then prefill
    d = decode_batch(name, 56, seed=11)
    np.testing.assert_array_equal(c.context_tokens[dec], d.context_tokens)
    assert c.n_tokens == 56 + int(c.prompt_tokens[pre].sum())


def test_prefill_prompts_are_raised_to_1024_only_when_shorter():
    math500 = colocated_batch("math-500", 64, 0, n_prefill=8)
    np.testing.assert_array_equal(math500.step_tokens[math500.prefill_mask], 1024)
    long = colocated_batch("inferencemax-8k1k", 64, 0, n_prefill=8)
    assert (long.step_tokens[long.prefill_mask] >= 6553).all()
    assert len(set(long.step_tokens[long.prefill_mask].tolist())) > 1
    small = colocated_batch("fixed:100/50", 8, 0, n_prefill=2, min_prompt_tokens=200)
    np.testing.assert_array_equal(small.step_tokens[small.prefill_mask], 200)


def test_colocated_edge_sizes():
    one = colocated_batch("hh-rlhf", 1, 0)
    assert one.n_prefill == 0 and one.n_decode == 1
    allpre = colocated_batch("hh-rlhf", 3, 0, n_prefill=3)
    assert allpre.n_decode == 0 and allpre.to_dict()["mean_decode_context_tokens"] is None
    with pytest.raises(ConfigError, match="n_prefill=5 exceeds batch_size=4"):
        colocated_batch("hh-rlhf", 4, 0, n_prefill=5)


def test_batch_to_dict_is_json_and_complete():
    c = colocated_batch("math-500", 16, 3)
    d = json.loads(json.dumps(c.to_dict()))
    assert d["seed"] == 3 and d["profile"]["name"] == "math-500"
    assert d["params"]["prefill_cap"] == 2 and d["params"]["min_prompt_tokens"] == 1024
    assert d["requests"]["step_tokens"] == c.step_tokens.tolist()
    assert d["n_tokens"] == c.n_tokens
    assert "16" in c.describe()
    with pytest.raises(ValueError):
        c.context_tokens[0] = 1  # read-only


def test_batch_rejects_inconsistent_columns():
    good = decode_batch("fixed:10/4", 2, 0)
    cols = {k: getattr(good, k) for k in ("request_ids", "phase", "context_tokens",
                                          "step_tokens", "prompt_tokens", "output_tokens",
                                          "remaining_tokens")}
    with pytest.raises(ConfigError, match="decode requests process 1 token"):
        Batch("decode", good.profile, 0, **{**cols, "step_tokens": np.array([1, 2])})
    with pytest.raises(ConfigError, match="shape"):
        Batch("decode", good.profile, 0, **{**cols, "phase": np.array([1])})


# ---- routing one composed step --------------------------------------------------------------


def test_step_trace_rows_follow_the_batch():
    c = colocated_batch("fixed:40/10", 12, seed=4, n_prefill=2, min_prompt_tokens=50)
    t = step_trace(c, SyntheticRouter(TOY, TOY_P, 8))
    assert t.n_steps == 1 and t.n_tokens == c.n_tokens == 10 + 2 * 50
    rows = np.bincount(t.request_ids, minlength=c.batch_size)
    np.testing.assert_array_equal(rows, c.step_tokens)
    # each request's rows are contiguous and in batch order, with its phase
    np.testing.assert_array_equal(t.request_ids, np.repeat(c.request_ids, c.step_tokens))
    np.testing.assert_array_equal(t.phase, np.repeat(c.phase, c.step_tokens))
    assert (t.phase == PREFILL).sum() == 100 and (t.phase == DECODE).sum() == 10
    counts = t.counts(0)
    np.testing.assert_array_equal(counts.sum(axis=1), t.n_tokens * TOY.top_k)
    np.testing.assert_array_equal(t.counts(0, DECODE).sum(axis=1), 10 * TOY.top_k)
    w = t.meta.extra["workload"]
    assert w["n_prefill"] == 2 and w["batch_seed"] == 4 and t.meta.seed == 8


def test_step_trace_is_seeded_and_per_request():
    c = colocated_batch("hh-rlhf", 16, seed=2, n_prefill=2)
    d = decode_batch("hh-rlhf", 14, seed=2)
    r = SyntheticRouter(TOY, TOY_P, 5)
    a, again = step_trace(c, r), step_trace(c, SyntheticRouter(TOY, TOY_P, 5))
    np.testing.assert_array_equal(a.expert_ids, again.expert_ids)
    assert not np.array_equal(a.expert_ids, step_trace(c, r, step=1).expert_ids)
    # a decode request routes the same whatever else the batch holds
    np.testing.assert_array_equal(a.expert_ids[:14], step_trace(d, r).expert_ids)
    # a model name builds the model's preset router with the batch's seed
    t = step_trace(decode_batch("fixed:64/64", 4, 21), "qwen3-30b-a3b")
    assert t.meta.seed == 21 and t.meta.model == "qwen3-30b-a3b" and t.n_tokens == 4


def test_route_step_follows_the_popularity_law():
    """No drift, no correlation: each row's top-1 is a draw from softmax(base logits)."""
    shape = RouterShape("toy", 8, 2, (0,))
    p = TOY_P.replace(alpha=0.7, drift_sigma=0.0, reuse_rho=0.0, layer_kappa=0.0)
    r = SyntheticRouter(shape, p, 1)
    n = 8000
    t = r.route_step(np.r_[np.ones(n // 2, int), n // 2], np.r_[np.ones(n // 2, int), 0])
    law = np.exp(r.base_logits[0]) / np.exp(r.base_logits[0]).sum()
    for rows in (slice(0, n // 2), slice(n // 2, n)):  # decode rows, then one long prompt
        freq = np.bincount(t.expert_ids[rows, 0, 0], minlength=8) / (n // 2)
        assert (np.abs(freq - law) <= 4.5 * np.sqrt(law * (1 - law) / (n // 2)) + 1e-3).all()
    assert law.max() > 2 * law.min()


def test_prompt_tokens_carry_temporal_reuse():
    """Consecutive prompt tokens share experts more than chance when reuse_rho is high."""
    shape = RouterShape("toy", 32, 4, (0,))
    base = TOY_P.replace(alpha=50.0, drift_sigma=0.0, layer_kappa=0.0)

    def overlap(rho):
        t = SyntheticRouter(shape, base.replace(reuse_rho=rho), 3).route_step([2000], [PREFILL])
        ids = t.expert_ids[:, 0]
        return np.mean([len(set(ids[i]) & set(ids[i + 1])) for i in range(len(ids) - 1)])

    chance = iid_overlap(32, 4)  # 0.5 shared experts between independent tokens
    assert abs(overlap(0.0) - chance) < 0.1
    assert overlap(0.95) > chance + 1.0


def test_ar1_matches_the_recursion():
    rng = np.random.default_rng(0)
    s = rng.standard_normal((3, 4)).astype(np.float32)
    e = rng.standard_normal((50, 3, 4)).astype(np.float32)
    a = 0.7
    x, last = _ar1(s, e, a, math.sqrt(1 - a * a))
    y, ref = s.astype(np.float64), []
    for t in range(50):
        y = a * y + math.sqrt(1 - a * a) * e[t]
        ref.append(y)
    np.testing.assert_allclose(x, np.array(ref), atol=1e-5)
    np.testing.assert_array_equal(last, x[-1])


def test_route_step_of_some_layers_equals_those_columns_of_all():
    """Routing a subset of the layers gives bit for bit the same routes for them (the step
    simulator routes only the layers it samples)."""
    r = SyntheticRouter(RouterShape("toy", 16, 2, (1, 3, 5, 7)), TOY_P, 4)
    tok, ph = [1, 40, 1, 3], [DECODE, PREFILL, DECODE, PREFILL]
    full = r.route_step(tok, ph, [5, 9, 2, 8], step=3)
    part = r.route_step(tok, ph, [5, 9, 2, 8], step=3, layer_ids=[7, 3])
    assert part.meta.layer_ids == (3, 7) and full.meta.layer_ids == (1, 3, 5, 7)
    np.testing.assert_array_equal(part.expert_ids, full.expert_ids[:, [1, 3]])
    np.testing.assert_array_equal(part.request_ids, full.request_ids)
    c = colocated_batch("hh-rlhf", 8, seed=1, n_prefill=1)
    np.testing.assert_array_equal(step_trace(c, r, layer_ids=[5]).expert_ids,
                                  step_trace(c, r).expert_ids[:, [2]])
    for bad in ([2], [], ["x"], [1, 9]):
        with pytest.raises(ConfigError, match="layer_ids"):
            r.route_step(tok, ph, layer_ids=bad)


def test_route_step_rejects_bad_input():
    r = SyntheticRouter(TOY, TOY_P, 0)
    for args, match in (
        (([1, 2], [DECODE]), "phase must be a non-empty 1-D array"),
        (([0, 1], [DECODE, DECODE]), "step_tokens must be >= 1"),
        (([1, 1], [DECODE, 7]), "phase must be 0"),
        (([1.5], [DECODE]), "step_tokens must be integers"),
        (([], []), "non-empty"),
    ):
        with pytest.raises(ConfigError, match=match):
            r.route_step(*args)
    with pytest.raises(ConfigError, match="distinct"):
        r.route_step([1, 1], [DECODE, DECODE], [3, 3])
    with pytest.raises(ConfigError, match="step must be an int >= 0"):
        r.route_step([1], [DECODE], step=-1)
    with pytest.raises(ConfigError, match="expected a Batch"):
        step_trace("not a batch", r)


# ---- user profiles and bad input ------------------------------------------------------------


def test_user_profile_from_toml_and_json(tmp_path):
    toml = tmp_path / "chat.toml"
    toml.write_text("""
source = "my logs"
template_tokens = 12
[prompt]
kind = "lognormal"
mean = 300
sigma = 0.8
high = 4096
[output]
kind = "mixture"
components = [{weight = 1, kind = "fixed", tokens = 50},
              {weight = 3, kind = "uniform", low = 100, high = 200}]
""")
    p = load_profile(toml)
    assert p.name == "chat" and p.template_tokens == 12 and p.source == "my logs"
    assert p.prompt.mean() == pytest.approx(300, abs=1e-6)
    assert p.output.mean() == pytest.approx(0.25 * 50 + 0.75 * 150)
    js = tmp_path / "again.json"
    js.write_text(json.dumps(p.to_dict()))
    q = get_profile(str(js))
    assert q.name == "chat" and q.to_dict() == p.to_dict()
    assert decode_batch(js, 8, 0).profile.name == "chat"
    short = tmp_path / "longer.json"
    short.write_text(json.dumps({"base": "math-500", "output": {"kind": "fixed", "tokens": 9000}}))
    s = load_profile(short)
    assert s.name == "longer" and s.prompt == PROFILES["math-500"].prompt
    assert s.output.mean() == 9000
    assert get_profile({"name": "d", "prompt": {"kind": "fixed", "tokens": 3},
                        "output": {"kind": "empirical", "values": [2, 4]}}).output.mean() == 3


def test_fixed_spec():
    p = get_profile("fixed:2048/512")
    assert (p.prompt.mean(), p.output.mean()) == (2048, 512)
    with pytest.raises(ConfigError, match="expected 'fixed:PROMPT/OUTPUT'"):
        get_profile("fixed:abc")


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(ConfigError, match=r"workload profile 'sharegpt': unknown \(known: "
                                          r"fixed, hh-rlhf, inferencemax-1k1k"):
        decode_batch("sharegpt", 8, 0)


@pytest.mark.parametrize("bad", [-1, 0, 2.5, True, "8"])
def test_bad_batch_size(bad):
    with pytest.raises(ConfigError, match="batch_size must be an int >= 1"):
        decode_batch("hh-rlhf", bad, 0)
    with pytest.raises(ConfigError, match="batch_size must be an int >= 1"):
        colocated_batch("hh-rlhf", bad, 0)


@pytest.mark.parametrize("bad", [-1, 1.0, "0", None])
def test_bad_seed(bad):
    with pytest.raises(ConfigError, match="seed must be an int >= 0"):
        decode_batch("hh-rlhf", 4, bad)


BAD_FILES = [
    ("syntax.toml", "prompt = [", "not valid TOML"),
    ("syntax.json", "{", "not valid JSON"),
    ("list.json", "[1, 2]", "expected a table/object"),
    ("unknown.json", '{"prompt": {"kind": "fixed", "tokens": 1}, "output": {"kind": "fixed", '
                     '"tokens": 2}, "colour": 1}', "unknown field 'colour'"),
    ("missing.json", '{"prompt": {"kind": "fixed", "tokens": 1}}', "missing field 'output'"),
    ("sigma.toml", '[prompt]\nkind = "lognormal"\nmedian = 10\nsigma = -1\nhigh = 99\n'
                   '[output]\nkind = "fixed"\ntokens = 5',
     "prompt: lognormal.sigma must be a finite"),
    ("order.toml", '[prompt]\nkind = "uniform"\nlow = 9\nhigh = 3\n'
                   '[output]\nkind = "fixed"\ntokens = 5', "need low <= high"),
    ("kind.toml", '[prompt]\nkind = "zipf"\n[output]\nkind = "fixed"\ntokens = 5',
     "kind 'zipf': unknown .known: empirical, fixed, lognormal, mixture, uniform"),
    ("noweight.json", '{"prompt": {"kind": "fixed", "tokens": 1}, "output": {"kind": "mixture", '
                      '"components": [{"kind": "fixed", "tokens": 2}]}}',
     r"components\[0\]: expected a table with 'weight'"),
    ("both.json", '{"prompt": {"kind": "lognormal", "mean": 5, "median": 5, "sigma": 1, '
                  '"high": 9}, "output": {"kind": "fixed", "tokens": 2}}', "exactly one of"),
    ("zero.json", '{"prompt": {"kind": "fixed", "tokens": 0}, "output": {"kind": "fixed", '
                  '"tokens": 2}}', r"tokens must be in \[1, "),
    ("frac.json", '{"prompt": {"kind": "fixed", "tokens": 1.5}, "output": {"kind": "fixed", '
                  '"tokens": 2}}', "tokens must be an integer"),
    ("base.json", '{"base": "nope"}', "base: workload profile 'nope': unknown"),
    ("template.json", '{"template_tokens": -3, "prompt": {"kind": "fixed", "tokens": 1}, '
                      '"output": {"kind": "fixed", "tokens": 2}}', "template_tokens must be in"),
    ("far.json", '{"prompt": {"kind": "lognormal", "median": 1e12, "sigma": 0.1, "high": 9}, '
                 '"output": {"kind": "fixed", "tokens": 2}}', "puts no probability"),
    ("suffix.yaml", "x: 1", "must end in .json or .toml"),
]


@pytest.mark.parametrize("fname,text,match", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_malformed_profile_file_gives_one_clear_error(tmp_path, fname, text, match):
    f = tmp_path / fname
    f.write_text(text)
    with pytest.raises(ConfigError, match=match) as exc:
        load_profile(f)
    msg = str(exc.value)
    assert msg.startswith(f"workload profile file {str(f)!r}: ")
    assert msg.count("workload profile file") == 1


def test_missing_file_and_profile_without_decode_steps(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_profile(tmp_path / "absent.toml")
    with pytest.raises(ConfigError, match="no request ever has a decode step"):
        decode_batch("fixed:10/1", 4, 0)
    with pytest.raises(ConfigError, match="unknown field 'mean'"):
        dist_from_dict({"kind": "uniform", "low": 1, "high": 2, "mean": 3})


# ---- docs/workloads.md states what the code does ----------------------------------------------

DOC = __import__("pathlib").Path(__file__).resolve().parents[1] / "docs" / "workloads.md"


def test_the_docs_table_matches_the_profiles():
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0].startswith("`") and cells[0].strip("`") in PROFILES:
            rows[cells[0].strip("`")] = [float(c) for c in cells[1:]]
    assert set(rows) == set(PROFILES)
    for name, doc in rows.items():
        p = PROFILES[name]
        code = [p.mean_prompt_tokens(), p.prompt.quantile(0.5) + p.template_tokens,
                p.mean_output_tokens(), p.output.quantile(0.5), expected_decode_context(name),
                expected_decode_context(name, False)]
        assert doc == [round(x) for x in code], name


@pytest.mark.parametrize("lang", ["toml", "json"])
def test_the_docs_profile_files_load(lang, tmp_path):
    import re

    blocks = re.findall(rf"^```{lang}\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.M | re.S)
    assert blocks
    for i, text in enumerate(blocks):
        f = tmp_path / f"block{i}.{lang}"
        f.write_text(text)
        assert decode_batch(f, 4, 0).batch_size == 4
