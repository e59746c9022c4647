"""Sieve with a critical-path estimate (``sieve-cp``): the seed's greedy, judged by the layer it
runs in.

The seed's Sieve (:mod:`sieve.sched.greedy`) minimises ``T_total = max(T_comm, T_GPU(G),
T_PIM(S))``, one max over the layer's communication, all its GPU work and all its PIM work,
as if they all overlapped the expert phase (seed §5: "highly fine-grained overlap"). In the
simulated layer (seed Figure 8's graph) the projections, the router and attention end before
the decision and the dispatch, the expert work and the combine follow one another; under
two-batch overlap the other micro-batch's work shares the lanes. ``sieve-cp`` keeps everything
else of the seed's method - the same sort by token count, the same single scan from all-on-PIM,
the same stop at the first move that does not lower the estimate, the same runtime EMA cost
table for PIM - and replaces ``T_total`` by the end of the layer's expert phase on its real
dependency graph, from when each resource is free (:class:`~sieve.sched.partition.LayerTiming`,
filled by the step simulator from its schedule at the decision):

* GPU experts: their grouped GEMM streams its weights after the HBM lane's backlog (on the
  step's shared lane the stream runs beside it and ends when both are done, unless a backlog
  load outlasts it),
  ``E_G = max(h + k0 + comb(bytes(G) / bw, FLOPs(pad(G)) / peak), max(g, d) + k0 +
  act_bytes(G) / bw)``: the weights (``h``: HBM free), and the kernels' fixed time and the
  activations of tokens that arrive with the dispatch (``d``) on a free compute lane (``g``,
  after the work queued there: under two-batch overlap the other micro-batch's); ``k0`` is its
  kernel launches' fixed time (two grouped GEMMs, the GPU calibration's ``t0``), the rest at
  the estimator's rates. ``comb`` and ``pad`` are the calibrated kernel model's
  (:func:`sieve.hw.gpu.grouped_gemm_time_ns`, :func:`gpu_form`): memory and compute time
  combined as a p-norm (``overlap_p``, fitted with the GPU calibration on measured GEMM rows)
  and every expert's tokens padded to whole tiles; under ``estimator="roofline"`` (spec
  peaks) they are the seed's max and no padding. On colocated (prefill) layers the kernel
  model gives the GPU experts 11-14 % more time than the seed's max on unpadded tokens, which
  moved 2-4 experts too many to the GPU (docs/system.md §5); waves are still left out (the
  form must grow with every expert moved, which keeps the scan's estimate quasi-convex);
* PIM experts: ``E_P = max(p, d) + T_PIM(S)`` (after their tokens and a free PIM; ``T_PIM``
  from the EMA table as the seed's, plus the program's once-paid GPU step);
* ``T = max(C, E_G, E_P)``: the combine follows both, and cannot start before the link is
  free for it (``C``: under two-batch overlap the other micro-batch's collectives queue on the
  same link). On a plateau (``C`` dominates) the scan stops at its first non-decrease, i.e.
  keeps the GPU free for the other micro-batch.

Under two-batch overlap the layer's period is also bounded by each lane's work of both
micro-batches, and the scan minimises ``J = max(T + chain, P_gpu + occ_gpu(G), P_hbm +
occ_hbm(G), P_pim + T_PIM(S))`` (:class:`~sieve.sched.partition.LayerTiming`'s period fields;
``occ``: the GPU experts' weight stream on the HBM lane, the rest of their kernel time on the
compute lane). GPU experts then count as the delay they put on the other micro-batch's chain
on a busy compute lane. With the period fields 0 (no overlap) ``J = T``. The step simulator
fills ``chain_ns`` and ``P_gpu`` only (:meth:`sieve.system.step._Builder._period`): the HBM and
PIM lanes' work is mostly the two micro-batches' expert streams and programs, which one
decision can shift onto the other's, and bounding their sums made each decision answer the
other's last split, so the two drifted apart (docs/system.md §5); the terms below stay in the
estimate for a caller whose lanes they describe.

The lane bounds assume the lanes' work interleaves freely; one dependency breaks that often
enough to price it: when the other micro-batch's next attention still has GPU kernels to run,
the PIM idles from the end of this split's PIM experts until the attention can start. The step
gives when that attention could start (``other_attn_ready_ns``: its kernels' compute from a
free compute lane; their weight loads share the HBM lane with this split's stream) and, for an
HBM lane that serves loads first come first served, the kernels from the first weight load on
that would wait for this split's whole stream (``other_attn_blocked_ns``; the step's lane is
shared and leaves it None), and the scan adds ``P_pim + max(T_PIM(S), R - max(p, d))`` with
``R = max(ready, E_G or h) + blocked`` (``h`` without GPU experts), ``R = ready`` without
``blocked``. ``R`` never decreases along the scan and ``T_PIM`` never increases, so the
estimate stays quasi-convex.

**The other micro-batch's cycle.** Under two-batch overlap a decision is often taken while the
other micro-batch's GPU expert stream still runs on the shared HBM lane; this split's stream
then runs beside it and delays it by ``min(W, R_o)`` (processor sharing: ``W`` this split's
weight stream, ``R_o`` the other's work left), and with it everything the other does until it
decides again. Where the first micro-batch to decide streamed more than its share, the second
fell further behind each layer and set the period (Qwen3-30B-A3B's drawn colocated batches,
docs/system.md §5). The step gives the other stream's projected end ``E_o``, ``R_o``, the
other's chain from that end to its next attention ``C_o`` and its attention with the rest of
its chain to its next decision ``A_o`` (:class:`~sieve.sched.partition.LayerTiming`'s
``other_stream_*``, ``other_chain_ns``, ``other_rest_ns``), and whether that attention runs
on the PIM after this split's PIM experts; the scan adds ``J >= max(E_o + min(occ_hbm(G), R_o)
+ C_o, [on PIM] max(p, d) + T_PIM(S)) + A_o``, the earliest that micro-batch decides again.
Its first part never decreases along the scan and its second never increases.

**The look ahead (two-batch overlap).** The bounds above price each micro-batch's decision
from its own side; how one micro-batch's split moves the other's next decision through the
shared lanes (a weight stream stretched by the other's on the HBM lane, the PIM idle until the
other decides, the two micro-batches' phase) they price only in part (docs/system.md §5).
Under two-batch overlap the step also gives the decision a look ahead
(:class:`~sieve.sched.partition.LayerLoad`'s ``lookahead``): its own list schedule
(:meth:`sieve.system.dag.Schedule.lookahead`) continued from the decision, with this split's
expert tasks at the estimator's costs (:func:`split_cost`), until both micro-batches on this
GPU have reached their next decision and, under expert parallelism, both have started the next
layer's dispatch; the last of those starts is the split's rating (the pair's progress, one
layer of each). Decisions the look reaches before those stand in for the rated split: another
GPU's (expert parallelism) puts as many of its most popular experts on its GPU as this split
has (:func:`prefix_split`); the other micro-batch's of this layer on this GPU is guessed two
ways, at this split's threshold and with as many of its most popular experts as this split,
and the lower of the two looks is the rating (that decision will take what its own look rates
best; :data:`sieve.system.step.STAND_INS`). The scan runs as above; the look
then rates its split and other prefixes of the same order (:func:`look_prefixes`: all on PIM,
all on the GPU, 1, 2, 4, ... experts on the GPU, the scan's neighbours), then steps one expert
at a time from the best of those while the rating falls, and the best rated is taken (ties:
the scan's). The look costs a list schedule per prefix rated (``sieve profile`` counts
``looks`` and ``look_placements``); the step charges the decision the seed's time as for every
other method.

``E_G`` and the GPU lane terms never decrease and ``E_P`` and the PIM term never increase along
the sorted prefixes, so the estimate is quasi-convex along the scan and the first non-decrease
is the best prefix: every split that is a prefix of the popularity order (all on PIM = AllExp,
all on GPU = NoExp, Duplex's, the seed's Sieve's) is one this estimate rates no better
(tests/test_sched_cp.py).

**The cost table's unobserved counts.** The table is the seed's (same EMA, same observations,
:class:`~sieve.sched.estimator.EmaCostTable`), but ``sieve-cp`` reads a count it has never
observed from the counts it has (:meth:`~sieve.sched.estimator.EmaCostTable.filled`: the line
through the neighbouring observed counts, beyond them the least-squares line through all, never
below the roofline) where the seed reads the roofline, which underestimates an expert's PIM
time 1.4-1.6x once DRAM overheads are in (seed §5 gives 1.8-4.2x; docs/schedulers.md). A layer
with few experts and a large batch spreads its counts over values a few steps leave unobserved,
and the roofline there keeps experts on PIM that the layer finds slow (the oracle comparison,
docs/validation.md). ``sieve-cp-seedtable`` reads the table as the seed does.

**Decisions that do not pay.** A decision costs time on the critical path (the seed's 20 us
per 256 activated experts) that the static all-on-PIM split does not pay. ``est_gain_ns`` of
each partition is what the chosen split saves over all on PIM by this estimate; the step
simulator skips a layer's next decisions while the last one saved less than it cost
(:mod:`sieve.sched.amortize`; :func:`sieve_cp_start` is the split taken then).
``sieve-cp-always`` decides every time.

Two implementations, decision for decision the same (tests): the compiled loop
(``sieve.sched._greedy.sieve_cp_greedy``) and :func:`sieve_cp_reference` in Python.
:func:`cp_estimate` rates any split the same way. Times are nanoseconds.
"""

