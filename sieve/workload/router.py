"""Synthetic MoE router: seeded token-level routing traces with skewed, drifting popularity,
per-request temporal reuse and weak inter-layer correlation.

This module owns the generative model and its per-model presets. It must not compute reported
statistics (:mod:`sieve.workload.stats`) or fit parameters (:mod:`sieve.calibration.router_fit`,
which produced the preset values below). Model (docs/traces.md, "Synthetic router"):

* Layer ``l`` at step ``t`` has expert popularity ``p_l(t) = softmax(a_l + d_l(t))``. The static
  part ``a_l = log Dirichlet(alpha)`` (alpha -> inf: uniform); the drift ``d_l(t)`` is an AR(1)
  process per expert with coefficient ``drift_phi`` and stationary std ``drift_sigma``, shared
  by all tokens of the step.
* A token's scores are ``a_l + d_l(t) + G(u)``, where ``u`` is a standard-normal latent of its
  request and ``G`` maps it to a standard Gumbel (``G(u) = -log(-log Phi(u))``); the token takes
  the ``top_k`` highest scores. Marginally this is exact sampling of ``top_k`` experts without
  replacement from ``p_l(t)`` (Plackett-Luce), whatever the correlations below.
* Temporal reuse: a request's latent is AR(1) over its tokens with coefficient ``reuse_rho``,
  so consecutive tokens of a request tend to pick the same experts.
* Inter-layer correlation: ``u_l = sqrt(1 - kappa) eta_l + sqrt(kappa) c[perm_l]`` with a
  per-request vector ``c`` shared by all layers and a fixed random permutation per layer, so
  experts of different layers are weakly paired ("expert affinity").

Randomness is explicit: an int ``seed`` (or a Generator, from which one int is drawn) is
recorded in the trace metadata. Static popularity uses stream ``[seed, 0]`` (the same for every
batch size); dynamics use ``[seed, 1, batch_size]``; one mixed step
(:meth:`SyntheticRouter.route_step`) uses ``[seed, 2, step]`` and ``[seed, 2, step, request]``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from sieve.errors import ConfigError, lookup
from sieve.validate import check_int, check_memory, check_name, check_sequence
from sieve.workload.trace import DECODE, MAX_EXPERTS, PREFILL, RoutingTrace, TraceMeta

__all__ = [
    "DEFAULT_PARAMS",
    "DEFAULT_ROUTER",
    "PRESET_FITS",
    "PRESET_SOURCES",
    "ROUTER_PRESETS",
    "RouterParams",
    "RouterShape",
    "SyntheticRouter",
    "dirichlet_logits",
    "generate_trace",
    "get_router_params",
    "resolve_router",
]


@dataclass(frozen=True)
class RouterParams:
    """Parameters of the synthetic router (all dimensionless; see the module docstring).

    Attributes:
        alpha: Dirichlet concentration of the static per-layer popularity (> 0).
        drift_sigma: stationary std of the shared per-step logit drift (>= 0).
        drift_phi: AR(1) coefficient of the drift per step, in [0, 1).
        reuse_rho: AR(1) coefficient of a request's latent per token, in [0, 1).
        layer_kappa: share of the latent variance common to all layers, in [0, 1].
        mean_output_tokens: mean request length in decode steps (geometric); None = requests
            last for the whole trace.
    """

    alpha: float
    drift_sigma: float
    drift_phi: float
    reuse_rho: float
    layer_kappa: float
    mean_output_tokens: float | None = None

    def __post_init__(self) -> None:
        checks = (
            ("alpha", self.alpha > 0),
            ("drift_sigma", self.drift_sigma >= 0),
            ("drift_phi", 0 <= self.drift_phi < 1),
            ("reuse_rho", 0 <= self.reuse_rho < 1),
            ("layer_kappa", 0 <= self.layer_kappa <= 1),
            ("mean_output_tokens", self.mean_output_tokens is None or self.mean_output_tokens >= 1),
        )
        for name, ok in checks:
            if not ok or not math.isfinite(getattr(self, name) or 0.0):
                raise ConfigError(f"router parameter {name}={getattr(self, name)!r} out of range")

    def replace(self, **changes: float | None) -> RouterParams:
        return dataclasses.replace(self, **changes)

# Global parameters, fitted by sieve.calibration.router_fit
# (`python -m sieve.calibration.router_calibrate`, 2026-11-29; full output in
# docs/calibration/router_fit.json and fit quality in docs/validation.md, "Routing traces and
# synthetic router calibration").
# reuse_rho: fitted to the same-slot decode overlap of the real Qwen1.5-MoE vLLM log
#   (shared/traces/qwen15_moe_vllm_moe_logger_gsm8k; models-and-traces.md §C.3): 0.1026.
# layer_kappa: fitted to the mean top-1 inter-layer NMI (Miller-Madow) of the allenai
#   transition matrices (models-and-traces.md §C.3): OLMoE 0.8287 (used for fine-grained
#   models), Mixtral-8x7B 0.4208 (used for Mixtral presets).
# drift_phi: not identifiable from any single-step statistic or from the data in shared/;
#   0.9 per step (hot set renewed over ~10 decode steps) is an assumption, see docs/traces.md.
_RHO = 0.1026
_KAPPA_FINE = 0.8287
_KAPPA_MIXTRAL = 0.4208
_PHI = 0.9


def _preset(alpha: float, drift_sigma: float, kappa: float) -> RouterParams:
    return RouterParams(
        alpha=alpha, drift_sigma=drift_sigma, drift_phi=_PHI, reuse_rho=_RHO, layer_kappa=kappa
    )


# (alpha, drift_sigma) fitted by sieve.calibration.router_fit.fit_popularity. "joint" (the default):
# the seed's Section 3 numbers (Figure 3 act-ratio, Figure 5 bins;
# sieve.calibration.router_fit.SEED_TARGETS) plus a real long-run aggregate skew: OLMoE's median
# normalised entropy for fine-grained models, Fiddler's MMLU max/mean and entropy for Mixtral
# (models-and-traces.md §C.1). "seed": the seed's numbers alone (Mixtral keeps its Fiddler term).
# Fit losses: docs/calibration/*.json.
_GPT_OSS = _preset(1.000, 2.500, _KAPPA_FINE)  # joint loss 5.57 (5 seed targets + Hn)
_QWEN3 = _preset(0.6037, 0.0000, _KAPPA_FINE)  # joint loss 12.64 (3 seed targets + Hn)
_QWEN3_NEXT = _preset(0.7383, 0.0002, _KAPPA_FINE)  # joint loss 4.82 (5 seed targets + Hn)
_MIXTRAL = _preset(18.19, 0.0003, _KAPPA_MIXTRAL)  # loss 1.70 (2 seed + 2 Fiddler targets)
_GPT_OSS_SEED = _preset(0.3120, 1.930, _KAPPA_FINE)  # seed-only loss 3.65
_QWEN3_SEED = _preset(0.1573, 0.0002, _KAPPA_FINE)  # seed-only loss 0.21
_QWEN3_NEXT_SEED = _preset(0.6810, 0.3138, _KAPPA_FINE)  # seed-only loss 3.97

#: Default for models without a preset: the Qwen3-30B-A3B fit (a fine-grained top-8 model).
DEFAULT_PARAMS = _QWEN3


def _family(gpt_oss: RouterParams, qwen3: RouterParams, qwen3_next: RouterParams):
    # Models without seed targets reuse their family's fit ("transfer", PRESET_SOURCES).
    return {
        "gpt-oss-120b": gpt_oss,
        "gpt-oss-20b": gpt_oss,
        "qwen3-30b-a3b": qwen3,
        "qwen3-next-80b-a3b": qwen3_next,
        "qwen3.5-397b-a17b": qwen3_next,
        "mixtral-8x22b": _MIXTRAL,
        "mixtral-8x7b": _MIXTRAL,
        "deepseek-v3": qwen3,
    }


#: Per-model presets of the default ("joint") fit.
ROUTER_PRESETS: dict[str, RouterParams] = _family(_GPT_OSS, _QWEN3, _QWEN3_NEXT)
#: Preset sets by fit: "joint" (seed + real aggregate skew, default) and "seed" (seed only).
PRESET_FITS: dict[str, dict[str, RouterParams]] = {
    "joint": ROUTER_PRESETS,
    "seed": _family(_GPT_OSS_SEED, _QWEN3_SEED, _QWEN3_NEXT_SEED),
}

#: Where each preset comes from (shown in docs/validation.md).
PRESET_SOURCES: dict[str, str] = {
    "gpt-oss-120b": "fitted (seed Fig. 3/5 + OLMoE Hn)",
    "gpt-oss-20b": "transfer from gpt-oss-120b",
    "qwen3-30b-a3b": "fitted (seed Fig. 5 + OLMoE Hn)",
    "qwen3-next-80b-a3b": "fitted (seed Fig. 5 + OLMoE Hn)",
    "qwen3.5-397b-a17b": "transfer from qwen3-next-80b-a3b (same block design, E=512, k=10)",
    "mixtral-8x22b": "fitted (seed Fig. 3/5 + Fiddler skew)",
    "mixtral-8x7b": "transfer from mixtral-8x22b",
    "deepseek-v3": "transfer from qwen3-30b-a3b (fine-grained top-8); held out",
}


#: The fit a model without one of its own gets (:data:`DEFAULT_PARAMS`).
DEFAULT_ROUTER = "qwen3-30b-a3b"


def resolve_router(model: str, choice: str | None = None, fit: str = "joint"
                   ) -> tuple[str, RouterParams, str]:
    """Which synthetic-router fit a model's runs use: ``(fit name, params, how)``.

    ``choice`` (a key of :data:`ROUTER_PRESETS`, i.e. the model whose fit to borrow) wins;
    otherwise the model's own preset; otherwise :data:`DEFAULT_ROUTER`'s, and ``how`` says it
    was a default ("chosen", "own", "default: no fit for this model").

    Raises:
        ConfigError: an unknown ``choice`` (the message lists the fits).
    """
    presets = lookup(PRESET_FITS, fit, "router fit")
    if choice is not None:
        key = lookup({k: k for k in presets}, choice, "router (--router)")
        return key, presets[key], "chosen"
    key = model.strip().lower()
    if key in presets:
        return key, presets[key], "own"
    return DEFAULT_ROUTER, presets[DEFAULT_ROUTER], "default: no fit for this model"


def get_router_params(model: str, fit: str = "joint") -> RouterParams:
    """Preset for ``model`` (case-insensitive) from preset set ``fit`` ("joint" or "seed").

    Raises:
        ConfigError: unknown fit or model; the message lists the known names.
    """
    return lookup(lookup(PRESET_FITS, fit, "router fit"), model, "router preset")


@dataclass(frozen=True)
class RouterShape:
    """What the router needs to know about a model: routed experts, top-k and MoE layers."""

    name: str
    n_experts: int
    top_k: int
    layer_ids: tuple[int, ...]

    def __post_init__(self) -> None:
        who = f"router shape {self.name!r}"
        check_name("router shape", "name", self.name)
        # expert ids are stored as int16 in traces (sieve.workload.trace.MAX_EXPERTS)
        n_e = check_int(who, "n_experts", self.n_experts, lo=1, hi=MAX_EXPERTS)
        check_int(who, "top_k", self.top_k, lo=1, hi=n_e)
        object.__setattr__(self, "layer_ids", check_sequence(
            who, "layer_ids", self.layer_ids, min_len=1,
            item=lambda n, x: check_int(who, n, x, lo=0)))

    @property
    def n_layers(self) -> int:
        return len(self.layer_ids)

    @classmethod
    def from_model(cls, name: str) -> RouterShape:
        """Shape of a model-zoo preset (:func:`sieve.model.moe.get_model`)."""
        from sieve.model.moe import get_model

        m = get_model(name)
        return cls(m.name, m.n_experts, m.top_k, tuple(m.moe_layer_ids))


def dirichlet_logits(alpha: float, uniforms: np.ndarray) -> np.ndarray:
    """``log`` of Gamma(alpha) variates from uniforms (inverse CDF, so a fixed stream of uniforms
    gives a smooth function of alpha): normalised, ``exp`` of a row is Dirichlet(alpha)."""
    from scipy.special import gammaincinv  # (here: scipy.special takes ~0.2 s to import)

    g = gammaincinv(alpha, uniforms)
    return np.log(np.maximum(g, 1e-300))


def _seed_of(seed: int | np.random.Generator) -> int:
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2**63 - 1))
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        return int(seed)
    raise ConfigError(f"seed: expected an int >= 0 or a numpy Generator, got {seed!r}")


def _topk(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest scores per row, highest first."""
    E = scores.shape[1]
    idx = np.argpartition(scores, E - k, axis=1)[:, E - k :]
    order = np.argsort(-np.take_along_axis(scores, idx, axis=1), axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1)


