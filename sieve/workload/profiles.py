"""Sequence-length profiles of serving workloads: prompt and output length distributions.

This module owns the length distributions (:class:`Fixed`, :class:`Uniform`, :class:`LogNormal`,
:class:`Empirical`, :class:`Mixture`), the :class:`Profile` that pairs a prompt and an output
distribution, the registry :data:`PROFILES` and the profile file (JSON or TOML). It must not
compose batches (:mod:`sieve.workload.batch`) or route tokens (:mod:`sieve.workload.router`).

Every distribution is over whole tokens and is held as an exact probability table over its
integer support (:meth:`LengthDist.table`); sampling maps one uniform per draw through that
table's cumulative sum (inverse CDF), so a sample is a pure function of its uniforms and the
stated parameters, and means and quantiles are computed exactly from the same table. The
assumptions behind every registered profile, and their sources, are listed next to their
parameters below and in docs/workloads.md. ⚠ marks an assumption (no published number).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from sieve.errors import ConfigError, choices, lookup
from sieve.validate import parse_document, read_text

__all__ = [
    "DIST_KINDS",
    "MAX_TOKENS",
    "PROFILES",
    "Empirical",
    "Fixed",
    "LengthDist",
    "LogNormal",
    "Mixture",
    "Profile",
    "Uniform",
    "dist_from_dict",
    "fixed_profile",
    "get_profile",
    "load_profile",
]

#: Largest length a distribution may produce (2**20 tokens: above every model context in
#: sieve.model's presets, and it keeps each probability table at most 8 MiB).
MAX_TOKENS = 2**20


# ---- validation helpers (one clear message naming the field) ---------------------------------


def _int(what: str, v: Any, lo: int = 1, hi: int = MAX_TOKENS) -> int:
    """``v`` as an int in ``[lo, hi]`` (an integral float such as ``1024.0`` is accepted)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{what} must be an integer, got {v!r}")
    if isinstance(v, (float, np.floating)) and not (math.isfinite(v) and float(v).is_integer()):
        raise ConfigError(f"{what} must be an integer, got {v!r}")
    i = int(v)
    if not lo <= i <= hi:
        raise ConfigError(f"{what} must be in [{lo}, {hi}], got {v!r}")
    return i


def _pos(what: str, v: Any) -> float:
    """``v`` as a finite float > 0."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{what} must be a number > 0, got {v!r}")
    x = float(v)
    if not (math.isfinite(x) and x > 0):
        raise ConfigError(f"{what} must be a finite number > 0, got {v!r}")
    return x


def _keys(what: str, d: Mapping[str, Any], required: Sequence[str], optional: Sequence[str] = ()):
    if not isinstance(d, Mapping):
        raise ConfigError(f"{what}: expected a table/object, got {type(d).__name__}")
    unknown = [k for k in d if k not in (*required, *optional)]
    if unknown:
        raise ConfigError(f"{what}: unknown field {unknown[0]!r} "
                          f"(valid: {choices({*required, *optional})})")
    for k in required:
        if k not in d:
            raise ConfigError(f"{what}: missing field {k!r}")


# ---- distributions ----------------------------------------------------------------------------


class LengthDist:
    """A distribution over whole token counts (base class; subclasses are frozen dataclasses).

    Subclasses implement :meth:`_build` (the exact probability table) and :meth:`to_dict`;
    everything else is derived from the table.
    """

    kind = ""

    @cached_property
    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """``(values, probs)``: the support (sorted int64 token counts) and its probabilities
        (float64, summing to 1). Read-only arrays."""
        v, p = self._build()
        v = np.asarray(v, dtype=np.int64)
        p = np.asarray(p, dtype=np.float64)
        p = p / p.sum()
        v.setflags(write=False)
        p.setflags(write=False)
        return v, p

    def _build(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def min_tokens(self) -> int:
        """Smallest possible draw."""
        return int(self.table[0][0])

    @property
    def max_tokens(self) -> int:
        """Largest possible draw."""
        return int(self.table[0][-1])

    def mean(self) -> float:
        """Exact mean (tokens)."""
        v, p = self.table
        return float(np.sum(v * p))  # not `@`: BLAS threads make a 1-D dot slow here

    def std(self) -> float:
        """Exact standard deviation (tokens)."""
        v, p = self.table
        d = v - float(np.sum(v * p))
        return math.sqrt(float(np.sum(d * d * p)))

    def cdf(self, x: float) -> float:
        """``P(X <= x)``."""
        v, p = self.table
        return float(p[v <= x].sum())

    def quantile(self, q: float) -> int:
        """Smallest support value ``v`` with ``P(X <= v) >= q`` (``q`` in [0, 1])."""
        v, p = self.table
        return int(v[min(int(np.searchsorted(np.cumsum(p), q - 1e-12)), len(v) - 1)])

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` draws (int64), one uniform of ``rng`` each (inverse CDF)."""
        return self.from_uniforms(rng.random(n))

    def from_uniforms(self, u: np.ndarray) -> np.ndarray:
        """Draws for the uniforms ``u`` in [0, 1): ``values[searchsorted(cumsum(probs), u)]``."""
        v, p = self.table
        return draw(v, p, u)

    def describe(self) -> str:
        return (f"{self.kind} mean {self.mean():.1f}, median {self.quantile(0.5)}, "
                f"range {self.min_tokens}..{self.max_tokens}")