from __future__ import annotations

import math
from array import array

import numpy as np

from sieve.errors import ConfigError
from sieve.hw.gpu import token_tiles
from sieve.sched.estimator import EmaCostTable, Estimator, GpuAffine
from sieve.sched.partition import LayerLoad, LayerTiming, Partition

try:
    from sieve.sched import _greedy
except ImportError as exc:  # pragma: no cover - exercised by hand on an unbuilt checkout
    from sieve.errors import NotBuiltError

    raise NotBuiltError.of("scheduler loop", "sieve.sched._greedy", exc) from None

__all__ = ["FALLBACKS", "cp_estimate", "gpu_form", "gpu_launch_ns", "padded_tokens", "sieve_cp",
           "sieve_cp_reference", "sieve_cp_start", "split_cost", "timing_of"]

#: How sieve-cp reads the runtime cost table's counts never observed (module docstring):
#: "observed" (default: estimated from the observed counts, EmaCostTable.filled) or "roofline"
#: (the seed's fallback, EmaCostTable.values; the ``sieve-cp-seedtable`` ablation).
FALLBACKS = ("observed", "roofline")

_NPAR = _greedy.Q_N


def timing_of(load: LayerLoad) -> LayerTiming:
    """The load's timing, or for a layer outside a step (no timing) PIM free after what
    already occupies it (``pim_busy_ns``) and everything else at once."""
    if load.timing is not None:
        return load.timing
    return LayerTiming(pim_ready_ns=load.pim_busy_ns)


