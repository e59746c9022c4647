"""What a scheduler knows of time: the runtime PIM cost table and the GPU/link estimates.

**The runtime PIM cost table** (seed §5 "Timing Models"): keys are token counts, values the
observed PIM time of one expert with that many tokens. After each execution the table is
updated with an exponential moving average of the observed times; a count never observed
falls back, once, to a roofline estimate (operations / PIM peak throughput). The table is
state that lives across layers and steps; the seed reports that it "converges within the first
few iterations". :class:`EmaCostTable` is that table, dense over token counts (a count is at
most the batch size, so the table is small) so a lookup is an array gather.

**The estimator** (:class:`Estimator`) bundles what every scheduler may use, so that all
methods get the same information and differ only in their algorithm:

* ``T_GPU`` of a set of GPU-side experts plus the layer's fixed GPU work, from a
  :class:`sieve.hw.cost.CostModel` (the seed uses its roofline estimate,
  :class:`sieve.hw.estimates.RooflineCostModel`; the precise model can be given instead);
* per-expert PIM time from the EMA table (``pim="ema"``, the seed's), the roofline fallback
  alone (``pim="roofline"``: never updated, an ablation), or the cost model's own answer for one
  expert (``pim="model"``: with :class:`sieve.pim.cost.EngineCostModel`, the engine's time of
  the expert alone - an oracle-like ablation);
* one table per PIM mapping ("tp": every expert over all pseudo-channels; "ep": over a group of
  pseudo-channels, PIMoE), since the time of one expert differs between them.

The EMA weight ``alpha`` is ours (the seed gives none): 0.25 weighs the newest observation by a
quarter, an effective memory of about 7 observations, enough to average the refresh collisions
that make a single observation vary (one tRFC, a few hundred ns) while following a drift within
a few steps. tests/test_sched_estimator.py shows the convergence; docs/schedulers.md plots it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sieve.errors import ConfigError
from sieve.hw.cost import (
    CostModel,
    ExpertShape,
    GpuOp,
    GroupedExperts,
    PimExperts,
    counts_array,
)
from sieve.hw.estimates import RooflineCostModel
from sieve.validate import check_number

try:
    from sieve.sched import _greedy
except ImportError as exc:  # pragma: no cover - exercised by hand on an unbuilt checkout
    from sieve.errors import NotBuiltError

    raise NotBuiltError.of("scheduler loop", "sieve.sched._greedy", exc) from None

__all__ = ["DEFAULT_ALPHA", "PIM_SOURCES", "EmaCostTable", "Estimator", "GpuAffine"]

#: EMA weight of the newest observation (module docstring: our choice, no source).
DEFAULT_ALPHA = 0.25
#: Where per-expert PIM estimates come from (module docstring).
PIM_SOURCES = ("ema", "roofline", "model")


class EmaCostTable:
    """PIM time of one expert by token count: EMA of observations, roofline before any.

    Args:
        fallback_ns_per_token: the roofline estimate's slope (an expert with ``n`` tokens is
            estimated at ``n * slope`` until observed).
        alpha: EMA weight of the newest observation, in (0, 1].
        size: initial number of token counts covered (grown on demand).
    """

    def __init__(self, fallback_ns_per_token: float, alpha: float = DEFAULT_ALPHA,
                 size: int = 257):
        self.slope = check_number("PIM cost table", "fallback_ns_per_token",
                                  fallback_ns_per_token)
        a = check_number("PIM cost table", "alpha", alpha)
        if not 0 < a <= 1:
            raise ConfigError(f"PIM cost table: alpha must be in (0, 1], got {alpha!r}")
        self.alpha = a
        self.values = np.arange(max(int(size), 2), dtype=np.float64) * self.slope
        self.n_obs = np.zeros(self.values.size, dtype=np.int64)
        self.updates = 0

    def _grow(self, n_max: int) -> None:
        if n_max < self.values.size:
            return
        size = max(n_max + 1, 2 * self.values.size)
        old = self.values.size
        self.values = np.concatenate([self.values, np.arange(old, size) * self.slope])
        self.n_obs = np.concatenate([self.n_obs, np.zeros(size - old, dtype=np.int64)])

    def estimate_ns(self, counts) -> np.ndarray:
        """Estimated PIM time of experts with these token counts (0 tokens -> 0 ns)."""
        c = counts_array("PIM cost table", counts)
        if c.size:
            self._grow(int(c.max()))
        return self.values[c]

    def filled(self) -> np.ndarray:
        """The table read with its unobserved counts estimated from the observed ones (what
        ``sieve-cp`` reads; :attr:`values`, the seed's reading, keeps the roofline there):

        * no count observed: the roofline, as the seed's;
        * one count ``m`` observed: ``values[m] * n / m`` (the roofline scaled by the
          observed / roofline ratio at ``m``);
        * several: between two observed counts, the straight line through them; beyond the
          smallest or the largest, the least-squares line through every observed count.

        Never below the roofline (``n * slope``: a PIM cannot run a token faster than its
        peak). Observed counts keep their EMA values. Computed once per table state (the
        update count and size) and cached; the array is shared, not to be written."""
        key = (self.updates, self.values.size)
        cached = self.__dict__.get("_filled")
        if cached is not None and cached[0] == key:
            return cached[1]
        out = np.empty_like(self.values)
        _greedy.fill_unobserved(self.values, self.n_obs, self.slope, out)
        self.__dict__["_filled"] = (key, out)
        return out

    def _filled_reference(self) -> np.ndarray:
        """:meth:`filled` in numpy (the compiled fill is tested against it)."""
        obs = np.flatnonzero(self.n_obs)
        obs = obs[obs > 0]
        v = self.values
        if obs.size:
            n = np.arange(v.size, dtype=np.float64)
            y = v[obs]
            if obs.size == 1:
                est = y[0] * n / obs[0]
            else:
                est = np.interp(n, obs, y)
                out = (n < obs[0]) | (n > obs[-1])
                b, a = np.polyfit(obs.astype(np.float64), y, 1)
                est[out] = a + b * n[out]
            est = np.maximum(est, n * self.slope)
            v = np.where(self.n_obs > 0, v, est)
            v[0] = 0.0
        return v

    def observed(self, n: int) -> bool:
        """Whether count ``n`` has been observed at least once."""
        return n < self.n_obs.size and bool(self.n_obs[n])

    def update(self, counts, observed_ns) -> None:
        """Fold observations in, in the given order: the first observation of a count replaces
        the fallback, later ones move the value by ``alpha`` towards them."""
        c = counts_array("PIM cost table", counts)
        t = np.atleast_1d(np.asarray(observed_ns, dtype=np.float64))
        if t.shape != c.shape or not np.all(np.isfinite(t)) or (t.size and t.min() < 0):
            raise ConfigError("PIM cost table: observed_ns must be finite times >= 0, one per "
                              "count")
        if not c.size:
            return
        self._grow(int(c.max()))
        a = self.alpha
        for n, x in zip(c.tolist(), t.tolist()):
            if n == 0:
                continue
            if self.n_obs[n]:
                self.values[n] += a * (x - self.values[n])
            else:
                self.values[n] = x
            self.n_obs[n] += 1
        self.updates += 1

    def copy(self) -> EmaCostTable:
        new = EmaCostTable(self.slope, self.alpha, 2)
        new.values = self.values.copy()
        new.n_obs = self.n_obs.copy()
        new.updates = self.updates
        return new


class GpuAffine:
    """``T_GPU`` as the seed's roofline: ``max((B0 + sum(W + A n)) / bw, (F0 + sum(F n)) /
    peak)`` over the GPU-side experts; the numbers the compiled greedy loop needs
    (``params``: its parameter buffer, first 7 entries)."""

    __slots__ = ("base_bytes", "base_flops", "w", "a", "f", "bytes_per_ns", "flops_per_ns",
                 "params")

    def __init__(self, base_bytes, base_flops, w, a, f, bytes_per_ns, flops_per_ns):
        self.base_bytes, self.base_flops = float(base_bytes), float(base_flops)
        self.w, self.a, self.f = float(w), float(a), float(f)
        self.bytes_per_ns, self.flops_per_ns = float(bytes_per_ns), float(flops_per_ns)
        self.params = np.array([self.base_bytes, self.base_flops, self.w, self.a, self.f,
                                self.bytes_per_ns, self.flops_per_ns])

    def gpu_ns(self, counts: np.ndarray) -> float:
        tokens = float(counts.sum())
        nb = self.base_bytes + np.count_nonzero(counts) * self.w + self.a * tokens
        nf = self.base_flops + self.f * tokens
        return max(nb / self.bytes_per_ns, nf / self.flops_per_ns)


class Estimator:
    """The estimates every scheduler is handed (module docstring).

    Args:
        cost: GPU and link time model (a :class:`sieve.hw.cost.CostModel`).
        shape: the expert FFN shape of the layers it estimates.
        pim: "ema" (seed), "roofline" (never updated) or "model" (the cost model's time of one
            expert alone).
        alpha: EMA weight.
        pim_order: order of the serialized GEMVs the observations come from.
    """

    def __init__(self, cost: CostModel, shape: ExpertShape, *, pim: str = "ema",
                 alpha: float = DEFAULT_ALPHA, pim_order: str = "expert"):
        if not isinstance(cost, CostModel):
            raise ConfigError(f"estimator: cost must be a CostModel (gpu_ns, comm_ns, pim_ns), "
                              f"got {type(cost).__name__}")
        if not isinstance(shape, ExpertShape):
            raise ConfigError("estimator: shape must be an ExpertShape")
        if pim not in PIM_SOURCES:
            raise ConfigError(f"estimator: pim source {pim!r} unknown (known: "
                              f"{', '.join(PIM_SOURCES)})")
        self.cost = cost
        self.system = cost.system
        self.shape = shape
        self.pim_source = pim
        self.pim_order = pim_order
        self.roofline = (cost if isinstance(cost, RooflineCostModel)
                         else RooflineCostModel(cost.system))
        self._n_pcs = self.system.memory.org.total_pseudochannels
        slope = (float(self.roofline.pim_expert_ns(shape, 1)) if self.system.has_pim
                 else 0.0)
        self._slope_tp = slope
        self.tables: dict[tuple[str, int], EmaCostTable] = {}
        self.fixed: dict[tuple[str, int], float] = {}
        self.alpha = alpha
        self.table("tp")  # validates alpha
        self._gpu_lut: dict[int, float] = {}
        self._model_lut: dict[tuple[str, int, int], float] = {}
        self._expert_affine: tuple[float, float, float] | None = None
        self._base: dict[tuple, GpuAffine] = {}
        #: observations fed so far (:meth:`observe`): an estimate made at one version holds
        #: until the next (the step's look prices splits once per version)
        self.version = 0

    # ---- PIM ---------------------------------------------------------------------------------
    def table(self, mapping: str = "tp", pcs: int | None = None) -> EmaCostTable:
        """The EMA table of a mapping (EP: per group size ``pcs``)."""
        key = self._key(mapping, pcs)
        g = key[1]
        if key not in self.tables:
            self.tables[key] = EmaCostTable(self._slope_tp * self._n_pcs / g, self.alpha)
        return self.tables[key]

    def _key(self, mapping: str, pcs: int | None) -> tuple[str, int]:
        return (mapping, self._n_pcs if mapping == "tp" else int(pcs or 1))

    def pim_fixed_ns(self, mapping: str = "tp", pcs: int | None = None) -> float:
        """PIM time a program pays once however many experts it runs (the one GPU step of the
        "layer" order), observed (EMA); 0 before any observation (the roofline has no such
        term) and for the other orders, where each expert pays its own."""
        if self.pim_source == "roofline":
            return 0.0
        return self.fixed.get(self._key(mapping, pcs), 0.0)

    def pim_expert_ns(self, counts, mapping: str = "tp", pcs: int | None = None) -> np.ndarray:
        """Estimated PIM time of each expert alone (0 for 0 tokens)."""
        c = counts_array("estimator", counts)
        if self.pim_source == "model":
            out = np.zeros(c.size)
            for i, n in enumerate(c.tolist()):
                if n:
                    k = (mapping, int(pcs or 0), n)
                    if k not in self._model_lut:
                        self._model_lut[k] = self.cost.pim_ns(PimExperts(
                            [n], self.shape, mapping="tp", order=self.pim_order)) if (
                            mapping == "tp") else self._ep_model_ns(n, pcs)
                    out[i] = self._model_lut[k]
            return out
        t = self.table(mapping, pcs)
        if self.pim_source == "roofline":
            return c * t.slope
        return t.estimate_ns(c)

    def _ep_model_ns(self, n: int, pcs: int | None) -> float:
        g = int(pcs or 1)
        n_groups = self._n_pcs // g
        tokens = np.zeros(n_groups, dtype=np.int64)
        tokens[0] = n
        return self.cost.pim_ns(PimExperts(tokens, self.shape, mapping="ep",
                                           order=self.pim_order, pcs_per_expert=g))

    def _pim_fast(self, c: np.ndarray, mapping: str = "tp", pcs: int | None = None,
                  filled: bool = False) -> np.ndarray:
        """:meth:`pim_expert_ns` for an already validated int64 array (no checks); with
        ``filled`` the EMA table is read by :meth:`EmaCostTable.filled`."""
        if self.pim_source == "model":
            return self.pim_expert_ns(c, mapping, pcs)
        t = self.table(mapping, pcs)
        if self.pim_source == "roofline":
            return c * t.slope
        if c.size and c.max() >= t.values.size:
            t._grow(int(c.max()))
        return (t.filled() if filled else t.values)[c]

    def observe(self, counts, observed_ns, mapping: str = "tp", pcs: int | None = None,
                fixed_ns: float | None = None) -> None:
        """Feed observed PIM times back after an execution: each expert's own time and, for a
        "layer"-order program, the time it paid once (``fixed_ns``)."""
        if self.pim_source != "ema":
            return
        self.version += 1
        self.table(mapping, pcs).update(counts, observed_ns)
        if fixed_ns is not None:
            x = check_number("estimator", "fixed_ns", fixed_ns)
            k = self._key(mapping, pcs)
            old = self.fixed.get(k)
            self.fixed[k] = x if old is None else old + self.alpha * (x - old)

    # ---- GPU ---------------------------------------------------------------------------------
    def gpu_affine(self, fixed: Sequence[GpuOp] = ()) -> GpuAffine | None:
        """The affine roofline form of ``T_GPU`` when the cost model is the roofline; None for
        other models (schedulers then ask :meth:`gpu_ns` per candidate)."""
        if not isinstance(self.cost, RooflineCostModel):
            return None
        r = self.cost
        if self._expert_affine is None:
            b1, f1 = r.gpu_terms(GroupedExperts([1], self.shape))
            b2, _ = r.gpu_terms(GroupedExperts([2], self.shape))
            self._expert_affine = (b1 - (b2 - b1), b2 - b1, f1)  # W, A (bytes/token), F
        key = fixed if isinstance(fixed, tuple) else tuple(fixed)
        aff = self._base.get(key)
        if aff is None:
            w, a, f = self._expert_affine
            b0 = f0 = 0.0
            for op in key:
                b, fl = r.gpu_terms(op)
                b0, f0 = b0 + b, f0 + fl
            if len(self._base) > 1024:  # the key holds the operations: keep the cache bounded
                self._base.clear()
            aff = self._base[key] = GpuAffine(b0, f0, w, a, f, r._hbm_bytes_per_ns,
                                              r._flops_per_ns)
        return aff

    def gpu_ns(self, counts, fixed: Sequence[GpuOp] = ()) -> float:
        """``T_GPU`` of the experts with these counts (0 = not on the GPU) plus ``fixed``."""
        c = counts if (isinstance(counts, np.ndarray) and counts.dtype == np.int64
                       and counts.ndim == 1) else counts_array("estimator", counts)
        aff = self.gpu_affine(fixed)
        if aff is not None:
            return aff.gpu_ns(c)
        ops = list(fixed)
        if c.any():
            ops.append(GroupedExperts(c, self.shape))
        return self.cost.gpu_ns(ops) if ops else 0.0

    def gpu_expert_ns(self, counts) -> np.ndarray:
        """GPU time of each expert with these counts alone (Duplex's per-processor table);
        0 for 0 tokens."""
        c = counts_array("estimator", counts)
        aff = self.gpu_affine(())
        if aff is not None:
            n = c.astype(np.float64)
            t = np.maximum((aff.w + aff.a * n) / aff.bytes_per_ns, aff.f * n / aff.flops_per_ns)
            return np.where(c > 0, t, 0.0)
        out = np.zeros(c.size)
        for i, n in enumerate(c.tolist()):
            if n not in self._gpu_lut:
                self._gpu_lut[n] = self.cost.gpu_ns(GroupedExperts([n], self.shape)) if n else 0.0
            out[i] = self._gpu_lut[n]
        return out