def _ar1(state: np.ndarray, eps: np.ndarray, a: float, b: float):
    """``x_t = a x_{t-1} + b eps_t`` along axis 0 from ``x_{-1} = state``: ``(x, x[-1])``."""
    x = eps * np.float32(b)
    if a != 0.0:
        a32 = np.float32(a)
        x[0] += a32 * state
        for t in range(1, x.shape[0]):
            x[t] += a32 * x[t - 1]
    return x, x[-1]


def _gumbel(u: np.ndarray) -> np.ndarray:
    """Standard-normal -> standard-Gumbel quantile transform (monotone)."""
    from scipy.special import log_ndtr

    return -np.log(-log_ndtr(u))


class SyntheticRouter:
    """Seeded generator of :class:`RoutingTrace` for one model shape and parameter set.

    Args:
        shape: a :class:`RouterShape` or a model-zoo name.
        params: router parameters; None = the model's preset (or :data:`DEFAULT_PARAMS`).
        fit: preset set used when ``params`` is None: "joint" (default) or "seed".
        seed: int >= 0 or ``np.random.Generator`` (one int is drawn from it and recorded).
        popularity: optional ``(n_layers, n_experts)`` expert shares (e.g. from a real
            :class:`sieve.workload.trace.CountTrace`) replacing the Dirichlet static popularity.
    """

    def __init__(
        self,
        shape: RouterShape | str,
        params: RouterParams | None = None,
        seed: int | np.random.Generator = 0,
        popularity: np.ndarray | None = None,
        fit: str = "joint",
    ):
        self.fit = "custom" if params is not None else fit
        if isinstance(shape, str):
            name = shape
            shape = RouterShape.from_model(shape)
            if params is None:
                presets = lookup(PRESET_FITS, fit, "router fit")
                params = presets.get(name.strip().lower(), DEFAULT_PARAMS)
        self.shape = shape
        self.params = params if params is not None else DEFAULT_PARAMS
        self.seed = _seed_of(seed)
        L, E = shape.n_layers, shape.n_experts
        # static state: uniforms, Gamma variates and their log (float64), permutations (int64)
        check_memory(f"synthetic router for {shape.name!r} ({L} layers x {E} experts)",
                     48.0 * L * E, "the model has too many layers or experts")
        rng = np.random.default_rng([self.seed, 0])
        if popularity is None:
            self.base_logits = dirichlet_logits(self.params.alpha, rng.random((L, E)))
        else:
            pop = np.asarray(popularity, dtype=float)
            if pop.shape != (L, E) or np.any(pop < 0) or np.any(pop.sum(axis=1) <= 0):
                raise ConfigError(f"popularity: expected ({L}, {E}) non-negative shares")
            self.base_logits = np.log(np.maximum(pop / pop.sum(axis=1, keepdims=True), 1e-300))
        self.perms = np.stack([rng.permutation(E) for _ in range(L)])

    def memory_bytes(self, batch_size: int, n_steps: int, prompt_tokens: int = 0) -> float:
        """Estimated peak memory of :meth:`generate` (bytes), used to refuse it before it runs.

        Per-request latents ``(B, L, E)`` float32 (four copies while they advance), per-layer
        scores ``(B, E)`` (about 40 bytes per element with the top-k temporaries) and about 9
        bytes per routed (token, layer, slot) for the ids, their concatenation and validation,
        plus 18 bytes of request id and phase per token.
        """
        B, L = int(batch_size), self.shape.n_layers
        E, k = self.shape.n_experts, self.shape.top_k
        m = self.params.mean_output_tokens
        arrivals = 1 + (math.ceil(n_steps / m) if m else 0)
        tokens = B * n_steps + B * int(prompt_tokens) * arrivals
        return 16.0 * B * L * E + 40.0 * B * E + 9.0 * tokens * L * k + 18.0 * tokens

    def generate(self, batch_size: int, n_steps: int, *, prompt_tokens: int = 0) -> RoutingTrace:
        """Generate ``n_steps`` steps of a continuous batch of ``batch_size`` requests.

        Args:
            batch_size: concurrent requests; each produces one decode token per step.
            n_steps: number of steps (forward passes).
            prompt_tokens: if > 0, every request starts with a prefill of this many tokens in
                the step it arrives (all requests arrive at step 0; with churn, replacements
                arrive later); 0 = a decode-only batch in steady state.

        Returns:
            The trace; ``meta.seed`` and ``meta.extra["router_params"]`` record the inputs.
        """
        for name, v, lo in (
            ("batch_size", batch_size, 1),
            ("n_steps", n_steps, 1),
            ("prompt_tokens", prompt_tokens, 0),
        ):
            check_int("synthetic router", name, v, lo=lo)
        check_memory(f"synthetic router: batch_size {batch_size} x {n_steps} step(s) of "
                     f"{self.shape.name!r}", self.memory_bytes(batch_size, n_steps, prompt_tokens),
                     "lower the batch size or the number of steps")
        p, sh = self.params, self.shape
        B, L, E, k = int(batch_size), sh.n_layers, sh.n_experts, sh.top_k
        rng = np.random.default_rng([self.seed, 1, B])
        a_rho, b_rho = p.reuse_rho, math.sqrt(1 - p.reuse_rho**2)
        w_own, w_com = math.sqrt(1 - p.layer_kappa), math.sqrt(p.layer_kappa)
        drift = p.drift_sigma * rng.standard_normal((L, E))
        eta = rng.standard_normal((B, L, E), dtype=np.float32)
        com = rng.standard_normal((B, E), dtype=np.float32)
        req = np.arange(B, dtype=np.int64)
        next_req = B
        life = self._lifetimes(rng, B)
        arriving = np.full(B, prompt_tokens > 0)
        ids_steps, req_steps, phase_steps = [], [], []
        for _ in range(n_steps):
            logits = self.base_logits + drift
            rows_ids, rows_req, rows_phase = [], [], []
            for slot in np.flatnonzero(arriving):  # prefill: the prompt advances the latent
                pre = np.empty((prompt_tokens, L, k), dtype=np.int16)
                for t in range(prompt_tokens):
                    pre[t] = self._route(
                        logits, eta[slot : slot + 1], com[slot : slot + 1], w_own, w_com
                    )[0]
                    if t + 1 < prompt_tokens:
                        eta[slot], com[slot] = self._advance(
                            rng, eta[slot], com[slot], a_rho, b_rho
                        )
                rows_ids.append((slot, pre))
            dec = ~arriving
            dec_ids = self._route(logits, eta[dec], com[dec], w_own, w_com)
            if not rows_ids:  # decode-only step: one row per slot, in slot order
                ids_steps.append(dec_ids)
                req_steps.append(req.copy())
                phase_steps.append(np.full(B, DECODE, dtype=np.int8))
                rows_ids = None
            # assemble rows in slot order: a slot contributes its prompt or its decode token
            pre_map = dict(rows_ids or ())
            out_ids, d = [], 0
            for slot in range(B if rows_ids is not None else 0):
                if slot in pre_map:
                    out_ids.append(pre_map[slot])
                    rows_phase.append(np.full(prompt_tokens, PREFILL, dtype=np.int8))
                    rows_req.append(np.full(prompt_tokens, req[slot]))
                else:
                    out_ids.append(dec_ids[d : d + 1])
                    d += 1
                    rows_phase.append(np.full(1, DECODE, dtype=np.int8))
                    rows_req.append(req[slot : slot + 1])
            if rows_ids is not None:
                ids_steps.append(np.concatenate(out_ids))
                req_steps.append(np.concatenate(rows_req))
                phase_steps.append(np.concatenate(rows_phase))
            # advance: drift, every request's latent by one token, churn
            drift = p.drift_phi * drift + math.sqrt(1 - p.drift_phi**2) * p.drift_sigma * (
                rng.standard_normal((L, E))
            )
            eta, com = self._advance(rng, eta, com, a_rho, b_rho)
            arriving[:] = False
            life -= 1
            done = np.flatnonzero(life <= 0)
            if done.size:
                eta[done] = rng.standard_normal((done.size, L, E), dtype=np.float32)
                com[done] = rng.standard_normal((done.size, E), dtype=np.float32)
                req[done] = np.arange(next_req, next_req + done.size)
                next_req += done.size
                life[done] = self._lifetimes(rng, done.size)
                arriving[done] = prompt_tokens > 0
        sizes = [len(x) for x in ids_steps]
        meta = TraceMeta(
            model=sh.name,
            n_experts=E,
            top_k=k,
            layer_ids=sh.layer_ids,
            source="sieve synthetic router",
            seed=self.seed,
            extra={
                "router_params": dataclasses.asdict(p),
                "router_fit": self.fit,
                "batch_size": B,
                "prompt_tokens": int(prompt_tokens),
            },
        )
        return RoutingTrace(
            expert_ids=np.concatenate(ids_steps),
            step_offsets=np.concatenate([[0], np.cumsum(sizes)]),
            request_ids=np.concatenate(req_steps),
            phase=np.concatenate(phase_steps),
            meta=meta,
        )

    def route_step(
        self,
        step_tokens,
        phase,
        request_ids=None,
        *,
        step: int = 0,
        extra: dict | None = None,
        layer_ids=None,
    ) -> RoutingTrace:
        """Route ONE step of a mixed batch, each request in its steady state.

        Request ``i`` contributes ``step_tokens[i]`` consecutive rows (1 for a decode request,
        its prompt for a prefill request), marked ``phase[i]`` and ``request_ids[i]``, in the
        order given. Each request's latent starts from its stationary law N(0, 1) (what
        :meth:`generate` reaches after any history, so one step needs no history) and advances
        one token per row as in :meth:`generate`; the drift is drawn from its stationary law.

        Randomness: the drift uses stream ``[seed, 2, step]`` and request ``r`` uses
        ``[seed, 2, step, r]``, so a request's routes do not depend on the rest of the batch.

        Args:
            step_tokens: ``(n,)`` ints >= 1, rows of each request.
            phase: ``(n,)`` :data:`PREFILL` or :data:`DECODE` per request.
            request_ids: ``(n,)`` distinct ints >= 0; None = ``0..n-1``.
            step: step index (>= 0), selects the streams.
            extra: JSON-serialisable details merged into ``meta.extra``.
            layer_ids: route only these MoE layers (model layer ids, members of the shape's
                ``layer_ids``); None = all. The routes of a layer are the same whether the
                other layers are routed or not (the random streams are drawn in full; only
                the top-k of the other layers is skipped), so a step simulator that samples
                layers asks for just those.

        Returns:
            A one-step :class:`RoutingTrace`; ``meta.seed`` is the router's seed and
            ``meta.layer_ids`` the layers routed.
        """
        what = "synthetic router step"
        tok, ph = np.asarray(step_tokens), np.asarray(phase)
        rid = np.arange(tok.size) if request_ids is None else np.asarray(request_ids)
        for name, a in (("step_tokens", tok), ("phase", ph), ("request_ids", rid)):
            if a.ndim != 1 or a.size < 1 or a.shape != tok.shape:
                raise ConfigError(f"{what}: {name} must be a non-empty 1-D array, one entry "
                                  f"per request (got shape {a.shape}, step_tokens {tok.shape})")
            if not np.issubdtype(a.dtype, np.integer):
                raise ConfigError(f"{what}: {name} must be integers, got {a.dtype}")
        if (tok < 1).any():
            raise ConfigError(f"{what}: step_tokens must be >= 1")
        if not np.isin(ph, (PREFILL, DECODE)).all():
            raise ConfigError(f"{what}: phase must be {PREFILL} (prefill) or {DECODE} (decode)")
        if (rid < 0).any() or np.unique(rid).size != rid.size:
            raise ConfigError(f"{what}: request_ids must be distinct ints >= 0")
        if not isinstance(step, (int, np.integer)) or isinstance(step, bool) or step < 0:
            raise ConfigError(f"{what}: step must be an int >= 0, got {step!r}")
        p, sh = self.params, self.shape
        L, E, k = sh.n_layers, sh.n_experts, sh.top_k
        if layer_ids is None:
            js = np.arange(L)
        else:
            pos = {lid: j for j, lid in enumerate(sh.layer_ids)}
            try:
                sel = sorted({int(x) for x in layer_ids})
            except (TypeError, ValueError):
                raise ConfigError(f"{what}: layer_ids must be layer numbers, got "
                                  f"{layer_ids!r}") from None
            bad = [x for x in sel if x not in pos]
            if bad or not sel:
                raise ConfigError(f"{what}: layer_ids must be a non-empty subset of the "
                                  f"model's MoE layers {sh.layer_ids[0]}..{sh.layer_ids[-1]}"
                                  f" (got {bad[0] if bad else 'none'})")
            js = np.array([pos[x] for x in sel], dtype=np.int64)
        a, b = p.reuse_rho, math.sqrt(1 - p.reuse_rho**2)
        w_own, w_com = math.sqrt(1 - p.layer_kappa), math.sqrt(p.layer_kappa)
        drift = p.drift_sigma * np.random.default_rng([self.seed, 2, step]).standard_normal((L, E))
        logits = self.base_logits + drift
        offsets = np.concatenate([[0], np.cumsum(tok)]).astype(np.int64)
        out = np.empty((int(offsets[-1]), js.size, k), dtype=np.int16)
        chunk = max(1, (1 << 22) // (L * E))  # tokens routed at once (~16 MiB of latents)
        single = []  # one-row requests: route them together
        for i in range(tok.size):
            rng = np.random.default_rng([self.seed, 2, step, int(rid[i])])
            # the streams are drawn in full (a layer's routes must not depend on which others
            # are routed); the AR(1) and the top-k run only on the layers asked for
            eta_s = rng.standard_normal((L, E), dtype=np.float32)[js]  # stationary state
            com_s = rng.standard_normal(E, dtype=np.float32)
            for start in range(0, int(tok[i]), chunk):
                c = min(chunk, int(tok[i]) - start)
                eps = rng.standard_normal((c, L, E), dtype=np.float32)
                eta, eta_s = _ar1(eta_s, eps[:, js] if js.size < L else eps, a, b)
                com, com_s = _ar1(com_s, rng.standard_normal((c, E), dtype=np.float32), a, b)
                if tok[i] == 1:
                    single.append((i, eta[0], com[0]))
                else:
                    row = int(offsets[i]) + start
                    out[row : row + c] = self._route(logits, eta, com, w_own, w_com, js)
        if single:
            rows = offsets[[i for i, _, _ in single]]
            eta = np.stack([e for _, e, _ in single])
            com = np.stack([c for _, _, c in single])
            out[rows] = self._route(logits, eta, com, w_own, w_com, js)
        meta = TraceMeta(
            model=sh.name,
            n_experts=E,
            top_k=k,
            layer_ids=tuple(sh.layer_ids[j] for j in js),
            source="sieve synthetic router (one step)",
            seed=self.seed,
            extra={
                "router_params": dataclasses.asdict(p),
                "router_fit": self.fit,
                "step": int(step),
                **(extra or {}),
            },
        )
        return RoutingTrace(
            expert_ids=out,
            step_offsets=np.array([0, out.shape[0]], dtype=np.int64),
            request_ids=np.repeat(rid.astype(np.int64), tok),
            phase=np.repeat(ph.astype(np.int8), tok),
            meta=meta,
        )

    def _lifetimes(self, rng: np.random.Generator, n: int) -> np.ndarray:
        m = self.params.mean_output_tokens
        if m is None:
            return np.full(n, np.iinfo(np.int64).max)
        return rng.geometric(1.0 / m, size=n).astype(np.int64)

    def _advance(self, rng, eta, com, a_rho, b_rho):
        if a_rho == 0.0:
            return (
                rng.standard_normal(eta.shape, dtype=np.float32),
                rng.standard_normal(com.shape, dtype=np.float32),
            )
        eta = a_rho * eta + b_rho * rng.standard_normal(eta.shape, dtype=np.float32)
        com = a_rho * com + b_rho * rng.standard_normal(com.shape, dtype=np.float32)
        return eta.astype(np.float32, copy=False), com.astype(np.float32, copy=False)

    def _route(self, logits, eta, com, w_own, w_com, js=None) -> np.ndarray:
        """Top-k ids ``(n, len(js), k)`` for latents ``eta (n, len(js), E)`` of the layers at
        positions ``js`` (default all), ``com (n, E)``."""
        js = np.arange(self.shape.n_layers) if js is None else js
        n, k = eta.shape[0], self.shape.top_k
        out = np.empty((n, len(js), k), dtype=np.int16)
        if n == 0:
            return out
        for i, j in enumerate(js):
            u = w_own * eta[:, i] + w_com * com[:, self.perms[j]] if w_com else eta[:, i]
            out[:, i] = _topk(_gumbel(u) + logits[j], k)
        return out


def generate_trace(
    model: str | RouterShape,
    batch_size: int,
    n_steps: int,
    *,
    seed: int | np.random.Generator = 0,
    params: RouterParams | None = None,
    prompt_tokens: int = 0,
    fit: str = "joint",
) -> RoutingTrace:
    """One-call form of ``SyntheticRouter(model, params, seed, fit=fit).generate(...)``."""
    return SyntheticRouter(model, params, seed, fit=fit).generate(
        batch_size, n_steps, prompt_tokens=prompt_tokens
    )