def gpu_launch_ns(est: Estimator) -> float:
    """Fixed time of a non-empty grouped GEMM of GPU-side experts: its two kernels' ``t0``
    (gate/up and down, :func:`sieve.hw.gpu.grouped_gemm_time_ns`) at the system's dtype."""
    s = est.system
    return 2.0 * s.gpu_calibration.t0_gemm_ns(s.gpu.run_dtype(s.dtype))


def gpu_form(est: Estimator) -> tuple[float, float, float]:
    """How sieve-cp combines its GPU experts' memory and compute time: ``(p, tile_min,
    tile_max)``. The calibrated kernel model's (:func:`sieve.hw.gpu.grouped_gemm_time_ns`: the
    p-norm of the two, the tokens of each expert padded to whole tiles; the GPU calibration's
    ``overlap_p``, ``tile_m_min``, ``tile_m_max``) unless the estimator is the seed's roofline
    at spec peaks (``estimator="roofline"``): then ``(0, 0, 0)``, max and no padding."""
    from sieve.hw.estimates import RooflineCostModel

    if isinstance(est.cost, RooflineCostModel) and not est.cost.achievable:
        return 0.0, 0.0, 0.0
    cal = est.system.gpu_calibration
    p = float(cal.overlap_p)
    return (0.0 if np.isinf(p) else p), float(cal.tile_m_min), float(cal.tile_m_max)


def padded_tokens(counts: np.ndarray, tile_min: float, tile_max: float) -> float:
    """Token rows of the experts' tiles (:func:`gpu_form`; the compiled loop's ``_pad``): each
    count rounded up to whole tiles of the kernel model's height
    (:func:`sieve.hw.gpu.token_tiles`); the plain sum when ``tile_max`` is 0."""
    c = np.asarray(counts, dtype=np.float64)
    c = c[c > 0]
    if tile_max <= 0 or c.size == 0:
        return float(c.sum())
    n_tiles, tm = token_tiles(c, tile_min, tile_max)
    return float((n_tiles * tm).sum())