def _solve(f, a: float, b: float, tol: float = 1e-10) -> float:
    """Root of the increasing function ``f`` in ``[a, b]``, ``f(a) < 0 < f(b)`` (Illinois
    regula falsi: bracketing like bisection, ~10 evaluations for the smooth laws here)."""
    fa, fb = f(a), f(b)
    if not fa < 0 < fb:
        raise ConfigError("no solution in range (the target cannot be reached)")
    side = 0
    for _ in range(200):
        c = b - fb * (b - a) / (fb - fa)
        fc = f(c)
        if fc == 0 or b - a < tol * max(1.0, abs(c)):
            return c
        if fc < 0:
            a, fa = c, fc
            if side == -1:
                fb /= 2
            side = -1
        else:
            b, fb = c, fc
            if side == 1:
                fa /= 2
            side = 1
        if abs(b - a) < tol * max(1.0, abs(c)):
            return c
    return c


def draw(values: np.ndarray, probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws from the table ``(values, probs)`` for uniforms ``u`` in [0, 1)."""
    c = np.cumsum(probs)
    c /= c[-1]
    idx = np.searchsorted(c, np.asarray(u, dtype=np.float64), side="right")
    return np.asarray(values, dtype=np.int64)[np.minimum(idx, len(values) - 1)]


@dataclass(frozen=True)
class Fixed(LengthDist):
    """Every draw is ``tokens``."""

    tokens: int
    kind = "fixed"

    def __post_init__(self) -> None:
        object.__setattr__(self, "tokens", _int("fixed.tokens", self.tokens))

    def _build(self):
        return [self.tokens], [1.0]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "tokens": self.tokens}


@dataclass(frozen=True)
class Uniform(LengthDist):
    """Uniform over the integers ``low..high`` (both included)."""

    low: int
    high: int
    kind = "uniform"

    def __post_init__(self) -> None:
        object.__setattr__(self, "low", _int("uniform.low", self.low))
        object.__setattr__(self, "high", _int("uniform.high", self.high))
        if self.high < self.low:
            raise ConfigError(f"uniform: need low <= high, got low={self.low}, high={self.high}")

    def _build(self):
        v = np.arange(self.low, self.high + 1)
        return v, np.full(len(v), 1.0)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "low": self.low, "high": self.high}


def _interval_probs(z: np.ndarray) -> np.ndarray:
    """``Phi(z[i + 1]) - Phi(z[i])`` for increasing edges ``z``, accurate in both tails (upper
    intervals are differenced on the survival function)."""
    from scipy.special import ndtr  # (here: scipy.special takes ~0.2 s to import)

    lo, hi = z[:-1], z[1:]
    upper = lo > 0
    return np.where(upper, ndtr(-lo) - ndtr(-hi), ndtr(hi) - ndtr(lo))


@dataclass(frozen=True)
class LogNormal(LengthDist):
    """Log-normal ``exp(N(log median, sigma^2))`` truncated to ``[low, high]`` and rounded.

    Token ``k`` has probability proportional to ``F(k + 1/2) - F(k - 1/2)`` (``F`` the
    log-normal CDF), for ``k = low..high``: the continuous law restricted to
    ``[low - 1/2, high + 1/2)`` and rounded to the nearest integer. Use :meth:`with_mean` to
    give the mean instead of the median.
    """

    median: float
    sigma: float
    low: int
    high: int
    kind = "lognormal"

    def __post_init__(self) -> None:
        object.__setattr__(self, "median", _pos("lognormal.median", self.median))
        object.__setattr__(self, "sigma", _pos("lognormal.sigma", self.sigma))
        object.__setattr__(self, "low", _int("lognormal.low", self.low))
        object.__setattr__(self, "high", _int("lognormal.high", self.high))
        if self.high < self.low:
            raise ConfigError(f"lognormal: need low <= high, got low={self.low}, high={self.high}")
        self.table  # noqa: B018 (builds the table now, so a law with no mass fails here)

    def _build(self):
        edges = np.arange(self.low - 0.5, self.high + 1.0)  # k -/+ 1/2 for k = low..high
        p = _interval_probs((np.log(edges) - math.log(self.median)) / self.sigma)
        k = np.arange(self.low, self.high + 1)
        if not (np.isfinite(p).all() and p.sum() > 0):
            raise ConfigError(f"lognormal: median {self.median} with sigma {self.sigma} puts no "
                              f"probability in [{self.low}, {self.high}]")
        return k, p

    @classmethod
    def with_mean(cls, mean: float, sigma: float, low: int, high: int) -> LogNormal:
        """The truncated, rounded log-normal whose exact mean is ``mean`` (the median is solved
        for; the mean must lie strictly between ``low`` and ``high``)."""
        mean, sigma = _pos("lognormal.mean", mean), _pos("lognormal.sigma", sigma)
        low, high = _int("lognormal.low", low), _int("lognormal.high", high)
        if not low < mean < high:
            raise ConfigError(f"lognormal: mean {mean} must lie strictly between low={low} and "
                              f"high={high}")

        def gap(log_median: float) -> float:
            return cls(math.exp(log_median), sigma, low, high).mean() - mean

        a, b = math.log(low) - 8 * sigma, math.log(high) + 8 * sigma
        return cls(math.exp(_solve(gap, a, b)), sigma, low, high)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "median": self.median, "sigma": self.sigma, "low": self.low,
                "high": self.high}


@dataclass(frozen=True)
class Empirical(LengthDist):
    """A histogram: ``values`` (token counts) with ``weights`` (default: equal), e.g. the
    lengths measured in your own logs."""

    values: tuple[int, ...]
    weights: tuple[float, ...] | None = None
    kind = "empirical"

    def __post_init__(self) -> None:
        vals = self.values.tolist() if isinstance(self.values, np.ndarray) else self.values
        if isinstance(vals, (str, bytes)) or not isinstance(vals, Sequence) or not vals:
            raise ConfigError(f"empirical.values must be a non-empty list of integers, got "
                              f"{vals!r}")
        object.__setattr__(self, "values",
                           tuple(_int(f"empirical.values[{i}]", v) for i, v in enumerate(vals)))
        w = self.weights.tolist() if isinstance(self.weights, np.ndarray) else self.weights
        if w is not None:
            if isinstance(w, (str, bytes)) or not isinstance(w, Sequence) or len(w) != len(vals):
                raise ConfigError(f"empirical.weights must be a list of {len(vals)} numbers "
                                  f"(one per value), got {w!r}")
            ws = []
            for i, x in enumerate(w):
                if isinstance(x, bool) or not isinstance(x, (int, float, np.integer,
                                                                np.floating)):
                    raise ConfigError(f"empirical.weights[{i}] must be a number >= 0, got {x!r}")
                if not (math.isfinite(float(x)) and float(x) >= 0):
                    raise ConfigError(f"empirical.weights[{i}] must be finite and >= 0, got {x!r}")
                ws.append(float(x))
            if not sum(ws) > 0:
                raise ConfigError("empirical.weights must not all be 0")
            object.__setattr__(self, "weights", tuple(ws))

    def _build(self):
        w = np.ones(len(self.values)) if self.weights is None else np.asarray(self.weights)
        v, inv = np.unique(np.asarray(self.values, dtype=np.int64), return_inverse=True)
        p = np.bincount(inv, weights=w, minlength=len(v))
        keep = p > 0
        return v[keep], p[keep]

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "values": list(self.values)}
        if self.weights is not None:
            d["weights"] = list(self.weights)
        return d


@dataclass(frozen=True)
class Mixture(LengthDist):
    """With probability ``weight_i / sum(weights)``, a draw from component ``i``."""

    components: tuple[tuple[float, LengthDist], ...]
    kind = "mixture"

    def __post_init__(self) -> None:
        comps = self.components
        if not isinstance(comps, Sequence) or not comps:
            raise ConfigError("mixture.components must be a non-empty list")
        out = []
        for i, c in enumerate(comps):
            if not (isinstance(c, Sequence) and len(c) == 2 and isinstance(c[1], LengthDist)):
                raise ConfigError(f"mixture.components[{i}] must be (weight, distribution)")
            out.append((_pos(f"mixture.components[{i}].weight", c[0]), c[1]))
        object.__setattr__(self, "components", tuple(out))

    def _build(self):
        tot = sum(w for w, _ in self.components)
        vs = np.concatenate([d.table[0] for _, d in self.components])
        ps = np.concatenate([w / tot * d.table[1] for w, d in self.components])
        v, inv = np.unique(vs, return_inverse=True)
        return v, np.bincount(inv, weights=ps, minlength=len(v))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind,
                "components": [{"weight": w, **d.to_dict()} for w, d in self.components]}


#: Distribution kinds accepted in profile files, with their fields (required, optional).
DIST_KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "fixed": (("tokens",), ()),
    "uniform": (("low", "high"), ()),
    "lognormal": (("sigma", "high"), ("median", "mean", "low")),
    "empirical": (("values",), ("weights",)),
    "mixture": (("components",), ()),
}


def dist_from_dict(d: Mapping[str, Any], what: str = "distribution") -> LengthDist:
    """Build a distribution from its :meth:`~LengthDist.to_dict` form.

    ``{"kind": "lognormal", "median" | "mean": ..., "sigma": ..., "low": 1, "high": ...}``,
    ``{"kind": "uniform", "low": ..., "high": ...}``, ``{"kind": "fixed", "tokens": ...}``,
    ``{"kind": "empirical", "values": [...], "weights": [...]}``,
    ``{"kind": "mixture", "components": [{"weight": w, <a distribution>}, ...]}``.

    Raises:
        ConfigError: unknown kind or field, missing field, bad value; the message starts with
            ``what`` and names the field.
    """
    if not isinstance(d, Mapping):
        raise ConfigError(f"{what}: expected a table/object with a 'kind', got "
                          f"{type(d).__name__}")
    if "kind" not in d:
        raise ConfigError(f"{what}: missing field 'kind' (known: {choices(DIST_KINDS)})")
    lookup(DIST_KINDS, d["kind"], f"{what}: kind")
    kind = d["kind"].strip().lower()
    req, opt = DIST_KINDS[kind]
    body = {k: v for k, v in d.items() if k != "kind"}
    _keys(f"{what} ({kind})", body, req, opt)
    try:
        if kind == "fixed":
            return Fixed(body["tokens"])
        if kind == "uniform":
            return Uniform(body["low"], body["high"])
        if kind == "lognormal":
            if ("median" in body) == ("mean" in body):
                raise ConfigError("lognormal: give exactly one of 'median' and 'mean'")
            low = body.get("low", 1)
            if "mean" in body:
                return LogNormal.with_mean(body["mean"], body["sigma"], low, body["high"])
            return LogNormal(body["median"], body["sigma"], low, body["high"])
        if kind == "empirical":
            return Empirical(body["values"], body.get("weights"))
        comps = body["components"]
        if isinstance(comps, (str, bytes)) or not isinstance(comps, Sequence) or not comps:
            raise ConfigError("mixture.components must be a non-empty list of distributions")
        parts = []
        for i, c in enumerate(comps):
            w_what = f"{what}.components[{i}]"
            if not isinstance(c, Mapping) or "weight" not in c:
                raise ConfigError(f"{w_what}: expected a table with 'weight' and 'kind'")
            parts.append((_pos(f"{w_what}.weight", c["weight"]),
                          dist_from_dict({k: v for k, v in c.items() if k != "weight"}, w_what)))
        return Mixture(tuple(parts))
    except ConfigError as exc:
        msg = str(exc)
        raise ConfigError(msg if msg.startswith(what) else f"{what}: {msg}") from None


# ---- profiles ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """Prompt and output length distributions of one workload.

    Attributes:
        name: registry or user name.
        prompt: tokens of a request's prompt text (before the chat template).
        output: tokens a request generates (its full answer, reasoning included).
        template_tokens: chat-template tokens added to every prompt (role markers, system
            prompt); 0 for raw-token benchmarks.
        source: where the numbers come from (one line; details in docs/workloads.md).
    """

    name: str
    prompt: LengthDist
    output: LengthDist
    template_tokens: int = 0
    source: str = ""

    def __post_init__(self) -> None:
        what = f"workload profile {self.name!r}"
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigError(f"workload profile: name must be a non-empty string, got "
                              f"{self.name!r}")
        for part in ("prompt", "output"):
            if not isinstance(getattr(self, part), LengthDist):
                raise ConfigError(f"{what}: {part} must be a length distribution, got "
                                  f"{getattr(self, part)!r}")
        object.__setattr__(self, "template_tokens",
                           _int(f"{what}: template_tokens", self.template_tokens, lo=0))
        if self.template_tokens + self.prompt.max_tokens > MAX_TOKENS:
            raise ConfigError(f"{what}: template_tokens + longest prompt exceeds {MAX_TOKENS}")
        if not isinstance(self.source, str):
            raise ConfigError(f"{what}: source must be a string")

    # -- the distributions the batch composer uses -----------------------------------------------
    @property
    def prompt_table(self) -> tuple[np.ndarray, np.ndarray]:
        """``(values, probs)`` of the full prompt (text + template), in tokens."""
        v, p = self.prompt.table
        return v + self.template_tokens, p

    @property
    def output_table(self) -> tuple[np.ndarray, np.ndarray]:
        """``(values, probs)`` of the output length, in tokens."""
        return self.output.table

    def sample_prompts(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` full prompt lengths (template included), int64 tokens."""
        return self.prompt.sample(rng, n) + self.template_tokens

    def sample_outputs(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` output lengths, int64 tokens."""
        return self.output.sample(rng, n)

    def mean_prompt_tokens(self) -> float:
        return self.prompt.mean() + self.template_tokens

    def mean_output_tokens(self) -> float:
        return self.output.mean()

    # -- files -------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain form, accepted by :meth:`from_dict` and by profile files."""
        return {"name": self.name, "source": self.source, "template_tokens": self.template_tokens,
                "prompt": self.prompt.to_dict(), "output": self.output.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], default_name: str | None = None, *,
                  where: str | None = None) -> Profile:
        """Build a profile from :meth:`to_dict` form, or the short form
        ``{"base": "hh-rlhf", "output": {...}}`` (a registered profile with fields replaced).

        Args:
            d: the mapping (``name``, ``prompt``, ``output``, optional ``template_tokens``,
                ``source``, ``base``).
            default_name: name used when ``d`` has none (a file's stem).
            where: prefix of error messages (default ``"workload profile '<name>'"``).

        Raises:
            ConfigError: one message naming the field.
        """
        what = where or "workload profile"
        if not isinstance(d, Mapping):
            raise ConfigError(f"{what}: expected a table/object, got {type(d).__name__}")
        base = None
        if "base" in d:
            try:
                base = d["base"] if isinstance(d["base"], Profile) else get_profile(d["base"])
            except ConfigError as exc:
                raise ConfigError(f"{what}: base: {exc}") from None
        name = d.get("name", default_name or (base.name if base else None))
        if where is None and isinstance(name, str):
            what = f"workload profile {name!r}"
        _keys(what, d, () if base else ("prompt", "output"),
              ("name", "source", "template_tokens", "prompt", "output", "base"))
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{what}: name must be a non-empty string, got {name!r}")
        prompt = dist_from_dict(d["prompt"], f"{what}: prompt") if "prompt" in d else base.prompt
        output = dist_from_dict(d["output"], f"{what}: output") if "output" in d else base.output
        template = _int(f"{what}: template_tokens",
                        d.get("template_tokens", base.template_tokens if base else 0), lo=0)
        source = d.get("source", f"based on {base.name}" if base else "user profile")
        if not isinstance(source, str):
            raise ConfigError(f"{what}: source must be a string, got {source!r}")
        try:
            return cls(name=name, prompt=prompt, output=output, template_tokens=template,
                       source=source)
        except ConfigError as exc:
            raise ConfigError(f"{what}: {exc}") from None

    def describe(self) -> str:
        """One line: mean prompt (with template) and output, in tokens."""
        return (f"{self.name}: prompt mean {self.mean_prompt_tokens():.0f} tokens "
                f"(template {self.template_tokens}), output mean "
                f"{self.mean_output_tokens():.0f} tokens")


def fixed_profile(prompt_tokens: int, output_tokens: int, name: str | None = None) -> Profile:
    """A profile whose every request has ``prompt_tokens`` and ``output_tokens`` (hand checks)."""
    p = _int("fixed profile: prompt_tokens", prompt_tokens)
    o = _int("fixed profile: output_tokens", output_tokens)
    return Profile(name or f"fixed:{p}/{o}", Fixed(p), Fixed(o),
                   source="user-given fixed lengths")


def load_profile(path: str | Path) -> Profile:
    """Read a profile file (``.json`` or ``.toml``; the form of :meth:`Profile.from_dict`; the
    name defaults to the file's stem).

    Raises:
        ConfigError: unreadable file, bad syntax, or a bad field (the message names the file).
    """
    p = Path(path)
    where = f"workload profile file {str(p)!r}"
    if p.suffix.lower() not in (".json", ".toml"):
        raise ConfigError(f"{where}: must end in .json or .toml")
    data = parse_document(read_text(p, "workload profile file"), p, "workload profile file")
    return Profile.from_dict(data, default_name=p.stem, where=where)


def get_profile(spec: str | Path | Profile | Mapping[str, Any]) -> Profile:
    """A profile from a registry name (:data:`PROFILES`, case-insensitive), ``"fixed:P/O"``
    (``P`` prompt and ``O`` output tokens), a ``.json``/``.toml`` file, a dict, or a Profile.

    Raises:
        ConfigError: unknown name (the message lists the known ones), bad file or spec.
    """
    if isinstance(spec, Profile):
        return spec
    if isinstance(spec, Mapping):
        return Profile.from_dict(spec)
    if isinstance(spec, Path) or (isinstance(spec, str)
                                  and spec.strip().lower().endswith((".json", ".toml"))):
        return load_profile(spec)
    if isinstance(spec, str) and spec.strip().lower().startswith("fixed:"):
        body = spec.strip()[6:]
        parts = body.split("/")
        if len(parts) != 2 or not all(x.strip().isdigit() for x in parts):
            raise ConfigError(f"workload profile {spec!r}: expected 'fixed:PROMPT/OUTPUT' with "
                              "token counts, e.g. 'fixed:1024/1024'")
        return fixed_profile(int(parts[0]), int(parts[1]))
    return lookup(PROFILES, spec, "workload profile")


# ---- the registered profiles ------------------------------------------------------------------
# Facts: shared/reference/serving-anchors.md §2 (datasets) and §1 (InferenceMAX). Every number
# below either comes from there or is marked ⚠ (an assumption: no published statistic). The
# derivations are in docs/workloads.md.

# HH-RLHF (Anthropic/hh-rlhf). A row is a transcript; the prompt is everything up to the last
# "\n\nAssistant:"; the served model answers it. No token statistics are published.
_HH_SINGLE_ROWS = 49_241  # single-exchange train rows (serving-anchors.md §2)
_HH_TRAIN_ROWS = 160_800  # train rows (serving-anchors.md §2)
_HH_SINGLE_SHARE = _HH_SINGLE_ROWS / _HH_TRAIN_ROWS  # 0.306 of prompts are one human turn
_HH_FIT_512 = 48_800  # single-exchange rows whose transcript fits 512 tokens (§2), read as:
#   prompt + response <= 512 tokens for both the chosen and the rejected response
_HH_TAIL_PER_RESPONSE = (1 - _HH_FIT_512 / _HH_SINGLE_ROWS) / 2  # 0.45 % per response
_HH_WINDOW = 512  # the window of that fact (§2)
_HH_HUMAN_MEDIAN = 24.0  # ⚠ tokens of one human turn, median (short questions)
_HH_HUMAN_SIGMA = 1.0  # ⚠ log-std of a human turn (one-line questions to paragraphs)
_HH_RESPONSE_SIGMA = 0.8  # ⚠ log-std of a response
_HH_PREVIOUS_EXCHANGES = 2  # ⚠ earlier (human, assistant) exchanges in a multi-turn prompt
_HH_MULTI_SIGMA = 0.6  # ⚠ log-std of a multi-turn prompt (a sum of turns varies less)
_HH_MAX_TOKENS = 4096  # ⚠ truncation of every HH length (far beyond "a few hundred")
_HH_TEMPLATE = 16  # ⚠ chat-template tokens (ChatML-like role markers replacing "Human:")


def _hh_response_median() -> float:
    """The response median for which P(prompt + response > 512) of a single-exchange row is
    the fact's 0.45 %, given the human-turn law above (solved exactly on the tables)."""
    hv, hp = LogNormal(_HH_HUMAN_MEDIAN, _HH_HUMAN_SIGMA, 1, _HH_MAX_TOKENS).table

    def excess(log_median: float) -> float:
        rv, rp = LogNormal(math.exp(log_median), _HH_RESPONSE_SIGMA, 1, _HH_MAX_TOKENS).table
        tail = np.concatenate([np.cumsum(rp[::-1])[::-1], [0.0]])  # tail[i] = P(R >= rv[i])
        # P(H + R > window) = sum_h P(H = h) P(R >= window + 1 - h)
        first = np.clip(_HH_WINDOW + 1 - hv - rv[0], 0, len(rv))
        return float(np.sum(hp * tail[first])) - _HH_TAIL_PER_RESPONSE

    return math.exp(_solve(excess, math.log(4.0), math.log(_HH_WINDOW)))


def _hh_profile() -> Profile:
    human = LogNormal(_HH_HUMAN_MEDIAN, _HH_HUMAN_SIGMA, 1, _HH_MAX_TOKENS)
    response = LogNormal(_hh_response_median(), _HH_RESPONSE_SIGMA, 1, _HH_MAX_TOKENS)
    # a multi-turn prompt: the earlier exchanges plus the last human turn, in mean
    multi_mean = human.mean() + _HH_PREVIOUS_EXCHANGES * (human.mean() + response.mean())
    multi = LogNormal.with_mean(multi_mean, _HH_MULTI_SIGMA, 8, _HH_MAX_TOKENS)
    prompt = Mixture(((_HH_SINGLE_SHARE, human), (1 - _HH_SINGLE_SHARE, multi)))
    return Profile(
        "hh-rlhf", prompt, response, template_tokens=_HH_TEMPLATE,
        source="HH-RLHF facts (serving-anchors.md §2: 30.6 % single-exchange rows, 512-token "
               "window tail); turn-length shapes assumed (docs/workloads.md)")


# MATH-500 (HuggingFaceH4/MATH-500): short problems, long reasoning answers.
_MATH_PROMPT_MEAN = 75.0  # tokens of the problem text: 266.89 characters (§2, EvalScope)
_MATH_CHARS_PER_TOKEN = 266.89 / _MATH_PROMPT_MEAN  # 3.56, implied by the two numbers above
_MATH_PROMPT_LOW = round(91 / _MATH_CHARS_PER_TOKEN)  # 26: the shortest problem, 91 chars (§2)
_MATH_PROMPT_HIGH = round(1804 / _MATH_CHARS_PER_TOKEN)  # 507: the longest, 1,804 chars (§2)
_MATH_PROMPT_SIGMA = 0.5  # ⚠ log-std; keeps ~4 % of problems under 110 chars (min is 91)
_MATH_TEMPLATE = 32  # ⚠ chat template + "reason step by step, put the answer in \boxed{}"
_MATH_OUTPUT_MEAN = 4717.5  # DeepSeek-R1's mean output on 30 hard MATH problems (§2, arXiv
#   2501.18576); ⚠ used for all of MATH-500, whose easier levels answer shorter
_MATH_OUTPUT_SIGMA = 0.7  # ⚠ log-std of the reasoning length (right-skewed, long tail)
_MATH_OUTPUT_LOW = 64  # ⚠ shortest answer (a reasoning model always writes some chain)
_MATH_OUTPUT_HIGH = 32_768  # DeepSeek-R1's evaluation cap on generation length (arXiv
#   2501.12948, "maximum generation length of 32,768 tokens")


def _math_profile() -> Profile:
    prompt = LogNormal.with_mean(_MATH_PROMPT_MEAN, _MATH_PROMPT_SIGMA, _MATH_PROMPT_LOW,
                                 _MATH_PROMPT_HIGH)
    output = LogNormal.with_mean(_MATH_OUTPUT_MEAN, _MATH_OUTPUT_SIGMA, _MATH_OUTPUT_LOW,
                                 _MATH_OUTPUT_HIGH)
    return Profile(
        "math-500", prompt, output, template_tokens=_MATH_TEMPLATE,
        source="MATH-500 problem lengths (serving-anchors.md §2, EvalScope) and DeepSeek-R1's "
               "4,717.5-token mean output (arXiv 2501.18576); shapes assumed (docs/workloads.md)")


# InferenceMAX (SemiAnalysisAI/InferenceX): random prompts; ISL and OSL drawn uniformly from the
# integers [int(0.8 x len), len] (RANDOM_RANGE_RATIO 0.8; benchmark_serving.py's
# np.random.randint(int(len * ratio), len + 1)); lengths 1024 and 8192 (serving-anchors.md §1).
_IMAX_RANGE_RATIO = 0.8


def _imax_profile(isl: int, osl: int, label: str) -> Profile:
    def u(n: int) -> Uniform:
        return Uniform(int(n * _IMAX_RANGE_RATIO), n)

    return Profile(f"inferencemax-{label}", u(isl), u(osl), template_tokens=0,
                   source=f"InferenceMAX ISL/OSL {isl}/{osl}, uniform in [0.8 x len, len] "
                          "(serving-anchors.md §1)")


class _Registry(Mapping[str, "Profile"]):
    """The registered profiles by name, each built on first use and then kept (a mapping
    like a dict: iteration, ``in``, ``[]``). Building hh-rlhf solves for its response median
    on the length tables and needs scipy.special; a command that refuses its arguments or
    uses another profile does not pay for that."""

    def __init__(self, builders: dict[str, Callable[[], Profile]]):
        self._builders = builders
        self._built: dict[str, Profile] = {}

    def __getitem__(self, name: str) -> Profile:
        p = self._built.get(name)
        if p is None:
            p = self._builders[name]()  # KeyError for an unknown name, as a dict
            if p.name != name:
                raise AssertionError(f"profile registry: {name!r} built {p.name!r}")
            self._built[name] = p
        return p

    def __iter__(self) -> Iterator[str]:
        return iter(self._builders)

    def __len__(self) -> int:
        return len(self._builders)

    def __contains__(self, name: object) -> bool:
        return name in self._builders

    def __repr__(self) -> str:
        return f"<profile registry: {', '.join(self._builders)}>"


#: Registered profiles (a read-only mapping, each built on first use; looked up with
#: :func:`get_profile`).
PROFILES: Mapping[str, Profile] = _Registry({
    "hh-rlhf": _hh_profile,
    "math-500": _math_profile,
    "inferencemax-1k1k": lambda: _imax_profile(1024, 1024, "1k1k"),
    "inferencemax-1k8k": lambda: _imax_profile(1024, 8192, "1k8k"),
    "inferencemax-8k1k": lambda: _imax_profile(8192, 1024, "8k1k"),
    # placeholder lengths for "fixed": InferenceMAX's nominal 1k/1k; give your own with
    # fixed_profile(P, O) or the spec "fixed:P/O"
    "fixed": lambda: fixed_profile(1024, 1024, name="fixed"),
})
