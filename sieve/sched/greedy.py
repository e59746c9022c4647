"""The Sieve scheduler (seed §5, Equation 1 and "Sieving Algorithm").

Start with every activated expert on PIM; sort the experts by token count, most popular first;
move the next expert to the GPU while ``T_total = max(T_comm, T_GPU(G), T_PIM(S))`` decreases;
stop when a move would not decrease it or nothing is left on PIM. ``T_GPU(G)`` batches the
experts of G as one grouped GEMM together with the layer's other GPU work; ``T_PIM(S)`` adds the
per-expert PIM estimates of the runtime cost table to what already occupies PIM (attention);
``T_comm`` does not depend on the split. Estimates come from an
:class:`~sieve.sched.estimator.Estimator`; with the "layer" order of GEMVs a PIM program also
pays a fixed time once (its one GPU step), counted while S is not empty.

Because ``T_GPU`` grows with every move and ``T_PIM`` shrinks, ``T_total`` over the sorted
prefixes is quasi-convex, so stopping at the first non-decrease finds the best prefix: the
result is never worse (under the same estimator) than all-on-PIM (no move) or all-on-GPU (every
move). It need not be the best subset; :mod:`sieve.sched.optimal` measures the gap.

Ablation switches (issue 9): ``attention_aware=False`` decides as if PIM were free of
attention, ``comm_aware=False`` as if ``T_comm`` were 0, ``fixed_aware=False`` as if the GPU had
only its experts to run (the seed's ``T_comp`` counts every GPU operation of the layer; the
reported estimates always use the full information, so methods stay comparable); the PIM
estimate source (EMA table, roofline only, the engine) is the estimator's.

Two implementations of the same loop: a compiled one (``sieve.sched._greedy``) used when the
GPU estimate is the seed's roofline (an affine form), and :func:`sieve_reference` in Python for
any cost model; tests check they make identical decisions.
"""

from __future__ import annotations

import numpy as np

from sieve.errors import NotBuiltError
from sieve.sched.estimator import Estimator, GpuAffine
from sieve.sched.partition import LayerLoad, Partition

try:
    from sieve.sched import _greedy
except ImportError as exc:  # pragma: no cover - exercised by hand on an unbuilt checkout
    raise NotBuiltError.of("scheduler loop", "sieve.sched._greedy", exc) from None

__all__ = ["sieve", "sieve_reference", "split_estimates"]


def split_estimates(load: LayerLoad, est: Estimator, on_pim: np.ndarray, *,
                    mapping: str = "tp") -> tuple[float, float, float]:
    """Full-information estimates ``(T_comm, T_GPU, T_PIM)`` of a TP split."""
    gpu_counts = np.where(on_pim, 0, load.counts)
    pim_counts = np.where(on_pim, load.counts, 0)
    t_gpu = est.gpu_ns(gpu_counts, load.gpu_fixed)
    t_pim = load.pim_busy_ns + float(est._pim_fast(pim_counts, mapping).sum())
    if on_pim.any():
        t_pim += est.pim_fixed_ns(mapping)
    return load.comm_ns, t_gpu, t_pim


def sieve_reference(load: LayerLoad, est: Estimator, *, attention_aware: bool = True,
                    comm_aware: bool = True) -> tuple[np.ndarray, int]:
    """The greedy in Python for any cost model: ``(on_pim mask, candidate moves evaluated)``.

    Same arithmetic, in the same order, as the compiled loop when the GPU estimate is affine.
    """
    counts = load.counts
    busy = load.pim_busy_ns if attention_aware else 0.0
    comm = load.comm_ns if comm_aware else 0.0
    active = np.flatnonzero(counts)
    order = active[np.argsort(-counts[active], kind="stable")]
    p = est.pim_expert_ns(counts[order])
    fixed = est.pim_fixed_ns("tp")
    on_pim = counts > 0
    aff = est.gpu_affine(load.gpu_fixed)
    pim = busy + (fixed if order.size else 0.0)
    for x in p.tolist():
        pim += x
    if aff is not None:
        nb, nf = aff.base_bytes, aff.base_flops
        g_cur = max(nb / aff.bytes_per_ns, nf / aff.flops_per_ns)
    else:
        g_cur = est.gpu_ns(np.zeros_like(counts), load.gpu_fixed)
    t_cur = max(comm, max(g_cur, pim))
    steps = 0
    for j, e in enumerate(order.tolist()):
        c = int(counts[e])
        if aff is not None:
            g_new = max((nb + aff.w + aff.a * c) / aff.bytes_per_ns,
                        (nf + aff.f * c) / aff.flops_per_ns)
        else:
            trial = np.where(on_pim, 0, counts)
            trial[e] = c
            g_new = est.gpu_ns(trial, load.gpu_fixed)
        p_new = pim - float(p[j]) - (fixed if j == order.size - 1 else 0.0)
        t_new = max(comm, max(g_new, p_new))
        steps += 1
        if t_new < t_cur:
            if aff is not None:
                nb += aff.w + aff.a * c
                nf += aff.f * c
            pim, g_cur, t_cur = p_new, g_new, t_new
            on_pim[e] = False
        else:
            break
    return on_pim, steps


_NPAR = _greedy.P_N


def _fast(load: LayerLoad, est: Estimator, aff: GpuAffine, busy: float, comm: float
          ) -> tuple[np.ndarray, float, float, int]:
    """The compiled loop: (on_pim, T_GPU, T_PIM as decided, candidate moves)."""
    table = est.table("tp")
    on_pim = np.empty(load.counts.size, dtype=np.int8)
    par = np.empty(_NPAR)
    par[:7] = aff.params
    par[7] = busy
    par[8] = comm
    par[9] = table.slope
    par[10] = est.pim_fixed_ns("tp")
    if _greedy.sieve_greedy(load.counts, table.values, on_pim, par) < 0:
        raise MemoryError("Sieve scheduler: cannot allocate the sort buffers")
    return on_pim.view(bool), float(par[11]), float(par[12]), int(par[13])


def sieve(load: LayerLoad, est: Estimator, *, attention_aware: bool = True,
          comm_aware: bool = True, fixed_aware: bool = True) -> Partition:
    """The Sieve scheduler's partition of one layer (module docstring). ``fixed_aware=False``
    decides with the GPU's expert work alone (the layer's other GPU work left out of
    ``T_GPU``), an ablation; the reported estimates keep the full information."""
    busy = load.pim_busy_ns if attention_aware else 0.0
    comm = load.comm_ns if comm_aware else 0.0
    decide = load if fixed_aware else LayerLoad(load.counts, load.shape, load.pim_busy_ns,
                                                load.comm_ns, ())
    aff = est.gpu_affine(decide.gpu_fixed) if est.pim_source != "model" else None
    if aff is not None:
        on_pim, t_gpu, t_pim, steps = _fast(decide, est, aff, busy, comm)
        t_pim += load.pim_busy_ns - busy  # report with full information
        if not fixed_aware:
            t_gpu = est.gpu_ns(np.where(on_pim, 0, load.counts), load.gpu_fixed)
        return Partition._trusted("sieve", load.counts, on_pim, est.pim_order, "tp",
                                  load.comm_ns, t_gpu, t_pim, steps)
    on_pim, steps = sieve_reference(decide, est, attention_aware=attention_aware,
                                    comm_aware=comm_aware)
    t_comm, t_gpu, t_pim = split_estimates(load, est, on_pim)
    return Partition("sieve", load.counts, on_pim, pim_order=est.pim_order, mapping="tp",
                     est_comm_ns=t_comm, est_gpu_ns=t_gpu, est_pim_ns=t_pim, steps=steps)