def _cbrt12(x: float) -> float:
    """Cube root of ``x`` in [1, 2], the compiled loop's ``_cbrt12`` operation for operation: a
    quadratic first guess (Chebyshev fit, 8e-4 relative) and two Halley steps; within 3 ulp
    (6.7e-16) of libm's ``cbrt`` there, at a quarter of its cost in the loop."""
    y = 0.6242864310132806 + x * (0.43551165145893983 + x * -0.05900474451917884)
    y3 = y * y * y
    y = y * (y3 + 2.0 * x) / (2.0 * y3 + x)
    y3 = y * y * y
    return y * (y3 + 2.0 * x) / (2.0 * y3 + x)


def _combine(x: float, y: float, p: float) -> float:
    """The compiled loop's ``_comb``, operation for operation: the p-norm of
    :func:`sieve.hw.gpu._combine`, for p = 3 and 2 by products and a cube (:func:`_cbrt12`) or
    square root."""
    hi, lo = max(x, y), min(x, y)
    if p <= 0 or hi <= 0:
        return hi
    r = lo / hi
    if p == 3.0:
        return hi * _cbrt12(1.0 + r * r * r)
    if p == 2.0:
        return hi * math.sqrt(1.0 + r * r)
    return hi * (1.0 + r ** p) ** (1.0 / p)


def _affine(est: Estimator) -> GpuAffine:
    aff = est.gpu_affine(())
    if aff is None:  # a non-roofline cost model: take the seed's roofline at achievable rates
        from sieve.hw.estimates import RooflineCostModel

        aff = Estimator(RooflineCostModel(est.system, achievable=True), est.shape).gpu_affine(())
    return aff


_STATIC = (_greedy.Q_W, _greedy.Q_A, _greedy.Q_F, _greedy.Q_BW, _greedy.Q_PEAK, _greedy.Q_K0,
           _greedy.Q_SLOPE, _greedy.Q_PN, _greedy.Q_TMIN, _greedy.Q_TMAX)
_QNACT, _QCMAX = _greedy.Q_NACT, _greedy.Q_CMAX
_NO_OBS = np.zeros(0, dtype=np.int64)  # the loop reads its table as is


def _context(est: Estimator) -> tuple[array, EmaCostTable]:
    """What sieve-cp's compiled loop needs of an estimator that does not change between
    decisions, built once per estimator: the parameter buffer with the GPU's affine form
    (:func:`_affine`; a function of the estimator's cost model and expert shape, both fixed at
    construction), its combine, launch time and the PIM slope written, and the runtime table
    of the TP mapping (the estimator keeps one table object per mapping). The buffer is an
    ``array.array`` of doubles: its items are set at a fraction of a numpy item's cost, and the
    loop reads it as a typed memoryview all the same."""
    ctx = est.__dict__.get("_cp_ctx")
    if ctx is None:
        aff = _affine(est)
        par = array("d", bytes(8 * _NPAR))
        for i, v in zip(_STATIC, (aff.w, aff.a, aff.f, aff.bytes_per_ns, aff.flops_per_ns,
                                  gpu_launch_ns(est), est.table("tp").slope,
                                  *gpu_form(est))):
            par[i] = v
        ctx = est.__dict__["_cp_ctx"] = (par, est.table("tp"))
    return ctx


def _terms(load: LayerLoad, est: Estimator, aff: GpuAffine, on_pim: np.ndarray,
           filled: bool = True) -> tuple[float, float, float, float, float]:
    """(E_G, E_P, the GPU experts' compute-lane and HBM-lane occupancy, T_PIM) of a split
    (module docstring)."""
    return _terms_at(load.counts, timing_of(load), est, aff, on_pim, filled)


_FREE = LayerTiming()  # every resource free at the decision's end


