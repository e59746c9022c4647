"""Batch composition: which requests one forward step holds, with their context lengths.

This module owns the seeded composition of one step's batch from a sequence-length profile
(:mod:`sieve.workload.profiles`): a decode-only continuous batch in steady state
(:func:`decode_batch`), a colocated prefill+decode batch (:func:`colocated_batch`, seed §7.3),
the :class:`Batch` result, and the routing of such a batch for one step (:func:`step_trace`, on
:meth:`sieve.workload.router.SyntheticRouter.route_step`). It must not time anything (that is
the step simulator's, sieve.system) or define length distributions (profiles).

Conventions (docs/workloads.md derives them):

* A request has a prompt of ``P`` tokens and an output of ``O`` tokens. Its prefill step
  processes the ``P`` prompt tokens and produces output token 1; decode step ``d``
  (``d = 1 .. O - 1``) feeds output token ``d``, with ``P + d - 1`` tokens already in the KV
  cache, and produces token ``d + 1``. A request therefore has ``O - 1`` decode steps.
* ``context_tokens`` = KV-cache tokens before the step (``P + d - 1`` for decode, 0 for
  prefill); the step's new tokens attend to those plus themselves (causally, for a prompt).
* ``remaining_tokens`` = output tokens the request still has to produce, counting the one this
  step produces (``O - d`` for decode, ``O`` for prefill).
* Steady state: each of the ``B`` slots of a continuous batch serves requests back to back, so
  at a random decode step a slot holds a request of output length ``O`` with probability
  proportional to ``(O - 1) f(O)`` (long requests occupy their slot longer: the inspection
  paradox of renewal theory), at a decode position uniform on ``1 .. O - 1``. The expected
  context is then ``E[P] + E[(O - 1)(O - 2)] / (2 E[O - 1])``, which for fixed lengths is the
  familiar ``P + O/2 - 1``. ``length_biased=False`` draws ``O`` from the profile instead (each
  request, not each step, equally likely: ``E[P] + E[O]/2 - 1`` given ``O >= 2``).

Randomness: every draw comes from ``seed`` (recorded in the result) through separate streams
``[seed, 1001, k]``, one uniform per request and quantity, so a batch of ``B`` requests is the
first ``B`` requests of any larger batch with the same seed, and the decode requests of a
colocated batch are those of the decode-only batch of the same seed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sieve.errors import ConfigError
from sieve.workload.profiles import Profile, draw, get_profile
from sieve.workload.router import RouterShape, SyntheticRouter
from sieve.workload.trace import DECODE, PREFILL, RoutingTrace

__all__ = [
    "MIN_PREFILL_PROMPT_TOKENS",
    "Batch",
    "colocated_batch",
    "decode_batch",
    "expected_decode_context",
    "prefill_cap",
    "step_trace",
]

#: Seed §7.3: vLLM limits a batch to two prefill requests "because queries often exceed 1024
#: tokens"; the colocated stress cases use prompts of at least this many tokens.
MIN_PREFILL_PROMPT_TOKENS = 1024
#: Seed §7.3: "up to two prefill-phase requests per batch for B <= 32" (vLLM's limit).
_PREFILL_CAP_SMALL = 2
#: Seed §7.3: "up to eight prefill-phase requests per batch for B >= 64" (their stress case).
_PREFILL_CAP_LARGE = 8
#: Smallest batch with the large cap. Between 33 and 63 (not evaluated by the seed) sieve keeps
#: vLLM's limit of 2: the stress cap is applied only where the seed applied it.
_PREFILL_CAP_LARGE_FROM = 64

# stream ids under [seed, _STREAM, k] (distinct from the router's [seed, 0 | 1 | 2, ...])
_STREAM = 1001
_S_PROMPT, _S_OUTPUT, _S_POSITION, _S_NPREFILL, _S_PF_PROMPT, _S_PF_OUTPUT = range(6)


def _seed_of(seed: int | np.random.Generator) -> int:
    """An int >= 0 (recorded); a Generator gives one int drawn from it (as the router does)."""
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2**63 - 1))
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        return int(seed)
    raise ConfigError(f"batch: seed must be an int >= 0 or a numpy Generator, got {seed!r}")


def _uniforms(seed: int, stream: int, n: int) -> np.ndarray:
    return np.random.default_rng([seed, _STREAM, stream]).random(n)


def _count(what: str, v: Any, lo: int) -> int:
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
        raise ConfigError(f"{what} must be an int >= {lo}, got {v!r}")
    return int(v)


_COLUMNS = ("request_ids", "phase", "context_tokens", "step_tokens", "prompt_tokens",
            "output_tokens", "remaining_tokens")


@dataclass(frozen=True, eq=False)
class Batch:
    """The requests of one forward step (arrays are ``(batch_size,)``, read-only).

    Requests are ordered decode first, then prefill; ``request_ids`` are ``0 .. B-1`` in that
    order. Token counts are in tokens.

    Attributes:
        kind: ``"decode"`` (decode-only) or ``"colocated"`` (prefill + decode).
        profile: the :class:`~sieve.workload.profiles.Profile` the lengths were drawn from.
        seed: the seed every draw came from.
        request_ids: int64 request id.
        phase: int8 :data:`~sieve.workload.trace.PREFILL` or :data:`~sieve.workload.trace.DECODE`.
        context_tokens: int64 KV-cache tokens before the step (0 for prefill).
        step_tokens: int64 tokens the request processes in this step (1 for decode, its prompt
            for prefill).
        prompt_tokens: int64 the request's prompt (chat template included).
        output_tokens: int64 the request's total output length.
        remaining_tokens: int64 output tokens still to produce, this step's included.
        params: how the batch was drawn (``length_biased``, ``prefill_cap``, ...).
    """

    kind: str
    profile: Profile
    seed: int
    request_ids: np.ndarray
    phase: np.ndarray
    context_tokens: np.ndarray
    step_tokens: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    remaining_tokens: np.ndarray
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.profile, Profile):
            raise ConfigError(f"Batch: profile must be a Profile, got "
                              f"{type(self.profile).__name__}")
        object.__setattr__(self, "seed", _seed_of(self.seed))
        n = np.shape(self.request_ids)
        for name in _COLUMNS:
            a = np.array(getattr(self, name), dtype=np.int8 if name == "phase" else np.int64)
            if a.shape != n or a.ndim != 1 or a.size < 1:
                raise ConfigError(f"Batch: {name} must have shape {n} (one entry per request)")
            a.setflags(write=False)
            object.__setattr__(self, name, a)
        dec, pre = self.phase == DECODE, self.phase == PREFILL
        checks = (
            ("kind is 'decode' or 'colocated'", self.kind in ("decode", "colocated")),
            ("phase is PREFILL or DECODE", bool(np.all(dec | pre))),
            ("request ids are distinct and >= 0",
             np.unique(self.request_ids).size == n[0] and bool(np.all(self.request_ids >= 0))),
            ("decode requests process 1 token", bool(np.all(self.step_tokens[dec] == 1))),
            ("prefill requests process their prompt with an empty cache",
             bool(np.all(self.step_tokens[pre] == self.prompt_tokens[pre]))
             and bool(np.all(self.context_tokens[pre] == 0))),
            ("a decode context holds the prompt and fewer than output - 1 generated tokens",
             bool(np.all(self.context_tokens[dec] >= self.prompt_tokens[dec]))
             and bool(np.all(self.context_tokens[dec] - self.prompt_tokens[dec]
                             <= self.output_tokens[dec] - 2))),
            ("remaining output is between 1 and the output length",
             bool(np.all(self.remaining_tokens >= 1))
             and bool(np.all(self.remaining_tokens <= self.output_tokens))),
        )
        for text, ok in checks:
            if not ok:
                raise ConfigError(f"Batch: inconsistent columns (need: {text})")

    # -- shape -------------------------------------------------------------------------------
    @property
    def batch_size(self) -> int:
        """Requests in the batch (prefill + decode)."""
        return int(self.request_ids.size)

    @property
    def decode_mask(self) -> np.ndarray:
        return self.phase == DECODE

    @property
    def prefill_mask(self) -> np.ndarray:
        return self.phase == PREFILL

    @property
    def n_decode(self) -> int:
        return int(np.count_nonzero(self.decode_mask))

    @property
    def n_prefill(self) -> int:
        return int(np.count_nonzero(self.prefill_mask))

    @property
    def n_tokens(self) -> int:
        """Tokens the step processes (rows of its routing trace)."""
        return int(self.step_tokens.sum())

    @property
    def kv_tokens(self) -> np.ndarray:
        """KV-cache tokens of each request after the step (``context + step tokens``): what the
        step's last token of each request attends to."""
        return self.context_tokens + self.step_tokens

    # -- output ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable form: kind, seed, profile, params, one list per column and
        a summary (token counts, mean decode context)."""
        dec = self.decode_mask
        return {
            "kind": self.kind,
            "seed": self.seed,
            "profile": self.profile.to_dict(),
            "params": dict(self.params),
            "batch_size": self.batch_size,
            "n_decode": self.n_decode,
            "n_prefill": self.n_prefill,
            "n_tokens": self.n_tokens,
            "mean_decode_context_tokens": (float(self.context_tokens[dec].mean())
                                           if dec.any() else None),
            "requests": {name: getattr(self, name).tolist() for name in _COLUMNS},
        }

    def describe(self) -> str:
        """One line for logs."""
        d = self.to_dict()
        ctx = d["mean_decode_context_tokens"]
        ctx_s = "-" if ctx is None else f"{ctx:.0f}"
        return (f"{self.kind} batch of {self.batch_size} ({self.n_decode} decode, "
                f"{self.n_prefill} prefill; {self.n_tokens} tokens) from {self.profile.name}, "
                f"seed {self.seed}: mean decode context {ctx_s} tokens")


# ---- steady-state decode requests -----------------------------------------------------------


def _decode_output_table(profile: Profile, length_biased: bool) -> tuple[np.ndarray, np.ndarray]:
    """Law of the output length of a request seen at a decode step (requests with O >= 2)."""
    v, p = profile.output_table
    keep = v >= 2
    if not keep.any():
        raise ConfigError(f"workload profile {profile.name!r}: every request outputs 1 token, so "
                          "no request ever has a decode step (need outputs of >= 2 tokens)")
    v, p = v[keep], p[keep]
    w = p * (v - 1) if length_biased else p
    return v, w / w.sum()


def expected_decode_context(profile: str | Profile, length_biased: bool = True) -> float:
    """Exact expected ``context_tokens`` of a decode request in :func:`decode_batch`.

    ``E[P] + E_w[O/2 - 1]`` with ``w`` the law of the observed output length (see the module
    docstring): ``(O - 1) f(O)`` when ``length_biased``, else ``f(O)`` restricted to ``O >= 2``.
    """
    profile = get_profile(profile)
    v, w = _decode_output_table(profile, length_biased)
    return profile.mean_prompt_tokens() + float(np.sum(w * (v / 2.0 - 1.0)))


def _decode_requests(profile: Profile, seed: int, n: int, length_biased: bool):
    """``n`` steady-state decode requests: (prompt, output, context, remaining)."""
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, z
    ov, ow = _decode_output_table(profile, length_biased)
    prompt = draw(*profile.prompt_table, _uniforms(seed, _S_PROMPT, n))
    output = draw(ov, ow, _uniforms(seed, _S_OUTPUT, n))
    # position d uniform on 1 .. O - 1 (tokens generated so far, the fed one included)
    d = 1 + np.floor(_uniforms(seed, _S_POSITION, n) * (output - 1)).astype(np.int64)
    d = np.minimum(d, output - 1)  # guards u * (O - 1) rounding up to O - 1
    return prompt, output, prompt + d - 1, output - d


def _batch(kind, profile, seed, dec, pre, params) -> Batch:
    d_prompt, d_out, d_ctx, d_rem = dec
    p_prompt, p_out = pre
    nd, npf = len(d_prompt), len(p_prompt)
    return Batch(
        kind=kind, profile=profile, seed=seed,
        request_ids=np.arange(nd + npf),
        phase=np.concatenate([np.full(nd, DECODE), np.full(npf, PREFILL)]),
        context_tokens=np.concatenate([d_ctx, np.zeros(npf, dtype=np.int64)]),
        step_tokens=np.concatenate([np.ones(nd, dtype=np.int64), p_prompt]),
        prompt_tokens=np.concatenate([d_prompt, p_prompt]),
        output_tokens=np.concatenate([d_out, p_out]),
        remaining_tokens=np.concatenate([d_rem, p_out]),
        params=params,
    )


def decode_batch(profile: str | Profile, batch_size: int, seed: int | np.random.Generator = 0,
                 *, length_biased: bool = True) -> Batch:
    """A decode-only continuous batch in steady state (prefill-decode disaggregation, the
    seed's main setting, §7).

    Args:
        profile: a :class:`Profile` or anything :func:`~sieve.workload.profiles.get_profile`
            accepts (registry name, ``"fixed:P/O"``, file, dict).
        batch_size: requests in the batch (>= 1), each feeding one token.
        seed: int >= 0 (or a Generator, from which one int is drawn); recorded.
        length_biased: observe the batch at a random step (True, default: long requests are
            proportionally more likely, see the module docstring) or observe a random request
            (False).

    Returns:
        A :class:`Batch` of ``batch_size`` decode requests.

    Raises:
        ConfigError: unknown profile, batch_size < 1, bad seed, a profile without decode steps.
    """
    profile = get_profile(profile)
    b = _count("decode batch: batch_size", batch_size, 1)
    seed = _seed_of(seed)
    dec = _decode_requests(profile, seed, b, bool(length_biased))
    none = np.zeros(0, dtype=np.int64)
    return _batch("decode", profile, seed, dec, (none, none),
                  {"length_biased": bool(length_biased)})


# ---- colocated prefill + decode -------------------------------------------------------------


def prefill_cap(batch_size: int) -> int:
    """Most prefill requests a colocated batch of ``batch_size`` holds by default (seed §7.3):
    2 below 64 requests, 8 from 64 on, and never more than ``batch_size - 1`` (at least one
    decode request remains, so a batch of 1 gets none)."""
    b = _count("colocated batch: batch_size", batch_size, 1)
    cap = _PREFILL_CAP_LARGE if b >= _PREFILL_CAP_LARGE_FROM else _PREFILL_CAP_SMALL
    return min(cap, b - 1)


def colocated_batch(profile: str | Profile, batch_size: int,
                    seed: int | np.random.Generator = 0, n_prefill: int | None = None, *,
                    min_prompt_tokens: int = MIN_PREFILL_PROMPT_TOKENS,
                    length_biased: bool = True) -> Batch:
    """A colocated batch: ``batch_size`` requests, ``n_prefill`` of them in their prefill step
    and the rest decoding (seed §7.3).

    Args:
        profile: as in :func:`decode_batch`.
        batch_size: requests in the batch (>= 1), prefill ones included.
        seed: as in :func:`decode_batch`; recorded.
        n_prefill: prefill requests (0 .. batch_size); None = drawn uniformly from
            ``1 .. prefill_cap(batch_size)`` (seed: "up to" 2 or 8), or 0 when the cap is 0.
        min_prompt_tokens: a prefill request's prompt is the profile's prompt raised to at
            least this many tokens (seed: "queries often exceed 1024 tokens"; default 1024).
        length_biased: as in :func:`decode_batch`, for the decode requests.

    Returns:
        A :class:`Batch`: the decode requests are those of
        ``decode_batch(profile, batch_size - n_prefill, seed)``; prefill requests follow, with
        their own prompt and output draws (each request has one prefill step, so these are
        not length-biased).

    Raises:
        ConfigError: unknown profile, bad sizes or seed.
    """
    profile = get_profile(profile)
    b = _count("colocated batch: batch_size", batch_size, 1)
    seed = _seed_of(seed)
    min_prompt = _count("colocated batch: min_prompt_tokens", min_prompt_tokens, 1)
    cap = prefill_cap(b)
    if n_prefill is None:
        u = _uniforms(seed, _S_NPREFILL, 1)[0]
        n_pf = 0 if cap == 0 else 1 + min(int(math.floor(u * cap)), cap - 1)
    else:
        n_pf = _count("colocated batch: n_prefill", n_prefill, 0)
        if n_pf > b:
            raise ConfigError(f"colocated batch: n_prefill={n_pf} exceeds batch_size={b}")
    dec = _decode_requests(profile, seed, b - n_pf, bool(length_biased))
    p_prompt = np.maximum(draw(*profile.prompt_table, _uniforms(seed, _S_PF_PROMPT, n_pf)),
                          min_prompt)
    p_out = draw(*profile.output_table, _uniforms(seed, _S_PF_OUTPUT, n_pf))
    params = {"length_biased": bool(length_biased), "prefill_cap": cap,
              "n_prefill_drawn": n_prefill is None, "min_prompt_tokens": min_prompt}
    return _batch("colocated", profile, seed, dec, (p_prompt, p_out), params)


# ---- routing ------------------------------------------------------------------------------


def step_trace(batch: Batch, router: SyntheticRouter | RouterShape | str, *, step: int = 0,
               fit: str = "joint", layer_ids=None) -> RoutingTrace:
    """The routing trace of ONE step of ``batch``: one row per decode request and one per
    prompt token of each prefill request, grouped by request in batch order, with the batch's
    request ids and phases.

    Args:
        batch: the composed batch.
        router: a :class:`SyntheticRouter` (its own seed is used), or a model name /
            :class:`RouterShape` (the router is built with that model's preset and
            ``seed=batch.seed``).
        step: step index (selects the router's streams; :meth:`SyntheticRouter.route_step`).
        fit: preset set when ``router`` is a name or shape ("joint" or "seed").
        layer_ids: route only these MoE layers (None = all; see
            :meth:`SyntheticRouter.route_step`).

    Returns:
        A one-step :class:`RoutingTrace`; ``meta.extra["workload"]`` records the batch (kind,
        profile, seed, sizes).
    """
    if not isinstance(batch, Batch):
        raise ConfigError(f"step_trace: expected a Batch, got {type(batch).__name__}")
    if not isinstance(router, SyntheticRouter):
        router = SyntheticRouter(router, seed=batch.seed, fit=fit)
    extra = {"workload": {"kind": batch.kind, "profile": batch.profile.name,
                          "batch_seed": batch.seed, "batch_size": batch.batch_size,
                          "n_prefill": batch.n_prefill, "n_tokens": batch.n_tokens,
                          "params": dict(batch.params)}}
    return router.route_step(batch.step_tokens, batch.phase, batch.request_ids, step=step,
                             extra=extra, layer_ids=layer_ids)