def _terms_at(c: np.ndarray, t: LayerTiming, est: Estimator, aff: GpuAffine,
              on_pim: np.ndarray, filled: bool = True
              ) -> tuple[float, float, float, float, float]:
    """:func:`_terms` of token counts ``c`` under timing ``t``."""
    gpu = (c > 0) & ~on_pim
    n, tok = float(gpu.sum()), float(c[gpu].sum())
    e_g = occ_g = occ_h = 0.0
    if n:
        k0 = gpu_launch_ns(est)
        p, t_min, t_max = gpu_form(est)
        tokp = padded_tokens(c[gpu], t_min, t_max)
        t_gpu = k0 + _combine((aff.w * n + aff.a * tok) / aff.bytes_per_ns,
                              aff.f * tokp / aff.flops_per_ns, p)
        e_g = max(t.hbm_ready_ns + t_gpu,
                  max(t.gpu_ready_ns, t.dispatch_ns) + k0 + aff.a * tok / aff.bytes_per_ns)
        occ_h = aff.w * n / aff.bytes_per_ns
        occ_g = t_gpu - occ_h
    pim = (c > 0) & on_pim
    e_p = t_pim = 0.0
    if pim.any():
        t_pim = est.pim_fixed_ns("tp") + float(est._pim_fast(np.where(pim, c, 0),
                                                             filled=filled).sum())
        e_p = max(t.pim_ready_ns, t.dispatch_ns) + t_pim
    return e_g, e_p, occ_g, occ_h, t_pim


def _ends(load: LayerLoad, est: Estimator, aff: GpuAffine, on_pim: np.ndarray,
          filled: bool = True) -> tuple[float, float]:
    """(E_G, E_P) of a split (module docstring)."""
    return _terms(load, est, aff, on_pim, filled)[:2]


def split_cost(est: Estimator, counts: np.ndarray, on_pim: np.ndarray,
               filled: bool = True) -> tuple[float, float, float]:
    """A split's tasks as sieve-cp's estimate times them: ``(weight stream on the HBM lane,
    the rest of the GPU experts' kernel time on the compute lane, T_PIM)``, ns; each 0 where
    that side has no expert (:func:`_terms`)."""
    c = np.asarray(counts)
    on_pim = np.asarray(on_pim, dtype=bool)
    _, _, occ_g, occ_h, t_pim = _terms_at(c, _FREE, est, _affine(est), on_pim & (c > 0),
                                          filled)
    return occ_h, occ_g, t_pim


def _total(load: LayerLoad, est: Estimator, aff: GpuAffine, on_pim: np.ndarray,
           filled: bool = True) -> float:
    t = timing_of(load)
    e_g, e_p, occ_g, occ_h, t_pim = _terms(load, est, aff, on_pim, filled)
    j = max(max(t.combine_ready_ns, e_g, e_p) + t.chain_ns, t.gpu_period_ns + occ_g,
            t.hbm_period_ns + occ_h, t.pim_period_ns + t_pim)
    if t.other_attn_ready_ns is not None:  # the PIM idles until the other's attention
        r = t.other_attn_ready_ns
        if t.other_attn_blocked_ns is not None:
            r = max(r, e_g if e_g > 0 else t.hbm_ready_ns) + t.other_attn_blocked_ns
        j = max(j, t.pim_period_ns + max(t_pim, r - max(t.pim_ready_ns, t.dispatch_ns)))
    if t.other_stream_end_ns is not None:  # the other micro-batch's next decision
        start = t.other_stream_end_ns + min(occ_h, t.other_stream_left_ns) + t.other_chain_ns
        if t.other_attn_on_pim:  # its attention after this split's PIM experts
            start = max(start, max(t.pim_ready_ns, t.dispatch_ns) + t_pim)
        j = max(j, start + t.other_rest_ns)
    return j


def _filled(fallback: str) -> bool:
    if fallback not in FALLBACKS:
        raise ConfigError(f"sieve-cp: fallback {fallback!r} unknown (known: "
                          f"{', '.join(FALLBACKS)})")
    return fallback == "observed"


def cp_estimate(load: LayerLoad, est: Estimator, on_pim, fallback: str = "observed") -> float:
    """The critical-path estimate of any TP split (``on_pim`` per local expert), ns from the
    decision's end: ``max(C, E_G, E_P)``, under two-batch overlap with the lanes' period bounds
    (module docstring)."""
    mask = np.asarray(on_pim, dtype=bool) & (load.counts > 0)
    return _total(load, est, _affine(est), mask, _filled(fallback))


def sieve_cp_reference(load: LayerLoad, est: Estimator, fallback: str = "observed"
                       ) -> tuple[np.ndarray, int]:
    """The greedy in Python: ``(on_pim mask, candidate moves evaluated)``; the compiled loop's
    arithmetic in the same order."""
    filled = _filled(fallback)
    aff = _affine(est)
    counts = load.counts
    active = np.flatnonzero(counts)
    order = active[np.argsort(-counts[active], kind="stable")]
    on_pim = counts > 0
    t_cur = _total(load, est, aff, on_pim, filled)
    steps = 0
    for e in order.tolist():
        trial = on_pim.copy()
        trial[e] = False
        t_new = _total(load, est, aff, trial, filled)
        steps += 1
        if t_new < t_cur:
            on_pim, t_cur = trial, t_new
        else:
            break
    return on_pim, steps


def sieve_cp(load: LayerLoad, est: Estimator, fallback: str = "observed",
             look: bool = True) -> Partition:
    """The critical-path Sieve's partition of one layer (module docstring); ``fallback``: how
    it reads the cost table's unobserved counts (:data:`FALLBACKS`); ``look``: take the look
    ahead the step gives under two-batch overlap (False: the scan's split, the
    ``sieve-cp-nolook`` ablation). ``est_gain_ns``: the
    estimate of all on PIM minus that of the chosen split (what deciding saved, by the
    method's own estimate; :mod:`sieve.sched.amortize`); None while the runtime cost table
    has observed nothing."""
    filled = True if fallback == "observed" else _filled(fallback)
    src = est.pim_source
    if src == "model":
        aff = _affine(est)
        on_pim, steps = sieve_cp_reference(load, est, fallback)
        gain = (_total(load, est, aff, load.counts > 0, filled)
                - _total(load, est, aff, on_pim, filled)) if load.counts.any() else 0.0
        if look and load.lookahead is not None:
            on_pim, look_gain = _look(load, on_pim)
            gain = gain if look_gain is None else look_gain
        e_g, e_p = _ends(load, est, aff, on_pim, filled)
        return Partition._trusted("sieve-cp", load.counts, on_pim, est.pim_order, "tp", 0.0,
                                  e_g, e_p, steps, gain)
    par, table = _context(est)
    # this layer's timing and the PIM fixed time, written by one compiled call
    _greedy.cp_timing(par, load.timing or timing_of(load), est.pim_fixed_ns("tp"))
    if src == "roofline":  # the estimator never updates: slope only
        values, n_obs = np.arange(table.values.size, dtype=np.float64) * table.slope, _NO_OBS
    else:  # the loop fills unobserved counts (EmaCostTable.filled) for the counts it reads
        values, n_obs = table.values, (table.n_obs if filled else _NO_OBS)
    on_pim = np.empty(load.counts.size, dtype=np.int8)
    if _greedy.sieve_cp_greedy(load.counts, values, n_obs, on_pim, par) < 0:
        raise MemoryError("critical-path Sieve: cannot allocate the sort buffers")
    if filled and src != "roofline" and par[_QCMAX] >= values.size:
        # a count beyond the table: grow it and decide again, every count read from the
        # filled table (the loop's own fallback past the end is the seed's roofline)
        table._grow(int(par[_QCMAX]))
        if _greedy.sieve_cp_greedy(load.counts, table.values, table.n_obs, on_pim, par) < 0:
            raise MemoryError("critical-path Sieve: cannot allocate the sort buffers")
    # what deciding saved; none before the table observed anything (the roofline's saving,
    # not evidence: sieve.sched.amortize)
    gain = (float(par[_greedy.Q_J0] - par[_greedy.Q_J]) if par[_QNACT] else 0.0) \
        if table.updates or src == "roofline" else None
    mask = on_pim.view(bool)
    e_g, e_p = float(par[_greedy.Q_EG]), float(par[_greedy.Q_EP])
    if look and load.lookahead is not None:  # two-batch overlap: the look (docstring)
        scan = mask
        mask, look_gain = _look(load, mask)
        if look_gain is not None and (gain is not None
                                      or (load.static_ties and not mask.any())):
            gain = look_gain  # (all on the GPU, static_ties: nothing to estimate)
        if not np.array_equal(mask, scan):
            e_g, e_p = _ends(load, est, _affine(est), mask, filled)
    return Partition._trusted("sieve-cp", load.counts, mask, est.pim_order, "tp",
                              0.0, e_g, e_p, int(par[_greedy.Q_STEPS]), gain)


def look_prefixes(n: int, k: int) -> list[int]:
    """The prefixes of the scan's order the look rates: none, 1, 2, 4, ... of the ``n``
    activated experts, all of them, and the scan's own ``k`` with its neighbours."""
    ks = {0, n, k, max(k - 1, 0), min(k + 1, n)}
    p = 1
    while p < n:
        ks.add(p)
        p *= 2
    return sorted(ks)


def scan_order(counts: np.ndarray) -> np.ndarray:
    """The activated experts in the scan's order: most tokens first, ties by lower id."""
    c = np.asarray(counts)
    active = np.flatnonzero(c)
    return active[np.argsort(-c[active], kind="stable")]


def prefix_split(counts: np.ndarray, n_gpu: int, order: np.ndarray | None = None
                 ) -> np.ndarray:
    """``on_pim`` of the prefix split that puts the ``n_gpu`` most popular activated experts on
    the GPU (:func:`scan_order`; ``order``: that order when the caller has it) and the other
    activated ones on PIM."""
    on_pim = np.asarray(counts) > 0
    if order is None:
        order = scan_order(counts)
    on_pim[order[:max(int(n_gpu), 0)]] = False
    return on_pim


def _look(load: LayerLoad, on_pim: np.ndarray) -> tuple[np.ndarray, float | None]:
    """Under two-batch overlap: the scan's split against other prefixes of its own order
    (:func:`look_prefixes`, then one expert more or fewer on the GPU at a time from the best
    of those while the rating falls: a local minimum of the rating), each rated by the step's
    list schedule of both micro-batches to their next decisions (``load.lookahead``); the
    best one (ties: the scan's; with ``load.static_ties`` a static split first, all on PIM,
    then all on the GPU), and what it saves over all on PIM by that rating (None where the look
    gives none; with ``load.static_ties`` 0 where the best is all on the GPU, a split a skipped
    decision runs: :mod:`sieve.sched.amortize`). With ``load.saving_lookahead`` the saving is
    that look's rating of all on PIM less its rating of the best (the look that chose it
    watching further; None where that look gives none)."""
    c = load.counts
    order = scan_order(c)
    k = int((~on_pim[order]).sum())
    rate: dict[int, float] = {}

    def rated(js) -> bool:  # rate the prefixes not rated yet; False: the look gives none
        for j in js:
            if j not in rate:
                r = load.lookahead(prefix_split(c, j, order))
                if r is None:
                    return False
                rate[j] = r
        return True

    n = order.size
    ties = load.static_ties

    def key(j: int) -> tuple:  # (static_ties: all on PIM, then all on the GPU, first)
        return (rate[j], (0 if j == 0 else 1 if j == n else 2) if ties else 0, j != k, j)

    if not rated(look_prefixes(order.size, k)):
        return on_pim, None
    best = min(rate, key=key)
    # then one expert at a time from the best, while the rating improves: the powers of two
    # leave gaps (4 to 8 experts, 8 to 16) that hold the look's best prefix
    while order.size:
        near = [j for j in (best - 1, best + 1) if 0 <= j <= order.size]
        if not rated(near):
            return on_pim, None
        step = min(near, key=key)
        if key(step) >= key(best):
            break
        best = step
    if load.static_ties and best == n:
        return prefix_split(c, best, order), 0.0
    chosen = prefix_split(c, best, order)
    if load.saving_lookahead is not None:
        r0 = load.saving_lookahead(prefix_split(c, 0, order))
        rb = load.saving_lookahead(chosen) if best else r0
        return chosen, (None if r0 is None or rb is None else r0 - rb)
    return chosen, rate[0] - rate[best]


def sieve_cp_start(load: LayerLoad, est: Estimator, fallback: str = "observed",
                   look: bool = True) -> Partition:
    """The split sieve-cp starts its scan from, every activated expert on PIM, taken without
    deciding (a skipped decision, :mod:`sieve.sched.amortize`); ``fallback`` and ``look`` (the
    options of :func:`sieve_cp`) are accepted for the registry's variants and unused."""
    _filled(fallback)
    on_pim = load.counts > 0
    return Partition._trusted("sieve-cp", load.counts, on_pim, est.pim_order, "tp", 0.0, 0.0,
                              0.0, 0)
